//! A delete by name acting on a stale view (time travel, kubernetes#59848; K8SPSMDB-430): a
//! janitor deletes ConfigMaps annotated `zoo/expired=true`. The workload creates an expired `tmp`,
//! waits until the janitor deleted it, and creates a fresh `tmp` (not expired). A janitor that
//! restarts onto a lagging API-server replica first sees the old, expired `tmp`, and the buggy one
//! deletes "tmp" by name: the fresh object. The fixed one deletes with a uid precondition (409
//! Conflict on the new object), as the real fix does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, DeleteParams, ObjectMeta, Preconditions, ResourceExt};
use sim::property::{EndView, FnProperty};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-stale-delete";
/// The label of the janitor's objects.
const SELECTOR: &str = "zoo=temp";
/// The annotation that marks an object for deletion.
const EXPIRED: &str = "zoo/expired";
/// Names the workload recycles.
const NAMES: [&str; 2] = ["tmp-0", "tmp-1"];

struct Ctx {
    client: sim::Client,
    variant: Variant,
}

async fn reconcile(object: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    if object.annotations().get(EXPIRED).is_none_or(|v| v != "true") {
        return Ok(Action::await_change());
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), common::NS);
    let params = match ctx.variant {
        Variant::Buggy => DeleteParams::default(),
        Variant::Fixed => DeleteParams {
            preconditions: Some(Preconditions { uid: object.uid(), resource_version: None }),
            ..DeleteParams::default()
        },
    };
    match api.delete(&object.name_any(), &params).await {
        Ok(_) => Ok(Action::await_change()),
        Err(sim::Error::Api(status)) if status.code == 404 => Ok(Action::await_change()),
        Err(error) => Err(error),
    }
}

async fn run(clients: Clients, variant: Variant) {
    let client = clients.default_cluster();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let ctx = Arc::new(Ctx { client, variant });
    // resourceVersion "0" lists (served from a watch cache), as client-go informers make them.
    Controller::new(api, watcher::Config::default().labels(SELECTOR).any_semantic())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

fn temp(name: &str, expired: bool) -> ConfigMap {
    let mut annotations = BTreeMap::new();
    if expired {
        annotations.insert(EXPIRED.to_owned(), "true".to_owned());
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(common::NS.to_owned()),
            labels: Some(BTreeMap::from([("zoo".to_owned(), "temp".to_owned())])),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let api: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    for name in NAMES {
        w.apply(&api, &temp(name, true)).await?;
        w.wait_for(&api, name, |o: Option<&ConfigMap>| o.is_none(), Duration::from_secs(30)).await?;
        w.apply(&api, &temp(name, false)).await?;
        w.sleep(Duration::from_secs(2)).await;
    }
    w.sleep(Duration::from_secs(4)).await;
    Ok(())
}

/// The world of one variant.
pub fn world(variant: Variant) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant))
        .workload(workload)
        .property(FnProperty::at_end("objects that are not expired survive", |view: &EndView<'_>| {
            let snapshot = view.cluster("default").ok_or("no cluster named default")?;
            for name in NAMES {
                let key = model_apiserver::ObjectKey {
                    resource: Arc::from("configmaps"),
                    namespace: Arc::from(common::NS),
                    name: Arc::from(name),
                };
                if snapshot.get(&key).is_none() {
                    return Err(format!("ConfigMap {}/{name} (not expired) was deleted", common::NS));
                }
            }
            Ok(())
        }))
}
