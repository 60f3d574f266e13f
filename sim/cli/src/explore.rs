//! `kube-sim explore`: run many seeds of scenarios on every core, each seed on a fresh thread and
//! with the fault plan its scenario draws for it (swarm selection), deduplicate the failures by
//! scenario, verdict kind, property and message shape, shrink each distinct one, write it as a
//! regression file, and print a summary with the command that replays each.
//!
//! The seed space is `--first-seed` upwards; `--seeds N` takes its first N seeds (of which this
//! `--shard I/N` runs its share), `--duration` runs this shard's seeds until the time is up.
//!
//! `--guided` runs each scenario's fault-free reference at `--first-seed`, then every plan over
//! its injection points ([`sim::guided`]): run `k` of a scenario (the reference is run 0) is
//! this shard's when `k mod N = I`, and `--seeds` bounds the runs per scenario. The plans of every
//! scenario are spread over the `--jobs` workers. Every plan runs (there is no stopping at the
//! first failure), so the runs, their verdicts, the files and the report are the same whatever
//! the number of workers and however they interleave: failures are kept per deduplication key
//! by the lowest (scenario, seed, run), never by arrival.
//!
//! `--search coverage` is swarm exploration that favours the rare
//! ([`sim::explore::coverage_swarm`]): each seed's plan is the swarm's plus a fault aimed at the
//! least-exercised injection point or the least-fired fault kind of the seeds before it in its
//! lane (seed `s` is in lane `s mod 8`), learned in rounds, so that the plans are the same for
//! any `--jobs` and `--shard` (at most 8 shards; seed `s` belongs to shard `(s mod 8) mod N`).
//!
//! Every mode measures injection-point coverage against each scenario's fault-free reference at
//! `--first-seed` ([`PointMap`]): the progress bar shows it as it grows, the summary table and the
//! report give it per scenario.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::{ExploreReport, FailureSummary, REPORT_FORMAT, REPORT_KIND, ScenarioSummary};
use crate::{CliError, EXIT_FAILURE, EXIT_PASS, message_shape, replay_command};
use sim::explore::coverage_swarm::CoverageSwarm;
use sim::explore::guided::Guided;
use sim::explore::random::RandomSwarm;
use sim::explore::shard::Shard;
use sim::explore::shrink::{Shrunk, shrink_groups};
use sim::explore::{self, Explored, Observer, Options, PointCoverage, Progress, Reference, Strategy};
use sim::guided::{GuidedConfig, PointSet};
use sim::scenario::{Registry, Scenario};

/// Seeds per scenario when neither `--seeds` nor `--duration` is given.
const SEEDS_DEFAULT: u64 = 100;

/// Arguments of `kube-sim explore`.
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// A scenario to explore (repeatable); all of them by default.
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Explore the first N seeds of the seed space (this shard's share of them) [default: 100].
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
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
    /// Which search: `coverage` (the default), swarm steered toward the injection points and
    /// fault kinds that fired least in the seeds before (at most 8 shards); `swarm`, random swarm
    /// faults per seed; `guided`, the injection points of each scenario's fault-free run, one
    /// fault at a time, then several (`--seeds` bounds the runs per scenario, the reference
    /// included; run k of a scenario belongs to shard k mod N).
    #[arg(long, value_enum, value_name = "SEARCH", conflicts_with_all = ["guided", "random"])]
    pub search: Option<Search>,
    /// Guided exploration: the same as `--search guided`.
    #[arg(long, conflicts_with = "random")]
    pub guided: bool,
    /// Random swarm exploration: the same as `--search swarm` (for more than 8 shards).
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

/// The searches `kube-sim explore` can make (`--search`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Search {
    /// Random swarm: each seed with the fault plan its scenario draws for it.
    Swarm,
    /// Coverage-feedback swarm: each seed's swarm plan plus a fault toward what fired least.
    Coverage,
    /// Guided enumeration over the injection points of a fault-free reference run.
    Guided,
}

/// The search when neither `--search`, `--guided` nor `--random` asks for one: coverage-feedback
/// swarm, which found the zoo's planted bugs in fewer seeds than plain swarm (117 against 143
/// seeds over nine bugs, mean of 20 first seeds: `cargo bench -p controllers --bench search`).
pub const SEARCH_DEFAULT: Search = Search::Coverage;

impl ExploreArgs {
    /// The search these arguments ask for.
    pub fn search(&self) -> Search {
        match (self.search, self.guided) {
            (Some(search), _) => search,
            (None, true) => Search::Guided,
            (None, false) if self.random => Search::Swarm,
            (None, false) => SEARCH_DEFAULT,
        }
    }
}

/// Parses `500ms`, `90s`, `10m`, `2h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || format!("{text:?} is not a duration: expected a number with ms, s, m or h, e.g. 10m");
    let n: u64 = number.parse().map_err(|_| bad())?;
    let seconds = |factor: u64| n.checked_mul(factor).map(Duration::from_secs).ok_or_else(bad);
    let duration = match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => seconds(1),
        "m" => seconds(60),
        "h" => seconds(3600),
        _ => Err(bad()),
    }?;
    // The deadline is now + duration: one the clock cannot represent is refused here, not a
    // panic when exploration starts.
    if duration > DURATION_MAX {
        return Err(format!(
            "{text:?} is too long: --duration is at most {}h",
            DURATION_MAX.as_secs() / 3600
        ));
    }
    Ok(duration)
}

/// The longest `--duration`: ten years, far below what `Instant` can add on any platform.
pub const DURATION_MAX: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// `kube-sim explore`.
pub fn explore(args: &ExploreArgs, registry: &Registry) -> Result<u8, CliError> {
    let scenarios = select(registry, &args.scenarios)?;
    let (explored, by) = match args.search() {
        Search::Guided => run_guided(args, &scenarios)?,
        search => run_seeds(args, &scenarios, search)?,
    };
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
            unfired_faults: explored.unfired[index]
                .iter()
                .map(|(kind, count)| (kind_name(*kind), *count))
                .collect(),
        });
    }
    // Shrinking is the costly part of a failure: the distinct ones shrink in parallel, each on
    // its own, and come back in their order.
    let shrunk =
        shrink_groups(&scenarios, &explored.groups, &explored.seeds_run, by, args.shrink_replays, jobs(args));
    for (Shrunk { file, report: shrunk }, (failure, occurrences)) in shrunk.into_iter().zip(&explored.groups)
    {
        let violation = file.violation.clone();
        let mut summary = FailureSummary {
            scenario: scenarios[failure.scenario].name().to_owned(),
            seed: failure.seed,
            kind: violation.kind.clone(),
            property: violation.property.clone(),
            shape: message_shape(&violation.message),
            message: violation.message,
            occurrences: *occurrences,
            faults_before: shrunk.plan.faults_before,
            faults_after: shrunk.plan.faults_after,
            shrink_replays: shrunk.replays(),
            file: String::new(),
            replay: String::new(),
        };
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

/// A fault kind as the plan's JSON spells it (`staleReplica`).
fn kind_name(kind: sim::faults::FaultKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// Worker threads: `--jobs`, or one per core.
fn jobs(args: &ExploreArgs) -> usize {
    args.jobs.map_or_else(sim::runner::default_jobs, |j| usize::try_from(j).unwrap_or(usize::MAX))
}

/// The exploration options `--jobs` and `--duration` make, the deadline counted from `started`.
fn options(args: &ExploreArgs, started: Instant) -> Options {
    // `parse_duration` bounds the duration, so the deadline is representable; saturate anyway.
    Options {
        jobs: jobs(args),
        deadline: args.duration.and_then(|d| started.checked_add(d)),
        stop_at_first_failure: false,
    }
}

/// The guided configuration `--first-seed` and `--seeds` make.
fn guided_config(args: &ExploreArgs) -> GuidedConfig {
    let mut config = GuidedConfig { seed: args.first_seed, ..GuidedConfig::default() };
    if let Some(runs) = args.seeds {
        config.runs_max = usize::try_from(runs).unwrap_or(usize::MAX);
    }
    config
}

/// How often progress is printed as plain lines when stderr is not a terminal (a piped nightly
/// log), where indicatif draws nothing.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The progress bar as an exploration's observer; when stderr is not a terminal, a plain line
/// after the first run and then every [`PLAIN_PROGRESS_EVERY`].
struct Bar {
    bar: ProgressBar,
    plain: Option<PlainProgress>,
}

/// What plain progress lines need.
struct PlainProgress {
    unit: &'static str,
    total: Option<u64>,
    last: std::sync::Mutex<Option<Instant>>,
}

impl Bar {
    fn new(total: Option<u64>, unit: &'static str, message: String) -> Self {
        use std::io::IsTerminal;
        let plain = (!std::io::stderr().is_terminal()).then(|| PlainProgress {
            unit,
            total,
            last: std::sync::Mutex::new(None),
        });
        Bar { bar: progress_bar(total, unit, message), plain }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for Bar {
    fn ran(&self, progress: Progress) {
        let message = || coverage_message(progress.failing, progress.points_exercised, progress.points);
        if progress.news {
            self.bar.set_message(message());
        }
        self.bar.inc(1);
        let Some(plain) = &self.plain else { return };
        let mut last = plain.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < PLAIN_PROGRESS_EVERY) {
            return;
        }
        *last = Some(now);
        let of = plain.total.map(|total| format!("/{total}")).unwrap_or_default();
        eprintln!("kube-sim explore: {}{of} {}, {}", progress.runs, plain.unit, message());
    }
}

/// The progress bar's message.
fn coverage_message(failing: u64, exercised: u64, total: u64) -> String {
    format!("{failing} failing, coverage {exercised}/{total} points")
}

/// Random swarm exploration ([`RandomSwarm`]) or coverage-feedback swarm ([`CoverageSwarm`]),
/// with coverage measured where it can be: a scenario whose reference fails has no points.
fn run_seeds(
    args: &ExploreArgs,
    scenarios: &[&Scenario],
    search: Search,
) -> Result<(Explored, &'static str), CliError> {
    let started = Instant::now();
    let references: Vec<Option<Reference>> =
        explore::references(scenarios, args.first_seed, &guided_config(args), jobs(args))
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
    let per_scenario = if args.duration.is_some() { None } else { Some(args.seeds.unwrap_or(SEEDS_DEFAULT)) };
    let strategy: Box<dyn Strategy> = match search {
        Search::Coverage => Box::new(
            CoverageSwarm::new(scenarios, &references, args.first_seed, per_scenario, args.shard)
                .map_err(|e| CliError::Usage(format!("--search coverage: {e} (use --search swarm)")))?,
        ),
        _ => Box::new(RandomSwarm::new(scenarios.len(), args.first_seed, per_scenario, args.shard)),
    };
    let total: u64 = references.iter().flatten().map(|r| r.map.len() as u64).sum();
    let bar = Bar::new(strategy.len(), "seeds", coverage_message(0, 0, total));
    let mut explored =
        explore::explore(scenarios, strategy.as_ref(), &references, &options(args, started), &bar);
    bar.finish();
    explored.wall_seconds = started.elapsed().as_secs_f64();
    Ok((explored, strategy.name()))
}

/// Guided exploration ([`Guided`]): every scenario's reference at `--first-seed`, then this
/// shard's share of each scenario's planned runs (at most `--seeds` runs per scenario, the
/// reference being run 0), all scenarios' runs spread over the workers; prints a line per
/// scenario with its coverage.
fn run_guided(args: &ExploreArgs, scenarios: &[&Scenario]) -> Result<(Explored, &'static str), CliError> {
    let started = Instant::now();
    let config = guided_config(args);
    let references = explore::references(scenarios, args.first_seed, &config, jobs(args));
    let guided = Guided::plan(scenarios, &references, &config, args.shard)?;
    let references: Vec<Option<Reference>> = references.into_iter().map(Result::ok).collect();
    let total: u64 = references.iter().flatten().map(|r| r.map.len() as u64).sum();
    let bar = Bar::new(guided.len(), "runs", coverage_message(0, 0, total));
    let mut explored = explore::explore(scenarios, &guided, &references, &options(args, started), &bar);
    bar.finish();
    explored.wall_seconds = started.elapsed().as_secs_f64();
    for (index, scenario) in scenarios.iter().enumerate() {
        let summary = guided.summary(index, &explored.ran);
        let reference = references[index].as_ref().expect("a guided scenario's reference passed");
        let line = GuidedLine {
            seed: args.first_seed,
            points: &reference.points,
            runs: explored.seeds_run[index],
            single: summary.single,
            multi: summary.multi,
            failing: explored.failing[index],
            stopped_by: summary.stopped_by,
            coverage: &explored.coverage[index],
        };
        eprintln!("kube-sim explore: {}: {line}", scenario.name());
    }
    Ok((explored, guided.name()))
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
            "guided exploration seed {}: {} injection points ({} timed outages; {} controller writes, {} \
             changed nothing, {} duplicate points merged, {} faults that could not act left out); {} runs \
             ({} single-fault, {} multi-fault plans); {} failing",
            self.seed,
            p.points.len(),
            p.outages,
            p.writes,
            p.no_op_writes,
            p.duplicates,
            p.cannot_act,
            self.runs,
            self.single,
            self.multi,
            self.failing,
        )?;
        if let Some(bound) = self.stopped_by {
            write!(f, "; stopped by {bound}")?;
        }
        write!(f, "; {} of {} injection points exercised", self.coverage.exercised, self.coverage.total)?;
        let is_outage = |i: &u64| {
            usize::try_from(*i).ok().and_then(|i| p.points.get(i)).is_some_and(|point| {
                matches!(point.site, sim::guided::Site::Outage { .. } | sim::guided::Site::NodeOutage { .. })
            })
        };
        let outages_exercised = self.coverage.points.iter().filter(|i| is_outage(i)).count();
        write!(f, " ({outages_exercised} of {} timed outages)", p.outages)
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
    for s in report.scenarios.iter().filter(|s| !s.unfired_faults.is_empty()) {
        let counts: Vec<String> = s.unfired_faults.iter().map(|(kind, n)| format!("{kind} {n}")).collect();
        println!("{}: planned faults that never fired: {}", s.name, counts.join(", "));
    }
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
