//! Which injection points a run exercised: its fired faults (the plan minus the report's
//! `unfired` list) mapped onto the points of the scenario's fault-free reference.
//!
//! A guided run's faults are the points' own faults, so they map exactly. A random (swarm) run
//! draws its own triggers and durations, so a fired fault maps by where it acts in the reference
//! run and by its shape (kind, controller, crash side, error, informer; durations and lags
//! ignored):
//! - every trigger is placed on the reference's timeline: a write trigger at the answer of the
//!   write it counts to (counted as the engine counts: per node, optionally per resource and verb,
//!   failed writes included), an object trigger at the reference's first such change of that
//!   object, a time trigger at its time;
//! - a fault that acts on one API call (crash, injected error, ambiguous answer) on a write
//!   trigger exercises the points of the same shape at that same write;
//! - any other fault exercises the points of its shape that come first at or after its place
//!   (their own triggers placed the same way), as it is in force from then on.
//!
//! A rate trigger fires on calls the report does not name, and a fault kind no point plans
//! (partitions, compaction, watch cuts) has no point, so neither counts toward coverage. The
//! mapping is by the reference's timeline: a random seed's run drifts from it, so random-mode
//! coverage is an estimate of which situations were perturbed, never more than the points found.

use std::collections::BTreeMap;

use crate::faults::{Fault, FaultPlan, ObjectChange, PlannedFault, Trigger};
use crate::guided::points::InjectionPoint;
use crate::trace::{TraceEntry, TraceEvent};
use crate::verdict::RunReport;

/// The verbs that can change state (as the injector counts writes).
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// At most this many requests wait for their answers while reading a trace (more means a broken
/// trace whose answers are missing; the oldest are forgotten).
const PENDING_REQUESTS_MAX: usize = 100_000;

/// A write of the reference run, as triggers count them.
#[derive(Clone, Debug)]
struct Write {
    node: String,
    verb: &'static str,
    /// `resource[/namespace][/name]`.
    target: String,
    at_nanos: u64,
    /// Whether the write made a new revision (only such writes are object changes).
    changed: bool,
}

/// The points of a reference run, placed on its timeline, to map fired faults onto.
#[derive(Clone, Debug, Default)]
pub struct PointMap {
    /// Per point (same order as the point list): its fault and its place on the timeline.
    points: Vec<(PlannedFault, Option<u64>)>,
    /// Exact faults (as guided plans use them) to their point.
    exact: BTreeMap<PlannedFault, usize>,
    writes: Vec<Write>,
}

impl PointMap {
    /// The map of `points`, found in the reference run whose trace `entries` are given.
    pub fn new(entries: &[TraceEntry], points: &[InjectionPoint]) -> Self {
        let mut map = PointMap { writes: writes(entries), ..PointMap::default() };
        for (i, point) in points.iter().enumerate() {
            map.exact.entry(point.fault.clone()).or_insert(i);
        }
        map.points = points.iter().map(|p| (p.fault.clone(), map.place(&p.fault.trigger))).collect();
        map
    }

    /// How many points there are.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are no points (a reference that failed or kept no trace).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The points (indices, ascending) that the faults of `report` that fired exercised.
    pub fn exercised_by(&self, report: &RunReport) -> Vec<usize> {
        self.exercised(&report.plan, &report.unfired)
    }

    /// The points (indices, ascending) that the faults of `plan` exercised, `unfired` (as a run's
    /// report lists them) excepted.
    pub fn exercised(&self, plan: &FaultPlan, unfired: &[PlannedFault]) -> Vec<usize> {
        let fired = fired(plan, unfired);
        let mut exercised: Vec<usize> = fired.into_iter().flat_map(|f| self.points_of(f)).collect();
        exercised.sort_unstable();
        exercised.dedup();
        exercised
    }

    /// The points one fired fault exercised (see the module docs).
    pub fn points_of(&self, fired: &PlannedFault) -> Vec<usize> {
        if let Some(i) = self.exact.get(fired) {
            return vec![*i];
        }
        let Some(at) = self.place(&fired.trigger) else { return Vec::new() };
        let on_call = acts_on_call(&fired.fault) && matches!(fired.trigger, Trigger::NthWrite { .. });
        let candidates = self.points.iter().enumerate().filter_map(|(i, (point, place))| {
            let place = (*place)?;
            let fits = same_shape(&point.fault, &fired.fault)
                && if on_call {
                    place == at && matches!(point.trigger, Trigger::NthWrite { .. })
                } else {
                    place >= at
                };
            fits.then_some((place, i))
        });
        // The first place that fits, with every point there (a delay on every informer of a
        // node exercises each informer's point at that moment).
        let mut first: Option<u64> = None;
        let mut found = Vec::new();
        for (place, i) in candidates {
            match first {
                Some(f) if place > f => continue,
                Some(f) if place == f => found.push(i),
                _ => {
                    first = Some(place);
                    found = vec![i];
                }
            }
        }
        found
    }

    /// Where a trigger acts on the reference's timeline (virtual nanoseconds), if it does.
    fn place(&self, trigger: &Trigger) -> Option<u64> {
        match trigger {
            Trigger::NthWrite { controller, n, kind, verb } => {
                let index = usize::try_from(*n).ok()?.checked_sub(1)?;
                self.writes
                    .iter()
                    .filter(|w| w.node == *controller)
                    .filter(|w| kind.as_deref().is_none_or(|k| resource(&w.target).eq_ignore_ascii_case(k)))
                    .filter(|w| verb.as_deref().is_none_or(|v| v.eq_ignore_ascii_case(w.verb)))
                    .nth(index)
                    .map(|w| w.at_nanos)
            }
            Trigger::OnObject { kind, namespace, name, change } => {
                let object = if namespace.is_empty() { name.clone() } else { format!("{namespace}/{name}") };
                self.writes
                    .iter()
                    .filter(|w| w.changed && object_change(w.verb) == *change)
                    .find(|w| {
                        let (res, rest) = w.target.split_once('/').unwrap_or((&w.target, ""));
                        res.eq_ignore_ascii_case(kind) && rest == object
                    })
                    .map(|w| w.at_nanos)
            }
            Trigger::AtTime { at_ms } => Some(at_ms.saturating_mul(1_000_000)),
            Trigger::Rate { .. } => None,
        }
    }
}

/// The planned faults that fired: the plan minus the `unfired` list of its run's report (one
/// unfired entry cancels one planned copy, so a plan that holds a fault twice is counted right).
pub fn fired<'p>(plan: &'p FaultPlan, unfired: &[PlannedFault]) -> Vec<&'p PlannedFault> {
    let mut unfired: Vec<&PlannedFault> = unfired.iter().collect();
    let mut fired = Vec::with_capacity(plan.faults.len());
    for planned in &plan.faults {
        match unfired.iter().position(|u| *u == planned) {
            Some(pos) => {
                unfired.swap_remove(pos);
            }
            None => fired.push(planned),
        }
    }
    fired
}

/// Faults that act on the one API call their trigger names (as each kind says).
fn acts_on_call(fault: &Fault) -> bool {
    crate::faults::ops(fault.kind()).acts_on_call()
}

/// Whether a fired fault is the point's fault up to durations and lags, as its kind says (a
/// delay on every informer, say, has the shape of a delay on any one of them).
fn same_shape(point: &Fault, fired: &Fault) -> bool {
    point.kind() == fired.kind() && crate::faults::ops(point.kind()).same_shape(point, fired)
}

/// The resource of a trace target `resource[/namespace][/name]`.
fn resource(target: &str) -> &str {
    target.split_once('/').map_or(target, |(resource, _)| resource)
}

/// The change a write verb makes, as object triggers name it.
fn object_change(verb: &str) -> ObjectChange {
    match verb {
        "create" => ObjectChange::Create,
        "delete" | "deletecollection" => ObjectChange::Delete,
        _ => ObjectChange::Update,
    }
}

/// The answered writes of a trace, in the order the server answered them, each marked with
/// whether it made a newer revision than any seen before (a no-op write does not bump it).
fn writes(entries: &[TraceEntry]) -> Vec<Write> {
    let mut pending: BTreeMap<u64, (&str, &'static str, &str)> = BTreeMap::new();
    let mut newest: u64 = 0;
    let mut out = Vec::new();
    for entry in entries {
        match &entry.event {
            TraceEvent::ApiRequest { call, verb, target } if WRITE_VERBS.contains(verb) => {
                if pending.len() >= PENDING_REQUESTS_MAX {
                    pending.pop_first();
                }
                pending.insert(*call, (&entry.node, *verb, target.as_str()));
            }
            TraceEvent::ApiResponse { call, result } => {
                let rv = result.as_ref().ok().and_then(|rv| rv.parse::<u64>().ok());
                if let Some((node, verb, target)) = pending.remove(call) {
                    out.push(Write {
                        node: node.to_owned(),
                        verb,
                        target: target.to_owned(),
                        at_nanos: entry.at_nanos,
                        changed: rv.is_some_and(|rv| rv > newest),
                    });
                }
                if let Some(rv) = rv {
                    newest = newest.max(rv);
                }
            }
            TraceEvent::WatchDelivery { resource_version, .. } => {
                newest = newest.max(resource_version.parse::<u64>().unwrap_or(0));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::faults::{CallSide, InjectedError};
    use crate::guided::points::{PointConfig, injection_points_with};
    use crate::world::WORKLOAD_NODE;

    const MS: u64 = 1_000_000;

    /// `ctrl` reconciles `a` (10ms), creates secret `s` (answered 12ms, rv 5), patches `a` without
    /// a change (14ms, rv 5); the workload updates `a` (20ms, rv 6, delivered to `ctrl` at 22ms)
    /// and deletes it (30ms, rv 7).
    fn entries() -> Vec<TraceEntry> {
        let ctrl: Arc<str> = Arc::from("ctrl");
        let workload: Arc<str> = Arc::from(WORKLOAD_NODE);
        let entry = |at_nanos, node: &Arc<str>, event| TraceEntry { at_nanos, node: node.clone(), event };
        let request =
            |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.to_owned() };
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
        let conflict =
            index(&points, "fail ctrl's call with 409 Conflict, at write #1 by ctrl (create secrets)");
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
}
