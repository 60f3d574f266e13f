//! # kube-sim: the command line
//!
//! The `kube-sim` binary, and the same command line as a library, so that a user's crate gets the
//! whole tool for its own scenarios with a three-line `main.rs`:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     kube_sim::main(sim::scenario::Registry::new(Vec::new()).expect("unique scenario names"))
//! }
//! ```
//!
//! Subcommands, one module each: [`list`], [`explore`], [`replay`], [`shrink`], [`explain`] (with
//! [`perfetto`] export) and [`merge`]; [`report`] is the machine-readable exploration report, and
//! [`serve`] is `kube-sim serve`'s glue (the HTTP front with the built-in controllers and
//! replays). The exploration itself (strategies, runners, deduplication, shrinking) is the `sim`
//! library's ([`sim::explore`]): this crate parses arguments, draws progress and prints.
//!
//! Exit codes: 0 when everything passed, 1 when a failure was found (or a replay still fails), 2
//! on bad usage or bad input (an unreadable or corrupt file, an unknown scenario, a fault naming
//! a controller the scenario lacks), 3 when a replay passed with planned faults that never fired
//! (inconclusive).

pub mod explain;
pub mod explore;
pub mod list;
pub mod merge;
pub mod perfetto;
pub mod replay;
pub mod report;
pub mod serve;
pub mod shrink;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use sim::explore::ExploreError;
use sim::regression::RegressionError;
use sim::scenario::Registry;

pub use sim::explore::message_shape;

/// Exit code: everything passed.
pub const EXIT_PASS: u8 = 0;
/// Exit code: a failure was found, or a replayed file still fails.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code: bad usage or bad input.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: a replay passed, but some of its planned faults never fired, so the recorded
/// failure was not put to the test (neither fixed nor failing).
pub const EXIT_INCONCLUSIVE: u8 = 3;

/// Why a subcommand could not do its work (each maps to exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A regression file is missing, corrupt, of an unknown format, or names an unknown scenario.
    #[error(transparent)]
    Regression(#[from] RegressionError),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A report file is not a kube-sim exploration report.
    #[error("{path}: {message}")]
    BadReport {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A command-line value is not usable (an unknown scenario, an unavailable mode).
    #[error("{0}")]
    Usage(String),
}

impl From<ExploreError> for CliError {
    fn from(error: ExploreError) -> Self {
        match error {
            ExploreError::Regression(e) => CliError::Regression(e),
            ExploreError::Io { path, source } => CliError::Io { path, source },
            ExploreError::Guided(e) => CliError::Usage(format!("--guided: {e}")),
        }
    }
}

/// The subcommands of the simulation tool. A binary that adds its own subcommands (as `kube-sim`
/// adds `serve`) flattens this enum into its own and calls [`dispatch`].
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every scenario: its name, a tab, and its one-line description.
    List,
    /// Run many seeds of scenarios with swarm faults, shrink each distinct failure and write it as
    /// a regression file.
    Explore(explore::ExploreArgs),
    /// Rerun a regression file: exit 0 if it passes now (the bug is fixed), 1 if it still fails.
    Replay(replay::ReplayArgs),
    /// Shrink a regression file's fault plan further, rewriting the file in place.
    Shrink(shrink::ShrinkArgs),
    /// Tell the story of a regression file's failing run, and diff its end state against a
    /// fault-free run.
    Explain(explain::ExplainArgs),
    /// Combine shard reports and deduplicate their regression files.
    Merge(merge::MergeArgs),
}

/// Deterministic simulation testing for Kubernetes controllers.
// `pub` (hidden from the docs) for its test in tests/it/run.rs only.
#[doc(hidden)]
#[derive(Debug, Parser)]
#[command(name = "kube-sim", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Parse the process's arguments and run the subcommand against `registry`.
pub fn main(registry: Registry) -> ExitCode {
    run(std::env::args_os(), &registry)
}

/// Parse `args` (the first is the program name) and run the subcommand. Bad arguments print
/// clap's message and exit 2; `--help` and `--version` exit 0.
pub fn run<I, T>(args: I, registry: &Registry) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => dispatch(cli.command, || registry.clone()),
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_PASS };
            let _ = e.print();
            ExitCode::from(code)
        }
    }
}

/// Run one parsed subcommand. `registry` is called only by subcommands that need scenarios (a
/// registry may be costly to build: zoo scenarios run their fault-free reference first).
pub fn dispatch(command: Command, registry: impl FnOnce() -> Registry) -> ExitCode {
    sim::sweep::ensure_simulated();
    BINARY.get_or_init(|| binary_name_of(std::env::args_os().next()));
    let outcome = match command {
        Command::List => list::list(&registry(), &mut std::io::stdout().lock()).map(|()| EXIT_PASS),
        Command::Explore(args) => explore::explore(&args, &registry()),
        Command::Replay(args) => replay::replay(&args, &registry()),
        Command::Shrink(args) => shrink::shrink(&args, &registry()),
        Command::Explain(args) => explain::explain(&args, &registry()),
        Command::Merge(args) => merge::merge(&args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("kube-sim: error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The command that replays a regression file, as every failure message ends with it.
///
/// It names the binary that is running the command line (a user's crate that calls [`main`]
/// from its own binary gets its own name), `kube-sim` outside one.
pub fn replay_command(file: &std::path::Path) -> String {
    let binary = BINARY.get().map_or("kube-sim", String::as_str);
    format!("cargo run --release --bin {binary} -- replay {}", file.display())
}

/// The name of the binary running the command line, set once by [`dispatch`] (a per-process
/// fact, not per-run state).
static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The file stem of the program's own path (`argv[0]`), as cargo names binaries.
// `pub` (hidden from the docs) for its test in tests/it/run.rs only.
#[doc(hidden)]
pub fn binary_name_of(program: Option<std::ffi::OsString>) -> String {
    program
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .map(|stem| stem.to_string_lossy().into_owned())
        .filter(|stem| !stem.is_empty())
        .unwrap_or_else(|| "kube-sim".to_owned())
}
