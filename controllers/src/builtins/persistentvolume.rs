//! The PersistentVolume binder: binds PersistentVolumeClaims to PersistentVolumes, asks a
//! provisioner for a volume when none fits, and reclaims a volume whose claim is gone, as
//! kube-controller-manager's `persistentvolume-binder` (`PersistentVolumeController`,
//! `pkg/controller/volume/persistentvolume`).
//!
//! Two syncs share one node, as upstream's two work queues share one controller: one per claim
//! (`syncClaim`) and one per volume (`syncVolume`). Both read informer caches of volumes, claims
//! and StorageClasses, and write with `Update`/`UpdateStatus` (PUTs carrying the resourceVersion
//! read), so a decision taken on a stale cache gets 409 and is retried on a fresher one: two
//! claims never bind one volume.
//!
//! A claim (`syncClaim`):
//! - unbound, without `spec.volumeName`: bound to the best volume ([`find_best_match`]): a volume
//!   pre-bound to it (its `claimRef` names the claim), else the smallest `Available` one of the
//!   claim's class whose capacity covers the request, whose access modes include the requested
//!   ones (volumes with the fewest modes first), whose volumeMode matches and whose labels the
//!   claim's `selector` selects. With no match:
//!   - a claim without any class (`storageClassName` unset) gets the default StorageClass (the
//!     one annotated `storageclass.kubernetes.io/is-default-class: "true"`, the newest if several),
//!     written into the claim (the retroactive default StorageClass assignment of 1.28+: a
//!     claim created while a default class existed already got it from kube-apiserver's
//!     `DefaultStorageClass` admission, `model_apiserver::admission::default_storage_class`);
//!   - a claim of a class asks the class's provisioner: it is annotated
//!     `volume.kubernetes.io/storage-provisioner` (and the beta annotation) with the class's
//!     `provisioner`, with an `ExternalProvisioning` event, and waits for the provisioner's
//!     volume, which is pre-bound to it; a missing class is a `ProvisioningFailed` event;
//!   - a claim of no class (`""`) gets `FailedBinding` and waits for a volume;
//! - unbound, with `spec.volumeName`: bound to that volume if it is unclaimed and satisfies the
//!   claim (else a `VolumeMismatch` event), or pre-bound to the claim;
//! - bound (`pv.kubernetes.io/bind-completed`): the binding is completed where a write failed
//!   half-way; a claim whose volume is gone, or bound to another claim, becomes `Lost`.
//!
//! Binding (`bind`) writes, in this order: the volume's `spec.claimRef` (the claim's reference
//! with its uid and resourceVersion, and `pv.kubernetes.io/bound-by-controller: "yes"` unless the
//! volume was pre-bound), the volume's phase `Bound`, the claim's `spec.volumeName` (with
//! `pv.kubernetes.io/bound-by-controller` unless the claim named the volume itself, and
//! `pv.kubernetes.io/bind-completed`), and the claim's status: phase `Bound`, the volume's access
//! modes and capacity.
//!
//! A volume (`syncVolume`): `Available` while unclaimed or pre-bound to a claim not yet bound;
//! `Bound` once its claim names it. Once its claim is gone (or bound elsewhere, for a
//! dynamically provisioned volume) it is `Released` and its reclaim policy applies: `Retain`
//! keeps it `Released`; `Delete` leaves a dynamically provisioned volume to its provisioner,
//! which deletes it (the local provisioner, [`super::local_provisioner`], does), and fails any
//! other (`Failed`, `VolumeFailedDelete`: there is no in-tree volume plugin to delete it with).
//! A volume bound by the binder to a claim that got another volume is unbound again.
//!
//! Events come from the component `persistentvolume-controller`, as upstream's.
//!
//! Where it differs from upstream:
//! - a claim of a `volumeBindingMode: WaitForFirstConsumer` class waits (a `WaitForFirstConsumer`
//!   event, Pending) until the scheduler has chosen a node for a Pod that uses it: it binds only
//!   a volume pre-bound to it until then, and is provisioned once annotated
//!   `volume.kubernetes.io/selected-node` ([`ANN_SELECTED_NODE`], by the kubelet-lite's
//!   scheduler, [`super::volume_binding`]). Upstream's event names the Pods waiting to be
//!   scheduled (`WaitForPodScheduled`) when there are any; this binder has no Pod cache and
//!   always says `waiting for first consumer to be created before binding`;
//! - there are no in-tree volume plugins: a class whose provisioner is `kubernetes.io/...` gets
//!   `ProvisioningFailed` ("no volume plugin matched name: ..."), every other provisioner is
//!   external; the `Recycle` policy fails the volume ("No recycler plugin found for the
//!   volume!"); CSI migration annotations, the `kubernetes.io/pv-controller` deletion
//!   finalizer and the metrics are left out;
//! - besides each claim and volume being synced again every [`RESYNC`] (upstream's default
//!   `--pvclaimbinder-sync-period`), a volume's change syncs the claim its `claimRef` names, or,
//!   for an unclaimed volume, every claim waiting for a volume of its class; a claim's change
//!   syncs the volume it names and the volumes whose `claimRef` names it; a StorageClass's change
//!   syncs the claims waiting for it (or for a default class). Upstream's shared informers also
//!   resync, and their relists report the objects that vanished meanwhile as deleted; here the
//!   resync is what finds a claim deleted while a watch was down;
//! - before a claim is marked `Lost`, its volume is read again from the server (upstream trusts
//!   its cache): a volume cache that lags the claim cache after a restart must not lose a claim,
//!   `Lost` being final;
//! - a volume whose `claimRef` names the claim with its uid is the claim's whatever its capacity
//!   (upstream checks the size first). Only a request grown while the claim was unbound could
//!   make them differ, and the model, as kube-apiserver, now refuses that; the check is kept
//!   as a guard.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeSpec, PersistentVolumeStatus,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use sim::api::{Api, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::error::Error;
use super::{events, labels, quantity};

/// The binder's node (upstream's controller name in `--controllers`).
pub const NODE: &str = "persistentvolume-binder";
/// The component its Events come from, as upstream's recorder names itself.
pub const COMPONENT: &str = "persistentvolume-controller";

/// On a claim: its binding went through the binder once (the value does not matter).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// On a volume or a claim: the binder, not the user, made the binding.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// On a volume: the provisioner that made it.
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// On a claim: the provisioner asked to make its volume.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The beta spelling of [`ANN_STORAGE_PROVISIONER`], still written alongside it.
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// On a claim of a `WaitForFirstConsumer` class: the node the scheduler chose for the first Pod
/// that uses it, where its volume is to be made.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// A StorageClass's `volumeBindingMode` that delays binding until a Pod uses the claim.
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// On a StorageClass: `"true"` makes it the default class.
pub const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta spelling of [`ANN_DEFAULT_CLASS`], still honoured.
pub const ANN_BETA_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
/// The beta class annotation of claims and volumes, which `storageClassName` replaced (still
/// read first, as upstream's `GetPersistentVolumeClaimClass`).
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// A claim not bound yet, and a volume not synced yet (the phase the server gives both on create).
pub const PHASE_PENDING: &str = "Pending";
/// A volume not bound to any claim.
pub const PHASE_AVAILABLE: &str = "Available";
/// A volume and a claim bound to each other.
pub const PHASE_BOUND: &str = "Bound";
/// A volume whose claim is gone.
pub const PHASE_RELEASED: &str = "Released";
/// A volume whose reclaim failed.
pub const PHASE_FAILED: &str = "Failed";
/// A claim whose volume is gone or bound to another claim.
pub const PHASE_LOST: &str = "Lost";

/// Reclaim policies.
pub const RECLAIM_RETAIN: &str = "Retain";
/// See [`RECLAIM_RETAIN`].
pub const RECLAIM_DELETE: &str = "Delete";
/// See [`RECLAIM_RETAIN`].
pub const RECLAIM_RECYCLE: &str = "Recycle";

/// How often every claim and every volume is synced again, changed or not (upstream's
/// `--pvclaimbinder-sync-period` default): what finds a claim deleted while a watch was down,
/// whose deletion no event reported. A sync with nothing to do reads caches only.
pub const RESYNC: Duration = Duration::from_secs(15);

/// Add the PersistentVolume binder to a world, on node [`NODE`].
pub fn persistentvolume_binder(builder: SimBuilder) -> SimBuilder {
    // kube-apiserver's `DefaultStorageClass` admission goes with default classes: a claim created
    // without a class names the default at once, and the binder's retroactive assignment covers
    // the claims made before one existed.
    builder.controller(NODE, run).server_config_with(|config| config.default_storage_class = true)
}

/// What both syncs get.
pub struct Context {
    client: sim::Client,
    volumes: Store<PersistentVolume>,
    claims: Store<PersistentVolumeClaim>,
    classes: Store<StorageClass>,
    recorder: events::Recorder,
}

impl Context {
    /// Wait for every cache's initial list (upstream waits for its informers before its workers
    /// start); `false` if a cache's writer is gone.
    async fn ready(&self) -> bool {
        self.volumes.wait_until_ready().await.is_ok()
            && self.claims.wait_until_ready().await.is_ok()
            && self.classes.wait_until_ready().await.is_ok()
    }

    fn claims_api(&self, namespace: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn volumes_api(&self) -> Api<PersistentVolume> {
        Api::all(self.client.clone())
    }
}

/// The binder's main future: the claim sync and the volume sync, side by side.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let config = watcher::Config::default;
    let volumes = reflector::informer(Api::<PersistentVolume>::all(client.clone()), config());
    let claims = reflector::informer(Api::<PersistentVolumeClaim>::all(client.clone()), config());
    let classes = reflector::informer(Api::<StorageClass>::all(client.clone()), config());
    // Subscribed before the first `.await`, so that the initial lists reach the mappers.
    let (claim_changes, claim_changes_for_volumes) = (claims.subscribe(), claims.subscribe());
    let (volume_changes, volume_changes_for_claims) = (volumes.subscribe(), volumes.subscribe());
    let class_changes = classes.subscribe();
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, COMPONENT),
        client,
        volumes: volumes.clone(),
        claims: claims.clone(),
        classes,
    });
    let (claims_for_volumes, claims_for_classes) = (claims.clone(), claims.clone());
    let claim_sync = Controller::for_shared_stream(claim_changes, claims.clone())
        .watches_shared_stream(volume_changes_for_claims, move |volume: Arc<PersistentVolume>| {
            claims_of_volume(&volume, &claims_for_volumes)
        })
        .watches_shared_stream(class_changes, move |class: Arc<StorageClass>| {
            claims_of_class(&class, &claims_for_classes)
        })
        .run(sync_claim, super::retry_soon, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let volumes_for_claims = volumes.clone();
    let volume_sync = Controller::for_shared_stream(volume_changes, volumes)
        .watches_shared_stream(claim_changes_for_volumes, move |claim: Arc<PersistentVolumeClaim>| {
            volumes_of_claim(&claim, &volumes_for_claims)
        })
        .run(sync_volume, super::retry_soon, ctx)
        .for_each(|_| futures::future::ready(()));
    futures::future::join(claim_sync, volume_sync).await;
}

/// The claims a changed volume concerns: the one its `claimRef` names, or, for an unclaimed
/// volume, every claim still waiting for a volume of its class (upstream's resync finds these).
fn claims_of_volume(
    volume: &PersistentVolume,
    claims: &Store<PersistentVolumeClaim>,
) -> Vec<ObjectRef<PersistentVolumeClaim>> {
    if let Some(reference) = spec_of(volume).claim_ref.as_ref() {
        let (Some(name), Some(namespace)) = (reference.name.as_deref(), reference.namespace.as_deref())
        else {
            return Vec::new();
        };
        return vec![ObjectRef::new(name).within(namespace)];
    }
    let class = volume_class(volume);
    claims
        .state_filter(|claim| is_waiting(claim) && claim_class(claim) == class)
        .iter()
        .map(|claim| ObjectRef::from_obj(&**claim))
        .collect()
}

/// The claims a changed StorageClass concerns: those still waiting for a volume of it, or for
/// the default class (a claim with no class at all).
fn claims_of_class(
    class: &StorageClass,
    claims: &Store<PersistentVolumeClaim>,
) -> Vec<ObjectRef<PersistentVolumeClaim>> {
    let name = class.name_any();
    claims
        .state_filter(|claim| is_waiting(claim) && (!claim_has_class(claim) || claim_class(claim) == name))
        .iter()
        .map(|claim| ObjectRef::from_obj(&**claim))
        .collect()
}

/// The volumes a changed (or deleted) claim concerns: the one it names, and those whose
/// `claimRef` names it (a volume provisioned for a claim deleted before it bound).
fn volumes_of_claim(
    claim: &PersistentVolumeClaim,
    volumes: &Store<PersistentVolume>,
) -> Vec<ObjectRef<PersistentVolume>> {
    let mut refs: Vec<ObjectRef<PersistentVolume>> =
        volume_name_of(claim).map(ObjectRef::new).into_iter().collect();
    let (name, namespace) = (claim.name_any(), claim.namespace());
    for volume in volumes.state_filter(|v| {
        spec_of(v).claim_ref.as_ref().is_some_and(|r| {
            r.name.as_deref() == Some(name.as_str()) && r.namespace.as_deref() == namespace.as_deref()
        })
    }) {
        let reference = ObjectRef::from_obj(&*volume);
        if !refs.contains(&reference) {
            refs.push(reference);
        }
    }
    refs
}

/// A claim the binder has not bound yet, nor anybody pointed at a volume.
fn is_waiting(claim: &PersistentVolumeClaim) -> bool {
    !has_annotation(&claim.metadata, ANN_BIND_COMPLETED) && volume_name_of(claim).is_none()
}

// ---------------------------------------------------------------------------------------------
// Reading claims, volumes and classes.

fn has_annotation(meta: &ObjectMeta, key: &str) -> bool {
    meta.annotations.as_ref().is_some_and(|a| a.contains_key(key))
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

fn set_annotation(meta: &mut ObjectMeta, key: &str, value: &str) {
    meta.annotations.get_or_insert_with(Default::default).insert(key.to_owned(), value.to_owned());
}

fn spec_of(volume: &PersistentVolume) -> Cow<'_, PersistentVolumeSpec> {
    match &volume.spec {
        Some(spec) => Cow::Borrowed(spec),
        None => Cow::Owned(Default::default()),
    }
}

fn claim_spec(claim: &PersistentVolumeClaim) -> Cow<'_, PersistentVolumeClaimSpec> {
    match &claim.spec {
        Some(spec) => Cow::Borrowed(spec),
        None => Cow::Owned(Default::default()),
    }
}

/// The volume a claim names (`spec.volumeName`), if any.
pub fn volume_name_of(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).filter(|n| !n.is_empty())
}

/// A claim's class (`GetPersistentVolumeClaimClass`): the beta annotation, else
/// `storageClassName`, else `""`.
pub fn claim_class(claim: &PersistentVolumeClaim) -> String {
    if let Some(class) = annotation(&claim.metadata, ANN_BETA_STORAGE_CLASS) {
        return class.to_owned();
    }
    claim.spec.as_ref().and_then(|s| s.storage_class_name.clone()).unwrap_or_default()
}

/// Whether a claim asked for a class at all, `""` included (`PersistentVolumeClaimHasClass`):
/// one that did not gets the default class.
pub fn claim_has_class(claim: &PersistentVolumeClaim) -> bool {
    has_annotation(&claim.metadata, ANN_BETA_STORAGE_CLASS)
        || claim.spec.as_ref().is_some_and(|s| s.storage_class_name.is_some())
}

/// A volume's class (`GetPersistentVolumeClass`): the beta annotation, else
/// `storageClassName`, else `""`.
pub fn volume_class(volume: &PersistentVolume) -> String {
    if let Some(class) = annotation(&volume.metadata, ANN_BETA_STORAGE_CLASS) {
        return class.to_owned();
    }
    volume.spec.as_ref().and_then(|s| s.storage_class_name.clone()).unwrap_or_default()
}

/// Whether a StorageClass is marked default (`IsDefaultAnnotation`).
pub fn is_default_class(class: &StorageClass) -> bool {
    [ANN_DEFAULT_CLASS, ANN_BETA_DEFAULT_CLASS]
        .iter()
        .any(|key| annotation(&class.metadata, key) == Some("true"))
}

/// The default StorageClass (`GetDefaultClass`): of the classes marked default, the newest,
/// then the first by name.
pub fn default_class(classes: &[Arc<StorageClass>]) -> Option<Arc<StorageClass>> {
    let created = |class: &StorageClass| class.metadata.creation_timestamp.as_ref().map(|t| t.0);
    classes
        .iter()
        .filter(|class| is_default_class(class))
        .min_by(|a, b| created(b).cmp(&created(a)).then_with(|| a.name_any().cmp(&b.name_any())))
        .cloned()
}

/// A phase, `Pending` when unset (as the server sets it on create).
fn volume_phase(volume: &PersistentVolume) -> &str {
    volume.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or(PHASE_PENDING)
}

fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or(PHASE_PENDING)
}

fn reclaim_policy(volume: &PersistentVolume) -> &str {
    // The API server defaults it to Retain.
    volume.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref()).unwrap_or(RECLAIM_RETAIN)
}

/// The storage a claim requests, in bytes (0 without a request).
pub(crate) fn requested_storage(claim: &PersistentVolumeClaim) -> f64 {
    let request =
        claim_spec(claim).resources.as_ref().and_then(|r| r.requests.as_ref()?.get("storage").cloned());
    request.as_ref().and_then(quantity::value).unwrap_or(0.0)
}

/// A volume's storage capacity, in bytes (0 without one).
pub(crate) fn volume_storage(volume: &PersistentVolume) -> f64 {
    let capacity = spec_of(volume).capacity.as_ref().and_then(|c| c.get("storage").cloned());
    capacity.as_ref().and_then(quantity::value).unwrap_or(0.0)
}

/// Whether the claim's and the volume's volumeModes differ (unset is `Filesystem` on both).
fn volume_modes_differ(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let claim_mode = claim_spec(claim).volume_mode.clone().unwrap_or_else(|| "Filesystem".to_owned());
    let volume_mode = spec_of(volume).volume_mode.clone().unwrap_or_else(|| "Filesystem".to_owned());
    claim_mode != volume_mode
}

/// Whether the volume offers every access mode the claim requests (`CheckAccessModes`).
fn has_access_modes(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered = spec_of(volume).access_modes.clone().unwrap_or_default();
    claim_spec(claim).access_modes.iter().flatten().all(|mode| offered.contains(mode))
}

/// Whether the volume is bound or pre-bound to this claim (`IsVolumeBoundToClaim`): its
/// `claimRef` names the claim, with the claim's uid if it has one.
pub fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else { return false };
    if reference.name.as_deref() != claim.metadata.name.as_deref()
        || reference.namespace.as_deref() != claim.metadata.namespace.as_deref()
    {
        return false;
    }
    reference.uid.as_deref().is_none_or(str::is_empty) || reference.uid == claim.metadata.uid
}

/// Whether the volume's `claimRef` names this very claim, uid included: a volume provisioned for
/// it, or one whose binding the binder started (its half of `bind` written, the claim's not yet).
/// Such a volume is the claim's whatever its size: the model lets the request of a claim not yet
/// bound grow (kube-apiserver refuses that change until the claim is bound), and a binding cut
/// in two by such a change is finished rather than stranded.
fn is_reserved_for(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let uid = claim.metadata.uid.as_deref().filter(|u| !u.is_empty());
    uid.is_some()
        && is_volume_bound_to_claim(volume, claim)
        && spec_of(volume).claim_ref.as_ref().and_then(|r| r.uid.as_deref()) == uid
}

/// `checkVolumeSatisfyClaim`: why a volume a claim names cannot serve it, if it cannot.
fn check_volume_satisfies_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), String> {
    if volume.metadata.deletion_timestamp.is_some() {
        return Err(format!("the volume is marked for deletion {:?}", volume.name_any()));
    }
    if volume_storage(volume) < requested_storage(claim) {
        return Err("requested PV is too small".to_owned());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".to_owned());
    }
    if volume_modes_differ(claim, volume) {
        return Err("incompatible volumeMode".to_owned());
    }
    if !has_access_modes(claim, volume) {
        return Err("incompatible accessMode".to_owned());
    }
    Ok(())
}

/// The access-mode sets of the volumes that offer every mode the claim requests, fewest modes
/// first (`allPossibleMatchingAccessModes`; ties by name, where upstream's order is a map's).
fn matching_mode_sets(claim: &PersistentVolumeClaim, volumes: &[Arc<PersistentVolume>]) -> Vec<Vec<String>> {
    let mut sets: Vec<Vec<String>> = Vec::new();
    for volume in volumes {
        let mut modes = spec_of(volume).access_modes.clone().unwrap_or_default();
        modes.sort();
        modes.dedup();
        if has_access_modes(claim, volume) && !sets.contains(&modes) {
            sets.push(modes);
        }
    }
    sets.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    sets
}

/// `findBestMatchForClaim`: the volume pre-bound to the claim, else the smallest `Available`
/// volume that fits it, searched among the volumes with the fewest access modes first.
pub fn find_best_match(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
) -> Option<Arc<PersistentVolume>> {
    find_best_match_for(claim, volumes, None, false)
}

/// [`find_best_match`] as upstream's `FindMatchingVolume` with a node and delayed binding: on
/// `node` (the scheduler's), only volumes whose node affinity admits the node; with no node and
/// `delay_binding` (the binder's, for a claim of a `WaitForFirstConsumer` class no Pod has been
/// scheduled with yet), only a volume bound or pre-bound to the claim.
pub fn find_best_match_for(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    node: Option<&k8s_openapi::api::core::v1::Node>,
    delay_binding: bool,
) -> Option<Arc<PersistentVolume>> {
    for modes in matching_mode_sets(claim, volumes) {
        let group: Vec<&Arc<PersistentVolume>> = volumes
            .iter()
            .filter(|v| {
                let mut offered = spec_of(v).access_modes.clone().unwrap_or_default();
                offered.sort();
                offered.dedup();
                offered == modes
            })
            .collect();
        if let Some(found) = find_matching_volume(claim, &group, node, delay_binding) {
            return Some(found.clone());
        }
    }
    None
}

/// `FindMatchingVolume` (nothing excluded).
fn find_matching_volume<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &[&'a Arc<PersistentVolume>],
    node: Option<&k8s_openapi::api::core::v1::Node>,
    delay_binding: bool,
) -> Option<&'a Arc<PersistentVolume>> {
    let requested = requested_storage(claim);
    let class = claim_class(claim);
    let selector = claim_spec(claim).selector.clone();
    let claim_attributes = claim_spec(claim).volume_attributes_class_name.clone().unwrap_or_default();
    let mut smallest: Option<(&Arc<PersistentVolume>, f64)> = None;
    for &volume in volumes {
        let spec = spec_of(volume);
        if spec.claim_ref.is_some() && !is_volume_bound_to_claim(volume, claim) {
            continue;
        }
        if is_reserved_for(volume, claim) && volume.metadata.deletion_timestamp.is_none() {
            return Some(volume);
        }
        let size = volume_storage(volume);
        if size < requested
            || volume_modes_differ(claim, volume)
            || spec.volume_attributes_class_name.clone().unwrap_or_default() != claim_attributes
            || volume.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let fits_node = node.is_none_or(|node| volume_fits_node(volume, node));
        if is_volume_bound_to_claim(volume, claim) {
            return fits_node.then_some(volume);
        }
        // The scheduler binds a delayed claim, unless it is pre-bound.
        if (node.is_none() && delay_binding) || !fits_node {
            continue;
        }
        if volume_phase(volume) != PHASE_AVAILABLE
            || selector.as_ref().is_some_and(|s| !labels::matches(s, volume.metadata.labels.as_ref()))
            || volume_class(volume) != class
        {
            continue;
        }
        if smallest.is_none_or(|(_, smallest_size)| size < smallest_size) {
            smallest = Some((volume, size));
        }
    }
    smallest.map(|(volume, _)| volume)
}

/// Whether the volume's required node affinity admits `node` (`CheckNodeAffinity`); a volume
/// without one fits every node.
pub fn volume_fits_node(volume: &PersistentVolume, node: &k8s_openapi::api::core::v1::Node) -> bool {
    let required = spec_of(volume).node_affinity.as_ref().and_then(|a| a.required.clone());
    required.is_none_or(|selector| super::scheduler::node_selector_matches(&selector, node))
}

/// Whether `class` delays binding until a Pod uses the claim (`volumeBindingMode:
/// WaitForFirstConsumer`).
pub fn is_delay_binding_class(class: &StorageClass) -> bool {
    class.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER)
}

/// The reference a volume's `claimRef` holds for a claim (`reference.GetReference`).
pub fn claim_ref(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("PersistentVolumeClaim".to_owned()),
        name: claim.metadata.name.clone(),
        namespace: claim.metadata.namespace.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The claim sync.

/// Sync one claim (upstream's `syncClaim`).
pub async fn sync_claim(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Context>) -> Result<Action, Error> {
    if !ctx.ready().await {
        return Ok(Action::await_change());
    }
    if claim.namespace().is_none() {
        return Err(Error::MissingNamespace { kind: "PersistentVolumeClaim", name: claim.name_any() });
    }
    if has_annotation(&claim.metadata, ANN_BIND_COMPLETED) {
        boxed(|| sync_bound_claim(&claim, &ctx)).await?;
    } else {
        boxed(|| sync_unbound_claim(&claim, &ctx)).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// `syncUnboundClaim`.
async fn sync_unbound_claim(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<(), Error> {
    let regarding = events::reference(claim);
    let Some(volume_name) = volume_name_of(claim) else {
        // `shouldDelayBinding`: a claim of a `WaitForFirstConsumer` class waits for the scheduler,
        // until it has chosen a node for a Pod that uses it (`volume.kubernetes.io/selected-node`).
        let class = claim_class(claim);
        let delay_binding = !has_annotation(&claim.metadata, ANN_SELECTED_NODE)
            && !class.is_empty()
            && ctx.classes.get(&ObjectRef::new(&class)).is_some_and(|c| is_delay_binding_class(&c));
        if let Some(volume) = find_best_match_for(claim, &ctx.volumes.state(), None, delay_binding) {
            return boxed(|| bind(&volume, claim, ctx)).await;
        }
        if boxed(|| assign_default_class(claim, ctx)).await? {
            // The claim's own change syncs it again, with its class.
            return Ok(());
        }
        if delay_binding {
            // `emitEventForUnboundDelayBindingClaim` (without the Pod cache that names the Pods
            // waiting to be scheduled).
            let message = "waiting for first consumer to be created before binding";
            events::normal(&ctx.recorder, &regarding, "WaitForFirstConsumer", message.to_owned()).await;
            boxed(|| update_claim_status(claim, PHASE_PENDING, None, ctx)).await?;
            return Ok(());
        }
        if !class.is_empty() {
            return boxed(|| provision_claim(claim, &class, ctx)).await;
        }
        let message = "no persistent volumes available for this claim and no storage class is set";
        events::normal(&ctx.recorder, &regarding, "FailedBinding", message.to_owned()).await;
        boxed(|| update_claim_status(claim, PHASE_PENDING, None, ctx)).await?;
        return Ok(());
    };
    let Some(volume) = ctx.volumes.get(&ObjectRef::new(volume_name)) else {
        // The volume asked for does not exist (yet): its creation syncs the claim again.
        boxed(|| update_claim_status(claim, PHASE_PENDING, None, ctx)).await?;
        return Ok(());
    };
    if spec_of(&volume).claim_ref.is_none() {
        if let Err(reason) = check_volume_satisfies_claim(&volume, claim) {
            let message = format!("Cannot bind to requested volume {volume_name:?}: {reason}");
            events::warning(&ctx.recorder, &regarding, "VolumeMismatch", message).await;
            boxed(|| update_claim_status(claim, PHASE_PENDING, None, ctx)).await?;
            return Ok(());
        }
        return boxed(|| bind(&volume, claim, ctx)).await;
    }
    if is_volume_bound_to_claim(&volume, claim) {
        return boxed(|| bind(&volume, claim, ctx)).await;
    }
    // The volume asked for is another claim's.
    let message = format!("volume {volume_name:?} already bound to a different claim.");
    events::warning(&ctx.recorder, &regarding, "FailedBinding", message).await;
    if !has_annotation(&claim.metadata, ANN_BOUND_BY_CONTROLLER) {
        boxed(|| update_claim_status(claim, PHASE_PENDING, None, ctx)).await?;
    }
    // Bound by the binder to a volume that is another's: it "should never happen" upstream,
    // which retries on its resync; nothing here would change it, so nothing is retried.
    Ok(())
}

/// `syncBoundClaim`.
async fn sync_bound_claim(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<(), Error> {
    let Some(volume_name) = volume_name_of(claim) else {
        let message = "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!";
        return boxed(|| mark_lost(claim, "ClaimLost", message, ctx)).await;
    };
    let cached = ctx.volumes.get(&ObjectRef::new(volume_name));
    let volume = match cached {
        Some(volume) => volume,
        // Lost is final: read the server before trusting the cache's absence.
        None => match ctx.volumes_api().get_opt(volume_name).await? {
            Some(volume) => Arc::new(volume),
            None => {
                let message = "Bound claim has lost its PersistentVolume. Data on the volume is lost!";
                return boxed(|| mark_lost(claim, "ClaimLost", message, ctx)).await;
            }
        },
    };
    match spec_of(&volume).claim_ref.as_ref() {
        None => boxed(|| bind(&volume, claim, ctx)).await,
        Some(reference) if reference.uid == claim.metadata.uid => boxed(|| bind(&volume, claim, ctx)).await,
        Some(_) => {
            let fresh = ctx.volumes_api().get_opt(volume_name).await?;
            let elsewhere = fresh.as_ref().and_then(|v| v.spec.as_ref()?.claim_ref.as_ref()?.uid.clone());
            if fresh.is_some() && elsewhere == claim.metadata.uid {
                // The cache lagged: the volume is this claim's after all.
                return Ok(());
            }
            let message = "Two claims are bound to the same volume, this one is bound incorrectly";
            boxed(|| mark_lost(claim, "ClaimMisbound", message, ctx)).await
        }
    }
}

/// `updateClaimStatusWithEvent(Lost)`: the claim's phase `Lost`, with a Warning, once.
async fn mark_lost(
    claim: &PersistentVolumeClaim,
    reason: &str,
    message: &str,
    ctx: &Context,
) -> Result<(), Error> {
    if claim_phase(claim) == PHASE_LOST {
        return Ok(());
    }
    let updated = boxed(|| update_claim_status(claim, PHASE_LOST, None, ctx)).await?;
    events::warning(&ctx.recorder, &events::reference(&updated), reason, message.to_owned()).await;
    Ok(())
}

/// `assignDefaultStorageClass`: write the default class into a claim that asked for none;
/// whether it was written.
async fn assign_default_class(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<bool, Error> {
    if claim_has_class(claim) {
        return Ok(false);
    }
    let Some(class) = default_class(&ctx.classes.state()) else { return Ok(false) };
    let mut updated = claim.clone();
    updated.spec.get_or_insert_with(Default::default).storage_class_name = Some(class.name_any());
    let namespace = claim.namespace().unwrap_or_default();
    ctx.claims_api(&namespace).replace(&claim.name_any(), &PostParams::default(), &updated).await?;
    Ok(true)
}

/// `provisionClaim` for the claim's class: ask the class's provisioner (every provisioner is an
/// external one here) by annotating the claim, or say why none can be asked.
async fn provision_claim(
    claim: &PersistentVolumeClaim,
    class_name: &str,
    ctx: &Context,
) -> Result<(), Error> {
    let regarding = events::reference(claim);
    let Some(class) = ctx.classes.get(&ObjectRef::new(class_name)) else {
        let message = format!("storageclass.storage.k8s.io {class_name:?} not found");
        events::warning(&ctx.recorder, &regarding, "ProvisioningFailed", message).await;
        return Ok(());
    };
    let provisioner = class.provisioner.as_str();
    if provisioner.starts_with("kubernetes.io/") {
        // An in-tree plugin (`kubernetes.io/no-provisioner` among them): none is modelled.
        let message = format!("no volume plugin matched name: {provisioner}");
        events::warning(&ctx.recorder, &regarding, "ProvisioningFailed", message).await;
        return Ok(());
    }
    if annotation(&claim.metadata, ANN_STORAGE_PROVISIONER) != Some(provisioner) {
        let mut updated = claim.clone();
        set_annotation(&mut updated.metadata, ANN_BETA_STORAGE_PROVISIONER, provisioner);
        set_annotation(&mut updated.metadata, ANN_STORAGE_PROVISIONER, provisioner);
        let namespace = claim.namespace().unwrap_or_default();
        ctx.claims_api(&namespace).replace(&claim.name_any(), &PostParams::default(), &updated).await?;
    }
    let message = format!(
        "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by \
         the system administrator. If volume creation is delayed, please verify that the provisioner is \
         running and correctly registered."
    );
    events::normal(&ctx.recorder, &regarding, "ExternalProvisioning", message).await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The volume sync.

/// Sync one volume (upstream's `syncVolume`).
pub async fn sync_volume(volume: Arc<PersistentVolume>, ctx: Arc<Context>) -> Result<Action, Error> {
    if !ctx.ready().await {
        return Ok(Action::await_change());
    }
    boxed(|| sync_volume_once(&volume, &ctx)).await?;
    Ok(Action::requeue(RESYNC))
}

async fn sync_volume_once(volume: &PersistentVolume, ctx: &Context) -> Result<(), Error> {
    let Some(reference) = spec_of(volume).claim_ref.clone() else {
        boxed(|| update_volume_phase(volume, PHASE_AVAILABLE, ctx)).await?;
        return Ok(());
    };
    if reference.uid.as_deref().is_none_or(str::is_empty) {
        // Pre-bound to a claim that has not bound yet: the claim's sync binds it.
        boxed(|| update_volume_phase(volume, PHASE_AVAILABLE, ctx)).await?;
        return Ok(());
    }
    let claim = boxed(|| claim_of(volume, &reference, ctx)).await?;
    let Some(claim) = claim else {
        // The claim is gone: release the volume and reclaim it.
        let mut volume = Cow::Borrowed(volume);
        if !matches!(volume_phase(&volume), PHASE_RELEASED | PHASE_FAILED) {
            volume = Cow::Owned(boxed(|| update_volume_phase(&volume, PHASE_RELEASED, ctx)).await?);
        }
        return boxed(|| reclaim_volume(&volume, ctx)).await;
    };
    match volume_name_of(&claim) {
        None => {
            if volume_modes_differ(&claim, volume) {
                let message = format!(
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim {:?} due to incompatible volumeMode.",
                    claim.name_any()
                );
                events::warning(&ctx.recorder, &events::reference(volume), "VolumeMismatch", message).await;
                let message = format!(
                    "Cannot bind PersistentVolume {:?} to requested PersistentVolumeClaim due to incompatible volumeMode.",
                    volume.name_any()
                );
                events::warning(&ctx.recorder, &events::reference(&claim), "VolumeMismatch", message).await;
            }
            // Either way the claim's sync (which this volume's change triggered) binds them.
            Ok(())
        }
        Some(name) if name == volume.name_any() => {
            boxed(|| update_volume_phase(volume, PHASE_BOUND, ctx)).await?;
            Ok(())
        }
        Some(_) => {
            // The claim is bound to another volume.
            if has_annotation(&volume.metadata, ANN_PROVISIONED_BY)
                && reclaim_policy(volume) == RECLAIM_DELETE
            {
                let mut volume = Cow::Borrowed(volume);
                if !matches!(volume_phase(&volume), PHASE_RELEASED | PHASE_FAILED) {
                    volume = Cow::Owned(boxed(|| update_volume_phase(&volume, PHASE_RELEASED, ctx)).await?);
                }
                return boxed(|| reclaim_volume(&volume, ctx)).await;
            }
            boxed(|| unbind_volume(volume, ctx)).await
        }
    }
}

/// The claim a volume's `claimRef` names, if it still exists with that uid: read from the
/// cache, and from the server when the cache has none or another one (as upstream, so as not
/// to release a volume on a cache that lags).
async fn claim_of(
    volume: &PersistentVolume,
    reference: &ObjectReference,
    ctx: &Context,
) -> Result<Option<PersistentVolumeClaim>, Error> {
    let (Some(name), Some(namespace)) = (reference.name.as_deref(), reference.namespace.as_deref()) else {
        return Ok(None);
    };
    let cached = ctx.claims.get(&ObjectRef::new(name).within(namespace));
    match cached {
        Some(claim) if claim.metadata.uid == reference.uid => return Ok(Some((*claim).clone())),
        None if matches!(volume_phase(volume), PHASE_RELEASED | PHASE_FAILED) => return Ok(None),
        _ => {}
    }
    let fresh = ctx.claims_api(namespace).get_opt(name).await?;
    Ok(fresh.filter(|claim| claim.metadata.uid == reference.uid))
}

/// `reclaimVolume`: apply a released volume's reclaim policy.
async fn reclaim_volume(volume: &PersistentVolume, ctx: &Context) -> Result<(), Error> {
    match reclaim_policy(volume) {
        RECLAIM_RETAIN => Ok(()),
        RECLAIM_DELETE => boxed(|| delete_volume(volume, ctx)).await,
        RECLAIM_RECYCLE => {
            let message = "No recycler plugin found for the volume!";
            boxed(|| fail_volume(volume, "VolumeFailedRecycle", message, ctx)).await
        }
        _ => {
            let message = "Volume has unrecognized PersistentVolumeReclaimPolicy";
            boxed(|| fail_volume(volume, "VolumeUnknownReclaimPolicy", message, ctx)).await
        }
    }
}

/// `deleteVolumeOperation` without in-tree plugins: a volume that an external provisioner made
/// (or a CSI volume) is its provisioner's to delete; any other cannot be deleted and fails.
async fn delete_volume(volume: &PersistentVolume, ctx: &Context) -> Result<(), Error> {
    let Some(fresh) = ctx.volumes_api().get_opt(&volume.name_any()).await? else { return Ok(()) };
    if !is_volume_released(&fresh, ctx) {
        return Ok(());
    }
    let external = annotation(&fresh.metadata, ANN_PROVISIONED_BY)
        .is_some_and(|p| !p.starts_with("kubernetes.io/"))
        || spec_of(&fresh).csi.is_some();
    if external {
        return Ok(());
    }
    let message = format!(
        "error getting deleter volume plugin for volume {:?}: no deletable volume plugin matched",
        fresh.name_any()
    );
    boxed(|| fail_volume(&fresh, "VolumeFailedDelete", &message, ctx)).await
}

/// `isVolumeReleased`: the volume's claim is gone, or bound to another volume.
fn is_volume_released(volume: &PersistentVolume, ctx: &Context) -> bool {
    let Some(reference) = spec_of(volume).claim_ref.clone() else { return false };
    if reference.uid.as_deref().is_none_or(str::is_empty) {
        return false;
    }
    let (Some(name), Some(namespace)) = (reference.name.as_deref(), reference.namespace.as_deref()) else {
        return true;
    };
    match ctx.claims.get(&ObjectRef::new(name).within(namespace)) {
        Some(claim) if claim.metadata.uid == reference.uid => {
            volume_name_of(&claim).is_some_and(|bound| bound != volume.name_any())
        }
        _ => true,
    }
}

/// `updateVolumePhaseWithEvent(Failed)`: the volume's phase `Failed` with the reason as
/// message, and a Warning, once.
async fn fail_volume(
    volume: &PersistentVolume,
    reason: &str,
    message: &str,
    ctx: &Context,
) -> Result<(), Error> {
    if volume_phase(volume) == PHASE_FAILED {
        return Ok(());
    }
    let updated = boxed(|| write_volume_phase(volume, PHASE_FAILED, Some(message), ctx)).await?;
    events::warning(&ctx.recorder, &events::reference(&updated), reason, message.to_owned()).await;
    Ok(())
}

/// `unbindVolume`: undo a binding the binder made (or, for a volume the user pre-bound, forget
/// the claim's uid only), and make the volume `Available`.
async fn unbind_volume(volume: &PersistentVolume, ctx: &Context) -> Result<(), Error> {
    let mut updated = volume.clone();
    if has_annotation(&volume.metadata, ANN_BOUND_BY_CONTROLLER) {
        let spec = updated.spec.get_or_insert_with(Default::default);
        spec.claim_ref = None;
        if let Some(annotations) = updated.metadata.annotations.as_mut() {
            annotations.remove(ANN_BOUND_BY_CONTROLLER);
        }
        if updated.metadata.annotations.as_ref().is_some_and(|a| a.is_empty()) {
            updated.metadata.annotations = None;
        }
    } else if let Some(reference) = updated.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
        reference.uid = None;
    }
    let written = ctx.volumes_api().replace(&volume.name_any(), &PostParams::default(), &updated).await?;
    boxed(|| update_volume_phase(&written, PHASE_AVAILABLE, ctx)).await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Binding.

/// `bind`: the volume's `claimRef`, its phase `Bound`, the claim's `volumeName`, its phase
/// `Bound`, in that order, each written only if it is not so already. A write that fails leaves
/// the rest to the next sync.
async fn bind(volume: &PersistentVolume, claim: &PersistentVolumeClaim, ctx: &Context) -> Result<(), Error> {
    let volume = boxed(|| bind_volume_to_claim(volume, claim, ctx)).await?;
    let volume = boxed(|| update_volume_phase(&volume, PHASE_BOUND, ctx)).await?;
    let claim = boxed(|| bind_claim_to_volume(claim, &volume, ctx)).await?;
    boxed(|| update_claim_status(&claim, PHASE_BOUND, Some(&volume), ctx)).await?;
    Ok(())
}

/// `bindVolumeToClaim` (`GetBindVolumeToClaim`): the volume's `claimRef` names the claim with
/// its uid, and a volume the binder chose says so.
async fn bind_volume_to_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
    ctx: &Context,
) -> Result<PersistentVolume, Error> {
    let pre_bound = is_volume_bound_to_claim(volume, claim);
    let mut updated = volume.clone();
    let mut dirty = false;
    let current = spec_of(volume).claim_ref.clone();
    let same = current.as_ref().is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !same {
        updated.spec.get_or_insert_with(Default::default).claim_ref = Some(claim_ref(claim));
        dirty = true;
    }
    if !pre_bound && !has_annotation(&volume.metadata, ANN_BOUND_BY_CONTROLLER) {
        set_annotation(&mut updated.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
        dirty = true;
    }
    if !dirty {
        return Ok(volume.clone());
    }
    Ok(ctx.volumes_api().replace(&volume.name_any(), &PostParams::default(), &updated).await?)
}

/// `updateVolumePhase`: the volume's phase, with no message, unless it is that already.
async fn update_volume_phase(
    volume: &PersistentVolume,
    phase: &str,
    ctx: &Context,
) -> Result<PersistentVolume, Error> {
    if volume_phase(volume) == phase {
        return Ok(volume.clone());
    }
    boxed(|| write_volume_phase(volume, phase, None, ctx)).await
}

/// `UpdateStatus` of a volume's phase and message (the server stamps
/// `lastPhaseTransitionTime`).
async fn write_volume_phase(
    volume: &PersistentVolume,
    phase: &str,
    message: Option<&str>,
    ctx: &Context,
) -> Result<PersistentVolume, Error> {
    let mut updated = volume.clone();
    let status = updated.status.get_or_insert_with(PersistentVolumeStatus::default);
    status.phase = Some(phase.to_owned());
    status.message = message.map(str::to_owned);
    Ok(ctx.volumes_api().replace_status(&volume.name_any(), &PostParams::default(), &updated).await?)
}

/// `bindClaimToVolume`: the claim's `volumeName` (marked bound by the binder if the binder
/// chose the volume) and `pv.kubernetes.io/bind-completed`.
async fn bind_claim_to_volume(
    claim: &PersistentVolumeClaim,
    volume: &PersistentVolume,
    ctx: &Context,
) -> Result<PersistentVolumeClaim, Error> {
    let mut updated = claim.clone();
    let mut dirty = false;
    let name = volume.name_any();
    if volume_name_of(claim) != Some(name.as_str()) {
        updated.spec.get_or_insert_with(Default::default).volume_name = Some(name);
        if !has_annotation(&claim.metadata, ANN_BOUND_BY_CONTROLLER) {
            set_annotation(&mut updated.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
        }
        dirty = true;
    }
    if !has_annotation(&claim.metadata, ANN_BIND_COMPLETED) {
        set_annotation(&mut updated.metadata, ANN_BIND_COMPLETED, "yes");
        dirty = true;
    }
    if !dirty {
        return Ok(claim.clone());
    }
    let namespace = claim.namespace().unwrap_or_default();
    Ok(ctx.claims_api(&namespace).replace(&claim.name_any(), &PostParams::default(), &updated).await?)
}

/// `updateClaimStatus`: the claim's phase, and the access modes and capacity of its volume (of
/// none: cleared). The capacity is copied only as the claim becomes bound: a difference later is
/// a resize in progress, not to be undone.
async fn update_claim_status(
    claim: &PersistentVolumeClaim,
    phase: &str,
    volume: Option<&PersistentVolume>,
    ctx: &Context,
) -> Result<PersistentVolumeClaim, Error> {
    let old = claim.status.clone().unwrap_or_default();
    let mut status = old.clone();
    status.phase = Some(phase.to_owned());
    match volume {
        None => {
            status.access_modes = None;
            status.capacity = None;
        }
        Some(volume) => {
            status.access_modes = spec_of(volume).access_modes.clone();
            if claim_phase(claim) != phase {
                let capacity = spec_of(volume).capacity.clone();
                let storage = |c: &Option<BTreeMap<String, Quantity>>| {
                    c.as_ref().and_then(|c| c.get("storage")).and_then(quantity::value)
                };
                if storage(&capacity).is_some() && storage(&old.capacity) != storage(&capacity) {
                    status.capacity = capacity;
                }
            }
        }
    }
    if claim.status.as_ref() == Some(&status) {
        return Ok(claim.clone());
    }
    let updated = PersistentVolumeClaim { status: Some(status), ..claim.clone() };
    let namespace = claim.namespace().unwrap_or_default();
    Ok(ctx.claims_api(&namespace).replace_status(&claim.name_any(), &PostParams::default(), &updated).await?)
}
