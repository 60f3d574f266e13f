//! The tests of `kube_sim::perfetto` (its former unit tests: the library has no test harness).

use std::sync::Arc;

use kube_sim::perfetto::*;
use sim::faults::FaultPlan;
use sim::trace::Trace;
use sim::trace::TraceEvent;
use sim::verdict::RunReport;
use sim::verdict::{RunStats, Verdict};

#[test]
fn a_trace_becomes_named_tracks_with_fault_instants_and_complete_api_and_reconcile_events() {
    let mut trace = Trace::new(true);
    let (ctrl, api): (Arc<str>, Arc<str>) = (Arc::from("ctrl"), Arc::from("apiserver"));
    trace.push(0, &ctrl, TraceEvent::NodeStart { restart: false });
    trace.push(
        1_000,
        &ctrl,
        TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() },
    );
    trace.push(
        2_000,
        &ctrl,
        TraceEvent::ApiRequest { call: 1, verb: "create", target: "configmaps/default/b".into() },
    );
    trace.push(5_000, &api, TraceEvent::ApiResponse { call: 1, result: Ok("3".into()) });
    trace.push(6_000, &ctrl, TraceEvent::Fault { description: "crash".into() });
    trace.push(
        7_000,
        &ctrl,
        TraceEvent::ReconcileEnd {
            controller: "ctrl".into(),
            object: "ConfigMap default/a".into(),
            result: "await change".into(),
        },
    );
    let report = RunReport {
        scenario: "s".into(),
        seed: 9,
        verdict: Verdict::Pass,
        digest: "d".into(),
        trace,
        stats: RunStats::default(),
        plan: FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    };
    let doc = trace_events(&report);
    let events = doc["traceEvents"].as_array().expect("an array");
    let names: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["args"]["name"].as_str().unwrap_or(""), e["ph"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(names, vec![("ctrl", "M"), ("apiserver", "M")]);
    let api_call = events.iter().find(|e| e["cat"] == "api").expect("the API call");
    assert_eq!(api_call["ph"], "X");
    assert_eq!(api_call["tid"], 1);
    assert_eq!(api_call["ts"], 2.0);
    assert_eq!(api_call["dur"], 3.0);
    let fault = events.iter().find(|e| e["cat"] == "fault").expect("the fault");
    assert_eq!((fault["ph"].as_str(), fault["ts"].as_f64()), (Some("i"), Some(6.0)));
    let reconcile = events.iter().find(|e| e["cat"] == "reconcile").expect("the reconcile");
    assert_eq!((reconcile["ts"].as_f64(), reconcile["dur"].as_f64()), (Some(1.0), Some(6.0)));
}
