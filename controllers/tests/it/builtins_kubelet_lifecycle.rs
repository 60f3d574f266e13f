//! The kubelet-lite's Pod status at each stage, as the kubelet writes it: taken on as
//! `ContainerCreating` before it runs; init containers run in order, each to completion, and a
//! sidecar starts and keeps running; a readiness probe holds a container unready for its initial
//! delay; readiness gates hold `Ready` until another controller sets their conditions, which the
//! kubelet keeps.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, kubelet, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodCondition, PodReadinessGate, PodSpec, PodTemplateSpec, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(60);
const GATE: &str = "example.com/in-load-balancer";

fn container(name: &str) -> Container {
    Container { name: name.to_owned(), image: Some(format!("{name}:1")), ..Container::default() }
}

fn probe(initial_delay_seconds: i32, period_seconds: i32, success_threshold: i32) -> Probe {
    Probe {
        initial_delay_seconds: Some(initial_delay_seconds),
        period_seconds: Some(period_seconds),
        success_threshold: Some(success_threshold),
        ..Probe::default()
    }
}

/// `setup` (runs to completion), `proxy` (a sidecar whose startup probe passes after 3 s),
/// `migrate` (runs to completion), then `app`.
fn spec_with_init_containers() -> PodSpec {
    PodSpec {
        init_containers: Some(vec![
            container("setup"),
            Container {
                restart_policy: Some("Always".to_owned()),
                startup_probe: Some(probe(3, 1, 1)),
                ..container("proxy")
            },
            container("migrate"),
        ]),
        containers: vec![container("app")],
        termination_grace_period_seconds: Some(1),
        ..PodSpec::default()
    }
}

fn pod(name: &str, spec: PodSpec) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

fn status_of<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .find(|c| c.name == name)
}

fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// A condition as (status, reason, message).
fn condition_view(pod: &Pod, type_: &str) -> Option<(String, Option<String>, Option<String>)> {
    condition(pod, type_).map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn running(status: Option<&ContainerStatus>) -> bool {
    status.and_then(|s| s.state.as_ref()).is_some_and(|s| s.running.is_some())
}

fn completed(status: Option<&ContainerStatus>) -> bool {
    status.and_then(|s| s.state.as_ref()?.terminated.as_ref()).is_some_and(|t| t.exit_code == 0)
}

fn waiting_reason(status: Option<&ContainerStatus>) -> Option<String> {
    status.and_then(|s| s.state.as_ref()?.waiting.as_ref()?.reason.clone())
}

fn seconds_between(
    from: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    to: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<i64> {
    Some(to?.0.as_second() - from?.0.as_second())
}

fn pods_in(view: &sim::StepView<'_>) -> Result<Vec<Pod>, String> {
    Ok(snapshot::objects::<Pod>(view.cluster("default").ok_or("no cluster")?, Some("default")))
}

fn end_pod(view: &sim::EndView<'_>, name: &str) -> Result<Pod, String> {
    let snap = view.cluster("default").ok_or("no cluster")?;
    snapshot::object::<Pod>(snap, Some("default"), name).ok_or_else(|| format!("pod {name} gone"))
}

#[test]
fn a_pod_is_taken_on_as_container_creating_then_runs_with_the_kubelets_conditions() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", PodSpec { containers: vec![container("app")], ..PodSpec::default() }))
                .await?;
            // The start delay (100 ms or more) leaves the accepted status in view for a poll.
            let creating = |p: Option<&Pod>| {
                p.is_some_and(|p| waiting_reason(status_of(p, "app")).as_deref() == Some("ContainerCreating"))
            };
            w.wait_for(&pods, "app", creating, WAIT).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::always(
            "a Pod taken on but not started is Pending, unready, with no IP",
            |view| {
                for p in pods_in(view)? {
                    let status = p.status.clone().unwrap_or_default();
                    if waiting_reason(status_of(&p, "app")).as_deref() != Some("ContainerCreating") {
                        continue;
                    }
                    let found = (
                        pod_state::phase(&p).to_owned(),
                        status.start_time.is_some(),
                        status.host_ip.clone(),
                        status.pod_ip.clone(),
                        condition_view(&p, "PodReadyToStartContainers").map(|c| c.0),
                        condition_view(&p, "Ready"),
                        status.qos_class.clone(),
                    );
                    let unready = (
                        "False".to_owned(),
                        Some("ContainersNotReady".to_owned()),
                        Some("containers with unready status: [app]".to_owned()),
                    );
                    let want = (
                        "Pending".to_owned(),
                        true,
                        Some(kubelet::HOST_IP.to_owned()),
                        None,
                        Some("False".to_owned()),
                        Some(unready),
                        Some("BestEffort".to_owned()),
                    );
                    if found != want {
                        return Err(format!("{found:?}, want {want:?}"));
                    }
                }
                Ok(())
            },
        ))
        .property(FnProperty::at_end(
            "running, ready, the conditions in the kubelet's order, QoS kept",
            |view| {
                let p = end_pod(view, "app")?;
                let status = p.status.clone().unwrap_or_default();
                let types: Vec<String> =
                    status.conditions.iter().flatten().map(|c| c.type_.clone()).collect();
                let found = (
                    pod_state::phase(&p).to_owned(),
                    types,
                    status.pod_ip.is_some(),
                    status_of(&p, "app").map(|c| (c.ready, c.started)),
                    status.qos_class.clone(),
                );
                let want = (
                    "Running".to_owned(),
                    ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
                        .map(str::to_owned)
                        .to_vec(),
                    true,
                    Some((true, Some(true))),
                    Some("BestEffort".to_owned()),
                );
                if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
            },
        ));
    let report = sweep(&SweepConfig::new("builtins-kubelet-accepted").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// What must hold at every write for a Pod of [`spec_with_init_containers`]: an init container
/// runs only once those before it completed (or, sidecars, started), the app only once all did,
/// and `Initialized` says which are not done.
fn init_order_holds(p: &Pod) -> Result<(), String> {
    let setup_done = completed(status_of(p, "setup"));
    let proxy_started = status_of(p, "proxy").is_some_and(|s| s.started == Some(true));
    let migrate_done = completed(status_of(p, "migrate"));
    let name = p.metadata.name.clone().unwrap_or_default();
    if running(status_of(p, "proxy")) && !setup_done {
        return Err(format!("{name}: proxy runs before setup completed"));
    }
    if (running(status_of(p, "migrate")) || migrate_done) && !(setup_done && proxy_started) {
        return Err(format!("{name}: migrate ran before setup completed and proxy started"));
    }
    if running(status_of(p, "app")) && !(setup_done && proxy_started && migrate_done) {
        return Err(format!("{name}: app runs before the init containers are done"));
    }
    if pod_state::phase(p) == pod_state::PHASE_PENDING
        && p.status.as_ref().is_some_and(|s| s.start_time.is_some())
    {
        let incomplete: Vec<&str> =
            [("setup", setup_done), ("proxy", proxy_started), ("migrate", migrate_done)]
                .into_iter()
                .filter(|(_, done)| !done)
                .map(|(n, _)| n)
                .collect();
        let want = Some((
            "False".to_owned(),
            Some("ContainersNotInitialized".to_owned()),
            Some(format!("containers with incomplete status: [{}]", incomplete.join(" "))),
        ));
        if condition_view(p, "Initialized") != want {
            return Err(format!(
                "{name}: Initialized is {:?}, want {want:?}",
                condition_view(p, "Initialized")
            ));
        }
        let main = waiting_reason(status_of(p, "app"));
        if main.as_deref() != Some("PodInitializing") {
            return Err(format!("{name}: app waits with {main:?}, want PodInitializing"));
        }
    }
    Ok(())
}

#[test]
fn init_containers_run_in_order_to_completion_and_a_sidecar_keeps_running() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", spec_with_init_containers())).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::always("init containers in order", |view| {
            pods_in(view)?.iter().try_for_each(init_order_holds)
        }))
        .property(FnProperty::at_end("every init container done, the sidecar running", |view| {
            let p = end_pod(view, "app")?;
            let state = |name: &str| {
                let s = status_of(&p, name);
                (running(s), completed(s), s.map(|s| s.ready), s.and_then(|s| s.started))
            };
            let found = (
                state("setup"),
                state("proxy"),
                state("migrate"),
                state("app"),
                condition_view(&p, "Initialized").map(|c| c.0),
                pod_state::is_ready(&p),
            );
            let want = (
                (false, true, Some(true), Some(false)),
                (true, false, Some(true), Some(true)),
                (false, true, Some(true), Some(false)),
                (true, false, Some(true), Some(true)),
                Some("True".to_owned()),
                true,
            );
            if found != want {
                return Err(format!("{found:?}, want {want:?}"));
            }
            // Each ran after the one before it: setup, then the sidecar, then migrate, then the app.
            let times = |name: &str| {
                let state = status_of(&p, name).and_then(|s| s.state.clone()).unwrap_or_default();
                match (state.running, state.terminated) {
                    (Some(r), _) => (r.started_at.map(|t| t.0), None),
                    (_, Some(t)) => (t.started_at.map(|t| t.0), t.finished_at.map(|t| t.0)),
                    _ => (None, None),
                }
            };
            let (setup, proxy, migrate, app) =
                (times("setup"), times("proxy"), times("migrate"), times("app"));
            let order = [setup.0, setup.1, proxy.0, migrate.0, migrate.1, app.0];
            if order.iter().any(Option::is_none) || !order.windows(2).all(|w| w[0] <= w[1]) {
                return Err(format!("start and finish times out of order: {order:?}"));
            }
            // The sidecar's startup probe (3 s) held the next init container back.
            let proxy_since =
                status_of(&p, "proxy").and_then(|s| s.state.as_ref()?.running.as_ref()?.started_at.clone());
            let migrate_since = status_of(&p, "migrate")
                .and_then(|s| s.state.as_ref()?.terminated.as_ref()?.started_at.clone());
            match seconds_between(proxy_since.as_ref(), migrate_since.as_ref()) {
                Some(gap) if gap >= 3 => Ok(()),
                gap => Err(format!("migrate started {gap:?} s after the sidecar, want 3 or more")),
            }
        }))
        .property(FnProperty::at_end("each init container's start published", |view| {
            use k8s_openapi::api::events::v1::Event;
            let snap = view.cluster("default").ok_or("no cluster")?;
            let mut started: Vec<String> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("Started"))
                .filter_map(|e| e.regarding.and_then(|r| r.field_path))
                .collect();
            started.sort();
            let want = [
                "spec.containers{app}",
                "spec.initContainers{migrate}",
                "spec.initContainers{proxy}",
                "spec.initContainers{setup}",
            ];
            if started == want { Ok(()) } else { Err(format!("{started:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-init").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_readiness_probe_holds_a_running_container_unready_for_its_initial_delay() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            // Ready after 20 s and a second success 5 s later.
            let app = Container { readiness_probe: Some(probe(20, 5, 2)), ..container("app") };
            w.apply(&pods, &pod("app", PodSpec { containers: vec![app], ..PodSpec::default() })).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::always("never ready before the probe's delay", |view| {
            for p in pods_in(view)? {
                let since =
                    status_of(&p, "app").and_then(|s| s.state.as_ref()?.running.as_ref()?.started_at.clone());
                let ready_at = condition(&p, "Ready")
                    .filter(|c| c.status == "True")
                    .and_then(|c| c.last_transition_time.clone());
                if ready_at.is_none() {
                    continue;
                }
                match seconds_between(since.as_ref(), ready_at.as_ref()) {
                    Some(25..) => {}
                    gap => {
                        return Err(format!("ready {gap:?} s after the container started, want 25 or more"));
                    }
                }
            }
            Ok(())
        }))
        .property(FnProperty::at_end("ready", |view| {
            let p = end_pod(view, "app")?;
            let found =
                (condition_view(&p, "ContainersReady").map(|c| c.0), status_of(&p, "app").map(|s| s.ready));
            if found == (Some("True".to_owned()), Some(true)) { Ok(()) } else { Err(format!("{found:?}")) }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-kubelet-readiness-probe").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

fn set_gate(status: &str) -> Patch<serde_json::Value> {
    // A strategic merge patch, as a load balancer controller sends: conditions merge by type.
    Patch::Strategic(
        serde_json::json!({ "status": { "conditions": [ { "type": GATE, "status": status } ] } }),
    )
}

#[test]
fn readiness_gates_hold_ready_until_their_conditions_are_true_and_the_kubelet_keeps_them() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let spec = PodSpec {
                containers: vec![container("app")],
                readiness_gates: Some(vec![PodReadinessGate { condition_type: GATE.to_owned() }]),
                ..PodSpec::default()
            };
            w.apply(&pods, &pod("app", spec)).await?;
            let ready_says = |status: &'static str, reason: Option<&'static str>, message: Option<String>| {
                move |p: Option<&Pod>| {
                    p.is_some_and(|p| {
                        condition_view(p, "Ready") == Some((status.to_owned(), reason.map(str::to_owned), message.clone()))
                    })
                }
            };
            let missing = format!("corresponding condition of pod readiness gate \"{GATE}\" does not exist.");
            w.wait_for(&pods, "app", ready_says("False", Some("ReadinessGatesNotReady"), Some(missing)), WAIT).await?;
            let patch_gate = |status: &'static str| {
                let pods = pods.clone();
                async move {
                    pods.patch_status("app", &PatchParams::default(), &set_gate(status))
                        .await
                        .map(|_| ())
                        .map_err(|e| WorkloadError { step: 0, action: "set the readiness gate".to_owned(), reason: e.to_string() })
                }
            };
            patch_gate("False").await?;
            let not_true = format!("the status of pod readiness gate \"{GATE}\" is not \"True\", but False");
            w.wait_for(&pods, "app", ready_says("False", Some("ReadinessGatesNotReady"), Some(not_true)), WAIT).await?;
            patch_gate("True").await?;
            w.wait_for(&pods, "app", ready_says("True", None, None), WAIT).await?;
            // The kubelet's next writes (a failing readiness probe, then a passing one) keep the
            // gate's condition.
            let unready = |v: Option<&str>| {
                serde_json::json!({ "metadata": { "annotations": { kubelet::UNREADY_ANNOTATION: v } } })
            };
            w.patch(&pods, "app", &Patch::Merge(unready(Some("true")))).await?;
            let unready_message = Some("containers with unready status: [app]".to_owned());
            w.wait_for(&pods, "app", ready_says("False", Some("ContainersNotReady"), unready_message), WAIT).await?;
            w.patch(&pods, "app", &Patch::Merge(unready(None))).await?;
            w.wait_for(&pods, "app", ready_says("True", None, None), WAIT).await
        })
        .property(FnProperty::always("never Ready while the gate is not True", |view| {
            for p in pods_in(view)? {
                let gate = condition(&p, GATE).map(|c| c.status.as_str());
                if pod_state::is_ready(&p) && gate != Some("True") {
                    return Err(format!("Ready with the gate {gate:?}"));
                }
            }
            Ok(())
        }))
        .property(FnProperty::at_end("the gate's condition kept, first", |view| {
            let p = end_pod(view, "app")?;
            let types: Vec<String> = p.status.iter().flat_map(|s| s.conditions.iter().flatten()).map(|c| c.type_.clone()).collect();
            let want = [GATE, "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
            let gate = condition(&p, GATE).map(|c| c.status.clone());
            if types == want && gate.as_deref() == Some("True") {
                Ok(())
            } else {
                Err(format!("{types:?} with the gate {gate:?}"))
            }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-kubelet-readiness-gates").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

fn web_with_init_containers() -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    let mut spec = spec_with_init_containers();
    spec.containers[0].readiness_probe = Some(probe(5, 5, 1));
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
                spec: Some(spec),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

// A kubelet-lite restarted between two stages goes on from the stage the status shows; stale
// reads and API errors do not take a stage back or skip one.
#[test]
fn under_swarm_faults_pods_with_init_containers_and_probes_still_start_in_order() {
    let world = builtins::all(Sim::builder().scenario("builtins-kubelet-lifecycle-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &web_with_init_containers()).await?;
            let available = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref())
                    .is_some_and(|s| s.available_replicas == Some(2) && s.updated_replicas == Some(2))
            };
            w.wait_for(&deployments, "web", available, Duration::from_secs(400)).await
        })
        .property(FnProperty::always("init containers in order", |view| {
            pods_in(view)?.iter().try_for_each(init_order_holds)
        }));
    let report =
        sweep(&SweepConfig::new("builtins-kubelet-lifecycle-faults").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

// Since 1.27 the kubelet gives a deleted Pod a terminal phase once its containers are stopped,
// before the Pod goes: a Pod held by a finalizer stays `Failed`, its containers killed.
#[test]
fn a_deleted_pod_held_by_a_finalizer_is_left_failed_with_its_containers_killed() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let mut held = pod(
                "app",
                PodSpec {
                    containers: vec![container("app")],
                    termination_grace_period_seconds: Some(2),
                    ..PodSpec::default()
                },
            );
            held.metadata.finalizers = Some(vec!["example.com/hold".to_owned()]);
            w.apply(&pods, &held).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.delete(&pods, "app").await?;
            w.wait_for(
                &pods,
                "app",
                |p| p.is_some_and(|p| pod_state::phase(p) == pod_state::PHASE_FAILED),
                WAIT,
            )
            .await?;
            let release = serde_json::json!({ "metadata": { "finalizers": null } });
            w.patch(&pods, "app", &Patch::Merge(release)).await?;
            w.wait_for(&pods, "app", |p| p.is_none(), WAIT).await
        })
        .property(FnProperty::always("a deleted Pod that failed shows its containers killed", |view| {
            for p in pods_in(view)? {
                if pod_state::phase(&p) != pod_state::PHASE_FAILED {
                    continue;
                }
                let app = status_of(&p, "app")
                    .and_then(|s| s.state.as_ref()?.terminated.as_ref())
                    .map(|t| (t.exit_code, t.reason.clone()));
                let found = (
                    app,
                    condition_view(&p, "Ready").map(|c| (c.0, c.1)),
                    condition_view(&p, "PodReadyToStartContainers").map(|c| c.0),
                    p.metadata.deletion_timestamp.is_some(),
                );
                let want = (
                    Some((137, Some("Error".to_owned()))),
                    Some(("False".to_owned(), Some("PodFailed".to_owned()))),
                    Some("False".to_owned()),
                    true,
                );
                if found != want {
                    return Err(format!("{found:?}, want {want:?}"));
                }
            }
            Ok(())
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-killed").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

// `podReplacementPolicy: Failed`: the Job controller replaces a deleted Pod only once it is
// `Failed`, which only the kubelet makes it; a kubelet that removed deleted Pods without a
// terminal phase left such a Job waiting for ever.
#[test]
fn a_job_that_replaces_only_failed_pods_replaces_a_deleted_one_once_the_kubelet_failed_it() {
    use k8s_openapi::api::batch::v1::{Job, JobSpec};
    let job = Job {
        metadata: ObjectMeta {
            name: Some("pi".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            completions: Some(1),
            backoff_limit: Some(3),
            pod_replacement_policy: Some("Failed".to_owned()),
            template: PodTemplateSpec {
                // Each run lasts 20 s: still running when the workload deletes it.
                metadata: Some(ObjectMeta {
                    annotations: Some([(kubelet::RUN_SECONDS_ANNOTATION.to_owned(), "20".to_owned())].into()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container("pi")],
                    restart_policy: Some("Never".to_owned()),
                    termination_grace_period_seconds: Some(3),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    };
    let world = builtins::kubelet(builtins::job_controller(Sim::builder()))
        .workload(move |w| {
            let job = job.clone();
            async move {
                let jobs: Api<Job> = Api::namespaced(w.client(), "default");
                let pods: Api<Pod> = Api::namespaced(w.client(), "default");
                w.apply(&jobs, &job).await?;
                let running = |ps: &[Pod]| ps.iter().any(|p| pod_state::phase(p) == pod_state::PHASE_RUNNING);
                w.wait_for_all(&pods, running, WAIT).await?;
                let listed = pods.list(&Default::default()).await.map_err(|e| WorkloadError {
                    step: 0,
                    action: "list pods".to_owned(),
                    reason: e.to_string(),
                })?;
                let first = listed
                    .items
                    .iter()
                    .find(|p| pod_state::phase(p) == pod_state::PHASE_RUNNING)
                    .and_then(|p| p.metadata.name.clone())
                    .unwrap_or_default();
                w.delete(&pods, &first).await?;
                let complete = |j: Option<&Job>| {
                    j.and_then(|j| j.status.as_ref()?.conditions.as_ref())
                        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Complete" && c.status == "True"))
                };
                w.wait_for(&jobs, "pi", complete, Duration::from_secs(300)).await
            }
        })
        .property(FnProperty::always("never two Pods not yet finished", |view| {
            let live: Vec<String> = pods_in(view)?
                .iter()
                .filter(|p| !pod_state::is_finished(p))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            if live.len() <= 1 { Ok(()) } else { Err(format!("{live:?} at once")) }
        }))
        .property(FnProperty::at_end("complete, the deleted Pod counted failed", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let status = snapshot::object::<Job>(snap, Some("default"), "pi")
                .and_then(|j| j.status)
                .ok_or("no job status")?;
            let found = (status.succeeded, status.failed);
            if found == (Some(1), Some(1)) { Ok(()) } else { Err(format!("succeeded, failed: {found:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-replace-failed").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

// `activeDeadlineSeconds` on a Pod: the kubelet ends it once that long has passed since its
// `startTime` (Argo and Tekton set it on their Pods).
#[test]
fn a_pod_past_its_active_deadline_is_failed_with_deadline_exceeded() {
    use k8s_openapi::api::events::v1::Event;
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let spec = PodSpec {
                containers: vec![container("app")],
                active_deadline_seconds: Some(8),
                ..PodSpec::default()
            };
            w.apply(&pods, &pod("app", spec)).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_finished), WAIT).await
        })
        .property(FnProperty::at_end("failed at its deadline, DeadlineExceeded", |view| {
            let p = end_pod(view, "app")?;
            let status = p.status.clone().unwrap_or_default();
            let ended =
                status_of(&p, "app").and_then(|s| s.state.as_ref()?.terminated.as_ref()?.finished_at.clone());
            let found = (
                pod_state::phase(&p).to_owned(),
                status.reason.clone(),
                status.message.clone(),
                seconds_between(status.start_time.as_ref(), ended.as_ref()),
            );
            let want = (
                "Failed".to_owned(),
                Some("DeadlineExceeded".to_owned()),
                Some(kubelet::DEADLINE_EXCEEDED_MESSAGE.to_owned()),
                Some(8),
            );
            if found != want {
                return Err(format!("{found:?}, want {want:?}"));
            }
            let snap = view.cluster("default").ok_or("no cluster")?;
            let events = snapshot::objects::<Event>(snap, Some("default"));
            if events.iter().any(|e| e.reason.as_deref() == Some("DeadlineExceeded")) {
                Ok(())
            } else {
                Err("no DeadlineExceeded event".to_owned())
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-deadline").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_debugging_container_added_to_a_running_pod_runs_beside_its_containers() {
    // `kubectl debug web --image=busybox`: a patch of `pods/web/ephemeralcontainers`; the
    // kubelet starts it (its status running, `Pulled`, `Created` and `Started` for it), and the
    // Pod's own containers and readiness are as they were.
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-ephemeral")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(w.client(), "default");
        w.apply(&pods, &pod("web", PodSpec { containers: vec![container("app")], ..PodSpec::default() }))
            .await?;
        w.wait_for(&pods, "web", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
        let debug = serde_json::json!({"spec": {"ephemeralContainers": [
            {"name": "debugger-abcde", "image": "busybox", "targetContainerName": "app", "stdin": true, "tty": true}]}});
        pods.patch_subresource("ephemeralcontainers", "web", &PatchParams::default(), &Patch::Strategic(debug))
            .await
            .map_err(|e| crate::builtins_deployment::failed_step("patch ephemeralcontainers", e.to_string()))?;
        let debugging = |p: Option<&Pod>| {
            p.is_some_and(|p| {
                let statuses = p.status.as_ref().and_then(|s| s.ephemeral_container_statuses.as_ref());
                let debugger = statuses.into_iter().flatten().find(|s| s.name == "debugger-abcde");
                running(debugger) && pod_state::is_running_and_ready(p)
            })
        };
        w.wait_for(&pods, "web", debugging, WAIT).await?;
        let started = |events: &[k8s_openapi::api::core::v1::Event]| {
            events.iter().any(|e| {
                e.reason.as_deref() == Some("Started")
                    && e.involved_object.field_path.as_deref() == Some("spec.ephemeralContainers{debugger-abcde}")
            })
        };
        w.wait_for_all(&events, started, WAIT).await
    });
    let report = sweep(&SweepConfig::new("builtins-kubelet-ephemeral").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

fn failing_init(name: &str, restart_policy: &str) -> Pod {
    let mut pod =
        pod(name, PodSpec { restart_policy: Some(restart_policy.to_owned()), ..spec_with_init_containers() });
    pod.metadata.annotations = Some(BTreeMap::from([
        (kubelet::FAIL_INIT_ANNOTATION.to_owned(), "migrate".to_owned()),
        (kubelet::EXIT_CODE_ANNOTATION.to_owned(), "3".to_owned()),
    ]));
    pod
}

fn init_status<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status.as_ref()?.init_container_statuses.as_ref()?.iter().find(|c| c.name == name)
}

#[test]
fn a_failing_init_container_fails_the_pod_or_crash_loops_and_its_containers_never_start() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-init-failure")).workload(
        |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &failing_init("once", "Never")).await?;
            w.apply(&pods, &failing_init("again", "Always")).await?;
            // `Never`: Init:Error, the Pod Failed, `app` never created.
            let failed = |p: Option<&Pod>| {
                p.is_some_and(|p| {
                    let migrate =
                        init_status(p, "migrate").and_then(|s| s.state.as_ref()?.terminated.clone());
                    pod_state::phase(p) == "Failed"
                        && migrate.is_some_and(|t| t.exit_code == 3 && t.reason.as_deref() == Some("Error"))
                        && completed(init_status(p, "setup"))
                        && waiting_reason(status_of(p, "app")).as_deref() == Some("PodInitializing")
                })
            };
            w.wait_for(&pods, "once", failed, WAIT).await?;
            // `Always`: Init:CrashLoopBackOff, restarted with back-off, the Pod Pending.
            let looping = |p: Option<&Pod>| {
                p.is_some_and(|p| {
                    let migrate = init_status(p, "migrate");
                    pod_state::phase(p) == "Pending"
                        && waiting_reason(migrate).as_deref() == Some("CrashLoopBackOff")
                        && migrate.is_some_and(|s| s.restart_count >= 3)
                        && waiting_reason(status_of(p, "app")).as_deref() == Some("PodInitializing")
                        && condition_view(p, "Initialized").is_some_and(|c| {
                            c.0 == "False"
                                && c.2.as_deref() == Some("containers with incomplete status: [migrate]")
                        })
                })
            };
            w.wait_for(&pods, "again", looping, WAIT).await?;
            // Its cause fixed, it completes at its next restart and the Pod runs.
            let fixed =
                serde_json::json!({"metadata": {"annotations": {kubelet::FAIL_INIT_ANNOTATION: null}}});
            w.patch(&pods, "again", &Patch::Merge(fixed)).await?;
            // It keeps the restarts it made, as `kubectl get pods` counts them.
            let recovered = |p: Option<&Pod>| {
                p.is_some_and(|p| {
                    let migrate = init_status(p, "migrate");
                    pod_state::is_running_and_ready(p)
                        && completed(migrate)
                        && migrate.is_some_and(|s| s.restart_count >= 3 && s.last_state.is_some())
                })
            };
            w.wait_for(&pods, "again", recovered, WAIT * 2).await
        },
    );
    let report = sweep(&SweepConfig::new("builtins-kubelet-init-failure").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
