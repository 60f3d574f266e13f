//! Deletion: finalizers, graceful pod deletion, preconditions, propagation and dry runs.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{DeleteParams, ListParams, Preconditions, PropagationPolicy};
use model_apiserver::{Request, Response};
use serde_json::json;

fn with_finalizers(name: &str, finalizers: &[&str]) -> serde_json::Value {
    let mut body = config_map(name, json!({}));
    body["metadata"]["finalizers"] = json!(finalizers);
    body
}

fn ts(t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> serde_json::Value {
    serde_json::to_value(t.clone().unwrap()).unwrap()
}

fn scheduled_pod(name: &str, grace: Option<i64>) -> serde_json::Value {
    let mut spec = json!({"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn delete_without_finalizers_removes_the_object_and_answers_a_success_status() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let Response::Deleted { status, object } = w.try_delete(&cm(), Some("default"), "a").unwrap() else {
        panic!("expected Deleted")
    };
    // The registry's Success Status carries no code (the HTTP answer is 200).
    assert_eq!(status.code, 0);
    let details = status.details.unwrap();
    assert_eq!((details.name.as_str(), details.kind.as_str()), ("a", "configmaps"));
    assert_eq!(Some(details.uid), a.metadata.uid);
    // The answer is the object as stored; the DELETED event carries the deletion's revision.
    assert_eq!(object.metadata.resource_version.as_deref(), Some("5"));
    assert_eq!(object.metadata.deletion_timestamp, None);
    assert_eq!(code_reason(&w.try_get(&cm(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
    let events = w.server.events_after(5).unwrap();
    assert_eq!(events[0].kind, model_apiserver::StoredEventType::Deleted);
    assert_eq!(events[0].object.metadata.resource_version.as_deref(), Some("6"));
}

#[test]
fn delete_of_a_missing_object_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_delete(&cm(), Some("default"), "a").unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"a\" not found");
}

#[test]
fn delete_with_finalizers_sets_deletion_timestamp_and_keeps_the_object() {
    let mut w = World::new();
    w.advance_seconds(10);
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x"]));
    let Response::Object(o) = w.try_delete(&cm(), Some("default"), "a").unwrap() else { panic!() };
    assert_eq!(ts(&o.metadata.deletion_timestamp), json!("2026-01-01T00:00:10Z"));
    assert_eq!(o.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(rv(&o), 6);
    assert_eq!(
        w.get(&cm(), Some("default"), "a").metadata.finalizers,
        Some(vec!["example.com/x".to_owned()])
    );
}

#[test]
fn deletion_start_bumps_the_generation_of_kinds_that_track_it() {
    let mut w = World::new();
    let mut body = json!({"metadata": {"name": "d", "finalizers": ["example.com/x"]}, "spec": {"replicas": 1,
        "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    body["apiVersion"] = json!("apps/v1");
    body["kind"] = json!("Deployment");
    let d = w.create(&deployments(), Some("default"), body);
    assert_eq!(d.metadata.generation, Some(1));
    let o = object(w.try_delete(&deployments(), Some("default"), "d").unwrap());
    assert_eq!(o.metadata.generation, Some(2));
}

#[test]
fn removing_the_last_finalizer_of_a_deleting_object_deletes_it() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x", "example.com/y"]));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let one_left = w
        .try_merge(&cm(), Some("default"), "a", json!({"metadata": {"finalizers": ["example.com/y"]}}))
        .unwrap();
    assert_eq!(rv(&one_left), 7);
    assert!(w.try_get(&cm(), Some("default"), "a").is_ok());
    let last = w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"finalizers": null}})).unwrap();
    // The writer gets its updated object (no finalizers) at the resourceVersion it updated, as
    // kube-apiserver's deleteWithoutFinalizers answers; the update itself is never stored.
    assert_eq!(rv(&last), 7);
    assert_eq!(last.metadata.finalizers, None);
    assert_eq!(code_reason(&w.try_get(&cm(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
    let events = w.server.events_after(7).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, model_apiserver::StoredEventType::Deleted);
    // The DELETED event carries what was stored, finalizer included, at the deletion's revision.
    assert_eq!(events[0].object.metadata.finalizers.as_deref(), Some(&["example.com/y".to_owned()][..]));
    assert_eq!(rv(&events[0].object), 8);
}

#[test]
fn adding_a_finalizer_to_a_deleting_object_gets_422_forbidden_field() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x"]));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let err = w
        .try_merge(
            &cm(),
            Some("default"),
            "a",
            json!({"metadata": {"finalizers": ["example.com/x", "example.com/new"]}}),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldValueForbidden", "metadata.finalizers"));
    assert_eq!(
        err.message,
        "ConfigMap \"a\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/new\"}"
    );
}

#[test]
fn an_update_cannot_clear_a_deletion_timestamp() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x"]));
    let deleting = object(w.try_delete(&cm(), Some("default"), "a").unwrap());
    let mut body = (*deleting).clone();
    body.metadata.deletion_timestamp = None;
    body.data["data"] = json!({"k": "v"});
    let updated = w.try_update(&cm(), Some("default"), body).unwrap();
    assert_eq!(updated.metadata.deletion_timestamp, deleting.metadata.deletion_timestamp);
}

#[test]
fn a_second_delete_of_a_deleting_object_returns_it_unchanged() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x"]));
    let first = object(w.try_delete(&cm(), Some("default"), "a").unwrap());
    w.advance_seconds(5);
    let Response::Object(second) = w.try_delete(&cm(), Some("default"), "a").unwrap() else { panic!() };
    assert_eq!(second, first);
    assert_eq!(w.server.revision(), 6);
}

#[test]
fn a_scheduled_pod_is_deleted_gracefully_with_the_default_grace_period() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), scheduled_pod("p", None));
    let Response::Object(p) = w.try_delete(&pods(), Some("default"), "p").unwrap() else { panic!() };
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    assert_eq!(ts(&p.metadata.deletion_timestamp), json!("2026-01-01T00:00:30Z"));
    assert_eq!(p.metadata.generation, Some(2));
}

#[test]
fn a_pods_termination_grace_period_is_its_deletion_grace_period_unless_the_request_sets_one() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), scheduled_pod("p", Some(5)));
    w.create(&pods(), Some("default"), scheduled_pod("q", Some(5)));
    let p = object(w.try_delete(&pods(), Some("default"), "p").unwrap());
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(5));
    let params = DeleteParams { grace_period_seconds: Some(2), ..Default::default() };
    let q = object(w.handle(Request::delete(&pods(), Some("default"), "q", params)).unwrap());
    assert_eq!(q.metadata.deletion_grace_period_seconds, Some(2));
}

#[test]
fn a_graceful_pod_goes_when_deleted_again_with_grace_zero() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), scheduled_pod("p", None));
    w.try_delete(&pods(), Some("default"), "p").unwrap();
    let params = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
    let gone = w.handle(Request::delete(&pods(), Some("default"), "p", params)).unwrap();
    // Pods answer the deleted object, not a Status.
    assert!(matches!(gone, Response::Object(_)), "{gone:?}");
    assert_eq!(code_reason(&w.try_get(&pods(), Some("default"), "p").unwrap_err()), (404, "NotFound"));
}

#[test]
fn an_unscheduled_pod_is_deleted_at_once_and_answered_with_its_deletion_mark() {
    let mut w = World::new();
    let created = w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    let gone = object(w.try_delete(&pods(), Some("default"), "p").unwrap());
    // The pod registry deletes gracefully with a grace of 0: the store writes the mark, then
    // removes what it wrote.
    assert_eq!(gone.metadata.deletion_timestamp.as_ref().map(|t| t.0), Some(w.now));
    assert_eq!(gone.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(code_reason(&w.try_get(&pods(), Some("default"), "p").unwrap_err()), (404, "NotFound"));
    let events = w.server.events_after(rv(&created)).unwrap();
    let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
    use model_apiserver::StoredEventType::{Deleted, Modified};
    assert_eq!(kinds, [Modified, Deleted]);
    assert_eq!(rv(&gone), rv(&events[0].object));
    assert!(events[1].object.metadata.deletion_timestamp.is_some());
}

#[test]
fn a_uid_precondition_mismatch_gets_409_conflict() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: Some("other".into()), resource_version: None }),
        ..Default::default()
    };
    let err = w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    // The registry's `BeforeDelete` checks it first, naming the kind.
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on ConfigMap \"a\": the UID in the precondition (other) does not match the UID in record ({}). The object might have been deleted and then recreated",
            a.metadata.uid.as_deref().unwrap()
        )
    );
    assert_eq!(err.details.as_ref().map(|d| d.kind.as_str()), Some("ConfigMap"));
}

#[test]
fn a_resource_version_precondition_mismatch_gets_409_conflict() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: None, resource_version: Some("3".into()) }),
        ..Default::default()
    };
    let err = w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on ConfigMap \"a\": the ResourceVersion in the precondition (3) does not match the ResourceVersion in record (5). The object might have been modified"
    );
}

#[test]
fn foreground_propagation_adds_the_foreground_deletion_finalizer() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params =
        DeleteParams { propagation_policy: Some(PropagationPolicy::Foreground), ..Default::default() };
    let o = object(w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap());
    assert_eq!(o.metadata.finalizers, Some(vec!["foregroundDeletion".to_owned()]));
    assert!(o.metadata.deletion_timestamp.is_some());
}

#[test]
fn orphan_propagation_adds_the_orphan_finalizer() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..Default::default() };
    let o = object(w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap());
    assert_eq!(o.metadata.finalizers, Some(vec!["orphan".to_owned()]));
}

#[test]
fn delete_with_dry_run_changes_nothing() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = DeleteParams { dry_run: true, ..Default::default() };
    let r = w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap();
    assert!(matches!(r, Response::Deleted { .. }));
    assert_eq!(w.server.revision(), 5);
    assert!(w.try_get(&cm(), Some("default"), "a").is_ok());
}

#[test]
fn delete_collection_deletes_every_object_in_the_namespace_one_revision_each() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.create(&cm(), Some("default"), config_map("b", json!({})));
    w.create(&cm(), Some("kube-system"), config_map("c", json!({})));
    let r = w
        .handle(Request::delete_collection(
            &cm(),
            Some("default"),
            ListParams::default(),
            DeleteParams::default(),
        ))
        .unwrap();
    let Response::List(list) = r else { panic!() };
    assert_eq!(list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(list.resource_version, "9");
    assert_eq!(w.list(&cm(), None, ListParams::default()).items.len(), 1);
}

#[test]
fn a_graceful_pod_with_a_finalizer_stays_until_both_grace_zero_and_the_finalizer_are_done() {
    let mut w = World::new();
    let mut pod = scheduled_pod("p", None);
    pod["metadata"]["finalizers"] = json!(["example.com/x"]);
    w.create(&pods(), Some("default"), pod);
    w.try_delete(&pods(), Some("default"), "p").unwrap();
    // The finalizer goes while the grace period is pending: the pod stays (the kubelet has not
    // confirmed termination yet).
    let p = w.try_merge(&pods(), Some("default"), "p", json!({"metadata": {"finalizers": null}})).unwrap();
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    assert!(w.try_get(&pods(), Some("default"), "p").is_ok());
    let params = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
    w.handle(Request::delete(&pods(), Some("default"), "p", params)).unwrap();
    assert_eq!(code_reason(&w.try_get(&pods(), Some("default"), "p").unwrap_err()), (404, "NotFound"));
}

#[test]
fn kubes_finalizer_helper_removal_patch_deletes_a_deleting_object() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/cleanup"]));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]))
    .unwrap();
    let patch = kube_core::params::Patch::Json(ops);
    let r = w.handle(Request::patch(&cm(), Some("default"), "a", patch, Default::default())).unwrap();
    // The emptied list is left out, as Go's `omitempty` leaves it.
    assert_eq!(object(r).metadata.finalizers, None);
    assert_eq!(code_reason(&w.try_get(&cm(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
}

#[test]
fn a_completed_pod_or_service_account_delete_answers_the_object_not_a_status() {
    let mut w = World::new();
    w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    let sa = builtin("", "serviceaccounts");
    w.create(&sa, Some("default"), json!({"metadata": {"name": "s"}}));
    for (ar, name) in [(pods(), "p"), (sa, "s")] {
        let r = w.try_delete(&ar, Some("default"), name).unwrap();
        let Response::Object(o) = r else { panic!("{r:?}") };
        assert_eq!(o.metadata.name.as_deref(), Some(name));
    }
}

// The store's deletionFinalizersForGarbageCollection (staging/src/k8s.io/apiserver/pkg/registry/
// generic/registry/store.go), on every delete, an object already deleting too: the orphan and
// foregroundDeletion finalizers are dropped, then added back as shouldOrphanDependents and
// shouldDeleteDependents say (an explicit policy first, then the finalizer the object has); a
// delete that leaves the same set keeps the order.
#[test]
fn a_second_delete_with_another_policy_swaps_the_garbage_collector_finalizer() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), with_finalizers("a", &["example.com/x"]));
    let delete = |w: &mut World, policy: Option<PropagationPolicy>| {
        let params = DeleteParams { propagation_policy: policy, ..Default::default() };
        object(w.handle(Request::delete(&cm(), Some("default"), "a", params)).unwrap())
            .metadata
            .finalizers
            .clone()
    };
    let f = |names: &[&str]| Some(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>());
    assert_eq!(delete(&mut w, Some(PropagationPolicy::Orphan)), f(&["example.com/x", "orphan"]));
    // No policy: the finalizer the object has decides, nothing changes.
    assert_eq!(delete(&mut w, None), f(&["example.com/x", "orphan"]));
    assert_eq!(
        delete(&mut w, Some(PropagationPolicy::Foreground)),
        f(&["example.com/x", "foregroundDeletion"])
    );
    assert_eq!(delete(&mut w, Some(PropagationPolicy::Background)), f(&["example.com/x"]));
}
