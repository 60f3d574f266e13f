//! The disruption controller: a PodDisruptionBudget's status counts the Pods it selects, takes
//! percentages and `maxUnavailable` of their controllers' scale, follows Pods going unready,
//! lets `disruptedPods` marks expire, fails safe, and converges under faults.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, disruption, kubelet, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Event, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::Snapshot;
use sim::api::{Api, ListParams, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, Workload, WorkloadError, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(120);

fn web_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn web_selector() -> Option<LabelSelector> {
    Some(LabelSelector { match_labels: Some(web_labels()), ..LabelSelector::default() })
}

fn template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta { labels: Some(web_labels()), ..ObjectMeta::default() }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".to_owned(),
                image: Some("nginx:1".to_owned()),
                ..Container::default()
            }],
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
    }
}

fn in_default(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: Some("default".to_owned()), ..ObjectMeta::default() }
}

fn web(replicas: i32) -> Deployment {
    Deployment {
        metadata: in_default("web"),
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: web_selector().unwrap_or_default(),
            template: template(),
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// A budget over `selector` with `minAvailable` or `maxUnavailable`.
fn budget(
    name: &str,
    selector: Option<LabelSelector>,
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: in_default(name),
        spec: Some(PodDisruptionBudgetSpec {
            selector,
            min_available,
            max_unavailable,
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}

fn int(n: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(n))
}

fn percent(s: &str) -> Option<IntOrString> {
    Some(IntOrString::String(s.to_owned()))
}

/// The status figures a budget should reach: expectedPods, desiredHealthy, currentHealthy,
/// disruptionsAllowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Want {
    expected: i32,
    desired: i32,
    current: i32,
    allowed: i32,
}

const fn want(expected: i32, desired: i32, current: i32, allowed: i32) -> Want {
    Want { expected, desired, current, allowed }
}

fn figures(pdb: &PodDisruptionBudget) -> Option<Want> {
    let s = pdb.status.as_ref()?;
    Some(Want {
        expected: s.expected_pods?,
        desired: s.desired_healthy?,
        current: s.current_healthy?,
        allowed: s.disruptions_allowed?,
    })
}

/// The `DisruptionAllowed` condition's status and reason.
fn condition(pdb: &PodDisruptionBudget) -> Option<(String, String)> {
    let conditions = pdb.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "DisruptionAllowed")?;
    Some((c.status.clone(), c.reason.clone()))
}

/// The figures are `want`, for the current generation, with the condition that goes with them.
fn status_is(pdb: Option<&PodDisruptionBudget>, want: Want) -> Result<(), String> {
    let pdb = pdb.ok_or("no budget")?;
    let observed = pdb.status.as_ref().and_then(|s| s.observed_generation);
    let (status, reason) =
        if want.allowed > 0 { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
    let got = (figures(pdb), observed, condition(pdb));
    let expected = (Some(want), pdb.metadata.generation, Some((status.to_owned(), reason.to_owned())));
    if got == expected { Ok(()) } else { Err(format!("status {got:?}, want {expected:?}")) }
}

fn reaches(want: Want) -> impl Fn(Option<&PodDisruptionBudget>) -> bool {
    move |pdb| status_is(pdb, want).is_ok()
}

/// A property that budget `name` ends with `want`.
fn ends_with(name: &'static str, want: Want) -> FnProperty {
    FnProperty::at_end(format!("budget {name} ends with {want:?}"), move |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        status_is(snapshot::object::<PodDisruptionBudget>(snap, Some("default"), name).as_ref(), want)
    })
}

/// Deployments, ReplicaSets, the kubelet-lite and the disruption controller.
fn deployment_world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    let world = builtins::replicaset_controller(builtins::deployment_controller(world));
    builtins::disruption_controller(builtins::kubelet(world))
}

fn sweep_passes(name: &str, world: &SimBuilder) {
    let report = sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

fn workload_error(action: &str, reason: impl std::fmt::Display) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason: reason.to_string() }
}

#[test]
fn a_min_available_budget_over_a_deployment_allows_disrupting_the_ready_pods_beyond_it() {
    let world = deployment_world("builtins-disruption-min-available")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web(3)).await?;
            w.apply(&budgets, &budget("web", web_selector(), int(2), None)).await?;
            w.wait_for(&budgets, "web", reaches(want(3, 2, 3, 1)), WAIT).await
        })
        .property(ends_with("web", want(3, 2, 3, 1)));
    sweep_passes("builtins-disruption-min-available", &world);
}

#[test]
fn max_unavailable_and_percentages_are_taken_of_the_deployments_scale_rounded_up() {
    let world = deployment_world("builtins-disruption-scale")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web(4)).await?;
            w.apply(&budgets, &budget("max-one", web_selector(), None, int(1))).await?;
            w.apply(&budgets, &budget("half", web_selector(), percent("50%"), None)).await?;
            w.apply(&budgets, &budget("max-30", web_selector(), None, percent("30%"))).await?;
            w.wait_for(&budgets, "max-one", reaches(want(4, 3, 4, 1)), WAIT).await?;
            w.wait_for(&budgets, "half", reaches(want(4, 2, 4, 2)), WAIT).await?;
            // 30% of 4 is 1.2 Pods, rounded up to 2 that may be unavailable.
            w.wait_for(&budgets, "max-30", reaches(want(4, 2, 4, 2)), WAIT).await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 2 } })))
                .await?;
            w.wait_for(&budgets, "max-one", reaches(want(2, 1, 2, 1)), WAIT).await
        })
        .property(ends_with("max-one", want(2, 1, 2, 1)))
        .property(ends_with("half", want(2, 1, 2, 1)))
        // 30% of 2 is 0.6, rounded up to 1.
        .property(ends_with("max-30", want(2, 1, 2, 1)));
    sweep_passes("builtins-disruption-scale", &world);
}

fn db(replicas: i32) -> StatefulSet {
    StatefulSet {
        metadata: in_default("db"),
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            service_name: Some("db".to_owned()),
            selector: web_selector().unwrap_or_default(),
            template: template(),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

#[test]
fn an_integer_min_available_expects_the_pods_there_are_and_a_percentage_the_statefulsets_replicas() {
    // No kubelet: the StatefulSet creates db-0 and waits for it to become Ready, which it never
    // does, so one Pod exists of the three the StatefulSet wants.
    let world = builtins::disruption_controller(builtins::statefulset_controller(
        Sim::builder().scenario("builtins-disruption-statefulset"),
    ))
    .workload(|w| async move {
        let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
        w.apply(&sets, &db(3)).await?;
        w.apply(&budgets, &budget("int", web_selector(), int(1), None)).await?;
        w.apply(&budgets, &budget("percent", web_selector(), percent("100%"), None)).await?;
        w.apply(&budgets, &budget("max-one", web_selector(), None, int(1))).await?;
        w.wait_for(&budgets, "int", reaches(want(1, 1, 0, 0)), WAIT).await?;
        w.wait_for(&budgets, "percent", reaches(want(3, 3, 0, 0)), WAIT).await?;
        w.wait_for(&budgets, "max-one", reaches(want(3, 2, 0, 0)), WAIT).await
    })
    .property(ends_with("int", want(1, 1, 0, 0)))
    .property(ends_with("percent", want(3, 3, 0, 0)))
    .property(ends_with("max-one", want(3, 2, 0, 0)));
    sweep_passes("builtins-disruption-statefulset", &world);
}

/// The name of the first Pod selected by `app=web`, in name order.
async fn first_web_pod(w: &Workload) -> Result<String, WorkloadError> {
    let pods: Api<Pod> = Api::namespaced(w.client(), "default");
    let list = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .map_err(|e| workload_error("list pods", e))?;
    let mut names: Vec<String> = list.items.into_iter().filter_map(|p| p.metadata.name).collect();
    names.sort();
    names.into_iter().next().ok_or_else(|| workload_error("list pods", "no pod"))
}

fn web_set(replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: in_default("web"),
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector: web_selector().unwrap_or_default(),
            template: Some(template()),
            ..ReplicaSetSpec::default()
        },
        status: None,
    }
}

#[test]
fn a_pod_going_unready_lowers_disruptions_allowed_and_flips_the_condition() {
    // A ReplicaSet rather than a Deployment: a Deployment with an unready Pod waits for its
    // progress deadline, beyond the run's time limit.
    let world = Sim::builder().scenario("builtins-disruption-unready");
    let world = builtins::disruption_controller(builtins::kubelet(builtins::replicaset_controller(world)))
        .workload(|w| async move {
            let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &web_set(3)).await?;
            w.apply(&budgets, &budget("web", web_selector(), int(2), None)).await?;
            w.wait_for(&budgets, "web", reaches(want(3, 2, 3, 1)), WAIT).await?;
            // A readiness probe failing (the kubelet-lite reports the containers not ready).
            let name = first_web_pod(&w).await?;
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let unready =
                serde_json::json!({ "metadata": { "annotations": { kubelet::UNREADY_ANNOTATION: "true" } } });
            pods.patch(&name, &PatchParams::default(), &Patch::Merge(&unready))
                .await
                .map_err(|e| workload_error("make a pod unready", e))?;
            w.wait_for(&budgets, "web", reaches(want(3, 2, 2, 0)), WAIT).await
        })
        .property(ends_with("web", want(3, 2, 2, 0)));
    sweep_passes("builtins-disruption-unready", &world);
}

#[test]
fn a_disrupted_pod_that_is_not_deleted_counts_as_unhealthy_until_its_mark_expires() {
    let world = deployment_world("builtins-disruption-expiry")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web(3)).await?;
            w.apply(&budgets, &budget("web", web_selector(), int(1), None)).await?;
            w.wait_for(&budgets, "web", reaches(want(3, 1, 3, 2)), WAIT).await?;
            // What the eviction subresource writes when it allows an eviction; here the Pod is
            // then never deleted.
            let name = first_web_pod(&w).await?;
            let marked_at = sim::time::now_k8s();
            let disrupted = serde_json::Map::from_iter([(name.clone(), serde_json::json!(marked_at))]);
            let mark =
                serde_json::json!({ "status": { "disruptedPods": disrupted, "disruptionsAllowed": 1 } });
            let marked = budgets
                .patch_status("web", &PatchParams::default(), &Patch::Merge(&mark))
                .await
                .map_err(|e| workload_error("mark a pod disrupted", e))?;
            // The time as the server keeps it (Kubernetes times have whole seconds).
            let marked_at = marked
                .status
                .and_then(|s| s.disrupted_pods)
                .and_then(|d| d.get(&name).cloned())
                .ok_or_else(|| workload_error("mark a pod disrupted", "the mark did not stay"))?;
            w.wait_for(&budgets, "web", reaches(want(3, 1, 2, 1)), WAIT).await?;
            let unmarked = |pdb: Option<&PodDisruptionBudget>| {
                reaches(want(3, 1, 3, 2))(pdb)
                    && pdb.and_then(|p| p.status.as_ref()).is_some_and(|s| s.disrupted_pods.is_none())
            };
            w.wait_for(&budgets, "web", unmarked, Duration::from_secs(300)).await?;
            let waited = sim::time::now().duration_since(marked_at.0);
            let timeout = k8s_openapi::jiff::SignedDuration::try_from(disruption::DELETION_TIMEOUT)
                .map_err(|e| workload_error("deletion timeout", e))?;
            if waited <= timeout {
                return Err(workload_error(
                    "wait for the mark to expire",
                    format!("expired after {waited:?}"),
                ));
            }
            Ok(())
        })
        .property(ends_with("web", want(3, 1, 3, 2)))
        .property(FnProperty::at_end("the pod is reported NotDeleted", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let reported = snapshot::objects::<Event>(snap, Some("default")).into_iter().any(|e| {
                e.reason.as_deref() == Some("NotDeleted")
                    && e.involved_object.kind.as_deref() == Some("Pod")
                    && e.type_.as_deref() == Some("Warning")
                    && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(disruption::COMPONENT)
            });
            if reported { Ok(()) } else { Err("no NotDeleted event".to_owned()) }
        }));
    sweep_passes("builtins-disruption-expiry", &world);
}

#[test]
fn a_budget_selecting_no_pods_expects_none_and_allows_no_disruption() {
    let world = deployment_world("builtins-disruption-no-pods")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web(2)).await?;
            let nothing = LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_owned(), "nothing".to_owned())])),
                ..LabelSelector::default()
            };
            w.apply(&budgets, &budget("none", Some(nothing), int(1), None)).await?;
            // policy/v1: a missing selector selects nothing, an empty one every Pod.
            w.apply(&budgets, &budget("unset", None, int(0), None)).await?;
            w.apply(&budgets, &budget("everything", Some(LabelSelector::default()), int(1), None)).await?;
            w.wait_for(&budgets, "everything", reaches(want(2, 1, 2, 1)), WAIT).await?;
            w.wait_for(&budgets, "none", reaches(want(0, 1, 0, 0)), WAIT).await?;
            w.wait_for(&budgets, "unset", reaches(want(0, 0, 0, 0)), WAIT).await
        })
        .property(ends_with("none", want(0, 1, 0, 0)))
        .property(ends_with("unset", want(0, 0, 0, 0)))
        .property(ends_with("everything", want(2, 1, 2, 1)))
        .property(FnProperty::at_end("NoPods is published for the empty budget", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let events = snapshot::objects::<Event>(snap, Some("default"));
            let about = |name: &str| {
                events.iter().any(|e| {
                    e.reason.as_deref() == Some("NoPods")
                        && e.involved_object.name.as_deref() == Some(name)
                        && e.message.as_deref() == Some("No matching pods found")
                })
            };
            if about("none") { Ok(()) } else { Err(format!("no NoPods event for budget none: {events:?}")) }
        }));
    sweep_passes("builtins-disruption-no-pods", &world);
}

#[test]
fn a_percentage_over_pods_whose_controller_has_no_scale_fails_safe() {
    // A Pod controlled by a ConfigMap: a kind without a /scale subresource, so 50% of it cannot
    // be computed, and no disruption may be allowed.
    let world = builtins::disruption_controller(Sim::builder().scenario("builtins-disruption-fail-safe"))
        .workload(|w| async move {
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let owner =
                w.apply(&maps, &ConfigMap { metadata: in_default("owner"), ..ConfigMap::default() }).await?;
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let pod = Pod {
                metadata: ObjectMeta {
                    labels: Some(web_labels()),
                    owner_references: Some(vec![OwnerReference {
                        api_version: "v1".to_owned(),
                        kind: "ConfigMap".to_owned(),
                        name: "owner".to_owned(),
                        uid: owner.metadata.uid.unwrap_or_default(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    }]),
                    ..in_default("owned")
                },
                spec: template().spec,
                status: None,
            };
            w.apply(&pods, &pod).await?;
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&budgets, &budget("web", web_selector(), percent("50%"), None)).await?;
            let failed = |pdb: Option<&PodDisruptionBudget>| {
                pdb.and_then(condition) == Some(("False".to_owned(), disruption::SYNC_FAILED.to_owned()))
            };
            w.wait_for(&budgets, "web", failed, WAIT).await
        })
        .property(FnProperty::at_end("the budget failed safe, saying why", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let pdb =
                snapshot::object::<PodDisruptionBudget>(snap, Some("default"), "web").ok_or("no budget")?;
            let status = pdb.status.clone().unwrap_or_default();
            let c = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "DisruptionAllowed")
                .ok_or("no condition")?;
            let got = (status.disruptions_allowed, c.status.as_str(), c.reason.as_str(), c.message.as_str());
            let want =
                (Some(0), "False", "SyncFailed", "configmaps does not implement the scale subresource");
            if got == want { Ok(()) } else { Err(format!("{got:?}, want {want:?}")) }
        }));
    sweep_passes("builtins-disruption-fail-safe", &world);
}

fn bare_pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta { labels: Some(web_labels()), ..in_default(name) },
        spec: template().spec,
        status: None,
    }
}

#[test]
fn pods_without_a_controller_are_not_expected_by_a_percentage_so_it_allows_no_disruption() {
    let world = builtins::disruption_controller(builtins::kubelet(
        Sim::builder().scenario("builtins-disruption-unmanaged"),
    ))
    .workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply(&pods, &bare_pod("a")).await?;
        w.apply(&pods, &bare_pod("b")).await?;
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
        w.apply(&budgets, &budget("percent", web_selector(), None, percent("50%"))).await?;
        w.apply(&budgets, &budget("int", web_selector(), int(1), None)).await?;
        // Two healthy Pods, but a percentage of no controller's scale expects none: a budget
        // whose Pods nothing expects allows no disruption.
        w.wait_for(&budgets, "int", reaches(want(2, 1, 2, 1)), WAIT).await?;
        w.wait_for(&budgets, "percent", reaches(want(0, 0, 2, 0)), WAIT).await
    })
    .property(ends_with("int", want(2, 1, 2, 1)))
    .property(ends_with("percent", want(0, 0, 2, 0)))
    .property(FnProperty::at_end("the percentage budget warns of unmanaged pods", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let warned = |name: &str| {
            snapshot::objects::<Event>(snap, Some("default")).into_iter().any(|e| {
                e.reason.as_deref() == Some("UnmanagedPods")
                    && e.type_.as_deref() == Some("Warning")
                    && e.involved_object.name.as_deref() == Some(name)
            })
        };
        match (warned("percent"), warned("int")) {
            (true, false) => Ok(()),
            got => Err(format!("UnmanagedPods on (percent, int): {got:?}")),
        }
    }));
    sweep_passes("builtins-disruption-unmanaged", &world);
}

/// The status a budget with `minAvailable: min` over `app=web` must show in a snapshot: every
/// selected Pod expected, the Ready ones not being deleted healthy.
fn matches_the_pods(snap: &Snapshot, name: &str, min: i32) -> Result<(), String> {
    let pods: Vec<Pod> = snapshot::objects::<Pod>(snap, Some("default"))
        .into_iter()
        .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str) == Some("web"))
        .collect();
    let expected = i32::try_from(pods.len()).unwrap_or(i32::MAX);
    let healthy = pods.iter().filter(|p| !pod_state::is_terminating(p) && pod_state::is_ready(p)).count();
    let current = i32::try_from(healthy).unwrap_or(i32::MAX);
    let allowed = if expected > 0 { (current - min).max(0) } else { 0 };
    let pdb = snapshot::object::<PodDisruptionBudget>(snap, Some("default"), name);
    status_is(pdb.as_ref(), want(expected, min, current, allowed))
}

#[test]
fn under_swarm_faults_a_budget_over_a_scaling_deployment_ends_matching_its_pods() {
    let world = builtins::all(Sim::builder().scenario("builtins-disruption-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let wait = Duration::from_secs(400);
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let budgets: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web(3)).await?;
            w.apply(&budgets, &budget("web", web_selector(), int(2), None)).await?;
            w.wait_for(&budgets, "web", reaches(want(3, 2, 3, 1)), wait).await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 4 } })))
                .await?;
            w.wait_for(&budgets, "web", reaches(want(4, 2, 4, 2)), wait).await
        })
        .property(FnProperty::at_end("the budget's status matches its pods", |view| {
            matches_the_pods(view.cluster("default").ok_or("no cluster")?, "web", 2)
        }));
    let report = sweep(&SweepConfig::new("builtins-disruption-faults").seeds(40), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
