//! The PVC and PV protection controllers: a PersistentVolumeClaim is not removed while a Pod uses
//! it, nor a PersistentVolume while it is bound, as kube-controller-manager's
//! `pvc-protection-controller` and `pv-protection-controller`
//! (`pkg/controller/volume/pvcprotection`, `pkg/controller/volume/pvprotection`).
//!
//! They go with kube-apiserver's `StorageObjectInUseProtection` admission plugin, which gives every
//! created claim the finalizer [`PVC_FINALIZER`] and every created volume [`PV_FINALIZER`]: adding
//! either controller to a world turns the plugin on in its model servers
//! ([`model_apiserver::ServerConfig::storage_object_in_use_protection`]), and
//! [`volume_protection_controllers`] adds both, as a cluster always has both. A claim deleted while
//! in use then stays, `Terminating`, until its last user is gone: an operator that deletes a claim
//! and creates it again at once gets `AlreadyExists`, as in a real cluster.
//!
//! - A claim is in use while a Pod of its namespace that is scheduled (`spec.nodeName` set) mounts
//!   it by name, whatever the Pod's phase: a Pod that has finished still holds its claims until
//!   it is deleted (upstream's `podUsesPVC`). A generic ephemeral volume's claim (named
//!   `<pod>-<volume>`, controlled by the Pod) is in use until the Pod is shut down (being deleted
//!   with a grace period of 0). An unscheduled Pod does not hold a claim: the scheduler does not
//!   place a Pod whose claim is being deleted (the kubelet-lite neither).
//! - A deleted claim's finalizer is removed once no Pod in the Pod cache uses it and then no Pod
//!   in a live list of its namespace does (upstream's `askInformer`, then `askAPIServer`: the
//!   cache may lag behind a Pod just created).
//! - A claim or volume that lacks its finalizer and is not being deleted gets it (upstream adds it
//!   to objects created before the plugin was on).
//! - A volume's finalizer is removed once it is deleted and not `Bound` (a released volume).
//! - Writes are updates of the cached object (upstream's `Update` of a copy of the lister's):
//!   a stale cache gets 409 and the sync is retried, backing off as upstream's default controller
//!   rate limiter ([`super::rate_limit`]).
//! - A claim is synced on its own changes and when a Pod that mounts it is deleted, finishes, or
//!   is unscheduled (upstream's `podAddedDeletedUpdated` and `enqueuePVCs`), and the Pod cache
//!   sees deletions missed while its watch was down (a relist, [`super::changes`]). A volume is
//!   synced on its own changes.
//!
//! Where they differ: upstream batches claims by namespace and lists a namespace's Pods at most
//! once per batch; here each claim found unused in the cache is checked with a list of its own.
//! No metrics. Upstream publishes no Events, nor do these.

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use sim::api::{Api, ListParams, ObjectMeta, PostParams, Resource, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

pub use model_apiserver::{
    PV_PROTECTION_FINALIZER as PV_FINALIZER, PVC_PROTECTION_FINALIZER as PVC_FINALIZER,
};

use super::changes::{self, Change};
use super::error::Error;
use super::owners;
use super::pod_state;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The PVC protection controller's node (upstream's controller name).
pub const PVC_NODE: &str = "pvc-protection-controller";
/// The PV protection controller's node (upstream's controller name).
pub const PV_NODE: &str = "pv-protection-controller";

/// Add both protection controllers to a world (those it has not already), on nodes
/// [`PVC_NODE`] and [`PV_NODE`], and turn on the admission plugin that gives claims and volumes
/// their finalizers.
pub fn volume_protection_controllers(builder: SimBuilder) -> SimBuilder {
    let present = builder.controller_names();
    let builder =
        if present.iter().any(|n| n == PVC_NODE) { builder } else { pvc_protection_controller(builder) };
    if present.iter().any(|n| n == PV_NODE) { builder } else { pv_protection_controller(builder) }
}

/// Add the PVC protection controller to a world, on node [`PVC_NODE`], with the admission plugin.
/// A world that creates volumes needs [`pv_protection_controller`] too: the plugin protects both.
pub fn pvc_protection_controller(builder: SimBuilder) -> SimBuilder {
    with_admission_plugin(builder).controller(PVC_NODE, run_pvc_protection)
}

/// Add the PV protection controller to a world, on node [`PV_NODE`], with the admission plugin.
/// A world that creates claims needs [`pvc_protection_controller`] too: the plugin protects both.
pub fn pv_protection_controller(builder: SimBuilder) -> SimBuilder {
    with_admission_plugin(builder).controller(PV_NODE, run_pv_protection)
}

/// `builder` with the `StorageObjectInUseProtection` admission plugin on.
fn with_admission_plugin(builder: SimBuilder) -> SimBuilder {
    builder.server_config_with(|config| config.storage_object_in_use_protection = true)
}

/// Whether `finalizer` should be added: the object is not being deleted and lacks it
/// (upstream's `protectionutil.NeedToAddFinalizer`).
pub fn needs_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.deletion_timestamp.is_none() && !has_finalizer(meta, finalizer)
}

/// Whether the object is being deleted and waits for `finalizer`
/// (upstream's `protectionutil.IsDeletionCandidate`).
pub fn is_deletion_candidate(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.deletion_timestamp.is_some() && has_finalizer(meta, finalizer)
}

fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Whether `pod` uses `claim` (upstream's `podUsesPVC`): it is scheduled and mounts the claim by
/// name, or through a generic ephemeral volume whose claim it controls and it is not shut down.
pub fn pod_uses_claim(pod: &Pod, claim: &PersistentVolumeClaim) -> bool {
    if pod.namespace() != claim.namespace() {
        return false;
    }
    if !pod_state::is_scheduled(pod) {
        return false;
    }
    let claim_name = claim.name_any();
    let pod_name = pod.name_any();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).into_iter().flatten();
    volumes.into_iter().any(|volume| {
        if let Some(source) = &volume.persistent_volume_claim {
            return source.claim_name == claim_name;
        }
        volume.ephemeral.is_some()
            && !is_shut_down(pod)
            && ephemeral_claim_name(&pod_name, &volume.name) == claim_name
            && pod.uid().is_some_and(|uid| owners::is_controlled_by(&claim.metadata, &uid))
    })
}

/// The claim of a Pod's generic ephemeral volume (`ephemeral.VolumeClaimName`).
fn ephemeral_claim_name(pod: &str, volume: &str) -> String {
    format!("{pod}-{volume}")
}

/// Whether the kubelet is done with the Pod or it was force-deleted (upstream's
/// `podIsShutDown`): it is being deleted with a grace period of 0.
fn is_shut_down(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && pod.metadata.deletion_grace_period_seconds == Some(0)
}

/// Whether the kubelet has stopped the Pod (`volumeutil.IsPodTerminated`): it finished, or it is
/// being deleted and no container of it runs.
fn is_terminated(pod: &Pod) -> bool {
    let running = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .any(|c| c.state.as_ref().is_some_and(|state| state.running.is_some()));
    pod_state::is_finished(pod) || (pod_state::is_terminating(pod) && !running)
}

/// The claims a Pod mounts, by reference in its namespace.
fn claims_of(pod: &Pod) -> Vec<ObjectRef<PersistentVolumeClaim>> {
    let namespace = pod.namespace().unwrap_or_default();
    let pod_name = pod.name_any();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).into_iter().flatten();
    let names = volumes.filter_map(|volume| match (&volume.persistent_volume_claim, &volume.ephemeral) {
        (Some(source), _) => Some(source.claim_name.clone()),
        (None, Some(_)) => Some(ephemeral_claim_name(&pod_name, &volume.name)),
        (None, None) => None,
    });
    names.map(|name| ObjectRef::new(&name).within(&namespace)).collect()
}

/// The claims a Pod change may have released (upstream's `podAddedDeletedUpdated`): those of a
/// Pod deleted, finished or not scheduled (others still hold theirs), and of a Pod replaced by
/// one of the same name.
fn claims_released_by(change: &Change<Pod>) -> Vec<ObjectRef<PersistentVolumeClaim>> {
    let may_release = |pod: &Pod| is_terminated(pod) || !pod_state::is_scheduled(pod);
    match change {
        Change::Added(pod) => {
            if may_release(pod) {
                claims_of(pod)
            } else {
                Vec::new()
            }
        }
        Change::Updated { old, new } => {
            let mut claims = if may_release(new) { claims_of(new) } else { Vec::new() };
            if old.uid() != new.uid() {
                claims.extend(claims_of(old));
            }
            claims
        }
        Change::Deleted(pod) => claims_of(pod),
        Change::Synced => Vec::new(),
    }
}

/// What every claim sync gets.
pub struct PvcContext {
    client: sim::Client,
    /// The Pod informer's cache (upstream's Pod lister and its claim index).
    pods: Store<Pod>,
}

/// The PVC protection controller's main future.
pub async fn run_pvc_protection(clients: Clients) {
    let client = clients.default_cluster();
    let controller =
        Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default());
    let (released, released_claims) = mpsc::unbounded::<ObjectRef<PersistentVolumeClaim>>();
    let pods =
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            for claim in claims_released_by(&change) {
                let _ = released.unbounded_send(claim);
            }
        });
    // Upstream's `WaitForNamedCacheSync` of the Pod lister (the claim store is the controller's).
    if pods.wait_until_ready().await.is_err() {
        return;
    }
    controller
        .reconcile_on(released_claims)
        .run_limited_by(RateLimiter::default(), reconcile_claim, Arc::new(PvcContext { client, pods }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Sync one claim (upstream's `processPVC`).
pub async fn reconcile_claim(
    claim: Arc<PersistentVolumeClaim>,
    ctx: Arc<PvcContext>,
) -> Result<Action, Error> {
    if is_deletion_candidate(&claim.metadata, PVC_FINALIZER) {
        if is_in_use(&claim, &ctx).await? {
            tracing::debug!(claim = %claim.name_any(), "keeping the claim: a Pod uses it");
        } else {
            update_finalizers(&*claim, &ctx.client, PVC_FINALIZER, false).await?;
        }
        return Ok(Action::await_change());
    }
    if needs_finalizer(&claim.metadata, PVC_FINALIZER) {
        update_finalizers(&*claim, &ctx.client, PVC_FINALIZER, true).await?;
    }
    Ok(Action::await_change())
}

/// Whether a Pod uses the claim: one in the cache, else one in a live list of its namespace
/// (upstream's `isBeingUsed`).
async fn is_in_use(claim: &PersistentVolumeClaim, ctx: &PvcContext) -> Result<bool, Error> {
    if ctx.pods.state().iter().any(|pod| pod_uses_claim(pod, claim)) {
        return Ok(true);
    }
    let namespace = claim
        .namespace()
        .ok_or_else(|| Error::MissingNamespace { kind: "PersistentVolumeClaim", name: claim.name_any() })?;
    let live = Api::<Pod>::namespaced(ctx.client.clone(), &namespace).list(&ListParams::default()).await?;
    Ok(live.items.iter().any(|pod| pod_uses_claim(pod, claim)))
}

/// Update `object` (as cached, with its resourceVersion) with `finalizer` added or removed.
async fn update_finalizers<K>(
    object: &K,
    client: &sim::Client,
    finalizer: &str,
    add: bool,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let mut changed = object.clone();
    let finalizers = changed.meta_mut().finalizers.get_or_insert_with(Vec::new);
    if add {
        finalizers.push(finalizer.to_owned());
    } else {
        finalizers.retain(|f| f != finalizer);
    }
    let api: Api<K> = match object.namespace() {
        Some(namespace) => Api::namespaced(client.clone(), &namespace),
        None => Api::all(client.clone()),
    };
    api.replace(&object.name_any(), &PostParams::default(), &changed).await?;
    Ok(())
}

/// What every volume sync gets.
pub struct PvContext {
    client: sim::Client,
}

/// The PV protection controller's main future.
pub async fn run_pv_protection(clients: Clients) {
    let client = clients.default_cluster();
    Controller::new(Api::<PersistentVolume>::all(client.clone()), watcher::Config::default())
        .run_limited_by(RateLimiter::default(), reconcile_volume, Arc::new(PvContext { client }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Sync one volume (upstream's `processPV`): a deleted volume that is not `Bound` loses its
/// finalizer; a volume without it gets it.
pub async fn reconcile_volume(volume: Arc<PersistentVolume>, ctx: Arc<PvContext>) -> Result<Action, Error> {
    if is_deletion_candidate(&volume.metadata, PV_FINALIZER) {
        let bound = volume.status.as_ref().and_then(|s| s.phase.as_deref())
            == Some(super::persistentvolume::PHASE_BOUND);
        if !bound {
            update_finalizers(&*volume, &ctx.client, PV_FINALIZER, false).await?;
        }
        return Ok(Action::await_change());
    }
    if needs_finalizer(&volume.metadata, PV_FINALIZER) {
        update_finalizers(&*volume, &ctx.client, PV_FINALIZER, true).await?;
    }
    Ok(Action::await_change())
}
