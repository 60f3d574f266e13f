//! A record created from a replayed past (time travel, kubernetes#59848): a registrar keeps, for
//! each parent, a record Secret `record-<parent>` that no owner reference ties to it (as a record
//! in another namespace or outside the cluster would be), guarded by a finalizer: it adds the
//! finalizer, creates the record, and when the parent is deleted removes the record, then the
//! finalizer. The workload creates a parent, waits for its record, and deletes the parent.
//!
//! Restarted right after its finalizer ran onto an API-server replica from before the finalizer
//! was added, the registrar's cache shows the parent without it, then, while the watch catches up,
//! replays the parent with the finalizer and not yet deleted. The buggy registrar creates the
//! record from that view, and by its next reconcile the parent is gone: nothing removes the record.
//! The fixed one reads the parent from storage (a GET is a quorum read) before creating the record.
//! The yugabyte operator of the zoo had this bug in its fixed variant, found in one seed of 10,000.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, ResourceExt};
use sim::property::{EndView, FnProperty};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-finalizer-replay";
/// The registrar's finalizer.
const FINALIZER: &str = "zoo/record";
/// The parent the workload creates and deletes.
const PARENT: &str = "p";
/// The property the buggy variant breaks.
pub const PROPERTY: &str = "no record outlives its parent";

struct Ctx {
    parents: Api<ConfigMap>,
    records: Api<Secret>,
    variant: Variant,
}

fn record_name(parent: &str) -> String {
    format!("record-{parent}")
}

fn has_finalizer(parent: &ConfigMap) -> bool {
    parent.finalizers().iter().any(|f| f == FINALIZER)
}

async fn reconcile(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = parent.name_any();
    if parent.metadata.deletion_timestamp.is_some() {
        if has_finalizer(&parent) {
            match ctx.records.delete(&record_name(&name), &DeleteParams::default()).await {
                Err(sim::Error::Api(status)) if status.code != 404 => return Err(sim::Error::Api(status)),
                _ => {}
            }
            let patch = serde_json::json!({ "metadata": { "finalizers": [] } });
            ctx.parents.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        return Ok(Action::await_change());
    }
    if !has_finalizer(&parent) {
        let patch = serde_json::json!({ "metadata": { "finalizers": [FINALIZER] } });
        ctx.parents.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        return Ok(Action::await_change());
    }
    if ctx.records.get_opt(&record_name(&name)).await?.is_some() {
        return Ok(Action::await_change());
    }
    if ctx.variant == Variant::Fixed {
        let live = ctx.parents.get_opt(&name).await?;
        let same = live.is_some_and(|live| {
            live.metadata.uid == parent.metadata.uid
                && live.metadata.deletion_timestamp.is_none()
                && has_finalizer(&live)
        });
        if !same {
            return Ok(Action::await_change());
        }
    }
    let record = Secret {
        metadata: ObjectMeta {
            name: Some(record_name(&name)),
            namespace: Some(common::NS.to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    match ctx.records.create(&Default::default(), &record).await {
        Err(sim::Error::Api(status)) if status.reason != "AlreadyExists" => Err(sim::Error::Api(status)),
        _ => Ok(Action::await_change()),
    }
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let records: Api<Secret> = Api::namespaced(client, common::NS);
    let ctx = Arc::new(Ctx { parents: parents.clone(), records, variant });
    // resourceVersion "0" lists (served from a watch cache), as client-go informers make them.
    Controller::new(parents, watcher::Config::default().labels(common::PARENT_SELECTOR).any_semantic())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    let records: Api<Secret> = Api::namespaced(w.client(), common::NS);
    let timeout = Duration::from_secs(30);
    w.apply(&parents, &common::parent(PARENT, &[("k", "v")])).await?;
    w.wait_for(&records, &record_name(PARENT), |r: Option<&Secret>| r.is_some(), timeout).await?;
    w.delete(&parents, PARENT).await?;
    w.wait_for(&parents, PARENT, |p: Option<&ConfigMap>| p.is_none(), timeout).await?;
    w.sleep(Duration::from_secs(4)).await;
    Ok(())
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant))
        .workload(workload)
        .property(FnProperty::at_end(PROPERTY, |view: &EndView<'_>| {
            let snapshot = view.cluster("default").ok_or("no cluster named default")?;
            let parents = common::parents(snapshot);
            for (key, _) in snapshot.iter_resource("secrets", Some(common::NS)) {
                let parent = key.name.strip_prefix("record-").unwrap_or_default();
                if !parent.is_empty() && !parents.contains_key(parent) {
                    return Err(format!("record {} outlives its parent {parent}", key.name));
                }
            }
            Ok(())
        }))
}
