//! `kube-sim shrink FILE`: shrink a regression file's fault plan further, then its generated
//! workload if it has one (same seed, same verdict kind and property), and rewrite the file in
//! place, atomically. The shrink is the library's ([`sim::explore::shrink`]), as exploration's is.

use std::path::PathBuf;

use crate::{CliError, EXIT_PASS};
use sim::explore::shrink::{FileShrink, shrink_file};
use sim::scenario::Registry;

/// Arguments of `kube-sim shrink`.
#[derive(Debug, clap::Args)]
pub struct ShrinkArgs {
    /// The regression file (rewritten in place).
    pub file: PathBuf,
    /// At most this many replays.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub replays: u64,
}

/// `kube-sim shrink`: exit 0 when the file was shrunk (or was already minimal), 0 too when it
/// passes now (nothing to shrink; the file is left alone). A file with recorded choices gets the
/// shrunk run's choices (the old ones belong to the old plan).
pub fn shrink(args: &ShrinkArgs, registry: &Registry) -> Result<u8, CliError> {
    match shrink_file(&args.file, registry, args.replays)? {
        FileShrink::NotFailing { recorded_kind, verdict } => println!(
            "{}: the recorded {recorded_kind} failure does not happen now ({verdict}); nothing to shrink, the file is unchanged",
            args.file.display(),
        ),
        FileShrink::Shrunk { file, report } => {
            println!("{}: {report}", args.file.display());
            print!("{file}");
        }
    }
    Ok(EXIT_PASS)
}
