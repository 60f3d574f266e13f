//! Watches: events after a revision, initial state, compaction, bookmarks and selectors.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{WatchEvent, params::WatchParams};
use serde_json::json;

/// kube-core's default asks for bookmarks; most tests look at the changes alone.
fn plain() -> WatchParams {
    WatchParams { bookmarks: false, ..Default::default() }
}

fn s(t: &str, n: &str, rv: &str) -> (String, String, String) {
    (t.into(), n.into(), rv.into())
}

#[test]
fn watch_from_a_revision_returns_every_later_event_in_order() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.try_update(&cm(), Some("default"), obj(config_map("a", json!({"k": "2"})))).unwrap();
    w.try_delete(&cm(), Some("default"), "b").unwrap();
    let events = w.watch(&cm(), Some("default"), "5", plain());
    assert_eq!(describe(&events), [s("ADDED", "b", "6"), s("MODIFIED", "a", "7"), s("DELETED", "b", "8")]);
}

#[test]
fn watch_from_zero_returns_the_current_state_as_added_events() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.try_delete(&cm(), Some("default"), "b").unwrap();
    for rv in ["0", ""] {
        let events = w.watch(&cm(), Some("default"), rv, plain());
        assert_eq!(describe(&events), [s("ADDED", "a", "6")], "rv {rv:?}");
    }
}

#[test]
fn watch_from_the_current_revision_returns_nothing() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    assert!(w.watch(&cm(), None, "5", plain()).is_empty());
    assert!(w.watch(&cm(), None, "100", plain()).is_empty());
}

#[test]
fn watch_from_a_compacted_revision_gets_a_single_410_expired_error_event() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.server.compact(6);
    let events = w.watch(&cm(), None, "5", plain());
    assert_eq!(events.len(), 1);
    let WatchEvent::Error(status) = &events[0] else { panic!("{events:?}") };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert_eq!(status.message, "too old resource version: 5 (6)");
}

#[test]
fn watch_with_bookmarks_ends_with_a_bookmark_at_the_current_revision() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    let params = WatchParams::default();
    let events = w.watch(&cm(), None, "4", params);
    assert_eq!(describe(&events), [s("ADDED", "a", "5"), s("BOOKMARK", "", "6")]);
    let WatchEvent::Bookmark(b) = &events[1] else { panic!() };
    assert_eq!((b.types.api_version.as_str(), b.types.kind.as_str()), ("v1", "ConfigMap"));
}

#[test]
fn watch_is_filtered_by_resource_and_namespace() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("kube-system"), config_map("b", json!({})));
    w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    let events = w.watch(&cm(), Some("kube-system"), "4", plain());
    assert_eq!(describe(&events), [s("ADDED", "b", "6")]);
    let all = w.watch(&cm(), None, "4", plain());
    assert_eq!(describe(&all), [s("ADDED", "a", "5"), s("ADDED", "b", "6")]);
}

#[test]
fn a_deleted_event_carries_the_last_state_at_the_deletion_revision() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "v"})));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let events = w.watch(&cm(), None, "5", plain());
    let WatchEvent::Deleted(o) = &events[0] else { panic!("{events:?}") };
    assert_eq!(o.metadata.resource_version.as_deref(), Some("6"));
    assert_eq!(o.data["data"], json!({"k": "v"}));
}

#[test]
fn watch_with_a_non_numeric_resource_version_gets_400_bad_request() {
    let mut w = World::new();
    let err = w.handle(model_apiserver::Request::watch(&cm(), None, "x", plain())).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
}

#[test]
fn watch_with_a_field_selector_on_the_name_sees_only_that_object() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let events = w.watch(&cm(), None, "4", plain().fields("metadata.name=a"));
    assert_eq!(describe(&events), [s("ADDED", "a", "5"), s("DELETED", "a", "7")]);
}

#[test]
fn send_initial_events_ends_the_initial_state_with_an_annotated_bookmark() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = WatchParams { send_initial_events: true, ..plain() };
    let events = w.watch(&cm(), None, "", params);
    assert_eq!(describe(&events), [s("ADDED", "a", "5"), s("BOOKMARK", "", "5")]);
    let WatchEvent::Bookmark(b) = &events[1] else { panic!() };
    assert_eq!(b.metadata.annotations.get("k8s.io/initial-events-end").map(String::as_str), Some("true"));
}

#[test]
fn history_older_than_the_compaction_interval_is_compacted_so_a_rewatch_from_it_gets_410() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.advance_seconds(200);
    let b = w.create(&cm(), Some("default"), config_map("b", json!({})));
    // Five minutes after b's write, a's revision stopped being current long enough ago.
    w.advance_seconds(301);
    w.create(&cm(), Some("default"), config_map("c", json!({})));
    let events = w.watch(&cm(), None, &rv(&a).to_string(), plain());
    let [WatchEvent::Error(status)] = events.as_slice() else { panic!("{events:?}") };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    // The revision that was current at the cutoff is still there.
    assert_eq!(w.server.oldest_revision(), rv(&b));
    assert_eq!(describe(&w.watch(&cm(), None, &rv(&b).to_string(), plain())), [s("ADDED", "c", "7")]);
}

#[test]
fn without_a_compaction_interval_history_is_kept_by_count_alone() {
    let config = model_apiserver::ServerConfig { compaction_interval_seconds: None, ..Default::default() };
    let mut w = World::with_config(config);
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.advance_seconds(3600);
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    assert_eq!(describe(&w.watch(&cm(), None, &rv(&a).to_string(), plain())), [s("ADDED", "b", "6")]);
}

#[test]
fn compact_now_expires_every_earlier_resource_version() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let b = w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.server.compact_now();
    assert_eq!(w.server.oldest_revision(), rv(&b));
    let events = w.watch(&cm(), None, &rv(&a).to_string(), plain());
    assert!(matches!(events.as_slice(), [WatchEvent::Error(s)] if s.code == 410), "{events:?}");
    assert!(w.watch(&cm(), None, &rv(&b).to_string(), plain()).is_empty());
}

#[test]
fn a_paged_list_at_a_compacted_resource_version_gets_410_and_an_unpaged_one_the_latest_state() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.server.compact_now();
    let at_a =
        kube_core::params::ListParams { resource_version: Some(rv(&a).to_string()), ..Default::default() };
    // With a limit and no resourceVersionMatch, a number is read exactly (the legacy semantics).
    let err = w.handle(model_apiserver::Request::list(&cm(), None, at_a.clone().limit(10))).unwrap_err();
    assert_eq!(code_reason(&err), (410, "Expired"));
    assert_eq!(w.list(&cm(), None, at_a).items.len(), 2);
}

#[test]
fn an_object_leaving_a_label_selector_is_deleted_as_it_was_before_at_the_new_revision() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["labels"] = json!({"w": "in"});
    let a = w.create(&cm(), Some("default"), body);
    let out =
        w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"labels": {"w": "out"}}})).unwrap();
    let params = WatchParams { label_selector: Some("w=in".into()), ..plain() };
    let events = w.watch(&cm(), None, &rv(&a).to_string(), params);
    let [WatchEvent::Deleted(gone)] = events.as_slice() else { panic!("{events:?}") };
    assert_eq!(gone.metadata.labels.as_ref().unwrap()["w"], "in");
    assert_eq!(rv(gone), rv(&out));
}

#[test]
fn removing_the_last_finalizer_is_watched_as_deleted_with_the_object_as_it_was_stored() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let a = w.create(&cm(), Some("default"), body);
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"finalizers": null}})).unwrap();
    let events = w.watch(&cm(), None, &rv(&a).to_string(), plain());
    let [WatchEvent::Modified(marked), WatchEvent::Deleted(gone)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(gone.metadata.finalizers.as_deref(), Some(&["example.com/hold".to_owned()][..]));
    assert_eq!(rv(gone), rv(marked) + 1);
}
