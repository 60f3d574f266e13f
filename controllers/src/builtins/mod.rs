//! # Built-in controllers
//!
//! What kube-controller-manager and a kubelet do for a real cluster, as simulated controllers, so
//! that an operator's end-to-end behaviour (garbage collection, Deployments rolling out, Pods
//! becoming Ready, namespaces going away) can be tested without a cluster.
//!
//! Each is an ordinary controller on its own node, written only against `sim`'s public,
//! kube-rs-shaped API, so it can run trusted or under faults like any controller under test:
//!
//! | function | node | what it does |
//! |---|---|---|
//! | [`garbage_collector()`] | `garbage-collector` | background, foreground and orphan propagation |
//! | [`namespace_controller()`] | `namespace-controller` | empties a terminating namespace, then finalizes it |
//! | [`deployment_controller()`] | `deployment-controller` | Deployment → ReplicaSets, rolling update |
//! | [`replicaset_controller()`] | `replicaset-controller` | ReplicaSet → Pods |
//! | [`statefulset_controller()`] | `statefulset-controller` | StatefulSet → ordered Pods and PVCs, ControllerRevisions, rolling update |
//! | [`daemonset_controller()`] | `daemonset-controller` | DaemonSet → one Pod per matching Node, rolling update |
//! | [`job_controller()`] | `job-controller` | Job → Pods until `completions` succeed (NonIndexed or Indexed, with a per-index backoff), each finished Pod counted once through its `batch.kubernetes.io/job-tracking` finalizer |
//! | [`cronjob_controller()`] | `cronjob-controller` | CronJob → a Job per due time, on the virtual clock |
//! | [`disruption_controller()`] | `disruption-controller` | PodDisruptionBudget → its status: healthy and expected Pods, `disruptionsAllowed`, expired `disruptedPods` dropped |
//! | [`ttl_after_finished_controller()`] | `ttl-after-finished-controller` | deletes a finished Job (foreground, Pods first) `ttlSecondsAfterFinished` after it finished |
//! | [`serviceaccounts_controller()`] | `serviceaccount-controller` | a `default` ServiceAccount in every active namespace |
//! | [`root_ca_cert_publisher()`] | `root-ca-certificate-publisher-controller` | a `kube-root-ca.crt` ConfigMap (a fake CA bundle) in every active namespace, restored when edited or deleted |
//! | [`endpoints_controller()`] | `endpoints-controller` | Service → an Endpoints of its selected Pods: ready and not-ready addresses, resolved ports |
//! | [`endpointslice_controller()`] | `endpointslice-controller` | Service → EndpointSlices of its selected Pods (owned by it): conditions, ports, zones, at most 100 endpoints each |
//! | [`persistentvolume_binder()`] | `persistentvolume-binder` | binds PersistentVolumeClaims to PersistentVolumes (the smallest that fits, or the one named), gives a classless claim the default StorageClass, hands claims to their class's provisioner, releases a volume whose claim is gone |
//! | [`local_provisioner()`] | `local-provisioner` | installs the default StorageClass `standard` (kind's local-path provisioner's stand-in), provisions a volume for each of its claims, expands it when a bound claim of a class with `allowVolumeExpansion` grows (the CSI external-resizer's steps), deletes them once released |
//! | [`pvc_protection_controller()`] | `pvc-protection-controller` | keeps a deleted PersistentVolumeClaim (its `kubernetes.io/pvc-protection` finalizer) while a scheduled Pod mounts it |
//! | [`pv_protection_controller()`] | `pv-protection-controller` | keeps a deleted PersistentVolume (its `kubernetes.io/pv-protection` finalizer) while it is bound |
//! | [`ephemeral_volume_controller()`] | `ephemeral-volume-controller` | a PersistentVolumeClaim `<pod>-<volume>`, owned by the Pod, for each generic ephemeral volume |
//! | [`resource_quota_controller()`] | `resourcequota-controller` | ResourceQuota → its `status` (`hard`, and `used` recalculated from the namespace's objects), which kube-apiserver's `ResourceQuota` admission plugin (turned on with it) enforces and charges |
//! | [`podgc_controller()`] | `pod-garbage-collector` | force-deletes a Pod whose Node is gone (40 s after, marked `Failed` with `DisruptionTarget`), a terminating Pod never scheduled, and a terminating Pod on an out-of-service Node |
//! | [`node_lifecycle_controller()`] | `node-lifecycle-controller` | taints Nodes by their conditions: `NoSchedule` for not Ready, unreachable, under pressure or cordoned; `NoExecute` for not Ready or unreachable, one Node per zone every 10 s, none while every zone is down |
//! | [`taint_eviction_controller()`] | `taint-eviction-controller` | deletes the Pods on a Node with a `NoExecute` taint they do not tolerate, at once or after their `tolerationSeconds`, marked `DisruptionTarget` |
//! | [`kubelet()`] | `kubelet` | registers its Node `node-1`; schedules Pods on the Nodes they fit ([`scheduler`]: cordons, taints, node selectors and affinity, host ports, CPU, memory and extended resources, required Pod affinity and anti-affinity, `DoNotSchedule` topology spread ([`pod_topology`]); scheduling gates; preemption of lower-priority Pods) through `pods/binding` once their claims are bound, and runs them as the kubelet reports it ([`kubelet_status`]): ContainerCreating (until the ConfigMaps and Secrets their volumes project exist; a container whose environment reads a missing one waits in CreateContainerConfigError: [`kubelet_sources`]), init containers in order (sidecars kept running), Running, Ready once readiness probes' delays and readiness gates allow, Succeeded or Failed, or crash-looping with the kubelet's doubling back-off; resizes running Pods in place ([`kubelet_resize`]) |
//!
//! ```ignore
//! let world = controllers::builtins::all(Sim::builder()).workload(|w| async move { ... });
//! ```
//!
//! The same controllers also run live, unchanged, behind `kube-sim serve --with-builtins`
//! (`kube_sim::serve::builtins`, through `sim::live`).
//!
//! For properties over their objects, [`snapshot`] reads typed objects from a cluster snapshot
//! and [`checks::garbage_collected`] checks `no_orphans` and `no_stuck_deletions` at the end.
//!
//! ## How they read the world
//!
//! The PersistentVolume binder reads volumes, claims and StorageClasses from its caches and
//! writes with the resourceVersion it read (a stale decision gets 409 and is retried), as
//! upstream's does. The workload controllers read what they manage from their informers' caches,
//! as upstream reads its listers, and start syncing once those caches have their first list
//! (`WaitForCacheSync`). A cache lags independently of the watch that triggered a sync, so each
//! guards its writes as upstream's does: the ReplicaSet, Job and DaemonSet controllers (Pods, and
//! the DaemonSet controller's Nodes) hold their creates and deletes back on [`expectations`]
//! until the cache shows their earlier ones; the Deployment controller (ReplicaSets) decides only
//! conditional writes (the resourceVersion read, or the new ReplicaSet's name), so a stale decision
//! gets 409 and is taken again; the StatefulSet controller (Pods) creates Pods of stable names, so
//! a Pod the cache does not show yet is answered `AlreadyExists` and the sync retried; the CronJob
//! controller (Jobs) names each Job after its due time, and reads a Job its status lists but
//! the cache does not show from the server before calling it missing. The StatefulSet and
//! DaemonSet controllers read their ControllerRevisions from caches too
//! ([`controller_revisions`]). The Deployment controller's Recreate rollout reads the old Pods
//! from a Pod cache, whose deletion of a Deployment's last Pod syncs it (upstream's
//! `deletePod`). The StatefulSet controller reads a Pod's claims from a claim cache too (a claim
//! the cache does not show yet is answered `AlreadyExists` and read). The namespace controller,
//! and the StatefulSet controller for the claims of condemned ordinals, list through the API at
//! each sync. The PVC protection controller reads Pods from its cache and, before it lets a
//! deleted claim go, from a live list of its namespace, as upstream's (the cache may not show a
//! Pod just scheduled). The disruption controller reads Pods from its own cache, as
//! upstream reads its Pod lister: it creates nothing, so a lagging cache only delays a status
//! that the Pod event behind the lag corrects. The ServiceAccount controller and the root CA publisher read their one
//! object per namespace from their own caches too, as upstream reads its listers: a lagging cache
//! costs at most a create answered `AlreadyExists`, an update answered 409, or a recreate that
//! waits for the delete event. The TTL-after-finished controller reads Jobs from its cache and
//! re-reads an expired one from the server before deleting it, as upstream. The Pod garbage
//! collector reads Pods and Nodes from its caches and reads a Node missing from its cache from the
//! server before it deletes the Pods bound to it, as upstream. The endpoints and EndpointSlice controllers read Services, Pods and what they
//! write from caches, as upstream's listers, and guard against their own writes not yet cached as
//! upstream does (a tracker of what they wrote; an update that carries the resourceVersion read),
//! with handlers that see a Pod's labels before an update and every deletion ([`changes`]).
//! The garbage collector reads informer caches and re-reads from the server before it acts; the kubelet-lite
//! acts on the Pod that triggered it and re-reads it after each delay.
//!
//! ## How they retry
//!
//! A failed sync is retried as kube-controller-manager's work queues retry it ([`rate_limit`]):
//! after 5 ms, doubled at each consecutive failure of the object (at most 1000 s, the namespace
//! controller's at most 60 s), within a queue-wide 10 retries a second; a success forgets the
//! object's failures. The Job controller's queue starts at 1 s and stops at 60 s, per object only;
//! the EndpointSlice controller's starts at 1 s; the Deployment, endpoints and EndpointSlice
//! controllers drop an object after 15 retries until its next event. The kubelet-lite and the volume controllers, whose upstream counterparts
//! resync on a period rather than back off, retry after [`ERROR_REQUEUE`].
//!
//! ## Where they differ from the real ones
//!
//! - Times (Pod `startTime`, conditions' times, Job `startTime` and `completionTime`, CronJob
//!   schedules, `minReadySeconds`: a Pod is available once Ready for longer than that, as
//!   `podutil.IsPodAvailable`) come from `sim::time`'s virtual clock.
//! - The Deployment controller implements both strategies, revisions and rollback (as
//!   `kubectl rollout undo` does it), `paused` and `progressDeadlineSeconds`; the StatefulSet
//!   controller `OrderedReady` and `Parallel`, ControllerRevisions, RollingUpdate (with
//!   `partition` and `maxUnavailable`) and OnDelete; the DaemonSet controller placement by
//!   `nodeSelector`, required node affinity and untolerated taints (with the daemon Pods' own
//!   tolerations), RollingUpdate with and without `maxSurge`; the Job controller
//!   `completions`, `parallelism` and `backoffLimit` in NonIndexed and Indexed mode, with Pod
//!   tracking finalizers, the interim `SuccessCriteriaMet`/`FailureTarget` conditions and the
//!   per-index backoff and success policies; the CronJob controller UTC schedules with the
//!   three concurrency policies.
//! - They publish the Events the real controllers and the kubelet publish ([`events`]), best
//!   effort.
//! - The garbage collector rebuilds its graph from informer caches every
//!   [`garbage_collector::SCAN_INTERVAL`] (skipping the scan while no cache has changed since
//!   one that needed no request) instead of from a dynamic event stream (see `NEEDS(sim)`
//!   there).

pub mod changes;
pub mod checks;
pub mod controller_revisions;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoint_pods;
pub mod endpoints;
pub mod endpointslice;
pub mod endpointslice_reconciler;
pub mod endpointslice_tracker;
pub mod ephemeral;
pub mod error;
pub mod events;
pub mod expectations;
pub mod garbage_collector;
pub mod hashing;
pub mod indexed_job;
pub mod job;
pub mod kinds;
pub mod kubelet;
pub mod kubelet_resize;
pub mod kubelet_sources;
pub mod kubelet_status;
pub mod labels;
pub mod local_provisioner;
pub mod namespace;
pub mod node_lifecycle;
pub mod owners;
pub mod per_namespace;
pub mod persistentvolume;
pub(crate) mod pod_control;
pub mod pod_state;
pub mod pod_topology;
pub mod podgc;
pub mod quantity;
pub mod rate_limit;
pub mod replicaset;
pub mod resource_quota;
pub mod root_ca_publisher;
pub mod scheduler;
pub mod serviceaccounts;
pub mod snapshot;
pub mod statefulset;
pub mod status_patch;
pub mod taint_eviction;
pub mod templates;
pub mod ttl_after_finished;
pub mod volume_binding;
pub mod volume_protection;

use std::sync::Arc;
use std::time::Duration;

use sim::SimBuilder;
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, Store};
use sim::runtime::watcher;

pub use cronjob::cronjob_controller;
pub use daemonset::daemonset_controller;
pub use deployment::deployment_controller;
pub use disruption::disruption_controller;
pub use endpoints::endpoints_controller;
pub use endpointslice::endpointslice_controller;
pub use ephemeral::ephemeral_volume_controller;
pub use error::Error;
pub use garbage_collector::garbage_collector;
pub use job::job_controller;
pub use kubelet::kubelet;
pub use local_provisioner::local_provisioner;
pub use namespace::namespace_controller;
pub use node_lifecycle::node_lifecycle_controller;
pub use persistentvolume::persistentvolume_binder;
pub use podgc::podgc_controller;
pub use replicaset::replicaset_controller;
pub use resource_quota::resource_quota_controller;
pub use root_ca_publisher::root_ca_cert_publisher;
pub use serviceaccounts::serviceaccounts_controller;
pub use statefulset::statefulset_controller;
pub use taint_eviction::taint_eviction_controller;
pub use ttl_after_finished::ttl_after_finished_controller;
pub use volume_protection::{
    pv_protection_controller, pvc_protection_controller, volume_protection_controllers,
};

/// How soon the kubelet-lite and the volume controllers retry a failed sync (a 409 from a stale
/// cache, a fault): the next attempt reads fresh state. The others back off ([`rate_limit`]).
pub const ERROR_REQUEUE: Duration = Duration::from_millis(500);

/// A function that adds one built-in controller to a world.
type AddBuiltin = fn(SimBuilder) -> SimBuilder;

/// `make`'s future in a box of its own, written in place: `Box::pin(step(..))` builds the whole
/// future on the stack (as large as its largest state, most of it not yet written) and copies it
/// into the box. The built-ins box the nested steps a reconcile awaits, to keep their own futures
/// small to move.
pub(crate) fn boxed<F: std::future::Future>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    let boxed: Box<F> = Box::write(Box::new_uninit(), make());
    Box::into_pin(boxed)
}

/// Add every built-in controller to a world, but those it already has (a world that runs the
/// garbage collector alone can be given all the others), and turn on kube-apiserver's Pod
/// admission plugins in its model servers
/// ([`model_apiserver::ServerConfig::pod_admission_plugins`]), as a cluster has them with
/// kube-controller-manager: every created Pod gets the `default` ServiceAccount (which the
/// ServiceAccount controller creates; a Pod that names another that is missing is refused 403),
/// the projected token volume `kube-api-access-<suffix>` mounted in each
/// container, `priority` and `preemptionPolicy` from its PriorityClass, and the `not-ready` and
/// `unreachable` `NoExecute` tolerations for 300 s.
pub fn all(builder: SimBuilder) -> SimBuilder {
    let adders: [(&str, AddBuiltin); 24] = [
        (garbage_collector::NODE, garbage_collector),
        (namespace::NODE, namespace_controller),
        (deployment::NODE, deployment_controller),
        (replicaset::NODE, replicaset_controller),
        (statefulset::NODE, statefulset_controller),
        (daemonset::NODE, daemonset_controller),
        (job::NODE, job_controller),
        (cronjob::NODE, cronjob_controller),
        (disruption::NODE, disruption_controller),
        (ttl_after_finished::NODE, ttl_after_finished_controller),
        (serviceaccounts::NODE, serviceaccounts_controller),
        (root_ca_publisher::NODE, root_ca_cert_publisher),
        (endpoints::NODE, endpoints_controller),
        (endpointslice::NODE, endpointslice_controller),
        (persistentvolume::NODE, persistentvolume_binder),
        (local_provisioner::NODE, local_provisioner),
        (volume_protection::PVC_NODE, pvc_protection_controller),
        (volume_protection::PV_NODE, pv_protection_controller),
        (ephemeral::NODE, ephemeral_volume_controller),
        (podgc::NODE, podgc_controller),
        (node_lifecycle::NODE, node_lifecycle_controller),
        (taint_eviction::NODE, taint_eviction_controller),
        (resource_quota::NODE, resource_quota_controller),
        (kubelet::NODE, kubelet),
    ];
    let present = builder.controller_names();
    let builder = adders.into_iter().fold(builder, |builder, (node, add)| {
        if present.iter().any(|p| p == node) { builder } else { add(builder) }
    });
    builder.server_config_with(|config| config.pod_admission_plugins = true)
}

/// Every `K` of the cluster in a shared informer's cache, and the stream of the objects it
/// touches (for `Controller::owns_shared_stream` / `watches_shared_stream`), once the cache has
/// its first list: a workload controller syncs only then (upstream's `WaitForCacheSync`), so that
/// a restarted one does not take an empty cache for no children. `None` if the informer ended
/// first.
pub(crate) async fn synced_cache<K>(
    client: &sim::Client,
) -> Option<(Store<K>, futures::channel::mpsc::UnboundedReceiver<Arc<K>>)>
where
    K: kube_core::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let cache = reflector::informer(sim::Api::<K>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial list reaches the stream.
    let changes = cache.subscribe();
    cache.wait_until_ready().await.ok()?;
    Some((cache, changes))
}

/// The error policy of the kubelet-lite and the volume controllers: retry after [`ERROR_REQUEUE`].
pub(crate) fn retry_soon<K, C>(_object: Arc<K>, error: &Error, _ctx: Arc<C>) -> Action {
    tracing::debug!(%error, "reconcile failed; retrying");
    Action::requeue(ERROR_REQUEUE)
}
