//! `kube-sim shrink FILE`: shrink a regression file's fault plan further, then its generated
//! workload if it has one (same seed, same verdict kind and property), and rewrite the file in
//! place, atomically. [`shrink_to_file`] is the shrink that exploration uses too.

use std::path::PathBuf;

use crate::cli::report::write_atomically;
use crate::cli::{CliError, EXIT_PASS, replay};
use crate::faults::FaultPlan;
use crate::regression::{FORMAT_VERSION, Provenance, RecordedViolation, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::shrink::{RunShrinkReport, ShrinkBounds, ShrinkReport, WorkloadShrinkReport, shrink_run};
use crate::world::SimBuilder;

/// Shrink a failure of `scenario` (found at `seed` with `plan`, failing as `recorded`) into a
/// regression file: the plan, then a generated workload, within `bounds`; the file's digest and
/// message are those of a last run of the result. `found` says how it was found; the shrink's
/// numbers are added to it. If the decoded plan alone does not fail as recorded (a swarm's draw
/// and the fixed plan should agree, but if not), the file keeps the plan unshrunk.
pub fn shrink_to_file(
    scenario: &Scenario,
    seed: u64,
    plan: &FaultPlan,
    recorded: RecordedViolation,
    bounds: &ShrinkBounds,
    found: Provenance,
) -> (RegressionFile, RunShrinkReport) {
    shrink_world(scenario, scenario.builder(), seed, plan, recorded, bounds, found, None)
}

/// [`shrink_to_file`] from `world` (the scenario's, possibly with a file's workload), with the
/// provenance counts of an earlier shrink (`before`: faults and steps) kept.
#[allow(clippy::too_many_arguments)] // one call site each; a struct would only rename them
fn shrink_world(
    scenario: &Scenario,
    world: &SimBuilder,
    seed: u64,
    plan: &FaultPlan,
    recorded: RecordedViolation,
    bounds: &ShrinkBounds,
    mut found: Provenance,
    record_choices: Option<bool>,
) -> (RegressionFile, RunShrinkReport) {
    let still_fails = |candidate: &SimBuilder| {
        replay::reproduces(&recorded, &replay::run_world(scenario, candidate, seed, plan).verdict)
    };
    let shrunk = if still_fails(&world.clone().faults(plan.clone())) {
        shrink_run(world, seed, plan, bounds, still_fails)
    } else {
        eprintln!(
            "kube-sim: {} seed {}: the decoded fault plan alone does not fail as recorded; kept unshrunk",
            scenario.name(),
            seed
        );
        unshrunk(world, seed, plan)
    };
    let last_world = shrunk.apply_to(world).record_choices(record_choices.unwrap_or(false));
    let last = replay::run_world(scenario, &last_world, seed, &shrunk.plan.plan);
    found.faults_before_shrink = Some(found.faults_before_shrink.unwrap_or(shrunk.plan.faults_before));
    found.shrink_replays = Some(found.shrink_replays.unwrap_or(0) + shrunk.replays());
    if let Some(w) = &shrunk.workload {
        found.workload_steps_before_shrink =
            Some(found.workload_steps_before_shrink.unwrap_or(w.steps_before));
    }
    if found.engine_version.is_empty() {
        found.engine_version = env!("CARGO_PKG_VERSION").to_owned();
    }
    let file = RegressionFile {
        format: FORMAT_VERSION,
        scenario: scenario.name().to_owned(),
        seed,
        fault_plan: shrunk.plan.plan.clone(),
        workload: shrunk.workload.as_ref().map(|w| w.workload.clone()),
        violation: replay::recorded_violation(&last.verdict).unwrap_or(recorded),
        trace_digest: last.digest,
        found,
        choices: last.choices,
    };
    (file, shrunk)
}

/// The report of a shrink that did not run: the plan and the workload as they are.
fn unshrunk(world: &SimBuilder, seed: u64, plan: &FaultPlan) -> RunShrinkReport {
    let faults = plan.faults.len();
    let workload = world.generated_workload_for(seed).and_then(Result::ok).map(|workload| {
        let steps = workload.steps.len();
        WorkloadShrinkReport {
            workload,
            steps_before: steps,
            steps_after: steps,
            replays: 0,
            stopped_by: None,
        }
    });
    let plan = ShrinkReport {
        plan: plan.clone(),
        faults_before: faults,
        faults_after: faults,
        replays: 0,
        stopped_by: None,
    };
    RunShrinkReport { plan, workload }
}

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
    let (file, scenario) = replay::load(&args.file, registry)?;
    let now = replay::run_file(scenario, &file, false);
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
    // Shrink from the file's own steps (not freshly generated ones), without its old choices.
    let world = replay::world_of(scenario, &RegressionFile { choices: None, ..file.clone() });
    let (shrunk_file, shrunk) = shrink_world(
        scenario,
        &world,
        file.seed,
        &file.fault_plan,
        file.violation.clone(),
        &bounds,
        file.found.clone(),
        Some(file.choices.is_some()),
    );
    let file = shrunk_file;
    let mut text = serde_json::to_string_pretty(&file).expect("a regression file always serializes");
    text.push('\n');
    write_atomically(&args.file, &text)?;
    println!("{}: {shrunk}", args.file.display());
    print!("{file}");
    Ok(EXIT_PASS)
}
