//! The status subresource and metadata.generation.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{GetParams, Patch, PatchParams, PostParams};
use model_apiserver::{Request, Subresource};
use serde_json::json;

fn deployment(name: &str, replicas: i64) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    })
}

#[test]
fn create_drops_the_status_of_a_type_with_a_status_subresource() {
    let mut w = World::new();
    let mut body = deployment("d", 1);
    body["status"] = json!({"replicas": 5});
    let d = w.create(&deployments(), Some("default"), body);
    assert_eq!(d.data.get("status"), None);
    assert_eq!(d.metadata.generation, Some(1));
}

#[test]
fn a_new_pod_is_pending() {
    let mut w = World::new();
    let p = w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    assert_eq!(p.data["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    assert_eq!(p.metadata.generation, Some(1));
}

#[test]
fn an_update_of_the_main_resource_ignores_status_changes() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let mut body = deployment("d", 1);
    body["status"] = json!({"replicas": 5});
    let r = w.try_update(&deployments(), Some("default"), obj(body)).unwrap();
    assert_eq!(r.data.get("status"), None);
    assert_eq!(w.server.revision(), 5, "nothing else changed: a no-op");
}

#[test]
fn a_spec_change_bumps_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let r = w.try_merge(&deployments(), Some("default"), "d", json!({"spec": {"replicas": 3}})).unwrap();
    assert_eq!(r.metadata.generation, Some(2));
}

#[test]
fn a_label_change_does_not_bump_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let r = w
        .try_merge(&deployments(), Some("default"), "d", json!({"metadata": {"labels": {"a": "b"}}}))
        .unwrap();
    assert_eq!(r.metadata.generation, Some(1));
    assert_eq!(rv(&r), 6);
}

#[test]
fn a_status_update_takes_only_the_status() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let mut body = deployment("d", 7);
    body["metadata"]["labels"] = json!({"sneaky": "yes"});
    body["status"] = json!({"replicas": 1});
    let r = w
        .handle(
            Request::update(&deployments(), Some("default"), "d", obj(body), PostParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap();
    let d = object(r);
    assert_eq!(d.data["status"], json!({"replicas": 1}));
    assert_eq!(d.data["spec"]["replicas"], json!(1));
    assert_eq!(d.metadata.labels, None);
    assert_eq!(d.metadata.generation, Some(1));
    assert_eq!(rv(&d), 6);
}

#[test]
fn a_status_patch_changes_the_status_without_bumping_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let patch = Patch::Merge(json!({"status": {"readyReplicas": 1}}));
    let r = w
        .handle(
            Request::patch(&deployments(), Some("default"), "d", patch, PatchParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap();
    let d = object(r);
    assert_eq!(d.data["status"], json!({"readyReplicas": 1}));
    assert_eq!(d.metadata.generation, Some(1));
}

#[test]
fn a_status_update_with_a_stale_resource_version_gets_409_conflict() {
    let mut w = World::new();
    let d = w.create(&deployments(), Some("default"), deployment("d", 1));
    w.try_merge(&deployments(), Some("default"), "d", json!({"spec": {"replicas": 2}})).unwrap();
    let mut body = (*d).clone();
    body.data["status"] = json!({"replicas": 1});
    let err = w
        .handle(
            Request::update(&deployments(), Some("default"), "d", body, PostParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
}

#[test]
fn status_of_a_type_without_a_status_subresource_gets_404_not_found() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let r =
        Request::get(&cm(), Some("default"), "a", GetParams::default()).with_subresource(Subresource::Status);
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "the server could not find the requested resource");
}

#[test]
fn kinds_without_generation_tracking_have_no_generation() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    assert_eq!(a.metadata.generation, None);
    let b = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap();
    assert_eq!(b.metadata.generation, None);
}
