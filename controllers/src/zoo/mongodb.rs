//! # mongodb: stale cleanup by label, and a backup created twice (Percona K8SPSMDB-430)
//!
//! **Real bugs.**
//! - Stale state (Sieve's K8SPSMDB-430 class, as zookeeper-operator#312): the
//!   `delete-psmdb-pvc` finalizer deletes the PVCs *labelled* with the cluster's name. After a
//!   delete and a re-create under the same name, an operator restarted against a lagging API
//!   server replica still sees the old cluster being deleted, and deletes the PVCs of the new one.
//! - Non-idempotent create: a scheduled backup is a `PerconaServerMongoDBBackup` object made with
//!   `generateName`. When the create's answer is lost (a timeout after the server applied it),
//!   the retry makes a second backup.
//!
//! **Here.** A `PerconaServerMongoDB` (`size`, `backups`) owns PVCs `mongod-data-<name>-<i>`,
//! listed in `status.dataVolumes`, and one `PerconaServerMongoDBBackup` per requested backup,
//! counted in `status.backupsStarted`. The workload asks for two backups, then deletes the
//! cluster and creates it again.
//! - `mongodb:stale-delete`: the finalizer deletes PVCs by label, trusting its cache.
//! - `mongodb:duplicate-backup`: backups are created with `generateName`.
//! - `mongodb:fixed`: the finalizer re-reads the cluster from the server and cleans up only if
//!   that same object (by uid) is being deleted; backups have deterministic names and an
//!   `AlreadyExists` answer counts as made. As `zookeeper:fixed`, every reconcile first checks
//!   that the cached cluster is still the server's, adopts claims, and writes status with the
//!   resourceVersion it read.
//!
//! **Caught by** the data-store contract [`super::oracle::data_volumes_kept`] and the
//! [`super::oracle::children_within_spec`] contract (never more backups than requested).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::CustomResource;
use kube_core::{ObjectMeta, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE, USER_THINK_TIME};

/// The operator's node.
pub const NODE: &str = "psmdb-operator";
/// The finalizer that deletes the cluster's PVCs.
pub const FINALIZER: &str = "delete-psmdb-pvc";
const CLUSTER_NAME: &str = "mongo";

/// The desired state of a MongoDB replica set.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "psmdb.percona.com",
    version = "v1",
    kind = "PerconaServerMongoDB",
    namespaced,
    status = "PerconaServerMongoDBStatus"
)]
pub struct PerconaServerMongoDBSpec {
    /// Replica set members.
    pub size: i32,
    /// Backups requested so far.
    pub backups: u32,
}

/// What the operator has done.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerconaServerMongoDBStatus {
    /// The PVCs holding the replica set's data.
    #[serde(default)]
    pub data_volumes: Vec<String>,
    /// Backups started.
    #[serde(default)]
    pub backups_started: u32,
}

/// One backup of a cluster.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "psmdb.percona.com", version = "v1", kind = "PerconaServerMongoDBBackup", namespaced)]
#[serde(rename_all = "camelCase")]
pub struct PerconaServerMongoDBBackupSpec {
    /// The cluster backed up.
    pub cluster_name: String,
}

/// Which bug a world plants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    None,
    StaleDelete,
    DuplicateBackup,
}

struct Ctx {
    bug: Bug,
    clusters: Api<PerconaServerMongoDB>,
    pvcs: Api<PersistentVolumeClaim>,
    backups: Api<PerconaServerMongoDBBackup>,
}

fn pvc_name(cluster: &str, ordinal: i32) -> String {
    format!("mongod-data-{cluster}-{ordinal}")
}

async fn reconcile(cluster: Arc<PerconaServerMongoDB>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    if ctx.bug == Bug::None && !common::is_current(&ctx.clusters, &*cluster).await? {
        // A stale view of an older cluster of this name: wait for the cache to catch up.
        return Ok(Action::requeue(common::ERROR_REQUEUE));
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        if cluster.finalizers().iter().any(|f| f == FINALIZER) {
            finalize(&cluster, &ctx).await?;
        }
        return Ok(Action::requeue(common::RESYNC));
    }
    if !cluster.finalizers().iter().any(|f| f == FINALIZER) {
        let patch = serde_json::json!({ "metadata": { "finalizers": [FINALIZER] } });
        ctx.clusters.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        return Ok(Action::requeue(common::RESYNC));
    }
    let owner = common::owner_of(&*cluster);
    let volumes: Vec<String> = (0..cluster.spec.size).map(|i| pvc_name(&name, i)).collect();
    for volume in &volumes {
        if ctx.bug == Bug::None {
            common::ensure_owned_pvc(&ctx.pvcs, volume, NODE, &owner, 1).await?;
        } else {
            common::create_if_absent(&ctx.pvcs, &common::pvc(volume, NODE, &owner, 1)).await?;
        }
    }
    let status = cluster.status.clone().unwrap_or_default();
    // The resourceVersion read makes a status write from a stale view fail with 409.
    let rv = &cluster.metadata.resource_version;
    if status.data_volumes != volumes {
        let patch = serde_json::json!({ "metadata": { "resourceVersion": rv }, "status": { "dataVolumes": volumes } });
        ctx.clusters.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        return Ok(Action::requeue(common::RESYNC));
    }
    if status.backups_started < cluster.spec.backups {
        let number = status.backups_started + 1;
        let mut backup = PerconaServerMongoDBBackup::new(
            &format!("{name}-backup-{number}"),
            PerconaServerMongoDBBackupSpec { cluster_name: name.clone() },
        );
        backup.metadata = ObjectMeta {
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(common::labels(NODE, &name)),
            owner_references: Some(vec![owner]),
            ..backup.metadata
        };
        if ctx.bug == Bug::DuplicateBackup {
            backup.metadata.name = None;
            backup.metadata.generate_name = Some(format!("{name}-backup-"));
            ctx.backups.create(&PostParams::default(), &backup).await?;
        } else {
            common::create_if_absent(&ctx.backups, &backup).await?;
        }
        let patch = serde_json::json!({ "metadata": { "resourceVersion": rv }, "status": { "backupsStarted": number } });
        ctx.clusters.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(Action::requeue(common::RESYNC))
}

/// Delete the deleted cluster's PVCs, then let it go.
async fn finalize(cluster: &PerconaServerMongoDB, ctx: &Ctx) -> Result<(), Error> {
    let name = cluster.name_any();
    let uid = cluster.uid().unwrap_or_default();
    if ctx.bug != Bug::StaleDelete {
        // The cache may be stale: act only if the server agrees that this very object is going.
        let current = ctx.clusters.get_opt(&name).await?;
        let going = current
            .is_some_and(|c| c.uid().as_deref() == Some(&uid) && c.metadata.deletion_timestamp.is_some());
        if !going {
            return Ok(());
        }
    }
    let claims = ctx.pvcs.list(&ListParams::default().labels(&common::selector(NODE, &name))).await?;
    for claim in claims.items {
        match ctx.pvcs.delete(&claim.name_any(), &DeleteParams::default()).await {
            Err(e) if e.status().is_some_and(|s| s.code == 404) => {}
            other => {
                other?;
            }
        }
    }
    let remaining: Vec<&String> = cluster.finalizers().iter().filter(|f| *f != FINALIZER).collect();
    // The `test` op makes the patch apply only to the object this cleanup was for.
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "test", "path": "/metadata/uid", "value": uid },
        { "op": "replace", "path": "/metadata/finalizers", "value": remaining },
    ]))
    .expect("a well-formed JSON patch");
    ctx.clusters.patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch)).await?;
    Ok(())
}

fn world(bug: Bug) -> SimBuilder {
    let crds = [
        serde_yaml_ng::to_string(&<PerconaServerMongoDB as kube::CustomResourceExt>::crd()),
        serde_yaml_ng::to_string(&<PerconaServerMongoDBBackup as kube::CustomResourceExt>::crd()),
    ]
    .map(|c| c.expect("the CRD serializes"))
    .join("---\n");
    let builder = Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crds)
        .expect("the CRDs load")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<PerconaServerMongoDB> = Api::namespaced(client.clone(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NAMESPACE);
            let backups: Api<PerconaServerMongoDBBackup> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, clusters: clusters.clone(), pvcs: pvcs.clone(), backups });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .owns(pvcs, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<PerconaServerMongoDB> = Api::namespaced(w.client(), NAMESPACE);
            let mut cluster =
                PerconaServerMongoDB::new(CLUSTER_NAME, PerconaServerMongoDBSpec { size: 2, backups: 0 });
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            let ready = |c: Option<&PerconaServerMongoDB>| {
                c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.data_volumes.len() == 2)
            };
            let backed_up = |n: u32| {
                move |c: Option<&PerconaServerMongoDB>| {
                    c.and_then(|c| c.status.as_ref()).is_some_and(|s| s.backups_started >= n)
                }
            };
            let timeout = Duration::from_secs(60);
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&clusters, CLUSTER_NAME, ready, timeout).await?;
            for n in 1..=2u32 {
                let more = serde_json::json!({ "spec": { "backups": n } });
                w.patch(&clusters, CLUSTER_NAME, &Patch::Merge(more)).await?;
                w.wait_for(&clusters, CLUSTER_NAME, backed_up(n), timeout).await?;
            }
            w.delete(&clusters, CLUSTER_NAME).await?;
            w.wait_for(&clusters, CLUSTER_NAME, |c| c.is_none(), timeout).await?;
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&clusters, CLUSTER_NAME, ready, timeout).await?;
            // The user keeps working with the new cluster for a while (faults stay on meanwhile).
            w.sleep(USER_THINK_TIME).await;
            Ok(())
        })
        .property(super::oracle::data_volumes_kept("psmdb.percona.com/perconaservermongodbs"))
        .property(super::oracle::children_within_spec(
            "psmdb.percona.com/perconaservermongodbs",
            "psmdb.percona.com/perconaservermongodbbackups",
            "/spec/backups",
        ));
    crate::builtins::garbage_collector(builder)
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(Bug::None)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 16)
}

/// `mongodb:fixed`, `mongodb:stale-delete` and `mongodb:duplicate-backup`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "mongodb:fixed",
            "cleanup re-reads the cluster by uid; backups have deterministic names",
            world(Bug::None),
            swarm(),
        ),
        super::oracle::scenario(
            "mongodb:stale-delete",
            "K8SPSMDB-430: a stale deletion deletes a recreated cluster's PVCs found by label",
            world(Bug::StaleDelete),
            swarm(),
        ),
        super::oracle::scenario(
            "mongodb:duplicate-backup",
            "a backup created with generateName is created twice when the create's answer is lost",
            world(Bug::DuplicateBackup),
            swarm(),
        ),
    ]
}
