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
//! - Added taints carry `timeAdded`. A taint write is a strategic merge patch of `spec.taints`
//!   with the resourceVersion read (`PatchNodeTaints`), so a stale cache gets 409 and retries.
//!
//! Where it differs:
//! - **No heartbeats.** Upstream marks a Node's conditions `Unknown` when its kubelet has not
//!   renewed its Lease or posted its status for 50 s (`--node-monitor-grace-period`), and then
//!   marks its Pods not Ready (`MarkPodsNotReady`). The kubelet-lite posts no heartbeats, and
//!   every simulated Node is taken as alive: a Node's conditions change only when the
//!   kubelet-lite, a workload or a test writes them (`kubectl` or a status patch setting
//!   `Ready=Unknown` plays a lost Node).
//! - Upstream looks at every Node every 5 s (`--node-monitor-period`) and taints from a queue
//!   every 100 ms; this one acts on each Node change and waits for the rate limit with a requeue,
//!   so a world with nothing to do goes quiet. It also writes an added and a removed taint in one
//!   patch, where upstream's swap writes twice (add, then remove).
//! - No `NodeNotReady` or `RemovingNode` events, which come with the heartbeat pass; no metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::jiff::Timestamp;
use sim::api::{Api, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::Store;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::Error;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (its name in kube-controller-manager).
pub const NODE: &str = "node-lifecycle-controller";
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
    let ctx = Arc::new(Context { client, nodes: nodes.clone(), limiters: ZoneLimiters::default() });
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

/// `ComputeZoneState` from the zone's Nodes' `Ready` statuses (`None`: no condition).
pub fn zone_state(ready: &[Option<&str>]) -> ZoneState {
    let ready_nodes = ready.iter().filter(|r| **r == Some("True")).count();
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

fn ready_status(node: &Node) -> Option<&str> {
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

/// Sync one Node: its `NoSchedule` taints, then its `NoExecute` one.
pub async fn reconcile(node: Arc<Node>, ctx: Arc<Context>) -> Result<Action, Error> {
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
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": node.resource_version() },
        "spec": { "taints": taints },
    });
    let api: Api<Node> = Api::all(ctx.client.clone());
    api.patch(&node.name_any(), &PatchParams::default(), &Patch::Strategic(&patch)).await?;
    Ok(())
}
