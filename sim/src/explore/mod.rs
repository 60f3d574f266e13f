//! # Exploration as a library
//!
//! What `kube-sim explore` does, callable from a `cargo test` or any program: run many runs of
//! scenarios on worker threads (each run on a fresh thread), deduplicate the failures by what
//! they are, measure injection-point coverage, then shrink each distinct failure into a
//! regression file.
//!
//! A [`Strategy`] says which runs to make, one file each, as shuttle's schedulers are:
//! - [`random::RandomSwarm`]: seed after seed, each with its scenario's swarm-drawn fault plan;
//! - [`guided::Guided`]: every plan over the injection points of a fault-free reference run;
//! - [`coverage_swarm::CoverageSwarm`]: swarm plans steered by the coverage of the runs before
//!   (toward injection points and fault kinds that have fired least), in rounds;
//! - [`replay::Replay`]: exactly the given runs (and [`replay`] replays regression files).
//!
//! [`explore`] runs a strategy's runs on workers and gives back what they found; [`shrink`]
//! turns each distinct failure into a [`crate::regression::RegressionFile`].
//!
//! ```no_run
//! use sim::explore::{self, Options, random::RandomSwarm, shard::Shard};
//! # fn scenarios() -> sim::scenario::Registry { unimplemented!() }
//! let registry = scenarios();
//! let chosen: Vec<_> = registry.iter().collect();
//! let swarm = RandomSwarm::new(chosen.len(), 0, Some(500), Shard::ALL);
//! let explored = explore::explore(&chosen, &swarm, &[], &Options::default(), &explore::Quiet);
//! for (failure, count) in &explored.groups {
//!     println!("{} seed {}: {} ({count} alike)", chosen[failure.scenario].name(), failure.seed, failure.verdict);
//! }
//! ```

pub mod coverage;
pub mod coverage_swarm;
pub mod findings;
pub mod guided;
pub mod random;
pub mod replay;
pub mod shard;
pub mod shrink;
pub mod unfired;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use std::collections::BTreeMap;

use crate::faults::{FaultKind, FaultPlan};
use crate::guided::GuidedError;
use crate::regression::RegressionError;
use crate::scenario::Scenario;

pub use coverage::{PointCoverage, Reference, references};
pub use findings::{Failure, Findings, message_shape};

use coverage::LiveCoverage;

/// Why an exploration, a replay or a shrink could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// A regression file is missing, corrupt, of an unknown format, or names an unknown scenario.
    #[error(transparent)]
    Regression(#[from] RegressionError),
    /// Guided exploration could not plan (a scenario's fault-free reference failed).
    #[error(transparent)]
    Guided(#[from] GuidedError),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

/// One run a strategy asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The scenario's index in the exploration's scenarios.
    pub scenario: usize,
    /// The seed.
    pub seed: u64,
    /// Which of the scenario's planned runs this is (0 where seeds tell runs apart).
    pub ordinal: u64,
    /// The fault plan to run with, or `None` for the scenario's own fault source (its swarm).
    pub plan: Option<FaultPlan>,
}

/// Which runs an exploration makes. `run(i)` must be a pure function of `i` and of what the
/// strategy [`observe`](Strategy::observe)d of the rounds before `i`'s (workers take a round's
/// items in any order), and `None` from some `i` on ends the exploration.
#[allow(clippy::len_without_is_empty)] // `len() == Some(0)` says it: an `is_empty` would repeat it
pub trait Strategy: Sync {
    /// How regression files record that a failure was found this way (`swarm`, `guided`, ...).
    fn name(&self) -> &'static str;
    /// Work item `index` of this exploration (this shard's), or `None` past the end.
    fn run(&self, index: u64) -> Option<Run>;
    /// How many work items there are, when known (progress bars show it).
    fn len(&self) -> Option<u64>;
    /// Runs that count for `scenario` before the exploration starts (guided's reference).
    fn counted_before(&self, _scenario: usize) -> u64 {
        0
    }
    /// For a strategy that learns from its runs: work items come in rounds of this many, and no
    /// item of round `r + 1` is asked for before every item of round `r` finished and was
    /// [`observe`](Strategy::observe)d. `None` (the default): one round, nothing observed.
    fn round_len(&self) -> Option<u64> {
        None
    }
    /// What work item `index` of a round did, told between rounds in work-item order (never
    /// concurrently with [`Strategy::run`]), so that what the strategy learns does not depend on
    /// which worker finished first.
    fn observe(&self, _index: u64, _outcome: &Outcome) {}
}

/// What one run did, as a strategy of rounds is told ([`Strategy::observe`]).
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run asked for.
    pub run: Run,
    /// The plan it ran with (drawn or given).
    pub plan: FaultPlan,
    /// Its planned faults that never fired.
    pub unfired: Vec<crate::faults::PlannedFault>,
    /// The injection points of its scenario's reference that its fired faults exercised
    /// (indices, ascending; empty without a reference).
    pub exercised: Vec<usize>,
    /// Whether it failed.
    pub failed: bool,
}

/// How an exploration runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads.
    pub jobs: usize,
    /// Stop taking new runs at this wall-clock instant (runs already going finish).
    pub deadline: Option<Instant>,
    /// Stop taking new runs once one failed (runs already going finish). Workers take items in
    /// index order, so every item below the first failing one has run: the lowest failing item is
    /// the same for any number of workers (what a seeds-to-first-failure benchmark counts).
    pub stop_at_first_failure: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { jobs: crate::runner::default_jobs(), deadline: None, stop_at_first_failure: false }
    }
}

/// Progress as the runs finish, for a progress bar or a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub runs: u64,
    /// Of those, failing.
    pub failing: u64,
    /// Injection points exercised so far, over every scenario.
    pub points_exercised: u64,
    /// Injection points in all.
    pub points: u64,
    /// Whether this run failed or exercised a new point (what a display may want to redraw on).
    pub news: bool,
}

/// Told of every finished run (from the worker threads).
pub trait Observer: Sync {
    /// A run finished.
    fn ran(&self, progress: Progress);
}

/// An [`Observer`] that shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn ran(&self, _progress: Progress) {}
}

/// What an exploration found.
#[derive(Debug)]
pub struct Explored {
    /// Runs per scenario (with [`Strategy::counted_before`]).
    pub seeds_run: Vec<u64>,
    /// Failing runs per scenario.
    pub failing: Vec<u64>,
    /// One failure per deduplication key, with how many runs shared it, in (scenario, seed, run)
    /// order.
    pub groups: Vec<(Failure, u64)>,
    /// Per scenario, the injection points of its reference that some run exercised (empty
    /// coverage for a scenario without a reference).
    pub coverage: Vec<PointCoverage>,
    /// Per work item of a strategy of known length: whether it ran (a deadline may stop early).
    pub ran: Vec<bool>,
    /// Per scenario, per fault kind: planned faults that never fired, over every run (a fault
    /// whose precondition the scenario never meets shows up here).
    pub unfired: Vec<BTreeMap<FaultKind, u64>>,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

/// Run `strategy`'s runs of `scenarios` on `options.jobs` workers, each run on a fresh thread.
/// `references[i]`, when given, is scenario `i`'s fault-free reference, against which coverage is
/// measured. Failures are kept per deduplication key by the lowest (scenario, seed, run), never
/// by arrival, so a bounded exploration's findings do not depend on the workers.
pub fn explore(
    scenarios: &[&Scenario],
    strategy: &dyn Strategy,
    references: &[Option<Reference>],
    options: &Options,
    observer: &dyn Observer,
) -> Explored {
    let started = Instant::now();
    let references: Vec<Option<&Reference>> =
        (0..scenarios.len()).map(|i| references.get(i).and_then(Option::as_ref)).collect();
    let coverage = LiveCoverage::new_from(&references);
    let seeds_run: Vec<AtomicU64> =
        (0..scenarios.len()).map(|i| AtomicU64::new(strategy.counted_before(i))).collect();
    let failing: Vec<AtomicU64> = scenarios.iter().map(|_| AtomicU64::new(0)).collect();
    let (runs, failing_total) = (AtomicU64::new(0), AtomicU64::new(0));
    let findings = Mutex::new(Findings::default());
    let unfired: Mutex<Vec<BTreeMap<FaultKind, u64>>> = Mutex::new(vec![BTreeMap::new(); scenarios.len()]);
    let ran: Mutex<Vec<bool>> = Mutex::new(vec![false; strategy.len().map_or(0, |n| n as usize)]);
    let stop = AtomicBool::new(false);
    let round_len = strategy.round_len().filter(|n| *n > 0);
    let observed: Mutex<BTreeMap<u64, Outcome>> = Mutex::new(BTreeMap::new());
    let mut round_start = 0u64;
    loop {
        let round_end = round_len.map_or(u64::MAX, |n| round_start.saturating_add(n));
        let next = AtomicU64::new(round_start);
        crate::runner::each_on_workers(options.jobs, "explore-worker", |_| {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= round_end {
                return false;
            }
            let within_time = options.deadline.is_none_or(|d| Instant::now() < d);
            let (true, Some(run)) = (within_time, strategy.run(index)) else {
                stop.store(true, Ordering::Relaxed);
                return false;
            };
            let scenario = scenarios[run.scenario];
            let report = match &run.plan {
                Some(plan) => replay::run_plan(scenario, run.seed, plan, false),
                None => replay::run_seed(scenario, run.seed),
            };
            seeds_run[run.scenario].fetch_add(1, Ordering::Relaxed);
            if !report.unfired.is_empty() {
                let mut unfired = unfired.lock().unwrap_or_else(|p| p.into_inner());
                for planned in &report.unfired {
                    *unfired[run.scenario].entry(planned.fault.kind()).or_default() += 1;
                }
            }
            let exercised = references[run.scenario].map(|r| r.map.exercised_by(&report)).unwrap_or_default();
            let new_points = coverage.mark(run.scenario, &exercised);
            let failed = !report.verdict.is_pass();
            if round_len.is_some() {
                let outcome = Outcome {
                    run: run.clone(),
                    plan: report.plan.clone(),
                    unfired: report.unfired.clone(),
                    exercised,
                    failed,
                };
                observed.lock().unwrap_or_else(|p| p.into_inner()).insert(index, outcome);
            }
            if failed {
                failing[run.scenario].fetch_add(1, Ordering::Relaxed);
                failing_total.fetch_add(1, Ordering::Relaxed);
                let failure = Failure {
                    scenario: run.scenario,
                    seed: run.seed,
                    run: run.ordinal,
                    verdict: report.verdict,
                    plan: report.plan,
                };
                findings.lock().unwrap_or_else(|p| p.into_inner()).add(failure);
                if options.stop_at_first_failure {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            if let Some(flag) = ran.lock().unwrap_or_else(|p| p.into_inner()).get_mut(index as usize) {
                *flag = true;
            }
            let (points_exercised, points) = coverage.counts();
            observer.ran(Progress {
                runs: runs.fetch_add(1, Ordering::Relaxed) + 1,
                failing: failing_total.load(Ordering::Relaxed),
                points_exercised,
                points,
                news: failed || new_points,
            });
            true
        });
        if round_len.is_none() || stop.load(Ordering::Relaxed) {
            break;
        }
        // Between rounds, in work-item order: what the strategy learns is the same for any
        // number of workers.
        let outcomes = std::mem::take(&mut *observed.lock().unwrap_or_else(|p| p.into_inner()));
        for (index, outcome) in &outcomes {
            strategy.observe(*index, outcome);
        }
        round_start = round_end;
    }
    Explored {
        seeds_run: seeds_run.into_iter().map(AtomicU64::into_inner).collect(),
        failing: failing.into_iter().map(AtomicU64::into_inner).collect(),
        groups: findings.into_inner().unwrap_or_else(|p| p.into_inner()).into_groups(),
        coverage: coverage.into_summaries(),
        ran: ran.into_inner().unwrap_or_else(|p| p.into_inner()),
        unfired: unfired.into_inner().unwrap_or_else(|p| p.into_inner()),
        wall_seconds: started.elapsed().as_secs_f64(),
    }
}

/// Write `text` to `path` through a temporary file in the same directory and a rename, so that a
/// reader never sees half a file.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), ExploreError> {
    use std::io::Write;
    let io = |source| ExploreError::Io { path: path.into(), source };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(io)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(io)?;
    tmp.write_all(text.as_bytes()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
