//! Seed sweeps: many seeds, each on a fresh thread, in parallel across cores, with a determinism
//! self-check on a sample.
//!
//! Each seed runs on its own short-lived std thread, so that madsim's thread-local runtime state
//! and std's per-thread hash seeds start fresh. `jobs` worker threads each run one seed thread at
//! a time. Nothing is kept per passing seed, so memory stays flat however many seeds run.
//!
//! Environment: `SIM_SEEDS=N` runs N seeds from `first_seed`; `SIM_SEED=S` runs exactly seed S,
//! with logs printed (filtered by `RUST_LOG`) and the trace kept. Every failure is printed to
//! stderr with its verdict and the exact command that replays it.

use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

use crate::decision::ChoiceMode;
use crate::logging;
use crate::run_options::RunOptions;
pub use crate::runner::ensure_simulated;
use crate::runner::{each_on_workers, on_fresh_thread};
use crate::trace::Trace;
use crate::verdict::{RunReport, RunStats, Verdict};

/// The environment variable that sets how many seeds a sweep runs.
pub const SIM_SEEDS: &str = "SIM_SEEDS";
/// The environment variable that makes a sweep run exactly one seed, with logs.
pub const SIM_SEED: &str = "SIM_SEED";

/// Failures a sweep keeps (with their reports); further ones are only counted, so that a sweep
/// in which every seed fails still runs in flat memory.
const FAILURES_KEPT_MAX: usize = 1_000;
/// Failures a sweep prints as they happen; later ones appear only in the summary count.
const FAILURES_PRINTED_MAX: u64 = 20;
/// Failures [`SweepReport::assert_all_passed`] lists in its panic message.
const FAILURES_SUMMARIZED_MAX: usize = 5;

/// How a sweep runs. `SIM_SEEDS=N` overrides `seeds`, `SIM_SEED=S` runs exactly seed S.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// The scenario's name (for messages and the replay command).
    pub scenario: String,
    /// How many seeds (from `first_seed`), unless `SIM_SEEDS`/`SIM_SEED` say otherwise.
    pub seeds: u64,
    /// The first seed.
    pub first_seed: u64,
    /// Worker threads; 0 means one per core.
    pub jobs: usize,
    /// Run the determinism self-check on every n-th seed (0: never).
    pub self_check_every: u64,
    /// The test that runs this sweep, for the replay command (`SIM_SEED=S cargo test -p P NAME`).
    /// `None` takes the name of the calling thread, which is the test's name under libtest.
    pub test_name: Option<String>,
}

impl SweepConfig {
    /// A sweep of `scenario` over 100 seeds from 0, one worker per core, self-checking every
    /// tenth seed.
    pub fn new(scenario: impl Into<String>) -> Self {
        SweepConfig {
            scenario: scenario.into(),
            seeds: 100,
            first_seed: 0,
            jobs: 0,
            self_check_every: 10,
            test_name: None,
        }
    }

    /// Sets how many seeds run.
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// Sets the number of worker threads (0: one per core).
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    /// Sets how often the determinism self-check runs (every n-th seed; 0: never).
    pub fn self_check_every(mut self, every: u64) -> Self {
        self.self_check_every = every;
        self
    }
}

/// The outcome of a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds run.
    pub seeds_run: u64,
    /// The failing runs, in seed order (at most 1,000; see `failures_total`).
    pub failures: Vec<RunReport>,
    /// How many seeds failed, including any not kept in `failures`.
    pub failures_total: u64,
    /// How many seeds were run a second time for the determinism self-check.
    pub self_checks: u64,
    /// Wall-clock seconds (measured outside the simulation).
    pub wall_seconds: f64,
    /// The replay command with `{seed}` in place of the seed.
    pub replay_template: String,
}

impl SweepReport {
    /// The exact shell command that replays `seed`.
    pub fn replay_command(&self, seed: u64) -> String {
        self.replay_template.replace("{seed}", &seed.to_string())
    }

    /// Seeds per wall-clock second (self-check reruns not counted).
    pub fn seeds_per_second(&self) -> f64 {
        if self.wall_seconds > 0.0 { self.seeds_run as f64 / self.wall_seconds } else { 0.0 }
    }

    /// Panics, listing the first failures with their replay commands, unless every seed passed.
    pub fn assert_all_passed(&self) {
        if self.failures_total == 0 {
            return;
        }
        let mut message = format!(
            "scenario \"{}\": {} of {} seeds failed\n",
            self.scenario, self.failures_total, self.seeds_run
        );
        for failure in self.failures.iter().take(FAILURES_SUMMARIZED_MAX) {
            let _ = writeln!(message, "  seed {}: {}", failure.seed, failure.verdict);
            let _ = writeln!(message, "    replay: {}", self.replay_command(failure.seed));
        }
        if self.failures.len() > FAILURES_SUMMARIZED_MAX {
            let _ =
                writeln!(message, "  ... and {} more", self.failures_total - FAILURES_SUMMARIZED_MAX as u64);
        }
        panic!("{message}");
    }
}

/// Which seeds to run, from the environment or the config.
// `pub` (hidden from the docs) for its tests in tests/it/sweep.rs only.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedPlan {
    /// The first seed.
    pub first: u64,
    /// How many seeds.
    pub count: u64,
    /// Whether `SIM_SEED` asked for exactly this one seed.
    pub single: bool,
}

/// Parses a seed: decimal, or hexadecimal with `0x`.
fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

// `pub` (hidden from the docs) for its tests in tests/it/sweep.rs only.
#[doc(hidden)]
pub fn seed_plan(config: &SweepConfig, sim_seed: Option<&str>, sim_seeds: Option<&str>) -> SeedPlan {
    if let Some(text) = sim_seed {
        let seed = parse_seed(text)
            .unwrap_or_else(|| panic!("{SIM_SEED}={text:?} is not a seed (a u64, decimal or 0x-hex)"));
        return SeedPlan { first: seed, count: 1, single: true };
    }
    let count = match sim_seeds {
        Some(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SIM_SEEDS}={text:?} is not a count of seeds (a u64)")),
        None => config.seeds,
    };
    SeedPlan { first: config.first_seed, count, single: false }
}

/// The replay command's template: `SIM_SEED={seed} cargo test [--release] -p PKG TARGET -- --exact NAME`.
fn replay_template(config: &SweepConfig) -> String {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<package>".to_owned());
    let test_name = config
        .test_name
        .clone()
        .or_else(|| thread::current().name().filter(|name| *name != "main").map(str::to_owned))
        .unwrap_or_else(|| "<test name>".to_owned());
    let target = std::env::current_exe().ok().map(|exe| replay_target(&exe, &package)).unwrap_or_default();
    let release = if cfg!(debug_assertions) { "" } else { " --release" };
    format!("SIM_SEED={{seed}} cargo test{release} -p {package} {target} -- --exact {test_name}")
}

/// The cargo option that selects the test binary `exe` of `package`: the binary is
/// `deps/<target>-<hash>`, a crate's unit tests named after the crate (`--lib`), integration
/// tests after their file or folder (`--test NAME`). Empty if `exe` has no such name.
// `pub` (hidden from the docs) for its tests in tests/it/sweep.rs only.
#[doc(hidden)]
pub fn replay_target(exe: &Path, package: &str) -> String {
    let Some(stem) = exe.file_stem().and_then(|stem| stem.to_str()) else { return String::new() };
    let name = stem.rsplit_once('-').map_or(stem, |(name, _hash)| name);
    if name == package.replace('-', "_") { "--lib".to_owned() } else { format!("--test {name}") }
}

/// Runs `run(seed, options)` on a fresh thread, with logs printed when `options` keep the trace
/// (a single-seed run); a panic that escapes the engine becomes a crash verdict.
fn run_on_fresh_thread<F>(scenario: &str, seed: u64, options: &RunOptions, run: &F) -> RunReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    on_fresh_thread(&format!("sim-seed-{seed}"), || {
        let _logs = logging::init_for_run(options.keep_trace);
        run(seed, options)
    })
    .unwrap_or_else(|message| RunReport {
        scenario: scenario.to_owned(),
        seed,
        verdict: Verdict::Crash { node: "engine".to_owned(), object: None, message },
        digest: String::new(),
        trace: Trace::new(false),
        stats: RunStats::default(),
        plan: crate::faults::FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    })
}

/// Runs one seed, with the self-check when `check`, and returns the failing report, if any.
///
/// The self-check records the first run's choices and replays them in the second, so that when
/// the digests differ the verdict names the first choice at which the runs parted (a divergence
/// replaced the second run's verdict). When no choice diverged, the nondeterminism is in the task
/// order or in the controller's own code, and the verdict says only that the digests differ.
fn run_seed<F>(config: &SweepConfig, seed: u64, single: bool, check: bool, run: &F) -> Option<RunReport>
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    let options = RunOptions { keep_trace: single, choices: check.then_some(ChoiceMode::Record) };
    let mut first = run_on_fresh_thread(&config.scenario, seed, &options, run);
    // Kept failures must not hold a whole recording each: the sweep's memory stays flat.
    let recorded = first.choices.take();
    if check {
        let replay = recorded.map(|choices| ChoiceMode::Replay(std::sync::Arc::new(choices)));
        let options = RunOptions { keep_trace: single, choices: replay };
        let second = run_on_fresh_thread(&config.scenario, seed, &options, run);
        if second.digest != first.digest || second.verdict != first.verdict {
            let choice = match second.verdict {
                Verdict::Nondeterminism { choice, .. } => choice,
                _ => None,
            };
            return Some(RunReport {
                verdict: Verdict::Nondeterminism {
                    first: first.digest.clone(),
                    second: second.digest,
                    choice,
                },
                ..first
            });
        }
    }
    (!first.verdict.is_pass()).then_some(first)
}

/// Run `run(seed, options)` over the configured seeds. `run` builds and runs one world, on a fresh
/// thread per seed, and must hand `options` on to [`crate::SimBuilder::run_with`]: they carry the
/// determinism self-check's recorded choices into its second run, and the `SIM_SEED` run's
/// kept trace.
///
/// ```no_run
/// # let world = sim::Sim::builder();
/// let config = sim::SweepConfig::new("my-operator").seeds(500);
/// sim::sweep(&config, |seed, options| world.run_with(seed, options)).assert_all_passed();
/// ```
pub fn sweep<F>(config: &SweepConfig, run: F) -> SweepReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    ensure_simulated();
    let plan =
        seed_plan(config, std::env::var(SIM_SEED).ok().as_deref(), std::env::var(SIM_SEEDS).ok().as_deref());
    sweep_seeds(config, plan, &run)
}

// `pub` (hidden from the docs) for its tests in tests/it/sweep.rs only.
#[doc(hidden)]
pub fn sweep_seeds<F>(config: &SweepConfig, plan: SeedPlan, run: &F) -> SweepReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    let replay_template = replay_template(config);
    let jobs = match config.jobs {
        0 => thread::available_parallelism().map_or(1, NonZeroUsize::get),
        jobs => jobs,
    };
    let jobs = jobs.min(usize::try_from(plan.count).unwrap_or(usize::MAX)).max(1);
    // A single-seed run prints its logs; a second run would print them again.
    let check_every = if plan.single { 0 } else { config.self_check_every };

    let next_index = AtomicU64::new(0);
    let failures_total = AtomicU64::new(0);
    let self_checks = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    let started = Instant::now();
    each_on_workers(jobs, "sim-sweep-worker", |_| {
        let index = next_index.fetch_add(1, Ordering::Relaxed);
        if index >= plan.count {
            return false;
        }
        let seed = plan.first.wrapping_add(index);
        let check = check_every != 0 && index.is_multiple_of(check_every);
        if check {
            self_checks.fetch_add(1, Ordering::Relaxed);
        }
        let Some(failure) = run_seed(config, seed, plan.single, check, run) else {
            return true;
        };
        let ordinal = failures_total.fetch_add(1, Ordering::Relaxed);
        if ordinal < FAILURES_PRINTED_MAX || plan.single {
            print_failure(&failure, &replay_template);
        }
        let mut failures = failures.lock().unwrap_or_else(|poison| poison.into_inner());
        if failures.len() < FAILURES_KEPT_MAX {
            failures.push(failure);
        }
        true
    });
    let wall_seconds = started.elapsed().as_secs_f64();
    let mut failures = failures.into_inner().unwrap_or_else(|poison| poison.into_inner());
    failures.sort_by_key(|failure| failure.seed);
    SweepReport {
        scenario: config.scenario.clone(),
        seeds_run: plan.count,
        failures,
        failures_total: failures_total.into_inner(),
        self_checks: self_checks.into_inner(),
        wall_seconds,
        replay_template,
    }
}

fn print_failure(failure: &RunReport, replay_template: &str) {
    let mut message = format!(
        "sim: scenario \"{}\" seed {} failed: {}\n  replay: {}\n",
        failure.scenario,
        failure.seed,
        failure.verdict,
        replay_template.replace("{seed}", &failure.seed.to_string())
    );
    if failure.trace.keeps_entries() {
        let _ = write!(
            message,
            "  trace ({} entries, digest {}):\n{}",
            failure.trace.len(),
            failure.digest,
            failure.trace.render()
        );
    }
    eprint!("{message}");
}
