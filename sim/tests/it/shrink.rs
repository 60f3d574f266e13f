//! The shrinker keeps only the faults that matter, moves triggers as early as the failure allows,
//! shortens durations, and stops at its bounds, saying which one stopped it.

use std::time::Duration;

use sim::DecisionSource;
use sim::faults::{
    CallSide, Fault, FaultPlan, InjectedError, PlannedFault, SwarmConfig, Trigger, swarm_plan,
};
use sim::shrink::{ShrinkBounds, shrink_plan};

fn crash_at(n: u32, restart_after_ms: u64) -> PlannedFault {
    PlannedFault {
        trigger: Trigger::NthWrite { controller: "op".into(), n, kind: None, verb: None },
        fault: Fault::Crash { controller: "op".into(), side: CallSide::After, restart_after_ms },
    }
}

fn conflict_at(at_ms: u64) -> PlannedFault {
    PlannedFault {
        trigger: Trigger::NthWrite { controller: "op".into(), n: 7, kind: None, verb: None },
        fault: Fault::ApiError { controller: "op".into(), error: InjectedError::Conflict },
    }
    .with_time(at_ms)
}

trait WithTime {
    fn with_time(self, at_ms: u64) -> Self;
}

impl WithTime for PlannedFault {
    fn with_time(mut self, at_ms: u64) -> Self {
        if at_ms > 0 {
            self.trigger = Trigger::AtTime { at_ms };
        }
        self
    }
}

/// A bug that needs a crash at or after write 3 together with an injected 409: every other fault
/// is noise.
fn needs_late_crash_and_conflict(plan: &FaultPlan) -> bool {
    let crash = plan.faults.iter().any(|f| {
        matches!(f.fault, Fault::Crash { .. }) && matches!(f.trigger, Trigger::NthWrite { n, .. } if n >= 3)
    });
    let conflict =
        plan.faults.iter().any(|f| matches!(f.fault, Fault::ApiError { error: InjectedError::Conflict, .. }));
    crash && conflict
}

fn noisy_plan() -> FaultPlan {
    let config = SwarmConfig {
        controllers: vec!["op".into(), "gc".into()],
        kinds: vec![
            sim::faults::FaultKind::PauseReconciles,
            sim::faults::FaultKind::DelayWatch,
            sim::faults::FaultKind::Partition,
            sim::faults::FaultKind::Compact,
        ],
        faults_max: 8,
        ..SwarmConfig::default()
    };
    let mut faults = Vec::new();
    let mut seed = 0;
    while faults.len() < 8 {
        faults.extend(swarm_plan(&mut DecisionSource::new(seed), &config).faults);
        seed += 1;
    }
    faults.truncate(8);
    faults.insert(3, crash_at(9, 4_000));
    faults.insert(7, conflict_at(2_500));
    FaultPlan { faults }
}

#[test]
fn shrinking_a_ten_fault_plan_keeps_exactly_the_two_faults_that_matter() {
    let plan = noisy_plan();
    assert_eq!(plan.faults.len(), 10);
    assert!(needs_late_crash_and_conflict(&plan));
    let report = shrink_plan(&plan, &ShrinkBounds::default(), needs_late_crash_and_conflict);
    assert_eq!(report.faults_before, 10);
    assert_eq!(report.faults_after, 2);
    assert_eq!(report.stopped_by, None);
    // The crash moved from write 9 to write 3, the earliest that still fails; its restart delay
    // and the conflict's time do not matter, so they went to their minimum.
    let conflict_at_start = PlannedFault {
        trigger: Trigger::AtTime { at_ms: 0 },
        fault: Fault::ApiError { controller: "op".into(), error: InjectedError::Conflict },
    };
    assert_eq!(report.plan.faults, vec![crash_at(3, 1), conflict_at_start]);
    assert!(report.replays < 100, "{} replays", report.replays);
}

#[test]
fn an_already_minimal_plan_is_left_unchanged() {
    let conflict_first = PlannedFault {
        trigger: Trigger::NthWrite { controller: "op".into(), n: 1, kind: None, verb: None },
        fault: Fault::ApiError { controller: "op".into(), error: InjectedError::Conflict },
    };
    let plan = FaultPlan { faults: vec![crash_at(3, 1), conflict_first] };
    let report = shrink_plan(&plan, &ShrinkBounds::default(), needs_late_crash_and_conflict);
    assert_eq!(report.plan, plan);
    assert_eq!(report.faults_after, 2);
}

#[test]
fn shrinking_stops_at_its_replay_bound_and_says_so() {
    let plan = noisy_plan();
    let mut calls = 0;
    let bounds = ShrinkBounds { replays_max: 5, wall_time_max: Duration::from_secs(60) };
    let report = shrink_plan(&plan, &bounds, |p| {
        calls += 1;
        needs_late_crash_and_conflict(p)
    });
    assert_eq!(calls, 5);
    assert_eq!(report.replays, 5);
    assert_eq!(report.stopped_by, Some("replays_max"));
    assert!(needs_late_crash_and_conflict(&report.plan), "the result must still fail");
}

#[test]
fn shrinking_stops_at_its_time_bound_and_says_so() {
    let plan = noisy_plan();
    let bounds = ShrinkBounds { replays_max: 1_000, wall_time_max: Duration::ZERO };
    let report = shrink_plan(&plan, &bounds, needs_late_crash_and_conflict);
    assert_eq!(report.replays, 0);
    assert_eq!(report.stopped_by, Some("wall_time_max"));
    assert_eq!(report.plan, plan);
}
