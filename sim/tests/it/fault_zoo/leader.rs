//! A double writer (leader-election handover): two replicas elect a leader through a Lease; the
//! leader makes one child per parent, with generateName, when its child cache has none. A
//! leader that is paused longer than its lease wakes up after the other replica took over and
//! made children, still believing it leads, with caches from before the pause: the buggy one
//! makes a second child. The fixed one names the child after its parent, so the second create
//! is 409 AlreadyExists.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-leader";
/// The controller (and its Lease).
pub const CONTROLLER: &str = "zoo";
/// Parents the workload creates.
const PARENTS: usize = 12;

struct Ctx {
    client: sim::Client,
    variant: Variant,
    children: sim::runtime::reflector::Store<Secret>,
}

async fn reconcile(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = parent.name_any();
    let has_child = ctx
        .children
        .find(|s| s.labels().get(common::OWNER_LABEL).is_some_and(|owner| *owner == name))
        .is_some();
    if has_child {
        return Ok(Action::await_change());
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
    let child = match ctx.variant {
        Variant::Buggy => common::child(&parent, None),
        Variant::Fixed => common::child(&parent, Some(&format!("{name}-child"))),
    };
    match secrets.create(&PostParams::default(), &child).await {
        Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
            Ok(Action::await_change())
        }
        other => other.map(|_| Action::await_change()),
    }
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), common::NS);
    // One child cache, read by the reconcile; reconciles start once it has listed.
    let children = sim::runtime::reflector::informer(secrets, watcher::Config::default());
    if children.wait_until_ready().await.is_err() {
        return;
    }
    let controller = Controller::new(parents, watcher::Config::default().labels(common::PARENT_SELECTOR));
    let ctx = Arc::new(Ctx { client, variant, children });
    controller
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    for i in 0..PARENTS {
        w.apply(&parents, &common::parent(&format!("p{i}"), &[])).await?;
        w.sleep(Duration::from_millis(500)).await;
    }
    w.sleep(Duration::from_secs(3)).await;
    Ok(())
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller_replicas(CONTROLLER, 2, move |clients| run(clients, variant))
        .workload(workload)
        .property(common::at_most_one_child_per_parent())
        .property(common::children_count(1))
}
