//! A Node taken for gone (a lost kubelet): an agent registry keeps one record per Node (a
//! ConfigMap `agent-<node>`, owned by its Node: the Node's local state, which the Node's agent
//! would rebuild only at great cost). The buggy registry frees a Node's record as soon as the Node
//! is not Ready, as if a Node that stops reporting were gone; a kubelet that goes silent for a
//! while (a network blip, a rebooting host) then comes back to find its state thrown away. The
//! fixed one leaves the record alone until the Node object itself goes (the owner reference).
//!
//! Nothing else in this world makes a Node not Ready: only a `loseNode` fault exposes the bug.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeCondition, NodeStatus};
use sim::api::{Api, DeleteParams, ObjectMeta, PostParams, Resource, ResourceExt};
use sim::property::{EndView, FnProperty};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-lost-node";
/// The registry's contract.
pub const PROPERTY: &str = "the record of a Node that exists is never freed";
/// The Nodes the workload registers.
const NODES: [&str; 3] = ["n0", "n1", "n2"];

fn record_name(node: &str) -> String {
    format!("agent-{node}")
}

/// Whether a Node reports Ready (a Node with no Ready condition has not said otherwise).
fn is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.and_then(|c| c.iter().find(|c| c.type_ == "Ready")).is_none_or(|c| c.status == "True")
}

struct Ctx {
    records: Api<ConfigMap>,
    variant: Variant,
}

async fn reconcile(node: Arc<Node>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = record_name(&node.name_any());
    if !is_ready(&node) {
        if ctx.variant == Variant::Buggy {
            // The bug: a Node that stops reporting is taken for gone.
            match ctx.records.delete(&name, &DeleteParams::default()).await {
                Err(sim::Error::Api(status)) if status.code == 404 => {}
                other => {
                    other?;
                }
            }
        }
        return Ok(Action::await_change());
    }
    let record = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(common::NS.to_owned()),
            owner_references: node.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("node".to_owned(), node.name_any())])),
        ..ConfigMap::default()
    };
    match ctx.records.create(&PostParams::default(), &record).await {
        // Made already (a 409 Conflict is a failed create, retried by the error policy).
        Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
            Ok(Action::await_change())
        }
        other => other.map(|_| Action::await_change()),
    }
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let nodes: Api<Node> = Api::all(client.clone());
    let records: Api<ConfigMap> = Api::namespaced(client, common::NS);
    let ctx = Arc::new(Ctx { records, variant });
    Controller::new(nodes, watcher::Config::default())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A Node as a kubelet registers it: Ready.
fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_owned(),
                status: "True".to_owned(),
                reason: Some("KubeletReady".to_owned()),
                message: Some("kubelet is posting ready status".to_owned()),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let nodes: Api<Node> = Api::all(w.client());
    for name in NODES {
        w.apply(&nodes, &node(name)).await?;
    }
    // The cluster runs a while: its Nodes may come and go.
    w.sleep(Duration::from_secs(8)).await;
    Ok(())
}

/// End state: no record of a Node that still exists was ever deleted, and every Node has one.
fn records_kept() -> FnProperty {
    FnProperty::at_end(PROPERTY, |view: &EndView<'_>| {
        let snapshot = view.cluster("default").ok_or("no cluster named default")?;
        let lifecycles = view.lifecycles.get("default").ok_or("no cluster named default")?;
        for (key, _) in snapshot.iter_resource("nodes", None) {
            let record = record_name(&key.name);
            let freed = lifecycles
                .iter()
                .find(|(k, _)| {
                    &*k.resource == "configmaps" && &*k.namespace == common::NS && *k.name == record
                })
                .map_or(0, |(_, life)| life.deleted);
            if freed > 0 {
                return Err(format!(
                    "Node {} exists, and its record {record} was deleted {freed} times",
                    key.name
                ));
            }
            let have = snapshot.iter_resource("configmaps", Some(common::NS)).any(|(k, _)| *k.name == record);
            if !have {
                return Err(format!("Node {} has no record {record}", key.name));
            }
        }
        Ok(())
    })
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant))
        .workload(workload)
        .property(records_kept())
}
