//! Shrinking: keep the seed, reduce the fault plan while the same property keeps failing.
//!
//! The shrinker only sees a plan and an oracle (`still_fails(plan)`, which replays the seed with
//! that plan), so it is independent of how faults are applied. Passes, repeated to a fixpoint:
//!
//! 1. drop faults: halves first, then one at a time (a cheap ddmin);
//! 2. move triggers earlier: the k-th write becomes an earlier write, a time becomes an earlier
//!    time, a random rate becomes less frequent;
//! 3. shorten delays and pauses.
//!
//! Each candidate is tried smallest-first (the minimum, then halfway), so a fault whose exact
//! point does not matter collapses at once. The whole run is bounded in replays and wall time, and
//! the report says whether a bound cut it short.

use std::time::{Duration, Instant};

use crate::faults::{Fault, FaultPlan, PlannedFault, Trigger};

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

fn fault_numbers(fault: &Fault) -> Vec<Number> {
    match fault {
        Fault::Crash { restart_after_ms, .. } => vec![Number { value: *restart_after_ms, min: 1 }],
        Fault::StaleReplica { lag_revisions, restart_after_ms, .. } => {
            vec![Number { value: *lag_revisions, min: 1 }, Number { value: *restart_after_ms, min: 1 }]
        }
        Fault::PauseReconciles { duration_ms, .. }
        | Fault::SkipByRelist { duration_ms, .. }
        | Fault::Partition { duration_ms, .. }
        | Fault::PauseLeader { duration_ms, .. } => vec![Number { value: *duration_ms, min: 1 }],
        Fault::DelayWatch { extra_ms, duration_ms, .. } => {
            vec![Number { value: *extra_ms, min: 1 }, Number { value: *duration_ms, min: 1 }]
        }
        Fault::ApiError { .. } | Fault::Ambiguous { .. } | Fault::WatchDisconnect { .. } | Fault::Compact => {
            Vec::new()
        }
    }
}

fn number(planned: &PlannedFault, field: usize) -> Option<Number> {
    let mut all = trigger_numbers(&planned.trigger);
    all.extend(fault_numbers(&planned.fault));
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
    match &mut planned.fault {
        Fault::Crash { restart_after_ms, .. } => *restart_after_ms = value,
        Fault::StaleReplica { lag_revisions, restart_after_ms, .. } => {
            if field == 0 {
                *lag_revisions = value
            } else {
                *restart_after_ms = value
            }
        }
        Fault::PauseReconciles { duration_ms, .. }
        | Fault::SkipByRelist { duration_ms, .. }
        | Fault::Partition { duration_ms, .. }
        | Fault::PauseLeader { duration_ms, .. } => *duration_ms = value,
        Fault::DelayWatch { extra_ms, duration_ms, .. } => {
            if field == 0 {
                *extra_ms = value
            } else {
                *duration_ms = value
            }
        }
        Fault::ApiError { .. } | Fault::Ambiguous { .. } | Fault::WatchDisconnect { .. } | Fault::Compact => {
        }
    }
}
