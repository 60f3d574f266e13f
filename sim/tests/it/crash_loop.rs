//! A controller whose main future returns has exited, as a process does: the kubelet restarts
//! its container with CrashLoopBackOff (10 s, doubling, up to 5 min), the trace says so, and one
//! that keeps exiting fails the liveness phase by name.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use sim::api::{Api, PostParams};
use sim::{Clients, RunReport, Sim, TraceEvent, Verdict};

/// The virtual seconds of each (re)start and each exit of `node`, in order.
fn starts_and_exits(report: &RunReport, node: &str) -> (Vec<f64>, Vec<(f64, String)>) {
    let mut starts = Vec::new();
    let mut exits = Vec::new();
    for entry in report.trace.entries() {
        if &*entry.node != node {
            continue;
        }
        let at = entry.at_nanos as f64 / 1e9;
        match &entry.event {
            TraceEvent::NodeStart { .. } => starts.push(at),
            TraceEvent::NodeKill { reason } => exits.push((at, reason.clone())),
            _ => {}
        }
    }
    (starts, exits)
}

/// A controller that returns from its main future on its first `exits` starts, and after that
/// creates ConfigMap `alive` and stays up.
fn exits_then_stays(exits: u32) -> sim::SimBuilder {
    let starts = Arc::new(AtomicU32::new(0));
    Sim::builder()
        .keep_trace(true)
        .controller("flaky", move |clients: Clients| {
            let start = starts.fetch_add(1, Ordering::SeqCst);
            async move {
                if start < exits {
                    // A startup check that fails, then `return` from main (exit code 0).
                    return;
                }
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let cm = ConfigMap {
                    metadata: ObjectMeta { name: Some("alive".to_owned()), ..ObjectMeta::default() },
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm).await.expect("create");
                std::future::pending::<()>().await;
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(100)).await;
            Ok(())
        })
}

#[test]
fn a_controller_whose_main_returns_is_restarted_after_ten_seconds_and_the_run_passes() {
    let report = exits_then_stays(1).run(3);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let (starts, exits) = starts_and_exits(&report, "flaky");
    assert_eq!(starts.len(), 2, "a start and one restart: {starts:?}");
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert!(exits[0].1.contains("CrashLoopBackOff, restart in 10s"), "{}", exits[0].1);
    let waited = starts[1] - exits[0].0;
    assert!((10.0..10.1).contains(&waited), "restarted {waited}s after the exit");
}

#[test]
fn each_exit_doubles_the_back_off_as_the_kubelet_does() {
    let report = exits_then_stays(4).liveness_wait(Duration::from_secs(300)).run(5);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let (starts, exits) = starts_and_exits(&report, "flaky");
    assert_eq!((starts.len(), exits.len()), (5, 4), "{starts:?} {exits:?}");
    let waits: Vec<u64> =
        exits.iter().zip(&starts[1..]).map(|((exit, _), start)| (start - exit).round() as u64).collect();
    assert_eq!(waits, [10, 20, 40, 80]);
}

#[test]
fn a_controller_that_keeps_exiting_fails_the_liveness_phase_naming_its_crash_loop() {
    let report = exits_then_stays(u32::MAX).run(7);
    let Verdict::Liveness { reason } = &report.verdict else { panic!("{:?}", report.verdict) };
    assert!(reason.contains("controller flaky is in CrashLoopBackOff"), "{reason}");
    let (starts, _) = starts_and_exits(&report, "flaky");
    assert!(starts.len() >= 3, "it was restarted while it kept exiting: {starts:?}");
}

#[test]
fn the_tasks_an_exited_main_spawned_end_with_it() {
    // The main spawns a task that writes a ConfigMap every second, then returns: the process is
    // gone, so nothing writes until the restart (which exits at once again).
    let report = Sim::builder()
        .keep_trace(true)
        .liveness_wait(Duration::from_secs(20))
        .controller("spawner", |clients: Clients| async move {
            madsim::task::spawn(async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                for i in 0..100 {
                    let cm = ConfigMap {
                        metadata: ObjectMeta { name: Some(format!("tick-{i}")), ..ObjectMeta::default() },
                        ..ConfigMap::default()
                    };
                    let _ = api.create(&PostParams::default(), &cm).await;
                    madsim::time::sleep(Duration::from_secs(1)).await;
                }
            });
            madsim::time::sleep(Duration::from_millis(2500)).await;
        })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(100)).await;
            Ok(())
        })
        .run(11);
    let writes: Vec<f64> = report
        .trace
        .entries()
        .iter()
        .filter(|e| &*e.node == "spawner" && matches!(e.event, TraceEvent::ApiRequest { .. }))
        .map(|e| e.at_nanos as f64 / 1e9)
        .collect();
    assert_eq!(writes.iter().filter(|at| **at < 10.0).count(), 3, "ticks at 0, 1 and 2 s only: {writes:?}");
    assert!(
        writes.iter().all(|at| *at < 3.0 || *at >= 12.5),
        "nothing written while it was down: {writes:?}"
    );
    assert!(writes.iter().any(|at| *at >= 12.5), "the restart spawned its task again: {writes:?}");
}

#[test]
fn a_crash_loop_is_deterministic() {
    let first = exits_then_stays(2).run(9);
    let second = exits_then_stays(2).run(9);
    assert_eq!(first.digest, second.digest);
}
