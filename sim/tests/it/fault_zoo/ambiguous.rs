//! A non-idempotent create (ambiguous write): the buggy controller creates a parent's child with
//! generateName and retries the create inside the reconcile when it fails with a server error or
//! timeout; a create that was applied but answered 504 is thus made twice. The fixed one names
//! the child after its parent and takes 409 AlreadyExists as success.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, reflector::Store, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-ambiguous";
/// Parents the workload creates.
const PARENTS: usize = 3;
/// Create attempts per reconcile in the buggy variant.
const ATTEMPTS_MAX: usize = 3;

struct Ctx {
    client: sim::Client,
    variant: Variant,
    children: Store<Secret>,
}

fn retriable(error: &sim::Error) -> bool {
    error.status().is_some_and(|s| s.code >= 500 || s.code == 429)
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
    match ctx.variant {
        Variant::Buggy => {
            let child = common::child(&parent, None);
            let mut last = None;
            for _ in 0..ATTEMPTS_MAX {
                match secrets.create(&PostParams::default(), &child).await {
                    Ok(_) => return Ok(Action::await_change()),
                    Err(error) if retriable(&error) => last = Some(error),
                    Err(error) => return Err(error),
                }
            }
            Err(last.expect("at least one attempt failed"))
        }
        Variant::Fixed => {
            let child = common::child(&parent, Some(&format!("{name}-child")));
            match secrets.create(&PostParams::default(), &child).await {
                Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
                    Ok(Action::await_change())
                }
                other => other.map(|_| Action::await_change()),
            }
        }
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
        w.sleep(Duration::from_millis(300)).await;
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
        .property(common::at_most_one_child_per_parent())
        .property(common::children_count(1))
}
