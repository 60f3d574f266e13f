//! The kubelet-lite: a Pod is bound to the node, starts after a delay and becomes Running and
//! Ready; failing containers give a Failed Pod (restartPolicy Never) or CrashLoopBackOff; a
//! deleted Pod is removed only after its grace period.

use std::time::Duration;

use controllers::builtins::{self, kubelet, pod_state, snapshot};
use k8s_openapi::api::core::v1::{Container, Event, Pod, PodSpec};
use sim::api::{Api, ObjectMeta};
use sim::{FnProperty, Sim, SweepConfig, TraceEvent, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(30);

fn pod(name: &str, restart_policy: &str, fail: bool, grace_seconds: i64) -> Pod {
    let annotations = fail.then(|| [(kubelet::FAIL_ANNOTATION.to_owned(), "true".to_owned())].into());
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            annotations,
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("app:1".to_owned()),
                ..Container::default()
            }],
            restart_policy: Some(restart_policy.to_owned()),
            termination_grace_period_seconds: Some(grace_seconds),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn phase_is(want: &'static str) -> impl Fn(Option<&Pod>) -> bool {
    move |pod| pod.is_some_and(|p| pod_state::phase(p) == want)
}

#[test]
fn a_pod_is_bound_to_the_node_and_becomes_running_and_ready() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Always", false, 1)).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::at_end("bound, running, ready, with an IP", |view| {
            let p =
                snapshot::object::<Pod>(view.cluster("default").ok_or("no cluster")?, Some("default"), "app")
                    .ok_or("gone")?;
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
            let status = p.status.clone().unwrap_or_default();
            let container_ready =
                status.container_statuses.unwrap_or_default().iter().map(|c| c.ready).collect::<Vec<_>>();
            // Single-stack: `podIPs` and `hostIPs` hold the same one address.
            let pod_ips: Vec<String> =
                status.pod_ips.unwrap_or_default().into_iter().map(|ip| ip.ip).collect();
            let host_ips: Vec<String> =
                status.host_ips.unwrap_or_default().into_iter().map(|ip| ip.ip).collect();
            let found = (
                node.as_deref(),
                status.host_ip.as_deref(),
                status.pod_ip.is_some(),
                container_ready,
                pod_ips == status.pod_ip.into_iter().collect::<Vec<_>>(),
                host_ips,
            );
            let want = (
                Some(kubelet::NODE_NAME),
                Some(kubelet::HOST_IP),
                true,
                vec![true],
                true,
                vec![kubelet::HOST_IP.to_owned()],
            );
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-start").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_failing_container_with_restart_policy_never_gives_a_failed_pod() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Never", true, 1)).await?;
            w.wait_for(&pods, "app", phase_is(pod_state::PHASE_FAILED), WAIT).await
        })
        .property(FnProperty::at_end("failed with exit code 1", |view| {
            let p =
                snapshot::object::<Pod>(view.cluster("default").ok_or("no cluster")?, Some("default"), "app")
                    .ok_or("gone")?;
            let exit_codes: Vec<Option<i32>> = p
                .status
                .clone()
                .unwrap_or_default()
                .container_statuses
                .unwrap_or_default()
                .iter()
                .map(|c| c.state.as_ref().and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code))
                .collect();
            let found = (pod_state::phase(&p).to_owned(), pod_state::is_ready(&p), exit_codes);
            let want = ("Failed".to_owned(), false, vec![Some(kubelet::FAILED_EXIT_CODE)]);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-fail").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

// A bare Pod's containers end as a Job's do when they would not be restarted (a Helm test, a
// `kubectl run --restart=Never`), and run on with `Always`: Succeeded, Succeeded, Running.
#[test]
fn a_bare_pod_that_would_not_be_restarted_runs_to_completion_and_one_with_always_runs_on() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            for (name, policy) in [("once", "Never"), ("retry", "OnFailure"), ("server", "Always")] {
                w.apply(&pods, &pod(name, policy, false, 1)).await?;
            }
            w.wait_for(&pods, "once", phase_is(pod_state::PHASE_SUCCEEDED), WAIT).await?;
            w.wait_for(&pods, "retry", phase_is(pod_state::PHASE_SUCCEEDED), WAIT).await?;
            w.wait_for(&pods, "server", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::at_end("the server still runs", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let p = snapshot::object::<Pod>(snap, Some("default"), "server").ok_or("gone")?;
            if pod_state::is_running_and_ready(&p) { Ok(()) } else { Err(format!("{:?}", p.status)) }
        }))
        // A finished Pod keeps its addresses and start time; its sandbox is gone.
        .property(FnProperty::at_end("a finished Pod keeps its addresses and start time", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let p = snapshot::object::<Pod>(snap, Some("default"), "once").ok_or("gone")?;
            let status = p.status.clone().unwrap_or_default();
            let sandbox = status.conditions.iter().flatten().find(|c| c.type_ == "PodReadyToStartContainers");
            let found = (
                status.host_ip.as_deref(),
                status.pod_ip.is_some() && status.pod_ips.is_some_and(|ips| ips.len() == 1),
                status.start_time.is_some(),
                sandbox.map(|c| c.status.as_str()),
            );
            if found == (Some(kubelet::HOST_IP), true, true, Some("False")) {
                Ok(())
            } else {
                Err(format!("{found:?}"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-complete").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_failing_container_with_restart_policy_always_is_in_crash_loop_back_off_and_not_ready() {
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Always", true, 1)).await?;
            w.wait_for(&pods, "app", phase_is(pod_state::PHASE_RUNNING), WAIT).await
        })
        .property(FnProperty::at_end("crash loop", |view| {
            let p =
                snapshot::object::<Pod>(view.cluster("default").ok_or("no cluster")?, Some("default"), "app")
                    .ok_or("gone")?;
            let waiting: Vec<(Option<String>, i32)> = p
                .status
                .clone()
                .unwrap_or_default()
                .container_statuses
                .unwrap_or_default()
                .iter()
                .map(|c| {
                    (
                        c.state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.clone()),
                        c.restart_count,
                    )
                })
                .collect();
            let found = (pod_state::is_ready(&p), waiting);
            let want = (false, vec![(Some("CrashLoopBackOff".to_owned()), 1)]);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-crashloop").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// What a crash-looping container's status says: (restartCount, waiting message, last exit code).
fn crash_state(p: &Pod) -> Option<(i32, String, i32)> {
    let status = p.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
    let message = status.state?.waiting?.message?;
    let exit_code = status.last_state?.terminated?.exit_code;
    Some((status.restart_count, message, exit_code))
}

#[test]
fn a_crash_looping_container_is_restarted_after_a_doubling_back_off_and_the_world_still_quiesces() {
    // The kubelet restarts at once, then after 10 s, 20 s, 40 s...: 75 s after the first
    // CrashLoopBackOff it has restarted four times and backs off 1m20s. The restarts go on while
    // the workload waits, and do not keep the world from quiescing after it.
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let mut p = pod("app", "Always", true, 1);
            let annotations = p.metadata.annotations.get_or_insert_default();
            annotations.insert(kubelet::EXIT_CODE_ANNOTATION.to_owned(), "3".to_owned());
            w.apply(&pods, &p).await?;
            w.wait_for(&pods, "app", |p| p.and_then(crash_state).is_some(), WAIT).await?;
            madsim::time::sleep(Duration::from_secs(75)).await;
            Ok(())
        })
        .property(FnProperty::at_end("restarted four times, backing off 1m20s", |view| {
            let p =
                snapshot::object::<Pod>(view.cluster("default").ok_or("no cluster")?, Some("default"), "app")
                    .ok_or("gone")?;
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let message = format!("back-off 1m20s restarting failed container=app pod=app_default({uid})");
            // One BackOff Warning for each of the four back-offs, correlated into one Event.
            let cluster = view.cluster("default").ok_or("no cluster")?;
            let back_offs: Vec<(Option<i32>, Option<String>)> =
                snapshot::objects::<Event>(cluster, Some("default"))
                    .into_iter()
                    .filter(|e| e.reason.as_deref() == Some("BackOff"))
                    .map(|e| (e.count, e.message))
                    .collect();
            let found = (crash_state(&p), pod_state::is_ready(&p), pod_state::phase(&p), back_offs);
            let event = format!("Back-off restarting failed container app in pod app_default({uid})");
            let want = (Some((4, message, 3)), false, pod_state::PHASE_RUNNING, vec![(Some(4), Some(event))]);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-kubelet-crashloop-backoff").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
    // The run ends a quiet period after the workload, not at the next restart (1m20s later).
    let run = world.run(1);
    assert!(run.stats.virtual_millis < 100_000, "ended at {} ms", run.stats.virtual_millis);
}

/// The virtual times of the workload's delete of `app` and of the kubelet's final delete.
fn delete_times(report: &sim::RunReport) -> (Option<u64>, Option<u64>) {
    let mut first = None;
    let mut last = None;
    for entry in report.trace.entries() {
        if let TraceEvent::ApiRequest { verb: "delete", target, .. } = &entry.event
            && target.ends_with("pods/default/app")
        {
            if &*entry.node == sim::world::WORKLOAD_NODE {
                first = Some(entry.at_nanos);
            } else if &*entry.node == kubelet::NODE {
                last = Some(entry.at_nanos);
            }
        }
    }
    (first, last)
}

#[test]
fn a_deleted_pod_is_removed_by_the_kubelet_after_its_grace_period() {
    const GRACE_SECONDS: i64 = 5;
    let world = builtins::kubelet(Sim::builder())
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Always", false, GRACE_SECONDS)).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.delete(&pods, "app").await?;
            w.wait_for(&pods, "app", |p| p.is_none(), WAIT).await
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert!(report.verdict.is_pass(), "seed {seed}: {}", report.verdict);
        let (Some(deleted), Some(removed)) = delete_times(&report) else {
            panic!("seed {seed}: no deletes in\n{}", report.trace.render())
        };
        let waited = Duration::from_nanos(removed - deleted);
        assert!(waited >= Duration::from_secs(5), "seed {seed}: removed after {waited:?}");
        // Within one watch delivery and one API latency of the grace period.
        assert!(
            waited < Duration::from_secs(5) + Duration::from_millis(50),
            "seed {seed}: removed after {waited:?}"
        );
    }
}

#[test]
fn a_liveness_failure_while_a_pod_waits_out_a_grace_period_longer_than_the_wait_names_the_grace_period() {
    let report = builtins::kubelet(Sim::builder())
        .liveness_wait(Duration::from_secs(20))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Always", false, 60)).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.delete(&pods, "app").await
        })
        .run(1);
    let sim::Verdict::Liveness { reason } = &report.verdict else {
        panic!("expected a liveness verdict, got {}", report.verdict);
    };
    assert!(
        reason.contains(
            "pod default/app is terminating with a 60s grace period, which ends after the liveness wait"
        ),
        "{reason}"
    );
}

#[test]
fn a_restarted_crash_looping_container_runs_for_a_moment_before_it_fails_again() {
    // On a node the restarted process runs until it exits: `kubectl get pods` shows Running (and
    // the Pod Ready, without a readiness probe) between the CrashLoopBackOffs, which a
    // controller that takes a running Pod for a healthy one must not be fooled by.
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-crashloop-runs")).workload(
        |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("app", "Always", true, 1)).await?;
            let status = |p: &Pod| p.status.as_ref()?.container_statuses.as_ref()?.first().cloned();
            let running_again = |p: Option<&Pod>| {
                p.and_then(status).is_some_and(|s| {
                    s.restart_count == 2
                        && s.state.as_ref().is_some_and(|st| st.running.is_some())
                        && s.last_state
                            .as_ref()
                            .and_then(|l| l.terminated.as_ref())
                            .is_some_and(|t| t.exit_code != 0)
                }) && p.is_some_and(pod_state::is_ready)
            };
            w.wait_for(&pods, "app", running_again, WAIT).await?;
            let backing_off_again = |p: Option<&Pod>| {
                p.and_then(status).is_some_and(|s| {
                    s.restart_count == 2
                        && s.state
                            .as_ref()
                            .and_then(|st| st.waiting.as_ref())
                            .and_then(|w| w.reason.as_deref())
                            == Some("CrashLoopBackOff")
                }) && p.is_some_and(|p| !pod_state::is_ready(p))
            };
            w.wait_for(&pods, "app", backing_off_again, WAIT).await
        },
    );
    let report = sweep(&SweepConfig::new("builtins-kubelet-crashloop-runs").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// A Pod of two containers, `app` and `side`, whose fail annotation names `app` only.
fn two_containers(name: &str, restart_policy: &str) -> Pod {
    let mut pod = pod(name, restart_policy, false, 1);
    pod.metadata.annotations = Some([(kubelet::FAIL_ANNOTATION.to_owned(), "app".to_owned())].into());
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers.push(Container {
            name: "side".to_owned(),
            image: Some("side:1".to_owned()),
            ..Container::default()
        });
    }
    pod
}

fn container<'p>(pod: &'p Pod, name: &str) -> Option<&'p k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|s| s.name == name)
}

fn exit_code(pod: &Pod, name: &str) -> Option<i32> {
    Some(container(pod, name)?.state.as_ref()?.terminated.as_ref()?.exit_code)
}

#[test]
fn only_the_container_the_fail_annotation_names_crash_loops_the_other_runs_on() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-fail-one"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &two_containers("app", "Always")).await?;
            let looping =
                |p: Option<&Pod>| p.and_then(|p| container(p, "app")).is_some_and(|s| s.restart_count >= 2);
            w.wait_for(&pods, "app", looping, Duration::from_secs(60)).await
        })
        .property(FnProperty::always("side runs on, never restarted; the Pod never ends", |view| {
            let Some(snap) = view.cluster("default") else { return Ok(()) };
            let Some(p) = snapshot::object::<Pod>(snap, Some("default"), "app") else { return Ok(()) };
            if pod_state::is_finished(&p) {
                return Err(format!("the Pod ended: {}", pod_state::phase(&p)));
            }
            match container(&p, "side") {
                Some(s) if s.restart_count != 0 => Err(format!("side restarted {} times", s.restart_count)),
                _ => Ok(()),
            }
        }))
        .property(FnProperty::at_end("side running and ready, the Pod Running", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let p = snapshot::object::<Pod>(snap, Some("default"), "app").ok_or("gone")?;
            let side = container(&p, "side").ok_or("no status of side")?;
            let running = side.state.as_ref().is_some_and(|s| s.running.is_some());
            let found = (pod_state::phase(&p).to_owned(), running, side.ready);
            let want = ("Running".to_owned(), true, true);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-fail-one").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_pod_whose_one_container_failed_runs_until_the_other_completes_then_fails() {
    // `restartPolicy: Never`: `app` fails at once, `side` completes after its run; the Pod is
    // Running in between (`getPhase`: a container still runs), then Failed.
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-fail-one-never"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let mut pod = two_containers("app", "Never");
            // A sidecar runs while `side` does, and is stopped with the Pod.
            if let Some(spec) = pod.spec.as_mut() {
                spec.init_containers = Some(vec![Container {
                    name: "proxy".to_owned(),
                    image: Some("proxy:1".to_owned()),
                    restart_policy: Some("Always".to_owned()),
                    ..Container::default()
                }]);
            }
            w.apply(&pods, &pod).await?;
            let proxy_runs = |p: &Pod| {
                let statuses = p.status.as_ref().and_then(|s| s.init_container_statuses.as_ref());
                let proxy = statuses.into_iter().flatten().find(|s| s.name == "proxy");
                proxy.is_some_and(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()))
            };
            let between = |p: Option<&Pod>| {
                p.is_some_and(|p| {
                    pod_state::phase(p) == pod_state::PHASE_RUNNING
                        && exit_code(p, "app") == Some(1)
                        && proxy_runs(p)
                })
            };
            w.wait_for(&pods, "app", between, WAIT).await?;
            w.wait_for(&pods, "app", phase_is(pod_state::PHASE_FAILED), WAIT).await
        })
        .property(FnProperty::at_end("app failed with 1, side completed with 0", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let p = snapshot::object::<Pod>(snap, Some("default"), "app").ok_or("gone")?;
            let found = (pod_state::phase(&p).to_owned(), exit_code(&p, "app"), exit_code(&p, "side"));
            let want = ("Failed".to_owned(), Some(kubelet::FAILED_EXIT_CODE), Some(0));
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-kubelet-fail-one-never").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
