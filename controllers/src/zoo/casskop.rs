//! # casskop: an operation kept only in memory (Orange-OpenSource/casskop#370)
//!
//! **Real bug.** Sieve found it (casskop-370): CassKop tracked a node decommission in progress in
//! the operator's memory. A restart in the middle of the operation loses that memory; the
//! restarted operator finds a node in the middle of decommissioning that it did not start,
//! refuses to go on, and fails every reconcile from then on.
//!
//! **Here.** A `CassandraCluster` (`nodes`) owns PVCs `data-<name>-<i>`, one per Cassandra node.
//! A scale-down is two steps: mark the last node's PVC `decommissioning` (an annotation), then,
//! on the next reconcile, delete it. The workload scales 3 → 1.
//! - `casskop:lost-flag`: the operator also records the decommission in memory, and a marked PVC
//!   without that record is an error: after a crash between the steps it errs forever.
//! - `casskop:fixed`: the annotation is the record; a marked PVC is deleted whoever marked it.
//!
//! **Caught by** convergence: an error loop retries every 500 ms, so the world never quiesces and
//! the run gets a liveness verdict.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::CustomResource;
use kube_core::ResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE, USER_THINK_TIME};

/// The operator's node.
pub const NODE: &str = "casskop";
/// The annotation that marks a node being decommissioned.
pub const STATE_ANNOTATION: &str = "db.orange.com/state";
const DECOMMISSIONING: &str = "decommissioning";
const CLUSTER_NAME: &str = "cc";
/// How soon the second step of a decommission follows the first.
const STEP_REQUEUE: Duration = Duration::from_millis(200);

/// The desired state of a Cassandra cluster.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "db.orange.com", version = "v1alpha1", kind = "CassandraCluster", namespaced)]
pub struct CassandraClusterSpec {
    /// Cassandra nodes.
    pub nodes: i32,
}

struct Ctx {
    bug: bool,
    pvcs: Api<PersistentVolumeClaim>,
    /// Cluster name → ordinal being decommissioned. In memory: lost when the node restarts.
    decommissions: Mutex<BTreeMap<String, i32>>,
}

fn pvc_name(cluster: &str, ordinal: i32) -> String {
    format!("data-{cluster}-{ordinal}")
}

fn is_decommissioning(pvc: &PersistentVolumeClaim) -> bool {
    pvc.annotations().get(STATE_ANNOTATION).is_some_and(|s| s == DECOMMISSIONING)
}

async fn reconcile(cluster: Arc<CassandraCluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    let owner = common::owner_of(&*cluster);
    let nodes = cluster.spec.nodes;
    let mut claims =
        ctx.pvcs.list(&ListParams::default().labels(&common::selector(NODE, &name))).await?.items;
    claims.sort_by_key(|c| common::ordinal(&c.name_any()));
    if let Some(marked) = claims.iter().find(|c| is_decommissioning(c)) {
        let ordinal = common::ordinal(&marked.name_any());
        let recorded = ctx.decommissions.lock().expect("decommissions lock").get(&name).copied();
        if ctx.bug && recorded != ordinal {
            return Err(Error::Unexpected(format!(
                "{} is decommissioning but no decommission is in progress",
                marked.name_any()
            )));
        }
        match ctx.pvcs.delete(&marked.name_any(), &DeleteParams::default()).await {
            Err(e) if e.status().is_some_and(|s| s.code == 404) => {}
            other => {
                other?;
            }
        }
        ctx.decommissions.lock().expect("decommissions lock").remove(&name);
        return Ok(Action::requeue(STEP_REQUEUE));
    }
    let last = claims.last().and_then(|c| common::ordinal(&c.name_any()));
    if let Some(last) = last.filter(|last| *last >= nodes) {
        let patch =
            serde_json::json!({ "metadata": { "annotations": { STATE_ANNOTATION: DECOMMISSIONING } } });
        ctx.pvcs.patch(&pvc_name(&name, last), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        ctx.decommissions.lock().expect("decommissions lock").insert(name, last);
        return Ok(Action::requeue(STEP_REQUEUE));
    }
    for ordinal in 0..nodes {
        common::create_if_absent(&ctx.pvcs, &common::pvc(&pvc_name(&name, ordinal), NODE, &owner, 1)).await?;
    }
    Ok(Action::requeue(common::RESYNC))
}

fn world(bug: bool) -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&<CassandraCluster as kube::CustomResourceExt>::crd())
        .expect("the CRD serializes");
    Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<CassandraCluster> = Api::namespaced(client.clone(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, pvcs: pvcs.clone(), decommissions: Mutex::default() });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .owns(pvcs, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<CassandraCluster> = Api::namespaced(w.client(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), NAMESPACE);
            let mut cluster = CassandraCluster::new(CLUSTER_NAME, CassandraClusterSpec { nodes: 3 });
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            w.apply(&clusters, &cluster).await?;
            let last = pvc_name(CLUSTER_NAME, 2);
            w.wait_for(&pvcs, &last, |p| p.is_some(), Duration::from_secs(60)).await?;
            let shrink = serde_json::json!({ "spec": { "nodes": 1 } });
            w.patch(&clusters, CLUSTER_NAME, &Patch::Merge(shrink)).await?;
            // The user keeps working with the cluster for a while (faults stay on meanwhile).
            w.sleep(USER_THINK_TIME).await;
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

/// `casskop:fixed` and `casskop:lost-flag`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "casskop:fixed",
            "a decommission in progress is recorded on the PVC, so a restart resumes it",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "casskop:lost-flag",
            "casskop#370: a decommission tracked in memory is lost on restart and reconciles fail forever",
            world(true),
            swarm(),
        ),
    ]
}
