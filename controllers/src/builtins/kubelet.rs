//! kubelet-lite: the simulated nodes' kubelet, with a scheduler-lite in front of it.
//!
//! At start it registers its own Node, [`NODE_NAME`] ([`node`]: the kubelet's labels, Ready, an
//! InternalIP of [`HOST_IP`]), as a kubelet does, unless a Node of that name exists. It then
//! runs every Pod bound to any Node (a scenario may declare more Nodes; the kubelet-lite is
//! their kubelet too):
//! - an unscheduled Pod is bound to the Node it fits best ([`super::scheduler`]: cordoned Nodes,
//!   untolerated taints, `nodeSelector`, required node affinity, resources, host ports, required
//!   Pod affinity and anti-affinity and `DoNotSchedule` spread constraints are respected; the Node
//!   with the fewest Pods wins) through `pods/binding`, as kube-scheduler binds it (the API server then
//!   deletes it gracefully); a Pod with `schedulingGates` waits until they are all removed;
//! - but not while no Node fits, or while a PersistentVolumeClaim it mounts is missing, being
//!   deleted, `Lost` or not yet bound (the scheduler's VolumeBinding plugin,
//!   [`super::volume_binding`]; a claim of a `WaitForFirstConsumer` class is bound on the Node
//!   chosen for the Pod first): the Pod stays Pending with the condition `PodScheduled=False`,
//!   reason `Unschedulable`, and the scheduler's message (`0/1 nodes are available: pod has
//!   unbound immediate PersistentVolumeClaims. preemption: ...`, or `no nodes available to
//!   schedule pods`), with a `FailedScheduling` event when the message changes. The kubelet-lite
//!   watches claims and Nodes, and a change of a claim a waiting Pod mounts, or of any Node,
//!   schedules it again, as the scheduler's queueing hints do; so do a bound Pod that finishes or
//!   leaves (room, ports, anti-affinity), and a Pod bound or changed on its Node for a Pod that
//!   waits on Pod affinity or spread. A generic ephemeral volume's claim (`<pod>-<volume>`, made by
//!   [`super::ephemeral`]) counts too: missing, the Pod waits for the ephemeral volume
//!   controller; not controlled by the Pod, it is not used. A Pod that names its node skips the
//!   scheduler and runs whatever its claims (the real kubelet would wait to mount them);
//! - a bound Pod is taken on at once (phase `Pending`, `startTime`, every container waiting in
//!   `ContainerCreating`, `PodReadyToStartContainers=False`: what `kubectl get pods` shows as
//!   ContainerCreating); it stays so while a ConfigMap or Secret its volumes project is missing
//!   or lacks a key they name (`FailedMount` events, [`super::kubelet_sources`]; the kubelet-lite
//!   watches both, and the change that fixes it starts the Pod; a container whose environment
//!   reads a missing one waits in `CreateContainerConfigError` the same way, the others
//!   running), and after a delay drawn in
//!   [`START_DELAY_MS_MIN`]..=[`START_DELAY_MS_MAX`] (its sandbox, its images) its init containers
//!   run one after another, each for a delay drawn in [`RUN_DELAY_MS_MIN`]..=[`RUN_DELAY_MS_MAX`]
//!   (a sidecar, `restartPolicy: Always`, starts and keeps running), then its containers start:
//!   it becomes Running, and Ready once its containers' readiness probes and its readiness gates
//!   allow ([`super::kubelet_status`] has the statuses and conditions of each stage, as the
//!   kubelet writes them, and what probes do here); if it carries [`FAIL_ANNOTATION`]` = "true"`,
//!   its containers fail (with the exit code [`EXIT_CODE_ANNOTATION`] names, 1 by default; or
//!   only the containers the annotation names, the others running on):
//!   phase Failed for `restartPolicy: Never` (once the others have completed), otherwise Running
//!   and not Ready, the failing containers crash-looping: restarted at once, then after the kubelet's back-off (10 s, doubled per
//!   restart up to 5 min), each restart one more `restartCount` and a `BackOff` event, waiting in
//!   `CrashLoopBackOff` in between ([`super::kubelet_status`]); [`FAIL_INIT_ANNOTATION`] names
//!   an init container that fails the same way (`Init:Error`, or `Init:CrashLoopBackOff` with the
//!   Pod `Pending`). A restart is an idle requeue
//!   ([`Action::requeue_idle`]): the restarts go on while a workload waits (for a Job to give up
//!   on them), and the world still quiesces between them; [`UNREADY_ANNOTATION`]` = "true"` makes a running
//!   Pod's containers unready, as failing readiness probes do; a Pod whose
//!   `activeDeadlineSeconds` pass (counted from its `startTime`) is ended: its containers killed,
//!   phase `Failed`, reason `DeadlineExceeded` with [`DEADLINE_EXCEEDED_MESSAGE`], and an event
//!   of that reason (a world with such a Pod running is not quiet until its deadline);
//! - a Running Pod whose `restartPolicy` is `Never` or `OnFailure` (a Job's, a Helm test's) runs
//!   to completion (phase Succeeded, exit code 0) after a delay drawn in
//!   [`RUN_DELAY_MS_MIN`]..=[`RUN_DELAY_MS_MAX`] (or [`RUN_SECONDS_ANNOTATION`]); Pods with
//!   `Always` run until deleted;
//! - a Pod being deleted is removed after its grace period (`deletionGracePeriodSeconds`,
//!   counted from when the kubelet sees the deletion, as the real kubelet counts it), by a
//!   delete with grace period 0 and the Pod's uid as precondition; first, as the kubelet does
//!   since 1.27, its status gets a terminal phase: `Failed`, its running containers terminated
//!   with exit code 137 ([`super::kubelet_status::killed`]), which a Job with
//!   `podReplacementPolicy: Failed` waits for (a Pod a finalizer holds stays so).
//!
//! A Node whose `Ready` condition is `Unknown` has lost its kubelet ([`is_lost`]: a test or a
//! workload plays a lost Node so, as the node lifecycle controller marks one): the kubelet-lite
//! leaves its Pods as they are, a deleted one `Terminating`, until the Node is Ready again.
//!
//! The delays are waited inside the reconcile, so the world counts as busy while a container
//! starts or stops: the liveness phase waits for them, as it would for real containers.
//!
//! Events, as the scheduler and the kubelet publish them: `Scheduled` (reported by
//! `default-scheduler`) when a Pod is bound, then `Pulled`, `Created` and `Started` for each init
//! container and container once it runs (a failing one that restarts also gets `BackOff`), and
//! `Killing` when its deletion starts.
//!
//! Each stage is written with a merge patch conditional on the resourceVersion read, and keeps
//! the conditions the kubelet does not own (a readiness gate's, set by another controller), as the
//! kubelet's strategic merge patch does. Each stage is taken from the Pod's status as read back,
//! so a kubelet-lite restarted half way goes on from where the Pod is.
//!
//! Delays are drawn from the run's decision stream [`DELAY_STREAM`] (`sim::random`), so they are
//! recorded choices that a replay repeats; `startTime` and the conditions' `lastTransitionTime`
//! come from the run's virtual clock (`sim::time`), the same on every replay of a seed. A
//! condition keeps its `lastTransitionTime` while its status stays the same, as the kubelet's do.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, DaemonEndpoint, Namespace, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints,
    NodeSpec, NodeStatus, NodeSystemInfo, PersistentVolume, PersistentVolumeClaim, Pod, PodStatus, Secret,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::error::{Error, has_code};
use super::kubelet_status::{self, Outcome, Stage};
use super::scheduler::Preemption;
use super::volume_binding::claim_names;
use super::{
    events, hashing, kubelet_resize, kubelet_sources, pod_state, pod_topology, podgc, scheduler,
    volume_binding,
};

/// The decision stream the kubelet-lite's delays are drawn from (its own, so that other
/// controllers' draws do not move them).
pub const DELAY_STREAM: &str = "kubelet.delays";

/// The kubelet-lite's node in the simulation.
pub const NODE: &str = "kubelet";
/// The name of the one simulated Kubernetes node, which every Pod is bound to.
pub const NODE_NAME: &str = "node-1";
/// What the registered Node offers (its capacity and allocatable): a laptop's kind node. The
/// scheduler-lite counts the same for a Node that reports no allocatable resources of its own.
pub const NODE_CAPACITY: [(&str, &str); 4] =
    [("cpu", "8"), ("ephemeral-storage", "100Gi"), ("memory", "32Gi"), ("pods", "110")];
/// The node's IP, as `status.hostIP`.
pub const HOST_IP: &str = "10.0.0.1";
/// Set to `"true"` on a Pod to make its containers fail, or to the names of some of them
/// (comma-separated: `app` or `app,worker`) to make those fail while the others run.
pub const FAIL_ANNOTATION: &str = "kube-sim.io/fail";
/// Set to the name of one of a Pod's init containers (not a sidecar) to make it fail: it runs
/// for the run delay, then exits with [`EXIT_CODE_ANNOTATION`]'s code (1 by default). With
/// `restartPolicy: Never` the Pod is then `Failed` (`Init:Error`); otherwise the kubelet restarts
/// the init container with its crash-loop back-off and the Pod stays `Pending`
/// (`Init:CrashLoopBackOff`), its later init containers and its containers never started: what
/// an init container that waits for a database that never comes does on a node.
pub const FAIL_INIT_ANNOTATION: &str = "kube-sim.io/fail-init-container";
/// Set to `"true"` on a running Pod to make its containers' readiness probes fail: its
/// containers run not ready (`Ready=False`, `ContainersNotReady`) until the annotation is removed
/// or set to anything else. What a test uses to take a Pod out of service, as a failing probe
/// does on a node (writing the `Ready` condition itself would not last: the kubelet owns it).
pub const UNREADY_ANNOTATION: &str = "kube-sim.io/unready";
/// Set to a whole number of seconds on a Pod whose containers run to completion (a Job's) to make
/// them run that long (the run delay otherwise: [`RUN_DELAY_MS_MIN`]..=[`RUN_DELAY_MS_MAX`]): a
/// long batch step, to delete or evict while it runs.
pub const RUN_SECONDS_ANNOTATION: &str = "kube-sim.io/run-seconds";
/// With [`FAIL_ANNOTATION`], the exit code the failing containers report (a non-zero integer;
/// [`FAILED_EXIT_CODE`] when absent or not one): what a Job's pod failure policy reads.
pub const EXIT_CODE_ANNOTATION: &str = "kube-sim.io/exit-code";
/// The bounds of a container's start delay, in milliseconds. The upper bound stays below the
/// world's default quiet period (2 s) so that every start is part of the same busy stretch.
pub const START_DELAY_MS_MIN: u64 = 100;
/// See [`START_DELAY_MS_MIN`].
pub const START_DELAY_MS_MAX: u64 = 1_000;
/// The bounds of how long a Job's Pod runs before it succeeds, in milliseconds.
pub const RUN_DELAY_MS_MIN: u64 = 200;
/// See [`RUN_DELAY_MS_MIN`].
pub const RUN_DELAY_MS_MAX: u64 = 1_500;
const _: () = assert!(START_DELAY_MS_MIN <= START_DELAY_MS_MAX && RUN_DELAY_MS_MIN <= RUN_DELAY_MS_MAX);
/// The exit code of a failing container.
pub const FAILED_EXIT_CODE: i32 = 1;

/// Add the kubelet-lite to a world, on node [`NODE`].
pub fn kubelet(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// The kubelet-lite's main future: register [`NODE_NAME`], then run Pods.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    register_node(&client).await;
    let pods: Api<Pod> = Api::all(client.clone());
    let claims =
        reflector::informer(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default());
    let nodes = reflector::informer(Api::<Node>::all(client.clone()), watcher::Config::default());
    let classes = reflector::informer(Api::<StorageClass>::all(client.clone()), watcher::Config::default());
    let volumes =
        reflector::informer(Api::<PersistentVolume>::all(client.clone()), watcher::Config::default());
    // What Pods' volumes project (the kubelet's ConfigMap and Secret managers).
    let config_maps = reflector::informer(Api::<ConfigMap>::all(client.clone()), watcher::Config::default());
    let secrets = reflector::informer(Api::<Secret>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial lists reach the mappers.
    let config_map_changes = config_maps.subscribe();
    let secret_changes = secrets.subscribe();
    let claim_changes = claims.subscribe();
    let node_changes = nodes.subscribe();
    let volume_changes = volumes.subscribe();
    let controller = Controller::new(pods, watcher::Config::default());
    let store = controller.store();
    let pod_changes = store.subscribe();
    let (waiting_claim, waiting_node, waiting_room) = (store.clone(), store.clone(), store.clone());
    let waiting_volume = store.clone();
    let (waiting_config_map, waiting_secret) = (store.clone(), store.clone());
    let waiting_on_pods = Arc::new(WaitingOnPods::default());
    // The Nodes seen lost ([`is_lost`]), so that their Pods are synced when they come back.
    let lost_nodes = std::sync::Mutex::new(BTreeSet::<String>::new());
    let waiting = waiting_on_pods.clone();
    controller
        .watches_shared_stream(claim_changes, move |claim: Arc<PersistentVolumeClaim>| {
            pods_waiting_for(&claim, &waiting_claim)
        })
        // A volume made or changed may be the one a waiting Pod's bound or delayed claim needs
        // (`PersistentVolume` add/update hints).
        .watches_shared_stream(volume_changes, move |_volume: Arc<PersistentVolume>| {
            waiting_volume
                .state_filter(|p| !pod_state::is_scheduled(p) && !claim_names(p).is_empty())
                .iter()
                .map(|p| ObjectRef::from_obj(&**p))
                .collect::<Vec<_>>()
        })
        // A ConfigMap or Secret made or changed may let a Pod's failed mount succeed.
        .watches_shared_stream(config_map_changes, move |cm: Arc<ConfigMap>| {
            pods_needing(&waiting_config_map, &*cm, false)
        })
        .watches_shared_stream(secret_changes, move |secret: Arc<Secret>| {
            pods_needing(&waiting_secret, &*secret, true)
        })
        // A Node registered, uncordoned or relabelled may fit a Pod that fitted none; a Node
        // back from lost has its Pods looked at again.
        .watches_shared_stream(node_changes, move |node: Arc<Node>| {
            let mut pods = unscheduled(&waiting_node);
            let name = node.name_any();
            let mut lost = lost_nodes.lock().unwrap_or_else(|e| e.into_inner());
            if is_lost(&node) {
                lost.insert(name);
            } else if lost.remove(&name) {
                let bound = waiting_node.state_filter(|pod| pod_state::node_name(pod) == Some(name.as_str()));
                pods.extend(bound.iter().map(|pod| ObjectRef::from_obj(&**pod)));
            }
            pods
        })
        // A bound Pod that finishes, starts terminating or is deleted may leave room (resources,
        // host ports) for a Pod that fitted nowhere (the scheduler's `AssignedPodDelete` hint).
        // A Pod bound, or relabelled where it runs, may satisfy the Pod affinity or the spread
        // of a Pod waiting on them (`AssignedPodAdd`/`AssignedPodUpdate`).
        .watches_shared_stream(pod_changes, move |pod: Arc<Pod>| {
            if !pod_state::is_scheduled(&pod) {
                return Vec::new();
            }
            if pod_state::is_terminating(&pod) || pod_state::is_finished(&pod) {
                unscheduled(&waiting_room)
            } else {
                waiting.still_waiting(&waiting_room)
            }
        })
        .run(
            reconcile,
            super::retry_soon,
            Arc::new(context(
                client,
                (claims, nodes, store),
                (classes, volumes),
                (config_maps, secrets),
                waiting_on_pods,
            )),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The Pods on a Node that wait for their volumes (no sandbox yet) or for a container's
/// configuration ([`kubelet_status::CREATE_CONTAINER_CONFIG_ERROR`]) and need `object` (a Secret
/// when `secret`): its change may let their mounts or creates succeed.
fn pods_needing<K: ResourceExt>(pods: &Store<Pod>, object: &K, secret: bool) -> Vec<ObjectRef<Pod>> {
    let (name, namespace) = (object.name_any(), object.namespace().unwrap_or_default());
    pods.state_filter(|p| {
        p.metadata.namespace.as_deref() == Some(namespace.as_str())
            && pod_state::is_scheduled(p)
            && (matches!(kubelet_status::stage(p), Stage::New | Stage::Accepted)
                || kubelet_status::has_config_error(p)
                || kubelet_status::has_init_config_error(p))
            && kubelet_sources::needs(p, secret, &name)
    })
    .iter()
    .map(|p| ObjectRef::from_obj(&**p))
    .collect()
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    /// The scheduler-lite's claim cache (the scheduler's PVC lister).
    claims: Store<PersistentVolumeClaim>,
    /// Its StorageClass and PersistentVolume caches, for claims that wait for a first consumer.
    classes: Store<StorageClass>,
    volumes: Store<PersistentVolume>,
    /// The scheduler-lite's Node cache.
    nodes: Store<Node>,
    /// The ConfigMaps and Secrets Pods' volumes project ([`kubelet_sources`]).
    config_maps: Store<ConfigMap>,
    secrets: Store<Secret>,
    /// The Pod cache, which the scheduler-lite counts each Node's Pods in.
    pods: Store<Pod>,
    /// Publishes as the kubelet of [`NODE_NAME`].
    kubelet: events::Recorder,
    /// Publishes as `default-scheduler`.
    scheduler: sim::runtime::events::Recorder,
    /// The scheduler-lite's assumed Pods, by uid: those it chose a Node for whose binding its
    /// Pod cache does not show yet ([`Assumed`]).
    assumed: Assumed,
    /// The Pods that fitted nowhere and wait on where other Pods run.
    waiting_on_pods: Arc<WaitingOnPods>,
}

/// The unschedulable Pods whose Pod affinity, anti-affinity or spread constraints may be met
/// once another Pod is bound ([`pod_topology::depends_on_other_pods`]), by namespace and name;
/// kept so that the many changes of running Pods cost nothing while none waits.
#[derive(Default)]
struct WaitingOnPods(std::sync::Mutex<BTreeSet<(String, String)>>);

impl WaitingOnPods {
    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn insert(&self, pod: &Pod) {
        self.set().insert((pod.namespace().unwrap_or_default(), pod.name_any()));
    }

    /// The recorded Pods the cache still shows unscheduled; the others are forgotten.
    fn still_waiting(&self, cache: &Store<Pod>) -> Vec<ObjectRef<Pod>> {
        let mut set = self.set();
        if set.is_empty() {
            return Vec::new();
        }
        set.retain(|(namespace, name)| {
            let key = ObjectRef::new(name).within(namespace);
            cache.get(&key).is_some_and(|p| !pod_state::is_scheduled(&p) && !pod_state::is_terminating(&p))
        });
        set.iter().map(|(namespace, name)| ObjectRef::new(name).within(namespace)).collect()
    }
}

/// kube-scheduler's assumed Pods (`cache.AssumePod`): a Pod counts on the Node chosen for it from
/// the moment of the choice, before its binding is written and long before the Pod cache shows
/// it, so that the next Pod's cycle does not give the same room away. An assumption ends when
/// the binding fails (`ForgetPod`), or when the cache shows the Pod bound or gone.
#[derive(Default)]
struct Assumed(std::sync::Mutex<BTreeMap<String, Arc<Pod>>>);

impl Assumed {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Pod>>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `pod`, bound to `node` in the scheduler's mind.
    fn assume(&self, pod: &Pod, node: &str) {
        let mut assumed = pod.clone();
        assumed.spec.get_or_insert_with(Default::default).node_name = Some(node.to_owned());
        self.map().insert(pod.uid().unwrap_or_default(), Arc::new(assumed));
    }

    /// Whether `pod` is assumed and the cache does not show its binding yet.
    fn is_assumed(&self, pod: &Pod, cache: &Store<Pod>) -> bool {
        self.prune(cache);
        self.map().contains_key(&pod.uid().unwrap_or_default())
    }

    fn forget(&self, pod: &Pod) {
        self.map().remove(&pod.uid().unwrap_or_default());
    }

    /// Drop the assumptions the cache has caught up with (the Pod bound or gone).
    fn prune(&self, cache: &Store<Pod>) {
        self.map().retain(|uid, pod| {
            let key = ObjectRef::new(&pod.name_any()).within(&pod.namespace().unwrap_or_default());
            let cached = cache.get(&key).filter(|p| p.metadata.uid.as_deref() == Some(uid.as_str()));
            cached.is_some_and(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_none())
        });
    }

    /// Drop the assumptions the cache has caught up with, and return the others on `node`.
    fn on_node(&self, node: &str, cache: &Store<Pod>) -> Vec<Arc<Pod>> {
        self.prune(cache);
        let on_node = |p: &&Arc<Pod>| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node);
        self.map().values().filter(on_node).cloned().collect()
    }
}

impl Context {
    /// The ConfigMap and Secret caches, once both have their first lists (`None` if one of them
    /// stopped before it).
    async fn sources(&self) -> Option<kubelet_sources::Sources<'_>> {
        let ready = [self.config_maps.wait_until_ready().await, self.secrets.wait_until_ready().await];
        ready
            .iter()
            .all(Result::is_ok)
            .then_some(kubelet_sources::Sources { config_maps: &self.config_maps, secrets: &self.secrets })
    }
}

/// The component name of the scheduler's events.
pub const SCHEDULER_NAME: &str = "default-scheduler";

fn context(
    client: sim::Client,
    (claims, nodes, pods): (Store<PersistentVolumeClaim>, Store<Node>, Store<Pod>),
    (classes, volumes): (Store<StorageClass>, Store<PersistentVolume>),
    (config_maps, secrets): (Store<ConfigMap>, Store<Secret>),
    waiting_on_pods: Arc<WaitingOnPods>,
) -> Context {
    Context {
        classes,
        volumes,
        config_maps,
        secrets,
        kubelet: events::recorder_on_host(&client, "kubelet", NODE_NAME),
        scheduler: events::scheduler_recorder(&client, SCHEDULER_NAME),
        claims,
        nodes,
        pods,
        client,
        assumed: Assumed::default(),
        waiting_on_pods,
    }
}

/// How long the kubelet waits before its first retry of a failed registration, and at most
/// (`registerWithAPIServer`: 100 ms doubled up to 7 s).
const REGISTER_RETRY_FIRST: Duration = Duration::from_millis(100);
/// See [`REGISTER_RETRY_FIRST`].
const REGISTER_RETRY_MAX: Duration = Duration::from_secs(7);

/// Register [`NODE_NAME`] as the kubelet does at start (`registerWithAPIServer`): create its
/// Node, retried with a doubling backoff until it is created or found to exist (a restarted
/// kubelet, or a Node a scenario declared, keeps the stored one).
async fn register_node(client: &sim::Client) {
    let api: Api<Node> = Api::all(client.clone());
    let mut retry = REGISTER_RETRY_FIRST;
    loop {
        match api.create(&PostParams::default(), &node()).await {
            Ok(_) => return,
            // There already (a restart, or a create whose answer was lost), as the kubelet's
            // `registerWithAPIServer` reads it then; any other 409 (a fault's Conflict) made
            // nothing and is retried.
            Err(e) if has_code(&e, 409) => match api.get_opt(NODE_NAME).await {
                Ok(Some(_)) => return,
                Ok(None) => tracing::debug!(error = %e, "registering node {NODE_NAME} failed; retrying"),
                Err(e) => tracing::debug!(error = %e, "reading node {NODE_NAME} failed; retrying"),
            },
            Err(e) => tracing::debug!(error = %e, "registering node {NODE_NAME} failed; retrying"),
        }
        madsim::time::sleep(retry).await;
        retry = (retry * 2).min(REGISTER_RETRY_MAX);
    }
}

/// The Node the kubelet-lite registers: the labels the kubelet sets on its own Node
/// (`kubernetes.io/hostname`, `kubernetes.io/os` and `arch`, with their beta twins), an
/// InternalIP of [`HOST_IP`], room for 110 Pods, and Ready with the kubelet's reasons. It sends
/// no heartbeats (no Lease renewals, no periodic status), so a world still goes quiet.
pub fn node() -> Node {
    let labels = [
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/hostname", NODE_NAME),
        ("kubernetes.io/os", "linux"),
    ];
    let quantities = |pairs: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned()))).collect()
    };
    let capacity = quantities(&NODE_CAPACITY);
    let now = sim::time::now_k8s();
    let condition = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    };
    Node {
        metadata: ObjectMeta {
            name: Some(NODE_NAME.to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            annotations: Some(BTreeMap::from([(
                "volumes.kubernetes.io/controller-managed-attach-detach".to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some("10.244.0.0/16".to_owned()),
            pod_cidrs: Some(vec!["10.244.0.0/16".to_owned()]),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress { type_: "InternalIP".to_owned(), address: HOST_IP.to_owned() },
                NodeAddress { type_: "Hostname".to_owned(), address: NODE_NAME.to_owned() },
            ]),
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            conditions: Some(vec![
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                condition(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
            }),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".to_owned(),
                boot_id: "kube-sim".to_owned(),
                container_runtime_version: "kube-sim://1".to_owned(),
                kernel_version: "kube-sim".to_owned(),
                kube_proxy_version: String::new(),
                kubelet_version: KUBELET_VERSION.to_owned(),
                machine_id: "kube-sim".to_owned(),
                operating_system: "linux".to_owned(),
                os_image: "kube-sim".to_owned(),
                system_uuid: "kube-sim".to_owned(),
                ..NodeSystemInfo::default()
            }),
            ..NodeStatus::default()
        }),
    }
}

/// The version the registered Node reports (`kubectl get nodes`' VERSION).
pub const KUBELET_VERSION: &str = "v1.33.0-kube-sim";

/// Every Pod in the cache that no Node has yet.
fn unscheduled(pods: &Store<Pod>) -> Vec<ObjectRef<Pod>> {
    pods.state_filter(|pod| !pod_state::is_scheduled(pod) && !pod_state::is_terminating(pod))
        .iter()
        .map(|pod| ObjectRef::from_obj(&**pod))
        .collect()
}

/// The Pods a changed claim may make schedulable: the unscheduled ones of its namespace that
/// mount it.
fn pods_waiting_for(claim: &PersistentVolumeClaim, pods: &Store<Pod>) -> Vec<ObjectRef<Pod>> {
    let name = claim.name_any();
    let namespace = claim.namespace();
    pods.state_filter(|pod| {
        pod.metadata.namespace == namespace
            && !pod_state::is_scheduled(pod)
            && claim_names(pod).iter().any(|(c, _)| *c == name)
    })
    .iter()
    .map(|pod| ObjectRef::from_obj(&**pod))
    .collect()
}

/// The reference to one container of a Pod (`fieldPath: spec.containers{name}`, or
/// `spec.initContainers{name}`), as the kubelet's container events carry it.
fn container_reference(
    pod: &Pod,
    container: &str,
    init: bool,
) -> k8s_openapi::api::core::v1::ObjectReference {
    listed_reference(pod, if init { "initContainers" } else { "containers" }, container)
}

/// The reference to container `container` of the Pod's `list` (`containers`, `initContainers`,
/// `ephemeralContainers`): `fieldPath: spec.<list>{<name>}`.
fn listed_reference(pod: &Pod, list: &str, container: &str) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        field_path: Some(format!("spec.{list}{{{container}}}")),
        ..events::reference(pod)
    }
}

/// The kubelet's `Pulled`, `Created` and `Started` events of the ephemeral containers `pod` runs
/// that `before` did not.
async fn publish_ephemeral_started(ctx: &Context, pod: &Pod, before: &BTreeSet<String>) {
    let running = kubelet_status::running_ephemeral(pod);
    for (name, image) in kubelet_status::ephemeral_containers(pod)
        .filter(|(n, _)| running.contains(*n) && !before.contains(*n))
    {
        publish_run(ctx, &listed_reference(pod, "ephemeralContainers", name), name, image).await;
    }
}

/// The mounts of `pod`'s volumes that fail now ([`kubelet_sources::mount_failures`]), once the
/// ConfigMap and Secret caches have their first lists (a Pod that projects neither waits for
/// nothing).
async fn mount_failures(pod: &Pod, ctx: &Context) -> Vec<kubelet_sources::MountFailure> {
    if !kubelet_sources::projects_any(pod) {
        return Vec::new();
    }
    match ctx.sources().await {
        Some(sources) => kubelet_sources::mount_failures(pod, &sources),
        None => Vec::new(),
    }
}

/// The Events of a container the kubelet could not create for its configuration: `Pulled`, then
/// the Warning `Failed` (`Error: <why>`).
async fn publish_refused(ctx: &Context, pod: &Pod, container: &Container, init: bool, why: &str) {
    let regarding = container_reference(pod, &container.name, init);
    let image = container.image.as_deref().unwrap_or_default();
    events::normal(&ctx.kubelet, &regarding, "Pulled", pulled_message(image)).await;
    events::warning(&ctx.kubelet, &regarding, "Failed", format!("Error: {why}")).await;
}

/// The kubelet's `Pulled` message for `container` (its image is always present here).
fn pulled_message(image: &str) -> String {
    format!("Container image \"{image}\" already present on machine")
}

/// The kubelet's `Pulled`, `Created` and `Started` events of container `name` (of `image`) that
/// it just started.
async fn publish_run(
    ctx: &Context,
    regarding: &k8s_openapi::api::core::v1::ObjectReference,
    name: &str,
    image: &str,
) {
    events::normal(&ctx.kubelet, regarding, "Pulled", pulled_message(image)).await;
    events::normal(&ctx.kubelet, regarding, "Created", format!("Created container: {name}")).await;
    events::normal(&ctx.kubelet, regarding, "Started", format!("Started container {name}")).await;
}

/// `Pulled`, `Created` and `Started` for each of `started`, containers of a Pod that just
/// started (`spec.containers`, or `spec.initContainers` when `init`); a container that fails and
/// restarts also gets `BackOff`.
async fn publish_started(ctx: &Context, pod: &Pod, started: &[Container], init: bool) {
    for container in started {
        let regarding = container_reference(pod, &container.name, init);
        let image = container.image.as_deref().unwrap_or_default();
        publish_run(ctx, &regarding, &container.name, image).await;
        if !init && matches!(outcome(pod), Outcome::CrashLoop(_)) && fails_container(pod, &container.name) {
            publish_back_off(ctx, pod, &container.name, false).await;
        }
    }
}

/// Move one Pod along its lifecycle by one step.
pub async fn reconcile(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = pod.name_any();
    let namespace = pod.namespace().ok_or(Error::MissingNamespace { kind: "Pod", name: name.clone() })?;
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Some(node) = pod_state::node_name(&pod)
        && ctx.nodes.get(&ObjectRef::new(node)).is_some_and(|node| is_lost(&node))
    {
        // Its kubelet is gone: nothing starts, reports or terminates there.
        return Ok(Action::await_change());
    }
    if pod_state::is_terminating(&pod) {
        return boxed(|| terminate(&api, &pod, &ctx)).await;
    }
    if pod_state::is_finished(&pod) {
        return Ok(Action::await_change());
    }
    if !pod_state::is_scheduled(&pod) {
        return boxed(|| schedule(&api, &pod, &ctx)).await;
    }
    if past_active_deadline(&pod) {
        return boxed(|| end_at_deadline(&api, &pod, &ctx)).await;
    }
    let action = match kubelet_status::stage(&pod) {
        Stage::Started => boxed(|| keep_running(&api, &pod, &ctx)).await?,
        _ => boxed(|| start(&api, &pod, &ctx)).await?,
    };
    // A Pod with `activeDeadlineSeconds` is looked at again when its deadline comes.
    let left = kubelet_status::active_deadline(&pod)
        .and_then(|deadline| Duration::try_from(deadline.duration_since(sim::time::now())).ok());
    Ok(match (left, action.requeue_after()) {
        // The deadline ends the Pod, a change the liveness phase waits for: so is every requeue
        // before it (a crash loop's restarts too).
        (Some(left), Some(after)) => Action::requeue(left.min(after)),
        (Some(left), None) => Action::requeue(left),
        _ => action,
    })
}

/// Whether `node`'s kubelet is lost: its `Ready` condition is `Unknown`, as the node lifecycle
/// controller marks a Node whose kubelet stopped posting its status (no heartbeats are modelled,
/// so a workload or a test writes it to play a lost Node). The kubelet-lite then leaves the
/// Node's Pods as they are, a deleted one `Terminating` too, until the Node is back.
pub fn is_lost(node: &Node) -> bool {
    super::node_lifecycle::ready_status(node) == Some("Unknown")
}

/// The message of a Pod the kubelet ended for its `activeDeadlineSeconds`.
pub const DEADLINE_EXCEEDED_MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// Whether `pod`'s `activeDeadlineSeconds` have passed since its `startTime`.
fn past_active_deadline(pod: &Pod) -> bool {
    kubelet_status::active_deadline(pod).is_some_and(|deadline| deadline <= sim::time::now())
}

/// End a Pod whose `activeDeadlineSeconds` passed, as the kubelet's active deadline handler does:
/// its containers killed, phase `Failed`, reason `DeadlineExceeded`, and a `DeadlineExceeded`
/// event.
async fn end_at_deadline(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    let still = |known: &Pod| !pod_state::is_terminating(known) && !pod_state::is_finished(known);
    let why = Some(("DeadlineExceeded", DEADLINE_EXCEEDED_MESSAGE));
    let end = |known: &Pod| kubelet_status::killed_because(known, sim::time::now(), why);
    if let Some(written) = write_status_with(api, pod, still, end).await?
        && pod_state::is_finished(&written)
    {
        let reference = events::reference(&written);
        events::normal(&ctx.kubelet, &reference, "DeadlineExceeded", DEADLINE_EXCEEDED_MESSAGE.to_owned())
            .await;
    }
    Ok(Action::await_change())
}

/// The scheduler-lite's cycle for one Pod ([`scheduler`]): bind it to the Node it fits best
/// (`pods/binding`, as kube-scheduler's DefaultBinder) with a `Scheduled` event, or record why no
/// Node fits. A Pod with scheduling gates waits for them to be removed.
async fn schedule(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    // A gated Pod waits (the API server gave it the `SchedulingGated` condition); removing its
    // last gate is an update of the Pod, which brings it back here (the `SchedulingGates`
    // PreEnqueue plugin).
    if pod.spec.as_ref().and_then(|s| s.scheduling_gates.as_ref()).is_some_and(|g| !g.is_empty()) {
        return Ok(Action::await_change());
    }
    // A Pod assumed on a Node, its binding written but not in the cache yet, is not scheduled
    // again (kube-scheduler's queue skips assumed Pods): a second cycle would count the Pod as its
    // own neighbour, and its failed second binding would forget the first.
    if ctx.assumed.is_assumed(pod, &ctx.pods) {
        return Ok(Action::await_change());
    }
    // The reconcile's copy may be older than the cache: a Pod the cache already shows bound (its
    // assumption just ended), gone or replaced is not scheduled again, as kube-scheduler skips a
    // Pod its cache shows assigned and its failure handler checks the cached Pod before writing
    // `Unschedulable`. Scheduling the stale copy counted the Pod as its own neighbour and marked a
    // bound, running Pod `PodScheduled=False`.
    let key = ObjectRef::new(&pod.name_any()).within(&pod.namespace().unwrap_or_default());
    if ctx.pods.get(&key).is_none_or(|cached| cached.uid() != pod.uid() || pod_state::is_scheduled(&cached)) {
        return Ok(Action::await_change());
    }
    if ctx.nodes.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let nodes = ctx.nodes.state();
    if nodes.is_empty() {
        return mark_unschedulable(api, pod, scheduler::NO_NODES, ctx).await;
    }
    let mut volumes = volume_binding::PodVolumes::default();
    if !claim_names(pod).is_empty() {
        let caches = [ctx.claims.wait_until_ready().await, ctx.classes.wait_until_ready().await];
        if caches.iter().any(Result::is_err) || ctx.volumes.wait_until_ready().await.is_err() {
            return Ok(Action::await_change());
        }
        let caches =
            volume_binding::Caches { claims: &ctx.claims, classes: &ctx.classes, volumes: &ctx.volumes };
        volumes = match volume_binding::prefilter(pod, &caches) {
            Ok(volumes) => volumes,
            Err(reason) => {
                let message = scheduler::prefilter_error(pod, nodes.len(), &reason);
                return mark_unschedulable(api, pod, &message, ctx).await;
            }
        };
    }
    // The Pods each Node runs, as the scheduler's cache holds them (finished ones are not), the
    // ones assumed on it, then the ones nominated to it (waiting there for their victims to go)
    // that count for a Pod of no higher priority, as kube-scheduler's filters run with them
    // (`RunFilterPluginsWithNominatedPods`): the room a preemption made is not taken by a Pod it
    // was not made for. One pass over the cache finds the bound and the nominated ones.
    let own = scheduler::priority(pod);
    let index: BTreeMap<String, usize> = nodes.iter().enumerate().map(|(i, n)| (n.name_any(), i)).collect();
    let mut placed: Vec<Vec<Arc<Pod>>> = vec![Vec::new(); nodes.len()];
    let mut nominated = Vec::new();
    for other in ctx.pods.state_filter(|p: &Pod| {
        if pod_state::is_scheduled(p) {
            !pod_state::is_finished(p)
        } else {
            nominated_node(p).is_some()
                && p.metadata.deletion_timestamp.is_none()
                && p.uid() != pod.uid()
                && scheduler::priority(p) >= own
        }
    }) {
        if pod_state::is_scheduled(&other) {
            let node = other.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
            if let Some(i) = index.get(node) {
                placed[*i].push(other);
            }
        } else {
            nominated.push(other);
        }
    }
    let mut assumed = BTreeSet::new();
    for (node, i) in &index {
        for other in ctx.assumed.on_node(node, &ctx.pods) {
            assumed.insert(uid_of(&other));
            placed[*i].push(other);
        }
    }
    // A nominated Pod already assumed (bound, the cache not showing it yet) counts once, as
    // kube-scheduler drops a Pod's nomination when it assumes it.
    for other in nominated {
        if assumed.contains(&uid_of(&other)) {
            continue;
        }
        if let Some(i) = nominated_node(&other).and_then(|node| index.get(node)) {
            placed[*i].push(other);
        }
    }
    let namespaces = if pod_topology::needs_namespace_labels(pod, &placed) {
        let list = Api::<Namespace>::all(ctx.client.clone()).list(&Default::default()).await?;
        list.items.into_iter().map(|n| (n.name_any(), n.metadata.labels.unwrap_or_default())).collect()
    } else {
        pod_topology::NamespaceLabels::new()
    };
    let node = match scheduler::choose(pod, &nodes, &placed, &namespaces, &volumes) {
        Ok(node) if volumes.has_delayed() => {
            // PreBind: the claims waiting for a first consumer are bound on this Node first; their
            // binding schedules the Pod again (the claim watch), onto the same Node.
            volumes.bind_on(node, &ctx.client).await?;
            return Ok(Action::await_change());
        }
        Ok(node) => node.name_any(),
        Err(message) => {
            if pod_topology::depends_on_other_pods(pod) {
                ctx.waiting_on_pods.insert(pod);
            }
            // The default preemption plugin; with no Pod of lower priority anywhere there is no
            // victim, and the fit error already carries that verdict.
            if placed.iter().flatten().any(|p| scheduler::priority(p) < own) {
                let budgets =
                    Api::<PodDisruptionBudget>::all(ctx.client.clone()).list(&Default::default()).await?;
                match scheduler::preempt(pod, &nodes, &placed, &namespaces, &volumes, &budgets.items) {
                    Preemption::Evict { node, victims, message } => {
                        let node = node.name_any();
                        boxed(|| evict_victims(pod, &node, &victims, ctx)).await?;
                        return mark_unschedulable_nominated(api, pod, &message, Some(&node), ctx).await;
                    }
                    Preemption::Unschedulable(message) => {
                        return mark_unschedulable(api, pod, &message, ctx).await;
                    }
                }
            }
            return mark_unschedulable(api, pod, &message, ctx).await;
        }
    };
    ctx.assumed.assume(pod, &node);
    let (name, namespace) = (pod.name_any(), pod.namespace().unwrap_or_default());
    // As the DefaultBinder binds: the Pod's uid is a precondition, so a Pod deleted and made
    // again under its name is not bound by a decision about the old one.
    let binding = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": { "name": name, "namespace": namespace, "uid": pod.uid() },
        "target": { "kind": "Node", "name": node },
    });
    let bound: Result<kube_core::Status, _> =
        api.create_subresource("binding", &name, &PostParams::default(), &binding).await;
    if let Err(error) = bound {
        ctx.assumed.forget(pod);
        return Err(error.into());
    }
    let message = format!("Successfully assigned {namespace}/{name} to {node}");
    let reference = events::reference(pod);
    events::scheduled(&ctx.scheduler, &reference, message).await;
    Ok(Action::await_change())
}

/// Record the scheduler's failure on a Pod it cannot place: `PodScheduled=False`,
/// `Unschedulable`, with the message (written only when it changes, as the scheduler's
/// `updatePod` skips an unchanged condition), and a `FailedScheduling` event then. The claim
/// watch schedules the Pod again.
async fn mark_unschedulable(
    api: &Api<Pod>,
    pod: &Pod,
    message: &str,
    ctx: &Context,
) -> Result<Action, Error> {
    mark_unschedulable_nominated(api, pod, message, None, ctx).await
}

/// [`mark_unschedulable`], and nominate the Pod to `nominated` (`status.nominatedNodeName`) when
/// the preemption plugin chose a Node for it; `None` leaves the nomination as it is.
async fn mark_unschedulable_nominated(
    api: &Api<Pod>,
    pod: &Pod,
    message: &str,
    nominated: Option<&str>,
    ctx: &Context,
) -> Result<Action, Error> {
    let message = message.to_owned();
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    let current = conditions.iter().find(|c| c.type_ == "PodScheduled");
    let nominated_now = nominated_node(pod);
    if current.is_some_and(|c| {
        c.status == "False"
            && c.reason.as_deref() == Some(UNSCHEDULABLE)
            && c.message.as_deref() == Some(message.as_str())
    }) && nominated.is_none_or(|n| nominated_now == Some(n))
    {
        return Ok(Action::await_change());
    }
    let reason = Some(UNSCHEDULABLE.to_owned());
    let now = sim::time::now();
    let scheduled =
        kubelet_status::condition(&conditions, "PodScheduled", false, reason, Some(message.clone()), now);
    let mut conditions: Vec<_> = conditions.into_iter().filter(|c| c.type_ != "PodScheduled").collect();
    conditions.push(scheduled);
    let mut patch = serde_json::json!({ "status": { "conditions": conditions } });
    if let Some(node) = nominated {
        patch["status"]["nominatedNodeName"] = serde_json::json!(node);
    }
    api.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let reference = events::reference(pod);
    boxed(|| events::failed_scheduling(&ctx.scheduler, &reference, message)).await;
    Ok(Action::await_change())
}

/// Evict the preemption's victims from `node` for `preemptor`, as the default preemption plugin's
/// `prepareCandidate`: each gets the condition `DisruptionTarget=True`, reason
/// `PreemptionByScheduler` (a strategic merge patch of its status), is deleted with its own grace
/// period, and gets a `Preempted` event; the Pods of lower priority nominated to `node` lose their
/// nomination. A victim gone meanwhile is no error.
async fn evict_victims(
    preemptor: &Pod,
    node: &str,
    victims: &[Arc<Pod>],
    ctx: &Context,
) -> Result<(), Error> {
    let scheduler_name =
        preemptor.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).unwrap_or(SCHEDULER_NAME);
    let condition = serde_json::json!({
        "type": podgc::CONDITION_DISRUPTION_TARGET,
        "status": "True",
        "reason": scheduler::REASON_PREEMPTION_BY_SCHEDULER,
        "message": format!("{scheduler_name}: preempting to accommodate a higher priority pod"),
        "lastTransitionTime": sim::time::now_k8s(),
    });
    let preemptor_ref = events::reference(preemptor);
    for victim in victims {
        let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &victim.namespace().unwrap_or_default());
        let name = victim.name_any();
        let marked = victim.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
            c.iter().any(|c| c.type_ == podgc::CONDITION_DISRUPTION_TARGET && c.status == "True")
        });
        if !marked {
            let patch = serde_json::json!({ "metadata": { "uid": victim.uid() }, "status": { "conditions": [condition] } });
            match api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
                Ok(_) => {}
                Err(e) if has_code(&e, 404) || has_code(&e, 409) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if has_code(&e, 404) => continue,
            Err(e) => return Err(e.into()),
        }
        events::preempted(&ctx.scheduler, &events::reference(victim.as_ref()), &preemptor_ref, node).await;
    }
    let own = scheduler::priority(preemptor);
    let lower = ctx.pods.state_filter(|p: &Pod| {
        !pod_state::is_scheduled(p) && scheduler::priority(p) < own && nominated_node(p) == Some(node)
    });
    for pod in lower {
        let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
        let patch = serde_json::json!({ "status": { "nominatedNodeName": null } });
        match api.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(e) if has_code(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The Node the scheduler nominated `pod` to (`status.nominatedNodeName`), if any.
fn nominated_node(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref()).filter(|n| !n.is_empty())
}

/// The reason of `PodScheduled=False` for a Pod no node fits.
pub const UNSCHEDULABLE: &str = "Unschedulable";

/// A delay in `[lo_ms, hi_ms]` milliseconds, drawn from [`DELAY_STREAM`].
fn delay_between(lo_ms: u64, hi_ms: u64) -> Duration {
    let ms = sim::random::in_stream(DELAY_STREAM).below(hi_ms.saturating_sub(lo_ms) + 1);
    Duration::from_millis(lo_ms + ms)
}

fn uid_of(pod: &Pod) -> String {
    pod.uid().unwrap_or_default()
}

/// Take a bound Pod on and bring it to `Running`, one [`Stage`] after the other, each written as
/// the kubelet's status of it ([`kubelet_status::status`]): accepted at once; after the start
/// delay (the sandbox, the image pulls) its first init container runs, or its containers start;
/// a regular init container runs for the run delay, and the next one starts as it completes; a
/// sidecar lets the next one start once its startup probe passed. Each step is taken from the
/// status read back, so that a kubelet-lite restarted half way goes on from where the Pod is.
async fn start(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    let mut current = pod.clone();
    loop {
        let stage = kubelet_status::stage(&current);
        let mut next = kubelet_status::next_stage(&current, stage);
        match stage {
            Stage::New => {}
            Stage::Accepted => {
                // The volumes are mounted before the sandbox is made: a ConfigMap or Secret they
                // need that is missing keeps the Pod `ContainerCreating` until it comes (its
                // change brings the Pod back here).
                let failures = boxed(|| mount_failures(&current, ctx)).await;
                if !failures.is_empty() {
                    for failure in failures {
                        let reference = events::reference(&current);
                        events::warning(&ctx.kubelet, &reference, "FailedMount", failure.message()).await;
                    }
                    return Ok(Action::await_change());
                }
                madsim::time::sleep(delay_between(START_DELAY_MS_MIN, START_DELAY_MS_MAX)).await
            }
            Stage::Initializing(k) => {
                let Some(container) = kubelet_status::init_containers(&current).get(k) else {
                    return Ok(Action::await_change());
                };
                if failing_init(&current) == Some(container.name.as_str())
                    && !kubelet_status::is_sidecar(container)
                {
                    return boxed(|| fail_init_container(api, &current, k, ctx)).await;
                }
                if !kubelet_status::is_sidecar(container) {
                    // One that crash-looped (its failure since fixed) runs again at its restart.
                    if let Some(due) = kubelet_status::next_restart(&current) {
                        sleep_until(due).await;
                    }
                    madsim::time::sleep(delay_between(RUN_DELAY_MS_MIN, RUN_DELAY_MS_MAX)).await;
                } else if !sidecar_started(&current, k) {
                    // The next init container waits until this sidecar's startup probe passed.
                    let due = kubelet_status::next_probe_due(&current, sim::time::now());
                    sleep_until(due.unwrap_or_else(sim::time::now)).await;
                    next = stage;
                }
            }
            Stage::Started => return Ok(Action::await_change()),
        }
        if past_active_deadline(&current) {
            return end_at_deadline(api, &current, ctx).await;
        }
        // An init container about to start whose environment reads a missing ConfigMap or
        // Secret is not created: it waits in `CreateContainerConfigError` until the change that
        // fixes it brings the Pod back here.
        if let Stage::Initializing(k) = next
            && next != stage
            && let Some(error) = boxed(|| init_config_error(&current, k, ctx)).await
        {
            return boxed(|| refuse_init_container(api, &current, k, &error, ctx)).await;
        }
        let errors = match next {
            Stage::Started => boxed(|| config_errors(&current, ctx)).await,
            _ => BTreeMap::new(),
        };
        let Some(written) = write_status(api, &current, next, outcome(&current), &errors).await? else {
            return Ok(Action::await_change());
        };
        if next == stage && written.resource_version() == current.resource_version() {
            return Ok(Action::await_change());
        }
        match next {
            Stage::Initializing(k) if next != stage => {
                let started = kubelet_status::init_containers(&written).get(k..=k).unwrap_or_default();
                boxed(|| publish_started(ctx, &written, started, true)).await;
            }
            Stage::Started => boxed(|| publish_start_attempt(ctx, &written, None)).await,
            _ => {}
        }
        current = written;
    }
}

/// The init container [`FAIL_INIT_ANNOTATION`] makes fail, if any.
fn failing_init(pod: &Pod) -> Option<&str> {
    pod.annotations().get(FAIL_INIT_ANNOTATION).map(String::as_str)
}

/// Init container `k` of `pod`, which runs, is the one that fails ([`FAIL_INIT_ANNOTATION`]):
/// after the run delay it exits; with `restartPolicy: Never` that fails the Pod, otherwise the
/// kubelet restarts it as it restarts any failing container (at once, then after its back-off,
/// each restart a `BackOff` event), and it fails again after [`kubelet_status::CRASH_RUN`]. Each restart comes back as an idle
/// requeue ([`Action::requeue_idle`]), as a crash-looping container's does.
async fn fail_init_container(api: &Api<Pod>, pod: &Pod, k: usize, ctx: &Context) -> Result<Action, Error> {
    let name = kubelet_status::init_containers(pod).get(k).map(|c| c.name.clone()).unwrap_or_default();
    let still = |known: &Pod| {
        !pod_state::is_terminating(known)
            && !pod_state::is_finished(known)
            && kubelet_status::stage(known) == Stage::Initializing(k)
    };
    let until_next_restart = |pod: &Pod| match kubelet_status::next_crash_step(pod) {
        Some(due) => {
            let left = Duration::try_from(due.duration_since(sim::time::now())).unwrap_or_default();
            Action::requeue_idle(left.max(Duration::from_millis(1)))
        }
        None => Action::await_change(),
    };
    if kubelet_status::next_crash_step(pod).is_some() {
        // Crash-looping already: restart it once its back-off has ended, and let a restarted
        // run exit once it has run.
        if kubelet_status::next_crash_step(pod).is_some_and(|due| due > sim::time::now()) {
            return Ok(until_next_restart(pod));
        }
        let restart = |known: &Pod| kubelet_status::restarted(known, sim::time::now());
        let Some(written) = write_status_with(api, pod, still, restart).await? else {
            return Ok(Action::await_change());
        };
        let restarts = |p: &Pod| {
            let statuses = p.status.as_ref().and_then(|s| s.init_container_statuses.as_deref());
            statuses.and_then(|s| s.get(k)).map_or(0, |s| s.restart_count)
        };
        if restarts(&written) > restarts(pod) {
            publish_back_off(ctx, &written, &name, true).await;
        }
        return Ok(until_next_restart(&written));
    }
    madsim::time::sleep(run_time(pod)).await;
    let code = exit_code(pod);
    let ip = pod_ip(pod);
    if restart_policy(pod) == "Never" {
        let failed = |known: &Pod| kubelet_status::init_failed(known, k, code, &ip, sim::time::now());
        write_status_with(api, pod, still, failed).await?;
        return Ok(Action::await_change());
    }
    let crashed = |known: &Pod| kubelet_status::init_crashed(known, k, code, &ip, sim::time::now());
    let Some(written) = write_status_with(api, pod, still, crashed).await? else {
        return Ok(Action::await_change());
    };
    publish_back_off(ctx, &written, &name, true).await;
    Ok(until_next_restart(&written))
}

/// Whether the sidecar that is init container `k` of `pod` has started (its startup probe
/// passed).
fn sidecar_started(pod: &Pod, k: usize) -> bool {
    let statuses = pod.status.as_ref().and_then(|s| s.init_container_statuses.as_deref()).unwrap_or_default();
    statuses.get(k).is_some_and(|s| s.started == Some(true))
}

/// A started Pod: mark its containers started and ready as their probes pass, keep `Ready` as its
/// readiness gates say (another controller sets their conditions), and end a Pod whose containers
/// run to completion after the run delay.
async fn keep_running(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    let outcome = outcome(pod);
    // A container refused for its configuration runs only once that is fixed (a ConfigMap or
    // Secret change brings the Pod back here).
    let errors = boxed(|| config_errors(pod, ctx)).await;
    let refused = kubelet_status::refused_containers(pod);
    // The containers that do not fail run to completion beside those that failed and are not
    // restarted (`restartPolicy: Never`), as they do in a Pod where none fails.
    let runs_on = outcome == Outcome::Run || matches!(outcome, Outcome::Failed(_)) && !fails_all(pod);
    let completes = runs_on && runs_to_completion(pod) && refused.is_empty();
    let ends_at = completes.then(|| later(sim::time::now(), run_time(pod)));
    // The active deadline ends the Pod first if it comes before its end (`reconcile` looks again
    // when it comes otherwise).
    let deadline = kubelet_status::active_deadline(pod);
    if let (Some(deadline), Some(end)) = (deadline, ends_at)
        && deadline <= end
    {
        sleep_until(deadline).await;
        return end_at_deadline(api, pod, ctx).await;
    }
    let mut current = pod.clone();
    let mut after_resize = None;
    if outcome == Outcome::Run {
        match boxed(|| resize(api, &current, ctx, &errors)).await? {
            Resized::Gone => return Ok(Action::await_change()),
            Resized::Unchanged => {}
            Resized::To(written, again) => {
                current = *written;
                after_resize = again;
            }
        }
    }
    loop {
        let due = kubelet_status::next_probe_due(&current, sim::time::now());
        match (due, ends_at) {
            (Some(due), ends) if ends.is_none_or(|end| due < end) => {
                sleep_until(due).await;
                match write_status(api, &current, Stage::Started, outcome, &errors).await? {
                    Some(written) if written.resource_version() != current.resource_version() => {
                        current = written
                    }
                    _ => return Ok(Action::await_change()),
                }
            }
            (_, Some(end)) => {
                sleep_until(end).await;
                write_status(api, &current, Stage::Started, Outcome::Succeeded, &errors).await?;
                return Ok(Action::await_change());
            }
            (_, None) => {
                // A readiness gate's condition (or the unready annotation) may have changed; most
                // changes of a running Pod change nothing the kubelet reports, and cost no call.
                let now = sim::time::now();
                let ip = pod_ip(&current);
                let next =
                    kubelet_status::status_blocked(&current, Stage::Started, outcome, &ip, now, &errors);
                if kubelet_status::differs(&current, &next) {
                    let ephemeral_before = kubelet_status::running_ephemeral(&current);
                    match write_status(api, &current, Stage::Started, outcome, &errors).await? {
                        Some(written) => current = written,
                        None => return Ok(Action::await_change()),
                    }
                    boxed(|| publish_ephemeral_started(ctx, &current, &ephemeral_before)).await;
                    // The containers whose configuration is fixed now start.
                    let started: BTreeSet<String> =
                        refused.difference(&kubelet_status::refused_containers(&current)).cloned().collect();
                    if !started.is_empty() {
                        boxed(|| publish_start_attempt(ctx, &current, Some(&started))).await;
                    }
                }
                if matches!(outcome, Outcome::CrashLoop(_)) {
                    return boxed(|| restart_crashed(api, &current, ctx)).await;
                }
                return Ok(after_resize.unwrap_or_else(Action::await_change));
            }
        }
    }
}

/// Where a sync leaves a running Pod's resize ([`resize`]).
enum Resized {
    /// The Pod moved on (deleted, finished) or is gone.
    Gone,
    /// No resize asked or shown: nothing written.
    Unchanged,
    /// The Pod as the kubelet wrote it (or found it), and when to look again (a deferred resize's
    /// retry).
    To(Box<Pod>, Option<Action>),
}

/// How long the runtime takes to make an admitted resize, at least and at most.
pub const RESIZE_DELAY_MS_MIN: u64 = 100;
/// See [`RESIZE_DELAY_MS_MIN`].
pub const RESIZE_DELAY_MS_MAX: u64 = 1_000;
/// When a deferred resize is tried again: the kubelet's next sync of the Pod (`syncFrequency`).
pub const RESIZE_RETRY: Duration = Duration::from_secs(60);

/// The kubelet's part of an in-place resize of running `pod` ([`kubelet_resize`]): admit what its
/// spec asks if it fits (`PodResizeInProgress`, the allocation), make it after a moment (the
/// containers' `resources`, a restart where the resize policy asks for one), or report why not
/// (`PodResizePending`, a deferred one tried again at the next sync).
async fn resize(
    api: &Api<Pod>,
    pod: &Pod,
    ctx: &Context,
    errors: &BTreeMap<String, String>,
) -> Result<Resized, Error> {
    let fits = |p: &Pod| resize_fits(ctx, p);
    if kubelet_resize::step(pod, fits) == kubelet_resize::Step::Settled && !kubelet_resize::shows_resize(pod)
    {
        return Ok(Resized::Unchanged);
    }
    let still = |known: &Pod| {
        !pod_state::is_terminating(known)
            && !pod_state::is_finished(known)
            && kubelet_status::stage(known) == Stage::Started
    };
    let next = |known: &Pod| {
        let now = sim::time::now();
        let step = kubelet_resize::step(known, |p| resize_fits(ctx, p));
        let unready = known.annotations().get(UNREADY_ANNOTATION).is_some_and(|v| v == "true");
        let resized = kubelet_resize::resized(known, &step, unready, now);
        kubelet_status::status_blocked(&resized, Stage::Started, Outcome::Run, &pod_ip(known), now, errors)
    };
    let Some(mut written) = write_status_with(api, pod, still, next).await? else { return Ok(Resized::Gone) };
    if kubelet_resize::in_progress(&written) {
        madsim::time::sleep(delay_between(RESIZE_DELAY_MS_MIN, RESIZE_DELAY_MS_MAX)).await;
        let before = written.clone();
        let Some(made) = write_status_with(api, &before, still, next).await? else {
            return Ok(Resized::Gone);
        };
        written = made;
        publish_resize_restarts(ctx, &before, &written).await;
    }
    let again = kubelet_resize::deferred(&written).then(|| Action::requeue_idle(RESIZE_RETRY));
    Ok(Resized::To(Box::new(written), again))
}

/// `Killing` (`Container app resize requires restart`), then `Pulled`, `Created` and `Started`,
/// for each container of `after` whose restart count the resize raised (a sidecar is resized
/// without a restart: [`kubelet_resize`]).
async fn publish_resize_restarts(ctx: &Context, before: &Pod, after: &Pod) {
    let earlier = restart_counts(before);
    for (name, restarts) in restart_counts(after) {
        if earlier.get(name).is_some_and(|b| *b < restarts) {
            let regarding = container_reference(after, name, false);
            let message = format!("Container {name} resize requires restart");
            events::normal(&ctx.kubelet, &regarding, "Killing", message).await;
            let spec = kubelet_status::containers(after).iter().find(|c| c.name == name);
            let image = spec.and_then(|c| c.image.as_deref()).unwrap_or_default();
            publish_run(ctx, &regarding, name, image).await;
        }
    }
}

/// The restart count of each of `pod`'s (regular) containers, by name.
fn restart_counts(pod: &Pod) -> BTreeMap<&str, i32> {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    statuses.into_iter().flatten().map(|s| (s.name.as_str(), s.restart_count)).collect()
}

/// Whether `pod`'s spec fits the Node ([`kubelet_resize::fit`]): its requests against the Node's
/// allocatable, then beside what the Node's other Pods (not finished) hold.
fn resize_fits(ctx: &Context, pod: &Pod) -> Result<(), (&'static str, String)> {
    let node = ctx.nodes.get(&ObjectRef::new(NODE_NAME));
    let allocatable = scheduler::allocatable(node.as_deref().unwrap_or(&Node::default()));
    let uid = pod.uid();
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    let others = ctx.pods.state_filter(|p| {
        p.uid() != uid
            && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(NODE_NAME)
            && !pod_state::is_finished(p)
    });
    for other in others {
        for (name, value) in scheduler::pod_requests(&other) {
            *used.entry(name).or_default() += value;
        }
    }
    kubelet_resize::fit(&scheduler::pod_spec_requests(pod), &used, &allocatable)
}

/// A crash-looping Pod: restart each container whose back-off has ended (one restart more, a
/// `BackOff` event, running for [`kubelet_status::CRASH_RUN`]) and let each restarted one that
/// has run exit again (its back-off doubled), then come back at the next of those steps. That comes back as an idle requeue ([`Action::requeue_idle`]): a crash loop
/// never ends, and the liveness phase must not wait for it, yet while a workload waits (for a
/// Job to give up on its restarts) the restarts go on.
async fn restart_crashed(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    let mut current = Cow::Borrowed(pod);
    if kubelet_status::next_crash_step(pod).is_some_and(|due| due <= sim::time::now()) {
        let still = |known: &Pod| {
            !pod_state::is_terminating(known)
                && !pod_state::is_finished(known)
                && kubelet_status::stage(known) == Stage::Started
        };
        let restart = |known: &Pod| kubelet_status::restarted(known, sim::time::now());
        let Some(written) = write_status_with(api, pod, still, restart).await? else {
            return Ok(Action::await_change());
        };
        let before = restart_counts(pod);
        for (name, restarts) in restart_counts(&written) {
            if before.get(name).is_some_and(|b| *b < restarts) {
                publish_back_off(ctx, &written, name, false).await;
            }
        }
        current = Cow::Owned(written);
    }
    Ok(match kubelet_status::next_crash_step(&current) {
        Some(due) => {
            let left = Duration::try_from(due.duration_since(sim::time::now())).unwrap_or_default();
            Action::requeue_idle(left.max(Duration::from_millis(1)))
        }
        None => Action::await_change(),
    })
}

/// The kubelet's `BackOff` Warning for container `name` of `pod` (an init container's when
/// `init`), which backs off before its next restart.
async fn publish_back_off(ctx: &Context, pod: &Pod, name: &str, init: bool) {
    let regarding = container_reference(pod, name, init);
    let message = format!(
        "Back-off restarting failed container {name} in pod {}",
        kubelet_status::pod_description(pod)
    );
    events::warning(&ctx.kubelet, &regarding, "BackOff", message).await;
}

/// How long `pod`'s containers run to completion: [`RUN_SECONDS_ANNOTATION`], or the run delay.
fn run_time(pod: &Pod) -> Duration {
    let given = pod.annotations().get(RUN_SECONDS_ANNOTATION).and_then(|v| v.parse::<u64>().ok());
    given.map_or_else(|| delay_between(RUN_DELAY_MS_MIN, RUN_DELAY_MS_MAX), Duration::from_secs)
}

/// How `pod`'s containers end once started ([`FAIL_ANNOTATION`], `restartPolicy`).
fn outcome(pod: &Pod) -> Outcome {
    if !fails(pod) {
        Outcome::Run
    } else if restart_policy(pod) == "Never" {
        Outcome::Failed(exit_code(pod))
    } else {
        Outcome::CrashLoop(exit_code(pod))
    }
}

fn later(t: k8s_openapi::jiff::Timestamp, by: Duration) -> k8s_openapi::jiff::Timestamp {
    let by =
        k8s_openapi::jiff::SignedDuration::try_from(by).unwrap_or(k8s_openapi::jiff::SignedDuration::MAX);
    t.checked_add(by).unwrap_or(t)
}

/// Sleep on the virtual clock until `t` (not at all if it has passed).
async fn sleep_until(t: k8s_openapi::jiff::Timestamp) {
    let left = t.duration_since(sim::time::now());
    if let Ok(left) = Duration::try_from(left) {
        madsim::time::sleep(left).await;
    }
}

/// Write the Pod's status at stage `to` ([`kubelet_status::status`]) if that differs from what it
/// shows, while it is the same Pod at the stage `base` is at and not being deleted
/// ([`write_status_with`]).
async fn write_status(
    api: &Api<Pod>,
    base: &Pod,
    to: Stage,
    outcome: Outcome,
    config_errors: &BTreeMap<String, String>,
) -> Result<Option<Pod>, Error> {
    let stage = kubelet_status::stage(base);
    let still = |known: &Pod| {
        !pod_state::is_terminating(known)
            && !pod_state::is_finished(known)
            && kubelet_status::stage(known) == stage
    };
    let next = |known: &Pod| {
        kubelet_status::status_blocked(known, to, outcome, &pod_ip(known), sim::time::now(), config_errors)
    };
    write_status_with(api, base, still, next).await
}

/// The errors that keep the kubelet from creating `pod`'s containers, by container
/// ([`kubelet_sources::config_error`]), once the ConfigMap and Secret caches have their first
/// lists (a Pod whose environment reads neither waits for nothing).
async fn config_errors(pod: &Pod, ctx: &Context) -> BTreeMap<String, String> {
    let containers = kubelet_status::containers(pod);
    if !containers.iter().any(kubelet_sources::reads_any) {
        return BTreeMap::new();
    }
    let Some(sources) = ctx.sources().await else { return BTreeMap::new() };
    let namespace = pod.namespace().unwrap_or_default();
    containers
        .iter()
        .filter_map(|c| Some((c.name.clone(), kubelet_sources::config_error(c, &namespace, &sources)?)))
        .collect()
}

/// The error that keeps the kubelet from creating init container `k` of `pod`
/// ([`kubelet_sources::config_error`]), once the ConfigMap and Secret caches have their first
/// lists.
async fn init_config_error(pod: &Pod, k: usize, ctx: &Context) -> Option<String> {
    let container = kubelet_status::init_containers(pod).get(k).filter(|c| kubelet_sources::reads_any(c))?;
    let sources = ctx.sources().await?;
    kubelet_sources::config_error(container, &pod.namespace().unwrap_or_default(), &sources)
}

/// Write `pod`'s status with init container `k` refused for its configuration
/// ([`kubelet_status::init_refused`]), and, when that is new, its `Pulled` and `Failed` events.
async fn refuse_init_container(
    api: &Api<Pod>,
    pod: &Pod,
    k: usize,
    error: &str,
    ctx: &Context,
) -> Result<Action, Error> {
    let stage = kubelet_status::stage(pod);
    let still = |known: &Pod| {
        !pod_state::is_terminating(known)
            && !pod_state::is_finished(known)
            && kubelet_status::stage(known) == stage
    };
    let outcome = outcome(pod);
    let refused = |known: &Pod| {
        kubelet_status::init_refused(known, k, outcome, &pod_ip(known), sim::time::now(), error)
    };
    let Some(written) = write_status_with(api, pod, still, refused).await? else {
        return Ok(Action::await_change());
    };
    if written.resource_version() != pod.resource_version()
        && let Some(container) = kubelet_status::init_containers(&written).get(k)
    {
        publish_refused(ctx, &written, container, true, error).await;
    }
    Ok(Action::await_change())
}

/// The events of `pod`'s containers as the kubelet tried to start them: `Pulled`, `Created`
/// and `Started` for those that started, `Pulled` and the Warning `Failed` (`Error: <why>`) for
/// those refused for their configuration. `only` limits them to the named containers.
async fn publish_start_attempt(ctx: &Context, pod: &Pod, only: Option<&BTreeSet<String>>) {
    let refused = kubelet_status::refused_containers(pod);
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
    let wanted = |c: &&Container| only.is_none_or(|names| names.contains(&c.name));
    let started: Vec<Container> = kubelet_status::containers(pod)
        .iter()
        .filter(wanted)
        .filter(|c| !refused.contains(&c.name))
        .cloned()
        .collect();
    publish_started(ctx, pod, &started, false).await;
    for container in
        kubelet_status::containers(pod).iter().filter(wanted).filter(|c| refused.contains(&c.name))
    {
        let why = statuses
            .iter()
            .find(|s| s.name == container.name)
            .and_then(|s| s.state.as_ref()?.waiting.as_ref()?.message.clone())
            .unwrap_or_default();
        publish_refused(ctx, pod, container, false, &why).await;
    }
}

/// Write the status `next` makes of the Pod if that differs from what it shows, while it is the
/// same Pod as `base` and `still` holds of it; the Pod as written (or as read, when nothing
/// differed), or `None` when it moved on. The write is conditional on the resourceVersion it is
/// built from: first `base`'s (the cached Pod, or the one this reconcile wrote last: one call
/// when nothing else changed it), then, on a conflict, the Pod read back. So a condition another
/// controller sets meanwhile (a readiness gate's, `DisruptionTarget`) is not lost: upstream's
/// strategic merge patch merges conditions by type, a merge patch replaces the list.
async fn write_status_with(
    api: &Api<Pod>,
    base: &Pod,
    still: impl Fn(&Pod) -> bool,
    next: impl Fn(&Pod) -> PodStatus,
) -> Result<Option<Pod>, Error> {
    let name = base.name_any();
    let mut known = base.clone();
    let mut read_back = false;
    loop {
        if known.uid() != base.uid() || !still(&known) {
            return Ok(None);
        }
        let status = next(&known);
        if !kubelet_status::differs(&known, &status) {
            return Ok(Some(known));
        }
        let mut patch = super::status_patch::replacing(known.status.as_ref(), &status)?;
        patch["metadata"] = serde_json::json!({ "resourceVersion": known.resource_version() });
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(written) => return Ok(Some(written)),
            Err(e) if has_code(&e, 404) => return Ok(None),
            Err(e) if has_code(&e, 409) && !read_back => {
                let Some(current) = api.get_opt(&name).await? else { return Ok(None) };
                known = current;
                read_back = true;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Wait out the grace period, write the Pod's terminal status ([`kubelet_status::killed`]: its
/// containers killed, phase `Failed`, as the kubelet does before a deleted Pod goes, since 1.27),
/// then remove the Pod (grace 0, uid precondition). A Pod whose containers run gets `Killing` for
/// each first.
async fn terminate(api: &Api<Pod>, pod: &Pod, ctx: &Context) -> Result<Action, Error> {
    let grace_seconds = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    let still_running = |known: &Pod| pod_state::is_terminating(known) && !pod_state::is_finished(known);
    let kill = |known: &Pod| kubelet_status::killed(known, sim::time::now());
    if grace_seconds <= 0 {
        // Grace 0 with finalizers pending: the containers are killed at once, and the server
        // removes the Pod once the finalizers are gone.
        if kubelet_status::stage(pod) != Stage::New {
            write_status_with(api, pod, still_running, kill).await?;
        }
        return Ok(Action::await_change());
    }
    if pod_state::phase(pod) == pod_state::PHASE_RUNNING {
        for container in kubelet_status::containers(pod) {
            let message = format!("Stopping container {}", container.name);
            events::normal(
                &ctx.kubelet,
                &container_reference(pod, &container.name, false),
                "Killing",
                message,
            )
            .await;
        }
    }
    // A finished Pod's containers are gone already (this one's, or those this kubelet-lite killed
    // before its own status write brought the Pod back here): nothing to wait for.
    if !pod_state::is_finished(pod) {
        madsim::time::sleep(Duration::from_secs(grace_seconds.unsigned_abs())).await;
        // A Pod the kubelet never took on (deleted before it was bound, or at once) has no
        // containers to report.
        if kubelet_status::stage(pod) != Stage::New {
            write_status_with(api, pod, still_running, kill).await?;
        }
    }
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions { uid: pod.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(_) => Ok(Action::await_change()),
        Err(e) if has_code(&e, 404) => Ok(Action::await_change()),
        // The uid precondition failed: done if the name now holds another Pod; otherwise (a
        // fault's 409) retry, since nothing else would trigger another attempt.
        Err(e) if has_code(&e, 409) => match api.get_opt(&pod.name_any()).await? {
            Some(current) if current.uid() == pod.uid() => Err(e.into()),
            _ => Ok(Action::await_change()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Whether some of the Pod's containers are configured to fail ([`FAIL_ANNOTATION`]).
pub fn fails(pod: &Pod) -> bool {
    kubelet_status::containers(pod).iter().any(|c| fails_container(pod, &c.name))
}

/// Whether (regular) container `name` of the Pod is configured to fail: [`FAIL_ANNOTATION`] is
/// `"true"`, or a comma-separated list that names it.
pub fn fails_container(pod: &Pod, name: &str) -> bool {
    pod.annotations()
        .get(FAIL_ANNOTATION)
        .is_some_and(|v| v == "true" || v.split(',').any(|n| n.trim() == name))
}

/// Whether every (regular) container of the Pod is configured to fail.
pub(crate) fn fails_all(pod: &Pod) -> bool {
    kubelet_status::containers(pod).iter().all(|c| fails_container(pod, &c.name))
}

/// The exit code of a failing Pod's containers ([`EXIT_CODE_ANNOTATION`]).
fn exit_code(pod: &Pod) -> i32 {
    let given = pod.annotations().get(EXIT_CODE_ANNOTATION).and_then(|v| v.parse::<i32>().ok());
    given.filter(|code| *code != 0).unwrap_or(FAILED_EXIT_CODE)
}

/// Whether the Pod's containers run to completion: those whose `restartPolicy` is `Never` or
/// `OnFailure` (a Job's, a Helm hook's or test's, `kubectl run --restart=Never`); with `Always`
/// (every Deployment's, StatefulSet's and DaemonSet's) an exit would restart them, so they run
/// until deleted. kube-sim runs no command, so this is the one sign of a workload that ends.
fn runs_to_completion(pod: &Pod) -> bool {
    restart_policy(pod) != "Always"
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("Always")
}

/// A Pod IP in 10.244.0.0/16, from the uid.
fn pod_ip(pod: &Pod) -> String {
    let hash = hashing::fnv64(uid_of(pod).as_bytes());
    format!("10.244.{}.{}", (hash >> 8) % 256, hash % 254 + 1)
}
