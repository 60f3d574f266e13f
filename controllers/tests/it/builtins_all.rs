//! Every built-in together (`builtins::all`): a Deployment rolls out, and deleting it (in the
//! background or the foreground) garbage-collects its ReplicaSet and Pods, which the kubelet-lite
//! removes after their grace period.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, checks, snapshot};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, DeleteParams, ObjectMeta};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);

fn web() -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".to_owned(),
                        image: Some("nginx:1".to_owned()),
                        ..Container::default()
                    }],
                    termination_grace_period_seconds: Some(1),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

fn world(params: DeleteParams) -> SimBuilder {
    builtins::all(Sim::builder().scenario("builtins-all"))
        .workload(move |w| {
            let params = params.clone();
            async move {
                let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
                w.apply(&deployments, &web()).await?;
                let available = |d: Option<&Deployment>| {
                    d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(2))
                };
                w.wait_for(&deployments, "web", available, WAIT).await?;
                deployments.delete("web", &params).await.map_err(|e| WorkloadError {
                    step: 0,
                    action: "delete Deployment default/web".to_owned(),
                    reason: e.to_string(),
                })?;
                w.wait_for(&deployments, "web", |d| d.is_none(), WAIT).await
            }
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("no replica sets or pods left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = (
                snapshot::objects::<ReplicaSet>(snap, Some("default")).len(),
                snapshot::objects::<Pod>(snap, Some("default")).len(),
            );
            if left == (0, 0) { Ok(()) } else { Err(format!("left (replica sets, pods): {left:?}")) }
        }))
}

#[test]
fn deleting_a_deployment_garbage_collects_its_replica_set_and_pods() {
    let world = world(DeleteParams::default());
    let report = sweep(&SweepConfig::new("builtins-all-background").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn deleting_a_deployment_in_the_foreground_removes_it_only_after_its_pods() {
    let world = world(DeleteParams::foreground()).property(FnProperty::always(
        "without the deployment there are no replica sets or pods",
        |view| {
            // Before the deployment is created there is nothing either; after its foreground
            // deletion starts, its ReplicaSet and Pods must go before it does.
            let snap = view.cluster("default").ok_or("no cluster")?;
            let deployment = snapshot::object::<Deployment>(snap, Some("default"), "web");
            let sets = snapshot::objects::<ReplicaSet>(snap, Some("default")).len();
            let pods = snapshot::objects::<Pod>(snap, Some("default")).len();
            if deployment.is_some() || (sets, pods) == (0, 0) {
                Ok(())
            } else {
                Err(format!("deployment gone while {sets} replica sets and {pods} pods remain"))
            }
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-all-foreground").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
