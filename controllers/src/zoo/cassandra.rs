//! # cassandra: a scale-down step that goes unobserved (instaclustr/cassandra-operator#398)
//!
//! **Real bug.** Sieve found it (unobserved-state bug cassandra-operator-398): on a scale-down
//! the operator decommissions the last node and deletes that node's PVC, assuming the data center
//! shrinks one node at a time. When the operator does not observe an intermediate size (the user
//! goes 3 → 2 → 1 while the operator is slow, restarting, or relisting), it sees 3 → 1, shrinks
//! the StatefulSet to 1, and deletes only one PVC: the other decommissioned node's PVC leaks.
//!
//! **Here.** A `CassandraDataCenter` (`nodes`) owns a StatefulSet `<name>` and PVCs
//! `data-<name>-<i>`. The workload scales 1 → 3, waits, then 3 → 2 and, a second later, 2 → 1.
//! - `cassandra:missed-scale-down`: a shrink deletes the PVC of ordinal `nodes` only.
//! - `cassandra:fixed`: every reconcile deletes every PVC whose ordinal is at least `nodes`.
//!
//! **Caught by** `matches_reference`: the fault-free run ends with one PVC.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::CustomResource;
use kube_core::ResourceExt;
use model_apiserver::versions::WorkloadSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, ListParams, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE};

/// The operator's node.
pub const NODE: &str = "cassandra-operator";
const DATA_CENTER: &str = "dc1";

/// The desired state of a Cassandra data center.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "cassandraoperator.instaclustr.com",
    version = "v1alpha1",
    kind = "CassandraDataCenter",
    namespaced
)]
pub struct CassandraDataCenterSpec {
    /// Cassandra nodes.
    pub nodes: i32,
}

struct Ctx {
    bug: bool,
    statefulsets: Api<StatefulSet>,
    pvcs: Api<PersistentVolumeClaim>,
}

fn pvc_name(dc: &str, ordinal: i32) -> String {
    format!("data-{dc}-{ordinal}")
}

async fn delete_pvc(ctx: &Ctx, name: &str) -> Result<(), Error> {
    common::delete_if_present(&ctx.pvcs, name).await
}

async fn reconcile(dc: Arc<CassandraDataCenter>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = dc.name_any();
    let owner = common::owner_of(&*dc);
    let nodes = dc.spec.nodes;
    let sts = ctx.statefulsets.get_opt(&name).await?;
    let current = sts.as_ref().map_or(0, |s| s.spec().replicas.unwrap_or(1));
    if nodes >= current {
        for ordinal in 0..nodes {
            common::create_if_absent(&ctx.pvcs, &common::pvc(&pvc_name(&name, ordinal), NODE, &owner, 1))
                .await?;
        }
    }
    match sts {
        None => {
            let sts = common::statefulset(&name, NODE, &owner, nodes, None);
            common::create_if_absent(&ctx.statefulsets, &sts).await?;
        }
        Some(_) if current != nodes => {
            let patch = serde_json::json!({ "spec": { "replicas": nodes } });
            ctx.statefulsets.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            if ctx.bug && nodes < current {
                // Decommission "the" node that left: the one at ordinal `nodes`.
                delete_pvc(&ctx, &pvc_name(&name, nodes)).await?;
            }
        }
        Some(_) => {}
    }
    if !ctx.bug {
        // Level-based: whatever sizes were skipped, no node beyond `nodes` keeps its claim.
        let claims = ctx.pvcs.list(&ListParams::default().labels(&common::selector(NODE, &name))).await?;
        for claim in claims.items {
            if common::ordinal(&claim.name_any()).is_some_and(|o| o >= nodes) {
                delete_pvc(&ctx, &claim.name_any()).await?;
            }
        }
    }
    Ok(Action::requeue(common::RESYNC))
}

fn world(bug: bool) -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&<CassandraDataCenter as kube::CustomResourceExt>::crd())
        .expect("the CRD serializes");
    Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let dcs: Api<CassandraDataCenter> = Api::namespaced(client.clone(), NAMESPACE);
            let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), NAMESPACE);
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, statefulsets: statefulsets.clone(), pvcs });
            Controller::new(dcs, watcher::Config::default().any_semantic())
                .owns(statefulsets, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let dcs: Api<CassandraDataCenter> = Api::namespaced(w.client(), NAMESPACE);
            let statefulsets: Api<StatefulSet> = Api::namespaced(w.client(), NAMESPACE);
            let mut dc = CassandraDataCenter::new(DATA_CENTER, CassandraDataCenterSpec { nodes: 1 });
            dc.metadata.namespace = Some(NAMESPACE.to_owned());
            let sized =
                |n: i32| move |s: Option<&StatefulSet>| s.is_some_and(|s| s.spec().replicas == Some(n));
            let timeout = Duration::from_secs(60);
            w.apply(&dcs, &dc).await?;
            w.wait_for(&statefulsets, DATA_CENTER, sized(1), timeout).await?;
            w.patch(&dcs, DATA_CENTER, &Patch::Merge(serde_json::json!({ "spec": { "nodes": 3 } }))).await?;
            w.wait_for(&statefulsets, DATA_CENTER, sized(3), timeout).await?;
            w.patch(&dcs, DATA_CENTER, &Patch::Merge(serde_json::json!({ "spec": { "nodes": 2 } }))).await?;
            w.sleep(Duration::from_secs(1)).await;
            w.patch(&dcs, DATA_CENTER, &Patch::Merge(serde_json::json!({ "spec": { "nodes": 1 } }))).await?;
            w.wait_for(&statefulsets, DATA_CENTER, sized(1), timeout).await?;
            Ok(())
        })
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(false)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 12)
}

/// `cassandra:fixed` and `cassandra:missed-scale-down`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "cassandra:fixed",
            "scale-down deletes every PVC beyond the desired node count",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "cassandra:missed-scale-down",
            "cassandra-operator#398: an unobserved 3->2 step makes 3->1 delete one PVC and leak the other",
            world(true),
            swarm(),
        ),
    ]
}
