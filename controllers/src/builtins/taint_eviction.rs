//! The taint eviction controller: deletes the Pods bound to a Node with a `NoExecute` taint they
//! do not tolerate, at once, and those that tolerate it for a while (`tolerationSeconds`) once
//! that while is over, as kube-controller-manager's `taint-eviction-controller`
//! (`pkg/controller/tainteviction`). So `kubectl taint nodes node-1 key=value:NoExecute` empties
//! the Node as on a real cluster, and a Node the [node lifecycle controller](super::node_lifecycle)
//! taints `not-ready` or `unreachable` loses its Pods after the 300 s that kube-apiserver's
//! `DefaultTolerationSeconds` admission gives them.
//!
//! - **When**: a Pod is synced when it is added, and when its tolerations or its Node change,
//!   if its Node has `NoExecute` taints or it has an eviction (upstream's `PodUpdated` filter and
//!   `taintedNodes`), and when the `NoExecute` taints of its Node change (`NodeUpdated`). A Pod
//!   on a Node without `NoExecute` taints has its scheduled eviction cancelled.
//! - **What**: every `NoExecute` taint of the Node must be tolerated (`GetMatchingTolerations`),
//!   or the Pod is evicted now. Tolerated, it is evicted after the smallest `tolerationSeconds`
//!   of the tolerations used (none: never; zero or less: now), counted from when the eviction was
//!   first scheduled: a later sync keeps a scheduled eviction as it is.
//! - **How** (`deletePodHandler`): a `TaintManagerEviction` event "Marking for deletion Pod
//!   `<namespace>/<name>`", then the Pod is read from the server, given the condition
//!   `DisruptionTarget=True` (reason [`REASON_DELETION_BY_TAINT_MANAGER`], message
//!   [`MESSAGE_TAINT_MANAGER`]) by a strategic merge patch of its status with its uid as a
//!   precondition, and deleted with its own grace period. Up to 5 attempts, 10 ms apart; after
//!   that the eviction is dropped until the Pod's or the Node's next change, as upstream's.
//!   Cancelling a scheduled eviction (the taint removed, a toleration added, the Pod deleted
//!   first) publishes "Cancelling deletion of Pod `<namespace>/<name>`".
//!
//! Pods are read from an informer cache (upstream's Pod lister), Nodes too. Every Pod on a
//! tainted Node counts, a finished or terminating one too, as upstream's.
//!
//! Where it differs: upstream's eight workers hash Pods by Node and handle a Node's update
//! before a Pod's; here one controller syncs Pods one at a time with kube-runtime's scheduler.
//! Its queue is keyed by `namespace/name`, as upstream's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, PodCondition, Taint, Toleration};
use k8s_openapi::jiff::Timestamp;
use sim::api::{Api, DeleteParams, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::{Error, has_code};
use super::events::{self, Recorder};
use super::pod_state;
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::scheduler::tolerates;

/// The controller's node (its name in kube-controller-manager).
pub const NODE: &str = "taint-eviction-controller";
/// The reason of the `DisruptionTarget` condition an evicted Pod gets.
pub const REASON_DELETION_BY_TAINT_MANAGER: &str = "DeletionByTaintManager";
/// The message of that condition.
pub const MESSAGE_TAINT_MANAGER: &str = "Taint manager: deleting due to NoExecute taint";
/// The reason of the events it publishes.
pub const EVENT_REASON: &str = "TaintManagerEviction";
/// Attempts at one eviction (upstream's `retries`), [`RETRY_PAUSE`] apart.
pub const ATTEMPTS: usize = 5;
/// The pause between two attempts.
pub const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// Add the taint eviction controller to a world, on node [`NODE`].
pub fn taint_eviction_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// A Pod's eviction, as upstream's timed worker queue holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eviction {
    /// Scheduled, due at `due`.
    Scheduled { due: Timestamp },
    /// Done: kept so that the Pod is not evicted twice, until the Pod is gone.
    Done,
}

/// The evictions by Pod (`namespace`, `name`), shared by the syncs and the Pod cache's handler.
#[derive(Clone, Debug, Default)]
struct Evictions(Arc<Mutex<BTreeMap<(String, String), Eviction>>>);

impl Evictions {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Eviction>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, key: &(String, String)) -> Option<Eviction> {
        self.lock().get(key).copied()
    }

    fn set(&self, key: (String, String), eviction: Eviction) {
        self.lock().insert(key, eviction);
    }

    /// Drop `key`'s eviction; whether a scheduled one was cancelled (upstream's `CancelWork`).
    fn cancel(&self, key: &(String, String)) -> bool {
        matches!(self.lock().remove(key), Some(Eviction::Scheduled { .. }))
    }
}

/// The Nodes with `NoExecute` taints, by name (upstream's `taintedNodes`), kept by the Node
/// cache's handler: a Pod change elsewhere needs no sync.
#[derive(Clone, Debug, Default)]
struct TaintedNodes(Arc<Mutex<BTreeSet<String>>>);

impl TaintedNodes {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    nodes: Store<Node>,
    evictions: Evictions,
    recorder: Recorder,
}

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let recorder = events::recorder(&client, NODE);
    let evictions = Evictions::default();
    let tainted = TaintedNodes::default();
    let (requests, requested) = mpsc::unbounded::<ObjectRef<Pod>>();
    let pods = {
        let (requests, evictions, recorder) = (requests.clone(), evictions.clone(), recorder.clone());
        // Only a Pod on a tainted Node, or with an eviction, may need a sync.
        let (tainted, known) = (tainted.clone(), evictions.clone());
        let concerned = move |pod: &Pod| {
            pod_state::node_name(pod).is_some_and(|node| tainted.lock().contains(node))
                || known.get(&key_of(pod)).is_some()
        };
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            match change {
                Change::Added(pod) => {
                    if concerned(&pod) {
                        let _ = requests.unbounded_send(ObjectRef::from_obj(&*pod));
                    }
                }
                Change::Updated { old, new } => {
                    if placement(&old) != placement(&new) && concerned(&new) {
                        let _ = requests.unbounded_send(ObjectRef::from_obj(&*new));
                    }
                }
                // Gone: its scheduled eviction with it.
                Change::Deleted(pod) => {
                    let key = key_of(&pod);
                    if evictions.cancel(&key) {
                        let recorder = recorder.clone();
                        madsim::task::spawn_local(async move { cancelled_event(&recorder, &key).await });
                    }
                }
                Change::Synced => {}
            }
        })
    };
    let nodes = {
        let (cached_pods, requests, evictions) = (pods.clone(), requests.clone(), evictions.clone());
        changes::informer(Api::<Node>::all(client.clone()), watcher::Config::default(), move |change| {
            let node = match change {
                Change::Added(node) => node,
                Change::Updated { old, new } if no_execute_taints(&old) != no_execute_taints(&new) => new,
                // A deleted Node's scheduled evictions stay, as upstream's.
                Change::Deleted(node) => {
                    tainted.lock().remove(&node.name_any());
                    return;
                }
                Change::Updated { .. } | Change::Synced => return,
            };
            let name = node.name_any();
            let untainted = no_execute_taints(&node).is_empty();
            if untainted {
                tainted.lock().remove(&name);
            } else {
                tainted.lock().insert(name.clone());
            }
            // Untainted, only the Pods with an eviction to cancel need a sync.
            let on_node = cached_pods.state_filter(|pod| {
                pod_state::node_name(pod) == Some(name.as_str())
                    && (!untainted || evictions.get(&key_of(pod)).is_some())
            });
            for pod in on_node {
                let _ = requests.unbounded_send(ObjectRef::from_obj(&*pod));
            }
        })
    };
    // Upstream's `WaitForNamedCacheSync` of both listers.
    if pods.wait_until_ready().await.is_err() || nodes.wait_until_ready().await.is_err() {
        return;
    }
    Controller::for_shared_stream(futures::stream::empty(), pods)
        .reconcile_on(requested)
        .run_limited_by(
            RateLimiter::default(),
            reconcile,
            Arc::new(Context { client, nodes, evictions, recorder }),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// What of a Pod decides its eviction: its tolerations and its Node (upstream's `PodUpdated`
/// compares these two).
fn placement(pod: &Pod) -> Option<(&Option<Vec<Toleration>>, &Option<String>)> {
    pod.spec.as_ref().map(|s| (&s.tolerations, &s.node_name))
}

/// A Pod's key: its namespace and name.
fn key_of(pod: &Pod) -> (String, String) {
    (pod.namespace().unwrap_or_default(), pod.name_any())
}

/// A Node's `NoExecute` taints (`getNoExecuteTaints`).
pub fn no_execute_taints(node: &Node) -> Vec<&Taint> {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    taints.iter().filter(|t| t.effect == "NoExecute").collect()
}

/// `GetMatchingTolerations`: for each taint the first toleration that tolerates it; `None` if
/// one taint is not tolerated.
pub fn matching_tolerations<'t>(
    taints: &[&Taint],
    tolerations: &'t [Toleration],
) -> Option<Vec<&'t Toleration>> {
    taints.iter().map(|taint| tolerations.iter().find(|t| tolerates(t, taint))).collect()
}

/// `getMinTolerationTime`: the smallest `tolerationSeconds` of `used` (zero for none used, or
/// for one of zero or less); `None` when every one tolerates for ever.
pub fn min_toleration_time(used: &[&Toleration]) -> Option<Duration> {
    if used.is_empty() {
        return Some(Duration::ZERO);
    }
    let seconds = used.iter().filter_map(|t| t.toleration_seconds).min()?;
    Some(Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
}

/// Sync one Pod (upstream's `handlePodUpdate` and `processPodOnNode`).
pub async fn reconcile(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, Error> {
    let Some(node_name) = pod_state::node_name(&pod) else { return Ok(Action::await_change()) };
    let key = key_of(&pod);
    let now = sim::time::now();
    let Some(node) = ctx.nodes.get(&ObjectRef::new(node_name)) else {
        // A Node the cache does not hold (deleted): upstream knows no taints for it and leaves
        // the Pod as it is, but an eviction already scheduled still comes.
        return match ctx.evictions.get(&key) {
            Some(Eviction::Scheduled { due }) => evict_when_due(&ctx, &key, due, now).await,
            _ => Ok(Action::await_change()),
        };
    };
    let taints = no_execute_taints(&node);
    if taints.is_empty() {
        cancel(&ctx, &key).await;
        return Ok(Action::await_change());
    }
    let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    let due = match matching_tolerations(&taints, tolerations) {
        // Not all tolerated: evicted now, whatever was scheduled.
        None => {
            cancel(&ctx, &key).await;
            now
        }
        Some(used) => match min_toleration_time(&used) {
            None => {
                cancel(&ctx, &key).await;
                return Ok(Action::await_change());
            }
            // A scheduled eviction is kept as it is (upstream compares the new due time from
            // when it was scheduled, which is never later).
            Some(wait) => match ctx.evictions.get(&key) {
                Some(Eviction::Scheduled { due }) => due,
                Some(Eviction::Done) => return Ok(Action::await_change()),
                None => now.checked_add(wait).unwrap_or(Timestamp::MAX),
            },
        },
    };
    match ctx.evictions.get(&key) {
        Some(Eviction::Done) => return Ok(Action::await_change()),
        Some(Eviction::Scheduled { .. }) => {}
        None => ctx.evictions.set(key.clone(), Eviction::Scheduled { due }),
    }
    evict_when_due(&ctx, &key, due, now).await
}

/// Evict `key` if `due` has come, else look again then.
async fn evict_when_due(
    ctx: &Context,
    key: &(String, String),
    due: Timestamp,
    now: Timestamp,
) -> Result<Action, Error> {
    if let Ok(left) = Duration::try_from(due.duration_since(now))
        && !left.is_zero()
    {
        return Ok(Action::requeue(left));
    }
    super::boxed(|| evict(ctx, key)).await;
    Ok(Action::await_change())
}

/// Cancel `key`'s scheduled eviction, with upstream's event if there was one.
async fn cancel(ctx: &Context, key: &(String, String)) {
    if ctx.evictions.cancel(key) {
        cancelled_event(&ctx.recorder, key).await;
    }
}

/// The reference upstream's events give: the Pod's kind, namespace and name.
fn pod_reference((namespace, name): &(String, String)) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(name.clone()),
        namespace: Some(namespace.clone()),
        ..ObjectReference::default()
    }
}

async fn cancelled_event(recorder: &Recorder, key: &(String, String)) {
    let message = format!("Cancelling deletion of Pod {}/{}", key.0, key.1);
    events::normal(recorder, &pod_reference(key), EVENT_REASON, message).await;
}

/// The eviction itself (upstream's `deletePodHandler`): the event, then up to [`ATTEMPTS`] at
/// marking and deleting the Pod. Done, it is kept as done; failed, it is dropped.
async fn evict(ctx: &Context, key: &(String, String)) {
    let message = format!("Marking for deletion Pod {}/{}", key.0, key.1);
    events::normal(&ctx.recorder, &pod_reference(key), EVENT_REASON, message).await;
    for attempt in 1..=ATTEMPTS {
        match mark_and_delete(&ctx.client, key).await {
            Ok(()) => {
                // Unless the Pod went meanwhile (its deletion seen first).
                if ctx.evictions.get(key).is_some() {
                    ctx.evictions.set(key.clone(), Eviction::Done);
                }
                return;
            }
            Err(error) => {
                tracing::debug!(pod = %format!("{}/{}", key.0, key.1), attempt, %error, "eviction failed");
                if attempt < ATTEMPTS {
                    madsim::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
    ctx.evictions.lock().remove(key);
}

/// The condition an evicted Pod gets.
pub fn disruption_target() -> PodCondition {
    PodCondition {
        type_: super::podgc::CONDITION_DISRUPTION_TARGET.to_owned(),
        status: "True".to_owned(),
        reason: Some(REASON_DELETION_BY_TAINT_MANAGER.to_owned()),
        message: Some(MESSAGE_TAINT_MANAGER.to_owned()),
        ..PodCondition::default()
    }
}

/// `addConditionAndDeletePod`: read the Pod, give it the condition unless it has it, delete it.
async fn mark_and_delete(client: &sim::Client, (namespace, name): &(String, String)) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod = api.get(name).await?;
    let wanted = disruption_target();
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let current = conditions.iter().find(|c| c.type_ == wanted.type_);
    let same = current.is_some_and(|c| {
        (&c.status, &c.reason, &c.message) == (&wanted.status, &wanted.reason, &wanted.message)
    });
    if !same {
        // `UpdatePodCondition`: the transition time moves only with the status.
        let since =
            current.filter(|c| c.status == wanted.status).and_then(|c| c.last_transition_time.clone());
        let condition =
            PodCondition { last_transition_time: Some(since.unwrap_or_else(sim::time::now_k8s)), ..wanted };
        let patch = serde_json::json!({
            "metadata": { "uid": pod.uid() },
            "status": { "conditions": [condition] },
        });
        api.patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch)).await?;
    }
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
