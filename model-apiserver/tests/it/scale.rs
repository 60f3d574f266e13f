//! The /scale subresource of Deployment, ReplicaSet and StatefulSet.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{GetParams, Patch, PatchParams, PostParams};
use model_apiserver::{Request, Subresource};
use serde_json::json;

fn deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"tier": "web", "app": "d"}},
                 "template": {"metadata": {"labels": {"tier": "web", "app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    })
}

fn get_scale(w: &mut World) -> std::sync::Arc<kube_core::DynamicObject> {
    let r = Request::get(&deployments(), Some("default"), "d", GetParams::default())
        .with_subresource(Subresource::Scale);
    object(w.handle(r).unwrap())
}

#[test]
fn a_deployment_defaults_to_one_replica_and_its_scale_shows_it_with_the_selector() {
    let mut w = World::new();
    let d = w.create(&deployments(), Some("default"), deployment());
    assert_eq!(d.data["spec"]["replicas"], json!(1));
    let scale = get_scale(&mut w);
    let types = scale.types.clone().unwrap();
    assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("autoscaling/v1", "Scale"));
    assert_eq!(
        scale.data,
        json!({"spec": {"replicas": 1}, "status": {"replicas": 0, "selector": "app=d,tier=web"}})
    );
    assert_eq!(scale.metadata.resource_version, d.metadata.resource_version);
    assert_eq!(scale.metadata.uid, d.metadata.uid);
}

#[test]
fn updating_scale_sets_spec_replicas_and_bumps_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment());
    let mut scale = (*get_scale(&mut w)).clone();
    scale.data["spec"]["replicas"] = json!(3);
    let r = Request::update(&deployments(), Some("default"), "d", scale, PostParams::default())
        .with_subresource(Subresource::Scale);
    let new_scale = object(w.handle(r).unwrap());
    assert_eq!(new_scale.data["spec"]["replicas"], json!(3));
    assert_eq!(new_scale.metadata.resource_version.as_deref(), Some("6"));
    let d = w.get(&deployments(), Some("default"), "d");
    assert_eq!((d.data["spec"]["replicas"].clone(), d.metadata.generation), (json!(3), Some(2)));
}

#[test]
fn patching_scale_applies_to_the_scale_view() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment());
    let r = Request::patch(
        &deployments(),
        Some("default"),
        "d",
        Patch::Merge(json!({"spec": {"replicas": 0}})),
        PatchParams::default(),
    )
    .with_subresource(Subresource::Scale);
    assert_eq!(object(w.handle(r).unwrap()).data["spec"]["replicas"], json!(0));
    assert_eq!(w.get(&deployments(), Some("default"), "d").data["spec"]["replicas"], json!(0));
}

#[test]
fn a_negative_scale_gets_422_invalid() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment());
    let r = Request::patch(
        &deployments(),
        Some("default"),
        "d",
        Patch::Merge(json!({"spec": {"replicas": -1}})),
        PatchParams::default(),
    )
    .with_subresource(Subresource::Scale);
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
}

#[test]
fn a_scale_update_with_a_stale_resource_version_gets_409_conflict() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment());
    let mut scale = (*get_scale(&mut w)).clone();
    w.try_merge(&deployments(), Some("default"), "d", json!({"metadata": {"labels": {"x": "y"}}})).unwrap();
    scale.data["spec"]["replicas"] = json!(2);
    let r = Request::update(&deployments(), Some("default"), "d", scale, PostParams::default())
        .with_subresource(Subresource::Scale);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (409, "Conflict"));
}

#[test]
fn scale_of_a_type_without_it_gets_404_not_found() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let r =
        Request::get(&cm(), Some("default"), "a", GetParams::default()).with_subresource(Subresource::Scale);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (404, "NotFound"));
}
