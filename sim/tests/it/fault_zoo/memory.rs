//! State kept only in memory (crash; casskop-370): the buggy controller remembers in memory which
//! parents it made a child for, so a restart forgets it and makes a second child. The fixed one
//! asks the API server (a consistent list of the parent's children) before creating.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, ListParams, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Memory, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-memory";
/// Parents the workload creates.
const PARENTS: usize = 3;

struct Ctx {
    client: sim::Client,
    variant: Variant,
    created: Memory<BTreeSet<String>>,
}

async fn reconcile(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = parent.name_any();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
    let exists = match ctx.variant {
        Variant::Buggy => ctx.created.lock().expect("memory").contains(&name),
        Variant::Fixed => {
            let params = ListParams::default().labels(&common::children_selector(&name));
            !secrets.list(&params).await?.items.is_empty()
        }
    };
    if !exists {
        secrets.create(&PostParams::default(), &common::child(&parent, None)).await?;
        ctx.created.lock().expect("memory").insert(name);
    }
    Ok(Action::await_change())
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let ctx = Arc::new(Ctx { client, variant, created: Memory::default() });
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
    w.sleep(Duration::from_secs(5)).await;
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
