//! The ephemeral volume controller: a Pod's generic ephemeral volume (`volumes[].ephemeral`) gets
//! its PersistentVolumeClaim, made from the volume's `volumeClaimTemplate` and owned by the Pod,
//! as kube-controller-manager's `ephemeral-volume-controller` (`pkg/controller/volume/ephemeral`).
//!
//! - The claim is named `<pod>-<volume>` (`ephemeral.VolumeClaimName`), in the Pod's namespace,
//!   with the template's labels, annotations and spec, and the Pod as its controller
//!   (`blockOwnerDeletion: true`): the garbage collector deletes it with the Pod, and the PVC
//!   protection controller keeps it while the Pod is not shut down.
//! - A Pod being deleted gets none. A claim of that name that the Pod does not control is left
//!   alone: the sync fails and a Warning `FailedBinding` says "PVC <ns>/<claim> was not created
//!   for pod <ns>/<pod> (pod is not owner)", and the scheduler (the kubelet-lite) does not place
//!   the Pod.
//! - Claims are read from a cache (upstream's claim lister); a Pod is synced when it changes and
//!   when one of its claims is deleted (upstream's `onPVCDelete`), so a deleted claim is made
//!   again while its Pod lives. A create that finds the claim made meanwhile (409) reads it.
//!
//! Where it differs: no metrics. Upstream's other Event (a failed create) is the sync's error
//! here, retried with the default controller backoff ([`super::rate_limit`]).

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use sim::api::{Api, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::{Error, has_code};
use super::events;
use super::owners;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (upstream's controller name).
pub const NODE: &str = "ephemeral-volume-controller";

/// Add the ephemeral volume controller to a world, on node [`NODE`].
pub fn ephemeral_volume_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// The claim of Pod `pod`'s generic ephemeral volume `volume` (`ephemeral.VolumeClaimName`).
pub fn claim_name(pod: &str, volume: &str) -> String {
    format!("{pod}-{volume}")
}

/// Why `claim` is not the one made for `pod`'s ephemeral volume (`ephemeral.VolumeIsForPod`):
/// the Pod does not control it. `None` if it does.
pub fn not_for_pod(pod: &Pod, claim: &PersistentVolumeClaim) -> Option<String> {
    let uid = pod.uid().unwrap_or_default();
    (!owners::is_controlled_by(&claim.metadata, &uid)).then(|| {
        let namespace = pod.namespace().unwrap_or_default();
        format!(
            "PVC {namespace}/{} was not created for pod {namespace}/{} (pod is not owner)",
            claim.name_any(),
            pod.name_any()
        )
    })
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    recorder: events::Recorder,
    /// The claim informer's cache (upstream's claim lister).
    claims: Store<PersistentVolumeClaim>,
}

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let controller = Controller::new(Api::<Pod>::all(client.clone()), watcher::Config::default());
    let (deleted, claim_owners) = mpsc::unbounded::<ObjectRef<Pod>>();
    let claims = changes::informer(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
        move |change| {
            let Change::Deleted(claim) = change else { return };
            let owner =
                owners::controller_of(&claim.metadata).filter(|r| r.kind == "Pod" && r.api_version == "v1");
            if let (Some(owner), Some(namespace)) = (owner, claim.namespace()) {
                let _ = deleted.unbounded_send(ObjectRef::new(&owner.name).within(&namespace));
            }
        },
    );
    if claims.wait_until_ready().await.is_err() {
        return;
    }
    let ctx = Arc::new(Context { recorder: events::recorder(&client, NODE), client, claims });
    controller
        .reconcile_on(claim_owners)
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Sync one Pod (upstream's `syncHandler`): make each missing claim of its ephemeral volumes.
pub async fn reconcile(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, Error> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let pod_name = pod.name_any();
    let namespace = pod.namespace().ok_or(Error::MissingNamespace { kind: "Pod", name: pod_name.clone() })?;
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    for volume in volumes {
        let Some(ephemeral) = &volume.ephemeral else { continue };
        let name = claim_name(&pod_name, &volume.name);
        let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
        let existing = match ctx.claims.get(&ObjectRef::new(&name).within(&namespace)) {
            Some(cached) => Some(cached),
            None => {
                let template = ephemeral.volume_claim_template.clone().unwrap_or_default();
                let template_meta = template.metadata.unwrap_or_default();
                let claim = PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(namespace.clone()),
                        labels: template_meta.labels,
                        annotations: template_meta.annotations,
                        owner_references: Some(vec![owners::controller_ref(&*pod)]),
                        ..ObjectMeta::default()
                    },
                    spec: Some(template.spec),
                    status: None,
                };
                match api.create(&PostParams::default(), &claim).await {
                    Ok(_) => None,
                    // Made meanwhile (the cache lags): check whose it is.
                    Err(e) if has_code(&e, 409) => api.get_opt(&name).await?.map(Arc::new),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        if let Some(reason) = existing.as_deref().and_then(|claim| not_for_pod(&pod, claim)) {
            events::warning(&ctx.recorder, &events::reference(&*pod), "FailedBinding", reason.clone()).await;
            return Err(Error::InvalidSpec { kind: "Pod", name: pod_name, reason });
        }
    }
    Ok(Action::await_change())
}
