//! # nifikop: a configuration rollout cut in half (konpyutaika/nifikop#49)
//!
//! **Real bug.** Sieve found it (intermediate-state bug nifikop-49): to roll out a new NiFi
//! configuration the operator first writes the new configuration, then restarts the nodes. It
//! decided whether nodes needed a restart by comparing the stored configuration with the desired
//! one. A crash between the two steps leaves the stored configuration already new, so the
//! restarted operator sees nothing to do and the nodes keep running the old configuration.
//!
//! **Here.** A `NifiCluster` (`nodes`, `config`) owns a ConfigMap `<name>-config` and Pods
//! `<name>-<i>` annotated with the hash of the configuration they run (a changed annotation
//! stands for a restart). The workload changes the configuration once.
//! - `nifikop:config-crash`: pods are restarted only in the reconcile that updates the ConfigMap.
//! - `nifikop:fixed`: every reconcile restarts each pod whose configuration hash is not the
//!   desired one.
//!
//! **Caught by** `matches_reference`: in the fault-free run every pod runs the new configuration.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use kube::CustomResource;
use kube_core::{ObjectMeta, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE};

/// The operator's node.
pub const NODE: &str = "nifikop";
/// The annotation holding the hash of the configuration a pod runs.
pub const CONFIG_HASH_ANNOTATION: &str = "nifi.konpyutaika.com/config-hash";
const CLUSTER_NAME: &str = "nifi";

/// The desired state of a NiFi cluster.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "nifi.konpyutaika.com", version = "v1", kind = "NifiCluster", namespaced)]
pub struct NifiClusterSpec {
    /// NiFi nodes.
    pub nodes: i32,
    /// The `nifi.properties` content.
    pub config: String,
}

struct Ctx {
    bug: bool,
    configmaps: Api<ConfigMap>,
    pods: Api<Pod>,
}

fn config_hash(config: &str) -> String {
    format!("{:08x}", crate::builtins::hashing::fnv32(config.as_bytes()))
}

fn pod(cluster: &NifiCluster, ordinal: i32, hash: &str) -> Pod {
    let name = cluster.name_any();
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{ordinal}")),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(common::labels(NODE, &name)),
            annotations: Some(BTreeMap::from([(CONFIG_HASH_ANNOTATION.to_owned(), hash.to_owned())])),
            owner_references: Some(vec![common::owner_of(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "nifi".to_owned(),
                image: Some("apache/nifi:2.0.0".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// "Restart" pod `name` onto the configuration with `hash`.
async fn restart(ctx: &Ctx, name: &str, hash: &str) -> Result<(), Error> {
    let patch = serde_json::json!({ "metadata": { "annotations": { CONFIG_HASH_ANNOTATION: hash } } });
    ctx.pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

async fn reconcile(cluster: Arc<NifiCluster>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cluster.name_any();
    let hash = config_hash(&cluster.spec.config);
    let cm_name = format!("{name}-config");
    let data = BTreeMap::from([("nifi.properties".to_owned(), cluster.spec.config.clone())]);
    let config_changed = match ctx.configmaps.get_opt(&cm_name).await? {
        None => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(cm_name.clone()),
                    namespace: Some(NAMESPACE.to_owned()),
                    labels: Some(common::labels(NODE, &name)),
                    owner_references: Some(vec![common::owner_of(&*cluster)]),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..ConfigMap::default()
            };
            common::create_if_absent(&ctx.configmaps, &cm).await?;
            false
        }
        Some(cm) if cm.data.as_ref() != Some(&data) => {
            let patch = serde_json::json!({ "data": data });
            ctx.configmaps.patch(&cm_name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            true
        }
        Some(_) => false,
    };
    for ordinal in 0..cluster.spec.nodes {
        let pod_name = format!("{name}-{ordinal}");
        match ctx.pods.get_opt(&pod_name).await? {
            None => common::create_if_absent(&ctx.pods, &pod(&cluster, ordinal, &hash)).await?,
            Some(current) => {
                let runs = current.annotations().get(CONFIG_HASH_ANNOTATION);
                let stale = runs != Some(&hash);
                // The planted bug: restarts happen only in the pass that changed the ConfigMap.
                if stale && (config_changed || !ctx.bug) {
                    restart(&ctx, &pod_name, &hash).await?;
                }
            }
        }
    }
    Ok(Action::requeue(common::RESYNC))
}

fn world(bug: bool) -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&<NifiCluster as kube::CustomResourceExt>::crd())
        .expect("the CRD serializes");
    Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let clusters: Api<NifiCluster> = Api::namespaced(client.clone(), NAMESPACE);
            let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
            let pods: Api<Pod> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { bug, configmaps: configmaps.clone(), pods });
            Controller::new(clusters, watcher::Config::default().any_semantic())
                .owns(configmaps, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let clusters: Api<NifiCluster> = Api::namespaced(w.client(), NAMESPACE);
            let configmaps: Api<ConfigMap> = Api::namespaced(w.client(), NAMESPACE);
            let spec = NifiClusterSpec { nodes: 2, config: "nifi.cluster.node=true".to_owned() };
            let mut cluster = NifiCluster::new(CLUSTER_NAME, spec);
            cluster.metadata.namespace = Some(NAMESPACE.to_owned());
            let holds = |config: &'static str| {
                move |cm: Option<&ConfigMap>| {
                    cm.and_then(|c| c.data.as_ref()?.get("nifi.properties").cloned()).as_deref() == Some(config)
                }
            };
            let cm_name = format!("{CLUSTER_NAME}-config");
            let timeout = Duration::from_secs(60);
            w.apply(&clusters, &cluster).await?;
            w.wait_for(&configmaps, &cm_name, holds("nifi.cluster.node=true"), timeout).await?;
            let change = serde_json::json!({ "spec": { "config": "nifi.cluster.node=true\nnifi.web.https.port=8443" } });
            w.patch(&clusters, CLUSTER_NAME, &Patch::Merge(change)).await?;
            let new = "nifi.cluster.node=true\nnifi.web.https.port=8443";
            w.wait_for(&configmaps, &cm_name, holds(new), timeout).await?;
            Ok(())
        })
}

/// The world of the fixed variant (the zoo also runs it with every built-in controller on).
pub fn fixed_world() -> SimBuilder {
    world(false)
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 8)
}

/// `nifikop:fixed` and `nifikop:config-crash`.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        super::oracle::scenario(
            "nifikop:fixed",
            "pods whose configuration hash differs from the desired one are restarted on every reconcile",
            world(false),
            swarm(),
        ),
        super::oracle::scenario(
            "nifikop:config-crash",
            "nifikop#49: a crash after updating the ConfigMap leaves the nodes on the old configuration",
            world(true),
            swarm(),
        ),
    ]
}
