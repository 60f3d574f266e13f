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
