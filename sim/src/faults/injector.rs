//! The injector: the per-run state that applies a [`FaultPlan`] to a running world.
//!
//! It is consulted at the points where faults act:
//! - [`before_call`] and [`after_call`], around every API call in the transport: counts writes for
//!   `NthWrite` triggers, draws `Rate` triggers, checks `OnObject` triggers after the server
//!   answered, fails calls (API errors, partitions), marks ambiguous writes and crashing nodes;
//! - [`watch_gate`], before an informer pulls watch events: holds them (partition, skip-by-relist,
//!   a lagging replica), adds delay, forces a relist or a re-watch;
//! - [`replica_list`](super::stale_replica::replica_list), when an informer lists: a restarted
//!   node on a lagging replica reads the past;
//! - [`reconcile_gate`](super::pause_reconciles::reconcile_gate), before a controller starts
//!   reconciles: pauses them.
//!
//! What one fault kind does when it fires lives in its own file ([`super::ops`] maps a kind to
//! it); this file holds what every kind shares: trigger matching, the per-node fault state the
//! gates read, and the queue of node actions.
//!
//! What needs a node of its own (killing and restarting nodes, pausing a leader, faults at a
//! virtual time) is queued here as a [`NodeAction`] and carried out by the
//! [supervisor](super::supervisor). Once the liveness phase begins ([`Injector::stop`]) nothing
//! new fires and every active fault ends.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use kube_core::{ApiResource, Status};
use model_apiserver::{Request, Response};

use crate::faults::api_error::injected_status;
use crate::faults::ctx::{FaultCtx, Host};
use crate::faults::delay_watch::{self, WatchDelay};
use crate::faults::hook::CallInfo;
use crate::faults::kind::{CallEffect, Firing};
use crate::faults::plan::{FaultKind, FaultPlan, InjectedError, ObjectChange, PlannedFault, Trigger};
use crate::faults::stale_replica::Replica;
use crate::faults::watch_disconnect;
use crate::trace::TraceEvent;

/// The decision stream `Rate` triggers draw from.
pub const RATE_STREAM: &str = "faults.rate";
pub use crate::faults::api_error::RETRY_AFTER_SECONDS;
pub use crate::faults::delay_watch::DELAY_STREAM;
pub use crate::faults::stale_replica::REPLICA_CATCH_UP_MS_MAX;
pub use crate::faults::watch_disconnect::REWATCH_DELAY_MS_MAX;

/// The decision stream a lagging replica's catch-up time and a re-watch's delay are drawn from.
pub const REPLICA_STREAM: &str = "faults.replica";
/// At most this many node actions wait for the supervisor; each fault firing queues at most one,
/// and the supervisor drains them at once, so reaching it means a runaway plan.
pub const ACTIONS_MAX: usize = 10_000;

/// Something only the supervisor's own node can do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NodeAction {
    /// Kill `node` and restart it after `restart_after`.
    Kill { node: Arc<str>, restart_after: Duration, reason: String },
    /// Pause the leader of `controller` for `duration`.
    PauseLeader { controller: Arc<str>, duration: Duration },
    /// Silence the kubelet of Node `node` (a Node object) for `duration`.
    LoseNode { node: Arc<str>, duration: Duration },
    /// The liveness phase began: restart every node that is down, resume every paused one.
    StopAll,
}

/// The fault state of one controller node: what the gates read, set by the kinds' `fire`.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeFaults {
    /// A crash fired: the node's calls pend until the supervisor kills it.
    pub(crate) dying: bool,
    /// Killed, waiting for its restart.
    pub(crate) down: bool,
    /// Calls fail and watches are held until then.
    pub(super) partitioned_until: Option<Duration>,
    /// No reconcile starts until then.
    pub(super) reconciles_paused_until: Option<Duration>,
    /// Watch deliveries are held until then.
    pub(super) watch_held_until: Option<Duration>,
    /// Bumped by SkipByRelist: every informer of the node relists after the hold.
    pub(super) relist_epoch: u64,
    /// Bumped by WatchDisconnect: every informer re-watches from its last revision.
    pub(super) disconnect_epoch: u64,
    /// DelayWatch faults in force (each fired fault, until it ends).
    pub(super) watch_delays: Vec<WatchDelay>,
    /// The next restart connects to a replica this many revisions behind.
    pub(super) stale_lag_next_restart: Option<u64>,
    /// The replica the node reads from since its last restart, if it lags.
    pub(crate) replica: Option<Replica>,
    /// API errors armed for the node's next calls (OnObject/AtTime triggers).
    pub(super) armed_errors: VecDeque<InjectedError>,
    /// Ambiguous answers armed for the node's next writes.
    pub(super) armed_ambiguous: u32,
}

/// What the current call is, as far as `OnObject` triggers care.
#[derive(Clone, Debug)]
struct CallObject {
    kind: String,
    plural: String,
    namespace: String,
    name: Option<String>,
    verb: &'static str,
}

/// The per-run fault state. Inert (no plan) by default.
#[derive(Default)]
pub(crate) struct Injector {
    plan: Vec<PlannedFault>,
    /// Per planned fault, how often it fired.
    fired: Vec<u32>,
    /// Per planned fault with an `NthWrite` trigger, the matching writes seen.
    writes_seen: Vec<u32>,
    has_on_object: bool,
    /// The liveness phase began: nothing fires any more.
    stopped: bool,
    pub(crate) nodes: BTreeMap<Arc<str>, NodeFaults>,
    actions: VecDeque<NodeAction>,
    supervisor: Option<Waker>,
    /// Calls whose answer becomes 504 Timeout although the server applied them.
    ambiguous_calls: Vec<u64>,
    /// The current call's object, captured only when the plan has `OnObject` triggers.
    call_object: Option<CallObject>,
    /// Tasks now waiting in a gate (a paused reconcile start, a held watch): the world is not quiet
    /// while one is, even after the liveness phase ended their faults.
    gated: u32,
    /// When a task last left a gate (a held watch released, a paused reconcile let start): what it
    /// was held from reaches it only now, so the quiet period starts over then, as after a write.
    released_at: Duration,
    /// Per replica node, its group (who leads a group is the model's to say: its Lease).
    groups: BTreeMap<Arc<str>, Arc<str>>,
    /// How many actions were dropped at [`ACTIONS_MAX`] (reported in the trace).
    pub(crate) actions_dropped: u64,
    /// Per node (a fault's controller, `engine` for world-wide faults), per kind: what fired
    /// faults of that kind did there (calls cut, pulls held or delayed, reconciles paused, lists
    /// served stale, watches expired), counted by the gates that do it.
    effects: BTreeMap<Arc<str>, BTreeMap<FaultKind, u64>>,
    /// Per planned fault: its node and kind's effect count when it first fired.
    effects_at_fire: Vec<Option<u64>>,
    /// The Nodes (Node objects) whose kubelet a `loseNode` fault silenced, by name: what their
    /// conditions said before, and when the kubelet is back (set and cleared by the supervisor).
    pub(crate) lost_nodes: BTreeMap<Arc<str>, (super::lose_node::Before, Duration)>,
}

impl Injector {
    /// An injector for `plan`.
    pub(crate) fn new(plan: &FaultPlan) -> Self {
        let len = plan.faults.len();
        Injector {
            plan: plan.faults.clone(),
            fired: vec![0; len],
            writes_seen: vec![0; len],
            effects_at_fire: vec![None; len],
            has_on_object: plan.faults.iter().any(|f| matches!(f.trigger, Trigger::OnObject { .. })),
            ..Injector::default()
        }
    }

    /// Whether there is anything to inject.
    pub(crate) fn is_active(&self) -> bool {
        !self.plan.is_empty() && !self.stopped
    }

    /// The plan.
    pub(crate) fn plan(&self) -> FaultPlan {
        FaultPlan { faults: self.plan.clone() }
    }

    /// The planned faults that never fired.
    pub(crate) fn unfired(&self) -> Vec<PlannedFault> {
        self.plan.iter().zip(&self.fired).filter(|(_, n)| **n == 0).map(|(f, _)| f.clone()).collect()
    }

    /// The `AtTime` triggers still to fire: (time, planned fault index), earliest first.
    pub(crate) fn timed(&self) -> Vec<(Duration, usize)> {
        let mut timed: Vec<(Duration, usize)> = self
            .plan
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f.trigger {
                Trigger::AtTime { at_ms } if self.fired[i] == 0 => Some((Duration::from_millis(at_ms), i)),
                _ => None,
            })
            .collect();
        timed.sort();
        timed
    }

    /// Register the supervisor's waker (woken when an action is queued).
    pub(crate) fn set_supervisor(&mut self, waker: &Waker) {
        if !self.supervisor.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.supervisor = Some(waker.clone());
        }
    }

    /// Whether an action waits for the supervisor.
    pub(crate) fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    /// Whether the liveness phase began.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Record that `node` is a replica of `group` (so that faults may name either).
    pub(crate) fn join_group(&mut self, group: &Arc<str>, node: &Arc<str>) {
        self.groups.insert(node.clone(), group.clone());
    }

    /// The replica group `name` names: the group of a replica node, or else `name` itself.
    pub(crate) fn group_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.groups.get(name).map_or(name, |group| &**group)
    }

    /// Queue an action for the supervisor (leader election uses it to restart a replica that lost
    /// its lease, as a process that exits is restarted).
    pub(crate) fn request(&mut self, action: NodeAction) {
        self.push_action(action);
    }

    /// The next queued action.
    pub(crate) fn next_action(&mut self) -> Option<NodeAction> {
        self.actions.pop_front()
    }

    pub(super) fn push_action(&mut self, action: NodeAction) {
        if self.actions.len() >= ACTIONS_MAX {
            self.actions_dropped += 1;
            return;
        }
        self.actions.push_back(action);
        if let Some(waker) = &self.supervisor {
            waker.wake_by_ref();
        }
    }

    /// The liveness phase began: nothing fires any more; partitions heal, pauses and holds end,
    /// replicas catch up, delays stop, and the supervisor restarts what is down.
    pub(crate) fn stop(&mut self) {
        self.stopped = true;
        for node in self.nodes.values_mut() {
            node.partitioned_until = None;
            node.reconciles_paused_until = None;
            node.watch_held_until = None;
            node.watch_delays.clear();
            node.stale_lag_next_restart = None;
            node.replica = None;
            node.armed_errors.clear();
            node.armed_ambiguous = 0;
        }
        self.ambiguous_calls.clear();
        if !self.plan.is_empty() {
            self.push_action(NodeAction::StopAll);
        }
    }

    /// Whether the node's calls should pend (a crash fired; the supervisor is about to kill it).
    pub(crate) fn is_dying(&self, node: &str) -> bool {
        self.nodes.get(node).is_some_and(|n| n.dying)
    }

    /// When a task last left a gate ([`Injector::released_at`]).
    pub(crate) fn released_at(&self) -> Duration {
        self.released_at
    }

    /// What keeps the world busy from the faults' side: a node down or about to be killed.
    pub(crate) fn busy(&self) -> Option<String> {
        if self.gated > 0 {
            return Some(format!("{} paused reconcile loops or held watches", self.gated));
        }
        if let Some(node) = self.lost_nodes.keys().next() {
            return Some(format!("Node {node} has lost its kubelet"));
        }
        self.nodes.iter().find(|(_, n)| n.down || n.dying).map(|(name, _)| format!("node {name} is down"))
    }

    /// A fault of `kind` acted on `node` (cut a call, held a pull, paused a reconcile, ...).
    pub(super) fn effect(&mut self, node: &str, kind: FaultKind) {
        if !self.effects.contains_key(node) {
            self.effects.insert(Arc::from(node), BTreeMap::new());
        }
        let kinds = self.effects.get_mut(node).expect("inserted above");
        *kinds.entry(kind).or_default() += 1;
    }

    fn effects_of(&self, node: &str, kind: FaultKind) -> u64 {
        self.effects.get(node).and_then(|k| k.get(&kind)).copied().unwrap_or(0)
    }

    /// The fault state of node `name` (created on first use).
    pub(super) fn node(&mut self, name: &str) -> &mut NodeFaults {
        if !self.nodes.contains_key(name) {
            self.nodes.insert(Arc::from(name), NodeFaults::default());
        }
        self.nodes.get_mut(name).expect("inserted above")
    }
}

/// Whether `filter` (a trigger's kind or a DelayWatch resource) names `resource`: its kind or its
/// plural, case-insensitively.
pub(super) fn names_resource(filter: &str, kind: &str, plural: &str) -> bool {
    filter.eq_ignore_ascii_case(kind) || filter.eq_ignore_ascii_case(plural)
}

/// The 504 a client sees when its request timed out on the way (partition, crash, lost answer).
pub(super) fn client_timeout(what: &str) -> Status {
    model_apiserver::errors::timeout(&format!(
        "the server was unable to return a response in the time allotted ({what})"
    ))
}

/// Fire planned fault `index`: record it in the trace and put it in force. `call` is the caller's
/// node when the trigger is an API call of that node (a crash then lands on the call).
fn fire(w: &mut FaultCtx<'_>, index: usize, call: Option<(&str, u64)>) -> CallEffect {
    let planned = w.injector.plan[index].clone();
    let now = w.elapsed();
    let fault = &planned.fault;
    let target: Arc<str> = Arc::from(fault.controller().unwrap_or("engine"));
    let on_caller = call.is_some_and(|(node, _)| Some(node) == fault.controller());
    if let Some(controller) = fault.controller() {
        // A node that is down or already dying cannot be faulted further: leave it unfired.
        if w.injector.nodes.get(controller).is_some_and(|n| n.down || n.dying) {
            return CallEffect::None;
        }
    }
    let ops = super::ops(fault.kind());
    if !ops.ready(w, fault) {
        return CallEffect::None;
    }
    w.injector.fired[index] += 1;
    if w.injector.effects_at_fire[index].is_none() {
        w.injector.effects_at_fire[index] = Some(w.injector.effects_of(&target, fault.kind()));
    }
    w.trace(&target, TraceEvent::Fault { description: planned.to_string() });
    let own_call = call.filter(|_| on_caller).map(|(_, call)| call);
    ops.fire(w, &Firing { planned: &planned, now, own_call })
}

/// At the end of the run: trace every fired fault that did nothing (its kind counts what it does,
/// and nothing was counted on its node since it fired), with the reason, so that no trace leaves
/// an idle fault looking as if it acted.
pub(crate) fn report_idle(w: &mut FaultCtx<'_>) {
    for index in 0..w.injector.plan.len() {
        let Some(before) = w.injector.effects_at_fire[index] else { continue };
        let planned = &w.injector.plan[index];
        let Some(reason) = super::ops(planned.fault.kind()).idle_reason(&planned.fault) else { continue };
        let target: Arc<str> = Arc::from(planned.fault.controller().unwrap_or("engine"));
        if w.injector.effects_of(&target, planned.fault.kind()) > before {
            continue;
        }
        let description = format!("fault plan #{} ({planned}) did nothing: {reason}", index + 1);
        w.trace(&target, TraceEvent::FaultEffect { description });
    }
}

/// Fire the `AtTime` fault `index` (called by the supervisor at its time).
pub(crate) fn fire_timed(w: &mut FaultCtx<'_>, index: usize) {
    if w.injector.stopped || w.injector.fired.get(index).is_none_or(|n| *n > 0) {
        return;
    }
    let _ = fire(w, index, None);
}

/// Before the request reaches the server: fire call triggers, then answer in the server's place
/// if a fault says so (`Some`: the request is not applied).
pub(crate) fn before_call(w: &mut FaultCtx<'_>, info: &CallInfo<'_>, request: &Request) -> Option<Status> {
    if !w.injector.is_active() {
        return None;
    }
    if w.injector.has_on_object && info.is_write {
        w.injector.call_object = Some(call_object(request));
    }
    let mut answer = None;
    for index in 0..w.injector.plan.len() {
        if !call_triggers(w, index, info, request) {
            continue;
        }
        match fire(w, index, Some((info.node, info.call))) {
            CallEffect::None => {}
            CallEffect::Fail(status) => answer = answer.or(Some(*status)),
            CallEffect::Ambiguous(call) => w.injector.ambiguous_calls.push(call),
        }
    }
    let now = w.elapsed();
    if w.injector.nodes.get(info.node).is_some_and(|n| n.partitioned_until.is_some_and(|until| now < until)) {
        w.injector.effect(info.node, FaultKind::Partition);
        return Some(client_timeout("network partition between the client and the API server"));
    }
    let Some(node) = w.injector.nodes.get_mut(info.node) else { return answer };
    if answer.is_none()
        && let Some(error) = node.armed_errors.pop_front()
    {
        answer = Some(injected_status(error));
    }
    if info.is_write && node.armed_ambiguous > 0 && answer.is_none() {
        node.armed_ambiguous -= 1;
        w.injector.ambiguous_calls.push(info.call);
    }
    answer
}

/// Whether planned fault `index` fires on this call (counts writes, draws rates).
fn call_triggers(w: &mut FaultCtx<'_>, index: usize, info: &CallInfo<'_>, request: &Request) -> bool {
    match &w.injector.plan[index].trigger {
        Trigger::NthWrite { controller, n, kind, verb } => {
            if !info.is_write || controller.as_str() != info.node {
                return false;
            }
            let kind_ok = kind
                .as_deref()
                .is_none_or(|k| names_resource(k, &request.resource.kind, &request.resource.plural));
            let verb_ok = verb.as_deref().is_none_or(|v| v.eq_ignore_ascii_case(info.verb));
            if !(kind_ok && verb_ok) {
                return false;
            }
            let n = *n;
            w.injector.writes_seen[index] += 1;
            w.injector.writes_seen[index] == n
        }
        Trigger::Rate { controller, per_mille, max } => {
            if controller.as_str() != info.node || w.injector.fired[index] >= *max {
                return false;
            }
            // Ambiguity and crashes only make sense on writes; API errors on any call.
            let needs_write = super::ops(w.injector.plan[index].fault.kind()).rate_needs_write();
            if needs_write && !info.is_write {
                return false;
            }
            let p = f64::from(*per_mille) / 1000.0;
            w.decisions.stream(RATE_STREAM).chance(p)
        }
        Trigger::OnObject { .. } | Trigger::AtTime { .. } => false,
    }
}

fn call_object(request: &Request) -> CallObject {
    use model_apiserver::Verb;
    let name = match &request.verb {
        Verb::Update { name, .. }
        | Verb::Patch { name, .. }
        | Verb::Delete { name, .. }
        | Verb::CreateSubresource { name, .. } => Some(name.clone()),
        Verb::Create { object, .. } => object.metadata.name.clone(),
        _ => None,
    };
    CallObject {
        kind: request.resource.kind.clone(),
        plural: request.resource.plural.clone(),
        namespace: request.namespace.clone().unwrap_or_default(),
        name,
        verb: request.verb_name(),
    }
}

/// After the server answered: make the answer ambiguous if a fault said so, and fire the
/// `OnObject` triggers the write satisfied.
pub(crate) fn after_call(w: &mut FaultCtx<'_>, info: &CallInfo<'_>, result: &mut Result<Response, Status>) {
    if w.injector.plan.is_empty() {
        return;
    }
    if let Some(pos) = w.injector.ambiguous_calls.iter().position(|c| *c == info.call) {
        w.injector.ambiguous_calls.swap_remove(pos);
        *result = Err(client_timeout("the answer was lost after the server applied the write"));
    }
    let Some(object) = w.injector.call_object.take() else { return };
    if w.injector.stopped {
        return;
    }
    let Ok(response) = &*result else {
        // An ambiguous write was applied although the caller sees an error; its object's change
        // still happened, but we only know the name for writes that named it.
        return;
    };
    let (name, change) = match response {
        Response::Object(o) => {
            let change = match object.verb {
                "create" => ObjectChange::Create,
                _ if o.metadata.deletion_timestamp.is_some() => ObjectChange::Delete,
                _ => ObjectChange::Update,
            };
            (o.metadata.name.clone().or(object.name.clone()), change)
        }
        Response::Deleted { object: o, .. } => (o.metadata.name.clone(), ObjectChange::Delete),
        // A binding's write: the pod is updated.
        Response::Completed { object: o, .. } => (o.metadata.name.clone(), ObjectChange::Update),
        Response::List(_) | Response::Watch(_) => (None, ObjectChange::Delete),
    };
    let Some(name) = name else { return };
    for index in 0..w.injector.plan.len() {
        let matches = match &w.injector.plan[index].trigger {
            Trigger::OnObject { kind, namespace, name: n, change: c } => {
                names_resource(kind, &object.kind, &object.plural)
                    && *namespace == object.namespace
                    && *n == name
                    && *c == change
            }
            _ => false,
        };
        if matches && w.injector.fired[index] == 0 {
            let _ = fire(w, index, Some((info.node, info.call)));
        }
    }
}

/// What an informer remembers of its node's fault epochs, to notice a forced relist or a cut.
#[derive(Clone, Debug, Default)]
pub(crate) struct WatchEpochs {
    relist: u64,
    disconnect: u64,
    /// Listed from a lagging replica: its watch is held until the replica catches up.
    replica_until: Option<Duration>,
}

impl WatchEpochs {
    /// The node's epochs now (a new informer owes nothing to earlier faults).
    pub(crate) fn current(host: &impl Host, node: &str) -> Self {
        host.with_faults(|w| match w.injector.nodes.get(node) {
            Some(n) => {
                WatchEpochs { relist: n.relist_epoch, disconnect: n.disconnect_epoch, replica_until: None }
            }
            None => WatchEpochs::default(),
        })
    }
}

impl WatchEpochs {
    /// The informer just listed; `until` is when the lagging replica it listed from catches up.
    pub(crate) fn listed_from_replica(&mut self, until: Option<Duration>) {
        self.replica_until = until;
    }
}

/// Counts a task waiting in a gate for as long as it lives (a killed node drops it mid-wait).
pub(super) struct Gated<H: Host>(H);

impl<H: Host> Gated<H> {
    /// Count one more task waiting in a gate.
    pub(super) fn enter(host: &H) -> Self {
        host.with_faults(|w| w.injector.gated += 1);
        Gated(host.clone())
    }
}

impl<H: Host> Drop for Gated<H> {
    fn drop(&mut self) {
        self.0.with_faults(|w| {
            w.injector.gated -= 1;
            w.injector.released_at = w.injector.released_at.max(w.elapsed());
        });
    }
}

/// What the informer does after [`watch_gate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Pull events as usual.
    Pull,
    /// The watch expired (410): relist.
    Relist,
    /// The watch was cut and ends (only for [`OnCut::End`]).
    Cut,
}

/// What a watch does when its node's watches are cut (`watchDisconnect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnCut {
    /// Wait a reconnect, then pull again from the same revision: a watcher re-watches from the
    /// last revision it saw, as client-go's reflector and kube-runtime's watcher do.
    Rewatch,
    /// End: a raw `Api::watch` stream ends with its HTTP response, and its caller re-watches.
    End,
}

/// At most this many hold rounds per gate: each round sleeps until a hold ends, and holds are
/// set by fired faults, which are finite.
const GATE_ROUNDS_MAX: usize = 64;

/// Before an informer pulls watch events: wait out holds (partition, skip-by-relist, a lagging
/// replica), a cut watch's reconnect (or end it, as `on_cut` says) and any extra delay; say
/// whether to relist instead.
pub(crate) async fn watch_gate(
    host: &impl Host,
    node: &Arc<str>,
    resource: &ApiResource,
    informer: &Arc<str>,
    epochs: &mut WatchEpochs,
    on_cut: OnCut,
) -> Gate {
    for _ in 0..GATE_ROUNDS_MAX {
        let step = host.with_faults(|w| gate_step(w, node, resource, informer, epochs, on_cut));
        match step {
            GateStep::Sleep(d, note) => {
                if let Some(text) = note {
                    host.with_faults(|w| w.trace(node, TraceEvent::Note { text }));
                }
                let _gated = Gated::enter(host);
                madsim::time::sleep(d).await;
            }
            GateStep::Delay(d) => {
                let _gated = Gated::enter(host);
                madsim::time::sleep(d).await;
                return Gate::Pull;
            }
            GateStep::Relist => {
                let text = format!("watch {informer} expired (410) after a held watch: relist");
                host.with_faults(|w| w.trace(node, TraceEvent::Note { text }));
                return Gate::Relist;
            }
            GateStep::Cut => {
                let text = format!("watch {informer} cut: the stream ends");
                host.with_faults(|w| w.trace(node, TraceEvent::Note { text }));
                return Gate::Cut;
            }
            GateStep::Pull => return Gate::Pull,
        }
    }
    Gate::Pull
}

enum GateStep {
    /// Wait, then look again (a hold, a reconnect).
    Sleep(Duration, Option<String>),
    /// Wait, then pull (an extra delay applies once per pull).
    Delay(Duration),
    Relist,
    /// The watch was cut and ends ([`OnCut::End`]).
    Cut,
    Pull,
}

fn gate_step(
    w: &mut FaultCtx<'_>,
    node_name: &Arc<str>,
    resource: &ApiResource,
    informer: &Arc<str>,
    epochs: &mut WatchEpochs,
    on_cut: OnCut,
) -> GateStep {
    let now = w.elapsed();
    if let Some(until) = epochs.replica_until {
        if now < until && !w.injector.stopped {
            return GateStep::Sleep(until - now, None);
        }
        epochs.replica_until = None;
    }
    let FaultCtx { injector, decisions, .. } = w;
    let Some(node) = injector.nodes.get_mut(&**node_name) else { return GateStep::Pull };
    let in_force = |until: Option<Duration>| until.filter(|until| now < *until);
    let (held, partitioned) = (in_force(node.watch_held_until), in_force(node.partitioned_until));
    if let Some(until) = held.max(partitioned) {
        let by = if partitioned.is_some() { FaultKind::Partition } else { FaultKind::SkipByRelist };
        injector.effect(node_name, by);
        return GateStep::Sleep(until - now, None);
    }
    if node.relist_epoch != epochs.relist {
        epochs.relist = node.relist_epoch;
        epochs.disconnect = node.disconnect_epoch;
        injector.effect(node_name, FaultKind::SkipByRelist);
        return GateStep::Relist;
    }
    if node.disconnect_epoch != epochs.disconnect {
        epochs.disconnect = node.disconnect_epoch;
        if on_cut == OnCut::End {
            injector.effect(node_name, FaultKind::WatchDisconnect);
            return GateStep::Cut;
        }
        let (delay, text) = watch_disconnect::rewatch(decisions, informer);
        injector.effect(node_name, FaultKind::WatchDisconnect);
        return GateStep::Sleep(delay, Some(text));
    }
    let extra = delay_watch::pull_delay_ms(&mut node.watch_delays, now, informer, resource, decisions);
    if extra > 0 {
        injector.effect(node_name, FaultKind::DelayWatch);
        // Only the pull is delayed: the events of one watch keep their order, while informers
        // with different delays drift apart.
        return GateStep::Delay(Duration::from_millis(extra));
    }
    GateStep::Pull
}
