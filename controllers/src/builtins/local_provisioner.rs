//! The local provisioner: the dynamic provisioner of the cluster's default StorageClass
//! [`CLASS_NAME`], standing in for the local-path provisioner kind ships
//! (`rancher.io/local-path`), written as an external provisioner on
//! sigs.k8s.io/sig-storage-lib-external-provisioner's `ProvisionController`.
//!
//! - At start it installs the StorageClass [`CLASS_NAME`] if absent, as kind's manifests do:
//!   annotated `storageclass.kubernetes.io/is-default-class: "true"`, provisioner
//!   [`PROVISIONER`], `reclaimPolicy: Delete`, `volumeBindingMode: WaitForFirstConsumer`, as
//!   kind's: a claim of it stays Pending until a Pod that uses it is scheduled, and its volume is
//!   made on that Pod's node. A class deleted later is installed again when the provisioner
//!   restarts.
//! - A claim is provisioned (`shouldProvision`) once the PersistentVolume binder
//!   ([`super::persistentvolume`]) has annotated it `volume.kubernetes.io/storage-provisioner:
//!   kube-sim.io/local` (or the beta annotation) and while it names no volume: the provisioner
//!   creates the volume `pvc-<claim uid>` with the requested capacity, the claim's access modes
//!   and volumeMode, the class's reclaim policy and mount options, a `hostPath` under
//!   [`PATH_ROOT`] (`DirectoryOrCreate`) on the node the scheduler selected
//!   (`volume.kubernetes.io/selected-node`; [`super::kubelet::NODE_NAME`] for a claim of an
//!   `Immediate` class), as a required node affinity on its hostname, as local-path's; a claim of
//!   a `WaitForFirstConsumer` class is not provisioned before the scheduler selected a node;
//!   `pv.kubernetes.io/provisioned-by: kube-sim.io/local`, and a
//!   `claimRef` pre-bound to the claim (with its uid): the binder then completes the binding.
//!   Events on the claim: `Provisioning`, then `ProvisioningSucceeded`, as the library words
//!   them. A volume that exists already (made by an earlier attempt whose answer was lost) is
//!   taken as made.
//! - A bound claim of one of its volumes that asks for more than its `status.capacity` is
//!   expanded, as the CSI external-resizer running beside a driver does ([`expand_claim`]): the
//!   claim is marked `ControllerResizeInProgress`, the volume's capacity grows, and the claim's
//!   capacity follows (no node step: a local directory has no filesystem to grow). The API
//!   server lets a claim grow only if its class has `allowVolumeExpansion`; [`CLASS_NAME`] has
//!   none, as kind's. A claim synced while the volume cache had not yet seen its volume bound
//!   to it is synced again after [`RESIZER_RESYNC`], the resizer's informer resync.
//! - A volume it made that the binder has `Released` with reclaim policy `Delete` is deleted
//!   (`shouldDelete`); there is no storage behind it to remove first.
//!
//! Where it differs from the library: the claim's StorageClass is read with a GET when a claim
//! is to be provisioned (the library keeps a StorageClass informer), and a claim whose class is
//! gone by then is left alone instead of retried; the `external-provisioner.volume.kubernetes.io/finalizer`
//! finalizer (the library's `AddFinalizer` option, off by default) and leader election are left out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaimCondition;
use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code};
use super::persistentvolume::{
    self as pv, ANN_BETA_STORAGE_PROVISIONER, ANN_DEFAULT_CLASS, ANN_PROVISIONED_BY, ANN_STORAGE_PROVISIONER,
};
use super::{events, kubelet, quantity};

/// The provisioner's node.
pub const NODE: &str = "local-provisioner";
/// The provisioner's name, as StorageClasses and volumes name it (kind's is
/// `rancher.io/local-path`).
pub const PROVISIONER: &str = "kube-sim.io/local";
/// The default StorageClass it installs (kind's is named `standard` too).
pub const CLASS_NAME: &str = "standard";
/// The component its Events come from: the library's `<provisioner>_<id>`.
pub const COMPONENT: &str = "kube-sim.io/local_local-provisioner";
/// The component the expansion Events come from: the external-resizer's `external-resizer
/// <driver>`.
pub const RESIZER_COMPONENT: &str = "external-resizer kube-sim.io/local";
/// How often the external-resizer's informers resync every claim (its `--resync-period`,
/// default 10 minutes). Its claim sync is triggered by claim changes only (the volume informer
/// is a lister), so a claim synced while the volume cache lagged behind (its volume not there
/// yet, or not yet bound to it) is expanded at the next resync.
pub const RESIZER_RESYNC: Duration = Duration::from_secs(600);
/// Where its volumes live on the node (local-path's default).
pub const PATH_ROOT: &str = "/var/local-path-provisioner";
/// How many times installing the StorageClass is tried, [`super::ERROR_REQUEUE`] apart, before
/// the provisioner gives up on it (logged); the provisioning goes on regardless.
pub const INSTALL_ATTEMPTS_MAX: u32 = 1_000;
/// The label a node's name is in, which the volumes' node affinity requires.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Add the local provisioner to a world, on node [`NODE`].
pub fn local_provisioner(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What both syncs get.
pub struct Context {
    client: sim::Client,
    volumes: Store<PersistentVolume>,
    recorder: events::Recorder,
    resizer_recorder: events::Recorder,
}

/// The provisioner's main future: the class installation, the claim sync and the volume sync.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let claims =
        Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), watcher::Config::default());
    let volumes = Controller::new(Api::<PersistentVolume>::all(client.clone()), watcher::Config::default());
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, COMPONENT),
        resizer_recorder: events::recorder(&client, RESIZER_COMPONENT),
        volumes: volumes.store(),
        client: client.clone(),
    });
    let claim_sync =
        claims.run(sync_claim, super::retry_soon, ctx.clone()).for_each(|_| futures::future::ready(()));
    let volume_sync =
        volumes.run(sync_volume, super::retry_soon, ctx).for_each(|_| futures::future::ready(()));
    futures::future::join3(install_class(&client), claim_sync, volume_sync).await;
}

/// The default StorageClass this provisioner serves.
pub fn default_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(CLASS_NAME.to_owned()),
            annotations: Some(BTreeMap::from([(ANN_DEFAULT_CLASS.to_owned(), "true".to_owned())])),
            ..ObjectMeta::default()
        },
        provisioner: PROVISIONER.to_owned(),
        reclaim_policy: Some(pv::RECLAIM_DELETE.to_owned()),
        volume_binding_mode: Some(pv::WAIT_FOR_FIRST_CONSUMER.to_owned()),
        ..StorageClass::default()
    }
}

/// Create [`CLASS_NAME`] unless it exists, retrying failures (faults) up to
/// [`INSTALL_ATTEMPTS_MAX`] times.
async fn install_class(client: &sim::Client) {
    let classes: Api<StorageClass> = Api::all(client.clone());
    for _ in 0..INSTALL_ATTEMPTS_MAX {
        let error = match classes.create(&PostParams::default(), &default_class()).await {
            Ok(_) => return,
            // There already (a restart, or a create whose answer was lost), unless the 409 is a
            // fault's Conflict.
            Err(e) if has_code(&e, 409) => match classes.get_opt(CLASS_NAME).await {
                Ok(Some(_)) => return,
                Ok(None) => e,
                Err(e) => e,
            },
            Err(e) => e,
        };
        tracing::debug!(%error, "installing the default StorageClass failed; retrying");
        madsim::time::sleep(super::ERROR_REQUEUE).await;
    }
    tracing::warn!(
        attempts = INSTALL_ATTEMPTS_MAX,
        "gave up installing the default StorageClass {CLASS_NAME}"
    );
}

/// The provisioner a claim was handed to by the binder, if any.
fn requested_provisioner(claim: &PersistentVolumeClaim) -> Option<&str> {
    let annotations = claim.metadata.annotations.as_ref()?;
    annotations
        .get(ANN_STORAGE_PROVISIONER)
        .or_else(|| annotations.get(ANN_BETA_STORAGE_PROVISIONER))
        .map(String::as_str)
}

/// The name of the volume provisioned for a claim.
pub fn volume_name_for(claim: &PersistentVolumeClaim) -> String {
    format!("pvc-{}", claim.metadata.uid.as_deref().unwrap_or_default())
}

/// Provision one claim if it is this provisioner's to provision (`syncClaim`), or expand its
/// volume if it is bound to one of ours and asks for more ([`expand_claim`]).
pub async fn sync_claim(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Context>) -> Result<Action, Error> {
    if needs_expansion(&claim) {
        return expand_claim(&claim, &ctx).await;
    }
    if pv::volume_name_of(&claim).is_some()
        || requested_provisioner(&claim) != Some(PROVISIONER)
        || claim.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::await_change());
    }
    if ctx.volumes.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let name = volume_name_for(&claim);
    if ctx.volumes.get(&ObjectRef::new(&name)).is_some() {
        return Ok(Action::await_change());
    }
    let class_name = pv::claim_class(&claim);
    let classes: Api<StorageClass> = Api::all(ctx.client.clone());
    let Some(class) = classes.get_opt(&class_name).await? else { return Ok(Action::await_change()) };
    let selected_node = claim.annotations().get(pv::ANN_SELECTED_NODE).cloned();
    if class.provisioner != PROVISIONER || (pv::is_delay_binding_class(&class) && selected_node.is_none()) {
        // Another provisioner's since, or (`shouldProvision`) waiting for the scheduler to pick
        // the node of a Pod that uses it.
        return Ok(Action::await_change());
    }
    let regarding = events::reference(&*claim);
    let key = format!("{}/{}", claim.namespace().unwrap_or_default(), claim.name_any());
    let message = format!("External provisioner is provisioning volume for claim {key:?}");
    events::normal(&ctx.recorder, &regarding, "Provisioning", message).await;
    let node = selected_node.unwrap_or_else(|| kubelet::NODE_NAME.to_owned());
    let volume = provisioned_volume(&claim, &class, &name, &node);
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match volumes.create(&PostParams::default(), &volume).await {
        Ok(_) => {}
        // Made by an earlier attempt whose answer was lost (AlreadyExists): the library takes it
        // as made. Any other 409 (a fault's Conflict) made nothing: retried.
        Err(e) if has_code(&e, 409) => {
            if volumes.get_opt(&name).await?.is_none() {
                return Err(e.into());
            }
        }
        Err(e) => return Err(e.into()),
    }
    let message = format!("Successfully provisioned volume {name}");
    events::normal(&ctx.recorder, &regarding, "ProvisioningSucceeded", message).await;
    Ok(Action::await_change())
}

/// The storage a claim requests, as written.
fn storage_request(claim: &PersistentVolumeClaim) -> Option<&Quantity> {
    claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?.get("storage")
}

/// The external-resizer's `pvcNeedResize`: a bound claim whose request exceeds its capacity.
fn needs_expansion(claim: &PersistentVolumeClaim) -> bool {
    let bound = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(pv::PHASE_BOUND);
    let capacity = claim.status.as_ref().and_then(|s| s.capacity.as_ref()).and_then(|c| c.get("storage"));
    bound
        && pv::volume_name_of(claim).is_some()
        && claim.metadata.deletion_timestamp.is_none()
        && pv::requested_storage(claim) > capacity.and_then(quantity::value).unwrap_or(0.0)
}

/// Expand a bound claim's volume to its request, as the CSI external-resizer beside a driver
/// that needs no node step does (`expandAndRecover`, the `RecoverVolumeExpansionFailure` flow):
/// 1. the claim's status gets `allocatedResources` of the new size,
///    `allocatedResourceStatuses: {storage: ControllerResizeInProgress}` and a `Resizing`
///    condition (`markControllerResizeInProgress`; skipped when already allocated at that size),
///    and a `Resizing` event;
/// 2. the volume's `spec.capacity` grows (`ControllerExpandVolume`, then `updatePVCapacity`);
/// 3. the claim's `status.capacity` becomes the new size, its resize conditions and its storage
///    resource status go (`markOverallExpansionAsFinished`), with a `VolumeResizeSuccessful`
///    event.
///
/// Only volumes this provisioner made, bound to the claim by uid (`pvCanBeExpanded`); the claim
/// writes carry the resourceVersion read. Whether the class allows expansion is the API server's
/// to check (`PersistentVolumeClaimResize`), as upstream.
pub async fn expand_claim(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<Action, Error> {
    let Some(volume_name) = pv::volume_name_of(claim) else { return Ok(Action::await_change()) };
    if ctx.volumes.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    // The volume cache lags the claim's (another informer): the claim is synced again at the
    // resizer's resync, as upstream's `syncPVC` finds it "not found" or "not bound" and waits
    // for the next one.
    let Some(volume) = ctx.volumes.get(&ObjectRef::new(volume_name)) else {
        return Ok(Action::requeue(RESIZER_RESYNC));
    };
    let ours = volume.annotations().get(ANN_PROVISIONED_BY).is_some_and(|p| p == PROVISIONER);
    let claim_ref = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let bound_to_claim = claim_ref.is_some_and(|r| {
        r.uid.is_some() && r.uid == claim.metadata.uid && r.namespace == claim.metadata.namespace
    });
    let Some(new_size) = storage_request(claim).cloned() else { return Ok(Action::await_change()) };
    if !ours {
        return Ok(Action::await_change());
    }
    if !bound_to_claim {
        return Ok(Action::requeue(RESIZER_RESYNC));
    }
    let name = claim.name_any();
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    let status = claim.status.as_ref();
    let allocated = status.and_then(|s| s.allocated_resources.as_ref()).and_then(|a| a.get("storage"));
    let mut claim_rv = claim.resource_version();
    if allocated != Some(&new_size) {
        let conditions = resize_conditions(claim, true);
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": claim_rv },
            "status": {
                "conditions": conditions,
                "allocatedResourceStatuses": { "storage": "ControllerResizeInProgress" },
                "allocatedResources": { "storage": new_size },
            },
        });
        let marked = claims.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        claim_rv = marked.resource_version();
    }
    let regarding = events::reference(claim);
    let message = format!("External resizer is resizing volume {volume_name}");
    events::normal(&ctx.resizer_recorder, &regarding, "Resizing", message).await;
    if pv::volume_storage(&volume) < pv::requested_storage(claim) {
        let patch = serde_json::json!({ "spec": { "capacity": { "storage": new_size } } });
        let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
        volumes.patch(volume_name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    // Emptied lists and maps go, as Go's `omitempty` drops them.
    let conditions = Some(resize_conditions(claim, false)).filter(|c| !c.is_empty());
    let statuses = status.and_then(|s| s.allocated_resource_statuses.as_ref());
    let other_statuses = statuses.is_some_and(|m| m.keys().any(|k| k != "storage"));
    let statuses =
        if other_statuses { serde_json::json!({ "storage": null }) } else { serde_json::Value::Null };
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": claim_rv },
        "status": {
            "capacity": { "storage": new_size },
            "conditions": conditions,
            "allocatedResourceStatuses": statuses,
        },
    });
    claims.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    events::normal(
        &ctx.resizer_recorder,
        &regarding,
        "VolumeResizeSuccessful",
        "Resize volume succeeded".to_owned(),
    )
    .await;
    Ok(Action::await_change())
}

/// A claim's conditions with its resize conditions (`Resizing`, `FileSystemResizePending`)
/// replaced by a `Resizing` one when `resizing`, else removed (`MergeResizeConditionsOfPVC`).
fn resize_conditions(claim: &PersistentVolumeClaim, resizing: bool) -> Vec<PersistentVolumeClaimCondition> {
    let existing = claim.status.as_ref().and_then(|s| s.conditions.as_ref());
    let mut conditions: Vec<PersistentVolumeClaimCondition> = existing
        .into_iter()
        .flatten()
        .filter(|c| c.type_ != "Resizing" && c.type_ != "FileSystemResizePending")
        .cloned()
        .collect();
    if resizing {
        let kept = existing.into_iter().flatten().find(|c| c.type_ == "Resizing" && c.status == "True");
        conditions.push(kept.cloned().unwrap_or_else(|| PersistentVolumeClaimCondition {
            type_: "Resizing".to_owned(),
            status: "True".to_owned(),
            last_transition_time: Some(sim::time::now_k8s()),
            ..PersistentVolumeClaimCondition::default()
        }));
    }
    conditions
}

/// The volume made for `claim` of `class`, named `name`, on `node` (its required node affinity:
/// the node's hostname label, as local-path's), pre-bound to the claim.
pub fn provisioned_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    name: &str,
    node: &str,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    let request = spec.resources.as_ref().and_then(|r| r.requests.as_ref()?.get("storage").cloned());
    let namespace = claim.namespace().unwrap_or_default();
    let node_affinity = VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: HOSTNAME_LABEL.to_owned(),
                    operator: "In".to_owned(),
                    values: Some(vec![node.to_owned()]),
                }]),
                ..NodeSelectorTerm::default()
            }],
        }),
    };
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some(BTreeMap::from([(ANN_PROVISIONED_BY.to_owned(), PROVISIONER.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: request.map(|r| BTreeMap::from([("storage".to_owned(), r)])),
            claim_ref: Some(pv::claim_ref(claim)),
            host_path: Some(HostPathVolumeSource {
                path: format!("{PATH_ROOT}/{name}_{namespace}_{}", claim.name_any()),
                type_: Some("DirectoryOrCreate".to_owned()),
            }),
            mount_options: class.mount_options.clone(),
            node_affinity: Some(node_affinity),
            persistent_volume_reclaim_policy: Some(
                class.reclaim_policy.clone().unwrap_or_else(|| pv::RECLAIM_DELETE.to_owned()),
            ),
            storage_class_name: Some(pv::claim_class(claim)),
            volume_mode: spec.volume_mode.clone(),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    }
}

/// Delete one volume this provisioner made once the binder released it with reclaim policy
/// `Delete` (`syncVolume`, `shouldDelete`).
pub async fn sync_volume(volume: Arc<PersistentVolume>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ours = volume.annotations().get(ANN_PROVISIONED_BY).is_some_and(|p| p == PROVISIONER);
    let released = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(pv::PHASE_RELEASED);
    let deletes = volume.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        == Some(pv::RECLAIM_DELETE);
    if !ours || !released || !deletes || volume.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: volume.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match volumes.delete(&volume.name_any(), &params).await {
        Ok(_) => Ok(Action::await_change()),
        // Gone already.
        Err(e) if has_code(&e, 404) => Ok(Action::await_change()),
        // The uid precondition failed: done if the name holds another volume now; otherwise (a
        // fault's 409) retried.
        Err(e) if has_code(&e, 409) => match volumes.get_opt(&volume.name_any()).await? {
            Some(current) if current.uid() == volume.uid() => Err(e.into()),
            _ => Ok(Action::await_change()),
        },
        Err(e) => Err(e.into()),
    }
}
