//! The explorer: the reference run, then every single-fault plan over its injection points in a
//! fixed order, then random multi-fault plans over causally related points.
//!
//! Every run uses the reference's seed. A run with a plan then follows the reference up to its
//! first fault (the same latencies, deliveries and task order, as far as the fault engine leaves
//! them alone), so that a point's trigger lands where the reference saw its site. A different
//! seed per plan would move the sites away from the triggers and turn guided exploration back
//! into random exploration. Multi-fault plans are drawn from the seed's own decision stream
//! ([`MULTI_STREAM`]), so an exploration is a pure function of builder, seed and config.
//!
//! Coverage counts the points whose fault fired in some run (the report's `unfired` list says
//! which did not).

use std::collections::BTreeSet;
use std::fmt;

use crate::builder::SimBuilder;
use crate::decision::DecisionSource;
use crate::faults::FaultPlan;
use crate::guided::points::{InjectionPoint, PointConfig, PointSet, injection_points_of};
use crate::runner::on_fresh_thread;
use crate::scenario::Scenario;
use crate::verdict::{RunReport, Verdict};

/// The decision stream multi-fault plans are drawn from.
pub const MULTI_STREAM: &str = "guided.multi";
/// Draws per wanted multi-fault plan before giving up (duplicates and unrelated draws are
/// rejected, so a small point set can run out of new plans).
const MULTI_DRAWS_PER_PLAN_MAX: usize = 20;

/// How an exploration runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuidedConfig {
    /// The seed of the reference and of every plan's run.
    pub seed: u64,
    /// At most this many runs in all, the reference included.
    pub runs_max: usize,
    /// At most this many multi-fault plans after the single-fault ones.
    pub multi_plans_max: usize,
    /// A multi-fault plan has between 2 and this many faults.
    pub multi_faults_max: usize,
    /// Stop at the first run that does not pass (otherwise run every plan, for coverage).
    pub stop_at_first_failure: bool,
    /// The faults the points plan.
    pub points: PointConfig,
}

impl Default for GuidedConfig {
    fn default() -> Self {
        GuidedConfig {
            seed: 0,
            runs_max: 2_000,
            multi_plans_max: 200,
            multi_faults_max: 3,
            stop_at_first_failure: true,
            points: PointConfig::default(),
        }
    }
}

/// Which part of an exploration a run belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The fault-free reference.
    Reference,
    /// A single-fault plan.
    Single,
    /// A random multi-fault plan.
    Multi,
}

/// A run that did not pass.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Which run it was, counting from 1 (the reference is run 1).
    pub run: usize,
    /// Which phase.
    pub phase: Phase,
    /// The plan it ran.
    pub plan: FaultPlan,
    /// Its report (trace digest only; replay with `keep_trace(true)` for the entries).
    pub report: RunReport,
}

/// How many injection points some run exercised (their fault fired).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Points whose fault fired.
    pub exercised: usize,
    /// All points.
    pub total: usize,
    /// The points whose fault never fired (in point order), for a person to read.
    pub unexercised: Vec<InjectionPoint>,
}

impl Coverage {
    /// Whether every point was exercised.
    pub fn is_complete(&self) -> bool {
        self.exercised == self.total
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} injection points exercised", self.exercised, self.total)?;
        for point in &self.unexercised {
            write!(f, "\n  never fired: {point}")?;
        }
        Ok(())
    }
}

/// The outcome of an exploration.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// The reference run (its trace entries kept).
    pub reference: RunReport,
    /// Its injection points, and what pruning removed.
    pub points: PointSet,
    /// Runs made, the reference included.
    pub runs: usize,
    /// Single-fault plans run.
    pub single_plans: usize,
    /// Multi-fault plans run.
    pub multi_plans: usize,
    /// The first run that did not pass (with [`Explorer::explore_until`]: the first finding).
    pub failure: Option<Finding>,
    /// Runs that did not pass (more than one only without `stop_at_first_failure`).
    pub failures: usize,
    /// Which points were exercised.
    pub coverage: Coverage,
    /// The bound that ended the exploration early (`runs_max`), if one did.
    pub stopped_by: Option<&'static str>,
}

impl fmt::Display for Exploration {
    /// One line: points and pruning, runs, the finding, coverage.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.points;
        write!(
            f,
            "guided exploration of \"{}\" seed {}: {} injection points ({} timed outages; {} controller \
             writes, {} changed nothing, {} duplicate points merged, {} faults that could not act left \
             out); {} runs ({} single-fault, {} multi-fault plans)",
            self.reference.scenario,
            self.reference.seed,
            p.points.len(),
            p.outages,
            p.writes,
            p.no_op_writes,
            p.duplicates,
            p.cannot_act,
            self.runs,
            self.single_plans,
            self.multi_plans,
        )?;
        match &self.failure {
            Some(finding) => write!(f, "; run {} failed: {}", finding.run, finding.report.verdict)?,
            None => write!(f, "; no failure")?,
        }
        if let Some(bound) = self.stopped_by {
            write!(f, "; stopped by {bound}")?;
        }
        write!(f, "; {} of {} injection points exercised", self.coverage.exercised, self.coverage.total)
    }
}

/// Why an exploration could not start.
#[derive(Debug, thiserror::Error)]
pub enum GuidedError {
    /// The fault-free reference run failed: there is no correct behaviour to perturb (fix the
    /// scenario or the controller first).
    #[error("the fault-free reference run of scenario \"{scenario}\" seed {seed} did not pass: {verdict}")]
    ReferenceFailed {
        /// The scenario.
        scenario: String,
        /// The seed.
        seed: u64,
        /// How the reference ended (boxed: a verdict is large, and errors travel by value).
        verdict: Box<Verdict>,
    },
}

/// Guided exploration of one world.
#[derive(Clone)]
pub struct Explorer {
    builder: SimBuilder,
    config: GuidedConfig,
}

impl fmt::Debug for Explorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Explorer").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Explorer {
    /// An explorer of `builder`'s world (any fault plan or swarm it sets is replaced).
    pub fn new(builder: &SimBuilder, config: GuidedConfig) -> Self {
        Explorer { builder: builder.clone(), config }
    }

    /// An explorer of a named scenario.
    pub fn for_scenario(scenario: &Scenario, config: GuidedConfig) -> Self {
        Explorer::new(scenario.builder(), config)
    }

    /// Run the fault-free reference (trace entries kept).
    pub fn reference(&self) -> RunReport {
        let builder = self.builder.clone().faults(FaultPlan::none()).keep_trace(true);
        run_isolated(&builder, self.config.seed)
    }

    /// Run one plan with the explorer's seed.
    pub fn run_plan(&self, plan: FaultPlan) -> RunReport {
        let builder = self.builder.clone().faults(plan).keep_trace(false);
        run_isolated(&builder, self.config.seed)
    }

    /// The multi-fault plans, as indices into `points` (in point order), drawn from the seed:
    /// 2 to `multi_faults_max` points, pairwise related and at different sites, never the same
    /// set twice.
    pub fn multi_plans(&self, points: &[InjectionPoint]) -> Vec<Vec<usize>> {
        let wanted = self.config.multi_plans_max;
        let faults_max = self.config.multi_faults_max;
        if points.len() < 2 || faults_max < 2 || wanted == 0 {
            return Vec::new();
        }
        let mut source = DecisionSource::new(self.config.seed);
        let stream = source.stream(MULTI_STREAM);
        let mut seen: BTreeSet<Vec<usize>> = BTreeSet::new();
        let mut plans = Vec::new();
        for _ in 0..wanted.saturating_mul(MULTI_DRAWS_PER_PLAN_MAX) {
            if plans.len() == wanted {
                break;
            }
            let size = 2 + stream.below((faults_max - 1) as u64) as usize;
            let mut chosen = vec![stream.below(points.len() as u64) as usize];
            while chosen.len() < size {
                let fits: Vec<usize> = (0..points.len())
                    .filter(|i| {
                        chosen.iter().all(|c| {
                            *c != *i && points[*c].site != points[*i].site && points[*c].related(&points[*i])
                        })
                    })
                    .collect();
                if fits.is_empty() {
                    break;
                }
                chosen.push(fits[stream.below(fits.len() as u64) as usize]);
            }
            chosen.sort_unstable();
            if chosen.len() >= 2 && seen.insert(chosen.clone()) {
                plans.push(chosen);
            }
        }
        plans
    }

    /// Every plan of an exploration over `points`, in the order it runs them: each single-fault
    /// plan in point order, then the multi-fault plans. Run `k` of the exploration (counting the
    /// reference as run 0) is entry `k - 1`.
    pub fn planned_runs(&self, points: &[InjectionPoint]) -> Vec<PlannedRun> {
        let singles = (0..points.len()).map(|i| (Phase::Single, vec![i]));
        let multis = self.multi_plans(points).into_iter().map(|plan| (Phase::Multi, plan));
        singles
            .chain(multis)
            .map(|(phase, indices)| {
                let faults = indices.iter().map(|i| points[*i].fault.clone()).collect();
                PlannedRun { phase, points: indices, plan: FaultPlan { faults } }
            })
            .collect()
    }

    /// Explore: the reference, every single-fault plan in point order, then the multi-fault
    /// plans, until the first failure (if so configured) or `runs_max`.
    pub fn explore(&self) -> Result<Exploration, GuidedError> {
        self.explore_until(|report| !report.verdict.is_pass())
    }

    /// [`Explorer::explore`], with `found` deciding which run is the finding (a test looking for
    /// one bug passes over failures of other kinds).
    pub fn explore_until(&self, found: impl Fn(&RunReport) -> bool) -> Result<Exploration, GuidedError> {
        let reference = self.reference();
        if !reference.verdict.is_pass() {
            return Err(GuidedError::ReferenceFailed {
                scenario: reference.scenario.clone(),
                seed: reference.seed,
                verdict: Box::new(reference.verdict.clone()),
            });
        }
        let points = injection_points_of(&reference, &self.config.points);
        let mut state = State {
            fired: vec![false; points.points.len()],
            runs: 1,
            failure: None,
            failures: 0,
            stopped_by: None,
            single_plans: 0,
            multi_plans: 0,
        };
        for planned in self.planned_runs(&points.points) {
            if state.runs >= self.config.runs_max {
                state.stopped_by = Some("runs_max");
                break;
            }
            let report = self.run_plan(planned.plan.clone());
            let is_finding = found(&report);
            state.record(planned, &points.points, report, is_finding);
            if state.failure.is_some() && self.config.stop_at_first_failure {
                break;
            }
        }
        let unexercised: Vec<InjectionPoint> =
            points.points.iter().zip(&state.fired).filter(|(_, f)| !**f).map(|(p, _)| p.clone()).collect();
        let coverage = Coverage {
            exercised: points.points.len() - unexercised.len(),
            total: points.points.len(),
            unexercised,
        };
        Ok(Exploration {
            reference,
            points,
            runs: state.runs,
            single_plans: state.single_plans,
            multi_plans: state.multi_plans,
            failure: state.failure,
            failures: state.failures,
            coverage,
            stopped_by: state.stopped_by,
        })
    }
}

/// One plan of an exploration, as [`Explorer::planned_runs`] lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRun {
    /// Single- or multi-fault.
    pub phase: Phase,
    /// The points it plans, as indices into the point list (ascending).
    pub points: Vec<usize>,
    /// Their faults, in that order.
    pub plan: FaultPlan,
}

/// What an exploration has seen so far.
struct State {
    fired: Vec<bool>,
    runs: usize,
    failure: Option<Finding>,
    failures: usize,
    stopped_by: Option<&'static str>,
    single_plans: usize,
    multi_plans: usize,
}

impl State {
    fn record(
        &mut self,
        planned: PlannedRun,
        points: &[InjectionPoint],
        report: RunReport,
        is_finding: bool,
    ) {
        self.runs += 1;
        match planned.phase {
            Phase::Single => self.single_plans += 1,
            Phase::Multi => self.multi_plans += 1,
            Phase::Reference => {}
        }
        for i in &planned.points {
            if !report.unfired.contains(&points[*i].fault) {
                self.fired[*i] = true;
            }
        }
        if !report.verdict.is_pass() {
            self.failures += 1;
        }
        if is_finding && self.failure.is_none() {
            let (phase, plan) = (planned.phase, planned.plan);
            self.failure = Some(Finding { run: self.runs, phase, plan, report });
        }
    }
}

/// Run one seed on a fresh thread, as sweeps do: madsim's thread-local state and std's
/// per-thread hash seeds start fresh, so the run is the same whatever ran before it. A panic
/// that escapes the engine is re-raised here.
pub fn run_isolated(builder: &SimBuilder, seed: u64) -> RunReport {
    on_fresh_thread(&format!("sim-guided-{seed}"), || builder.run(seed))
        .unwrap_or_else(|message| std::panic::resume_unwind(Box::new(message)))
}
