//! The `binding` subresource of Pods: what a scheduler's Binding does to its pod, and the answers
//! kube-apiserver gives when it cannot (`BindingREST.Create`).
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{PostParams, WatchParams};
use model_apiserver::{Request, Response, Subresource};
use serde_json::{Value, json};

fn pending_pod(w: &mut World, name: &str) -> std::sync::Arc<kube_core::DynamicObject> {
    w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {"keep": "me"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

fn bind_with(
    w: &mut World,
    name: &str,
    body: Value,
    params: PostParams,
) -> Result<Response, kube_core::Status> {
    let request =
        Request::create_subresource(&pods(), Some("default"), name, Subresource::Binding, obj(body), params);
    w.handle(request)
}

fn bind(w: &mut World, name: &str, body: Value) -> Result<Response, kube_core::Status> {
    bind_with(w, name, body, PostParams::default())
}

fn condition<'a>(pod: &'a kube_core::DynamicObject, ty: &str) -> Option<&'a Value> {
    pod.data.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == ty)
}

#[test]
fn a_binding_assigns_the_pod_and_answers_a_success_status() {
    let mut w = World::new();
    let created = pending_pod(&mut w, "web");
    let mut body = binding("web", "node-1");
    body["metadata"]["annotations"] = json!({"scheduled-by": "my-scheduler"});
    let answer = bind(&mut w, "web", body).unwrap();
    let Response::Completed { status, object } = answer else { panic!("not a Completed answer: {answer:?}") };
    assert_eq!(
        (status.status.as_ref().map(|s| format!("{s:?}")), status.code),
        (Some("Success".into()), 201)
    );
    assert!(rv(&object) > rv(&created), "the bind is a new revision");

    let pod = w.get(&pods(), Some("default"), "web");
    assert_eq!(pod.data["spec"]["nodeName"], "node-1");
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("keep").map(String::as_str), Some("me"), "the pod's annotations stay");
    assert_eq!(annotations.get("scheduled-by").map(String::as_str), Some("my-scheduler"));
    let scheduled = condition(&pod, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert_eq!(scheduled["lastProbeTime"], Value::Null);
    assert!(scheduled["lastTransitionTime"].is_string());
    // Storage is written directly: the pod's field ownership is unchanged.
    assert_eq!(pod.metadata.managed_fields, created.metadata.managed_fields);

    // Watchers see the bind as a MODIFIED event.
    let events = w.watch(
        &pods(),
        Some("default"),
        &created.metadata.resource_version.clone().unwrap(),
        WatchParams::default(),
    );
    let bound_rv = pod.metadata.resource_version.clone().unwrap();
    assert_eq!(describe(&events)[0], ("MODIFIED".into(), "web".into(), bound_rv));
}

#[test]
fn an_unschedulable_condition_turns_true_with_a_new_transition_time() {
    let mut w = World::new();
    pending_pod(&mut w, "web");
    let patch = kube_core::params::Patch::Merge(json!({"status": {"conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available",
        "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}));
    let request = Request::patch(&pods(), Some("default"), "web", patch, Default::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
    w.advance_seconds(30);
    bind(&mut w, "web", binding("web", "node-1")).unwrap();
    let pod = w.get(&pods(), Some("default"), "web");
    let scheduled = condition(&pod, "PodScheduled").unwrap();
    assert_eq!(scheduled["status"], "True");
    assert!(scheduled.get("reason").is_none() && scheduled.get("message").is_none(), "{scheduled}");
    assert_ne!(scheduled["lastTransitionTime"], "2020-01-01T00:00:00Z");
}

#[test]
fn a_bound_pod_cannot_be_bound_again() {
    let mut w = World::new();
    pending_pod(&mut w, "web");
    bind(&mut w, "web", binding("web", "node-1")).unwrap();
    let refused = bind(&mut w, "web", binding("web", "node-2")).unwrap_err();
    assert_eq!(code_reason(&refused), (409, "Conflict"));
    assert_eq!(
        refused.message,
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
    );
    assert_eq!(w.get(&pods(), Some("default"), "web").data["spec"]["nodeName"], "node-1");
}

#[test]
fn gated_and_deleting_pods_are_refused() {
    let mut w = World::new();
    w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
            "spec": {"schedulingGates": [{"name": "wait"}], "containers": [{"name": "c", "image": "i"}]}}),
    );
    let refused = bind(&mut w, "gated", binding("gated", "node-1")).unwrap_err();
    assert_eq!(
        refused.message,
        "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
    );

    w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "going", "finalizers": ["example.com/hold"]},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    w.try_delete(&pods(), Some("default"), "going").unwrap();
    let refused = bind(&mut w, "going", binding("going", "node-1")).unwrap_err();
    assert_eq!(code_reason(&refused), (409, "Conflict"));
    assert_eq!(
        refused.message,
        "Operation cannot be fulfilled on pods/binding \"going\": pod going is being deleted, cannot be assigned to a host"
    );
}

#[test]
fn the_binding_is_validated_as_upstream_returns_it() {
    let mut w = World::new();
    pending_pod(&mut w, "web");
    // ValidatePodBinding's errors are no API status upstream: a 500 without a reason.
    let mut no_target = binding("web", "node-1");
    no_target.as_object_mut().unwrap().remove("target");
    let refused = bind(&mut w, "web", no_target).unwrap_err();
    assert_eq!(
        (refused.code, refused.reason.as_str(), refused.message.as_str()),
        (500, "", "target.name: Required value")
    );

    let mut wrong_kind = binding("web", "");
    wrong_kind["target"]["kind"] = json!("Pod");
    let refused = bind(&mut w, "web", wrong_kind).unwrap_err();
    assert_eq!(
        refused.message,
        "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );

    let refused = bind(&mut w, "web", binding("other", "node-1")).unwrap_err();
    assert_eq!(code_reason(&refused), (400, "BadRequest"));
    assert_eq!(refused.message, "name in URL does not match name in Binding object");

    let mut wrong_type = binding("web", "node-1");
    wrong_type["kind"] = json!("Pod");
    let refused = bind(&mut w, "web", wrong_type).unwrap_err();
    assert_eq!(code_reason(&refused), (400, "BadRequest"));
    assert!(refused.message.starts_with("not a Binding object: "), "{}", refused.message);

    let missing = bind(&mut w, "nope", binding("nope", "node-1")).unwrap_err();
    assert_eq!((missing.code, missing.message.as_str()), (404, "pods \"nope\" not found"));
    assert!(
        w.get(&pods(), Some("default"), "web").data["spec"].get("nodeName").is_none(),
        "nothing was bound"
    );
}

#[test]
fn uid_and_resource_version_are_preconditions() {
    let mut w = World::new();
    let created = pending_pod(&mut w, "web");
    let mut stale = binding("web", "node-1");
    stale["metadata"]["resourceVersion"] = json!("1");
    let refused = bind(&mut w, "web", stale).unwrap_err();
    assert_eq!(code_reason(&refused), (409, "Conflict"));
    assert!(
        refused.message.contains(
            "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: "
        ),
        "{}",
        refused.message
    );
    let mut other_uid = binding("web", "node-1");
    other_uid["metadata"]["uid"] = json!("not-the-pods");
    let refused = bind(&mut w, "web", other_uid).unwrap_err();
    assert!(
        refused.message.contains("Precondition failed: UID in precondition: not-the-pods"),
        "{}",
        refused.message
    );

    let mut current = binding("web", "node-1");
    current["metadata"]["uid"] = json!(created.metadata.uid.clone());
    current["metadata"]["resourceVersion"] = json!(created.metadata.resource_version.clone());
    bind(&mut w, "web", current).unwrap();
    assert_eq!(w.get(&pods(), Some("default"), "web").data["spec"]["nodeName"], "node-1");
}

#[test]
fn a_dry_run_binds_nothing() {
    let mut w = World::new();
    let created = pending_pod(&mut w, "web");
    let params = PostParams { dry_run: true, ..PostParams::default() };
    let answer = bind_with(&mut w, "web", binding("web", "node-1"), params).unwrap();
    assert!(matches!(answer, Response::Completed { .. }), "{answer:?}");
    let pod = w.get(&pods(), Some("default"), "web");
    assert_eq!(pod.metadata.resource_version, created.metadata.resource_version);
    assert!(pod.data["spec"].get("nodeName").is_none());
}

#[test]
fn only_pods_take_a_binding_and_only_by_post() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("c", json!({})));
    let request = Request::create_subresource(
        &cm(),
        Some("default"),
        "c",
        Subresource::Binding,
        obj(binding("c", "node-1")),
        PostParams::default(),
    );
    assert_eq!(code_reason(&w.handle(request).unwrap_err()), (404, "NotFound"));
    pending_pod(&mut w, "web");
    let get = Request::get(&pods(), Some("default"), "web", Default::default())
        .with_subresource(Subresource::Binding);
    assert_eq!(code_reason(&w.handle(get).unwrap_err()), (405, "MethodNotAllowed"));
}
