//! A write pair that is not crash-safe (crash after the k-th write; rabbitmq-782): every parent
//! needs children `<parent>-a` and `<parent>-b`. The buggy controller creates `a`, marks the
//! parent done, then creates `b`, and skips parents marked done: a crash between the mark and
//! `b` leaves `b` missing for good. The fixed one marks the parent only after both children
//! exist.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-write-pair";
/// Parents the workload creates.
const PARENTS: usize = 3;
/// The annotation that marks a parent done.
const DONE: &str = "zoo/done";

struct Ctx {
    client: sim::Client,
    variant: Variant,
}

/// Create a child by name; one that exists already is fine.
async fn ensure_child(secrets: &Api<Secret>, parent: &ConfigMap, name: &str) -> Result<(), sim::Error> {
    match secrets.create(&PostParams::default(), &common::child(parent, Some(name))).await {
        Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => Ok(()),
        other => other.map(|_| ()),
    }
}

async fn mark_done(parents: &Api<ConfigMap>, name: &str) -> Result<(), sim::Error> {
    let patch = serde_json::json!({ "metadata": { "annotations": { DONE: "true" } } });
    parents.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}

async fn reconcile(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    if parent.annotations().get(DONE).is_some_and(|v| v == "true") {
        return Ok(Action::await_change());
    }
    let name = parent.name_any();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
    let parents: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), common::NS);
    ensure_child(&secrets, &parent, &format!("{name}-a")).await?;
    match ctx.variant {
        Variant::Buggy => {
            mark_done(&parents, &name).await?;
            ensure_child(&secrets, &parent, &format!("{name}-b")).await?;
        }
        Variant::Fixed => {
            ensure_child(&secrets, &parent, &format!("{name}-b")).await?;
            mark_done(&parents, &name).await?;
        }
    }
    Ok(Action::await_change())
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let ctx = Arc::new(Ctx { client, variant });
    Controller::new(parents, watcher::Config::default().labels(common::PARENT_SELECTOR))
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    for i in 0..PARENTS {
        w.apply(&parents, &common::parent(&format!("p{i}"), &[])).await?;
        w.sleep(Duration::from_millis(300)).await;
    }
    w.sleep(Duration::from_secs(3)).await;
    Ok(())
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant))
        .workload(workload)
        .property(common::children_match(|parent, _: &BTreeMap<String, String>| {
            vec![format!("{parent}-a"), format!("{parent}-b")]
        }))
}
