//! A diff against a missed intermediate spec (unobserved states; cassandra-op-398): a parent's
//! `children` lists the children it wants (`a,b`). The buggy controller works like an
//! update handler that diffs the old and new spec: each time its watch sees a parent, it records
//! "delete what the previous version wanted and this one does not", overwriting any diff not yet
//! acted on; the reconcile deletes the recorded children and creates the wanted ones. When
//! reconciles are paused while the spec changes twice, the first diff is lost and its child
//! leaks. The fixed controller is level-triggered: it deletes every child it finds (a consistent
//! list by label) that the current spec does not want.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, DeleteParams, ListParams, Patch, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, reflector::ObjectRef, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Memory, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-unobserved";
/// The specs the workload sets, one after another.
const SPECS: [&str; 5] = ["a", "b", "c", "d", "e"];
/// How long the workload waits between spec changes: far longer than a reconcile takes.
const SPEC_INTERVAL: Duration = Duration::from_millis(500);

fn wanted(data: &BTreeMap<String, String>) -> BTreeSet<String> {
    data.get("children")
        .map(|c| c.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn wanted_of(parent: &ConfigMap) -> BTreeSet<String> {
    wanted(&parent.data.clone().unwrap_or_default())
}

/// What the buggy controller's update handler saw and recorded.
#[derive(Default)]
struct Seen {
    /// Per parent, the last spec seen.
    last: BTreeMap<String, BTreeSet<String>>,
    /// Per parent, the children to delete (overwritten by every update: the bug).
    to_delete: BTreeMap<String, BTreeSet<String>>,
}

struct Ctx {
    client: sim::Client,
    variant: Variant,
    seen: Memory<Seen>,
}

async fn reconcile(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = parent.name_any();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
    let (want, doomed): (BTreeSet<String>, BTreeSet<String>) = match ctx.variant {
        Variant::Buggy => {
            // The handler's view: the spec it saw last, and the diff it recorded.
            let mut seen = ctx.seen.lock().expect("memory");
            let want = seen.last.get(&name).cloned().unwrap_or_default();
            let diff = seen.to_delete.remove(&name).unwrap_or_default();
            (want, diff.into_iter().map(|c| format!("{name}-{c}")).collect())
        }
        Variant::Fixed => {
            let want = wanted_of(&parent);
            let params = ListParams::default().labels(&common::children_selector(&name));
            let keep: BTreeSet<String> = want.iter().map(|c| format!("{name}-{c}")).collect();
            let list = secrets.list(&params).await?;
            (want, list.items.iter().map(|s| s.name_any()).filter(|n| !keep.contains(n)).collect())
        }
    };
    for child in doomed {
        match secrets.delete(&child, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(sim::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    for c in &want {
        let child = common::child(&parent, Some(&format!("{name}-{c}")));
        match secrets.create(&PostParams::default(), &child).await {
            Ok(_) => {}
            Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {}
            Err(error) => return Err(error),
        }
    }
    Ok(Action::await_change())
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let seen: Memory<Seen> = Memory::default();
    let handler = seen.clone();
    let config = watcher::Config::default().labels(common::PARENT_SELECTOR);
    let ctx = Arc::new(Ctx { client, variant, seen });
    Controller::new(parents.clone(), config.clone())
        // The "update handler": diff each version it sees against the previous one.
        .watches(parents, config, move |parent: ConfigMap| {
            let name = parent.name_any();
            let now = wanted_of(&parent);
            let mut seen = handler.lock().expect("memory");
            let before = seen.last.insert(name.clone(), now.clone()).unwrap_or_default();
            let gone: BTreeSet<String> = before.difference(&now).cloned().collect();
            if !gone.is_empty() {
                seen.to_delete.insert(name.clone(), gone);
            }
            Some(ObjectRef::new(&name).within(common::NS))
        })
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    w.apply(&parents, &common::parent("p", &[("children", SPECS[0])])).await?;
    for spec in &SPECS[1..] {
        w.sleep(SPEC_INTERVAL).await;
        let patch = serde_json::json!({ "data": { "children": spec } });
        w.patch(&parents, "p", &Patch::Merge(&patch)).await?;
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
        .property(common::children_match(|parent, data| {
            wanted(data).into_iter().map(|c| format!("{parent}-{c}")).collect()
        }))
}
