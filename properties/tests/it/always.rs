//! Safety properties checked at every step.

#[path = "common/mod.rs"]
mod common;

use std::cell::Cell;

use common::snapshot;
use model_apiserver::Snapshot;
use properties::{Violation, always};
use serde_json::json;

/// A state with `pods` pods in namespace default.
fn pods(pods: usize) -> Snapshot {
    let objects: Vec<_> = (0..pods)
        .map(|i| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}"), "namespace": "default"}}))
        .collect();
    snapshot(&objects)
}

fn at_most_two_pods(state: &Snapshot) -> Result<(), String> {
    let count = state.iter_resource("pods", Some("default")).count();
    if count > 2 { Err(format!("expected at most 2 pods in default, found {count}")) } else { Ok(()) }
}

#[test]
fn always_reports_the_first_violating_step_with_its_virtual_time() {
    let property = always("at_most_two_pods", at_most_two_pods);
    let states = [pods(1), pods(2), pods(3), pods(4), pods(1)];
    let checked = Cell::new(0);
    let steps = states.iter().zip(1u64..).map(|(state, step)| {
        checked.set(checked.get() + 1);
        (step, step * 250, state)
    });
    assert_eq!(
        property.first_violation(steps),
        Some(Violation::new(
            "at_most_two_pods",
            "at step 3 (750 ms): expected at most 2 pods in default, found 3"
        ))
    );
    // Checking stops at the first violation.
    assert_eq!(checked.get(), 3);
}

#[test]
fn always_reports_nothing_when_every_step_holds() {
    let property = always("at_most_two_pods", at_most_two_pods);
    assert_eq!(property.check_step(1, 0, &pods(2)), None);
    let states = [pods(0), pods(1), pods(2)];
    assert_eq!(property.first_violation(states.iter().zip(1u64..).map(|(s, step)| (step, step, s))), None);
}
