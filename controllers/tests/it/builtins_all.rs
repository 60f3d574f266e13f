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

/// What kube-apiserver's Pod admission plugins add to `pod` that is missing, if anything: the
/// `default` account and its projected token volume mounted read-only in the container, priority
/// 0 with `PreemptLowerPriority`, and the `not-ready` and `unreachable` `NoExecute` tolerations.
fn missing_admission_additions(pod: &Pod) -> Option<String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let spec = pod.spec.as_ref()?;
    let volume = spec.volumes.iter().flatten().find(|v| v.name.starts_with("kube-api-access-"));
    let Some(volume) = volume.filter(|v| v.projected.is_some()) else {
        return Some(format!("pod {name} has no projected kube-api-access-* volume"));
    };
    let mounted = spec.containers[0].volume_mounts.iter().flatten().any(|m| {
        m.name == volume.name
            && m.mount_path == "/var/run/secrets/kubernetes.io/serviceaccount"
            && m.read_only == Some(true)
    });
    let tolerated = |key: &str| {
        spec.tolerations.iter().flatten().any(|t| {
            t.key.as_deref() == Some(key)
                && t.effect.as_deref() == Some("NoExecute")
                && t.toleration_seconds == Some(300)
        })
    };
    let problems = [
        (spec.service_account_name.as_deref() != Some("default"), "no default account"),
        (!mounted, "no token mount"),
        (spec.priority != Some(0), "no priority 0"),
        (spec.preemption_policy.as_deref() != Some("PreemptLowerPriority"), "no preemption policy"),
        (!tolerated("node.kubernetes.io/not-ready"), "no not-ready toleration"),
        (!tolerated("node.kubernetes.io/unreachable"), "no unreachable toleration"),
    ];
    let missing: Vec<&str> = problems.iter().filter(|(missing, _)| *missing).map(|(_, what)| *what).collect();
    (!missing.is_empty()).then(|| format!("pod {name}: {}", missing.join(", ")))
}

#[test]
fn a_deployments_pods_get_the_admission_plugins_additions_and_run() {
    let world = builtins::all(Sim::builder().scenario("builtins-all-pod-admission"))
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web()).await?;
            let available = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(2))
            };
            w.wait_for(&deployments, "web", available, WAIT).await
        })
        .property(FnProperty::at_end("the Deployment's Pods carry the plugins' additions and run", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let pods = snapshot::objects::<Pod>(snap, Some("default"));
            if pods.len() != 2 {
                return Err(format!("{} pods, not 2", pods.len()));
            }
            if let Some(missing) = pods.iter().find_map(missing_admission_additions) {
                return Err(missing);
            }
            let phases: Vec<_> =
                pods.iter().map(|p| p.status.as_ref().and_then(|s| s.phase.clone())).collect();
            let running = phases.iter().all(|p| p.as_deref() == Some("Running"));
            if running { Ok(()) } else { Err(format!("phases: {phases:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-all-pod-admission").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
