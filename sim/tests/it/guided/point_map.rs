//! The tests of `sim::guided::point_map` (its former unit tests: the library has no test harness).

use std::sync::Arc;

use sim::faults::{CallSide, Fault, FaultPlan, InjectedError, PlannedFault, Trigger};
use sim::guided::point_map::*;
use sim::guided::points::{InjectionPoint, PointConfig, injection_points_with};
use sim::trace::{TraceEntry, TraceEvent};
use sim::world::WORKLOAD_NODE;

const MS: u64 = 1_000_000;

/// `ctrl` reconciles `a` (10ms), creates secret `s` (answered 12ms, rv 5), patches `a` without
/// a change (14ms, rv 5); the workload updates `a` (20ms, rv 6, delivered to `ctrl` at 22ms)
/// and deletes it (30ms, rv 7).
fn entries() -> Vec<TraceEntry> {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let workload: Arc<str> = Arc::from(WORKLOAD_NODE);
    let entry = |at_nanos, node: &Arc<str>, event| TraceEntry { at_nanos, node: node.clone(), event };
    let request = |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.to_owned() };
    let ok = |call, rv: &str| TraceEvent::ApiResponse { call, result: Ok(rv.to_owned()) };
    let start =
        TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() };
    let delivery = TraceEvent::WatchDelivery {
        watch: "default/configmaps/default".into(),
        kind: "MODIFIED",
        object: "default/a".into(),
        resource_version: "6".into(),
    };
    vec![
        entry(10 * MS, &ctrl, start),
        entry(11 * MS, &ctrl, request(1, "create", "secrets/default/s")),
        entry(12 * MS, &ctrl, ok(1, "5")),
        entry(13 * MS, &ctrl, request(2, "patch", "configmaps/default/a")),
        entry(14 * MS, &ctrl, ok(2, "5")),
        entry(19 * MS, &workload, request(4, "update", "configmaps/default/a")),
        entry(20 * MS, &workload, ok(4, "6")),
        entry(22 * MS, &ctrl, delivery),
        entry(29 * MS, &workload, request(5, "delete", "configmaps/default/a")),
        entry(30 * MS, &workload, ok(5, "7")),
    ]
}

fn map() -> (Vec<InjectionPoint>, PointMap) {
    let config = PointConfig { errors: vec![InjectedError::Conflict], ..PointConfig::default() };
    let points = injection_points_with(&entries(), &config).points;
    let map = PointMap::new(&entries(), &points);
    (points, map)
}

/// The index of the point whose fault displays as `text`.
fn index(points: &[InjectionPoint], text: &str) -> usize {
    points.iter().position(|p| p.fault.to_string() == text).unwrap_or_else(|| panic!("no point {text}"))
}

fn planned(trigger: Trigger, fault: Fault) -> PlannedFault {
    PlannedFault { trigger, fault }
}

fn nth_write(n: u32) -> Trigger {
    Trigger::NthWrite { controller: "ctrl".into(), n, kind: None, verb: None }
}

#[test]
fn every_guided_point_fault_maps_to_exactly_its_own_point() {
    let (points, map) = map();
    assert_eq!(map.len(), points.len());
    for (i, point) in points.iter().enumerate() {
        assert_eq!(map.points_of(&point.fault), vec![i], "{point}");
    }
}

#[test]
fn a_swarm_crash_at_the_controllers_first_write_is_the_crash_point_of_that_write_and_a_no_op_write_has_none()
{
    let (points, map) = map();
    let crash = |side| Fault::Crash { controller: "ctrl".into(), side, restart_after_ms: 77 };
    let after = index(
        &points,
        "crash ctrl after the call, restart after 500ms, at write #1 by ctrl (create secrets)",
    );
    assert_eq!(map.points_of(&planned(nth_write(1), crash(CallSide::After))), vec![after]);
    // The second write (the patch that changed nothing) has no points.
    assert_eq!(map.points_of(&planned(nth_write(2), crash(CallSide::After))), Vec::<usize>::new());
    // A write the reference never made.
    assert_eq!(map.points_of(&planned(nth_write(9), crash(CallSide::Before))), Vec::<usize>::new());
    let error = Fault::ApiError { controller: "ctrl".into(), error: InjectedError::Conflict };
    let conflict = index(&points, "fail ctrl's call with 409 Conflict, at write #1 by ctrl (create secrets)");
    assert_eq!(map.points_of(&planned(nth_write(1), error.clone())), vec![conflict]);
    let rate = Trigger::Rate { controller: "ctrl".into(), per_mille: 500, max: 1 };
    assert_eq!(map.points_of(&planned(rate, error)), Vec::<usize>::new());
}

#[test]
fn a_timed_swarm_fault_exercises_the_first_point_of_its_shape_at_or_after_its_time() {
    let (points, map) = map();
    let pause = Fault::PauseReconciles { controller: "ctrl".into(), duration_ms: 3 };
    let pause_point = index(&points, "pause ctrl's reconciles for 1500ms, at 9ms");
    assert_eq!(map.points_of(&planned(Trigger::AtTime { at_ms: 5 }, pause.clone())), vec![pause_point]);
    assert_eq!(map.points_of(&planned(Trigger::AtTime { at_ms: 11 }, pause)), Vec::<usize>::new());
    let delay = Fault::delay_watch("ctrl", "", 40);
    let delay_point = points
        .iter()
        .position(|p| p.fault.fault == Fault::delay_watch("ctrl", "configmaps", 1_000))
        .expect("a delay point");
    assert_eq!(points[delay_point].fault.trigger, Trigger::AtTime { at_ms: 19 });
    assert_eq!(map.points_of(&planned(Trigger::AtTime { at_ms: 0 }, delay)), vec![delay_point]);
    // A stale replica after the first write lands on the transition point whose trigger (the
    // delete of configmap a, at 30ms) comes next.
    let stale = Fault::StaleReplica { controller: "ctrl".into(), lag_revisions: 9, restart_after_ms: 1 };
    let stale_point = points.iter().position(|p| matches!(p.fault.fault, Fault::StaleReplica { .. }));
    assert_eq!(map.points_of(&planned(nth_write(1), stale)), stale_point.into_iter().collect::<Vec<_>>());
}

#[test]
fn only_faults_that_fired_exercise_points_and_a_repeated_fault_needs_one_firing() {
    let (points, map) = map();
    let crash = planned(
        nth_write(1),
        Fault::Crash { controller: "ctrl".into(), side: CallSide::After, restart_after_ms: 3 },
    );
    let pause = planned(
        Trigger::AtTime { at_ms: 1 },
        Fault::PauseReconciles { controller: "ctrl".into(), duration_ms: 3 },
    );
    let plan = FaultPlan { faults: vec![crash.clone(), pause.clone(), crash.clone()] };
    let after = index(
        &points,
        "crash ctrl after the call, restart after 500ms, at write #1 by ctrl (create secrets)",
    );
    assert_eq!(map.exercised(&plan, std::slice::from_ref(&pause)), vec![after]);
    assert_eq!(map.exercised(&plan, &[crash.clone(), pause.clone()]), vec![after]);
    assert_eq!(map.exercised(&plan, &[crash.clone(), pause, crash]), Vec::<usize>::new());
}
