//! core/v1 Events and events.k8s.io/v1 Events: one store viewed through both APIs.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{ListParams, WatchParams};
use kube_core::{ApiResource, WatchEvent};
use serde_json::json;

fn core_events() -> ApiResource {
    builtin("", "events")
}

fn new_events() -> ApiResource {
    builtin("events.k8s.io", "events")
}

/// A core Event about pod `web-0`, as client-go's recorder posts it.
fn core_event(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default", "apiVersion": "v1"},
        "reason": "Started", "message": "Started container", "type": "Normal",
        "source": {"component": "kubelet"}, "count": 1
    })
}

/// An events.k8s.io Event about deployment `web`, as kube-rs's recorder posts it.
fn new_event(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Deployment", "name": "web", "namespace": "default", "apiVersion": "apps/v1"},
        "reason": "Scaled", "note": "Scaled up", "type": "Normal", "action": "Scale",
        "reportingController": "example.com/operator", "reportingInstance": "operator-0"
    })
}

#[test]
fn a_core_event_is_read_through_events_k8s_io_with_its_fields_renamed() {
    let mut w = World::new();
    w.create(&core_events(), Some("default"), core_event("e1"));
    let seen = w.get(&new_events(), Some("default"), "e1");
    assert_eq!(seen.types.as_ref().unwrap().api_version, "events.k8s.io/v1");
    assert_eq!(seen.data["regarding"]["name"], "web-0");
    assert_eq!(seen.data["note"], "Started container");
    assert_eq!(seen.data["deprecatedSource"]["component"], "kubelet");
    assert_eq!(seen.data["deprecatedCount"], 1);
    assert!(seen.data.get("involvedObject").is_none());
}

#[test]
fn an_events_k8s_io_event_is_listed_and_watched_as_a_core_event() {
    let mut w = World::new();
    w.create(&new_events(), Some("default"), new_event("e2"));
    let list = w.list(&core_events(), None, ListParams::default());
    let [seen] = list.items.as_slice() else { panic!("{:?}", list.items) };
    assert_eq!(seen.types.as_ref().unwrap().api_version, "v1");
    assert_eq!(seen.data["involvedObject"]["kind"], "Deployment");
    assert_eq!(seen.data["message"], "Scaled up");
    assert_eq!(seen.data["reportingComponent"], "example.com/operator");
    let events =
        w.watch(&core_events(), Some("default"), "0", WatchParams { bookmarks: false, ..Default::default() });
    let [WatchEvent::Added(added)] = events.as_slice() else { panic!("{events:?}") };
    assert_eq!(added.data["involvedObject"]["name"], "web");
}

#[test]
fn events_are_selected_by_their_core_fields_through_either_api() {
    let mut w = World::new();
    w.create(&core_events(), Some("default"), core_event("from-kubelet"));
    w.create(&new_events(), Some("default"), new_event("from-operator"));
    let select = |w: &mut World, ar: &ApiResource, fields: &str| -> Vec<String> {
        let list = w.list(ar, Some("default"), ListParams::default().fields(fields));
        list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect()
    };
    assert_eq!(select(&mut w, &core_events(), "involvedObject.kind=Pod"), ["from-kubelet"]);
    assert_eq!(select(&mut w, &core_events(), "involvedObject.name=web,reason=Scaled"), ["from-operator"]);
    // `source` is the old recorder's component, else the new one's reporting controller.
    assert_eq!(select(&mut w, &core_events(), "source=example.com/operator"), ["from-operator"]);
    assert_eq!(select(&mut w, &core_events(), "source=kubelet"), ["from-kubelet"]);
    assert_eq!(select(&mut w, &core_events(), "reportingComponent=example.com/operator"), ["from-operator"]);
    assert_eq!(select(&mut w, &new_events(), "regarding.kind=Pod"), ["from-kubelet"]);
    assert_eq!(select(&mut w, &new_events(), "reportingController=example.com/operator"), ["from-operator"]);
    assert_eq!(select(&mut w, &new_events(), "type=Normal").len(), 2);
    // Each API accepts only its own names.
    let err = w
        .handle(model_apiserver::Request::list(
            &new_events(),
            Some("default"),
            ListParams::default().fields("involvedObject.kind=Pod"),
        ))
        .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (400, "field label not supported: involvedObject.kind"));
}

#[test]
fn a_patch_through_the_other_api_changes_the_one_stored_event() {
    let mut w = World::new();
    w.create(&core_events(), Some("default"), core_event("e1"));
    w.try_merge(&new_events(), Some("default"), "e1", json!({"note": "Restarted container"})).unwrap();
    let core = w.get(&core_events(), Some("default"), "e1");
    assert_eq!(core.data["message"], "Restarted container");
    assert_eq!(core.data["involvedObject"]["name"], "web-0");
    w.try_delete(&core_events(), Some("default"), "e1").unwrap();
    assert_eq!(code_reason(&w.try_get(&new_events(), Some("default"), "e1").unwrap_err()), (404, "NotFound"));
}
