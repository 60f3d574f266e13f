//! # carina: local volumes migrated off a Node that is only NotReady (carina-io/carina#128)
//!
//! **Real bug.** carina, a local-volume CSI driver, moves the Pods of a NotReady Node elsewhere:
//! a local volume cannot follow its Pod, so it deletes the Pod's claims and then the Pod, and
//! the StatefulSet makes new ones that bind on another Node. But a Node that is NotReady is not a
//! Node that is gone: carina-io/carina#128 reports a Node that went NotReady and recovered, and
//! found its Pod's claim gone ("after the node recovers, the PVC disappears"): the data was
//! thrown away for a blip. The fix (carina's failover design, discussed in carina-io/carina#197)
//! makes the migration opt-in: only a Pod annotated
//! `carina.storage.io/allow-pod-migration-if-node-notready: "true"` moves; the others wait for
//! their Node.
//!
//! **Here.** A StatefulSet `db` of two replicas with a `data` claim template (the user's data
//! store), every built-in controller on, and the migration controller (`carina-controller`): it
//! watches Nodes, and for each Node that is not Ready deletes the claims that the Pods there
//! mount, then those Pods.
//! - `carina:notready-migration`: every Pod of a NotReady Node moves.
//! - `carina:fixed`: only the Pods that opt in move (the workload's do not).
//!
//! Nothing in the world makes a Node NotReady but the `loseNode` fault (a kubelet silent for a
//! while), which this scenario's swarm turns on, beside every kind of the zoo's swarm.
//!
//! **Caught by** `matches_reference`: a fault-free run creates each claim once and deletes none;
//! the migrated claim is deleted and made again once its Pod is gone.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, Node, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, PodSpec, PodTemplateSpec,
    VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_core::{ObjectMeta, ResourceExt};
use model_apiserver::versions::present;
use sim::api::{Api, ListParams};
use sim::faults::{FaultKind, SwarmConfig};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE, USER_THINK_TIME};
use crate::builtins::pod_state;

/// The migration controller's node.
pub const NODE: &str = "carina-controller";
/// The annotation by which a Pod opts in to migration off a NotReady Node (carina's).
pub const ALLOW_MIGRATION: &str = "carina.storage.io/allow-pod-migration-if-node-notready";
/// The data store's StatefulSet.
const DB: &str = "db";
/// How long the workload waits for the data store to run: generous, as faults delay it.
const RUN_WAIT: Duration = Duration::from_secs(300);

struct Ctx {
    bug: bool,
    client: sim::Client,
}

/// Whether `node` reports Ready (a Node with no Ready condition has not said otherwise, as the
/// kubelet-lite takes it).
fn is_ready(node: &Node) -> bool {
    crate::builtins::node_lifecycle::ready_status(node).is_none_or(|status| status == "True")
}

/// The claims `pod` mounts.
fn claims_of(pod: &Pod) -> Vec<String> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    volumes.iter().filter_map(|v| v.persistent_volume_claim.as_ref().map(|c| c.claim_name.clone())).collect()
}

fn opted_in(pod: &Pod) -> bool {
    pod.annotations().get(ALLOW_MIGRATION).is_some_and(|v| v == "true")
}

async fn reconcile(node: Arc<Node>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if is_ready(&node) {
        return Ok(Action::await_change());
    }
    let on_node = ListParams::default().fields(&format!("spec.nodeName={}", node.name_any()));
    let all_pods: Api<Pod> = Api::all(ctx.client.clone());
    for pod in all_pods.list(&on_node).await?.items {
        if pod_state::is_terminating(&pod) || (!ctx.bug && !opted_in(&pod)) {
            continue;
        }
        // A local volume cannot follow its Pod: the claim goes (its protection keeps it until the
        // Pod is gone), then the Pod, and the StatefulSet makes both anew on a Node that is up.
        let namespace = pod.namespace().unwrap_or_default();
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
        for claim in claims_of(&pod) {
            common::delete_if_present(&claims, &claim).await?;
        }
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        common::delete_if_present(&pods, &pod.name_any()).await?;
    }
    Ok(Action::await_change())
}

/// The data store: a StatefulSet of two Pods, each with a 1 GiB `data` claim; `migratable` Pods
/// opt in to migration.
pub fn statefulset(migratable: bool) -> StatefulSet {
    let labels = BTreeMap::from([("app".to_owned(), DB.to_owned())]);
    let annotations = migratable.then(|| BTreeMap::from([(ALLOW_MIGRATION.to_owned(), "true".to_owned())]));
    let claim = PersistentVolumeClaim {
        metadata: ObjectMeta { name: Some("data".to_owned()), ..ObjectMeta::default() },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), common::gibibytes(1))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };
    StatefulSet {
        metadata: ObjectMeta {
            name: Some(DB.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: present(StatefulSetSpec {
            replicas: Some(2),
            service_name: Some(DB.to_owned()),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), annotations, ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "db".to_owned(),
                        image: Some("example.com/db:1".to_owned()),
                        volume_mounts: Some(vec![VolumeMount {
                            name: "data".to_owned(),
                            mount_path: "/var/lib/db".to_owned(),
                            ..VolumeMount::default()
                        }]),
                        ..Container::default()
                    }],
                    termination_grace_period_seconds: Some(1),
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: Some(vec![claim]),
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
}

/// The migration controller on node [`NODE`] (with the bug or fixed) and every built-in.
pub fn controller(bug: bool) -> SimBuilder {
    let builder = Sim::builder().controller(NODE, move |clients: Clients| async move {
        let client = clients.default_cluster();
        let nodes: Api<Node> = Api::all(client.clone());
        let ctx = Arc::new(Ctx { bug, client });
        Controller::new(nodes, watcher::Config::default())
            .run(reconcile, common::retry_soon, ctx)
            .for_each(|_| async {})
            .await;
    });
    crate::builtins::all(builder)
}

/// The world: the data store runs its two Pods, then is used a while (faults stay on).
fn world(bug: bool) -> SimBuilder {
    controller(bug).workload(|w| async move {
        let statefulsets: Api<StatefulSet> = Api::namespaced(w.client(), NAMESPACE);
        let pods: Api<Pod> = Api::namespaced(w.client(), NAMESPACE);
        w.apply(&statefulsets, &statefulset(false)).await?;
        let running = |pods: &[Pod]| pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count() == 2;
        w.wait_for_all(&pods, running, RUN_WAIT).await?;
        w.sleep(USER_THINK_TIME * 4).await;
        Ok(())
    })
}

/// Faults: the zoo's swarm on the controller, and lost Nodes, drawn in the first 30 s (the data
/// store runs within a few seconds of the start, then is used for 20 s).
pub fn swarm() -> SwarmConfig {
    let mut swarm = common::swarm(NODE, 8);
    swarm.kinds.push(FaultKind::LoseNode);
    SwarmConfig { time_max_ms: 30_000, ..swarm }
}

/// `carina:fixed` and `carina:notready-migration`.
pub fn scenarios() -> Vec<Scenario> {
    let scenario = |name: &str, description: &str, bug: bool| {
        super::oracle::scenario_with_liveness_wait(
            name,
            description,
            world(bug),
            swarm(),
            super::oracle::LIVENESS_WAIT_WITH_BUILTINS,
        )
    };
    vec![
        scenario(
            "carina:fixed",
            "only the Pods that opt in move off a NotReady Node, with every built-in controller on",
            false,
        ),
        scenario(
            "carina:notready-migration",
            "carina#128: a Node that is only NotReady has its Pods' claims deleted, and their data with them",
            true,
        ),
    ]
}
