//! The Pod garbage collector: force-deletes the Pods no kubelet will ever remove, those bound to
//! a Node that no longer exists above all, as kube-controller-manager's `pod-garbage-collector`
//! (`pkg/controller/podgc`). A Deployment whose Node is deleted gets its Pods back elsewhere, as
//! on a real cluster.
//!
//! - **Orphaned Pods** (upstream's `gcOrphaned`): a Pod bound (`spec.nodeName`) to a Node its
//!   Node cache does not hold puts that Node in quarantine for [`QUARANTINE`] (upstream's
//!   `quarantineTime`, 40 s), so that a Node only slow to show up in the cache, or deleted and
//!   registered again, keeps its Pods. Once the quarantine is over and the cache still lacks the
//!   Node, it is read from the server (upstream's `checkIfNodeExists`); found, it is quarantined
//!   again; gone (404), the Pod is marked and deleted as below, with the condition
//!   `DisruptionTarget=True`, reason [`REASON_DELETION_BY_POD_GC`], message
//!   [`MESSAGE_NODE_GONE`].
//! - **Terminating Pods that were never scheduled** (`gcUnscheduledTerminating`): a Pod being
//!   deleted without a `spec.nodeName` is marked and deleted as below. The API server deletes an
//!   unscheduled Pod at once (`model_apiserver`'s graceful deletion, as the real one), so such a
//!   Pod exists only while finalizers hold it: it ends `Failed` and goes with its last finalizer.
//! - **Terminating Pods on an out-of-service Node** (`gcTerminating`): a Pod being deleted whose
//!   Node is not Ready and has the taint [`TAINT_OUT_OF_SERVICE`] (how an operator says a Node is
//!   shut down for good) is marked and deleted as below, without waiting for its grace period.
//! - **Marking and deleting** (`markFailedAndDeletePodWithCondition`): a Pod that has not finished
//!   gets phase `Failed` (and the condition, if any) by a strategic merge patch of its status that
//!   carries its uid as a precondition (upstream's `PatchPodStatus`), so that no kubelet-less Pod
//!   stays `Running` for ever; then it is deleted with a grace period of 0.
//!
//! It reads Pods and Nodes from informer caches (upstream's listers). It syncs a Pod on its own
//! changes while it is being deleted or bound to a Node the cache lacks (no other Pod can be
//! collected), and every Pod the Pod cache places on a Node that changed (deleted, registered
//! again, tainted; [`super::changes`] sees every Node deletion, also those a relist finds).
//!
//! Where it differs:
//! - Upstream scans every Pod every 20 s (`gcCheckPeriod`); this one acts on events, and waits
//!   out a quarantine with a requeue, so that a world with nothing to collect goes quiet. So it
//!   acts as soon as it sees the cause where upstream waits for its next scan: an orphaned Pod
//!   goes 40 s after its Node's deletion reached the Node cache (upstream: 40 to 80 s).
//! - A quarantine ends when the Node shows up again, and starts afresh at its next disappearance;
//!   upstream's delaying queue keeps the first due time of a Node that disappeared, came back and
//!   disappeared again within 40 s. The server is asked once per Pod (upstream: once per Node and
//!   scan).
//! - The delete carries the Pod's uid as a precondition (upstream's sends none), so that a stale
//!   cache never force-deletes another Pod of the same name created since (a StatefulSet's
//!   replacement). A Pod replaced or gone meanwhile is no error.
//! - The terminated-Pod threshold (`gcTerminated`, `--terminated-pod-gc-threshold`, 12,500
//!   finished Pods by default, the oldest deleted beyond it) is left out: no simulated world comes
//!   near it, and counting finished Pods at every Pod change would cost every world for nothing.
//! - No metrics (`pod_gc_deleting_pods_total`). Upstream publishes no Events, nor does this.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use sim::api::{Api, DeleteParams, Patch, PatchParams, Preconditions, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, reflector, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::{Error, has_code};
use super::pod_state;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (the service account kube-controller-manager runs it as).
pub const NODE: &str = "pod-garbage-collector";
/// How long a Node missing from the cache is waited for before its Pods are deleted (upstream's
/// `quarantineTime`).
pub const QUARANTINE: Duration = Duration::from_secs(40);
/// The taint that marks a Node shut down for good (`v1.TaintNodeOutOfService`).
pub const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// The condition a Pod deleted for its Node's sake gets (`v1.DisruptionTarget`).
pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The reason of that condition.
pub const REASON_DELETION_BY_POD_GC: &str = "DeletionByPodGC";
/// The message of that condition for an orphaned Pod.
pub const MESSAGE_NODE_GONE: &str = "PodGC: node no longer exists";

/// Add the Pod garbage collector to a world, on node [`NODE`].
pub fn podgc_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// The Nodes in quarantine, by name, each with when its quarantine ends (upstream's delaying
/// `nodeQueue`). Shared by the reconciles and the Node cache's handler, on one node's tasks. It
/// holds at most one entry per Node name found missing, dropped when that Node shows up again.
#[derive(Clone, Debug, Default)]
pub struct Quarantine(Arc<Mutex<BTreeMap<String, Timestamp>>>);

impl Quarantine {
    /// How long `node`'s quarantine still lasts at `now`, starting it if it has none; `None` once
    /// it is over.
    pub fn remaining(&self, node: &str, now: Timestamp) -> Option<Duration> {
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let ends = *nodes.entry(node.to_owned()).or_insert_with(|| quarantine_end(now));
        // Not positive once over (a negative duration does not convert).
        Duration::try_from(ends.duration_since(now)).ok().filter(|left| !left.is_zero())
    }

    /// Quarantine `node` afresh from `now`: the server still has it.
    pub fn restart(&self, node: &str, now: Timestamp) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(node.to_owned(), quarantine_end(now));
    }

    /// `node` showed up: it is out of quarantine.
    pub fn release(&self, node: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(node);
    }
}

fn quarantine_end(now: Timestamp) -> Timestamp {
    now.checked_add(QUARANTINE).unwrap_or(Timestamp::MAX)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    /// The Node informer's cache (upstream's Node lister).
    nodes: Store<Node>,
    quarantine: Quarantine,
}

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let pods = reflector::informer(Api::<Pod>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial list reaches the filter.
    let pod_changes = pods.subscribe();
    let quarantine = Quarantine::default();
    let (node_changed, pods_of_changed_nodes) = mpsc::unbounded::<ObjectRef<Pod>>();
    let (cached_pods, released) = (pods.clone(), quarantine.clone());
    let nodes =
        changes::informer(Api::<Node>::all(client.clone()), watcher::Config::default(), move |change| {
            let node = match change {
                Change::Added(node) | Change::Updated { new: node, .. } => {
                    released.release(&node.name_any());
                    node
                }
                Change::Deleted(node) => node,
                Change::Synced => return,
            };
            for pod in pods_on(&cached_pods, &node.name_any()) {
                let _ = node_changed.unbounded_send(pod);
            }
        });
    // Upstream's `WaitForNamedCacheSync` of the Node lister: until then every Node is missing.
    if nodes.wait_until_ready().await.is_err() {
        return;
    }
    // Only the Pods one of the passes may apply to: a change of any other Pod changes nothing.
    let cached_nodes = nodes.clone();
    let candidates = pod_changes.filter(move |pod| futures::future::ready(is_candidate(pod, &cached_nodes)));
    Controller::for_shared_stream(candidates, pods)
        .reconcile_on(pods_of_changed_nodes)
        .run_limited_by(RateLimiter::default(), reconcile, Arc::new(Context { client, nodes, quarantine }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Whether a Pod may be collected, as far as the caches tell: it is being deleted, or bound to
/// a Node the cache does not hold.
fn is_candidate(pod: &Pod, nodes: &Store<Node>) -> bool {
    pod_state::is_terminating(pod)
        || pod_state::node_name(pod).is_some_and(|node| nodes.get(&ObjectRef::new(node)).is_none())
}

/// The Pods in the cache bound to Node `node`.
fn pods_on(pods: &Store<Pod>, node: &str) -> Vec<ObjectRef<Pod>> {
    pods.state_filter(|pod| pod_state::node_name(pod) == Some(node))
        .iter()
        .map(|pod| ObjectRef::from_obj(&**pod))
        .collect()
}

/// Whether `node` is shut down for good: not Ready and tainted [`TAINT_OUT_OF_SERVICE`]
/// (upstream's `!IsNodeReady && TaintKeyExists`).
pub fn is_out_of_service(node: &Node) -> bool {
    let ready = super::node_lifecycle::ready_status(node) == Some("True");
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|t| t.key == TAINT_OUT_OF_SERVICE));
    !ready && tainted
}

/// The condition an orphaned Pod gets.
pub fn node_gone_condition() -> PodCondition {
    PodCondition {
        type_: CONDITION_DISRUPTION_TARGET.to_owned(),
        status: "True".to_owned(),
        reason: Some(REASON_DELETION_BY_POD_GC.to_owned()),
        message: Some(MESSAGE_NODE_GONE.to_owned()),
        ..PodCondition::default()
    }
}

/// Sync one Pod: the one of upstream's passes that applies to it.
pub async fn reconcile(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, Error> {
    let Some(node) = pod_state::node_name(&pod) else {
        // `gcUnscheduledTerminating`.
        if pod_state::is_terminating(&pod) {
            mark_failed_and_delete(&pod, None, &ctx.client).await?;
        }
        return Ok(Action::await_change());
    };
    match ctx.nodes.get(&ObjectRef::new(node)) {
        // `gcTerminating`.
        Some(node) if pod_state::is_terminating(&pod) && is_out_of_service(&node) => {
            mark_failed_and_delete(&pod, None, &ctx.client).await?;
            Ok(Action::await_change())
        }
        Some(_) => Ok(Action::await_change()),
        None => super::boxed(|| gc_orphaned(&pod, node, &ctx)).await,
    }
}

/// A Pod whose Node the cache lacks (upstream's `gcOrphaned` and `discoverDeletedNodes`): wait
/// out the Node's quarantine, then ask the server for the Node, then delete the Pod.
async fn gc_orphaned(pod: &Pod, node: &str, ctx: &Context) -> Result<Action, Error> {
    let now = sim::time::now();
    if let Some(left) = ctx.quarantine.remaining(node, now) {
        return Ok(Action::requeue(left));
    }
    if Api::<Node>::all(ctx.client.clone()).get_opt(node).await?.is_some() {
        // Only the cache lacks it: quarantined again, as upstream's next scan would.
        tracing::debug!(node, "the node exists on the server; quarantining it again");
        ctx.quarantine.restart(node, sim::time::now());
        return Ok(Action::requeue(QUARANTINE));
    }
    tracing::debug!(pod = %pod.name_any(), node, "found orphaned Pod assigned to the Node, deleting");
    mark_failed_and_delete(pod, Some(node_gone_condition()), &ctx.client).await?;
    Ok(Action::await_change())
}

/// The strategic merge patch of a Pod's status that marks it `Failed` with `condition` (its
/// `lastTransitionTime` `now`, or kept from the Pod's condition of that type if the status is the
/// same, as `UpdatePodCondition`), and the Pod's uid as a precondition; `None` for a Pod that has
/// finished, which upstream leaves as it is.
pub fn failed_status_patch(
    pod: &Pod,
    condition: Option<PodCondition>,
    now: Time,
) -> Option<serde_json::Value> {
    if pod_state::is_finished(pod) {
        return None;
    }
    let mut status = serde_json::json!({ "phase": pod_state::PHASE_FAILED });
    if let Some(mut condition) = condition {
        let current = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
        let same = current
            .into_iter()
            .flatten()
            .find(|c| c.type_ == condition.type_ && c.status == condition.status);
        condition.last_transition_time =
            Some(same.and_then(|c| c.last_transition_time.clone()).unwrap_or(now));
        // A list merged by `type`: the patch names only this condition.
        status["conditions"] = serde_json::json!([condition]);
    }
    Some(serde_json::json!({ "metadata": { "uid": pod.uid() }, "status": status }))
}

/// Mark the Pod `Failed` unless it finished, then delete it with a grace period of 0 (upstream's
/// `markFailedAndDeletePodWithCondition`). A Pod gone or replaced meanwhile is no error.
async fn mark_failed_and_delete(
    pod: &Pod,
    condition: Option<PodCondition>,
    client: &sim::Client,
) -> Result<(), Error> {
    let name = pod.name_any();
    let namespace =
        pod.namespace().ok_or_else(|| Error::MissingNamespace { kind: "Pod", name: name.clone() })?;
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    tracing::debug!(pod = %format!("{namespace}/{name}"), "PodGC is force deleting Pod");
    if let Some(patch) = failed_status_patch(pod, condition, sim::time::now_k8s())
        && let Err(e) = api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await
    {
        // The uid precondition fails for a Pod replaced since the cache saw it.
        return if has_code(&e, 404) || replaced(&api, pod).await? { Ok(()) } else { Err(e.into()) };
    }
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions { uid: pod.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        // The uid precondition failed, or a fault's 409: done only if the name holds another Pod.
        Err(e) if has_code(&e, 409) && replaced(&api, pod).await? => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether the server no longer holds `pod` under its name: gone, or another Pod of that name.
async fn replaced(api: &Api<Pod>, pod: &Pod) -> Result<bool, Error> {
    Ok(api.get_opt(&pod.name_any()).await?.is_none_or(|current| current.uid() != pod.uid()))
}
