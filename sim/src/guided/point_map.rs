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
