#![allow(dead_code)] // Each includer (tests, benchmark) uses a different part of the scenario.

//! The ConfigMap-generator scenario, in the spirit of kube-rs's `configmapgen_controller`
//! example: a `ConfigMapGenerator` custom resource, and a controller that keeps one owned
//! ConfigMap per generator holding the generator's content.
//!
//! Shared by `tests/configmapgen.rs`, `tests/determinism.rs` and `benches/configmapgen.rs`
//! (included with `#[path]`), so that the benchmark measures exactly the tested scenario.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, ObjectMeta, Patch, PostParams, Resource, ResourceExt};
use sim::property::{EndView, FnProperty};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Clients, Sim, SimBuilder, Workload, WorkloadError};

/// The scenario's name, in reports and replay commands.
pub const SCENARIO: &str = "configmapgen";

/// How long the workload waits (virtual time) for the edited generator's ConfigMap.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Storage keys of the two resources in a cluster snapshot.
const GENERATORS: &str = "nullable.se/configmapgenerators";
const CONFIGMAPS: &str = "configmaps";

/// The custom resource: "make a ConfigMap with this content".
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "nullable.se", version = "v1", kind = "ConfigMapGenerator", namespaced)]
#[kube(shortname = "cmg")]
pub struct ConfigMapGeneratorSpec {
    /// What the generated ConfigMap's `content` key holds.
    pub content: String,
}

/// How many seeds a sweep of `default` seeds runs, given `SIM_SEED`/`SIM_SEEDS`.
pub fn expected_seeds(default: u64) -> u64 {
    match (std::env::var("SIM_SEED"), std::env::var("SIM_SEEDS")) {
        (Ok(_), _) => 1,
        (_, Ok(count)) => count.trim().parse().expect("SIM_SEEDS is a count"),
        _ => default,
    }
}

/// The CRD, as the YAML a user would install.
pub fn crd_yaml() -> String {
    serde_yaml_ng::to_string(&ConfigMapGenerator::crd()).expect("the derived CRD serializes")
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("API call failed: {0}")]
    Api(#[from] sim::Error),
    /// The generator has no namespace (it is namespaced, so the server always sets one).
    #[error("generator {0} has no namespace")]
    NoNamespace(String),
}

/// What every reconcile gets: the client of the controller's node.
pub struct Context {
    client: sim::Client,
}

/// Make the generator's ConfigMap match it: create it, or replace it when its content differs.
pub async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let name = generator.name_any();
    let namespace = generator.namespace().ok_or_else(|| ReconcileError::NoNamespace(name.clone()))?;
    let owner = generator.controller_owner_ref(&()).expect("a stored generator has a name and uid");
    let desired = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("content".to_owned(), generator.spec.content.clone())])),
        ..ConfigMap::default()
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    match configmaps.get_opt(&name).await? {
        None => {
            configmaps.create(&PostParams::default(), &desired).await?;
        }
        Some(current)
            if current.data != desired.data || current.owner_references() != desired.owner_references() =>
        {
            let mut replacement = desired;
            replacement.metadata.resource_version = current.resource_version();
            configmaps.replace(&name, &PostParams::default(), &replacement).await?;
        }
        Some(_) => {}
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Retry failed reconciles soon (a 409 from a stale read, say).
pub fn error_policy(
    _generator: Arc<ConfigMapGenerator>,
    _error: &ReconcileError,
    _ctx: Arc<Context>,
) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// The controller's main future, as the kube-rs example's `main`.
pub async fn run_controller(clients: Clients) {
    let client = clients.default_cluster();
    let generators: Api<ConfigMapGenerator> = Api::all(client.clone());
    let configmaps: Api<ConfigMap> = Api::all(client.clone());
    Controller::new(generators, watcher::Config::default())
        .owns(configmaps, watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A generator named `name` in `default` with `content`.
pub fn generator(name: &str, content: &str) -> ConfigMapGenerator {
    let mut generator = ConfigMapGenerator::new(name, ConfigMapGeneratorSpec { content: content.to_owned() });
    generator.metadata.namespace = Some("default".to_owned());
    generator
}

/// The workload: create `count` generators, then edit the first and wait until its ConfigMap
/// shows the edit.
pub async fn workload(w: Workload, count: usize) -> Result<(), WorkloadError> {
    workload_with_edits(w, count, 1).await
}

/// The workload with `edits` edits of the first generator, each waited for until its ConfigMap
/// shows it (the last writes "edited"): the scaling benchmark's events dimension, since every
/// edit is a reconcile, a write and their deliveries. `edits` 1 is [`workload`].
pub async fn workload_with_edits(w: Workload, count: usize, edits: usize) -> Result<(), WorkloadError> {
    let generators: Api<ConfigMapGenerator> = Api::namespaced(w.client(), "default");
    for i in 0..count {
        w.apply(&generators, &generator(&format!("gen-{i}"), &format!("content {i}"))).await?;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
    let edits = edits.max(1);
    for edit in 1..=edits {
        let content = if edit == edits { "edited".to_owned() } else { format!("edit {edit}") };
        let patch = serde_json::json!({ "spec": { "content": content } });
        w.patch(&generators, "gen-0", &Patch::Merge(&patch)).await?;
        let shows_it = |cm: Option<&ConfigMap>| {
            cm.and_then(|cm| cm.data.as_ref())
                .and_then(|data| data.get("content"))
                .is_some_and(|c| *c == content)
        };
        w.wait_for(&configmaps, "gen-0", shows_it, WAIT_TIMEOUT).await?;
    }
    Ok(())
}

/// The property: every generator has a ConfigMap of the same name, owned by it, holding its
/// content. Returns the first mismatch.
pub fn check_generators_have_their_configmaps(view: &EndView<'_>) -> Result<(), String> {
    let cluster = view.cluster("default").ok_or("no cluster named default")?;
    let configmaps: BTreeMap<(&str, &str), &kube::core::DynamicObject> = cluster
        .iter_resource(CONFIGMAPS, None)
        .map(|(key, cm)| ((&*key.namespace, &*key.name), &**cm))
        .collect();
    for (key, generator) in cluster.iter_resource(GENERATORS, None) {
        let at = format!("{}/{}", key.namespace, key.name);
        let content = &generator.data["spec"]["content"];
        let Some(cm) = configmaps.get(&(&*key.namespace, &*key.name)) else {
            return Err(format!("generator {at}: no ConfigMap {at}"));
        };
        if &cm.data["data"]["content"] != content {
            return Err(format!(
                "ConfigMap {at}: content {} but generator wants {content}",
                cm.data["data"]["content"]
            ));
        }
        let owned = cm.metadata.owner_references.iter().flatten().any(|owner| {
            owner.kind == "ConfigMapGenerator" && Some(&owner.uid) == generator.metadata.uid.as_ref()
        });
        if !owned {
            return Err(format!("ConfigMap {at}: not owned by generator {at}"));
        }
    }
    Ok(())
}

/// The whole world: the CRD, the controller on node `cmgen`, the workload with `count`
/// generators, and the property.
pub fn world(count: usize) -> SimBuilder {
    world_with(count, 1, 1)
}

/// The world with `controllers` copies of the controller (nodes `cmgen`, `cmgen-2`, ...: each
/// watches every generator and ConfigMap and reconciles them all, as replicas without leader
/// election would) and `edits` edits of the first generator (see [`workload_with_edits`]). The
/// scaling benchmark grows each; `world_with(count, 1, 1)` is [`world`].
pub fn world_with(count: usize, controllers: usize, edits: usize) -> SimBuilder {
    let mut builder = Sim::builder()
        .scenario(SCENARIO)
        .crds_yaml("default", &crd_yaml())
        .expect("the derived CRD installs");
    for replica in 1..=controllers.max(1) {
        let node = if replica == 1 { "cmgen".to_owned() } else { format!("cmgen-{replica}") };
        builder = builder.controller(node, run_controller);
    }
    builder.workload(move |w| workload_with_edits(w, count, edits)).property(FnProperty::at_end(
        "generators have their ConfigMaps",
        check_generators_have_their_configmaps,
    ))
}
