//! Replay: rerunning a regression file, or any given (seed, fault plan) of a scenario, exactly.
//!
//! These functions are the code path of `kube-sim replay` and of the `regressions` crate's
//! replay-all test, so the test and the tool agree on what "reproduces" means: the same verdict
//! kind and, for a correctness failure, the same property. [`Replay`] is the same thing as a
//! [`Strategy`]: a fixed list of runs.

use std::path::Path;

use crate::builder::SimBuilder;
use crate::faults::FaultPlan;
use crate::regression::{RecordedViolation, RegressionError, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::verdict::{RunReport, RunStats, Verdict};

use super::{ExploreError, Run, Strategy, write_atomically};
use crate::runner::on_fresh_thread;

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

/// Read a regression file and find its scenario: a missing or corrupt file, an unknown format,
/// an unknown scenario or a workload the scenario cannot take is an error naming the file and the
/// field.
pub fn load<'r>(path: &Path, registry: &'r Registry) -> Result<(RegressionFile, &'r Scenario), ExploreError> {
    let file = RegressionFile::load(path)?;
    file.check_scenario(path, &registry.names())?;
    let scenario = registry.get(&file.scenario).expect("check_scenario found it");
    check_controllers(path, &file, &scenario.builder().controller_names())?;
    if file.workload.is_some() && scenario.builder().generated_workload_for(file.seed).is_none() {
        return Err(RegressionError::WorkloadNotGenerated {
            path: path.to_owned(),
            scenario: file.scenario.clone(),
        }
        .into());
    }
    Ok((file, scenario))
}

/// Every controller the file's fault plan names (in a fault or a trigger) is one of the
/// scenario's, or the file is an error naming the field.
fn check_controllers(
    path: &Path,
    file: &RegressionFile,
    controllers: &[String],
) -> Result<(), RegressionError> {
    for (i, planned) in file.fault_plan.faults.iter().enumerate() {
        let named = [("fault", planned.fault.controller()), ("trigger", planned.trigger.controller())];
        for (part, controller) in named {
            let Some(controller) = controller.filter(|c| !controllers.iter().any(|known| known == c)) else {
                continue;
            };
            return Err(RegressionError::UnknownController {
                path: path.to_owned(),
                field: format!("faultPlan.faults[{i}].{part}.controller"),
                controller: controller.to_owned(),
                known: controllers.join(", "),
            });
        }
    }
    Ok(())
}

/// Run `scenario` at `seed` with exactly `plan`, on a fresh thread. A panic that escapes the
/// engine is a crash verdict on the `engine` node.
pub fn run_plan(scenario: &Scenario, seed: u64, plan: &FaultPlan, keep_trace: bool) -> RunReport {
    let builder = scenario.builder().clone().faults(plan.clone()).keep_trace(keep_trace);
    run_world(scenario, &builder, seed, plan)
}

/// Run `world` (a variant of `scenario`'s world, with `plan`) at `seed` on a fresh thread. A
/// panic that escapes the engine is a crash verdict on the `engine` node.
pub fn run_world(scenario: &Scenario, world: &SimBuilder, seed: u64, plan: &FaultPlan) -> RunReport {
    on_fresh_thread(&format!("sim-seed-{seed}"), || world.run(seed))
        .unwrap_or_else(|message| engine_crash(scenario, seed, plan, message))
}

/// The world a regression file replays: its scenario's, with the file's fault plan, its generated
/// workload's steps (if it holds them) and its recorded choices (if it holds them).
pub fn world_of(scenario: &Scenario, file: &RegressionFile) -> SimBuilder {
    let mut world = scenario.builder().clone().faults(file.fault_plan.clone());
    if let Some(workload) = &file.workload {
        world = world.generated_workload(workload.clone());
    }
    if let Some(choices) = &file.choices {
        world = world.replay_choices(choices.clone());
    }
    world
}

/// Run a regression file ([`world_of`]) at its seed, on a fresh thread.
pub fn run_file(scenario: &Scenario, file: &RegressionFile, keep_trace: bool) -> RunReport {
    run_world(scenario, &world_of(scenario, file).keep_trace(keep_trace), file.seed, &file.fault_plan)
}

/// Run `scenario` at `seed` as declared (its own fault source, e.g. swarm), on a fresh thread,
/// keeping only the digest.
pub fn run_seed(scenario: &Scenario, seed: u64) -> RunReport {
    let builder = scenario.builder();
    on_fresh_thread(&format!("sim-seed-{seed}"), || builder.run(seed))
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
        profile: Default::default(),
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
        Verdict::Exit { .. } => (String::new(), verdict.to_string()),
        Verdict::Liveness { reason } => (String::new(), reason.clone()),
        Verdict::Correctness { property, message, .. } => (property.clone(), message.clone()),
        Verdict::Nondeterminism { .. } => (String::new(), verdict.to_string()),
    };
    Some(RecordedViolation { kind, property, message })
}

/// Load and replay one regression file against `registry`.
pub fn replay_file(path: &Path, registry: &Registry) -> Result<Replayed, ExploreError> {
    replay_file_recording(path, registry, false)
}

/// [`replay_file`], recording the replay's choices into [`RunReport::choices`] when `record` and
/// the file holds none (a file's own choices are replayed, not recorded again).
pub fn replay_file_recording(
    path: &Path,
    registry: &Registry,
    record: bool,
) -> Result<Replayed, ExploreError> {
    let (file, scenario) = load(path, registry)?;
    let record = record && file.choices.is_none();
    let world = world_of(scenario, &file).keep_trace(true).record_choices(record);
    let report = run_world(scenario, &world, file.seed, &file.fault_plan);
    let reproduced = reproduces(&file.violation, &report.verdict);
    Ok(Replayed { file, report, reproduced })
}

/// Write `replayed`'s recorded choices into its file at `path`, atomically. `false` (and nothing
/// written) when the replay recorded none or did not fail as recorded: a recording of another
/// run would make the file replay something else.
pub fn embed_choices(path: &Path, replayed: &Replayed) -> Result<bool, ExploreError> {
    let Some(choices) = replayed.report.choices.clone().filter(|_| replayed.reproduced) else {
        return Ok(false);
    };
    let file = RegressionFile { choices: Some(choices), ..replayed.file.clone() };
    let mut text = serde_json::to_string_pretty(&file).expect("a regression file always serializes");
    text.push('\n');
    write_atomically(path, &text)?;
    Ok(true)
}

/// The replay strategy: exactly the given runs (scenario index, seed, fault plan), in order.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    runs: Vec<(usize, u64, FaultPlan)>,
}

impl Replay {
    /// Replay `runs`: each a scenario's index, a seed and the plan to run it with.
    pub fn new(runs: Vec<(usize, u64, FaultPlan)>) -> Self {
        Replay { runs }
    }
}

impl Strategy for Replay {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn run(&self, index: u64) -> Option<Run> {
        let (scenario, seed, plan) = self.runs.get(usize::try_from(index).ok()?)?;
        Some(Run { scenario: *scenario, seed: *seed, ordinal: index, plan: Some(plan.clone()) })
    }

    fn len(&self) -> Option<u64> {
        Some(self.runs.len() as u64)
    }
}
