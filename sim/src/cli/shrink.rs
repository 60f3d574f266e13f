//! `kube-sim shrink FILE`: shrink a regression file's fault plan further (same seed, same
//! verdict kind and property) and rewrite the file in place, atomically.

use std::path::PathBuf;

use crate::cli::report::write_atomically;
use crate::cli::{CliError, EXIT_PASS, replay};
use crate::scenario::Registry;
use crate::shrink::{ShrinkBounds, shrink_plan};

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
/// passes now (nothing to shrink; the file is left alone).
pub fn shrink(args: &ShrinkArgs, registry: &Registry) -> Result<u8, CliError> {
    let (mut file, scenario) = replay::load(&args.file, registry)?;
    let now = replay::run_plan(scenario, file.seed, &file.fault_plan, false);
    if !replay::reproduces(&file.violation, &now.verdict) {
        println!(
            "{}: the recorded {} failure does not happen now ({}); nothing to shrink, the file is unchanged",
            args.file.display(),
            file.violation.kind,
            now.verdict
        );
        return Ok(EXIT_PASS);
    }
    let bounds = ShrinkBounds { replays_max: args.replays, ..ShrinkBounds::default() };
    let recorded = file.violation.clone();
    let shrunk = shrink_plan(&file.fault_plan, &bounds, |plan| {
        replay::reproduces(&recorded, &replay::run_plan(scenario, file.seed, plan, false).verdict)
    });
    let last = replay::run_plan(scenario, file.seed, &shrunk.plan, false);
    file.violation = replay::recorded_violation(&last.verdict).unwrap_or(recorded);
    file.trace_digest = last.digest;
    file.found.faults_before_shrink = Some(file.found.faults_before_shrink.unwrap_or(shrunk.faults_before));
    file.found.shrink_replays = Some(file.found.shrink_replays.unwrap_or(0) + shrunk.replays);
    file.fault_plan = shrunk.plan;
    let mut text = serde_json::to_string_pretty(&file).expect("a regression file always serializes");
    text.push('\n');
    write_atomically(&args.file, &text)?;
    let stopped = shrunk.stopped_by.map(|b| format!(" (stopped by {b})")).unwrap_or_default();
    println!(
        "{}: {} -> {} faults in {} replays{stopped}",
        args.file.display(),
        shrunk.faults_before,
        shrunk.faults_after,
        shrunk.replays
    );
    print!("{file}");
    Ok(EXIT_PASS)
}
