//! A `DelayWatch` fault is bounded: pulls that start within its duration are delayed, later ones
//! are not, so a world under it catches up before the liveness phase (as Sieve's delays are
//! bounded). Plans written before the duration existed still load, with the default duration.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::Api;
use sim::faults::{DELAY_WATCH_DURATION_MS_DEFAULT, Fault, FaultPlan, PlannedFault, Trigger};
use sim::runtime::{reflector, watcher};
use sim::{Clients, RunReport, Sim, TraceEvent, Verdict};

use common::config_map;

/// The workload writes ConfigMap `cm-i` at about `i` seconds, for i in 0..WRITES.
const WRITES: u64 = 10;
const WRITE_EVERY: Duration = Duration::from_secs(1);
/// The delay per pull: far longer than any latency the engine draws without faults.
const EXTRA_MS: u64 = 3_000;

/// A world whose only controller node `watcher` caches the ConfigMaps of `default`, under a
/// DelayWatch fault fired at the start that lasts `duration_ms`.
fn run(duration_ms: u64, seed: u64) -> RunReport {
    let delay = Fault::DelayWatch {
        controller: "watcher".to_owned(),
        resource: "configmaps".to_owned(),
        extra_ms: EXTRA_MS,
        duration_ms,
    };
    let plan =
        FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms: 0 }, fault: delay }] };
    Sim::builder()
        .controller("watcher", |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            let _store = reflector::informer(api, watcher::Config::default());
            futures::future::pending::<()>().await;
        })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            for i in 0..WRITES {
                w.apply(&api, &config_map(&format!("cm-{i}"), "v")).await?;
                w.sleep(WRITE_EVERY).await;
            }
            Ok(())
        })
        .faults(plan)
        .keep_trace(true)
        .run(seed)
}

/// For each ConfigMap, how long after the workload's write its ADDED event reached `watcher`.
fn lags_ms(report: &RunReport) -> Vec<u64> {
    let entries = report.trace.entries();
    (0..WRITES)
        .map(|i| {
            let object = format!("default/cm-{i}");
            let delivered = entries
                .iter()
                .find(|e| {
                    &*e.node == "watcher"
                        && matches!(&e.event, TraceEvent::WatchDelivery { object: o, .. } if *o == object)
                })
                .unwrap_or_else(|| panic!("{object} never reached the watcher"))
                .at_nanos;
            let written = i * WRITE_EVERY.as_nanos() as u64;
            (delivered.saturating_sub(written)) / 1_000_000
        })
        .collect()
}

#[test]
fn a_watch_delay_delays_pulls_only_within_its_duration() {
    for seed in 0..4 {
        let report = run(2_000, seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert!(report.unfired.is_empty(), "seed {seed}");
        let lags = lags_ms(&report);
        // The first write lands in the fault's two seconds: its pull waits the extra delay.
        assert!(lags[0] >= EXTRA_MS, "seed {seed}: lags {lags:?}");
        // From the sixth second on, well after the delay ended, events arrive promptly again.
        assert!(lags[5..].iter().all(|lag| *lag < 1_000), "seed {seed}: lags {lags:?}");
    }
}

#[test]
fn a_watch_delay_that_outlasts_the_workload_delays_every_pull() {
    let report = run(60_000, 1);
    assert_eq!(report.verdict, Verdict::Pass);
    let lags = lags_ms(&report);
    // Every pull waits the extra delay: an event written during one pull's wait is taken by the
    // next pull, so with a write a second and a three-second delay each event waits a second or
    // more, to the very end of the workload.
    assert!(lags.iter().all(|lag| *lag >= 1_000), "lags {lags:?}");
    assert!(lags.iter().any(|lag| *lag >= EXTRA_MS), "lags {lags:?}");
}

#[test]
fn a_delay_watch_plan_written_without_a_duration_lasts_the_default() {
    let json = r#"{"faults":[{"trigger":{"type":"atTime","atMs":0},
        "fault":{"type":"delayWatch","controller":"op","resource":"","extraMs":2500}}]}"#;
    let plan: FaultPlan = serde_json::from_str(json).unwrap();
    assert_eq!(
        plan.faults[0].fault,
        Fault::DelayWatch {
            controller: "op".to_owned(),
            resource: String::new(),
            extra_ms: 2_500,
            duration_ms: DELAY_WATCH_DURATION_MS_DEFAULT,
        }
    );
    assert_eq!(DELAY_WATCH_DURATION_MS_DEFAULT, 10_000);
    assert_eq!(plan.faults[0].to_string(), "delay op's watches by 2500ms for 10000ms, at 0ms");
    assert_eq!(Fault::delay_watch("op", "", 2_500), plan.faults[0].fault);
}
