//! The node lifecycle controller: taints Nodes by their conditions, as kube-controller-manager's
//! `node-lifecycle-controller` (`pkg/controller/nodelifecycle`), so that the scheduler keeps new
//! Pods off a Node that is not Ready, cordoned or under pressure, and the
//! [taint eviction controller](super::taint_eviction) empties a Node that stays not Ready.
//!
//! - **`NoSchedule` taints by condition** (`doNoScheduleTaintingPass`): `Ready=False` →
//!   `node.kubernetes.io/not-ready`, `Ready=Unknown` → `node.kubernetes.io/unreachable`,
//!   `MemoryPressure`, `DiskPressure`, `PIDPressure` or `NetworkUnavailable` `True` →
//!   `node.kubernetes.io/memory-pressure`, `disk-pressure`, `pid-pressure`,
//!   `network-unavailable`, and `spec.unschedulable` (a cordon) →
//!   `node.kubernetes.io/unschedulable`; each added when its cause appears and removed when it
//!   goes. Other taints are left alone.
//! - **`NoExecute` taints** (`processTaintBaseEviction`, `doNoExecuteTaintingPass`): a Node whose
//!   `Ready` is `False` gets `node.kubernetes.io/not-ready:NoExecute`, `Unknown`
//!   `node.kubernetes.io/unreachable:NoExecute` (swapped at once when the status moves between
//!   the two), at most one Node per zone every 10 s (`--node-eviction-rate` 0.1; the first at
//!   once); `Ready=True` removes both. A Node without a `Ready` condition is left alone.
//! - **Disruption** (`handleDisruption`, `ComputeZoneState`): Nodes are grouped by zone
//!   (`topology.kubernetes.io/region` and `zone`; those labelled
//!   `node.kubernetes.io/exclude-disruption` do not count). A zone is fully disrupted when none of
//!   its Nodes is Ready, partly when more than 2 and at least 55 % are not; a partly disrupted
//!   zone of fewer than 50 Nodes gets no new `NoExecute` taint (`--secondary-node-eviction-rate`
//!   applies only to larger ones). When every zone is fully disrupted (a one-Node cluster whose
//!   Node is not Ready above all), the controller assumes its own view is broken: it removes the
//!   `NoExecute` taints from every Node and adds none, so no Pod is evicted.
//! - **A Node just lost** (`Ready` moved from `True` to `Unknown`, what upstream itself writes
//!   when the kubelet goes silent): a `NodeNotReady` event on the Node ("Node `<name>` status is
//!   now: NodeNotReady"), and every Pod bound to it gets `Ready=False` (`MarkPodsNotReady`) with
//!   a `NodeNotReady` warning ("Node is not ready"), so its Services' endpoints drop them. The
//!   kubelet-lite leaves a lost Node's Pods alone ([`super::kubelet::is_lost`]): deleted, they
//!   stay `Terminating` until the Node is back or gone, as on a cluster.
//! - Added taints carry `timeAdded`. A taint write is a strategic merge patch of `spec.taints`
//!   with the resourceVersion read (`PatchNodeTaints`), so a stale cache gets 409 and retries.
//!
//! Where it differs:
//! - **No heartbeats.** Upstream marks a Node's conditions `Unknown` when its kubelet has not
//!   renewed its Lease or posted its status for 50 s (`--node-monitor-grace-period`). The
//!   kubelet-lite posts no heartbeats, and every simulated Node is taken as alive: a Node's
//!   conditions change only when the kubelet-lite, a workload or a test writes them. A status
//!   patch setting `Ready=Unknown` plays a lost Node, and is taken as upstream's own move (the
//!   Pods marked not Ready); upstream would also set the pressure conditions `Unknown`.
//! - It lists a lost Node's Pods from the server, where upstream reads its Pod cache.
//! - Upstream looks at every Node every 5 s (`--node-monitor-period`) and taints from a queue
//!   every 100 ms; this one acts on each Node change and waits for the rate limit with a requeue,
//!   so a world with nothing to do goes quiet. It also writes an added and a removed taint in one
//!   patch, where upstream's swap writes twice (add, then remove).
//! - No `RemovingNode` or `RegisteredNode` events; no metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, NodeCondition, ObjectReference, Pod, Taint};
use k8s_openapi::jiff::Timestamp;
use sim::api::{Api, ListParams, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::Store;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::{Error, has_code};
use super::events::{self, Recorder};
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (its name in kube-controller-manager).
pub const NODE: &str = "node-lifecycle-controller";
/// The component its events come from (upstream's recorder's).
pub const EVENT_COMPONENT: &str = "node-controller";
/// The reason of the events about a Node just lost and its Pods.
pub const NODE_NOT_READY: &str = "NodeNotReady";
/// The message of the event on each Pod of a Node just lost.
pub const POD_NOT_READY_MESSAGE: &str = "Node is not ready";
/// The taint of a Node whose `Ready` condition is `False`.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of a Node whose `Ready` condition is `Unknown`.
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The label that keeps a Node out of the disruption count.
pub const LABEL_EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";
/// How long a zone waits between two `NoExecute` taints (`--node-eviction-rate`, 0.1 a second).
pub const TAINT_INTERVAL: Duration = Duration::from_secs(10);
/// The share of not-Ready Nodes above which a zone is partly disrupted
/// (`--unhealthy-zone-threshold`).
pub const UNHEALTHY_ZONE_THRESHOLD: f64 = 0.55;
/// Zones smaller than this get no `NoExecute` taint while partly disrupted
/// (`--large-cluster-size-threshold`).
pub const LARGE_CLUSTER_THRESHOLD: usize = 50;

/// The `NoSchedule` taint of each condition status (`nodeConditionToTaintKeyStatusMap`).
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    ("Ready", "False", TAINT_NOT_READY),
    ("Ready", "Unknown", TAINT_UNREACHABLE),
    ("MemoryPressure", "True", "node.kubernetes.io/memory-pressure"),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    ("NetworkUnavailable", "True", "node.kubernetes.io/network-unavailable"),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// Add the node lifecycle controller to a world, on node [`NODE`].
pub fn node_lifecycle_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// When each zone may next have a Node tainted `NoExecute` (upstream's token bucket of one).
#[derive(Clone, Debug, Default)]
struct ZoneLimiters(Arc<Mutex<BTreeMap<Zone, Timestamp>>>);

impl ZoneLimiters {
    /// Take `zone`'s token at `now`; `Err(wait)` if the next one comes only after `wait`.
    fn take(&self, zone: &Zone, now: Timestamp) -> Result<(), Duration> {
        let mut next = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = next.get(zone)
            && let Ok(wait) = Duration::try_from(at.duration_since(now))
            && !wait.is_zero()
        {
            return Err(wait);
        }
        next.insert(zone.clone(), now.checked_add(TAINT_INTERVAL).unwrap_or(Timestamp::MAX));
        Ok(())
    }
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    nodes: Store<Node>,
    limiters: ZoneLimiters,
    /// Each Node's `Ready` status as last seen (upstream's `nodeHealthMap`).
    observed: Mutex<BTreeMap<String, String>>,
    recorder: Recorder,
}

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    // Any Node's change may change its zone's state, and so what every Node of the cluster needs.
    let (changed, any_changed) = mpsc::unbounded::<()>();
    let nodes =
        changes::informer(Api::<Node>::all(client.clone()), watcher::Config::default(), move |change| {
            if !matches!(change, Change::Synced) {
                let _ = changed.unbounded_send(());
            }
        });
    if nodes.wait_until_ready().await.is_err() {
        return;
    }
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, EVENT_COMPONENT),
        client,
        nodes: nodes.clone(),
        limiters: ZoneLimiters::default(),
        observed: Mutex::default(),
    });
    Controller::for_shared_stream(futures::stream::empty(), nodes)
        .reconcile_all_on(any_changed)
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A Node's zone (`GetZoneKey`): its region and zone labels, the beta ones if not set.
type Zone = (String, String);

fn zone_of(node: &Node) -> Zone {
    let labels = node.labels();
    let label =
        |ga: &str, beta: &str| labels.get(ga).or_else(|| labels.get(beta)).cloned().unwrap_or_default();
    (
        label("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
        label("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
    )
}

/// A zone's state (`ZoneState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Enough Nodes Ready.
    Normal,
    /// More than 2 Nodes and at least [`UNHEALTHY_ZONE_THRESHOLD`] of them not Ready.
    PartialDisruption,
    /// No Node Ready.
    FullDisruption,
}

/// `ComputeZoneState` from the zone's Nodes' `Ready` statuses. A Node without a `Ready`
/// condition (`None`: a Node a scenario declares without a status, whose Pods the kubelet-lite
/// runs) counts as Ready: upstream would mark it `Unknown` 60 s after its creation
/// (`--node-startup-grace-period`), but no simulated Node misses heartbeats.
pub fn zone_state(ready: &[Option<&str>]) -> ZoneState {
    let ready_nodes = ready.iter().filter(|r| matches!(**r, Some("True") | None)).count();
    let not_ready = ready.len() - ready_nodes;
    if ready_nodes == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && not_ready as f64 / ready.len() as f64 >= UNHEALTHY_ZONE_THRESHOLD {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

fn condition<'n>(node: &'n Node, type_: &str) -> Option<&'n NodeCondition> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// The status of `node`'s `Ready` condition, if it has one.
pub fn ready_status(node: &Node) -> Option<&str> {
    condition(node, "Ready").map(|c| c.status.as_str())
}

/// Every zone's state and the size it counts, from the Nodes in the cache.
fn zone_states(nodes: &[Arc<Node>]) -> BTreeMap<Zone, (ZoneState, usize)> {
    let mut zones: BTreeMap<Zone, Vec<Option<&str>>> = BTreeMap::new();
    for node in nodes.iter().filter(|n| !n.labels().contains_key(LABEL_EXCLUDE_DISRUPTION)) {
        zones.entry(zone_of(node)).or_default().push(ready_status(node));
    }
    zones.into_iter().map(|(zone, ready)| (zone, (zone_state(&ready), ready.len()))).collect()
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint { key: key.to_owned(), effect: effect.to_owned(), ..Taint::default() }
}

/// The `NoSchedule` taints `node`'s conditions and cordon call for.
pub fn condition_taints(node: &Node) -> Vec<Taint> {
    let mut taints: Vec<Taint> = CONDITION_TAINTS
        .iter()
        .filter(|(type_, status, _)| condition(node, type_).is_some_and(|c| c.status == *status))
        .map(|(_, _, key)| taint(key, "NoSchedule"))
        .collect();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        taints.push(taint(super::scheduler::TAINT_UNSCHEDULABLE, "NoSchedule"));
    }
    taints
}

/// Whether this controller owns `taint` as a `NoSchedule` taint by condition or cordon.
fn is_condition_taint(taint: &Taint) -> bool {
    taint.effect == "NoSchedule"
        && (taint.key == super::scheduler::TAINT_UNSCHEDULABLE
            || CONDITION_TAINTS.iter().any(|(_, _, key)| *key == taint.key))
}

fn has(taints: &[Taint], key: &str, effect: &str) -> bool {
    taints.iter().any(|t| t.key == key && t.effect == effect)
}

/// Sync one Node: its Pods marked not Ready if it was just lost, then its `NoSchedule` taints,
/// then its `NoExecute` one.
pub async fn reconcile(node: Arc<Node>, ctx: Arc<Context>) -> Result<Action, Error> {
    super::boxed(|| mark_if_lost(&node, &ctx)).await?;
    let current = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    let mut add: Vec<Taint> = Vec::new();
    let mut remove: Vec<Taint> = Vec::new();
    // `doNoScheduleTaintingPass`.
    let wanted = condition_taints(&node);
    add.extend(wanted.iter().filter(|t| !has(&current, &t.key, &t.effect)).cloned());
    remove.extend(
        current.iter().filter(|t| is_condition_taint(t) && !has(&wanted, &t.key, &t.effect)).cloned(),
    );
    // `processTaintBaseEviction` and `handleDisruption`.
    let mut requeue = None;
    if let Some(ready) = ready_status(&node) {
        let states = zone_states(&ctx.nodes.state());
        let all_fully_disrupted = states.values().all(|(state, _)| *state == ZoneState::FullDisruption);
        let (wanted, opposite) = match ready {
            "False" => (TAINT_NOT_READY, TAINT_UNREACHABLE),
            "Unknown" => (TAINT_UNREACHABLE, TAINT_NOT_READY),
            _ => ("", ""),
        };
        let reachable = wanted.is_empty() || (all_fully_disrupted && !states.is_empty());
        if reachable {
            // `markNodeAsReachable`.
            for key in [TAINT_NOT_READY, TAINT_UNREACHABLE] {
                if has(&current, key, "NoExecute") {
                    remove.push(taint(key, "NoExecute"));
                }
            }
        } else if has(&current, opposite, "NoExecute") {
            // Swapped at once, whatever the rate.
            if !has(&current, wanted, "NoExecute") {
                add.push(taint(wanted, "NoExecute"));
            }
            remove.push(taint(opposite, "NoExecute"));
        } else if !has(&current, wanted, "NoExecute") {
            let zone = zone_of(&node);
            let limited = match states.get(&zone) {
                Some((ZoneState::PartialDisruption, size)) => *size < LARGE_CLUSTER_THRESHOLD,
                _ => false,
            };
            if !limited {
                match ctx.limiters.take(&zone, sim::time::now()) {
                    Ok(()) => add.push(taint(wanted, "NoExecute")),
                    Err(wait) => requeue = Some(wait),
                }
            }
        }
    }
    if !add.is_empty() || !remove.is_empty() {
        write_taints(&ctx, &node, &current, add, &remove).await?;
    }
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}

/// Patch `node`'s taints: `remove` dropped (by key and effect), `add` appended with `timeAdded`,
/// conditional on the resourceVersion read (`SwapNodeControllerTaint`, `PatchNodeTaints`).
async fn write_taints(
    ctx: &Context,
    node: &Node,
    current: &[Taint],
    add: Vec<Taint>,
    remove: &[Taint],
) -> Result<(), Error> {
    let now = sim::time::now_k8s();
    let mut taints: Vec<Taint> =
        current.iter().filter(|t| !has(remove, &t.key, &t.effect)).cloned().collect();
    taints.extend(add.into_iter().map(|t| Taint { time_added: Some(now.clone()), ..t }));
    // No taint left: the field goes, as upstream's patch (made from two Nodes whose `taints`,
    // `omitempty`, encodes as absent) removes it; a Node never tainted has none either.
    let taints = if taints.is_empty() { serde_json::Value::Null } else { serde_json::json!(taints) };
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": node.resource_version() },
        "spec": { "taints": taints },
    });
    let api: Api<Node> = Api::all(ctx.client.clone());
    api.patch(&node.name_any(), &PatchParams::default(), &Patch::Strategic(&patch)).await?;
    Ok(())
}

/// When `node`'s `Ready` moved from `True` to `Unknown` since it was last seen (upstream's own
/// move, when the kubelet went silent): a `NodeNotReady` event, and every Pod on it marked not
/// Ready (`MarkPodsNotReady`). The move is remembered only once every Pod is marked, so a failed
/// write is tried again. A Node first seen is only remembered, as upstream's.
async fn mark_if_lost(node: &Node, ctx: &Context) -> Result<(), Error> {
    let name = node.name_any();
    let ready = ready_status(node).unwrap_or_default().to_owned();
    let previous = lock(&ctx.observed).get(&name).cloned();
    if previous.as_deref() == Some("True") && ready == "Unknown" {
        let reference = ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Node".to_owned()),
            name: Some(name.clone()),
            uid: node.uid(),
            ..ObjectReference::default()
        };
        let message = format!("Node {name} status is now: {NODE_NOT_READY}");
        events::normal(&ctx.recorder, &reference, NODE_NOT_READY, message).await;
        mark_pods_not_ready(&ctx.client, &ctx.recorder, &name).await?;
    }
    lock(&ctx.observed).insert(name, ready);
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `MarkPodsNotReady`: the `Ready` condition of every Pod bound to `node` set to `False` (its
/// transition time now, its reason and message kept), each written with the resourceVersion
/// read, with a `NodeNotReady` warning on the Pod. Read by a live list of the Node's Pods, where
/// upstream reads its Pod cache.
async fn mark_pods_not_ready(client: &sim::Client, recorder: &Recorder, node: &str) -> Result<(), Error> {
    let all: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let mut failed = None;
    for pod in all.list(&params).await?.items {
        let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        if !conditions.iter().any(|c| c.type_ == "Ready" && c.status != "False") {
            continue;
        }
        let Some(namespace) = pod.namespace() else { continue };
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": pod.resource_version() },
            "status": { "conditions": [
                { "type": "Ready", "status": "False", "lastTransitionTime": sim::time::now_k8s() },
            ] },
        });
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        match api.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => {
                let reference = events::reference(&pod);
                events::warning(recorder, &reference, NODE_NOT_READY, POD_NOT_READY_MESSAGE.to_owned()).await;
            }
            Err(e) if has_code(&e, 404) => {}
            Err(e) => failed = Some(e),
        }
    }
    failed.map_or(Ok(()), |e| Err(e.into()))
}
