//! Shrinking found failures into regression files: the fault plan, then a generated workload
//! (see [`crate::shrink::shrink_run`]), as long as the same property still fails; the file's
//! digest and message are those of a last run of the result.

use std::path::Path;

use crate::builder::SimBuilder;
use crate::faults::FaultPlan;
use crate::regression::{FORMAT_VERSION, Provenance, RecordedViolation, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::shrink::{RunShrinkReport, ShrinkBounds, ShrinkReport, WorkloadShrinkReport, shrink_run};

use super::findings::Failure;
use super::{ExploreError, replay, write_atomically};
use crate::runner::on_workers;

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
/// provenance counts of an earlier shrink (`found`: faults and steps) kept, and the shrunk run's
/// choices recorded when `record_choices` says so.
#[allow(clippy::too_many_arguments)] // one call site each; a struct would only rename them
pub fn shrink_world(
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

/// One distinct failure, shrunk.
#[derive(Debug)]
pub struct Shrunk {
    /// The regression file (not yet written).
    pub file: RegressionFile,
    /// What the shrinker did.
    pub report: RunShrinkReport,
}

/// Shrink every distinct failure of `groups` (as [`super::explore`] gives them) with its seed, in
/// parallel on `jobs` workers, each within `replays_max` replays; the results in the groups'
/// order. `by` is the strategy's name, and `seeds_run[i]` the runs of scenario `i`, recorded as
/// how the failure was found.
pub fn shrink_groups(
    scenarios: &[&Scenario],
    groups: &[(Failure, u64)],
    seeds_run: &[u64],
    by: &str,
    replays_max: u64,
    jobs: usize,
) -> Vec<Shrunk> {
    on_workers(jobs, groups.len(), |i| {
        let (failure, _) = &groups[i];
        let bounds = ShrinkBounds { replays_max, ..ShrinkBounds::default() };
        let found = Provenance {
            by: by.to_owned(),
            seeds_explored: Some(seeds_run[failure.scenario]),
            ..Provenance::default()
        };
        let scenario = scenarios[failure.scenario];
        let (file, report) =
            shrink_to_file(scenario, failure.seed, &failure.plan, failure.violation(), &bounds, found);
        Shrunk { file, report }
    })
}

/// What [`shrink_file`] did.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per command, never stored
pub enum FileShrink {
    /// The file's failure does not happen now: nothing was shrunk, the file is unchanged.
    NotFailing {
        /// The kind of failure the file records.
        recorded_kind: String,
        /// How the replay ended instead.
        verdict: crate::verdict::Verdict,
    },
    /// The file was shrunk (or was minimal already) and rewritten in place.
    Shrunk {
        /// The file as written.
        file: RegressionFile,
        /// What the shrinker did.
        report: RunShrinkReport,
    },
}

/// Shrink a regression file's fault plan further, then its generated workload if it has one
/// (same seed, same verdict kind and property), within `replays_max` replays, and rewrite the
/// file in place, atomically (`kube-sim shrink`). The shrink starts from the file's own steps,
/// without its old choices; a file that held choices gets the shrunk run's (the old ones belong
/// to the old plan).
pub fn shrink_file(path: &Path, registry: &Registry, replays_max: u64) -> Result<FileShrink, ExploreError> {
    let (file, scenario) = replay::load(path, registry)?;
    let now = replay::run_file(scenario, &file, false);
    if !replay::reproduces(&file.violation, &now.verdict) {
        return Ok(FileShrink::NotFailing { recorded_kind: file.violation.kind, verdict: now.verdict });
    }
    let bounds = ShrinkBounds { replays_max, ..ShrinkBounds::default() };
    let world = replay::world_of(scenario, &RegressionFile { choices: None, ..file.clone() });
    let (shrunk_file, report) = shrink_world(
        scenario,
        &world,
        file.seed,
        &file.fault_plan,
        file.violation.clone(),
        &bounds,
        file.found.clone(),
        Some(file.choices.is_some()),
    );
    let mut text = serde_json::to_string_pretty(&shrunk_file).expect("a regression file always serializes");
    text.push('\n');
    write_atomically(path, &text)?;
    Ok(FileShrink::Shrunk { file: shrunk_file, report })
}
