//! The tests of `controllers::builtins::events` (its former unit tests: the library has no test harness).

use controllers::builtins::events::*;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use sim::api::ObjectMeta;

fn event(reason: &str, message: &str, at: Timestamp) -> Event {
    Event {
        metadata: ObjectMeta { name: Some(format!("web.{:x}", at.as_nanosecond())), ..ObjectMeta::default() },
        involved_object: ObjectReference {
            kind: Some("Deployment".into()),
            name: Some("web".into()),
            uid: Some("u".into()),
            ..ObjectReference::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        type_: Some(NORMAL.into()),
        count: Some(1),
        first_timestamp: Some(Time(at)),
        last_timestamp: Some(Time(at)),
        source: Some(EventSource { component: Some("deployment-controller".into()), host: None }),
        reporting_component: Some("deployment-controller".into()),
        ..Event::default()
    }
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).unwrap()
}

fn correlate(c: &mut Correlator, reason: &str, message: &str, second: i64) -> Option<Write> {
    let write = c.correlate(event(reason, message, at(second)), at(second));
    if let Some(Write::Create(e) | Write::Patch(e)) = &write {
        c.update_state(e);
    }
    write
}

#[test]
fn a_repeated_message_patches_the_first_event_and_another_message_is_a_new_event() {
    let mut c = Correlator::default();
    assert!(matches!(correlate(&mut c, "ScalingReplicaSet", "up to 2", 0), Some(Write::Create(_))));
    let Some(Write::Patch(second)) = correlate(&mut c, "ScalingReplicaSet", "up to 2", 5) else {
        panic!("a repeat is a patch")
    };
    assert_eq!(second.count, Some(2));
    assert_eq!(second.metadata.name, Some(format!("web.{:x}", at(0).as_nanosecond())));
    assert_eq!(second.first_timestamp, Some(Time(at(0))));
    assert!(matches!(correlate(&mut c, "ScalingReplicaSet", "down to 0", 6), Some(Write::Create(_))));
}

#[test]
fn the_tenth_different_message_of_one_reason_is_combined_from_similar_events() {
    let mut c = Correlator::default();
    for i in 0..9 {
        assert!(matches!(correlate(&mut c, "R", &format!("m{i}"), i), Some(Write::Create(_))));
    }
    let Some(Write::Create(combined)) = correlate(&mut c, "R", "m9", 9) else { panic!("a new event") };
    assert_eq!(combined.message.as_deref(), Some("(combined from similar events): m9"));
    let Some(Write::Patch(again)) = correlate(&mut c, "R", "m10", 10) else { panic!("a patch") };
    assert_eq!(again.count, Some(2));
    assert_eq!(again.message.as_deref(), Some("(combined from similar events): m10"));
}

#[test]
fn one_source_gets_a_burst_of_twenty_five_events_per_object_then_one_each_five_minutes() {
    let mut c = Correlator::default();
    let reasons: Vec<String> = (0..26).map(|i| format!("R{i}")).collect();
    let published = reasons.iter().filter(|r| correlate(&mut c, r, "m", 0).is_some()).count();
    assert_eq!(published, 25);
    assert!(correlate(&mut c, "Late", "m", 299).is_none());
    assert!(correlate(&mut c, "Later", "m", 301).is_some());
}
