//! `kube-sim replay FILE`: rerun a regression file (its scenario, seed and fault plan, with the
//! trace kept), print the verdict and the story, and exit 0 if it passes now, 1 if it still fails.
//!
//! The functions here are also the code path of the `regressions` crate's replay-all test, so the
//! test and the tool agree on what "reproduces" means: the same verdict kind and, for a
//! correctness failure, the same property.

use std::path::{Path, PathBuf};

use crate::cli::{CliError, EXIT_FAILURE, EXIT_PASS, explain};
use crate::faults::FaultPlan;
use crate::regression::{RecordedViolation, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::verdict::{RunReport, RunStats, Verdict};

/// Arguments of `kube-sim replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The regression file.
    pub file: PathBuf,
    /// Print the whole trace too, one line per entry.
    #[arg(long)]
    pub trace: bool,
}

/// A regression file, replayed.
#[derive(Debug)]
pub struct Replayed {
    /// The file's contents.
    pub file: RegressionFile,
    /// The replay's report (trace kept).
    pub report: RunReport,
    /// Whether it failed as recorded (same kind, same property).
    pub reproduced: bool,
}

/// Read a regression file and find its scenario: a missing or corrupt file, an unknown format or
/// an unknown scenario is an error naming the file and the field.
pub fn load<'r>(path: &Path, registry: &'r Registry) -> Result<(RegressionFile, &'r Scenario), CliError> {
    let file = RegressionFile::load(path)?;
    file.check_scenario(path, &registry.names())?;
    let scenario = registry.get(&file.scenario).expect("check_scenario found it");
    Ok((file, scenario))
}

/// Run `scenario` at `seed` with exactly `plan`, on a fresh thread. A panic that escapes the
/// engine is a crash verdict on the `engine` node.
pub fn run_plan(scenario: &Scenario, seed: u64, plan: &FaultPlan, keep_trace: bool) -> RunReport {
    let builder = scenario.builder().clone().faults(plan.clone()).keep_trace(keep_trace);
    crate::cli::on_fresh_thread(&format!("sim-seed-{seed}"), || builder.run(seed))
        .unwrap_or_else(|message| engine_crash(scenario, seed, plan, message))
}

/// Run `scenario` at `seed` as declared (its own fault source, e.g. swarm), on a fresh thread,
/// keeping only the digest.
pub fn run_seed(scenario: &Scenario, seed: u64) -> RunReport {
    let builder = scenario.builder();
    crate::cli::on_fresh_thread(&format!("sim-seed-{seed}"), || builder.run(seed))
        .unwrap_or_else(|message| engine_crash(scenario, seed, &FaultPlan::none(), message))
}

fn engine_crash(scenario: &Scenario, seed: u64, plan: &FaultPlan, message: String) -> RunReport {
    RunReport {
        scenario: scenario.name().to_owned(),
        seed,
        verdict: Verdict::Crash { node: "engine".to_owned(), object: None, message },
        digest: String::new(),
        trace: crate::trace::Trace::new(false),
        stats: RunStats::default(),
        plan: plan.clone(),
        unfired: Vec::new(),
        choices: None,
    }
}

/// Whether `verdict` is the failure `recorded`: the same kind and, for correctness, the same
/// property. The message may differ (names and numbers change with the engine).
pub fn reproduces(recorded: &RecordedViolation, verdict: &Verdict) -> bool {
    if verdict.kind() != recorded.kind {
        return false;
    }
    match verdict {
        Verdict::Correctness { property, .. } => *property == recorded.property,
        _ => true,
    }
}

/// The violation a failing verdict records (`None` for a pass).
pub fn recorded_violation(verdict: &Verdict) -> Option<RecordedViolation> {
    let kind = verdict.kind().to_owned();
    let (property, message) = match verdict {
        Verdict::Pass => return None,
        Verdict::Crash { message, .. } => (String::new(), message.clone()),
        Verdict::Liveness { reason } => (String::new(), reason.clone()),
        Verdict::Correctness { property, message, .. } => (property.clone(), message.clone()),
        Verdict::Nondeterminism { .. } => (String::new(), verdict.to_string()),
    };
    Some(RecordedViolation { kind, property, message })
}

/// Load and replay one regression file against `registry`.
pub fn replay_file(path: &Path, registry: &Registry) -> Result<Replayed, CliError> {
    let (file, scenario) = load(path, registry)?;
    let report = run_plan(scenario, file.seed, &file.fault_plan, true);
    let reproduced = reproduces(&file.violation, &report.verdict);
    Ok(Replayed { file, report, reproduced })
}

/// `kube-sim replay`.
pub fn replay(args: &ReplayArgs, registry: &Registry) -> Result<u8, CliError> {
    let replayed = replay_file(&args.file, registry)?;
    let Replayed { file, report, reproduced } = &replayed;
    println!("replaying {}", args.file.display());
    print!("{file}");
    println!("verdict now: {}", report.verdict);
    if args.trace {
        print!("{}", report.trace.render());
    }
    println!();
    print!("{}", explain::story(report));
    if report.verdict.is_pass() {
        println!("\nPASS: the recorded failure no longer happens (the bug is fixed).");
        return Ok(EXIT_PASS);
    }
    if *reproduced {
        let same = if report.digest == file.trace_digest {
            "the same trace digest".to_owned()
        } else {
            format!("trace digest {} (recorded {}: the engine changed)", report.digest, file.trace_digest)
        };
        println!("\nFAIL: the recorded failure still happens, with {same}.");
    } else {
        println!("\nFAIL: it fails differently than recorded ({}).", file.violation.kind);
    }
    Ok(EXIT_FAILURE)
}
