//! # webapp: an operator that owns a Deployment, with the built-in controllers on
//!
//! **What it stands for.** The most common operator there is: a custom resource that says which
//! image to run and how many copies, and a Deployment made from it. The Deployment controller,
//! the ReplicaSet controller, the kubelet and the garbage collector (all of
//! [`crate::builtins::all`]) then make ReplicaSets, Pods and Events the operator never names.
//! Their names carry hashes and random suffixes, and how many ReplicaSets a rollout leaves
//! behind depends on how many intermediate images the operator happened to see: a correct
//! operator relisted after a missed event goes straight from the first image to the last and
//! leaves one old ReplicaSet fewer than a fault-free run. The differential oracle must compare
//! what the operator owns and asked for (the Deployment's spec, the live Pods' image and count,
//! readiness), not that history.
//!
//! **Here.** A `WebApp` (`image`, `replicas`) owns the Deployment of its name, and copies the
//! Deployment's available replicas and image into its status once the rollout is done. The
//! workload creates `nginx` with `nginx:1`, then changes the image to `nginx:2` and, as soon as
//! the Deployment carries it, to `nginx:3`, and waits for the rollout.
//! - `webapp:fixed`: level-based. Each reconcile reads the Deployment from the server and
//!   creates it or patches its image and replicas to the spec's.
//!
//! **Caught by** nothing: `webapp:fixed` is the false-alarm check of issue 15 (a fixed
//! controller that owns a Deployment, relisted under faults, must pass every seed).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use kube_core::{ObjectMeta, ResourceExt};
use model_apiserver::versions::{WorkloadSpec, present};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

use super::common::{self, Error, NAMESPACE, USER_THINK_TIME};

/// The operator's node (and field manager).
pub const NODE: &str = "webapp-operator";
/// The name of the app the workload creates (and of its Deployment).
pub const APP_NAME: &str = "nginx";
/// How long the workload waits for a rollout: generous, as a delayed watch holds back every
/// event behind it.
const ROLLOUT_WAIT: Duration = Duration::from_secs(300);

/// The desired state of a web app.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "WebApp", namespaced, status = "WebAppStatus")]
pub struct WebAppSpec {
    /// The container image.
    pub image: String,
    /// Pods.
    pub replicas: i32,
}

/// What the operator last saw of its Deployment.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// The image every available Pod runs, once the rollout of the spec's image is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Available Pods of that image.
    #[serde(default)]
    pub available_replicas: i32,
}

struct Ctx {
    apps: Api<WebApp>,
    deployments: Api<Deployment>,
}

/// The Deployment `app` asks for.
fn deployment(app: &WebApp) -> Deployment {
    let name = app.name_any();
    let labels = BTreeMap::from([("app".to_owned(), name.clone())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(labels.clone()),
            owner_references: Some(vec![common::owner_of(app)]),
            ..ObjectMeta::default()
        },
        spec: present(DeploymentSpec {
            replicas: Some(app.spec.replicas),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".to_owned(),
                        image: Some(app.spec.image.clone()),
                        ..Container::default()
                    }],
                    termination_grace_period_seconds: Some(1),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// The image of a Deployment's first container.
pub fn image_of(deployment: &Deployment) -> Option<&str> {
    let spec = deployment.spec().template.spec.as_ref()?;
    spec.containers.first()?.image.as_deref()
}

/// Whether `deployment` has rolled out `image` to `replicas` available Pods.
pub fn rolled_out(deployment: &Deployment, image: &str, replicas: i32) -> bool {
    let Some(status) = deployment.status.as_ref() else { return false };
    image_of(deployment) == Some(image)
        && deployment.spec().replicas == Some(replicas)
        && status.observed_generation == deployment.metadata.generation
        && status.updated_replicas == Some(replicas)
        && status.available_replicas == Some(replicas)
        && status.replicas == Some(replicas)
}

async fn reconcile(app: Arc<WebApp>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    if app.metadata.deletion_timestamp.is_some() {
        // The garbage collector deletes the Deployment (it is owned by the app).
        return Ok(Action::await_change());
    }
    let name = app.name_any();
    let want = deployment(&app);
    let current = match ctx.deployments.get_opt(&name).await? {
        None => {
            common::create_if_absent(&ctx.deployments, &want).await?;
            return Ok(Action::requeue(common::RESYNC));
        }
        Some(current) => current,
    };
    if image_of(&current) != Some(app.spec.image.as_str())
        || current.spec().replicas != Some(app.spec.replicas)
    {
        // A strategic merge patch merges the container by name: only its image changes.
        let patch = serde_json::json!({ "spec": {
            "replicas": app.spec.replicas,
            "template": { "spec": { "containers": [{ "name": "web", "image": app.spec.image }] } },
        } });
        ctx.deployments.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await?;
        return Ok(Action::requeue(common::RESYNC));
    }
    let status = if rolled_out(&current, &app.spec.image, app.spec.replicas) {
        WebAppStatus { image: Some(app.spec.image.clone()), available_replicas: app.spec.replicas }
    } else {
        WebAppStatus::default()
    };
    if app.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({ "status": status });
        ctx.apps.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(Action::requeue(common::RESYNC))
}

/// The operator on node [`NODE`], with the CRD, and every built-in controller.
pub fn operator() -> SimBuilder {
    let crd =
        serde_yaml_ng::to_string(&<WebApp as kube::CustomResourceExt>::crd()).expect("the CRD serializes");
    let builder = Sim::builder()
        .crds_yaml(sim::world::DEFAULT_CLUSTER, &crd)
        .expect("the CRD loads")
        .controller(NODE, move |clients: Clients| async move {
            let client = clients.default_cluster();
            let apps: Api<WebApp> = Api::namespaced(client.clone(), NAMESPACE);
            let deployments: Api<Deployment> = Api::namespaced(client, NAMESPACE);
            let ctx = Arc::new(Ctx { apps: apps.clone(), deployments: deployments.clone() });
            Controller::new(apps, watcher::Config::default().any_semantic())
                .owns(deployments, watcher::Config::default().any_semantic())
                .run(reconcile, common::retry_soon, ctx)
                .for_each(|_| async {})
                .await;
        });
    crate::builtins::all(builder)
}

/// A new `WebApp` `nginx` in the zoo's namespace.
pub fn app(image: &str, replicas: i32) -> WebApp {
    let mut app = WebApp::new(APP_NAME, WebAppSpec { image: image.to_owned(), replicas });
    app.metadata.namespace = Some(NAMESPACE.to_owned());
    app
}

fn world() -> SimBuilder {
    operator().workload(|w| async move {
        let apps: Api<WebApp> = Api::namespaced(w.client(), NAMESPACE);
        let deployments: Api<Deployment> = Api::namespaced(w.client(), NAMESPACE);
        let rolled =
            |image: &'static str| move |d: Option<&Deployment>| d.is_some_and(|d| rolled_out(d, image, 2));
        w.apply(&apps, &app("nginx:1", 2)).await?;
        w.wait_for(&deployments, APP_NAME, rolled("nginx:1"), ROLLOUT_WAIT).await?;
        let image = |image: &str| Patch::Merge(serde_json::json!({ "spec": { "image": image } }));
        w.patch(&apps, APP_NAME, &image("nginx:2")).await?;
        // The next image as soon as the Deployment asks for this one, mid-rollout: a fault-free
        // run rolls out through nginx:2; a relisted operator may never see it.
        let asks = |d: Option<&Deployment>| d.and_then(image_of) == Some("nginx:2");
        w.wait_for(&deployments, APP_NAME, asks, ROLLOUT_WAIT).await?;
        w.patch(&apps, APP_NAME, &image("nginx:3")).await?;
        w.wait_for(&deployments, APP_NAME, rolled("nginx:3"), ROLLOUT_WAIT).await?;
        let done = |a: Option<&WebApp>| {
            a.and_then(|a| a.status.as_ref()).is_some_and(|s| s.image.as_deref() == Some("nginx:3"))
        };
        w.wait_for(&apps, APP_NAME, done, ROLLOUT_WAIT).await?;
        // The user keeps using the app for a while (faults stay on meanwhile).
        w.sleep(USER_THINK_TIME).await;
        Ok(())
    })
}

/// Faults for this operator: see [`common::swarm`].
pub fn swarm() -> SwarmConfig {
    common::swarm(NODE, 8)
}

/// `webapp:fixed`.
pub fn scenarios() -> Vec<Scenario> {
    vec![super::oracle::scenario_with_liveness_wait(
        "webapp:fixed",
        "a WebApp owns a Deployment whose image it keeps at the spec's, with every built-in controller on",
        world(),
        swarm(),
        super::oracle::LIVENESS_WAIT_WITH_BUILTINS,
    )]
}
