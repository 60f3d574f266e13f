//! Skipped upgrade steps after an outage: a schema-migration operator. A parent's `version` is
//! the schema version its database should be at; each version has a migration, recorded as a
//! child `<parent>-migration-v<N>`, and the parent's `zoo/applied` annotation says which version
//! the operator has migrated to. The workload upgrades one version at a time, every
//! [`UPGRADE_INTERVAL`].
//!
//! The buggy operator runs the migration of the version it is asked for and records it as
//! applied: it assumes an upgrade goes one version at a time, as the workload's do. It reads the
//! parent from the server (a GET, not the cache), so a lagging watch alone never fools it; but
//! when it is cut off (a partition, paused reconciles, held watches) across two upgrades, its
//! first reconcile afterwards sees the version two steps ahead, and the migration in between is
//! never run. The fixed operator runs every migration from the applied version up to the asked
//! one.
//!
//! Its informer lists consistently (`watcher::Config::default()`), so `staleReplica` cannot act
//! on it; [`world_listing_any`] is the same operator listing with resourceVersion "0".

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

use super::common::{self, Variant};

/// The scenario's name.
pub const SCENARIO: &str = "zoo-migration";
/// The parent's name.
const PARENT: &str = "db";
/// The annotation holding the version migrated to.
const APPLIED: &str = "zoo/applied";
/// The versions the workload upgrades to, one after another.
const VERSIONS: u32 = 5;
/// How long the workload waits between upgrades: longer than a reconcile takes, and than the
/// short pauses and holds of guided exploration's single points (1.5 s at most).
const UPGRADE_INTERVAL: Duration = Duration::from_secs(2);

fn version_of(parent: &ConfigMap) -> u32 {
    parent.data.as_ref().and_then(|d| d.get("version")).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn applied_of(parent: &ConfigMap) -> u32 {
    parent.annotations().get(APPLIED).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn migration(parent: &str, version: u32) -> String {
    format!("{parent}-migration-v{version}")
}

struct Ctx {
    client: sim::Client,
    variant: Variant,
}

async fn reconcile(cached: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let parents: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), common::NS);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), common::NS);
    // The operator reads the parent fresh: migrations must not run off a stale cache.
    let parent = parents.get(&cached.name_any()).await?;
    let (want, applied) = (version_of(&parent), applied_of(&parent));
    if want <= applied {
        return Ok(Action::await_change());
    }
    let to_run: Vec<u32> = match ctx.variant {
        // One version at a time, as upgrades usually go.
        Variant::Buggy => vec![want],
        Variant::Fixed => (applied + 1..=want).collect(),
    };
    for version in to_run {
        let child = common::child(&parent, Some(&migration(&parent.name_any(), version)));
        match secrets.create(&PostParams::default(), &child).await {
            Ok(_) => {}
            Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {}
            Err(error) => return Err(error),
        }
    }
    let patch = serde_json::json!({ "metadata": { "annotations": { APPLIED: want.to_string() } } });
    parents.patch(&parent.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(Action::await_change())
}

async fn run(clients: Clients, variant: Variant, config: watcher::Config) {
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), common::NS);
    let ctx = Arc::new(Ctx { client, variant });
    Controller::new(parents, config)
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let parents: Api<ConfigMap> = Api::namespaced(w.client(), common::NS);
    w.apply(&parents, &common::parent(PARENT, &[("version", "1")])).await?;
    for version in 2..=VERSIONS {
        w.sleep(UPGRADE_INTERVAL).await;
        let patch = serde_json::json!({ "data": { "version": version.to_string() } });
        w.patch(&parents, PARENT, &Patch::Merge(&patch)).await?;
    }
    w.sleep(UPGRADE_INTERVAL).await;
    Ok(())
}

fn world_with(variant: Variant, config: watcher::Config) -> SimBuilder {
    Sim::builder()
        .scenario(SCENARIO)
        .controller("zoo", move |clients| run(clients, variant, config.clone()))
        .workload(workload)
        .property(common::children_match(|parent, data| {
            let version: u32 = data.get("version").and_then(|v| v.parse().ok()).unwrap_or(0);
            (1..=version).map(|v| migration(parent, v)).collect()
        }))
}

/// The world of one variant, its informer listing consistently (kube-rs's default).
pub fn world(variant: Variant) -> SimBuilder {
    world_with(variant, watcher::Config::default().labels(common::PARENT_SELECTOR))
}

/// The same world, its informer listing with resourceVersion "0" (`any_semantic()`).
pub fn world_listing_any(variant: Variant) -> SimBuilder {
    world_with(variant, watcher::Config::default().labels(common::PARENT_SELECTOR).any_semantic())
}
