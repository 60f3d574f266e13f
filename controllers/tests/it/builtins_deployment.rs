//! The Deployment controller with the ReplicaSet controller and the kubelet-lite: a Deployment
//! gets a ReplicaSet and Running, Ready Pods; an image change rolls out within maxSurge and
//! maxUnavailable; old ReplicaSets beyond revisionHistoryLimit are deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, deployment, owners, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::Snapshot;
use sim::api::{Api, ObjectMeta};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(120);
const REPLICAS: i32 = 4;
const MAX_SURGE: i32 = 1;
const MAX_UNAVAILABLE: i32 = 1;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn web(image: &str, history: Option<i32>) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(REPLICAS),
            revision_history_limit: history,
            selector: LabelSelector { match_labels: Some(labels()), ..LabelSelector::default() },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(MAX_SURGE)),
                    max_unavailable: Some(IntOrString::Int(MAX_UNAVAILABLE)),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels()), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".to_owned(),
                        image: Some(image.to_owned()),
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

fn rolled_out(d: Option<&Deployment>) -> bool {
    let Some(d) = d else { return false };
    let Some(status) = &d.status else { return false };
    status.observed_generation == d.metadata.generation
        && status.updated_replicas == Some(REPLICAS)
        && status.replicas == Some(REPLICAS)
        && status.available_replicas == Some(REPLICAS)
}

/// The ReplicaSets controlled by Deployment `web`.
fn replica_sets(snap: &Snapshot) -> Vec<ReplicaSet> {
    let Some(d) = snapshot::object::<Deployment>(snap, Some("default"), "web") else { return Vec::new() };
    let uid = d.metadata.uid.unwrap_or_default();
    snapshot::objects::<ReplicaSet>(snap, Some("default"))
        .into_iter()
        .filter(|rs| owners::is_controlled_by(&rs.metadata, &uid))
        .collect()
}

fn image_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone())
}

fn world(images: &'static [&'static str], history: Option<i32>) -> SimBuilder {
    let world = Sim::builder().scenario("builtins-deployment");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    world.workload(move |w| async move {
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        for image in images {
            w.apply(&deployments, &web(image, history)).await?;
            w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
        }
        Ok(())
    })
}

#[test]
fn deployment_creates_a_replica_set_and_pods_that_become_running_and_ready() {
    let world =
        world(&["nginx:1"], None).property(FnProperty::at_end("one revision, four ready pods", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let sets = replica_sets(snap);
            let [rs] = sets.as_slice() else { return Err(format!("{} replica sets", sets.len())) };
            let hash =
                rs.metadata.labels.as_ref().and_then(|l| l.get(deployment::POD_TEMPLATE_HASH_LABEL)).cloned();
            let name = rs.metadata.name.clone().unwrap_or_default();
            let revision = rs
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(deployment::REVISION_ANNOTATION))
                .cloned();
            if Some(name.clone()) != hash.as_ref().map(|h| format!("web-{h}"))
                || revision.as_deref() != Some("1")
            {
                return Err(format!("replica set {name}: hash {hash:?}, revision {revision:?}"));
            }
            let pods = snapshot::objects::<Pod>(snap, Some("default"));
            let ready = pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count();
            let hashed = pods
                .iter()
                .filter(|p| {
                    p.metadata.labels.as_ref().and_then(|l| l.get(deployment::POD_TEMPLATE_HASH_LABEL))
                        == hash.as_ref()
                })
                .count();
            if (pods.len(), ready, hashed) != (4, 4, 4) {
                return Err(format!("{} pods, {ready} ready, {hashed} with the hash label", pods.len()));
            }
            let d = snapshot::object::<Deployment>(snap, Some("default"), "web").ok_or("no deployment")?;
            let conditions: Vec<(String, String, String)> = d
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    (c.type_.unwrap_or_default(), c.status.unwrap_or_default(), c.reason.unwrap_or_default())
                })
                .collect();
            let want = [
                ("Available".to_owned(), "True".to_owned(), "MinimumReplicasAvailable".to_owned()),
                ("Progressing".to_owned(), "True".to_owned(), "NewReplicaSetAvailable".to_owned()),
            ];
            if conditions != want { Err(format!("conditions {conditions:?}")) } else { Ok(()) }
        }));
    let report = sweep(&SweepConfig::new("builtins-deployment-create").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn deployment_image_change_rolls_out_within_max_surge_and_max_unavailable() {
    let world = world(&["nginx:1", "nginx:2"], None)
        .property(FnProperty::always("replica sets within replicas + maxSurge", |view| {
            let sets = replica_sets(view.cluster("default").ok_or("no cluster")?);
            let total: i32 = sets.iter().map(|rs| rs.spec.replicas.unwrap_or(1)).sum();
            if total <= REPLICAS + MAX_SURGE { Ok(()) } else { Err(format!("spec.replicas sum {total}")) }
        }))
        .property(FnProperty::always(
            "ready pods at least replicas - maxUnavailable during the rollout",
            |view| {
                let snap = view.cluster("default").ok_or("no cluster")?;
                // The rollout starts when revision 2 exists, after the workload saw revision 1 rolled out.
                let rolling = replica_sets(snap).iter().any(|rs| {
                    rs.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(deployment::REVISION_ANNOTATION))
                        .map(String::as_str)
                        == Some("2")
                });
                let pods = snapshot::objects::<Pod>(snap, Some("default"));
                let ready = pods.iter().filter(|p| pod_state::is_available(p)).count();
                if !rolling || ready >= usize::try_from(REPLICAS - MAX_UNAVAILABLE).unwrap_or(0) {
                    Ok(())
                } else {
                    Err(format!("{ready} ready pods"))
                }
            },
        ))
        .property(FnProperty::at_end("every pod runs the new image", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let images: Vec<Option<String>> =
                snapshot::objects::<Pod>(snap, Some("default")).iter().map(image_of).collect();
            let want = vec![Some("nginx:2".to_owned()); 4];
            let sets: Vec<(i32, i32)> = replica_sets(snap)
                .iter()
                .map(|rs| (rs.spec.replicas.unwrap_or(1), rs.status.as_ref().map_or(-1, |s| s.replicas)))
                .collect();
            if images == want && sets.len() == 2 && sets.contains(&(0, 0)) && sets.contains(&(4, 4)) {
                Ok(())
            } else {
                Err(format!("pod images {images:?}, replica sets (spec, status) {sets:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-deployment-rollout").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn deployment_keeps_revision_history_limit_old_replica_sets() {
    let world = world(&["nginx:1", "nginx:2", "nginx:3", "nginx:4"], Some(1)).property(FnProperty::at_end(
        "the current and one old replica set remain",
        |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let mut revisions: Vec<String> = replica_sets(snap)
                .iter()
                .filter_map(|rs| {
                    rs.metadata.annotations.as_ref()?.get(deployment::REVISION_ANNOTATION).cloned()
                })
                .collect();
            revisions.sort();
            if revisions == ["3", "4"] { Ok(()) } else { Err(format!("revisions {revisions:?}")) }
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-deployment-history").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
