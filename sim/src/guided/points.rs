//! Injection points: where, in a fault-free reference run, a fault could act, each with the
//! concrete [`PlannedFault`] that acts there (Sieve's test plans, read off our own trace instead of
//! a cluster's).
//!
//! From the reference trace:
//! - every controller API write that changed something (the `n`-th write of that verb and
//!   resource by that node) gives: crash after it, crash before it, make it ambiguous, fail it with
//!   each [`InjectedError`](crate::faults::InjectedError); triggered by [`Trigger::NthWrite`];
//! - every watch delivery to a controller gives: delay that informer, hold the node's watches and
//!   force a relist; triggered [`Trigger::AtTime`] just before the write that caused the event;
//! - every reconcile gives: pause the controller's reconciles (and, for a controller that renews a
//!   Lease, pause its leader), just before the reconcile starts;
//! - every object transition (a write that changed an object, by anyone) gives, for each
//!   controller: restart it onto a replica lagging to just before that revision, at the object's
//!   next transition ([`Trigger::OnObject`] when that is the object's first change of its kind,
//!   else just before it in time), so that the lagging view misses both.
//!
//! Pruning, as Sieve prunes: writes that changed nothing (an error, or an answer whose
//! resourceVersion is not newer than every revision seen before: a no-op write does not bump the
//! revision) give no points, and points that yield the same planned fault are merged (the first,
//! in trace order, is kept). A delete, and a write that removes a deleting object's last
//! finalizer, answer the object as last stored, not the revision they made: the gap they leave
//! before the next revision the trace shows tells that they changed something, and at which
//! revision (see `Revisions`).
//!
//! A trigger counts writes as the fault engine does: per node, verb and resource, in the order the
//! server applied them (the order of the answers in the trace), failed writes included.
//!
//! This file reads the sites off the trace and places triggers; which faults each site gets, in
//! which tier and family they are ordered, is each fault kind's, in its file
//! ([`crate::faults`]: one kind, one file), asked in the fixed order of the faults' `POINT_ORDER`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::faults::kind::PointSite;
use crate::faults::profile::Profile;
use crate::faults::{Fault, ObjectChange, PlannedFault, Trigger};
use crate::trace::{TraceEntry, TraceEvent};
use crate::verdict::RunReport;
use crate::world::WORKLOAD_NODE;

/// Nodes whose trace entries are the engine's, not a controller's.
const ENGINE_NODES: [&str; 3] = [WORKLOAD_NODE, "engine", crate::faults::SUPERVISOR_NODE];

/// The verbs that can change state (as `Request::is_write` decides).
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// The resource of Leases: a controller that writes them runs leader election.
const LEASES: &str = "leases";

pub use crate::faults::kind::PointConfig;

/// Where in the reference run a point is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Site {
    /// The controller's `n`-th write with this verb to this resource (1-based).
    Write {
        /// The writing controller node.
        controller: String,
        /// Which write of that verb and resource.
        n: u32,
        /// The verb (`create`, `patch`, ...).
        verb: String,
        /// The resource's plural.
        resource: String,
        /// `resource[/namespace][/name]`.
        target: String,
        /// The revision the write made.
        revision: u64,
    },
    /// A watch event reaching a controller's informer.
    Delivery {
        /// The informer's node.
        controller: String,
        /// The informer (`cluster/resource[/namespace]`).
        watch: String,
        /// `ADDED`, `MODIFIED` or `DELETED`.
        event: String,
        /// `namespace/name`.
        object: String,
        /// The event's revision.
        revision: u64,
    },
    /// A reconcile starting.
    Reconcile {
        /// The controller node.
        controller: String,
        /// `Kind namespace/name`.
        object: String,
    },
    /// A timed outage of a controller: from one of its sites after workload step `from_step`
    /// until after step `from_step + steps` of the reference run.
    Outage {
        /// The controller cut off.
        controller: String,
        /// The workload step (1-based) after which it starts.
        from_step: usize,
        /// How many further workload steps it spans.
        steps: usize,
        /// How long it lasts.
        duration_ms: u64,
    },
    /// A Node lost (its kubelet silent) from just after workload step `from_step` until after
    /// step `from_step + steps` of the reference run.
    NodeOutage {
        /// The Node.
        node: String,
        /// The workload step (1-based) after which it starts.
        from_step: usize,
        /// How many further workload steps it spans.
        steps: usize,
        /// How long it lasts.
        duration_ms: u64,
    },
    /// A write (by anyone) that changed an object.
    Transition {
        /// The writing node.
        by: String,
        /// `resource[/namespace][/name]`.
        target: String,
        /// The revision it made.
        revision: u64,
    },
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Write { controller, n, verb, target, revision, .. } => {
                write!(f, "{controller}'s {verb} #{n} of {target} (rv {revision})")
            }
            Site::Delivery { controller, watch, event, object, revision } => {
                write!(f, "{event} {object} (rv {revision}) to {controller}'s watch {watch}")
            }
            Site::Reconcile { controller, object } => write!(f, "{controller}'s reconcile of {object}"),
            Site::Transition { by, target, revision } => {
                write!(f, "{by}'s change of {target} (rv {revision})")
            }
            Site::Outage { controller, from_step, steps, duration_ms } => {
                let plural = if *steps == 1 { "" } else { "s" };
                write!(
                    f,
                    "{controller}'s outage from step {from_step} over the next {steps} workload step{plural} ({duration_ms}ms)"
                )
            }
            Site::NodeOutage { node, from_step, steps, duration_ms } => {
                let plural = if *steps == 1 { "" } else { "s" };
                write!(
                    f,
                    "Node {node} lost from step {from_step} over the next {steps} workload step{plural} ({duration_ms}ms)"
                )
            }
        }
    }
}

/// One point: a site of the reference run and the fault that acts there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectionPoint {
    /// Where.
    pub site: Site,
    /// Virtual nanoseconds of the site in the reference run.
    pub at_nanos: u64,
    /// The fault, with a trigger that lands it there.
    pub fault: PlannedFault,
    /// The `namespace/name` of the object the site concerns (empty when the site names none, as
    /// a create with generateName).
    pub object: String,
    /// The kind of situation the site is (`zoo create secrets at step 1`, `zoo ADDED on
    /// configmaps`): exploration tries each class once before it repeats one.
    pub class: String,
}

impl InjectionPoint {
    /// The controller the fault acts on (empty for engine-wide faults).
    pub fn controller(&self) -> &str {
        self.fault.fault.controller().unwrap_or("")
    }

    /// Whether two points may interact (Sieve skips the pairs that cannot): their faults act on
    /// the same controller, or their sites concern the same object.
    pub fn related(&self, other: &InjectionPoint) -> bool {
        self.controller() == other.controller() || (!self.object.is_empty() && self.object == other.object)
    }
}

impl fmt::Display for InjectionPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.site, self.fault)
    }
}

/// The points of a reference run, and what pruning removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PointSet {
    /// The points, in exploration order: by tier (crashes before writes and injected errors
    /// last), then round (a class of situation already planned waits a round), then trace time.
    pub points: Vec<InjectionPoint>,
    /// The controller nodes seen, in order of first appearance.
    pub controllers: Vec<String>,
    /// Controller writes in the reference run.
    pub writes: usize,
    /// Controller writes dropped because they changed nothing (errors and no-op writes).
    pub no_op_writes: usize,
    /// Points dropped because an earlier point planned the same fault.
    pub duplicates: usize,
    /// Of the points, timed outages spanning workload steps.
    pub outages: usize,
    /// Faults left out because they could not act, by the reference's profile (a `staleReplica`
    /// on a controller whose lists are consistent, ...).
    pub cannot_act: usize,
}

/// The points of a fault-free reference run, with [`PointConfig::default`]. The report must keep
/// its trace entries (`SimBuilder::keep_trace(true)`); a report without them has no points.
/// Only points whose fault can act, by the report's profile.
pub fn injection_points(report: &RunReport) -> Vec<InjectionPoint> {
    injection_points_of(report, &PointConfig::default()).points
}

/// The points of a fault-free reference run with `config`, only those whose fault can act by the
/// run's profile ([`RunReport::profile`]: a `staleReplica` only on a controller with an informer
/// listing with resourceVersion "0", a pause only on one that reconciles, ...).
pub fn injection_points_of(report: &RunReport, config: &PointConfig) -> PointSet {
    injection_points_profiled(report.trace.entries(), Some(&report.profile), config)
}

/// A write as the trace shows it.
struct TracedWrite {
    node: String,
    verb: &'static str,
    target: String,
    at_nanos: u64,
    /// The revision it made, if it changed something.
    revision: Option<u64>,
    /// Which write of the node's current reconcile it is (1-based; 0 outside reconciles).
    position: u32,
}

/// What the reference trace says, in the forms the points need.
#[derive(Default)]
struct Reading {
    /// Every answered write, in the order the server applied them.
    writes: Vec<TracedWrite>,
    /// Deliveries to controller informers: (node, watch, event, object, revision, time).
    deliveries: Vec<(String, String, &'static str, String, u64, u64)>,
    /// Reconcile starts: (controller, object, time).
    reconciles: Vec<(String, String, u64)>,
    /// Workload step starts (times).
    steps: Vec<u64>,
    controllers: Vec<String>,
}

impl Reading {
    fn note_controller(&mut self, node: &str) {
        if !ENGINE_NODES.contains(&node) && !self.controllers.iter().any(|c| c == node) {
            self.controllers.push(node.to_owned());
        }
    }
}

/// At most this many requests wait for their answers while reading a trace: more means a trace
/// whose answers are missing (a broken trace), and the oldest ones are forgotten.
const PENDING_REQUESTS_MAX: usize = 100_000;

fn read(entries: &[TraceEntry]) -> Reading {
    let mut reading = Reading::default();
    let mut pending: BTreeMap<u64, (String, &'static str, String)> = BTreeMap::new();
    let mut revisions = Revisions::default();
    // Per controller, the writes since its last reconcile start.
    let mut since_reconcile: BTreeMap<String, u32> = BTreeMap::new();
    for entry in entries {
        let node = &*entry.node;
        match &entry.event {
            TraceEvent::ApiRequest { call, verb, target } if *verb != "watch" => {
                if pending.len() >= PENDING_REQUESTS_MAX {
                    pending.pop_first();
                }
                pending.insert(*call, (node.to_owned(), *verb, target.clone()));
            }
            TraceEvent::ApiResponse { call, result } => {
                let Some((node, verb, target)) = pending.remove(call) else { continue };
                let rv = result.as_ref().ok().and_then(|rv| rv.parse::<u64>().ok());
                if WRITE_VERBS.contains(&verb) {
                    reading.note_controller(&node);
                    let position = since_reconcile.get_mut(&node).map_or(0, |n| {
                        *n += 1;
                        *n
                    });
                    let at_nanos = entry.at_nanos;
                    let index = reading.writes.len();
                    let revision = revisions.written(&mut reading.writes, index, verb, rv);
                    reading.writes.push(TracedWrite { node, verb, target, at_nanos, revision, position });
                } else if let Some(rv) = rv {
                    revisions.seen(&mut reading.writes, rv);
                }
            }
            TraceEvent::WatchDelivery { watch, kind, object, resource_version } => {
                let rv = resource_version.parse::<u64>().unwrap_or(0);
                revisions.seen(&mut reading.writes, rv);
                if matches!(*kind, "ADDED" | "MODIFIED" | "DELETED") && !ENGINE_NODES.contains(&node) {
                    reading.note_controller(node);
                    let delivery =
                        (node.to_owned(), watch.clone(), *kind, object.clone(), rv, entry.at_nanos);
                    reading.deliveries.push(delivery);
                }
            }
            TraceEvent::Note { text } if node == WORKLOAD_NODE && text.starts_with("step ") => {
                reading.steps.push(entry.at_nanos);
            }
            TraceEvent::ReconcileStart { controller, object } => {
                reading.note_controller(controller);
                since_reconcile.insert(controller.clone(), 0);
                reading.reconciles.push((controller.clone(), object.clone(), entry.at_nanos));
            }
            _ => {}
        }
    }
    revisions.end(&mut reading.writes);
    reading
}

/// Which revision each write made, read off the trace. Storage changes only through API calls,
/// and the engine traces each answer as the server applies the call, so the answers are in the
/// order of the revisions. A create, an update or a patch answers the revision it made. A delete
/// answers the object as it was last stored (as kube-apiserver does), and so does a write that
/// removes a deleting object's last finalizer: their revisions show only as the gap they leave
/// before the next revision the trace shows (an answer, a list, a delivery). Until then such a
/// write is unresolved; a gap shorter than the unresolved writes goes to the deletes first (an
/// update answered with an old revision is usually one that changed nothing).
#[derive(Default)]
struct Revisions {
    /// The newest revision seen so far.
    newest: u64,
    /// Writes answered without a newer revision, waiting for the next one to show the gap.
    unresolved: Vec<usize>,
}

impl Revisions {
    /// A write (to be pushed at `index`) answered `rv` (`None`: failed): the revision it made.
    fn written(
        &mut self,
        writes: &mut [TracedWrite],
        index: usize,
        verb: &str,
        rv: Option<u64>,
    ) -> Option<u64> {
        let rv = rv?;
        if rv > self.newest {
            // It made `rv`: the revisions before it in the gap are the unresolved writes'.
            self.resolve(writes, rv - 1);
            self.newest = rv;
            return Some(rv);
        }
        if verb != "create" {
            self.unresolved.push(index);
        }
        None
    }

    /// A revision shown otherwise (a list, a read, a delivery).
    fn seen(&mut self, writes: &mut [TracedWrite], rv: u64) {
        if rv > self.newest {
            self.resolve(writes, rv);
            self.newest = rv;
        }
    }

    /// The revisions after `newest` up to `upto` were made by unresolved writes, in their order.
    fn resolve(&mut self, writes: &mut [TracedWrite], upto: u64) {
        if self.unresolved.is_empty() {
            return;
        }
        let gap = usize::try_from(upto.saturating_sub(self.newest)).unwrap_or(usize::MAX);
        let is_delete = |i: &usize| writes[*i].verb.starts_with("delete");
        let mut chosen: Vec<usize> = self.unresolved.iter().copied().filter(is_delete).take(gap).collect();
        let others = self.unresolved.iter().copied().filter(|i| !is_delete(i));
        chosen.extend(others.take(gap.saturating_sub(chosen.len())));
        chosen.sort_unstable();
        for (k, i) in chosen.into_iter().enumerate() {
            writes[i].revision = Some(self.newest + 1 + k as u64);
        }
        self.unresolved.clear();
    }

    /// The end of the trace: an unresolved delete made the next revision (a delete that is
    /// answered changed something, unless the object was already being deleted).
    fn end(&mut self, writes: &mut [TracedWrite]) {
        let deletes = self.unresolved.iter().filter(|i| writes[**i].verb.starts_with("delete")).count();
        self.resolve(writes, self.newest + deletes as u64);
    }
}

/// The trigger time that lands strictly before `at_nanos` (the supervisor fires at whole
/// milliseconds; a tie with the site would leave the order to the scheduler).
fn ms_before(at_nanos: u64) -> u64 {
    at_nanos.saturating_sub(1) / 1_000_000
}

/// Resources that are not namespaced, among those controllers commonly write: their targets are
/// `resource/name`. Traces do not say a resource's scope, and `resource/x` is otherwise
/// `resource/namespace` (a create with generateName, which names no object yet).
const CLUSTER_SCOPED: [&str; 6] = [
    "namespaces",
    "nodes",
    "customresourcedefinitions",
    "persistentvolumes",
    "clusterroles",
    "clusterrolebindings",
];

/// `resource[/namespace][/name]` → (resource, `namespace/name`, `name`, or empty when the target
/// names no object).
fn split_target(target: &str) -> (&str, &str) {
    let (resource, rest) = target.split_once('/').unwrap_or((target, ""));
    let names_object = rest.contains('/') || (!rest.is_empty() && CLUSTER_SCOPED.contains(&resource));
    (resource, if names_object { rest } else { "" })
}

/// The points of a reference run's trace entries, in exploration order (see [`PointSet::points`]),
/// without a profile: every kind is assumed to act wherever the trace gives it a site.
pub fn injection_points_with(entries: &[TraceEntry], config: &PointConfig) -> PointSet {
    injection_points_profiled(entries, None, config)
}

/// [`injection_points_with`], keeping only the faults that can act by `profile` (when given).
pub fn injection_points_profiled(
    entries: &[TraceEntry],
    profile: Option<&Profile>,
    config: &PointConfig,
) -> PointSet {
    let reading = read(entries);
    let mut candidates: Vec<InjectionPoint> = Vec::new();
    let mut set = PointSet { controllers: reading.controllers.clone(), ..PointSet::default() };
    write_points(&reading, config, &mut set, &mut candidates);
    delivery_points(&reading, config, &mut candidates);
    reconcile_points(&reading, config, &mut candidates);
    transition_points(&reading, config, &mut candidates);
    outage_points(&reading, config, &mut candidates);
    if let Some(profile) = profile {
        node_outage_points(&reading, &profile.kube_nodes, config, &mut candidates);
    }
    if let Some(profile) = profile {
        let before = candidates.len();
        candidates.retain(|p| can_act(&p.fault.fault, profile));
        set.cannot_act = before - candidates.len();
    }
    order(&mut candidates);
    let mut planned: BTreeSet<PlannedFault> = BTreeSet::new();
    for point in candidates {
        if planned.insert(point.fault.clone()) {
            set.outages += usize::from(matches!(point.site, Site::Outage { .. } | Site::NodeOutage { .. }));
            set.points.push(point);
        } else {
            set.duplicates += 1;
        }
    }
    set
}

/// Exploration order, breadth-first over kinds of situation: a point whose fault and class (the
/// same kind of write at the same step of a reconcile, the same kind of event, ...) were already
/// planned at an earlier site waits for a later round, so that one round tries each distinct
/// situation once before repeating it on the next object. Crashes before a write and injected
/// errors come after everything else: a crash before a write is mostly a crash after the previous
/// one, and a failed call is mostly retried.
fn order(candidates: &mut [InjectionPoint]) {
    candidates.sort_by_key(|p| p.at_nanos);
    let mut seen: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut keyed: Vec<(u8, u32, u64, usize)> = Vec::with_capacity(candidates.len());
    for (i, point) in candidates.iter().enumerate() {
        let family = family(&point.fault.fault);
        let round = seen.entry((family.to_owned(), point.class.clone())).or_insert(0);
        keyed.push((tier(&point.fault.fault), *round, point.at_nanos, i));
        *round += 1;
    }
    keyed.sort_unstable();
    let sorted: Vec<InjectionPoint> = keyed.iter().map(|(_, _, _, i)| candidates[*i].clone()).collect();
    candidates.clone_from_slice(&sorted);
}

/// 0 for Sieve's fault families (intermediate, stale and unobserved states, ambiguity, leader
/// handover), 1 for crashes before a write and injected errors (as each kind says).
fn tier(fault: &Fault) -> u8 {
    crate::faults::ops(fault.kind()).point_tier(fault)
}

/// The fault's family, for ordering (each injected error is one; as each kind says).
fn family(fault: &Fault) -> String {
    crate::faults::ops(fault.kind()).point_family(fault)
}

/// Whether `fault` can act in a world that did `profile` (its kind's precondition).
fn can_act(fault: &Fault, profile: &Profile) -> bool {
    let ops = crate::faults::ops(fault.kind());
    match fault.controller() {
        Some(controller) => ops.cannot_act(&profile.of(controller)).is_none(),
        None => ops.cannot_act_in(profile).is_none(),
    }
}

/// The faults every kind plans at `site`, kind by kind in `POINT_ORDER`.
fn site_faults(site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
    crate::faults::POINT_ORDER
        .iter()
        .flat_map(|kind| crate::faults::ops(*kind).points(site, config))
        .collect()
}

fn write_points(reading: &Reading, config: &PointConfig, set: &mut PointSet, out: &mut Vec<InjectionPoint>) {
    // Numbered per node, verb and resource, failed ones included (as the engine counts).
    let mut counts: BTreeMap<(&str, &str, &str), u32> = BTreeMap::new();
    for write in &reading.writes {
        if ENGINE_NODES.contains(&write.node.as_str()) {
            continue;
        }
        let (resource, object) = split_target(&write.target);
        let n = counts.entry((write.node.as_str(), write.verb, resource)).or_insert(0);
        *n += 1;
        set.writes += 1;
        let Some(revision) = write.revision else {
            set.no_op_writes += 1;
            continue;
        };
        let site = Site::Write {
            controller: write.node.clone(),
            n: *n,
            verb: write.verb.to_owned(),
            resource: resource.to_owned(),
            target: write.target.clone(),
            revision,
        };
        let trigger = Trigger::NthWrite {
            controller: write.node.clone(),
            n: *n,
            kind: Some(resource.to_owned()),
            verb: Some(write.verb.to_owned()),
        };
        let class = format!("{} {} {} at step {}", write.node, write.verb, resource, write.position);
        for fault in site_faults(&PointSite::Write { controller: &write.node }, config) {
            out.push(InjectionPoint {
                site: site.clone(),
                at_nanos: write.at_nanos,
                fault: PlannedFault { trigger: trigger.clone(), fault },
                object: object.to_owned(),
                class: class.clone(),
            });
        }
    }
}

fn delivery_points(reading: &Reading, config: &PointConfig, out: &mut Vec<InjectionPoint>) {
    let made_at: BTreeMap<u64, u64> =
        reading.writes.iter().filter_map(|w| w.revision.map(|rv| (rv, w.at_nanos))).collect();
    for (node, watch, event, object, revision, at_nanos) in &reading.deliveries {
        // Land the fault just before the write that caused the event, so that the delay or hold
        // is in force when the informer pulls it.
        let cause = made_at.get(revision).copied().unwrap_or(*at_nanos);
        let trigger = Trigger::AtTime { at_ms: ms_before(cause) };
        let resource = watch.split('/').nth(1).unwrap_or("").to_owned();
        let site = Site::Delivery {
            controller: node.clone(),
            watch: watch.clone(),
            event: (*event).to_owned(),
            object: object.clone(),
            revision: *revision,
        };
        let class = format!("{node} {event} on {resource}");
        let faults = site_faults(&PointSite::Delivery { controller: node, resource: &resource }, config);
        for fault in faults {
            out.push(InjectionPoint {
                site: site.clone(),
                at_nanos: *at_nanos,
                fault: PlannedFault { trigger: trigger.clone(), fault },
                object: object.clone(),
                class: class.clone(),
            });
        }
    }
}

fn reconcile_points(reading: &Reading, config: &PointConfig, out: &mut Vec<InjectionPoint>) {
    let lease_writers: BTreeSet<&str> = reading
        .writes
        .iter()
        .filter(|w| split_target(&w.target).0 == LEASES)
        .map(|w| w.node.as_str())
        .collect();
    for (controller, described, at_nanos) in &reading.reconciles {
        let trigger = Trigger::AtTime { at_ms: ms_before(*at_nanos) };
        let site = Site::Reconcile { controller: controller.clone(), object: described.clone() };
        let (kind, object) = described.split_once(' ').unwrap_or(("", described.as_str()));
        let class = format!("{controller} reconciles {kind}");
        let leader_elected = lease_writers.contains(controller.as_str());
        let faults = site_faults(&PointSite::Reconcile { controller, leader_elected }, config);
        for fault in faults {
            out.push(InjectionPoint {
                site: site.clone(),
                at_nanos: *at_nanos,
                fault: PlannedFault { trigger: trigger.clone(), fault },
                object: object.to_owned(),
                class: class.clone(),
            });
        }
    }
}

/// How many of an object's transitions back a stale-state point's replica may reach: from just
/// before the transition right before the later change, or the one before that.
const STALE_TRANSITIONS_BACK: usize = 2;

/// Stale-state points, pruned to causally related transitions: a transition of an object that
/// changes again later, with the controller restarted at that later change onto a replica from
/// just before the first one (its view then misses both), for the object's next change and the
/// one after it (a view two changes behind can replay a state whose consequence the later change
/// already undid: a finalizer added, then the object deleted and the finalizer removed). A
/// transition that nothing changes again is not planned: a stale view of it differs from storage
/// only in that it is missing, which the earlier transition's point already shows.
fn transition_points(reading: &Reading, config: &PointConfig, out: &mut Vec<InjectionPoint>) {
    let transitions: Vec<(usize, &TracedWrite, u64, &str)> = reading
        .writes
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.revision.map(|rv| (i, w, rv, split_target(&w.target).1)))
        .filter(|(_, _, _, object)| !object.is_empty())
        .collect();
    // Each write's number among its node's writes of that verb and resource (as triggers count).
    let mut counts: BTreeMap<(&str, &str, &str), u32> = BTreeMap::new();
    let numbers: Vec<u32> = reading
        .writes
        .iter()
        .map(|w| {
            let n = counts.entry((w.node.as_str(), w.verb, split_target(&w.target).0)).or_insert(0);
            *n += 1;
            *n
        })
        .collect();
    let same_object = |a: &TracedWrite, b: &TracedWrite| a.target == b.target;
    for (i, (_, write, revision, object)) in transitions.iter().enumerate() {
        let later =
            transitions.iter().enumerate().skip(i + 1).filter(|(_, (_, w, _, _))| same_object(w, write));
        for (back, (j, (index, next, _, _))) in later.take(STALE_TRANSITIONS_BACK).enumerate() {
            let change = object_change(next.verb);
            let (resource, _) = split_target(&write.target);
            // The later change as an object trigger when it is that object's first change of its
            // kind (an `OnObject` trigger fires on the first one): it lands right after the
            // change however the run's timing shifts. Otherwise, a controller's write as its
            // numbered write (the fault fires once the server applied it), and anyone else's
            // just before it in time.
            let first_of_its_kind = !transitions[..j]
                .iter()
                .any(|(_, w, _, _)| same_object(w, next) && object_change(w.verb) == change);
            let (trigger, restart_from_nanos) = match object.split_once('/') {
                Some((namespace, name)) if first_of_its_kind => (
                    Trigger::OnObject {
                        kind: resource.to_owned(),
                        namespace: namespace.to_owned(),
                        name: name.to_owned(),
                        change,
                    },
                    next.at_nanos,
                ),
                _ if !ENGINE_NODES.contains(&next.node.as_str()) => (
                    Trigger::NthWrite {
                        controller: next.node.clone(),
                        n: numbers[*index],
                        kind: Some(resource.to_owned()),
                        verb: Some(next.verb.to_owned()),
                    },
                    next.at_nanos,
                ),
                _ => {
                    let at_ms = ms_before(next.at_nanos);
                    (Trigger::AtTime { at_ms }, at_ms.saturating_mul(1_000_000))
                }
            };
            let restart_nanos =
                restart_from_nanos.saturating_add(config.stale_restart_after_ms.saturating_mul(1_000_000));
            let newest_at_restart = reading
                .writes
                .iter()
                .filter(|w| w.at_nanos <= restart_nanos)
                .filter_map(|w| w.revision)
                .max()
                .unwrap_or(*revision);
            let lag_revisions = newest_at_restart.saturating_sub(revision - 1).max(1);
            let site = Site::Transition {
                by: write.node.clone(),
                target: write.target.clone(),
                revision: *revision,
            };
            let skipped = if back == 0 { String::new() } else { format!(" ({} changes later)", back + 1) };
            let class = format!("{} {} {} then {}{skipped}", write.node, write.verb, resource, next.verb);
            for controller in &reading.controllers {
                for fault in site_faults(&PointSite::Transition { controller, lag_revisions }, config) {
                    out.push(InjectionPoint {
                        site: site.clone(),
                        at_nanos: write.at_nanos,
                        fault: PlannedFault { trigger: trigger.clone(), fault },
                        object: (*object).to_owned(),
                        class: class.clone(),
                    });
                }
            }
        }
    }
}

/// Timed outages: for each controller and each workload step with a later one, from the
/// controller's first site (a reconcile start or a delivery to it) after that step, until after
/// one, two and three more steps (up to `outage_steps_max`): each of partition, held watches and
/// paused reconciles, as the kinds plan them. Durations come from the reference's step times: the
/// outage ends `outage_margin_ms_max` after the last step it spans (or halfway to the next step,
/// if sooner), so that the step's change lands while it is in force. Shorter spans come first.
fn outage_points(reading: &Reading, config: &PointConfig, out: &mut Vec<InjectionPoint>) {
    let steps = &reading.steps;
    for controller in &reading.controllers {
        let mut sites: Vec<u64> = reading
            .reconciles
            .iter()
            .filter(|(c, _, _)| c == controller)
            .map(|(_, _, at)| *at)
            .chain(reading.deliveries.iter().filter(|d| &d.0 == controller).map(|d| d.5))
            .collect();
        sites.sort_unstable();
        for (i, step_at) in steps.iter().enumerate() {
            let next = steps.get(i + 1).copied();
            // The controller's first site after this step, before the next one.
            let Some(start) = sites.iter().copied().find(|at| at > step_at && next.is_none_or(|n| *at < n))
            else {
                continue;
            };
            let at_ms = ms_before(start);
            for (span, duration_ms) in outage_spans(steps, i, at_ms, config) {
                let site = Site::Outage {
                    controller: controller.clone(),
                    from_step: i + 1,
                    steps: span,
                    duration_ms,
                };
                let class = format!("{controller} outage over {span} steps");
                let faults = site_faults(&PointSite::Outage { controller, duration_ms }, config);
                push_timed(out, &site, &class, (start, at_ms), faults);
            }
        }
    }
}

/// One point per fault of a timed site, each fired at `at_ms` (the site being at `at_nanos`).
fn push_timed(
    out: &mut Vec<InjectionPoint>,
    site: &Site,
    class: &str,
    (at_nanos, at_ms): (u64, u64),
    faults: Vec<Fault>,
) {
    for fault in faults {
        out.push(InjectionPoint {
            site: site.clone(),
            at_nanos,
            fault: PlannedFault { trigger: Trigger::AtTime { at_ms }, fault },
            object: String::new(),
            class: class.to_owned(),
        });
    }
}

/// The outages that start at `at_ms` after workload step `i` (0-based, of the reference's step
/// times `steps`): for each span of one to `outage_steps_max` further steps, the span and how
/// long the outage lasts, to `outage_margin_ms_max` after the span's last step (or halfway to the
/// step after it, if sooner).
fn outage_spans(steps: &[u64], i: usize, at_ms: u64, config: &PointConfig) -> Vec<(usize, u64)> {
    let margin_max = config.outage_margin_ms_max.saturating_mul(1_000_000);
    let mut spans = Vec::new();
    for span in 1..=config.outage_steps_max as usize {
        let Some(last) = steps.get(i + span).copied() else { break };
        let margin = steps.get(i + span + 1).map_or(margin_max, |after| margin_max.min((after - last) / 2));
        let end = last.saturating_add(margin);
        spans.push((span, end.saturating_sub(at_ms.saturating_mul(1_000_000)).div_ceil(1_000_000)));
    }
    spans
}

/// Lost Nodes: each of `nodes` (the Nodes of the reference run, from its profile) lost from 1 ms
/// after the first thing that follows each workload step with a later one (the step's write
/// answered, or a controller's first delivery or reconcile: what the step made then exists, and
/// the rest of the reaction to it happens while the Node is lost), over one, two and three more
/// steps (up to `outage_steps_max`), ending as a controller's timed outage ends
/// ([`outage_points`]). A trace alone does not say which Nodes there are: without a profile there
/// are none.
fn node_outage_points(
    reading: &Reading,
    nodes: &[String],
    config: &PointConfig,
    out: &mut Vec<InjectionPoint>,
) {
    let steps = &reading.steps;
    let mut sites: Vec<u64> = reading
        .reconciles
        .iter()
        .map(|(_, _, at)| *at)
        .chain(reading.deliveries.iter().map(|d| d.5))
        .chain(reading.writes.iter().map(|w| w.at_nanos))
        .collect();
    sites.sort_unstable();
    for node in nodes {
        for (i, step_at) in steps.iter().enumerate() {
            // Workload steps often follow one another at once: the first site may come after the
            // next step started.
            let Some(start) = sites.iter().copied().find(|at| at > step_at) else { continue };
            let at_ms = start / 1_000_000 + 1;
            for (span, duration_ms) in outage_spans(steps, i, at_ms, config) {
                let duration_ms = duration_ms.max(1);
                let site =
                    Site::NodeOutage { node: node.clone(), from_step: i + 1, steps: span, duration_ms };
                let class = format!("Node outage over {span} steps");
                let faults = site_faults(&PointSite::NodeOutage { node, duration_ms }, config);
                push_timed(out, &site, &class, (start, at_ms), faults);
            }
        }
    }
}

/// The change a write verb makes, as `OnObject` triggers name it. A write to an object whose
/// deletion started counts as a delete for the engine; the trace does not show that, so such a
/// trigger may not fire (and coverage then says so).
fn object_change(verb: &str) -> ObjectChange {
    match verb {
        "create" => ObjectChange::Create,
        "delete" | "deletecollection" => ObjectChange::Delete,
        _ => ObjectChange::Update,
    }
}
