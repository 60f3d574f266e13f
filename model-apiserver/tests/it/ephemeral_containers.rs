//! `pods/{name}/ephemeralcontainers`, as `kubectl debug` uses it: the Pod read through it, a
//! debugging container added by a patch of it (only `spec.ephemeralContainers` taken, the
//! generation bumped), never removed or changed, validated as kube-apiserver validates it; and
//! no ephemeral container on a create or through the Pod itself.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

use common::*;
use kube_core::DynamicObject;
use kube_core::params::{GetParams, Patch, PatchParams};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}})
}

fn debugger(name: &str) -> Value {
    json!({"name": name, "image": "busybox", "targetContainerName": "app", "stdin": true, "tty": true})
}

fn patch_ephemeral(w: &mut World, name: &str, patch: Value) -> Result<Arc<DynamicObject>, kube_core::Status> {
    let request =
        Request::patch(&pods(), Some("default"), name, Patch::Strategic(patch), PatchParams::default())
            .with_subresource(Subresource::EphemeralContainers);
    w.handle(request).map(object)
}

fn ephemeral_names(pod: &DynamicObject) -> Vec<String> {
    let list = pod.data.pointer("/spec/ephemeralContainers").and_then(Value::as_array);
    list.into_iter().flatten().filter_map(|c| c.get("name")?.as_str().map(str::to_owned)).collect()
}

#[test]
fn a_debugging_container_is_added_through_the_subresource_and_nothing_else_changes() {
    let mut w = World::new();
    let created = w.create(&pods(), Some("default"), pod("web"));
    // GET of the subresource is the Pod.
    let read = w
        .handle(
            Request::get(&pods(), Some("default"), "web", GetParams::default())
                .with_subresource(Subresource::EphemeralContainers),
        )
        .map(object)
        .unwrap();
    assert_eq!(read.metadata.uid, created.metadata.uid);
    // A patch adds one; the labels it also changes and the spec it also changes are dropped.
    let patched = patch_ephemeral(
        &mut w,
        "web",
        json!({"metadata": {"labels": {"app": "other"}},
               "spec": {"activeDeadlineSeconds": 5, "ephemeralContainers": [debugger("debugger-x7k2p")]}}),
    )
    .unwrap();
    assert_eq!(ephemeral_names(&patched), ["debugger-x7k2p"]);
    let stored = patched.data.pointer("/spec/ephemeralContainers/0").unwrap();
    // Defaulted as any container.
    assert_eq!(stored["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(stored["imagePullPolicy"], "Always");
    assert_eq!(patched.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(patched.data.pointer("/spec/activeDeadlineSeconds").is_none());
    assert_eq!(patched.metadata.generation, Some(created.metadata.generation.unwrap() + 1));
    // A second one is added beside it.
    let patched =
        patch_ephemeral(&mut w, "web", json!({"spec": {"ephemeralContainers": [debugger("two")]}})).unwrap();
    assert_eq!(ephemeral_names(&patched), ["debugger-x7k2p", "two"]);
}

#[test]
fn ephemeral_containers_may_not_be_removed_or_changed() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod("web"));
    patch_ephemeral(&mut w, "web", json!({"spec": {"ephemeralContainers": [debugger("dbg")]}})).unwrap();
    let err = patch_ephemeral(
        &mut w,
        "web",
        json!({"spec": {"$setElementOrder/ephemeralContainers": [], "ephemeralContainers": [{"name": "dbg", "$patch": "delete"}]}}),
    )
    .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
    );
    let err = patch_ephemeral(
        &mut w,
        "web",
        json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "alpine"}]}}),
    )
    .unwrap_err();
    assert!(
        err.message.starts_with(
            "Pod \"web\" is invalid: spec.ephemeralContainers[dbg]: Forbidden: existing ephemeral containers \"dbg\" may not be changed"
        ),
        "{}",
        err.message
    );
}

#[test]
fn ephemeral_containers_are_validated_and_never_come_through_a_create_or_the_pod_itself() {
    let mut w = World::new();
    let mut with = pod("web");
    with["spec"]["ephemeralContainers"] = json!([debugger("dbg")]);
    let err = w.try_create(&pods(), Some("default"), with).unwrap_err();
    assert_eq!(
        err.message,
        "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: cannot be set on create"
    );
    let created = w.create(&pods(), Some("default"), pod("web"));
    // Through the Pod itself, it is a spec change a Pod update may not make.
    let err = w
        .try_merge(
            &pods(),
            Some("default"),
            "web",
            json!({"spec": {"ephemeralContainers": [debugger("dbg")]}}),
        )
        .unwrap_err();
    assert!(err.message.contains("spec: Forbidden: pod updates may not change fields"), "{}", err.message);
    // What an ephemeral container may not have, in upstream's order and words.
    let bad = json!({"name": "app", "image": "busybox", "targetContainerName": "nope",
        "ports": [{"containerPort": 80}], "readinessProbe": {"tcpSocket": {"port": 80}},
        "volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": "x"}]});
    let err = patch_ephemeral(&mut w, "web", json!({"spec": {"ephemeralContainers": [bad]}})).unwrap_err();
    let causes: Vec<(String, String)> =
        err.details.unwrap().causes.into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(
        causes,
        [
            ("spec.ephemeralContainers[0].volumeMounts[0].name", "Not found: \"data\""),
            ("spec.ephemeralContainers[0].name", "Duplicate value: \"app\""),
            ("spec.ephemeralContainers[0].targetContainerName", "Not found: \"nope\""),
            ("spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container"),
            (
                "spec.ephemeralContainers[0].readinessProbe",
                "Forbidden: cannot be set for an Ephemeral Container"
            ),
            (
                "spec.ephemeralContainers[0].volumeMounts[0].subPath",
                "Forbidden: cannot be set for an Ephemeral Container"
            ),
        ]
        .map(|(f, m)| (f.to_owned(), m.to_owned()))
    );
    assert_eq!(
        w.get(&pods(), Some("default"), "web").metadata.resource_version,
        created.metadata.resource_version
    );
    // Only Pods have the subresource.
    w.create(&cm(), Some("default"), config_map("c", json!({})));
    let request =
        Request::patch(&cm(), Some("default"), "c", Patch::Merge(json!({})), PatchParams::default())
            .with_subresource(Subresource::EphemeralContainers);
    assert_eq!(code_reason(&w.handle(request).unwrap_err()), (404, "NotFound"));
}
