//! # rabbitmq: storage resize with an intermediate state (rabbitmq/cluster-operator#782)
//!
//! **Real bug.** Sieve found it (OSDI'22, intermediate-state bug rabbitmq-operator-782): a
//! StatefulSet's `volumeClaimTemplates` are immutable, so to grow the persistence storage the
//! operator deletes the StatefulSet (orphaning its pods and PVCs), expands the PVCs, and creates
//! the StatefulSet again. It decided whether to expand the PVCs by comparing the StatefulSet's
//! template with the desired size. A crash right after the delete restarts the operator into a
//! world with no StatefulSet: it creates a new one from the new spec, finds nothing to compare,
//! and never expands the PVCs.
//!
//! **Here.** A `RabbitmqCluster` (`replicas`, `storageGi`) owns a StatefulSet `<name>-server`
//! and the PVCs `persistence-<name>-server-<i>` (made by the operator, in place of the
//! StatefulSet controller, to keep the world small) of the StorageClass [`STORAGE_CLASS`], which
//! allows expansion. The PersistentVolume binder and the local provisioner (with its resizer)
//! run too: kube-apiserver lets only a bound claim grow, so a resize needs claims that bind, as
//! on a cluster. The workload installs the class, waits for the cluster's claims to be bound, then
//! grows the storage from 1Gi to 2Gi.
//! - `rabbitmq:resize-crash`: the delete, the PVC expansion and the re-creation happen in one
//!   pass, gated on the StatefulSet's template size; a crash or an ambiguous answer after the
//!   delete leaves the PVCs at 1Gi.
//! - `rabbitmq:fixed`: every reconcile first expands any PVC smaller than the spec (level-based),
//!   then deals with the StatefulSet.
//!
//! **Caught by** `matches_reference`: the fault-free run ends with 2Gi claims and volumes.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::CustomResource;
use kube_core::ResourceExt;
use model_apiserver::versions::WorkloadSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE};
use crate::builtins;

/// The operator's node (and field manager).
pub const NODE: &str = "rabbitmq-operator";
/// The name of the cluster the workload creates.
const CLUSTER_NAME: &str = "rabbit";
/// The servers of the cluster the workload creates.
const REPLICAS: i32 = 2;
/// The StorageClass of the persistence claims (the `RabbitmqCluster`'s
/// `persistence.storageClassName`): the local provisioner's, with `allowVolumeExpansion`.
pub const STORAGE_CLASS: &str = "expandable";

/// The StorageClass the workload installs.
fn storage_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta { name: Some(STORAGE_CLASS.to_owned()), ..ObjectMeta::default() },
        provisioner: builtins::local_provisioner::PROVISIONER.to_owned(),
        allow_volume_expansion: Some(true),
        reclaim_policy: Some("Delete".to_owned()),
        volume_binding_mode: Some("Immediate".to_owned()),
        ..StorageClass::default()
    }
}

/// A persistence claim of `size_gi` of [`STORAGE_CLASS`].
fn persistence_claim(cluster: &RabbitmqCluster, name: &str, size_gi: u32) -> PersistentVolumeClaim {
    let mut pvc = common::pvc(name, NODE, &common::owner_of(cluster), size_gi);
    if let Some(spec) = pvc.spec.as_mut() {
        spec.storage_class_name = Some(STORAGE_CLASS.to_owned());
    }
    pvc
}

/// The desired state of a RabbitMQ cluster.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "rabbitmq.com", version = "v1beta1", kind = "RabbitmqCluster", namespaced)]
#[serde(rename_all = "camelCase")]
pub struct RabbitmqClusterSpec {
    /// Server pods.
    pub replicas: i32,
    /// Persistence storage per server, in GiB.
    pub storage_gi: u32,
}

struct Ctx {
    bug: bool,
    statefulsets: Api<StatefulSet>,
    pvcs: Api<PersistentVolumeClaim>,
}

fn statefulset_name(cluster: &str) -> String {
    format!("{cluster}-server")
}

fn pvc_name(cluster: &str, ordinal: i32) -> String {
    format!("persistence-{cluster}-server-{ordinal}")
}

/// The StatefulSet the cluster runs as.
fn statefulset(cluster: &RabbitmqCluster) -> StatefulSet {
    let owner = common::owner_of(cluster);
    let name = statefulset_name(&cluster.name_any());
    common::statefulset(&name, NODE, &owner, cluster.spec.replicas, Some(cluster.spec.storage_gi))
}

/// The storage size of a StatefulSet's claim template.
fn template_gi(statefulset: &StatefulSet) -> Option<u32> {
    let templates = statefulset.spec().volume_claim_templates.as_ref()?;
    common::requested_gi(templates.first()?)
}

/// Expand claim `name` to `size_gi` if it is smaller, creating it if it is missing.
async fn ensure_pvc(ctx: &Ctx, cluster: &RabbitmqCluster, name: &str, size_gi: u32) -> Result<(), Error> {
    match ctx.pvcs.get_opt(name).await? {
        None => common::create_if_absent(&ctx.pvcs, &persistence_claim(cluster, name, size_gi)).await,
        Some(pvc) if common::requested_gi(&pvc).is_some_and(|gi| gi >= size_gi) => Ok(()),
        Some(_) => expand_pvc(ctx, name, size_gi).await,
    }
}

async fn expand_pvc(ctx: &Ctx, name: &str, size_gi: u32) -> Result<(), Error> {
    let patch = serde_json::json!({
        "spec": { "resources": { "requests": { "storage": common::gibibytes(size_gi) } } }
    });
    ctx.pvcs.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

async fn reconcile(cluster: Arc<RabbitmqCluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    let want_gi = cluster.spec.storage_gi;
    if !ctx.bug {
        // Level-based: whatever happened before a crash, every claim ends up big enough.
        for ordinal in 0..cluster.spec.replicas {
            ensure_pvc(&ctx, &cluster, &pvc_name(&name, ordinal), want_gi).await?;
        }
    }
    let sts_name = statefulset_name(&name);
    match ctx.statefulsets.get_opt(&sts_name).await? {
        None => {
            if ctx.bug {
                // Only missing claims are made; existing ones are assumed to be right.
                for ordinal in 0..cluster.spec.replicas {
                    let pvc = persistence_claim(&cluster, &pvc_name(&name, ordinal), want_gi);
                    common::create_if_absent(&ctx.pvcs, &pvc).await?;
                }
            }
            common::create_if_absent(&ctx.statefulsets, &statefulset(&cluster)).await?;
        }
        Some(sts) if template_gi(&sts) != Some(want_gi) => {
            // The claim templates are immutable: delete the StatefulSet and create it again with
            // the new template. (The real operator orphans the pods; no pods run here.)
            ctx.statefulsets.delete(&sts_name, &DeleteParams::default()).await?;
            if ctx.bug {
                for ordinal in 0..cluster.spec.replicas {
                    expand_pvc(&ctx, &pvc_name(&name, ordinal), want_gi).await?;
                }
            }
            common::create_if_absent(&ctx.statefulsets, &statefulset(&cluster)).await?;
        }
        Some(sts) if sts.spec().replicas != Some(cluster.spec.replicas) => {
            let patch = serde_json::json!({ "spec": { "replicas": cluster.spec.replicas } });
            ctx.statefulsets.patch(&sts_name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        Some(_) => {}
    }
    Ok(Action::requeue(common::RESYNC))
}

fn world(bug: bool) -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&<RabbitmqCluster as kube::CustomResourceExt>::crd())
        .expect("the CRD serializes");
    let builder =
        builtins::local_provisioner::local_provisioner(builtins::persistentvolume_binder(Sim::builder()));
    builder
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<RabbitmqCluster> = Api::namespaced(client.clone(), NAMESPACE);
            let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, statefulsets: statefulsets.clone(), pvcs });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .owns(statefulsets, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<RabbitmqCluster> = Api::namespaced(w.client(), NAMESPACE);
            let statefulsets: Api<StatefulSet> = Api::namespaced(w.client(), NAMESPACE);
            w.apply(&Api::<StorageClass>::all(w.client()), &storage_class()).await?;
            let mut cluster =
                RabbitmqCluster::new(CLUSTER_NAME, RabbitmqClusterSpec { replicas: REPLICAS, storage_gi: 1 });
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            w.apply(&clusters, &cluster).await?;
            let sized = |gi: u32| move |sts: Option<&StatefulSet>| sts.and_then(template_gi) == Some(gi);
            let sts_name = statefulset_name(CLUSTER_NAME);
            w.wait_for(&statefulsets, &sts_name, sized(1), Duration::from_secs(60)).await?;
            // The cluster is up, its storage bound, before anyone resizes it.
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), NAMESPACE);
            let bound = |pvc: Option<&PersistentVolumeClaim>| {
                pvc.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Bound")
            };
            for ordinal in 0..REPLICAS {
                w.wait_for(&pvcs, &pvc_name(CLUSTER_NAME, ordinal), bound, Duration::from_secs(60)).await?;
            }
            let grow = serde_json::json!({ "spec": { "storageGi": 2 } });
            w.patch(&clusters, CLUSTER_NAME, &Patch::Merge(grow)).await?;
            w.wait_for(&statefulsets, &sts_name, sized(2), Duration::from_secs(60)).await?;
            Ok(())
        })
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(false)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 10)
}

/// `rabbitmq:fixed` and `rabbitmq:resize-crash`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "rabbitmq:fixed",
            "storage resize that expands PVCs level-based before recreating the StatefulSet",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "rabbitmq:resize-crash",
            "rabbitmq-operator#782: a crash after deleting the StatefulSet leaves the PVCs unexpanded",
            world(true),
            swarm(),
        ),
    ]
}
