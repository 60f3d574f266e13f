//! What the tests of every ported controller share: the sweeps and the report of a big sweep.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use sim::faults::{FaultPlan, SwarmConfig};
use sim::runner::on_fresh_thread;
use sim::shrink::{ShrinkBounds, shrink_plan};
use sim::{RunOptions, RunReport, SimBuilder, SweepConfig, SweepReport, Verdict, sweep};

/// Seeds of each swarm sweep that `cargo test` runs.
pub const SEEDS: u64 = 60;
/// Seeds of each ignored big sweep (issue 14's figure).
pub const SEEDS_BIG: u64 = 500;

/// `world` with swarm-selected faults (every default kind) on every one of its controllers.
pub fn with_swarm(world: SimBuilder) -> SimBuilder {
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    world.swarm(swarm)
}

/// How a test runs one seed of a world (a property over the trace judges the report here).
pub type Run = fn(&SimBuilder, u64, &RunOptions) -> RunReport;

/// One seed of `world`, judged by its properties only.
pub fn plain(world: &SimBuilder, seed: u64, options: &RunOptions) -> RunReport {
    world.run_with(seed, options)
}

/// Sweep `world` under swarm faults over `seeds` seeds, each run by `run`, with the determinism
/// self-check on every tenth seed (the sweep's default).
pub fn swarm_sweep(scenario: &str, world: &SimBuilder, seeds: u64, run: Run) -> SweepReport {
    swarm_sweep_checking(scenario, world, seeds, run, SweepConfig::new(scenario).self_check_every)
}

/// [`swarm_sweep`] with the determinism self-check on every `self_check_every`-th seed (0: never).
pub fn swarm_sweep_checking(
    scenario: &str,
    world: &SimBuilder,
    seeds: u64,
    run: Run,
    self_check_every: u64,
) -> SweepReport {
    let world = with_swarm(world.clone());
    let config = SweepConfig::new(scenario).seeds(seeds).self_check_every(self_check_every);
    sweep(&config, |seed, options| run(&world, seed, options))
}

/// What makes two failures alike: the verdict's kind and, for a property, its name.
fn failure_class(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Correctness { property, .. } => format!("correctness \"{property}\""),
        Verdict::Liveness { reason } => {
            // The reason's text up to its first number, so that times do not split a class.
            let head: String = reason.chars().take_while(|c| !c.is_ascii_digit()).collect();
            format!("liveness: {}", head.trim_end())
        }
        other => other.kind().to_owned(),
    }
}

/// A big sweep's figures: seeds failed per failure class, and for each class its first seed
/// with the plan shrunk (replayed on fresh threads, as sweeps run seeds).
pub fn describe_failures(report: &SweepReport, world: &SimBuilder, run: Run) -> String {
    let mut out = format!(
        "{}: {} of {} seeds failed ({} self-checks, {:.1}s)\n",
        report.scenario, report.failures_total, report.seeds_run, report.self_checks, report.wall_seconds
    );
    let mut classes: BTreeMap<String, Vec<&sim::RunReport>> = BTreeMap::new();
    for failure in &report.failures {
        classes.entry(failure_class(&failure.verdict)).or_default().push(failure);
    }
    for (class, failures) in &classes {
        let first = failures[0];
        let seeds: Vec<String> = failures.iter().map(|f| f.seed.to_string()).collect();
        let _ = writeln!(out, "- {class}: {} seeds ({})", failures.len(), seeds.join(", "));
        let _ = writeln!(out, "  first: seed {}: {}", first.seed, first.verdict);
        let still_fails = |plan: &FaultPlan| {
            let candidate = world.clone().faults(plan.clone());
            on_fresh_thread("shrink", || run(&candidate, first.seed, &RunOptions::default()))
                .is_ok_and(|r| failure_class(&r.verdict) == *class)
        };
        let shrunk = shrink_plan(&first.plan, &ShrinkBounds::default(), still_fails);
        let _ = writeln!(
            out,
            "  shrunk from {} to {} faults in {} replays{}:",
            shrunk.faults_before,
            shrunk.faults_after,
            shrunk.replays,
            shrunk.stopped_by.map(|b| format!(" (stopped by {b})")).unwrap_or_default()
        );
        for fault in &shrunk.plan.faults {
            let _ = writeln!(out, "    {fault}");
        }
        let _ = writeln!(out, "  replay: {}", report.replay_command(first.seed));
    }
    out
}
