//! The built-ins under faults: with swarm-selected faults on every built-in controller (crashes,
//! stale reads, paused reconciles, missed and delayed events, API errors, ambiguous writes,
//! watch disconnects, compaction, partitions), a Deployment still rolls out and its deletion
//! still leaves no orphans and no stuck deletions; and a namespace holding a StatefulSet, a Job
//! and their Pods and PVCs still empties and goes away.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, checks, snapshot};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet, StatefulSet, StatefulSetSpec};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, Namespace, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, ObjectMeta, Patch};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SweepConfig, sweep};

const SEEDS: u64 = 40;
// Generous: a delayed watch (DelayWatch) holds back every event behind it, so a rollout under
// that fault takes minutes of virtual time.
const WAIT: Duration = Duration::from_secs(400);

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

fn rolled_out(image: &'static str) -> impl Fn(Option<&Deployment>) -> bool {
    move |d| {
        let Some(d) = d else { return false };
        let current =
            d.spec.template.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.as_deref());
        d.status.as_ref().is_some_and(|s| {
            current == Some(image)
                && s.observed_generation == d.metadata.generation
                && s.updated_replicas == Some(2)
                && s.available_replicas == Some(2)
                && s.replicas == Some(2)
        })
    }
}

#[test]
fn under_swarm_faults_a_deployment_rolls_out_and_its_deletion_leaves_no_orphans_or_stuck_deletions() {
    let world = builtins::all(Sim::builder().scenario("builtins-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web()).await?;
            w.wait_for(&deployments, "web", rolled_out("nginx:1"), WAIT).await?;
            let image = serde_json::json!({ "spec": { "template": { "spec": { "containers": [
                { "name": "web", "image": "nginx:2" } ] } } } });
            w.patch(&deployments, "web", &Patch::Merge(image)).await?;
            w.wait_for(&deployments, "web", rolled_out("nginx:2"), WAIT).await?;
            w.delete(&deployments, "web").await?;
            w.wait_for(&deployments, "web", |d| d.is_none(), WAIT).await
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("no replica sets or pods left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = (
                snapshot::objects::<ReplicaSet>(snap, Some("default")).len(),
                snapshot::objects::<Pod>(snap, Some("default")).len(),
            );
            if left == (0, 0) { Ok(()) } else { Err(format!("left (replica sets, pods): {left:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// What every core/v1 Event a built-in wrote must look like, whatever the faults: client-go's
/// recorder shape (a name `<object>.<hex time>`, the source also as the reporting component, a
/// count of at least 1 and `firstTimestamp <= lastTimestamp`).
fn well_formed_core_event(event: &k8s_openapi::api::core::v1::Event) -> Result<(), String> {
    let name = event.metadata.name.clone().unwrap_or_default();
    let object = event.involved_object.name.clone().unwrap_or_default();
    let source = event.source.as_ref().and_then(|s| s.component.clone());
    let (first, last) = (event.first_timestamp.as_ref(), event.last_timestamp.as_ref());
    let hex = name.strip_prefix(&format!("{object}.")).is_some_and(|t| u64::from_str_radix(t, 16).is_ok());
    if !hex
        || source.is_none()
        || event.reporting_component != source
        || event.count.unwrap_or(0) < 1
        || first.zip(last).is_none_or(|(f, l)| f.0 > l.0)
        || event.message.as_deref().unwrap_or_default().is_empty()
    {
        return Err(format!("malformed event {event:?}"));
    }
    Ok(())
}

#[test]
fn under_swarm_faults_the_builtins_events_keep_client_gos_shape_and_each_scaling_step_its_own_event() {
    use k8s_openapi::api::core::v1::Event;
    let world = builtins::all(Sim::builder().scenario("builtins-faults-events"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web()).await?;
            w.wait_for(&deployments, "web", rolled_out("nginx:1"), WAIT).await?;
            let image = serde_json::json!({ "spec": { "template": { "spec": { "containers": [
                { "name": "web", "image": "nginx:2" } ] } } } });
            w.patch(&deployments, "web", &Patch::Merge(image)).await?;
            w.wait_for(&deployments, "web", rolled_out("nginx:2"), WAIT).await
        })
        .property(FnProperty::at_end("the built-ins' events", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let events = snapshot::objects::<Event>(snap, Some("default"));
            // The scheduler writes events.k8s.io Events (no source); the others core ones.
            let core: Vec<&Event> =
                events.iter().filter(|e| e.reason.as_deref() != Some("Scheduled")).collect();
            for event in &core {
                well_formed_core_event(event)?;
            }
            // Each scaling step is its own Event (its message names the sizes), so none repeats: a
            // recorder that folded every step into one series would count them on the first.
            let repeated: Vec<(&str, i32)> = core
                .iter()
                .filter(|e| e.reason.as_deref() == Some("ScalingReplicaSet") && e.count != Some(1))
                .map(|e| (e.message.as_deref().unwrap_or_default(), e.count.unwrap_or(0)))
                .collect();
            if repeated.is_empty() {
                Ok(())
            } else {
                Err(format!("scaling events counted more than once: {repeated:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults-events").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

fn pod_template(app: &str, restart_policy: Option<&str>) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), app.to_owned())])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: app.to_owned(),
                image: Some(format!("{app}:1")),
                ..Container::default()
            }],
            restart_policy: restart_policy.map(str::to_owned),
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
    }
}

fn in_team(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: Some("team".to_owned()), ..ObjectMeta::default() }
}

#[test]
fn under_swarm_faults_a_namespace_with_a_statefulset_and_a_job_empties_and_goes_away() {
    let world = builtins::all(Sim::builder().scenario("builtins-faults-namespace"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            let team = Namespace {
                metadata: ObjectMeta { name: Some("team".to_owned()), ..ObjectMeta::default() },
                ..Namespace::default()
            };
            w.apply(&namespaces, &team).await?;
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "team");
            let db = StatefulSet {
                metadata: in_team("db"),
                spec: StatefulSetSpec {
                    replicas: Some(2),
                    selector: LabelSelector {
                        match_labels: Some(BTreeMap::from([("app".to_owned(), "db".to_owned())])),
                        ..LabelSelector::default()
                    },
                    template: pod_template("db", None),
                    volume_claim_templates: Some(vec![PersistentVolumeClaim {
                        metadata: ObjectMeta { name: Some("data".to_owned()), ..ObjectMeta::default() },
                        spec: Some(claim_spec()),
                        status: None,
                    }]),
                    ..StatefulSetSpec::default()
                },
                status: None,
            };
            w.apply(&sets, &db).await?;
            let jobs: Api<Job> = Api::namespaced(w.client(), "team");
            let job = Job {
                metadata: in_team("batch"),
                spec: Some(JobSpec {
                    completions: Some(2),
                    template: pod_template("batch", Some("Never")),
                    ..JobSpec::default()
                }),
                status: None,
            };
            w.apply(&jobs, &job).await?;
            let ready = |s: Option<&StatefulSet>| {
                s.and_then(|s| s.status.as_ref()).is_some_and(|s| s.ready_replicas == Some(2))
            };
            w.wait_for(&sets, "db", ready, WAIT).await?;
            w.wait_for(&jobs, "batch", |j| j.is_some_and(builtins::job::is_finished), WAIT).await?;
            w.delete(&namespaces, "team").await?;
            w.wait_for(&namespaces, "team", |n| n.is_none(), WAIT).await
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("nothing is left in the namespace", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = (
                snapshot::objects::<Pod>(snap, Some("team")).len(),
                snapshot::objects::<PersistentVolumeClaim>(snap, Some("team")).len(),
                snapshot::objects::<StatefulSet>(snap, Some("team")).len(),
                snapshot::objects::<Job>(snap, Some("team")).len(),
            );
            if left == (0, 0, 0, 0) {
                Ok(())
            } else {
                Err(format!("left (pods, pvcs, statefulsets, jobs): {left:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults-namespace").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

fn image_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone())
}

fn image_patch(container: &str, image: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "spec": { "template": { "spec": { "containers": [
        { "name": container, "image": image } ] } } } }))
}

#[test]
fn under_swarm_faults_a_statefulset_rolls_an_image_change_to_every_pod() {
    let world = builtins::all(Sim::builder().scenario("builtins-faults-statefulset"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            let db = StatefulSet {
                metadata: ObjectMeta {
                    name: Some("db".to_owned()),
                    namespace: Some("default".to_owned()),
                    ..ObjectMeta::default()
                },
                spec: StatefulSetSpec {
                    replicas: Some(3),
                    selector: LabelSelector {
                        match_labels: Some(BTreeMap::from([("app".to_owned(), "db".to_owned())])),
                        ..LabelSelector::default()
                    },
                    template: pod_template("db", None),
                    ..StatefulSetSpec::default()
                },
                status: None,
            };
            w.apply(&sets, &db).await?;
            let done = |image: &'static str| {
                move |s: Option<&StatefulSet>| {
                    s.is_some_and(|s| {
                        let current = s
                            .spec
                            .template
                            .spec
                            .as_ref()
                            .and_then(|p| p.containers.first())
                            .and_then(|c| c.image.as_deref());
                        s.status.as_ref().is_some_and(|st| {
                            current == Some(image)
                                && st.observed_generation >= s.metadata.generation
                                && st.ready_replicas == Some(3)
                                && st.updated_replicas == Some(3)
                                && st.current_revision == st.update_revision
                        })
                    })
                }
            };
            w.wait_for(&sets, "db", done("db:1"), WAIT).await?;
            w.patch(&sets, "db", &image_patch("db", "db:2")).await?;
            w.wait_for(&sets, "db", done("db:2"), WAIT).await
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("three ready pods of the new image", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let images: Vec<Option<String>> =
                snapshot::objects::<Pod>(snap, Some("default")).iter().map(image_of).collect();
            if images == vec![Some("db:2".to_owned()); 3] {
                Ok(())
            } else {
                Err(format!("pod images {images:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults-statefulset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
// The kubelet-lite's own Node and three the workload declares: a DaemonSet without a node
// selector runs on all four, as on a real cluster whose kubelet registered its Node.
fn under_swarm_faults_a_daemonset_runs_one_new_pod_on_each_of_four_nodes() {
    use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec};
    use k8s_openapi::api::core::v1::Node;
    let world = builtins::all(Sim::builder().scenario("builtins-faults-daemonset"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            for name in ["node-a", "node-b", "node-c"] {
                let node = Node {
                    metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
                    ..Node::default()
                };
                w.apply(&nodes, &node).await?;
            }
            let sets: Api<DaemonSet> = Api::namespaced(w.client(), "default");
            let agent = DaemonSet {
                metadata: ObjectMeta {
                    name: Some("agent".to_owned()),
                    namespace: Some("default".to_owned()),
                    ..ObjectMeta::default()
                },
                spec: DaemonSetSpec {
                    selector: LabelSelector {
                        match_labels: Some(BTreeMap::from([("app".to_owned(), "agent".to_owned())])),
                        ..LabelSelector::default()
                    },
                    template: pod_template("agent", None),
                    ..DaemonSetSpec::default()
                },
                status: None,
            };
            w.apply(&sets, &agent).await?;
            let done = |image: &'static str| {
                move |ds: Option<&DaemonSet>| {
                    ds.is_some_and(|ds| {
                        let current = ds
                            .spec
                            .template
                            .spec
                            .as_ref()
                            .and_then(|p| p.containers.first())
                            .and_then(|c| c.image.as_deref());
                        ds.status.as_ref().is_some_and(|s| {
                            current == Some(image)
                                && s.observed_generation >= ds.metadata.generation
                                && s.desired_number_scheduled == 4
                                && s.updated_number_scheduled == Some(4)
                                && s.number_available == Some(4)
                        })
                    })
                }
            };
            w.wait_for(&sets, "agent", done("agent:1"), WAIT).await?;
            w.patch(&sets, "agent", &image_patch("agent", "agent:2")).await?;
            w.wait_for(&sets, "agent", done("agent:2"), WAIT).await
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("one new pod per node", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let mut placed: Vec<(Option<String>, Option<String>)> =
                snapshot::objects::<Pod>(snap, Some("default"))
                    .iter()
                    .map(|p| (p.spec.as_ref().and_then(|s| s.node_name.clone()), image_of(p)))
                    .collect();
            placed.sort();
            let want: Vec<(Option<String>, Option<String>)> = ["node-1", "node-a", "node-b", "node-c"]
                .iter()
                .map(|n| (Some((*n).to_owned()), Some("agent:2".to_owned())))
                .collect();
            if placed == want { Ok(()) } else { Err(format!("pods (node, image) {placed:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults-daemonset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn under_swarm_faults_a_cronjob_runs_each_due_minute_at_most_once_and_goes_quiet_when_suspended() {
    use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, JobTemplateSpec};
    let world = builtins::all(Sim::builder().scenario("builtins-faults-cronjob"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let cronjobs: Api<CronJob> = Api::namespaced(w.client(), "default");
            let backup = CronJob {
                metadata: ObjectMeta {
                    name: Some("backup".to_owned()),
                    namespace: Some("default".to_owned()),
                    ..ObjectMeta::default()
                },
                spec: CronJobSpec {
                    schedule: "* * * * *".to_owned(),
                    concurrency_policy: Some("Forbid".to_owned()),
                    job_template: JobTemplateSpec {
                        metadata: None,
                        spec: Some(JobSpec {
                            template: pod_template("backup", Some("Never")),
                            ..JobSpec::default()
                        }),
                    },
                    ..CronJobSpec::default()
                },
                status: None,
            };
            w.apply(&cronjobs, &backup).await?;
            w.sleep(Duration::from_secs(200)).await;
            w.patch(&cronjobs, "backup", &Patch::Merge(serde_json::json!({ "spec": { "suspend": true } })))
                .await?;
            Ok(())
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("jobs only of due minutes, at least one", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let names: Vec<String> = snapshot::objects::<Job>(snap, Some("default"))
                .into_iter()
                .filter_map(|j| j.metadata.name)
                .collect();
            // 2026-01-01T00:01, 00:02 and 00:03 in minutes since the epoch.
            let due = ["backup-29453761", "backup-29453762", "backup-29453763"];
            if !names.is_empty() && names.iter().all(|n| due.contains(&n.as_str())) {
                Ok(())
            } else {
                Err(format!("jobs {names:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-faults-cronjob").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// A valid claim template: one access mode and a storage request, as kube-apiserver requires of
/// a StatefulSet's volumeClaimTemplates.
fn claim_spec() -> PersistentVolumeClaimSpec {
    use k8s_openapi::api::core::v1::VolumeResourceRequirements;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    PersistentVolumeClaimSpec {
        access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
        resources: Some(VolumeResourceRequirements {
            requests: Some([("storage".to_owned(), Quantity("1Gi".to_owned()))].into()),
            ..VolumeResourceRequirements::default()
        }),
        ..PersistentVolumeClaimSpec::default()
    }
}
