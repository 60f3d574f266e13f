//! A parent/child ordering assumption (watch delay and reordering across informers): an orphan
//! sweeper deletes every child whose parent it does not find. The buggy one looks the parent up
//! in its parent cache, assuming that a child's event never arrives before its parent's; the
//! workload creates each parent well before its child, but two watches are independent streams,
//! so a delayed parent watch lets the child arrive first, and a live parent's child is deleted.
//! The fixed one asks the API server (a consistent get) before deleting.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, DeleteParams, ResourceExt};
use sim::runtime::{
    Controller,
    controller::Action,
    reflector::{ObjectRef, Store},
    watcher,
};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-reorder";
/// Parents (each with one child) the workload creates.
const PARENTS: usize = 3;
/// How long the workload waits between creating a parent and its child.
const CHILD_AFTER: Duration = Duration::from_millis(100);

struct Ctx {
    client: sim::Client,
    variant: Variant,
    parents: Store<ConfigMap>,
}

async fn reconcile(child: Arc<Secret>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let Some(parent) = child.labels().get(common::OWNER_LABEL).cloned() else {
        return Ok(Action::await_change());
    };
    let parents: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), common::NS);
    let parent_exists = match ctx.variant {
        Variant::Buggy => ctx.parents.get(&ObjectRef::new(&parent).within(common::NS)).is_some(),
        Variant::Fixed => parents.get_opt(&parent).await?.is_some(),
    };
    if !parent_exists {
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
        match secrets.delete(&child.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(sim::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(Action::await_change())
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents_api: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), common::NS);
    let parents = sim::runtime::reflector::informer(
        parents_api,
        watcher::Config::default().labels(common::PARENT_SELECTOR),
    );
    if parents.wait_until_ready().await.is_err() {
        return;
    }
    let ctx = Arc::new(Ctx { client, variant, parents });
    Controller::new(secrets, watcher::Config::default().labels(common::OWNER_LABEL))
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    let secrets: Api<Secret> = Api::namespaced(w.client(), common::NS);
    for i in 0..PARENTS {
        let parent = w.apply(&parents, &common::parent(&format!("p{i}"), &[])).await?;
        w.sleep(CHILD_AFTER).await;
        w.apply(&secrets, &common::child(&parent, Some(&format!("p{i}-child")))).await?;
        w.sleep(Duration::from_millis(400)).await;
    }
    w.sleep(Duration::from_secs(2)).await;
    Ok(())
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant))
        .workload(workload)
        .property(common::children_count(1))
}
