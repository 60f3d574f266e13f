//! Namespaces: existence and termination checks on create, the Terminating phase, and finalize.
// The admission hook answers what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{DynamicObject, params::PostParams};
use model_apiserver::{
    AdmissionRequest, ApiServer, Context, IdSource, Request, Response, SeqIds, ServerConfig,
    server::DEFAULT_NAMESPACES,
};
use serde_json::json;

fn namespace(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[test]
fn a_new_namespace_is_active_with_the_kubernetes_finalizer() {
    let mut w = World::new();
    let ns = w.create(&namespaces(), None, namespace("team"));
    assert_eq!(ns.data["status"], json!({"phase": "Active"}));
    assert_eq!(ns.data["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns.metadata.namespace, None);
}

#[test]
fn creating_in_a_missing_namespace_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_create(&cm(), Some("nope"), config_map("a", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "namespaces \"nope\" not found");
}

#[test]
fn deleting_a_namespace_makes_it_terminating_and_keeps_it() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let Response::Object(ns) = w.try_delete(&namespaces(), None, "team").unwrap() else { panic!() };
    assert_eq!(ns.data["status"], json!({"phase": "Terminating"}));
    assert!(ns.metadata.deletion_timestamp.is_some());
    assert_eq!(ns.data["spec"], json!({"finalizers": ["kubernetes"]}));
    assert!(w.try_get(&namespaces(), None, "team").is_ok());
}

#[test]
fn a_deleted_namespace_has_a_deletion_timestamp_but_no_grace_period() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let Response::Object(ns) = w.try_delete(&namespaces(), None, "team").unwrap() else { panic!() };
    // The namespace registry's own Delete: a timestamp and the Terminating phase, nothing more.
    assert!(ns.metadata.deletion_timestamp.is_some());
    assert_eq!(ns.metadata.deletion_grace_period_seconds, None);
}

#[test]
fn creating_in_a_terminating_namespace_gets_403_forbidden() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    w.try_delete(&namespaces(), None, "team").unwrap();
    let err = w.try_create(&cm(), Some("team"), config_map("a", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "configmaps \"a\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
}

#[test]
fn the_403_for_a_create_in_a_terminating_namespace_carries_the_namespace_terminating_cause() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    w.try_delete(&namespaces(), None, "team").unwrap();
    let err = w.try_create(&cm(), Some("team"), config_map("a", json!({}))).unwrap_err();
    let details = err.details.expect("details");
    assert_eq!((details.kind.as_str(), details.name.as_str()), ("configmaps", "a"));
    let causes: Vec<_> =
        details.causes.iter().map(|c| (c.reason.as_str(), c.field.as_str(), c.message.as_str())).collect();
    assert_eq!(
        causes,
        [("NamespaceTerminating", "metadata.namespace", "namespace team is being terminated")]
    );
}

#[test]
fn a_fresh_server_has_the_four_default_namespaces_kube_node_lease_included() {
    let mut ids = model_apiserver::SeqIds::default();
    let mut ctx = Context::new(jiff::Timestamp::from_second(T0_SECONDS).unwrap(), &mut ids);
    let mut server = model_apiserver::ApiServer::new().with_default_namespaces(&mut ctx);
    let list = server.handle(Request::list(&namespaces(), None, Default::default()), &mut ctx).unwrap();
    let Response::List(list) = list else { panic!() };
    let names: Vec<_> = list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    // Revision 1 is the empty store; each namespace is one write.
    assert_eq!(server.revision(), 5);
}

/// What four creates of the default namespaces leave: the state, the event log, the revision,
/// and the id source's next draw.
fn four_creates(config: ServerConfig, now: jiff::Timestamp, ids: &mut SeqIds) -> (ApiServer, u64) {
    let mut ctx = Context::new(now, ids);
    let mut server = ApiServer::with_config(config);
    for name in DEFAULT_NAMESPACES {
        let body = DynamicObject::new(name, &namespaces());
        server.handle(Request::create(&namespaces(), None, body, PostParams::default()), &mut ctx).unwrap();
    }
    (server, ids.next_u64())
}

fn assert_same_servers(quick: &ApiServer, created: &ApiServer) {
    assert_eq!(quick.revision(), created.revision());
    assert_eq!(quick.snapshot().objects, created.snapshot().objects);
    let events = |s: &ApiServer| -> Vec<_> {
        s.events_after(s.oldest_revision())
            .unwrap()
            .into_iter()
            .map(|e| (e.revision, e.kind, e.key, e.object, e.previous))
            .collect()
    };
    assert_eq!(events(quick), events(created));
}

#[test]
fn with_default_namespaces_stores_what_creating_each_namespace_stores() {
    // It stores the namespaces from a template unless hooks must see the creates; the objects,
    // events, revisions and uids must be the creates' own, whatever the clock, the id source's
    // position and the defaulting setting.
    let now = jiff::Timestamp::from_second(T0_SECONDS + 12_345).unwrap();
    for builtin_defaults in [true, false] {
        let config = ServerConfig { builtin_defaults, ..ServerConfig::default() };
        for skipped_ids in [0, 3] {
            let mut ids = SeqIds::default();
            for _ in 0..skipped_ids {
                ids.next_u64();
            }
            let mut created_ids = ids.clone();
            let quick = ApiServer::with_config(config.clone())
                .with_default_namespaces(&mut Context::new(now, &mut ids));
            let (created, next) = four_creates(config.clone(), now, &mut created_ids);
            assert_same_servers(&quick, &created);
            assert_eq!(ids.next_u64(), next, "the same ids were drawn");
        }
    }
}

#[test]
fn with_default_namespaces_shows_each_create_to_admission_hooks_registered_before() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut server = ApiServer::new();
    let record = seen.clone();
    server.add_mutating_hook(std::sync::Arc::new(
        move |request: &AdmissionRequest<'_>, object: &mut DynamicObject| {
            record
                .lock()
                .unwrap()
                .push((request.operation, object.metadata.name.clone().unwrap_or_default()));
            Ok(())
        },
    ));
    let mut ids = SeqIds::default();
    let _server = server.with_default_namespaces(&mut Context::new(jiff::Timestamp::UNIX_EPOCH, &mut ids));
    let expected: Vec<_> = DEFAULT_NAMESPACES.iter().map(|n| ("create", (*n).to_owned())).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[test]
fn objects_in_a_terminating_namespace_can_still_be_updated_and_deleted() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    w.create(&cm(), Some("team"), config_map("a", json!({"k": "1"})));
    w.try_delete(&namespaces(), None, "team").unwrap();
    w.try_update(&cm(), Some("team"), obj(config_map("a", json!({"k": "2"})))).unwrap();
    assert!(matches!(w.try_delete(&cm(), Some("team"), "a").unwrap(), Response::Deleted { .. }));
}

#[test]
fn finalizing_a_terminating_namespace_removes_it() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    w.try_delete(&namespaces(), None, "team").unwrap();
    let mut ctx = Context::new(w.now, &mut w.ids);
    let last = object(w.server.finalize_namespace("team", &mut ctx).unwrap());
    assert_eq!(last.data["spec"], json!({}));
    assert_eq!(code_reason(&w.try_get(&namespaces(), None, "team").unwrap_err()), (404, "NotFound"));
}

#[test]
fn finalizing_an_active_namespace_only_clears_its_finalizers() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let mut ctx = Context::new(w.now, &mut w.ids);
    w.server.finalize_namespace("team", &mut ctx).unwrap();
    let ns = w.get(&namespaces(), None, "team");
    // Emptied, the finalizers are left out (`omitempty`); the spec is a struct and stays.
    assert_eq!(ns.data["spec"], json!({}));
    assert_eq!(ns.data["status"], json!({"phase": "Active"}));
}

#[test]
fn an_update_cannot_change_a_namespaces_spec_finalizers() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let updated = w.try_merge(&namespaces(), None, "team", json!({"spec": {"finalizers": []}})).unwrap();
    assert_eq!(updated.data["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(w.server.revision(), 5, "the update was a no-op");
}

#[test]
fn a_body_namespace_that_differs_from_the_request_gets_400_bad_request() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["namespace"] = json!("kube-system");
    let err = w.try_create(&cm(), Some("default"), body).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[test]
fn create_without_a_request_namespace_takes_the_body_namespace() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["namespace"] = json!("kube-system");
    let created = w.try_create(&cm(), None, body).unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("kube-system"));
}

#[test]
fn a_namespaced_get_without_a_namespace_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_get(&cm(), None, "a").unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "the server could not find the requested resource");
}

#[test]
fn a_cluster_scoped_create_with_a_request_namespace_gets_404_not_found() {
    let mut w = World::new();
    let r = Request::create(&namespaces(), Some("default"), obj(namespace("x")), PostParams::default());
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (404, "NotFound"));
}

#[test]
fn a_namespace_in_the_body_of_a_cluster_scoped_object_is_cleared() {
    let mut w = World::new();
    let mut body = namespace("team");
    body["metadata"]["namespace"] = json!("default");
    let ns = w.create(&namespaces(), None, body);
    assert_eq!(ns.metadata.namespace, None);
}

#[test]
fn a_finalize_update_writes_only_spec_finalizers_and_removes_a_terminating_namespace() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let deleting = object(w.try_delete(&namespaces(), None, "team").unwrap());
    let mut body = (*deleting).clone();
    body.data["spec"]["finalizers"] = json!([]);
    body.metadata.labels = Some([("ignored".to_owned(), "yes".to_owned())].into());
    let r = Request::update(&namespaces(), None, "team", body, PostParams::default())
        .with_subresource(model_apiserver::Subresource::Finalize);
    let last = object(w.handle(r).unwrap());
    assert_eq!(last.data["spec"], json!({}));
    let labels = last.metadata.labels.clone().unwrap();
    assert_eq!(labels.keys().collect::<Vec<_>>(), ["kubernetes.io/metadata.name"]);
    assert_eq!(code_reason(&w.try_get(&namespaces(), None, "team").unwrap_err()), (404, "NotFound"));
}

#[test]
fn finalize_with_a_stale_resource_version_gets_409_and_is_only_for_namespaces() {
    let mut w = World::new();
    w.create(&namespaces(), None, namespace("team"));
    let mut body = obj(namespace("team"));
    body.metadata.resource_version = Some("2".into());
    let r = Request::update(&namespaces(), None, "team", body, PostParams::default())
        .with_subresource(model_apiserver::Subresource::Finalize);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (409, "Conflict"));
    let r =
        Request::update(&cm(), Some("default"), "a", obj(config_map("a", json!({}))), PostParams::default())
            .with_subresource(model_apiserver::Subresource::Finalize);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (404, "NotFound"));
    let r = Request::get(&namespaces(), None, "team", Default::default())
        .with_subresource(model_apiserver::Subresource::Finalize);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (405, "MethodNotAllowed"));
}
