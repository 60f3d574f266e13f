//! `kube-sim explore`: run many seeds of scenarios on every core, each seed on a fresh thread and
//! with the fault plan its scenario draws for it (swarm selection), deduplicate the failures by
//! scenario, verdict kind, property and message shape, shrink each distinct one, write it as a
//! regression file, and print a summary with the command that replays each.
//!
//! The seed space is `--first-seed` upwards; `--seeds N` takes its first N seeds (of which this
//! `--shard I/N` runs its share), `--duration` runs this shard's seeds until the time is up.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::report::{ExploreReport, FailureSummary, REPORT_FORMAT, REPORT_KIND, ScenarioSummary};
use crate::cli::shard::Shard;
use crate::cli::{CliError, EXIT_FAILURE, EXIT_PASS, message_shape, replay, replay_command};
use crate::faults::FaultPlan;
use crate::guided::{Explorer, GuidedConfig};
use crate::regression::{Provenance, RecordedViolation, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::shrink::ShrinkBounds;
use crate::verdict::Verdict;

/// Seeds per scenario when neither `--seeds` nor `--duration` is given.
const SEEDS_DEFAULT: u64 = 100;
/// Failing seeds kept for deduplication; more are only counted, so a scenario whose every seed
/// fails still explores in flat memory.
const FAILURES_KEPT_MAX: usize = 10_000;

/// Arguments of `kube-sim explore`.
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// A scenario to explore (repeatable); all of them by default.
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Explore the first N seeds of the seed space (this shard's share of them) [default: 100].
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub seeds: Option<u64>,
    /// Explore until this much wall time has passed (`90s`, `10m`, `2h`).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// Run only shard I of N: the seeds s with s mod N = I.
    #[arg(long, value_name = "I/N", default_value = "0/1")]
    pub shard: Shard,
    /// Where regression files are written, as `DIR/<scenario>/<name>.json`.
    #[arg(long, value_name = "DIR", default_value = "regressions")]
    pub out: PathBuf,
    /// Guided exploration: the injection points of each scenario's fault-free run, one fault at a
    /// time, then several (`--seeds` bounds the runs per scenario; scenario i belongs to shard i
    /// mod N).
    #[arg(long, conflicts_with = "random")]
    pub guided: bool,
    /// Random swarm exploration (the default).
    #[arg(long)]
    pub random: bool,
    /// Also write a machine-readable JSON report here.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The first seed of the seed space.
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub first_seed: u64,
    /// At most this many replays to shrink one failure.
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub shrink_replays: u64,
}

/// Parses `500ms`, `90s`, `10m`, `2h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || format!("{text:?} is not a duration: expected a number with ms, s, m or h, e.g. 10m");
    let n: u64 = number.parse().map_err(|_| bad())?;
    let seconds = |factor: u64| n.checked_mul(factor).map(Duration::from_secs).ok_or_else(bad);
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => seconds(1),
        "m" => seconds(60),
        "h" => seconds(3600),
        _ => Err(bad()),
    }
}

/// One failing seed, as kept for deduplication (the trace is not kept by exploration runs).
#[derive(Clone, Debug)]
struct Failure {
    scenario: usize,
    seed: u64,
    verdict: Verdict,
    plan: FaultPlan,
}

/// What the parallel phase found.
struct Explored {
    seeds_run: Vec<u64>,
    failing: Vec<u64>,
    failures: Vec<Failure>,
    wall_seconds: f64,
}

/// `kube-sim explore`.
pub fn explore(args: &ExploreArgs, registry: &Registry) -> Result<u8, CliError> {
    let scenarios = select(registry, &args.scenarios)?;
    let explored = if args.guided { run_guided(args, &scenarios)? } else { run_seeds(args, &scenarios) };
    let mut report = ExploreReport {
        report: REPORT_KIND.to_owned(),
        format: REPORT_FORMAT,
        shards: vec![args.shard],
        first_seed: args.first_seed,
        seeds_run: explored.seeds_run.iter().sum(),
        failing_seeds: explored.failing.iter().sum(),
        wall_seconds: explored.wall_seconds,
        scenarios: Vec::new(),
        failures: Vec::new(),
    };
    let groups = deduplicate(explored.failures);
    for (index, scenario) in scenarios.iter().enumerate() {
        report.scenarios.push(ScenarioSummary {
            name: scenario.name().to_owned(),
            seeds_run: explored.seeds_run[index],
            failing_seeds: explored.failing[index],
            distinct_failures: 0,
        });
    }
    for (failure, occurrences) in &groups {
        let scenario = scenarios[failure.scenario];
        let seeds_explored = explored.seeds_run[failure.scenario];
        let (file, mut summary) = shrink_one(args, scenario, failure, *occurrences, seeds_explored);
        // Two shapes can shrink to one: the second is the same failure, not a new file.
        if let Some(same) = report.failures.iter_mut().find(|f| f.key() == summary.key()) {
            same.occurrences += summary.occurrences;
            continue;
        }
        let path = file.write_to(&args.out)?;
        summary.file = path.display().to_string();
        summary.replay = replay_command(&path);
        report.failures.push(summary);
    }
    for s in &mut report.scenarios {
        s.distinct_failures = report.failures.iter().filter(|f| f.scenario == s.name).count() as u64;
    }
    print_summary(&report);
    if let Some(path) = &args.report {
        report.write(path)?;
        println!("report: {}", path.display());
    }
    Ok(if report.failing_seeds == 0 { EXIT_PASS } else { EXIT_FAILURE })
}

/// The scenarios named (in the order given), or every one.
fn select<'r>(registry: &'r Registry, names: &[String]) -> Result<Vec<&'r Scenario>, CliError> {
    if names.is_empty() {
        return Ok(registry.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            registry.get(name).ok_or_else(|| {
                CliError::Usage(format!(
                    "--scenario: unknown scenario \"{name}\"; known scenarios: {}",
                    registry.names().join(", ")
                ))
            })
        })
        .collect()
}

/// Run the seeds of every scenario in parallel: work item k is scenario `k mod S`, this shard's
/// seed number `k / S`, so all scenarios advance together under `--duration`.
fn run_seeds(args: &ExploreArgs, scenarios: &[&Scenario]) -> Explored {
    let per_scenario = args.seeds.unwrap_or(SEEDS_DEFAULT);
    let count = scenarios.len() as u64;
    let budget = match args.duration {
        Some(_) => None,
        None => Some(args.shard.count_in(args.first_seed, per_scenario).saturating_mul(count)),
    };
    let deadline = args.duration.map(|d| Instant::now() + d);
    let jobs =
        args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize);
    let progress = progress_bar(budget);
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(count == 0);
    let seeds_run: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let failing: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..jobs {
            let (next, stop, seeds_run, failing, failures, progress) =
                (&next, &stop, &seeds_run, &failing, &failures, &progress);
            std::thread::Builder::new()
                .name(format!("explore-worker-{worker}"))
                .spawn_scoped(scope, move || {
                    // Each iteration runs one seed; the loop ends at the seed budget, the
                    // deadline, or the end of the u64 seed space.
                    while !stop.load(Ordering::Relaxed) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let within_budget = budget.is_none_or(|b| k < b);
                        let within_time = deadline.is_none_or(|d| Instant::now() < d);
                        let index = (k % count) as usize;
                        let seed = args.shard.nth_seed(args.first_seed, k / count);
                        let (true, true, Some(seed)) = (within_budget, within_time, seed) else {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        };
                        let scenario = scenarios[index];
                        let report = replay::run_seed(scenario, seed);
                        seeds_run[index].fetch_add(1, Ordering::Relaxed);
                        progress.inc(1);
                        if report.verdict.is_pass() {
                            continue;
                        }
                        failing[index].fetch_add(1, Ordering::Relaxed);
                        let total: u64 = failing.iter().map(|f| f.load(Ordering::Relaxed)).sum();
                        progress.set_message(format!("{total} failing"));
                        let mut kept = failures.lock().unwrap_or_else(|p| p.into_inner());
                        if kept.len() < FAILURES_KEPT_MAX {
                            kept.push(Failure {
                                scenario: index,
                                seed,
                                verdict: report.verdict,
                                plan: report.plan,
                            });
                        }
                    }
                })
                .expect("the OS refused to start an exploration worker");
        }
    });
    progress.finish_and_clear();
    Explored {
        seeds_run: seeds_run.into_iter().map(AtomicU64::into_inner).collect(),
        failing: failing.into_iter().map(AtomicU64::into_inner).collect(),
        failures: failures.into_inner().unwrap_or_else(|p| p.into_inner()),
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

/// Guided exploration (`sim::guided`): per scenario of this shard (scenario i belongs to shard
/// i mod N), the fault-free reference at `--first-seed`, then its single-fault plans, then
/// multi-fault ones, up to `--seeds` runs, stopping at the first failure; prints the coverage.
fn run_guided(args: &ExploreArgs, scenarios: &[&Scenario]) -> Result<Explored, CliError> {
    let started = Instant::now();
    let mut explored = Explored {
        seeds_run: vec![0; scenarios.len()],
        failing: vec![0; scenarios.len()],
        failures: Vec::new(),
        wall_seconds: 0.0,
    };
    for (index, scenario) in scenarios.iter().enumerate() {
        if !args.shard.owns(index as u64) {
            continue;
        }
        let mut config = GuidedConfig { seed: args.first_seed, ..GuidedConfig::default() };
        if let Some(runs) = args.seeds {
            config.runs_max = usize::try_from(runs).unwrap_or(usize::MAX);
        }
        let exploration = Explorer::for_scenario(scenario, config)
            .explore()
            .map_err(|e| CliError::Usage(format!("--guided: {e}")))?;
        eprintln!("kube-sim explore: {}: {exploration}", scenario.name());
        explored.seeds_run[index] = exploration.runs as u64;
        explored.failing[index] = exploration.failures as u64;
        if let Some(finding) = exploration.failure {
            explored.failures.push(Failure {
                scenario: index,
                seed: finding.report.seed,
                verdict: finding.report.verdict,
                plan: finding.plan,
            });
        }
    }
    explored.wall_seconds = started.elapsed().as_secs_f64();
    Ok(explored)
}

/// A progress bar on stderr (indicatif draws nothing when stderr is not a terminal).
fn progress_bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = match total {
        Some(_) => "{elapsed_precise} [{bar:30}] {pos}/{len} seeds ({per_sec}) {msg}",
        None => "{elapsed_precise} {spinner} {pos} seeds ({per_sec}) {msg}",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message("0 failing");
    bar
}

/// The deduplication key: scenario, verdict kind, property and message shape.
fn key(failure: &Failure) -> (usize, &'static str, String, String) {
    let violation = violation_of(&failure.verdict);
    (failure.scenario, failure.verdict.kind(), violation.property, message_shape(&violation.message))
}

/// The violation a verdict records (a pass, which exploration never keeps, records nothing).
fn violation_of(verdict: &Verdict) -> RecordedViolation {
    replay::recorded_violation(verdict).unwrap_or_else(|| RecordedViolation {
        kind: verdict.kind().to_owned(),
        property: String::new(),
        message: String::new(),
    })
}

/// One failure per key, the lowest seed of each (so that a `--seeds` run picks the same one
/// however the workers interleaved), with how many seeds shared the key; in scenario order.
fn deduplicate(mut failures: Vec<Failure>) -> Vec<(Failure, u64)> {
    failures.sort_by_key(|f| (f.scenario, f.seed));
    let mut groups: Vec<(Failure, u64)> = Vec::new();
    for failure in failures {
        match groups.iter_mut().find(|(g, _)| key(g) == key(&failure)) {
            Some((_, count)) => *count += 1,
            None => groups.push((failure, 1)),
        }
    }
    groups
}

/// Shrink one distinct failure with the same seed; its regression file and its summary (whose
/// `file` and `replay` the caller fills in once the file is written).
fn shrink_one(
    args: &ExploreArgs,
    scenario: &Scenario,
    failure: &Failure,
    occurrences: u64,
    seeds_explored: u64,
) -> (RegressionFile, FailureSummary) {
    let recorded = violation_of(&failure.verdict);
    let bounds = ShrinkBounds { replays_max: args.shrink_replays, ..ShrinkBounds::default() };
    let found = Provenance {
        by: if args.guided { "guided" } else { "swarm" }.to_owned(),
        seeds_explored: Some(seeds_explored),
        ..Provenance::default()
    };
    // The plan, then a generated workload (see `shrink::shrink_run`).
    let (file, shrunk) =
        crate::cli::shrink::shrink_to_file(scenario, failure.seed, &failure.plan, recorded, &bounds, found);
    let violation = file.violation.clone();
    let summary = FailureSummary {
        scenario: scenario.name().to_owned(),
        seed: failure.seed,
        kind: violation.kind.clone(),
        property: violation.property.clone(),
        shape: message_shape(&violation.message),
        message: violation.message,
        occurrences,
        faults_before: shrunk.plan.faults_before,
        faults_after: shrunk.plan.faults_after,
        shrink_replays: shrunk.replays(),
        file: String::new(),
        replay: String::new(),
    };
    (file, summary)
}

/// The summary table, then each failure with its replay command.
pub(crate) fn print_summary(report: &ExploreReport) {
    let width = report.scenarios.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
    println!("{:<width$}  {:>8}  {:>8}  {:>8}", "scenario", "seeds", "failing", "distinct");
    for s in &report.scenarios {
        println!(
            "{:<width$}  {:>8}  {:>8}  {:>8}",
            s.name, s.seeds_run, s.failing_seeds, s.distinct_failures
        );
    }
    let rate = if report.wall_seconds > 0.0 { report.seeds_run as f64 / report.wall_seconds } else { 0.0 };
    let shards: Vec<String> = report.shards.iter().map(ToString::to_string).collect();
    println!(
        "{} seeds (shard {}) in {:.1}s ({rate:.0} seeds/s): {} failing seeds, {} distinct failures",
        report.seeds_run,
        shards.join(", "),
        report.wall_seconds,
        report.failing_seeds,
        report.failures.len()
    );
    for (i, f) in report.failures.iter().enumerate() {
        let property =
            if f.property.is_empty() { String::new() } else { format!(" property \"{}\"", f.property) };
        println!("\nfailure {}: {} seed {} ({} seeds alike)", i + 1, f.scenario, f.seed, f.occurrences);
        println!("  {}{property}: {}", f.kind, f.message);
        println!(
            "  shrunk from {} to {} faults in {} replays",
            f.faults_before, f.faults_after, f.shrink_replays
        );
        println!("  file: {}", f.file);
        println!("  replay: {}", f.replay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_bad_ones_name_the_expected_form() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(
            parse_duration("ten"),
            Err("\"ten\" is not a duration: expected a number with ms, s, m or h, e.g. 10m".to_owned())
        );
    }

    #[test]
    fn failures_deduplicate_by_scenario_kind_property_and_message_shape_keeping_the_lowest_seed() {
        let failure = |scenario, seed, message: &str| Failure {
            scenario,
            seed,
            verdict: Verdict::Correctness { property: "p".into(), message: message.into(), at_millis: 1 },
            plan: FaultPlan::none(),
        };
        let groups = deduplicate(vec![
            failure(0, 9, "pvc data-2 deleted"),
            failure(0, 3, "pvc data-1 deleted"),
            failure(1, 4, "pvc data-1 deleted"),
            failure(0, 5, "statefulset has 3 replicas"),
        ]);
        let seen: Vec<(usize, u64, u64)> = groups.iter().map(|(f, n)| (f.scenario, f.seed, *n)).collect();
        assert_eq!(seen, vec![(0, 3, 2), (0, 5, 1), (1, 4, 1)]);
    }
}
