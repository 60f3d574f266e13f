//! `kube-sim explore`: run many seeds of scenarios on every core, each seed on a fresh thread and
//! with the fault plan its scenario draws for it (swarm selection), deduplicate the failures by
//! scenario, verdict kind, property and message shape, shrink each distinct one, write it as a
//! regression file, and print a summary with the command that replays each.
//!
//! The seed space is `--first-seed` upwards; `--seeds N` takes its first N seeds (of which this
//! `--shard I/N` runs its share), `--duration` runs this shard's seeds until the time is up.
//!
//! `--guided` runs each scenario's fault-free reference at `--first-seed`, then every plan over
//! its injection points ([`crate::guided`]): run `k` of a scenario (the reference is run 0) is
//! this shard's when `k mod N = I`, and `--seeds` bounds the runs per scenario. The plans of every
//! scenario are spread over the `--jobs` workers. Every plan runs (there is no stopping at the
//! first failure), so the runs, their verdicts, the files and the report are the same whatever
//! the number of workers and however they interleave: failures are kept per deduplication key
//! by the lowest (scenario, seed, run), never by arrival.
//!
//! Both modes measure injection-point coverage against each scenario's fault-free reference at
//! `--first-seed` ([`PointMap`]): the progress bar shows it as it grows, the summary table and the
//! report give it per scenario.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::report::{
    ExploreReport, FailureSummary, PointCoverage, REPORT_FORMAT, REPORT_KIND, ScenarioSummary,
};
use crate::cli::shard::Shard;
use crate::cli::{CliError, EXIT_FAILURE, EXIT_PASS, message_shape, replay, replay_command};
use crate::faults::FaultPlan;
use crate::guided::{
    Explorer, GuidedConfig, GuidedError, PlannedRun, PointMap, PointSet, injection_points_with,
};
use crate::regression::{Provenance, RecordedViolation, RegressionFile};
use crate::scenario::{Registry, Scenario};
use crate::shrink::ShrinkBounds;
use crate::verdict::Verdict;

/// Seeds per scenario when neither `--seeds` nor `--duration` is given.
const SEEDS_DEFAULT: u64 = 100;
/// Distinct failures kept (one failing run each); failures of further shapes are only counted,
/// so a scenario that fails in endless ways still explores in flat memory.
const DISTINCT_FAILURES_KEPT_MAX: usize = 10_000;

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
    /// time, then several (`--seeds` bounds the runs per scenario, the reference included; run k
    /// of a scenario belongs to shard k mod N).
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

/// One failing run, as kept for deduplication (the trace is not kept by exploration runs).
#[derive(Clone, Debug)]
struct Failure {
    scenario: usize,
    seed: u64,
    /// Which run of the scenario's guided exploration (0 in random mode, where seeds differ).
    run: u64,
    verdict: Verdict,
    plan: FaultPlan,
}

impl Failure {
    /// The order that picks a key's representative: the same whatever order the runs finished in.
    fn order(&self) -> (usize, u64, u64) {
        (self.scenario, self.seed, self.run)
    }
}

/// The deduplication key: scenario, verdict kind, property and message shape.
type Key = (usize, &'static str, String, String);

/// Failures deduplicated as they arrive: per key, the failure that comes first in
/// [`Failure::order`] and how many runs shared the key.
#[derive(Default)]
struct Findings {
    groups: BTreeMap<Key, (Failure, u64)>,
}

impl Findings {
    fn add(&mut self, failure: Failure) {
        let key = key(&failure);
        if let Some((kept, count)) = self.groups.get_mut(&key) {
            *count += 1;
            if failure.order() < kept.order() {
                *kept = failure;
            }
        } else if self.groups.len() < DISTINCT_FAILURES_KEPT_MAX {
            self.groups.insert(key, (failure, 1));
        }
    }

    /// One failure per key with its count, in the order of their representatives.
    fn into_groups(self) -> Vec<(Failure, u64)> {
        let mut groups: Vec<(Failure, u64)> = self.groups.into_values().collect();
        groups.sort_by_key(|(failure, _)| failure.order());
        groups
    }
}

/// What the parallel phase found.
struct Explored {
    seeds_run: Vec<u64>,
    failing: Vec<u64>,
    groups: Vec<(Failure, u64)>,
    coverage: Vec<PointCoverage>,
    wall_seconds: f64,
}

/// A scenario's fault-free reference at `--first-seed` and its injection points.
struct Reference {
    points: PointSet,
    map: PointMap,
}

/// Injection-point coverage as the workers find it: which points of which scenario some run
/// exercised. Marking is a union, so the end result does not depend on the order of the runs.
struct LiveCoverage {
    marked: Vec<Vec<AtomicBool>>,
    exercised: AtomicU64,
    total: u64,
}

impl LiveCoverage {
    fn new(references: &[Option<Reference>]) -> Self {
        let points = |r: &Option<Reference>| r.as_ref().map_or(0, |r| r.map.len());
        let marked: Vec<Vec<AtomicBool>> =
            references.iter().map(|r| (0..points(r)).map(|_| AtomicBool::new(false)).collect()).collect();
        let total = marked.iter().map(|m| m.len() as u64).sum();
        LiveCoverage { marked, exercised: AtomicU64::new(0), total }
    }

    /// Mark `points` of `scenario` exercised; whether any was new.
    fn mark(&self, scenario: usize, points: &[usize]) -> bool {
        let mut new = false;
        for point in points {
            if let Some(flag) = self.marked[scenario].get(*point)
                && !flag.swap(true, Ordering::Relaxed)
            {
                self.exercised.fetch_add(1, Ordering::Relaxed);
                new = true;
            }
        }
        new
    }

    /// The progress bar's message.
    fn message(&self, failing: u64) -> String {
        let exercised = self.exercised.load(Ordering::Relaxed);
        format!("{failing} failing, coverage {exercised}/{} points", self.total)
    }

    fn into_summaries(self) -> Vec<PointCoverage> {
        self.marked
            .into_iter()
            .map(|flags| {
                let total = flags.len() as u64;
                let exercised = flags.into_iter().map(AtomicBool::into_inner).enumerate();
                PointCoverage::new(total, exercised.filter(|(_, e)| *e).map(|(i, _)| i as u64))
            })
            .collect()
    }
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
    for (index, scenario) in scenarios.iter().enumerate() {
        report.scenarios.push(ScenarioSummary {
            name: scenario.name().to_owned(),
            seeds_run: explored.seeds_run[index],
            failing_seeds: explored.failing[index],
            distinct_failures: 0,
            coverage: explored.coverage[index].clone(),
        });
    }
    // Shrinking is the costly part of a failure: the distinct ones shrink in parallel, each on
    // its own, and come back in their order.
    let groups = &explored.groups;
    let shrunk = on_workers(jobs(args), groups.len(), |i| {
        let (failure, occurrences) = &groups[i];
        let seeds_explored = explored.seeds_run[failure.scenario];
        shrink_one(args, scenarios[failure.scenario], failure, *occurrences, seeds_explored)
    });
    for (file, mut summary) in shrunk {
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

/// Worker threads: `--jobs`, or one per core.
fn jobs(args: &ExploreArgs) -> usize {
    args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| usize::try_from(j).unwrap_or(usize::MAX),
    )
}

/// `work(i)` for every `i` in `0..count`, on `jobs` worker threads (std threads outside the
/// simulation; each run inside starts its own fresh thread), the results in index order whatever
/// order the workers finished in.
fn on_workers<R: Send>(jobs: usize, count: usize, work: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for worker in 0..jobs.clamp(1, count.max(1)) {
            let (next, results, work) = (&next, &results, &work);
            std::thread::Builder::new()
                .name(format!("explore-worker-{worker}"))
                .spawn_scoped(scope, move || {
                    // Each iteration does one item; the loop ends when every item is taken.
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count {
                            break;
                        }
                        let result = work(i);
                        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(result);
                    }
                })
                .expect("the OS refused to start an exploration worker");
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.into_iter().map(|r| r.expect("every item ran: a worker that panics ends the scope")).collect()
}

/// The fault-free reference of every scenario at `--first-seed` (in parallel) with its injection
/// points, or the verdict of a reference that did not pass (it has no correct run to perturb).
fn references(args: &ExploreArgs, scenarios: &[&Scenario]) -> Vec<Result<Reference, Verdict>> {
    let config = guided_config(args);
    on_workers(jobs(args), scenarios.len(), |i| {
        let report = replay::run_plan(scenarios[i], args.first_seed, &FaultPlan::none(), true);
        if !report.verdict.is_pass() {
            return Err(report.verdict);
        }
        let points = injection_points_with(report.trace.entries(), &config.points);
        let map = PointMap::new(report.trace.entries(), &points.points);
        Ok(Reference { points, map })
    })
}

/// The guided configuration `--first-seed` and `--seeds` make.
fn guided_config(args: &ExploreArgs) -> GuidedConfig {
    let mut config = GuidedConfig { seed: args.first_seed, ..GuidedConfig::default() };
    if let Some(runs) = args.seeds {
        config.runs_max = usize::try_from(runs).unwrap_or(usize::MAX);
    }
    config
}

/// Run the seeds of every scenario in parallel: work item k is scenario `k mod S`, this shard's
/// seed number `k / S`, so all scenarios advance together under `--duration`.
fn run_seeds(args: &ExploreArgs, scenarios: &[&Scenario]) -> Explored {
    let started = Instant::now();
    // Random mode measures coverage where it can: a scenario whose reference fails has no points.
    let references: Vec<Option<Reference>> = references(args, scenarios)
        .into_iter()
        .zip(scenarios)
        .map(|(reference, scenario)| {
            reference
                .map_err(|verdict| {
                    eprintln!(
                        "kube-sim explore: {}: the fault-free reference at seed {} did not pass ({verdict}): \
                         no injection points to measure coverage against",
                        scenario.name(),
                        args.first_seed,
                    );
                })
                .ok()
        })
        .collect();
    let per_scenario = args.seeds.unwrap_or(SEEDS_DEFAULT);
    let count = scenarios.len() as u64;
    let budget = match args.duration {
        Some(_) => None,
        None => Some(args.shard.count_in(args.first_seed, per_scenario).saturating_mul(count)),
    };
    let deadline = args.duration.map(|d| started + d);
    let coverage = LiveCoverage::new(&references);
    let progress = progress_bar(budget, "seeds", coverage.message(0));
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(count == 0);
    let seeds_run: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let failing: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let findings = Mutex::new(Findings::default());
    std::thread::scope(|scope| {
        for worker in 0..jobs(args) {
            let (next, stop, seeds_run, failing, findings, progress) =
                (&next, &stop, &seeds_run, &failing, &findings, &progress);
            let (coverage, references) = (&coverage, &references);
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
                        let report = replay::run_seed(scenarios[index], seed);
                        seeds_run[index].fetch_add(1, Ordering::Relaxed);
                        let exercised = references[index].as_ref().map(|r| r.map.exercised_by(&report));
                        let new_points = coverage.mark(index, &exercised.unwrap_or_default());
                        let failed = !report.verdict.is_pass();
                        if failed {
                            failing[index].fetch_add(1, Ordering::Relaxed);
                            let failure = Failure {
                                scenario: index,
                                seed,
                                run: 0,
                                verdict: report.verdict,
                                plan: report.plan,
                            };
                            findings.lock().unwrap_or_else(|p| p.into_inner()).add(failure);
                        }
                        if failed || new_points {
                            progress.set_message(coverage.message(sum(failing)));
                        }
                        progress.inc(1);
                    }
                })
                .expect("the OS refused to start an exploration worker");
        }
    });
    progress.finish_and_clear();
    Explored {
        seeds_run: seeds_run.into_iter().map(AtomicU64::into_inner).collect(),
        failing: failing.into_iter().map(AtomicU64::into_inner).collect(),
        groups: findings.into_inner().unwrap_or_else(|p| p.into_inner()).into_groups(),
        coverage: coverage.into_summaries(),
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

/// The sum of per-scenario counters, as the progress bar shows it.
fn sum(counters: &[AtomicU64]) -> u64 {
    counters.iter().map(|c| c.load(Ordering::Relaxed)).sum()
}

/// Guided exploration ([`crate::guided`]): every scenario's reference at `--first-seed`, then
/// this shard's share of each scenario's planned runs (at most `--seeds` runs per scenario, the
/// reference being run 0), all scenarios' runs spread over the workers; prints a line per
/// scenario with its coverage.
fn run_guided(args: &ExploreArgs, scenarios: &[&Scenario]) -> Result<Explored, CliError> {
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + d);
    let config = guided_config(args);
    let mut references: Vec<Option<Reference>> = Vec::with_capacity(scenarios.len());
    for (scenario, reference) in scenarios.iter().zip(self::references(args, scenarios)) {
        let reference = reference.map_err(|verdict| {
            let scenario = scenario.name().to_owned();
            let verdict = Box::new(verdict);
            let error = GuidedError::ReferenceFailed { scenario, seed: args.first_seed, verdict };
            CliError::Usage(format!("--guided: {error}"))
        })?;
        references.push(Some(reference));
    }
    let mut planned: Vec<Vec<PlannedRun>> = Vec::with_capacity(scenarios.len());
    let mut stopped_by_runs_max = Vec::with_capacity(scenarios.len());
    for (scenario, reference) in scenarios.iter().zip(references.iter().flatten()) {
        let mut runs =
            Explorer::for_scenario(scenario, config.clone()).planned_runs(&reference.points.points);
        let plans_max = config.runs_max.saturating_sub(1);
        stopped_by_runs_max.push(runs.len() > plans_max);
        runs.truncate(plans_max);
        planned.push(runs);
    }
    // Work item: (scenario, run k >= 1) of this shard; the reference (run 0) is shard 0's count.
    // Run k of every scenario comes before run k + 1 of any, so that all scenarios advance
    // together when `--duration` ends the exploration early.
    let mut items: Vec<(usize, usize)> = planned
        .iter()
        .enumerate()
        .flat_map(|(s, runs)| (1..=runs.len()).map(move |k| (s, k)))
        .filter(|(_, k)| args.shard.owns(*k as u64))
        .collect();
    items.sort_by_key(|(s, k)| (*k, *s));
    let owns_reference = u64::from(args.shard.owns(0));
    let coverage = LiveCoverage::new(&references);
    let progress = progress_bar(Some(items.len() as u64), "runs", coverage.message(0));
    let seeds_run: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(owns_reference)).collect();
    let failing: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let findings = Mutex::new(Findings::default());
    // Per item: whether it ran (a `--duration` may end the exploration first).
    let ran = on_workers(jobs(args), items.len(), |i| {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        let (scenario, k) = items[i];
        let run = &planned[scenario][k - 1];
        let report = replay::run_plan(scenarios[scenario], args.first_seed, &run.plan, false);
        seeds_run[scenario].fetch_add(1, Ordering::Relaxed);
        let exercised = references[scenario].as_ref().map(|r| r.map.exercised_by(&report));
        let new_points = coverage.mark(scenario, &exercised.unwrap_or_default());
        let failed = !report.verdict.is_pass();
        if failed {
            failing[scenario].fetch_add(1, Ordering::Relaxed);
            let failure = Failure {
                scenario,
                seed: args.first_seed,
                run: k as u64,
                verdict: report.verdict,
                plan: report.plan,
            };
            findings.lock().unwrap_or_else(|p| p.into_inner()).add(failure);
        }
        if failed || new_points {
            progress.set_message(coverage.message(sum(&failing)));
        }
        progress.inc(1);
        true
    });
    progress.finish_and_clear();
    let explored = Explored {
        seeds_run: seeds_run.into_iter().map(AtomicU64::into_inner).collect(),
        failing: failing.into_iter().map(AtomicU64::into_inner).collect(),
        groups: findings.into_inner().unwrap_or_else(|p| p.into_inner()).into_groups(),
        coverage: coverage.into_summaries(),
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    for (index, scenario) in scenarios.iter().enumerate() {
        let (mut single, mut multi) = (0, 0);
        for ((s, k), _) in items.iter().zip(&ran).filter(|(item, ran)| item.0 == index && **ran) {
            match planned[*s][k - 1].phase {
                crate::guided::Phase::Multi => multi += 1,
                _ => single += 1,
            }
        }
        let unfinished = items.iter().zip(&ran).any(|(item, ran)| item.0 == index && !ran);
        let stopped_by =
            if unfinished { Some("--duration") } else { stopped_by_runs_max[index].then_some("--seeds") };
        let reference = references[index].as_ref().expect("a guided scenario's reference passed");
        let line = GuidedLine {
            seed: args.first_seed,
            points: &reference.points,
            runs: explored.seeds_run[index],
            single,
            multi,
            failing: explored.failing[index],
            stopped_by,
            coverage: &explored.coverage[index],
        };
        eprintln!("kube-sim explore: {}: {line}", scenario.name());
    }
    Ok(explored)
}

/// The line guided exploration prints per scenario.
struct GuidedLine<'a> {
    seed: u64,
    points: &'a PointSet,
    runs: u64,
    single: u64,
    multi: u64,
    failing: u64,
    stopped_by: Option<&'static str>,
    coverage: &'a PointCoverage,
}

impl std::fmt::Display for GuidedLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.points;
        write!(
            f,
            "guided exploration seed {}: {} injection points ({} controller writes, {} changed nothing, \
             {} duplicate points merged); {} runs ({} single-fault, {} multi-fault plans); {} failing",
            self.seed,
            p.points.len(),
            p.writes,
            p.no_op_writes,
            p.duplicates,
            self.runs,
            self.single,
            self.multi,
            self.failing,
        )?;
        if let Some(bound) = self.stopped_by {
            write!(f, "; stopped by {bound}")?;
        }
        write!(f, "; {} of {} injection points exercised", self.coverage.exercised, self.coverage.total)
    }
}

/// A progress bar on stderr (indicatif draws nothing when stderr is not a terminal), counting
/// `unit` (seeds or runs), with the failures and the coverage as its message.
fn progress_bar(total: Option<u64>, unit: &str, message: String) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = match total {
        Some(_) => format!("{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}) {{msg}}"),
        None => format!("{{elapsed_precise}} {{spinner}} {{pos}} {unit} ({{per_sec}}) {{msg}}"),
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}

/// The deduplication key: scenario, verdict kind, property and message shape.
fn key(failure: &Failure) -> Key {
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

/// One failure per key, the first of each in (scenario, seed, run) order (so that a `--seeds`
/// run picks the same one however the workers interleaved), with how many runs shared the key;
/// in that order.
#[cfg(test)]
fn deduplicate(failures: Vec<Failure>) -> Vec<(Failure, u64)> {
    let mut findings = Findings::default();
    for failure in failures {
        findings.add(failure);
    }
    findings.into_groups()
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

/// The summary table (with each scenario's injection-point coverage), then each failure with its
/// replay command.
pub(crate) fn print_summary(report: &ExploreReport) {
    let width = report.scenarios.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
    let row = |name: &str, seeds: &str, failing: &str, distinct: &str, coverage: &str| {
        println!("{name:<width$}  {seeds:>8}  {failing:>8}  {distinct:>8}  {coverage:>9}");
    };
    row("scenario", "seeds", "failing", "distinct", "coverage");
    for s in &report.scenarios {
        let numbers = [s.seeds_run, s.failing_seeds, s.distinct_failures].map(|n| n.to_string());
        row(&s.name, &numbers[0], &numbers[1], &numbers[2], &s.coverage.to_string());
    }
    let rate = if report.wall_seconds > 0.0 { report.seeds_run as f64 / report.wall_seconds } else { 0.0 };
    let shards: Vec<String> = report.shards.iter().map(ToString::to_string).collect();
    let exercised: u64 = report.scenarios.iter().map(|s| s.coverage.exercised).sum();
    let points: u64 = report.scenarios.iter().map(|s| s.coverage.total).sum();
    println!(
        "{} seeds (shard {}) in {:.1}s ({rate:.0} seeds/s): {} failing seeds, {} distinct failures; \
         {exercised} of {points} injection points exercised",
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
            run: 0,
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

    #[test]
    fn a_guided_failure_key_keeps_the_lowest_run_whatever_order_the_runs_finished_in() {
        let failure = |run| Failure {
            scenario: 0,
            seed: 7,
            run,
            verdict: Verdict::Liveness { reason: format!("stuck after {run} reconciles") },
            plan: FaultPlan::none(),
        };
        for arrival in [vec![9, 4, 12], vec![12, 9, 4], vec![4, 12, 9]] {
            let groups = deduplicate(arrival.into_iter().map(failure).collect());
            let seen: Vec<(u64, u64)> = groups.iter().map(|(f, n)| (f.run, *n)).collect();
            assert_eq!(seen, vec![(4, 3)]);
        }
    }

    #[test]
    fn work_on_several_workers_comes_back_in_item_order() {
        let squares = on_workers(3, 50, |i| {
            // Later items finish first on some workers; the order must not show it.
            std::thread::yield_now();
            i * i
        });
        assert_eq!(squares, (0..50).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(on_workers(4, 0, |i| i), Vec::<usize>::new());
    }
}
