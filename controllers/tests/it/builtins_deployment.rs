//! The Deployment controller with the ReplicaSet controller and the kubelet-lite: a Deployment
//! gets a ReplicaSet and Running, Ready Pods; an image change rolls out within maxSurge and
//! maxUnavailable; old ReplicaSets beyond revisionHistoryLimit are deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::builtins_namespace_defaults::namespace;
use crate::fault_plans::{RefusedCreates, lagging_watch, refused_calls};
use controllers::builtins::{self, deployment, owners, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, Event, Namespace, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::Snapshot;
use model_apiserver::versions::Text;
use sim::api::{Api, ObjectMeta, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(120);
pub(crate) const REPLICAS: i32 = 4;
const MAX_SURGE: i32 = 1;
const MAX_UNAVAILABLE: i32 = 1;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

pub(crate) fn web(image: &str, history: Option<i32>) -> Deployment {
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

pub(crate) fn rolled_out(d: Option<&Deployment>) -> bool {
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
    let world = rollout_within_bounds(world(&["nginx:1", "nginx:2"], None));
    let report = sweep(&SweepConfig::new("builtins-deployment-rollout").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_rollout_stays_within_its_bounds_while_the_controllers_replica_set_cache_lags() {
    // The Deployment controller's ReplicaSet watch is held back 2 s a pull for the first minute:
    // its syncs decide from a cache seconds behind the ReplicaSets it scales. Its scaling patches
    // carry the resourceVersion they read, so a decision from a stale view is refused (409) and
    // taken again, and a second create of the new ReplicaSet is `AlreadyExists`.
    let plan = lagging_watch(builtins::deployment::NODE, "replicasets", 2_000, 60_000);
    let world = rollout_within_bounds(world(&["nginx:1", "nginx:2"], None)).faults(plan);
    let report =
        sweep(&SweepConfig::new("builtins-deployment-lagging-cache").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
    // The lag is real: some of the controller's writes were decided on a stale cache and refused.
    let world = world.keep_trace(true);
    let refused: usize =
        (0..5).map(|seed| refused_calls(&world.run(seed), builtins::deployment::NODE, |_, _| true)).sum();
    assert!(refused > 0, "no write of the Deployment controller was refused in 5 seeds");
}

#[test]
fn an_old_replica_set_whose_status_counts_more_pods_than_its_spec_is_not_scaled_down_on_it() {
    // No ReplicaSet controller: the workload writes the ReplicaSets' statuses as it would, and
    // holds the old one's back. After the old ReplicaSet was scaled 4 -> 3 its status still
    // counts 4 available Pods (the controller has not seen the deleted one go). Upstream's
    // `cleanupUnhealthyReplicas` refuses to scale such a ReplicaSet ("invalid request to scale
    // down 3 -> 4"), so the sync scales nothing down until the status has caught up; scaling down
    // by `available - minAvailable` on that status (here 3 -> 1) would take Pods that are
    // already going and leave two available of four, under `replicas - maxUnavailable`.
    let world =
        builtins::deployment_controller(Sim::builder().scenario("builtins-deployment-stale-old-status"));
    let world = world.workload(|w| async move {
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
        let fail =
            |action: &str, reason: String| WorkloadError { step: 0, action: action.to_owned(), reason };
        // (image, spec.replicas) of each ReplicaSet, by image.
        let image = |rs: &ReplicaSet| {
            let spec = rs.spec.template.as_ref().and_then(|t| t.spec.as_ref());
            spec.and_then(|s| s.containers.first()).and_then(|c| c.image.clone()).unwrap_or_default()
        };
        let sizes = |sets: &[ReplicaSet]| {
            let mut sizes: Vec<(String, i32)> =
                sets.iter().map(|rs| (image(rs), rs.spec.replicas.unwrap_or(1))).collect();
            sizes.sort();
            sizes
        };
        let name_of = |sets: &[ReplicaSet], wanted: &str| {
            sets.iter().find(|rs| image(rs) == wanted).and_then(|rs| rs.metadata.name.clone())
        };
        let set_status = |name: String, replicas: i32, available: i32| {
            let sets = sets.clone();
            async move {
                let status = serde_json::json!({ "status": {
                    "replicas": replicas, "fullyLabeledReplicas": replicas,
                    "readyReplicas": available, "availableReplicas": available,
                }});
                sets.patch_status(&name, &sim::api::PatchParams::default(), &Patch::Merge(&status))
                    .await
                    .map(|_| ())
                    .map_err(|e| fail("write a replica set's status", e.to_string()))
            }
        };
        let all = |sets: &Api<ReplicaSet>| {
            let sets = sets.clone();
            async move {
                sets.list(&sim::api::ListParams::default())
                    .await
                    .map(|l| l.items)
                    .map_err(|e| fail("list replica sets", e.to_string()))
            }
        };
        let v1 = |n: i32| vec![("nginx:1".to_owned(), n)];
        let both = |old: i32, new: i32| vec![("nginx:1".to_owned(), old), ("nginx:2".to_owned(), new)];

        w.apply(&deployments, &web("nginx:1", None)).await?;
        w.wait_for_all(&sets, |s| sizes(s) == v1(REPLICAS), WAIT).await?;
        let old = name_of(&all(&sets).await?, "nginx:1").ok_or_else(|| fail("find", "no old set".into()))?;
        set_status(old.clone(), REPLICAS, REPLICAS).await?;
        w.wait_for(&deployments, "web", rolled_out, WAIT).await?;

        // No progress deadline: with no Pods the rollout never finishes, and a deadline would
        // keep the world busy waiting for it.
        let mut next = web("nginx:2", None);
        next.spec.progress_deadline_seconds = Some(i32::MAX);
        w.apply(&deployments, &next).await?;
        // The old ReplicaSet loses one Pod (4 available, 3 wanted), the new one gets two (up to
        // replicas + maxSurge); nothing more while no new Pod is available.
        w.wait_for_all(&sets, |s| sizes(s) == both(REPLICAS - 1, 2), WAIT).await?;
        let new = name_of(&all(&sets).await?, "nginx:2").ok_or_else(|| fail("find", "no new set".into()))?;
        // One new Pod is available; the old ReplicaSet's status still counts four.
        set_status(new, 2, 1).await?;
        w.sleep(Duration::from_secs(10)).await;
        let now = sizes(&all(&sets).await?);
        if now != both(REPLICAS - 1, 2) {
            return Err(fail("scale on a stale status", format!("replica sets (image, replicas) {now:?}")));
        }
        // The status catches up; the scale-down goes on by one Pod (3 + 1 available, 3 wanted).
        set_status(old, REPLICAS - 1, REPLICAS - 1).await?;
        w.wait_for_all(&sets, |s| sizes(s).first() == Some(&("nginx:1".to_owned(), REPLICAS - 2)), WAIT)
            .await?;
        Ok(())
    });
    let report =
        sweep(&SweepConfig::new("builtins-deployment-stale-old-status").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

/// The rollout's bounds as properties: ReplicaSets within `replicas + maxSurge`, available Pods
/// at least `replicas - maxUnavailable` once the rollout started, and in the end every Pod of the
/// new image, two ReplicaSets (the old one at 0).
fn rollout_within_bounds(world: SimBuilder) -> SimBuilder {
    world
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
        }))
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

/// (image, revision, revision history, replicas) of a ReplicaSet.
type SetSummary = (Option<String>, Option<String>, Option<String>, i32);

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

fn progressing_reason(d: &Deployment) -> Option<String> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .and_then(|c| c.reason.clone())
}

/// A workload step that failed for `reason` (a check a test makes beyond the steps' own).
pub(crate) fn failed_step(action: &str, reason: String) -> sim::WorkloadError {
    sim::WorkloadError { step: 0, action: action.to_owned(), reason }
}

/// What `kubectl rollout undo --to-revision=N` (kubectl 1.37, client-side) does: read the
/// ReplicaSet of revision N and JSON-patch the Deployment's template (without the
/// pod-template-hash label) and annotations (the ReplicaSet's, but the skipped ones) with it.
async fn rollout_undo(w: &sim::Workload, revision: &str) -> Result<(), sim::WorkloadError> {
    let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
    let list =
        sets.list(&Default::default()).await.map_err(|e| failed_step("list replica sets", e.to_string()))?;
    let rs = list
        .items
        .into_iter()
        .find(|rs| annotation(&rs.metadata, deployment::REVISION_ANNOTATION).as_deref() == Some(revision))
        .ok_or_else(|| failed_step("rollout undo", format!("no replica set of revision {revision}")))?;
    let mut template = rs.spec.template.clone().unwrap_or_default();
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(deployment::POD_TEMPLATE_HASH_LABEL);
    }
    let skipped = [
        "kubectl.kubernetes.io/last-applied-configuration",
        deployment::REVISION_ANNOTATION,
        deployment::REVISION_HISTORY_ANNOTATION,
        deployment::DESIRED_REPLICAS_ANNOTATION,
        deployment::MAX_REPLICAS_ANNOTATION,
        "deprecated.deployment.rollback.to",
    ];
    let annotations: BTreeMap<String, String> = rs
        .metadata
        .annotations
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !skipped.contains(&k.as_str()))
        .collect();
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "replace", "path": "/spec/template", "value": template },
        { "op": "replace", "path": "/metadata/annotations", "value": annotations },
    ]))
    .map_err(|e| failed_step("rollout undo", e.to_string()))?;
    let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
    w.patch(&deployments, "web", &Patch::<()>::Json(patch)).await?;
    Ok(())
}

fn rolled_out_with(image: &'static str) -> impl Fn(Option<&Deployment>) -> bool {
    move |d| {
        rolled_out(d)
            && d.is_some_and(|d| {
                d.spec
                    .template
                    .spec
                    .as_ref()
                    .and_then(|s| s.containers.first())
                    .and_then(|c| c.image.as_deref())
                    == Some(image)
            })
    }
}

#[test]
fn rollout_undo_to_revision_one_moves_its_replica_set_to_revision_three() {
    let world = Sim::builder().scenario("builtins-deployment-undo");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    let world = world
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            for image in ["nginx:1", "nginx:2"] {
                w.apply(&deployments, &web(image, None)).await?;
                w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
            }
            let revision = |d: Option<&Deployment>| {
                d.and_then(|d| annotation(&d.metadata, deployment::REVISION_ANNOTATION))
            };
            w.wait_for(&deployments, "web", |d| revision(d).as_deref() == Some("2"), WAIT).await?;
            rollout_undo(&w, "1").await?;
            w.wait_for(&deployments, "web", rolled_out_with("nginx:1"), WAIT).await?;
            w.wait_for(&deployments, "web", |d| revision(d).as_deref() == Some("3"), WAIT).await
        })
        .property(FnProperty::at_end("revision 1's replica set is revision 3 and runs every pod", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let mut sets: Vec<SetSummary> = replica_sets(snap)
                .iter()
                .map(|rs| {
                    let image = rs
                        .spec
                        .template
                        .as_ref()
                        .and_then(|t| t.spec.as_ref())
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.image.clone());
                    let revision = annotation(&rs.metadata, deployment::REVISION_ANNOTATION);
                    let history = annotation(&rs.metadata, deployment::REVISION_HISTORY_ANNOTATION);
                    (image, revision, history, rs.spec.replicas.unwrap_or(1))
                })
                .collect();
            sets.sort();
            let want = vec![
                (Some("nginx:1".to_owned()), Some("3".to_owned()), Some("1".to_owned()), REPLICAS),
                (Some("nginx:2".to_owned()), Some("2".to_owned()), None, 0),
            ];
            let images: Vec<Option<String>> =
                snapshot::objects::<Pod>(snap, Some("default")).iter().map(image_of).collect();
            if sets == want && images == vec![Some("nginx:1".to_owned()); 4] {
                Ok(())
            } else {
                Err(format!(
                    "replica sets (image, revision, history, replicas) {sets:?}, pod images {images:?}"
                ))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-deployment-undo").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_paused_deployment_scales_but_rolls_out_a_new_image_only_once_resumed() {
    let world = Sim::builder().scenario("builtins-deployment-pause");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    let world = world
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web("nginx:1", None)).await?;
            w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "paused": true } })))
                .await?;
            let paused = |d: Option<&Deployment>| {
                d.and_then(progressing_reason).as_deref() == Some(deployment::PAUSED_REASON)
            };
            w.wait_for(&deployments, "web", paused, WAIT).await?;
            let image = serde_json::json!({ "spec": { "replicas": REPLICAS + 1, "template": { "spec": {
                "containers": [ { "name": "web", "image": "nginx:2" } ] } } } });
            w.patch(&deployments, "web", &Patch::Merge(image)).await?;
            let scaled = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(REPLICAS + 1))
            };
            w.wait_for(&deployments, "web", scaled, WAIT).await?;
            w.sleep(Duration::from_secs(10)).await;
            let d = deployments.get("web").await.map_err(|e| failed_step("get web", e.to_string()))?;
            if d.status.as_ref().and_then(|s| s.updated_replicas).unwrap_or(0) != 0 {
                return Err(failed_step("check the pause", format!("paused but rolled out: {:?}", d.status)));
            }
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "paused": false } })))
                .await?;
            let done = |d: Option<&Deployment>| {
                d.is_some_and(|d| {
                    d.status.as_ref().is_some_and(|s| {
                        s.observed_generation == d.metadata.generation
                            && s.updated_replicas == Some(REPLICAS + 1)
                            && s.available_replicas == Some(REPLICAS + 1)
                            && s.replicas == Some(REPLICAS + 1)
                    }) && progressing_reason(d).as_deref() == Some("NewReplicaSetAvailable")
                })
            };
            w.wait_for(&deployments, "web", done, WAIT).await
        })
        .property(FnProperty::always("no replica set of the new image while paused", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let Some(d) = snapshot::object::<Deployment>(snap, Some("default"), "web") else { return Ok(()) };
            let new_sets = replica_sets(snap)
                .iter()
                .filter(|rs| {
                    rs.spec
                        .template
                        .as_ref()
                        .and_then(|t| t.spec.as_ref())
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.image.as_deref())
                        == Some("nginx:2")
                })
                .count();
            if d.spec.paused == Some(true) && new_sets > 0 {
                Err("a nginx:2 replica set while paused".into())
            } else {
                Ok(())
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-deployment-pause").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_rollout_whose_pods_never_become_ready_exceeds_its_progress_deadline() {
    let world = Sim::builder().scenario("builtins-deployment-deadline");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    let world = world.workload(|w| async move {
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        let mut d = web("nginx:1", None);
        d.spec.progress_deadline_seconds = Some(30);
        w.apply(&deployments, &d).await?;
        w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
        // A template whose containers crash and have a readiness probe: its pods never become
        // ready (without a probe, a restarted container is ready for the moment it runs, as on a
        // node, and the rollout would go on in those moments).
        let broken = serde_json::json!({ "spec": { "template": {
            "metadata": { "annotations": { builtins::kubelet::FAIL_ANNOTATION: "true" } },
            "spec": { "containers": [{ "name": "web", "readinessProbe": { "tcpSocket": { "port": 80 } } }] } } } });
        w.patch(&deployments, "web", &Patch::Strategic(broken)).await?;
        let exceeded = |d: Option<&Deployment>| {
            d.and_then(progressing_reason).as_deref() == Some(deployment::TIMED_OUT_REASON)
        };
        w.wait_for(&deployments, "web", exceeded, WAIT).await?;
        let d = deployments.get("web").await.map_err(|e| failed_step("get web", e.to_string()))?;
        let available = d.status.as_ref().and_then(|s| s.available_replicas);
        // maxUnavailable 1: the old pods keep the Deployment available.
        if available < Some(REPLICAS - MAX_UNAVAILABLE) {
            return Err(failed_step("check availability", format!("{available:?} available")));
        }
        Ok(())
    });
    let report = sweep(&SweepConfig::new("builtins-deployment-deadline").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn the_builtins_publish_the_events_kube_controller_manager_and_the_kubelet_do() {
    use k8s_openapi::api::events::v1::Event;
    let world = world(&["nginx:1"], None).property(FnProperty::at_end("the rollout's events", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let events = snapshot::objects::<Event>(snap, Some("default"));
        let seen = |controller: &str, kind: &str, reason: &str| {
            events.iter().any(|e| {
                e.reporting_controller.as_deref() == Some(controller)
                    && e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some(kind)
            })
        };
        let scaling = events.iter().find(|e| e.reason.as_deref() == Some(deployment::SCALING_REASON));
        let note = scaling.and_then(|e| e.note.clone()).unwrap_or_default();
        let rs = replica_sets(snap).first().and_then(|rs| rs.metadata.name.clone()).unwrap_or_default();
        if note != format!("Scaled up replica set {rs} from 0 to {REPLICAS}") {
            return Err(format!("ScalingReplicaSet note {note:?}"));
        }
        for (controller, kind, reason) in [
            ("deployment-controller", "Deployment", "ScalingReplicaSet"),
            ("replicaset-controller", "ReplicaSet", "SuccessfulCreate"),
            ("default-scheduler", "Pod", "Scheduled"),
            ("kubelet", "Pod", "Pulled"),
            ("kubelet", "Pod", "Created"),
            ("kubelet", "Pod", "Started"),
        ] {
            if !seen(controller, kind, reason) {
                return Err(format!("no {reason} event about a {kind} from {controller}"));
            }
        }
        Ok(())
    }));
    let report = sweep(&SweepConfig::new("builtins-deployment-events").seeds(5), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// (kind, type, status, reason, message) of every condition the Deployment `web` and its
/// ReplicaSets had at some write of a run.
type SeenConditions = std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<[String; 5]>>>;

/// `world` with a fault hook, recording into `seen` the conditions of `web` and its ReplicaSets
/// at every write.
fn watched_world(hook: RefusedCreates, seen: &SeenConditions) -> SimBuilder {
    let seen = seen.clone();
    world(&["nginx:1"], None).fault_hook(move |_seed| hook.clone()).property(FnProperty::always(
        "(records the conditions)",
        move |view| {
            let Some(snap) = view.cluster("default") else { return Ok(()) };
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            let mut note =
                |kind: &str, type_: &str, status: &str, reason: Option<&String>, message: Option<&String>| {
                    let text = |s: Option<&String>| s.cloned().unwrap_or_default();
                    seen.insert([
                        kind.to_owned(),
                        type_.to_owned(),
                        status.to_owned(),
                        text(reason),
                        text(message),
                    ]);
                };
            let d = snapshot::object::<Deployment>(snap, Some("default"), "web");
            for c in d.and_then(|d| d.status).and_then(|s| s.conditions).into_iter().flatten() {
                note("Deployment", c.type_.text(), c.status.text(), c.reason.as_ref(), c.message.as_ref());
            }
            for rs in replica_sets(snap) {
                for c in rs.status.and_then(|s| s.conditions).into_iter().flatten() {
                    note(
                        "ReplicaSet",
                        c.type_.text(),
                        c.status.text(),
                        c.reason.as_ref(),
                        c.message.as_ref(),
                    );
                }
            }
            Ok(())
        },
    ))
}

/// The conditions of `kind` and `type_` in `seen`: (status, reason, message).
fn seen_of(seen: &SeenConditions, kind: &str, type_: &str) -> Vec<(String, String, String)> {
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    seen.iter()
        .filter(|[k, t, ..]| k == kind && t == type_)
        .map(|[_, _, status, reason, message]| (status.clone(), reason.clone(), message.clone()))
        .collect()
}

/// A refused create of the new ReplicaSet is published as upstream's `getNewReplicaSet` does: a
/// `ReplicaSetCreateError` Warning and the Progressing condition False with that reason, until the
/// retry creates it and the rollout completes.
#[test]
fn a_refused_replica_set_create_is_a_warning_and_a_progressing_false_condition_until_it_succeeds() {
    let seen = SeenConditions::default();
    let world = watched_world(RefusedCreates::new(deployment::NODE, "replicasets/", 1), &seen).property(
        FnProperty::at_end("a ReplicaSetCreateError Warning, then NewReplicaSetAvailable", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let warnings: Vec<String> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some(deployment::FAILED_RS_CREATE_REASON))
                .filter(|e| e.type_.as_deref() == Some("Warning"))
                .filter_map(|e| e.message)
                .collect();
            let [message] = warnings.as_slice() else { return Err(format!("{warnings:?}")) };
            let expected = "\": Internal error occurred: refused by the test";
            if !(message.starts_with("Failed to create new replica set \"web-")
                && message.ends_with(expected))
            {
                return Err(message.clone());
            }
            let d = snapshot::object::<Deployment>(snap, Some("default"), "web").ok_or("no deployment")?;
            match progressing_reason(&d).as_deref() {
                Some("NewReplicaSetAvailable") => Ok(()),
                other => Err(format!("Progressing {other:?} at the end")),
            }
        }),
    );
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    let progressing = seen_of(&seen, "Deployment", "Progressing");
    assert!(
        progressing.iter().any(|(status, reason, message)| status == "False"
            && reason == deployment::FAILED_RS_CREATE_REASON
            && message.starts_with("Failed to create new replica set")),
        "{progressing:#?}"
    );
}

/// While the ReplicaSet controller's Pod creates are refused, the ReplicaSet carries a
/// `ReplicaFailure` condition (`FailedCreate`, the server's message) and the Deployment the same
/// condition moved onto it, as upstream's `calculateStatus` and `syncRolloutStatus`; both are
/// removed once the creates go through.
#[test]
fn refused_pod_creates_are_a_replica_failure_condition_on_the_replica_set_and_its_deployment() {
    let seen = SeenConditions::default();
    let world = watched_world(RefusedCreates::new(builtins::replicaset::NODE, "pods/", 3), &seen).property(
        FnProperty::at_end("no ReplicaFailure left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let d = snapshot::object::<Deployment>(snap, Some("default"), "web").ok_or("no deployment")?;
            let types = |conditions: Option<Vec<String>>| conditions.unwrap_or_default();
            let mut left = types(
                d.status
                    .and_then(|s| s.conditions)
                    .map(|c| c.iter().map(|c| c.type_.text().to_owned()).collect()),
            );
            for rs in replica_sets(snap) {
                left.extend(types(
                    rs.status
                        .and_then(|s| s.conditions)
                        .map(|c| c.iter().map(|c| c.type_.text().to_owned()).collect()),
                ));
            }
            if left.iter().any(|t| t == "ReplicaFailure") { Err(format!("{left:?}")) } else { Ok(()) }
        }),
    );
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    let failure = (
        "True".to_owned(),
        "FailedCreate".to_owned(),
        "Internal error occurred: refused by the test".to_owned(),
    );
    for kind in ["ReplicaSet", "Deployment"] {
        let seen = seen_of(&seen, kind, "ReplicaFailure");
        assert_eq!(seen, std::slice::from_ref(&failure), "{kind}");
    }
}

/// In a namespace being terminated the new ReplicaSet's create is refused (403,
/// `NamespaceTerminating`): the sync ends without a retry, as upstream's `handleErr` forgets it,
/// instead of retrying a create that cannot succeed.
#[test]
fn a_rollout_in_a_terminating_namespace_does_not_retry_its_refused_replica_set_create() {
    let hook = RefusedCreates::new(deployment::NODE, "replicasets/", 0);
    let sent = hook.sent.clone();
    // No namespace controller: the namespace stays Terminating with the Deployment in it.
    let world = Sim::builder().scenario("builtins-deployment-terminating");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)))
        .fault_hook(move |_seed| hook.clone())
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "team");
            let mut d = web("nginx:1", None);
            d.metadata.namespace = Some("team".to_owned());
            w.apply(&deployments, &d).await?;
            w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
            let deleted = namespaces.delete("team", &Default::default()).await;
            deleted.map_err(|e| failed_step("delete namespace", e.to_string()))?;
            let patch = serde_json::json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:2"}
            ]}}}});
            w.patch(&deployments, "web", &Patch::Strategic(patch)).await?;
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        });
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    // The first create made the rollout's ReplicaSet; the others came after the image change.
    let refused = sent.lock().unwrap().len() - 1;
    assert!((1..=2).contains(&refused), "{refused} creates after the image change");
}

/// A Deployment whose sync keeps failing is retried 15 times, backing off, then dropped until its
/// next event, as upstream's `handleErr` does past `maxRetries`: 16 attempts in all, however long
/// the run goes on.
#[test]
fn a_deployment_whose_sync_keeps_failing_is_dropped_after_15_retries() {
    let hook = RefusedCreates::new(deployment::NODE, "replicasets/", usize::MAX);
    let sent = hook.sent.clone();
    let world = Sim::builder().scenario("builtins-deployment-max-retries");
    let world = builtins::replicaset_controller(builtins::deployment_controller(world))
        .fault_hook(move |_seed| hook.clone())
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web("nginx:1", None)).await?;
            // The sixteenth attempt comes 5 ms × (2^15 − 1) ≈ 164 s after the first.
            w.sleep(Duration::from_secs(500)).await;
            Ok(())
        });
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 16, "{sent:?}");
}

/// Recreate: an image change scales the old ReplicaSet to zero, waits until its Pods are gone
/// (here a 20 s grace period each), and only then starts the new ones; the rollout completes
/// without waiting for anything but those Pods.
#[test]
fn recreate_starts_new_pods_only_once_the_old_ones_are_gone() {
    let recreate = |image: &str| {
        let mut d = web(image, None);
        d.spec.strategy =
            Some(DeploymentStrategy { type_: Some("Recreate".to_owned()), rolling_update: None });
        if let Some(pod) = d.spec.template.spec.as_mut() {
            pod.termination_grace_period_seconds = Some(20);
        }
        d
    };
    let world = Sim::builder().scenario("builtins-deployment-recreate");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)))
        .workload(move |w| {
            let (first, second) = (recreate("nginx:1"), recreate("nginx:2"));
            async move {
                let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
                w.apply(&deployments, &first).await?;
                w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
                w.apply(&deployments, &second).await?;
                // The old Pods take 20 s to go; the new ones a few seconds to be ready.
                w.wait_for(&deployments, "web", rolled_out, Duration::from_secs(40)).await
            }
        })
        .property(FnProperty::always("no new Pod while an old one is there", |view| {
            let Some(snap) = view.cluster("default") else { return Ok(()) };
            let pods = snapshot::objects::<Pod>(snap, Some("default"));
            let images: Vec<Option<String>> = pods.iter().map(image_of).collect();
            let old = images.iter().any(|i| i.as_deref() == Some("nginx:1"));
            let new = images.iter().any(|i| i.as_deref() == Some("nginx:2"));
            if old && new { Err(format!("old and new Pods together: {images:?}")) } else { Ok(()) }
        }));
    let report = sweep(&SweepConfig::new("builtins-deployment-recreate").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_stuck_rollout_with_the_default_progress_deadline_is_marked_exceeded_before_the_end_checks() {
    // Pods that crash-loop never become available: kube-controller-manager looks at the
    // Deployment again 600 s after its last progress and marks it ProgressDeadlineExceeded. That
    // requeue runs in the liveness phase (within the default time limit), so the end checks see
    // the condition, and the crash loop's restarts do not keep the world from quiescing after it.
    let world = Sim::builder().scenario("builtins-deployment-default-deadline");
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    let world = world
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let mut d = web("nginx:1", None);
            d.spec.template.metadata.get_or_insert_default().annotations =
                Some([(builtins::kubelet::FAIL_ANNOTATION.to_owned(), "true".to_owned())].into());
            // A readiness probe: a restarted container without one is ready while it runs.
            if let Some(container) = d.spec.template.spec.as_mut().and_then(|s| s.containers.first_mut()) {
                container.readiness_probe = Some(k8s_openapi::api::core::v1::Probe {
                    tcp_socket: Some(k8s_openapi::api::core::v1::TCPSocketAction {
                        port: k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            w.apply(&deployments, &d).await?;
            w.sleep(Duration::from_secs(5)).await;
            Ok(())
        })
        .property(FnProperty::at_end("progress deadline exceeded", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let d = snapshot::object::<Deployment>(snap, Some("default"), "web").ok_or("no deployment")?;
            let reason = progressing_reason(&d);
            if reason.as_deref() == Some(deployment::TIMED_OUT_REASON) {
                Ok(())
            } else {
                Err(format!("{reason:?}"))
            }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-deployment-default-deadline").seeds(10), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}
