//! # yugabyte: cleanup on a delete event that may never be seen (yugabyte/yugabyte-operator#39)
//!
//! **Real bug.** Sieve found it (unobserved-state bug yugabyte-operator-39): the operator
//! cleaned up after a deleted cluster when it *observed the deletion*. A controller does not see
//! every event: if it is down when the delete happens, or its watch expires and it relists, the
//! object is simply absent from the new list, and the cleanup never runs.
//!
//! **Here.** A `YBCluster` (`masters`) registers itself in namespace `kube-system` as a ConfigMap
//! `yb-universe-<name>` (a cross-namespace record: no owner reference can collect it). The
//! workload creates a cluster and deletes it.
//! - `yugabyte:missed-delete`: the record is removed when the controller stream reports the
//!   deleted object (kube-runtime's `ObjectNotFound` after a DELETED event).
//! - `yugabyte:fixed`: a finalizer removes the record before the cluster may go, and the record is
//!   created only for a cluster that a quorum read shows live. Without that read the fixed
//!   variant has a time-travel bug of its own, which the engine found (one seed in 10,000 of the
//!   variant with the built-ins): restarted onto a lagging replica after the finalizer ran, the
//!   operator replays the cluster as it was before its deletion, creates the record again while
//!   the watch catches up, and by its next reconcile the cluster is gone.
//!
//! **Caught by** `matches_reference`: the fault-free run ends without the record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use kube_core::{ObjectMeta, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::{self, Action};
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE};

/// The operator's node.
pub const NODE: &str = "yugabyte-operator";
/// The finalizer of the fixed variant.
pub const FINALIZER: &str = "yugabyte.com/universe-record";
/// Where universe records live.
pub const RECORD_NAMESPACE: &str = "kube-system";
const CLUSTER_NAME: &str = "yb";

/// The desired state of a YugabyteDB universe.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "yugabyte.com", version = "v1alpha1", kind = "YBCluster", namespaced)]
pub struct YBClusterSpec {
    /// Master servers.
    pub masters: i32,
}

struct Ctx {
    bug: bool,
    clusters: Api<YBCluster>,
    records: Api<ConfigMap>,
}

fn record_name(cluster: &str) -> String {
    format!("yb-universe-{cluster}")
}

async fn delete_record(records: &Api<ConfigMap>, cluster: &str) -> Result<(), Error> {
    common::delete_if_present(records, &record_name(cluster)).await
}

/// Whether a quorum read (a GET, served from storage) shows `cluster` still there, the same
/// object, not being deleted and holding the finalizer. The cache may show the past: after a
/// restart onto a lagging API-server replica (time travel) it can replay a cluster whose
/// finalizer already ran and that is gone, and a record created for it would never be removed.
/// Reconciles of one cluster never overlap, so the record's removal cannot run between this read
/// and the create.
async fn still_live(clusters: &Api<YBCluster>, cached: &YBCluster) -> Result<bool, Error> {
    let live = clusters.get_opt(&cached.name_any()).await?;
    Ok(live.is_some_and(|live| {
        live.metadata.uid == cached.metadata.uid
            && live.metadata.deletion_timestamp.is_none()
            && live.finalizers().iter().any(|f| f == FINALIZER)
    }))
}

async fn reconcile(cluster: Arc<YBCluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    let has_finalizer = cluster.finalizers().iter().any(|f| f == FINALIZER);
    if cluster.metadata.deletion_timestamp.is_some() {
        if has_finalizer {
            delete_record(&ctx.records, &name).await?;
            let remaining: Vec<&String> = cluster.finalizers().iter().filter(|f| *f != FINALIZER).collect();
            let patch = serde_json::json!({ "metadata": { "finalizers": remaining } });
            ctx.clusters.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        return Ok(Action::requeue(common::RESYNC));
    }
    if !ctx.bug && !has_finalizer {
        let patch = serde_json::json!({ "metadata": { "finalizers": [FINALIZER] } });
        ctx.clusters.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        return Ok(Action::requeue(common::RESYNC));
    }
    let data = BTreeMap::from([
        ("namespace".to_owned(), NAMESPACE.to_owned()),
        ("masters".to_owned(), cluster.spec.masters.to_string()),
    ]);
    match ctx.records.get_opt(&record_name(&name)).await? {
        None if !ctx.bug && !still_live(&ctx.clusters, &cluster).await? => {}
        None => {
            let record = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(record_name(&name)),
                    namespace: Some(RECORD_NAMESPACE.to_owned()),
                    labels: Some(common::labels(NODE, &name)),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..ConfigMap::default()
            };
            common::create_if_absent(&ctx.records, &record).await?;
        }
        Some(record) if record.data.as_ref() != Some(&data) => {
            let patch = serde_json::json!({ "data": data });
            ctx.records.patch(&record_name(&name), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        Some(_) => {}
    }
    Ok(Action::requeue(common::RESYNC))
}

fn world(bug: bool) -> SimBuilder {
    let crd =
        serde_yaml_ng::to_string(&<YBCluster as kube::CustomResourceExt>::crd()).expect("the CRD serializes");
    Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<YBCluster> = Api::namespaced(client.clone(), NAMESPACE);
            let records: Api<ConfigMap> = Api::namespaced(client, RECORD_NAMESPACE);
            let ctx = Arc::new(Ctx { bug, clusters: clusters.clone(), records: records.clone() });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|result| {
                    let records = records.clone();
                    async move {
                        // The deletion hook: a deleted cluster shows up as ObjectNotFound.
                        if let Err(controller::Error::ObjectNotFound(object)) = result
                            && bug
                            && let Err(error) = delete_record(&records, &object.name).await
                        {
                            tracing::debug!(%error, "removing a deleted universe's record failed");
                        }
                    }
                })
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<YBCluster> = Api::namespaced(w.client(), NAMESPACE);
            let records: Api<ConfigMap> = Api::namespaced(w.client(), RECORD_NAMESPACE);
            let mut cluster = YBCluster::new(CLUSTER_NAME, YBClusterSpec { masters: 3 });
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            let timeout = Duration::from_secs(60);
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&records, &record_name(CLUSTER_NAME), |r| r.is_some(), timeout).await?;
            w.delete(&clusters, CLUSTER_NAME).await?;
            w.wait_for(&clusters, CLUSTER_NAME, |c| c.is_none(), timeout).await?;
            Ok(())
        })
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(false)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 6)
}

/// `yugabyte:fixed` and `yugabyte:missed-delete`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "yugabyte:fixed",
            "a finalizer removes the universe's record before the cluster goes",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "yugabyte:missed-delete",
            "yugabyte-operator#39: cleanup on the delete event never runs when the event is missed",
            world(true),
            swarm(),
        ),
    ]
}
