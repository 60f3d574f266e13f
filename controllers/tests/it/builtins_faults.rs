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
                        spec: Some(PersistentVolumeClaimSpec::default()),
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
