//! Shrinking: keep the seed, reduce the fault plan, then a generated workload, while the same
//! property keeps failing.
//!
//! [`shrink_plan`] only sees a plan and an oracle (`still_fails(plan)`, which replays the seed
//! with that plan), so it is independent of how faults are applied. Passes, repeated to a
//! fixpoint:
//!
//! 1. drop faults: halves first, then one at a time (a cheap ddmin);
//! 2. move triggers earlier: the k-th write becomes an earlier write, a time becomes an earlier
//!    time, a random rate becomes less frequent;
//! 3. shorten delays and pauses.
//!
//! The trigger's numbers are this file's; which numbers of a fault may be lowered (and to what)
//! is the fault kind's, in its file ([`FaultKindOps::knobs`](crate::faults::kind::FaultKindOps)).
//!
//! Each candidate is tried smallest-first (the minimum, then halfway), so a fault whose exact
//! point does not matter collapses at once.
//!
//! [`shrink_workload`] then drops steps of a generated workload (halved prefixes, then one step
//! at a time, as [`GeneratedWorkload::shorten`] offers them), keeping the first shortening that
//! still fails, until none does. [`shrink_run`] does both for a world whose workload is a
//! generated one ([`SimBuilder::generated_workload_for`]), so a scenario gets workload shrinking
//! without code of its own.
//!
//! Everything is bounded in replays and wall time, and the reports say whether a bound cut a
//! shrink short.

use std::fmt;
use std::time::{Duration, Instant};

use crate::builder::SimBuilder;
use crate::faults::{FaultPlan, PlannedFault, Trigger};
use crate::generate::GeneratedWorkload;

/// Limits of one shrink.
#[derive(Clone, Debug)]
pub struct ShrinkBounds {
    /// At most this many replays.
    pub replays_max: u64,
    /// At most this much wall time (measured outside the simulation).
    pub wall_time_max: Duration,
}

impl Default for ShrinkBounds {
    fn default() -> Self {
        ShrinkBounds { replays_max: 300, wall_time_max: Duration::from_secs(60) }
    }
}

/// What a shrink achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrinkReport {
    /// The smallest failing plan found.
    pub plan: FaultPlan,
    /// Faults before.
    pub faults_before: usize,
    /// Faults after.
    pub faults_after: usize,
    /// Replays used.
    pub replays: u64,
    /// The bound that stopped the shrink early, if one did (`replays_max` or `wall_time_max`).
    pub stopped_by: Option<&'static str>,
}

struct Budget<'a> {
    bounds: &'a ShrinkBounds,
    started: Instant,
    replays: u64,
    stopped_by: Option<&'static str>,
}

impl Budget<'_> {
    /// Whether another replay is allowed; records the bound that says no.
    fn allows(&mut self) -> bool {
        if self.stopped_by.is_some() {
            return false;
        }
        if self.replays >= self.bounds.replays_max {
            self.stopped_by = Some("replays_max");
        } else if self.started.elapsed() >= self.bounds.wall_time_max {
            self.stopped_by = Some("wall_time_max");
        }
        self.stopped_by.is_none()
    }
}

/// What shortening a generated workload achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadShrinkReport {
    /// The shortest failing workload found.
    pub workload: GeneratedWorkload,
    /// Steps before.
    pub steps_before: usize,
    /// Steps after.
    pub steps_after: usize,
    /// Replays used.
    pub replays: u64,
    /// The bound that stopped the shrink early, if one did (`replays_max` or `wall_time_max`).
    pub stopped_by: Option<&'static str>,
}

/// What [`shrink_run`] achieved: the plan, then the generated workload if the world has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunShrinkReport {
    /// The plan's shrink.
    pub plan: ShrinkReport,
    /// The workload's shrink (`None` when the workload is a script, not a generated one).
    pub workload: Option<WorkloadShrinkReport>,
}

impl RunShrinkReport {
    /// Replays used in all.
    pub fn replays(&self) -> u64 {
        self.plan.replays + self.workload.as_ref().map_or(0, |w| w.replays)
    }

    /// The bound that stopped the shrink early, if one did.
    pub fn stopped_by(&self) -> Option<&'static str> {
        self.plan.stopped_by.or(self.workload.as_ref().and_then(|w| w.stopped_by))
    }

    /// `world` with the shrunk plan and, if there is one, the shrunk workload.
    pub fn apply_to(&self, world: &SimBuilder) -> SimBuilder {
        let world = world.clone().faults(self.plan.plan.clone());
        match &self.workload {
            Some(w) => world.generated_workload(w.workload.clone()),
            None => world,
        }
    }
}

impl fmt::Display for RunShrinkReport {
    /// `3 -> 1 faults, 10 -> 2 workload steps in 57 replays (stopped by replays_max)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {} faults", self.plan.faults_before, self.plan.faults_after)?;
        if let Some(w) = &self.workload {
            write!(f, ", {} -> {} workload steps", w.steps_before, w.steps_after)?;
        }
        write!(f, " in {} replays", self.replays())?;
        if let Some(bound) = self.stopped_by() {
            write!(f, " (stopped by {bound})")?;
        }
        Ok(())
    }
}

/// Shrink a failing run of `world` at `seed` with `plan`: the plan first, then, if `world`'s
/// workload is a generated one, its steps (with the shrunk plan). `still_fails(candidate)` runs
/// the candidate world at `seed` (on a fresh thread, as sweeps do) and says whether it fails the
/// same way. Both shrinks share `bounds`.
pub fn shrink_run(
    world: &SimBuilder,
    seed: u64,
    plan: &FaultPlan,
    bounds: &ShrinkBounds,
    mut still_fails: impl FnMut(&SimBuilder) -> bool,
) -> RunShrinkReport {
    let started = Instant::now();
    let plan = shrink_plan(plan, bounds, |candidate| still_fails(&world.clone().faults(candidate.clone())));
    // A workload that cannot be generated fails its run's first step; there is nothing to shorten.
    let workload = match world.generated_workload_for(seed) {
        Some(Ok(workload)) => Some(workload),
        Some(Err(_)) | None => None,
    };
    let workload = workload.map(|workload| {
        let rest = ShrinkBounds {
            replays_max: bounds.replays_max.saturating_sub(plan.replays),
            wall_time_max: bounds.wall_time_max.saturating_sub(started.elapsed()),
        };
        let with_plan = world.clone().faults(plan.plan.clone());
        shrink_workload(&workload, &rest, |candidate| {
            still_fails(&with_plan.clone().generated_workload(candidate.clone()))
        })
    });
    RunShrinkReport { plan, workload }
}

/// Shorten `workload`, which fails, to fewer steps that still fail by `still_fails`: take the
/// first of [`GeneratedWorkload::shorten`]'s candidates that fails, and start again from it,
/// until none fails or a bound is hit.
pub fn shrink_workload(
    workload: &GeneratedWorkload,
    bounds: &ShrinkBounds,
    mut still_fails: impl FnMut(&GeneratedWorkload) -> bool,
) -> WorkloadShrinkReport {
    let mut budget = Budget { bounds, started: Instant::now(), replays: 0, stopped_by: None };
    let mut best = workload.clone();
    // Every accepted candidate has fewer steps, so there are at most as many rounds as steps.
    'rounds: for _ in 0..workload.steps.len() {
        for candidate in best.shorten() {
            if !budget.allows() {
                break 'rounds;
            }
            budget.replays += 1;
            if still_fails(&candidate) {
                best = candidate;
                continue 'rounds;
            }
        }
        break;
    }
    WorkloadShrinkReport {
        steps_before: workload.steps.len(),
        steps_after: best.steps.len(),
        workload: best,
        replays: budget.replays,
        stopped_by: budget.stopped_by,
    }
}

/// Shrink `plan`, which fails, to a smaller plan that still fails by `still_fails`.
pub fn shrink_plan(
    plan: &FaultPlan,
    bounds: &ShrinkBounds,
    mut still_fails: impl FnMut(&FaultPlan) -> bool,
) -> ShrinkReport {
    let mut budget = Budget { bounds, started: Instant::now(), replays: 0, stopped_by: None };
    let mut best = plan.clone();
    let mut try_plan = |candidate: &FaultPlan, budget: &mut Budget<'_>| -> bool {
        if !budget.allows() {
            return false;
        }
        budget.replays += 1;
        still_fails(candidate)
    };
    // Each pass either shrinks something or leaves `best` unchanged; a plan has finitely many
    // smaller variants, so the loop ends. The bound is a guard against a flaky oracle.
    const PASSES_MAX: usize = 64;
    for _ in 0..PASSES_MAX {
        let before = best.clone();
        drop_faults(&mut best, &mut budget, &mut try_plan);
        for index in 0..best.faults.len() {
            simplify_fault(&mut best, index, &mut budget, &mut try_plan);
        }
        if best == before || budget.stopped_by.is_some() {
            break;
        }
    }
    ShrinkReport {
        faults_before: plan.faults.len(),
        faults_after: best.faults.len(),
        plan: best,
        replays: budget.replays,
        stopped_by: budget.stopped_by,
    }
}

type TryPlan<'t> = dyn FnMut(&FaultPlan, &mut Budget<'_>) -> bool + 't;

/// Remove chunks of faults, halving the chunk size down to one fault.
fn drop_faults(best: &mut FaultPlan, budget: &mut Budget<'_>, try_plan: &mut TryPlan<'_>) {
    let mut chunk = best.faults.len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        while start < best.faults.len() {
            let end = (start + chunk).min(best.faults.len());
            let mut candidate = best.clone();
            candidate.faults.drain(start..end);
            if try_plan(&candidate, budget) {
                *best = candidate;
            } else {
                start = end;
            }
        }
        if chunk == 1 || budget.stopped_by.is_some() {
            return;
        }
        chunk = chunk.div_ceil(2);
    }
}

/// Move fault `index`'s trigger earlier and shorten its durations, one number at a time.
fn simplify_fault(best: &mut FaultPlan, index: usize, budget: &mut Budget<'_>, try_plan: &mut TryPlan<'_>) {
    for field in 0..NUMBERS_MAX {
        let Some(current) = number(&best.faults[index], field) else { break };
        let smaller = lower_candidates(current.value, current.min);
        for value in smaller {
            let mut candidate = best.clone();
            set_number(&mut candidate.faults[index], field, value);
            if try_plan(&candidate, budget) {
                *best = candidate;
                break;
            }
        }
    }
}

/// The smallest value first, then halfway, then one less: a ladder that finds "any value works"
/// in one replay and still makes progress when only nearby values fail.
fn lower_candidates(value: u64, min: u64) -> Vec<u64> {
    if value <= min {
        return Vec::new();
    }
    let mut out = vec![min];
    let half = min + (value - min) / 2;
    if half > min && half < value {
        out.push(half);
    }
    if value - 1 > half {
        out.push(value - 1);
    }
    out
}

/// Numbers of one planned fault that shrinking may lower, with their minimum.
struct Number {
    value: u64,
    min: u64,
}

/// How many numbers a planned fault has at most (trigger plus fault).
const NUMBERS_MAX: usize = 4;

fn trigger_numbers(trigger: &Trigger) -> Vec<Number> {
    match trigger {
        Trigger::NthWrite { n, .. } => vec![Number { value: u64::from(*n), min: 1 }],
        Trigger::AtTime { at_ms } => vec![Number { value: *at_ms, min: 0 }],
        Trigger::Rate { per_mille, max, .. } => {
            vec![Number { value: u64::from(*max), min: 1 }, Number { value: u64::from(*per_mille), min: 1 }]
        }
        Trigger::OnObject { .. } => Vec::new(),
    }
}

/// The fault's own numbers, as its kind lists them (read off a copy).
fn fault_numbers(planned: &PlannedFault) -> Vec<Number> {
    let mut fault = planned.fault.clone();
    let knobs = crate::faults::ops(fault.kind()).knobs(&mut fault);
    knobs.into_iter().map(|knob| Number { value: *knob.value, min: knob.min }).collect()
}

fn number(planned: &PlannedFault, field: usize) -> Option<Number> {
    let mut all = trigger_numbers(&planned.trigger);
    all.extend(fault_numbers(planned));
    all.into_iter().nth(field)
}

fn set_number(planned: &mut PlannedFault, field: usize, value: u64) {
    let trigger_count = trigger_numbers(&planned.trigger).len();
    if field < trigger_count {
        match &mut planned.trigger {
            Trigger::NthWrite { n, .. } => *n = value as u32,
            Trigger::AtTime { at_ms } => *at_ms = value,
            Trigger::Rate { per_mille, max, .. } => {
                if field == 0 {
                    *max = value as u32
                } else {
                    *per_mille = value as u32
                }
            }
            Trigger::OnObject { .. } => {}
        }
        return;
    }
    let field = field - trigger_count;
    let kind = planned.fault.kind();
    if let Some(knob) = crate::faults::ops(kind).knobs(&mut planned.fault).into_iter().nth(field) {
        *knob.value = value;
    }
}
