//! # zookeeper: PVC cleanup from a stale deletion (pravega/zookeeper-operator#312)
//!
//! **Real bug.** Sieve found it (stale-state bug zookeeper-operator-312, and its sibling 314):
//! when a `ZookeeperCluster` is deleted, the operator's finalizer deletes the cluster's PVCs,
//! which it finds by name. If the user deletes the cluster and creates a new one with the same
//! name, and the operator then restarts against an API server replica that lags behind, it reads
//! the old cluster with its `deletionTimestamp`, runs the cleanup again, and deletes the *new*
//! cluster's PVCs (same names, other owner).
//!
//! **Here.** A `ZookeeperCluster` (`replicas`) owns PVCs `data-<name>-<i>`, lists them in
//! `status.dataVolumes` once made, and carries a finalizer that deletes them. The workload
//! creates the cluster, deletes it, and creates it again under the same name.
//! - `zookeeper:stale-delete`: the cleanup deletes `data-<name>-<i>` by name.
//! - `zookeeper:fixed`: the cleanup deletes only claims whose owner reference carries the
//!   deleted cluster's uid, with that claim's uid as a precondition. Beyond that one fix, the
//!   sweep showed what else a stale view breaks, and the fixed variant guards it too: a reconcile
//!   first checks by a server read that the cached cluster is still the one under its name (else
//!   it would create claims owned by the dead cluster, which the garbage collector then deletes
//!   under the live one), adopts claims owned by another uid, and writes status with the
//!   resourceVersion it read.
//!
//! **Caught by** the data-store contract [`super::oracle::data_volumes_kept`].

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::CustomResource;
use kube_core::ResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE, USER_THINK_TIME};

/// The operator's node.
pub const NODE: &str = "zookeeper-operator";
/// The finalizer that deletes the cluster's PVCs.
pub const FINALIZER: &str = "cleanUpZookeeperPVC";
const CLUSTER_NAME: &str = "zk";

/// The desired state of a ZooKeeper ensemble.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "zookeeper.pravega.io",
    version = "v1beta1",
    kind = "ZookeeperCluster",
    namespaced,
    status = "ZookeeperClusterStatus"
)]
pub struct ZookeeperClusterSpec {
    /// Ensemble members.
    pub replicas: i32,
}

/// What the operator has made.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperClusterStatus {
    /// The PVCs holding the ensemble's data.
    #[serde(default)]
    pub data_volumes: Vec<String>,
}

struct Ctx {
    bug: bool,
    clusters: Api<ZookeeperCluster>,
    pvcs: Api<PersistentVolumeClaim>,
}

fn pvc_name(cluster: &str, ordinal: i32) -> String {
    format!("data-{cluster}-{ordinal}")
}

async fn reconcile(cluster: Arc<ZookeeperCluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    if !ctx.bug && !common::is_current(&ctx.clusters, &*cluster).await? {
        // A stale view of an older cluster of this name: wait for the cache to catch up.
        return Ok(Action::requeue(common::ERROR_REQUEUE));
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        if cluster.finalizers().iter().any(|f| f == FINALIZER) {
            clean_up(&cluster, &ctx).await?;
            let finalizers: Vec<&String> = cluster.finalizers().iter().filter(|f| *f != FINALIZER).collect();
            let patch = serde_json::json!({ "metadata": { "finalizers": finalizers } });
            ctx.clusters.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        return Ok(Action::requeue(common::RESYNC));
    }
    if !cluster.finalizers().iter().any(|f| f == FINALIZER) {
        let patch = serde_json::json!({ "metadata": { "finalizers": [FINALIZER] } });
        ctx.clusters.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        return Ok(Action::requeue(common::RESYNC));
    }
    let owner = common::owner_of(&*cluster);
    let volumes: Vec<String> = (0..cluster.spec.replicas).map(|i| pvc_name(&name, i)).collect();
    for volume in &volumes {
        if ctx.bug {
            common::create_if_absent(&ctx.pvcs, &common::pvc(volume, NODE, &owner, 1)).await?;
        } else {
            common::ensure_owned_pvc(&ctx.pvcs, volume, NODE, &owner, 1).await?;
        }
    }
    let listed = cluster.status.as_ref().map(|s| s.data_volumes.as_slice()).unwrap_or_default();
    if listed != volumes.as_slice() {
        // The resourceVersion read makes a write from a stale view fail with 409.
        let rv = &cluster.metadata.resource_version;
        let patch = serde_json::json!({ "metadata": { "resourceVersion": rv }, "status": { "dataVolumes": volumes } });
        ctx.clusters.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(Action::requeue(common::RESYNC))
}

/// Delete the deleted cluster's claims.
async fn clean_up(cluster: &ZookeeperCluster, ctx: &Ctx) -> Result<(), Error> {
    let name = cluster.name_any();
    if ctx.bug {
        for ordinal in 0..cluster.spec.replicas {
            match ctx.pvcs.delete(&pvc_name(&name, ordinal), &DeleteParams::default()).await {
                Err(e) if e.status().is_some_and(|s| s.code == 404) => {}
                other => {
                    other?;
                }
            }
        }
        return Ok(());
    }
    let uid = cluster.uid().unwrap_or_default();
    let claims = ctx.pvcs.list(&ListParams::default().labels(&common::selector(NODE, &name))).await?;
    for claim in claims.items {
        if !claim.owner_references().iter().any(|o| o.uid == uid) {
            continue; // someone else's claim with the same name: a newer cluster's
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: claim.uid(), resource_version: None }),
            ..DeleteParams::default()
        };
        // Gone already is fine; a 409 (the claim changed under us) is retried with a fresh list.
        match ctx.pvcs.delete(&claim.name_any(), &params).await {
            Err(e) if e.status().is_some_and(|s| s.code == 404) => {}
            other => {
                other?;
            }
        }
    }
    Ok(())
}

fn world(bug: bool) -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&<ZookeeperCluster as kube::CustomResourceExt>::crd())
        .expect("the CRD serializes");
    let builder = Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<ZookeeperCluster> = Api::namespaced(client.clone(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, clusters: clusters.clone(), pvcs: pvcs.clone() });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .owns(pvcs, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<ZookeeperCluster> = Api::namespaced(w.client(), NAMESPACE);
            let mut cluster = ZookeeperCluster::new(CLUSTER_NAME, ZookeeperClusterSpec { replicas: 2 });
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            let ready = |c: Option<&ZookeeperCluster>| {
                c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.data_volumes.len() == 2)
            };
            let timeout = Duration::from_secs(60);
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&clusters, CLUSTER_NAME, ready, timeout).await?;
            w.delete(&clusters, CLUSTER_NAME).await?;
            w.wait_for(&clusters, CLUSTER_NAME, |c| c.is_none(), timeout).await?;
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&clusters, CLUSTER_NAME, ready, timeout).await?;
            // The user keeps working with the new cluster for a while (faults stay on meanwhile).
            w.sleep(USER_THINK_TIME).await;
            Ok(())
        })
        .property(super::oracle::data_volumes_kept("zookeeper.pravega.io/zookeeperclusters"));
    crate::builtins::garbage_collector(builder)
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(false)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 12)
}

/// `zookeeper:fixed` and `zookeeper:stale-delete`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "zookeeper:fixed",
            "finalizer deletes only PVCs owned by the deleted cluster's uid",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "zookeeper:stale-delete",
            "zookeeper-operator#312: a stale deletionTimestamp deletes a recreated cluster's PVCs by name",
            world(true),
            swarm(),
        ),
    ]
}
