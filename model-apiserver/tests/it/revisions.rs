//! One global resourceVersion, optimistic concurrency, and reads at past revisions.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{GetParams, ListParams, PostParams, VersionMatch};
use model_apiserver::{Request, ServerConfig};
use serde_json::json;

#[test]
fn the_fixture_with_its_three_namespaces_is_at_revision_four() {
    let w = World::new();
    // Revision 1 is the empty store; each of the three namespaces is one write.
    assert_eq!(w.server.revision(), 4);
    assert_eq!(w.server.oldest_revision(), 1);
}

#[test]
fn create_assigns_uid_creation_timestamp_and_the_next_resource_version() {
    let mut w = World::new();
    w.now = jiff::Timestamp::from_second(T0_SECONDS).unwrap() + jiff::SignedDuration::from_millis(1500);
    let created = w.create(&cm(), Some("default"), config_map("a", json!({"k": "v"})));
    assert_eq!(created.metadata.resource_version.as_deref(), Some("5"));
    let uid = created.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4", "a version-4 UUID: {uid}");
    // Second precision, as metav1.Time serializes.
    let ts = serde_json::to_value(created.metadata.creation_timestamp.clone().unwrap()).unwrap();
    assert_eq!(ts, json!("2026-01-01T00:00:01Z"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.data["data"], json!({"k": "v"}));
}

#[test]
fn create_ignores_client_set_server_owned_fields() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["uid"] = json!("client-uid");
    // A version other than 0 is refused by the storage (see
    // metadata::a_create_with_a_resource_version_gets_500_from_the_storage); 0 is overwritten.
    body["metadata"]["resourceVersion"] = json!("0");
    body["metadata"]["generation"] = json!(9);
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    body["metadata"]["deletionTimestamp"] = json!("2000-01-01T00:00:00Z");
    let created = w.create(&cm(), Some("default"), body);
    assert_ne!(created.metadata.uid.as_deref(), Some("client-uid"));
    assert_eq!(created.metadata.resource_version.as_deref(), Some("5"));
    assert_eq!(created.metadata.generation, None);
    assert_eq!(
        serde_json::to_value(created.metadata.creation_timestamp.clone().unwrap()).unwrap(),
        json!("2026-01-01T00:00:00Z")
    );
    assert_eq!(created.metadata.deletion_timestamp, None);
}

#[test]
fn each_write_bumps_the_global_resource_version_by_one_across_types() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let b = w.create(&cm(), Some("kube-system"), config_map("b", json!({})));
    let p = w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    assert_eq!((rv(&a), rv(&b), rv(&p)), (5, 6, 7));
    assert_eq!(w.server.revision(), 7);
}

#[test]
fn update_with_matching_resource_version_bumps_it() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let mut next = (*a).clone();
    next.data["data"]["k"] = json!("2");
    let updated = w.try_update(&cm(), Some("default"), next).unwrap();
    assert_eq!(rv(&updated), 6);
    assert_eq!(updated.data["data"]["k"], json!("2"));
    assert_eq!(updated.metadata.uid, a.metadata.uid);
    assert_eq!(updated.metadata.creation_timestamp, a.metadata.creation_timestamp);
}

#[test]
fn update_with_stale_resource_version_gets_409_conflict() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let mut first = (*a).clone();
    first.data["data"]["k"] = json!("2");
    w.try_update(&cm(), Some("default"), first).unwrap();
    let mut stale = (*a).clone();
    stale.data["data"]["k"] = json!("3");
    let err = w.try_update(&cm(), Some("default"), stale).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(w.get(&cm(), Some("default"), "a").data["data"]["k"], json!("2"));
}

#[test]
fn update_with_empty_resource_version_is_unconditional_for_builtins() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let updated = w.try_update(&cm(), Some("default"), obj(config_map("a", json!({"k": "9"})))).unwrap();
    assert_eq!(rv(&updated), 6);
    assert_eq!(updated.data["data"]["k"], json!("9"));
}

#[test]
fn noop_update_bumps_nothing_and_returns_the_current_object() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let same = w.try_update(&cm(), Some("default"), (*a).clone()).unwrap();
    assert_eq!(same, a);
    assert_eq!(w.server.revision(), 5);
    assert!(w.server.events_after(5).unwrap().is_empty());
}

#[test]
fn update_of_a_missing_object_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_update(&cm(), Some("default"), obj(config_map("nope", json!({})))).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"nope\" not found");
}

#[test]
fn create_of_an_existing_name_gets_409_already_exists() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let err = w.try_create(&cm(), Some("default"), config_map("a", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"a\" already exists");
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn the_same_name_in_two_namespaces_is_two_objects() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"ns": "default"})));
    w.create(&cm(), Some("kube-system"), config_map("a", json!({"ns": "kube-system"})));
    assert_eq!(w.get(&cm(), Some("kube-system"), "a").data["data"]["ns"], json!("kube-system"));
}

#[test]
fn get_of_a_missing_object_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_get(&deployments(), Some("default"), "web").unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "deployments.apps \"web\" not found");
}

#[test]
fn an_unknown_resource_gets_404_not_found() {
    let mut w = World::new();
    let mut ar = cm();
    ar.plural = "widgets".into();
    let err = w.try_get(&ar, Some("default"), "a").unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "the server could not find the requested resource");
}

#[test]
fn get_with_a_resource_version_newer_than_current_gets_504_too_large() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = GetParams { resource_version: Some("99".into()) };
    let err = w.handle(Request::get(&cm(), Some("default"), "a", params)).unwrap_err();
    assert_eq!(code_reason(&err), (504, "Timeout"));
    assert_eq!(err.message, "Too large resource version: 99, current: 5");
}

#[test]
fn get_with_resource_version_zero_or_an_older_one_serves_the_latest_state() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    w.try_update(&cm(), Some("default"), obj(config_map("a", json!({"k": "2"})))).unwrap();
    for rv in ["0", "5"] {
        let params = GetParams { resource_version: Some(rv.into()) };
        let got = object(w.handle(Request::get(&cm(), Some("default"), "a", params)).unwrap());
        assert_eq!(got.data["data"]["k"], json!("2"), "rv {rv}");
    }
}

#[test]
fn get_with_a_non_numeric_resource_version_gets_400_bad_request() {
    let mut w = World::new();
    let params = GetParams { resource_version: Some("abc".into()) };
    let err = w.handle(Request::get(&cm(), Some("default"), "a", params)).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert_eq!(err.message, "invalid resource version: abc");
}

#[test]
fn list_carries_the_list_resource_version_and_items_in_key_order() {
    let mut w = World::new();
    w.create(&cm(), Some("kube-system"), config_map("z", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let all = w.list(&cm(), None, ListParams::default());
    assert_eq!(all.resource_version, "7");
    let names: Vec<_> = all
        .items
        .iter()
        .map(|o| {
            format!("{}/{}", o.metadata.namespace.as_deref().unwrap(), o.metadata.name.as_deref().unwrap())
        })
        .collect();
    assert_eq!(names, ["default/a", "default/b", "kube-system/z"]);
    let default = w.list(&cm(), Some("default"), ListParams::default());
    assert_eq!(default.items.len(), 2);
    assert_eq!(default.continue_token, None);
}

#[test]
fn list_with_exact_resource_version_reads_the_past_state() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    w.try_update(&cm(), Some("default"), obj(config_map("a", json!({"k": "2"})))).unwrap();
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    let params = ListParams {
        resource_version: Some("5".into()),
        version_match: Some(VersionMatch::Exact),
        ..Default::default()
    };
    let past = w.list(&cm(), Some("default"), params);
    assert_eq!(past.resource_version, "5");
    assert_eq!(past.items.len(), 1);
    assert_eq!(past.items[0].data["data"]["k"], json!("1"));
}

#[test]
fn list_with_exact_compacted_resource_version_gets_410_expired() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.server.compact(6);
    let params = ListParams {
        resource_version: Some("5".into()),
        version_match: Some(VersionMatch::Exact),
        ..Default::default()
    };
    let err = w.handle(Request::list(&cm(), Some("default"), params)).unwrap_err();
    assert_eq!(code_reason(&err), (410, "Expired"));
    assert_eq!(err.message, "too old resource version: 5 (6)");
}

#[test]
fn list_with_not_older_than_a_future_resource_version_gets_504_too_large() {
    let mut w = World::new();
    let params = ListParams {
        resource_version: Some("50".into()),
        version_match: Some(VersionMatch::NotOlderThan),
        ..Default::default()
    };
    let err = w.handle(Request::list(&cm(), None, params)).unwrap_err();
    assert_eq!(code_reason(&err), (504, "Timeout"));
    assert_eq!(err.message, "Too large resource version: 50, current: 4");
}

#[test]
fn list_with_exact_match_and_resource_version_zero_gets_422_invalid() {
    let mut w = World::new();
    let params = ListParams {
        resource_version: Some("0".into()),
        version_match: Some(VersionMatch::Exact),
        ..Default::default()
    };
    let err = w.handle(Request::list(&cm(), None, params)).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
}

#[test]
fn history_is_bounded_by_history_revisions_max() {
    let mut w = World::with_config(ServerConfig { history_revisions_max: 3, ..Default::default() });
    for i in 0..5 {
        w.create(&cm(), Some("default"), config_map(&format!("c{i}"), json!({})));
    }
    assert_eq!(w.server.revision(), 9);
    assert_eq!(w.server.oldest_revision(), 7);
    assert!(w.server.snapshot_at(6).is_none());
    assert_eq!(w.server.snapshot_at(7).unwrap().objects.len(), 3 + 3);
    let err = w.server.events_after(6).unwrap_err();
    assert_eq!(code_reason(&err), (410, "Expired"));
    assert_eq!(w.server.events_after(7).unwrap().iter().map(|e| e.revision).collect::<Vec<_>>(), [8, 9]);
}

#[test]
fn snapshots_share_unchanged_objects() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    let before = w.server.snapshot_at(5).unwrap();
    let after = w.server.snapshot();
    let key = before.iter_resource("configmaps", Some("default")).next().unwrap().0.clone();
    assert!(std::sync::Arc::ptr_eq(before.get(&key).unwrap(), after.get(&key).unwrap()));
}

#[test]
fn create_with_dry_run_changes_nothing() {
    let mut w = World::new();
    let params = PostParams { dry_run: true, ..Default::default() };
    let would = object(
        w.handle(Request::create(&cm(), Some("default"), obj(config_map("a", json!({}))), params)).unwrap(),
    );
    assert_eq!(would.metadata.name.as_deref(), Some("a"));
    assert_eq!(w.server.revision(), 4);
    assert_eq!(code_reason(&w.try_get(&cm(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
}

#[test]
fn an_update_with_dry_run_validates_but_changes_nothing() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let params = PostParams { dry_run: true, ..Default::default() };
    let body = obj(config_map("a", json!({"k": "2"})));
    let would = object(w.handle(Request::update(&cm(), Some("default"), "a", body, params.clone())).unwrap());
    assert_eq!(would.data["data"]["k"], json!("2"));
    assert_eq!(w.get(&cm(), Some("default"), "a"), a);
    let mut stale = (*a).clone();
    stale.metadata.resource_version = Some("1".into());
    let err = w.handle(Request::update(&cm(), Some("default"), "a", stale, params)).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn list_not_older_than_a_past_revision_serves_the_latest_state() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    let params = ListParams {
        resource_version: Some("5".into()),
        version_match: Some(VersionMatch::NotOlderThan),
        ..Default::default()
    };
    let list = w.list(&cm(), None, params);
    assert_eq!((list.resource_version.as_str(), list.items.len()), ("6", 2));
}

#[test]
fn every_retained_revision_reads_back_exactly_the_state_it_had() {
    let mut w = World::with_config(ServerConfig { history_revisions_max: 20, ..Default::default() });
    let mut states = std::collections::BTreeMap::new();
    for i in 0..100u32 {
        let name = format!("c{}", i % 7);
        let body = config_map(&name, json!({"i": i.to_string()}));
        match i % 3 {
            0 | 1 => {
                if w.try_create(&cm(), Some("default"), body.clone()).is_err() {
                    w.try_update(&cm(), Some("default"), obj(body)).unwrap();
                }
            }
            _ => {
                let _ = w.try_delete(&cm(), Some("default"), &name);
            }
        }
        let now = w.server.snapshot();
        states.insert(now.revision, now.objects);
        if i == 60 {
            w.server.compact(w.server.revision() - 5);
        }
    }
    let (oldest, newest) = (w.server.oldest_revision(), w.server.revision());
    assert_eq!(newest - oldest + 1, 20);
    for revision in oldest..=newest {
        let got = w.server.snapshot_at(revision).unwrap();
        assert_eq!(got.revision, revision);
        assert_eq!(got.objects, states[&revision], "revision {revision}");
    }
    assert!(w.server.snapshot_at(oldest - 1).is_none());
    assert!(w.server.snapshot_at(newest + 1).is_none());
}

#[test]
fn a_cloned_server_is_an_independent_fork() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let mut fork = World { server: w.server.clone(), ids: w.ids.clone(), now: w.now };
    fork.create(&cm(), Some("default"), config_map("b", json!({})));
    assert_eq!((w.server.revision(), fork.server.revision()), (5, 6));
    assert_eq!(code_reason(&w.try_get(&cm(), Some("default"), "b").unwrap_err()), (404, "NotFound"));
}
