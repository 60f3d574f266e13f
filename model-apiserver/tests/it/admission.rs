//! Admission: mutating hooks, then validation, then validating hooks.
// Hooks answer a Status error, as the AdmissionHook contract says.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use common::*;
use kube_core::Status;
use model_apiserver::{AdmissionHook, errors};
use serde_json::json;

fn add_label(key: &'static str, value: &'static str) -> AdmissionHook {
    Arc::new(move |_req, obj| {
        obj.metadata.labels.get_or_insert_with(Default::default).insert(key.to_owned(), value.to_owned());
        Ok(())
    })
}

#[test]
fn mutating_hooks_run_in_registration_order_and_their_changes_are_stored() {
    let mut w = World::new();
    w.server.add_mutating_hook(add_label("first", "1"));
    w.server.add_mutating_hook(Arc::new(|_req, obj| {
        let seen = obj.metadata.labels.as_ref().and_then(|l| l.get("first")).cloned().unwrap_or_default();
        obj.metadata.labels.get_or_insert_with(Default::default).insert("second-saw".into(), seen);
        Ok(())
    }));
    let o = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let labels = o.metadata.labels.clone().unwrap();
    assert_eq!(labels.get("first").map(String::as_str), Some("1"));
    assert_eq!(labels.get("second-saw").map(String::as_str), Some("1"));
}

#[test]
fn a_validating_hook_sees_the_mutated_object_and_can_refuse_it() {
    let mut w = World::new();
    w.server.add_mutating_hook(add_label("team", "red"));
    w.server.add_validating_hook(Arc::new(|req, obj| {
        let team = obj.metadata.labels.as_ref().and_then(|l| l.get("team")).cloned();
        if team.as_deref() == Some("red") {
            let name = obj.metadata.name.clone().unwrap_or_default();
            return Err(errors::forbidden(
                &req.resource.api.group,
                &req.resource.api.plural,
                &name,
                "red is closed",
            ));
        }
        Ok(())
    }));
    let err = w.try_create(&cm(), Some("default"), config_map("a", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(err.message, "configmaps \"a\" is forbidden: red is closed");
    assert_eq!(w.server.revision(), 4);
}

#[test]
fn an_object_made_invalid_by_a_mutating_hook_gets_422_before_validating_hooks_run() {
    let mut w = World::new();
    let calls = Arc::new(Mutex::new(0));
    w.server.add_mutating_hook(Arc::new(|_req, obj| {
        obj.metadata.owner_references = Some(
            serde_json::from_value(json!([
                {"apiVersion": "v1", "kind": "A", "name": "x", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "B", "name": "y", "uid": "2", "controller": true},
            ]))
            .unwrap(),
        );
        Ok(())
    }));
    let counter = calls.clone();
    w.server.add_validating_hook(Arc::new(move |_req, _obj| {
        *counter.lock().unwrap() += 1;
        Ok(())
    }));
    let err = w.try_create(&cm(), Some("default"), config_map("a", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(*calls.lock().unwrap(), 0);
}

#[test]
fn hooks_see_the_operation_the_old_object_and_the_user() {
    let mut w = World::new();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    w.server.add_validating_hook(Arc::new(move |req, _obj| {
        let old = req.old.and_then(|o| o.metadata.resource_version.clone()).unwrap_or_default();
        log.lock().unwrap().push(format!(
            "{} {} old={old} user={}",
            req.operation,
            req.resource.api.kind,
            req.user.unwrap_or("-")
        ));
        Ok::<(), Status>(())
    }));
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let update = model_apiserver::Request::update(
        &cm(),
        Some("default"),
        "a",
        obj(config_map("a", json!({"k": "v"}))),
        Default::default(),
    )
    .with_user("ctrl");
    w.handle(update).unwrap();
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["create ConfigMap old= user=-", "update ConfigMap old=5 user=ctrl", "delete ConfigMap old=6 user=-"]
    );
}

#[test]
fn a_scale_write_shows_hooks_the_scale_subresource() {
    let mut w = World::new();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    w.server.add_validating_hook(Arc::new(move |req, _obj| {
        log.lock().unwrap().push(format!("{} {:?}", req.operation, req.subresource));
        Ok(())
    }));
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    w.create(&deployments(), Some("default"), body);
    let patch = kube_core::params::Patch::Merge(json!({"spec": {"replicas": 4}}));
    let r = model_apiserver::Request::patch(&deployments(), Some("default"), "d", patch, Default::default())
        .with_subresource(model_apiserver::Subresource::Scale);
    w.handle(r).unwrap();
    assert_eq!(*seen.lock().unwrap(), ["create None", "update Some(\"scale\")"]);
}

/// A Deployment whose pod template is valid, in `default`.
fn valid_deployment(name: &str) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}})
}

/// A mutating hook that gives a Deployment a negative replica count, which the spec rules refuse.
fn negative_replicas() -> model_apiserver::AdmissionHook {
    Arc::new(|req, obj| {
        if req.operation == "update" {
            obj.data["spec"]["replicas"] = json!(-1);
        }
        Ok(())
    })
}

#[test]
fn a_status_write_is_validated_by_the_status_rules_not_the_spec_rules() {
    // As kube-apiserver's status strategies (ValidateDeploymentStatusUpdate and its kin) do: a
    // write of /status checks the metadata and leaves the spec rules to the object's own writes.
    let mut w = World::new();
    w.create(&deployments(), Some("default"), valid_deployment("d"));
    w.server.add_mutating_hook(negative_replicas());
    let status = kube_core::params::Patch::Merge(json!({"status": {"observedGeneration": 1}}));
    let r = model_apiserver::Request::patch(&deployments(), Some("default"), "d", status, Default::default())
        .with_subresource(model_apiserver::Subresource::Status);
    let written = object(w.handle(r).expect("the status rules hold"));
    assert_eq!(written.data["status"]["observedGeneration"], json!(1));

    // The same object through the main resource: the spec rules refuse it.
    let main = kube_core::params::Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}}));
    let r = model_apiserver::Request::patch(&deployments(), Some("default"), "d", main, Default::default());
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert!(err.message.contains("spec.replicas"), "{}", err.message);
}

#[test]
fn a_status_write_still_gets_the_metadata_rules() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), valid_deployment("d"));
    w.server.add_mutating_hook(Arc::new(|req, obj| {
        if req.subresource == Some("status") {
            obj.metadata.labels.get_or_insert_with(Default::default).insert("bad key!".into(), "v".into());
        }
        Ok(())
    }));
    let status = kube_core::params::Patch::Merge(json!({"status": {"observedGeneration": 1}}));
    let r = model_apiserver::Request::patch(&deployments(), Some("default"), "d", status, Default::default())
        .with_subresource(model_apiserver::Subresource::Status);
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert!(err.message.contains("metadata.labels"), "{}", err.message);
}
