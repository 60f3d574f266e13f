//! Eventually-stable reconciliation over hand-built samples.

#[path = "common/mod.rs"]
mod common;

use common::snapshot;
use model_apiserver::Snapshot;
use properties::{Sample, Violation, eventually_stable};
use serde_json::json;

/// A Deployment whose desired and observed replica counts are given.
fn state(desired: i64, ready: i64) -> Snapshot {
    snapshot(&[json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": desired}, "status": {"readyReplicas": ready}})])
}

/// Samples one per 100 ms from (desired, ready) pairs.
fn samples(states: &[(i64, i64)]) -> Vec<Sample> {
    states
        .iter()
        .zip(0u64..)
        .map(|((desired, ready), step)| Sample {
            step,
            at_millis: step * 100,
            snapshot: state(*desired, *ready),
        })
        .collect()
}

fn field(snapshot: &Snapshot, pointer: &str) -> Option<i64> {
    snapshot.objects.values().next()?.data.pointer(pointer)?.as_i64()
}

fn check(states: &[(i64, i64)], window_millis: u64) -> Option<Violation> {
    eventually_stable(
        "web_ready",
        &samples(states),
        |s| field(s, "/spec/replicas"),
        |s| field(s, "/spec/replicas") == field(s, "/status/readyReplicas"),
        window_millis,
    )
}

#[test]
fn esr_holds_when_the_state_stabilises_after_the_desired_state_stops_changing() {
    // Desired changes 1 -> 3 at step 2; ready catches up at step 4 and stays until step 8 (400 ms).
    let run = [(1, 1), (1, 1), (3, 1), (3, 2), (3, 3), (3, 3), (3, 3), (3, 3), (3, 3)];
    assert_eq!(check(&run, 400), None);
}

#[test]
fn esr_fails_when_the_state_flaps_within_the_window() {
    // Ready reaches 3 at step 2, drops at step 4, recovers at step 5: 300 ms of a 400 ms window.
    let run = [(3, 1), (3, 2), (3, 3), (3, 3), (3, 2), (3, 3), (3, 3), (3, 3), (3, 3)];
    assert_eq!(
        check(&run, 400).map(|v| v.to_string()).as_deref(),
        Some(
            "web_ready: desired state unchanged since step 0 at 0 ms: expected it satisfied for 400 ms, found it satisfied only for 300 ms (from step 5 at 500 ms; it failed at step 4 at 400 ms)"
        )
    );
}

#[test]
fn esr_fails_when_the_state_is_unsatisfied_at_the_end() {
    let run = [(1, 1), (3, 1), (3, 2), (3, 2)];
    assert_eq!(
        check(&run, 100).map(|v| v.to_string()).as_deref(),
        Some(
            "web_ready: desired state unchanged since step 1 at 100 ms: expected the state to satisfy it by the end, found it unsatisfied at the last sample (step 3 at 300 ms)"
        )
    );
}

#[test]
fn esr_fails_when_the_run_ends_before_the_window_has_passed() {
    // Satisfied from step 0, but the desired state changed at step 2 and only 100 ms remain.
    let run = [(1, 1), (1, 1), (2, 2), (2, 2)];
    assert_eq!(
        check(&run, 400).map(|v| v.to_string()).as_deref(),
        Some(
            "web_ready: desired state unchanged since step 2 at 200 ms: expected it satisfied for 400 ms, found it satisfied only for 100 ms (from step 2 at 200 ms; the run ended)"
        )
    );
}

#[test]
fn esr_fails_without_samples() {
    assert_eq!(
        check(&[], 100),
        Some(Violation::new("web_ready", "no samples: expected at least one state to judge, found none"))
    );
}
