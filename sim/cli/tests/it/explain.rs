//! The tests of `kube_sim::explain` (its former unit tests: the library has no test harness).

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_sim::explain::*;
use model_apiserver::ObjectKey;
use model_apiserver::Snapshot;
use sim::faults::FaultPlan;
use sim::trace::Trace;
use sim::trace::TraceEvent;
use sim::verdict::RunStats;
use sim::verdict::{RunReport, Verdict};

/// Every cluster's end state, by name (`explain`'s own alias of this type is private).
type EndStates = BTreeMap<Arc<str>, Snapshot>;

/// The report of a run of scenario `s`, seed 1, with `trace` and `verdict` and nothing else.
fn report_of(trace: Trace, verdict: Verdict) -> RunReport {
    RunReport {
        scenario: "s".into(),
        seed: 1,
        verdict,
        digest: String::new(),
        trace,
        stats: RunStats::default(),
        plan: FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    }
}

fn object(name: &str, replicas: u64) -> Arc<kube_core::DynamicObject> {
    let value = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": { "name": name, "namespace": "default", "uid": format!("uid-{replicas}"), "resourceVersion": format!("{replicas}") },
        "spec": { "replicas": replicas }
    });
    Arc::new(serde_json::from_value(value).expect("a valid object"))
}

fn states(objects: &[(&str, u64)]) -> EndStates {
    let mut snapshot = Snapshot::default();
    for (name, replicas) in objects {
        let key = ObjectKey {
            resource: "apps/statefulsets".into(),
            namespace: "default".into(),
            name: (*name).into(),
        };
        snapshot.objects.insert(key, object(name, *replicas));
    }
    BTreeMap::from([(Arc::from("default"), snapshot)])
}

#[test]
fn the_end_state_diff_lists_missing_extra_and_changed_objects_and_masks_uid_and_resource_version() {
    let reference = states(&[("a", 1), ("b", 1)]);
    let run = states(&[("a", 3), ("c", 1)]);
    assert_eq!(
        end_state_diff(&reference, &run),
        vec![
            "~ apps/statefulsets default/a: spec.replicas: reference 1, this run 3".to_owned(),
            "- apps/statefulsets default/b: only in the reference run".to_owned(),
            "+ apps/statefulsets default/c: only in this run".to_owned(),
        ]
    );
    assert_eq!(end_state_diff(&states(&[("a", 1)]), &states(&[("a", 1)])), Vec::<String>::new());
}

#[test]
fn the_story_names_the_fault_the_write_and_the_broken_property() {
    let mut trace = Trace::new(true);
    let ctrl: Arc<str> = Arc::from("ctrl");
    let api: Arc<str> = Arc::from("apiserver");
    trace.push(1_000_000, &ctrl, TraceEvent::Fault { description: "crash ctrl after its 1st write".into() });
    trace.push(
        2_000_000,
        &ctrl,
        TraceEvent::ApiRequest { call: 1, verb: "get", target: "pods/default/p".into() },
    );
    trace.push(2_500_000, &api, TraceEvent::ApiResponse { call: 1, result: Ok("7".into()) });
    trace.push(
        3_000_000,
        &ctrl,
        TraceEvent::ApiRequest { call: 2, verb: "delete", target: "pods/default/p".into() },
    );
    trace.push(3_500_000, &api, TraceEvent::ApiResponse { call: 2, result: Ok("8".into()) });
    let verdict =
        Verdict::Correctness { property: "kept".into(), message: "pod p deleted".into(), at_millis: 4 };
    let report = report_of(trace, verdict);
    assert_eq!(
        story(&report),
        "0.001s FAULT on ctrl: crash ctrl after its 1st write\n\
         0.002s ctrl read (get) pods/default/p and saw rv 7\n\
         0.003s ctrl wrote (delete) pods/default/p: ok, now rv 8\n\
         At 0.004s property \"kept\" broke: pod p deleted\n\
         The last write before it: 0.003s ctrl wrote (delete) pods/default/p: ok, now rv 8\n"
    );
}

/// A delete answers the object as it was last stored, and a write that changed nothing answers
/// the stored revision: neither is told as a new revision.
#[test]
fn the_story_tells_a_delete_and_a_write_that_changed_nothing_from_a_new_revision() {
    let mut trace = Trace::new(true);
    let ctrl: Arc<str> = Arc::from("ctrl");
    let request = |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.into() };
    let ok = |call, rv: &str| TraceEvent::ApiResponse { call, result: Ok(rv.into()) };
    trace.push(1_000_000, &ctrl, request(1, "create", "configmaps/default/a"));
    trace.push(1_500_000, &ctrl, ok(1, "7"));
    trace.push(2_000_000, &ctrl, request(2, "patch", "configmaps/default/a"));
    trace.push(2_500_000, &ctrl, ok(2, "7"));
    trace.push(3_000_000, &ctrl, request(3, "delete", "configmaps/default/a"));
    trace.push(3_500_000, &ctrl, ok(3, "7"));
    trace.push(4_000_000, &ctrl, request(4, "create", "configmaps/default/a"));
    trace.push(4_500_000, &ctrl, ok(4, "9"));
    let report = report_of(trace, Verdict::Pass);
    assert_eq!(
        story(&report),
        "0.001s ctrl wrote (create) configmaps/default/a: ok, now rv 7\n\
         0.002s ctrl wrote (patch) configmaps/default/a: ok, unchanged at rv 7\n\
         0.003s ctrl wrote (delete) configmaps/default/a: ok, deleted (last stored at rv 7)\n\
         0.004s ctrl wrote (create) configmaps/default/a: ok, now rv 9\n\
         Then every property held and the world converged.\n"
    );
}
