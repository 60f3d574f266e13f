//! The tests of `sim::explore::unfired` (its former unit tests: the library has no test harness).

use std::sync::Arc;

use sim::explore::unfired::*;
use sim::faults::{CallSide, Fault, ObjectChange, PlannedFault, Trigger};
use sim::trace::{TraceEntry, TraceEvent};

fn request(node: &str, verb: &'static str, target: &str) -> TraceEntry {
    TraceEntry {
        at_nanos: 1_000_000,
        node: Arc::from(node),
        event: TraceEvent::ApiRequest { call: 1, verb, target: target.to_owned() },
    }
}

fn crash_after(trigger: Trigger) -> PlannedFault {
    PlannedFault {
        trigger,
        fault: Fault::Crash { controller: "op".to_owned(), side: CallSide::After, restart_after_ms: 1 },
    }
}

#[test]
fn a_delete_the_controller_never_made_is_explained_by_the_writes_it_did_make() {
    let mut entries: Vec<TraceEntry> =
        (0..14).map(|_| request("op", "patch", "deployments/ns/nginx")).collect();
    entries.push(request("garbage-collector", "delete", "deployments/ns/nginx"));
    let planned = crash_after(Trigger::NthWrite {
        controller: "op".to_owned(),
        n: 1,
        kind: Some("Deployment".to_owned()),
        verb: Some("delete".to_owned()),
    });
    assert_eq!(
        why_unfired(&planned, &entries, &["op".to_owned(), "garbage-collector".to_owned()]),
        "the trigger waits for op's write number 1 that is a delete of Deployment; op made 14 writes (14 patch deployments), of which 0 matched; deployments/ns/nginx was deleted by garbage-collector"
    );
    let on_object = crash_after(Trigger::OnObject {
        kind: "Deployment".to_owned(),
        namespace: "ns".to_owned(),
        name: "nginx".to_owned(),
        change: ObjectChange::Create,
    });
    let why = why_unfired(&on_object, &entries, &["op".to_owned()]);
    assert!(why.contains("delete by garbage-collector"), "{why}");
}

#[test]
fn a_renamed_controller_is_named_as_missing() {
    let planned =
        crash_after(Trigger::NthWrite { controller: "old-op".to_owned(), n: 1, kind: None, verb: None });
    assert_eq!(
        why_unfired(&planned, &[], &["op".to_owned()]),
        "the scenario has no controller \"old-op\" (its controllers: op)"
    );
}
