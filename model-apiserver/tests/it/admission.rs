//! Admission: mutating hooks, then validation, then validating hooks.
// Hooks answer a Status error, as the AdmissionHook contract says.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use common::*;
use kube_core::Status;
use model_apiserver::{AdmissionHook, ServerConfig, errors};
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

/// A server with kube-apiserver's `StorageObjectInUseProtection` plugin on.
fn with_storage_protection() -> World {
    World::with_config(ServerConfig { storage_object_in_use_protection: true, ..ServerConfig::default() })
}

fn claim(name: &str, finalizers: &[&str]) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "finalizers": finalizers},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    })
}

fn volume(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}},
    })
}

fn finalizers(o: &kube_core::DynamicObject) -> Vec<&str> {
    o.metadata.finalizers.iter().flatten().map(String::as_str).collect()
}

#[test]
fn storage_protection_gives_created_claims_and_volumes_their_finalizers_after_their_own() {
    let mut w = with_storage_protection();
    let pvcs = builtin("", "persistentvolumeclaims");
    let a = w.create(&pvcs, Some("default"), claim("a", &[]));
    assert_eq!(finalizers(&a), ["kubernetes.io/pvc-protection"]);
    // After the creator's own, and not twice.
    let b = w.create(&pvcs, Some("default"), claim("b", &["example.com/keep"]));
    assert_eq!(finalizers(&b), ["example.com/keep", "kubernetes.io/pvc-protection"]);
    let c = w.create(&pvcs, Some("default"), claim("c", &["kubernetes.io/pvc-protection"]));
    assert_eq!(finalizers(&c), ["kubernetes.io/pvc-protection"]);
    let v = w.create(&builtin("", "persistentvolumes"), None, volume("v"));
    assert_eq!(finalizers(&v), ["kubernetes.io/pv-protection"]);
    // Other kinds are untouched.
    let m = w.create(&cm(), Some("default"), config_map("m", json!({})));
    assert!(m.metadata.finalizers.is_none());
}

#[test]
fn storage_protection_acts_on_creates_only_and_a_protected_claim_waits_for_its_finalizer() {
    let mut w = with_storage_protection();
    let pvcs = builtin("", "persistentvolumeclaims");
    w.create(&pvcs, Some("default"), claim("a", &[]));
    // An update that drops the finalizer keeps it dropped: the plugin handles creates only
    // (`admission.NewHandler(admission.Create)`), as the controller that removes it relies on.
    let dropped =
        w.try_merge(&pvcs, Some("default"), "a", json!({"metadata": {"finalizers": null}})).unwrap();
    assert!(dropped.metadata.finalizers.is_none());
    w.try_delete(&pvcs, Some("default"), "a").unwrap();
    let gone = w.try_get(&pvcs, Some("default"), "a").unwrap_err();
    assert_eq!(code_reason(&gone), (404, "NotFound"), "an unprotected claim goes at once");
    // A protected one stays, terminating, until its finalizer goes.
    w.create(&pvcs, Some("default"), claim("b", &[]));
    let terminating = object(w.try_delete(&pvcs, Some("default"), "b").unwrap());
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(finalizers(&terminating), ["kubernetes.io/pvc-protection"]);
}

#[test]
fn without_storage_protection_claims_get_no_finalizer() {
    let mut w = World::new();
    let a = w.create(&builtin("", "persistentvolumeclaims"), Some("default"), claim("a", &[]));
    assert!(finalizers(&a).is_empty());
}

/// A server with kube-apiserver's `DefaultStorageClass` plugin on.
fn with_default_storage_class() -> World {
    World::with_config(ServerConfig { default_storage_class: true, ..ServerConfig::default() })
}

#[test]
fn without_the_plugin_a_claim_is_stored_as_sent() {
    let mut w = World::new();
    let classes = builtin("storage.k8s.io", "storageclasses");
    w.create(&classes, None, storage_class("standard", Some("storageclass.kubernetes.io/is-default-class")));
    let a = w.create(&builtin("", "persistentvolumeclaims"), Some("default"), claim("a", &[]));
    assert_eq!(claim_class(&a), None);
}

fn storage_class(name: &str, default: Option<&str>) -> serde_json::Value {
    let annotations = match default {
        Some(key) => json!({ key: "true" }),
        None => json!({}),
    };
    json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": "example.com/disk",
    })
}

fn claim_class(o: &kube_core::DynamicObject) -> Option<&str> {
    o.data.pointer("/spec/storageClassName").and_then(serde_json::Value::as_str)
}

#[test]
fn a_claim_created_without_a_class_gets_the_default_storage_class_in_the_answer() {
    let mut w = with_default_storage_class();
    let pvcs = builtin("", "persistentvolumeclaims");
    let classes = builtin("storage.k8s.io", "storageclasses");
    // No default class yet: the claim is left without one.
    let before = w.create(&pvcs, Some("default"), claim("before", &[]));
    assert_eq!(claim_class(&before), None);
    w.create(&classes, None, storage_class("slow", None));
    w.create(&classes, None, storage_class("standard", Some("storageclass.kubernetes.io/is-default-class")));
    let a = w.create(&pvcs, Some("default"), claim("a", &[]));
    assert_eq!(claim_class(&a), Some("standard"));
    assert_eq!(claim_class(&w.get(&pvcs, Some("default"), "a")), Some("standard"), "stored so");
    // A claim that names a class, asks for none ("") or uses the beta annotation keeps it.
    let mut named = claim("named", &[]);
    named["spec"]["storageClassName"] = json!("slow");
    assert_eq!(claim_class(&w.create(&pvcs, Some("default"), named)), Some("slow"));
    let mut none = claim("none", &[]);
    none["spec"]["storageClassName"] = json!("");
    assert_eq!(claim_class(&w.create(&pvcs, Some("default"), none)), Some(""));
    let mut beta = claim("beta", &[]);
    beta["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "slow"});
    assert_eq!(claim_class(&w.create(&pvcs, Some("default"), beta)), None);
    // Creates only: the claim made before the default class keeps none through an update.
    let updated =
        w.try_merge(&pvcs, Some("default"), "before", json!({"metadata": {"labels": {"a": "b"}}})).unwrap();
    assert_eq!(claim_class(&updated), None);
}

#[test]
fn of_two_default_storage_classes_the_newest_is_the_default_then_the_first_by_name() {
    let mut w = with_default_storage_class();
    let pvcs = builtin("", "persistentvolumeclaims");
    let classes = builtin("storage.k8s.io", "storageclasses");
    // Created in the same second: ties go by name, and the beta annotation counts.
    w.create(&classes, None, storage_class("zeta", Some("storageclass.kubernetes.io/is-default-class")));
    w.create(&classes, None, storage_class("beta", Some("storageclass.beta.kubernetes.io/is-default-class")));
    let a = w.create(&pvcs, Some("default"), claim("a", &[]));
    assert_eq!(claim_class(&a), Some("beta"));
    // A newer default wins over both, whatever its name.
    w.advance_seconds(5);
    w.create(&classes, None, storage_class("omega", Some("storageclass.kubernetes.io/is-default-class")));
    let b = w.create(&pvcs, Some("default"), claim("b", &[]));
    assert_eq!(claim_class(&b), Some("omega"));
}

#[test]
fn a_pod_created_in_a_namespace_with_a_limit_range_gets_its_default_limits_and_requests() {
    let mut w = World::with_config(ServerConfig { pod_admission_plugins: true, ..ServerConfig::default() });
    w.create(&builtin("", "serviceaccounts"), Some("kube-system"), json!({"metadata": {"name": "default"}}));
    w.create(
        &builtin("", "limitranges"),
        Some("default"),
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}},
        ]}}),
    );
    let pods = builtin("", "pods");
    let pod = w.create(
        &pods,
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "setup", "image": "setup:1"}],
            "containers": [
                {"name": "app", "image": "app:1"},
                {"name": "proxy", "image": "proxy:1", "resources": {"limits": {"cpu": "1"}}},
            ],
        }}),
    );
    let resources = |list: &str, i: usize| pod.data["spec"][list][i]["resources"].clone();
    // The default request for memory is the default limit (the LimitRange's own defaulting); a
    // container's own limit stays, and (API defaulting, before admission) its request follows it.
    assert_eq!(
        resources("containers", 0),
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    assert_eq!(
        resources("containers", 1),
        json!({"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "1", "memory": "256Mi"}})
    );
    assert_eq!(
        resources("initContainers", 0),
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    let annotation =
        pod.metadata.annotations.as_ref().and_then(|a| a.get("kubernetes.io/limit-ranger")).cloned();
    assert_eq!(
        annotation.as_deref(),
        Some(
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; \
             memory request for container proxy; memory limit for container proxy; cpu, memory request for init \
             container setup; cpu, memory limit for init container setup"
        )
    );
    // Creates only, and only in the LimitRange's namespace.
    let other = w.create(
        &pods,
        Some("kube-system"),
        json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "app", "image": "app:1"}]}}),
    );
    assert!(other.metadata.annotations.is_none(), "{:?}", other.metadata.annotations);
    assert_ne!(other.data["spec"]["containers"][0]["resources"]["limits"]["cpu"], json!("500m"));
}

fn with_limit_range(limits: serde_json::Value) -> World {
    let mut w = World::with_config(ServerConfig { pod_admission_plugins: true, ..ServerConfig::default() });
    w.create(&builtin("", "serviceaccounts"), Some("default"), json!({"metadata": {"name": "default"}}));
    w.create(
        &builtin("", "limitranges"),
        Some("default"),
        json!({"metadata": {"name": "limits"}, "spec": {"limits": limits}}),
    );
    w
}

fn pod_with(name: &str, containers: serde_json::Value) -> serde_json::Value {
    json!({"metadata": {"name": name}, "spec": {"containers": containers}})
}

fn refusal(result: Result<Arc<kube_core::DynamicObject>, Status>) -> String {
    let status = result.expect_err("refused");
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"), "{status:?}");
    status.message
}

#[test]
fn a_limit_range_refuses_a_container_outside_its_minimum_and_maximum() {
    let mut w = with_limit_range(json!([
        {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "512Mi"}},
    ]));
    let pods = builtin("", "pods");
    let message = refusal(w.try_create(&pods, Some("default"), pod_with("small", json!([
        {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "50m"}, "limits": {"memory": "256Mi"}}},
    ]))));
    assert_eq!(
        message,
        r#"pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m"#
    );
    // Two violations (a second container past the maximum) are aggregated.
    let message = refusal(w.try_create(&pods, Some("default"), pod_with("two", json!([
        {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "50m"}, "limits": {"memory": "256Mi"}}},
        {"name": "cache", "image": "cache:1", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
    ]))));
    assert_eq!(
        message,
        r#"pods "two" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum memory usage per Container is 512Mi, but limit is 1Gi]"#
    );
    // The defaults the range sets count: its max gives the default limit, its min the default
    // request.
    let fits = w.create(&pods, Some("default"), pod_with("fits", json!([{"name": "app", "image": "app:1"}])));
    let resources = &fits.data["spec"]["containers"][0]["resources"];
    assert_eq!(
        (&resources["limits"]["memory"], &resources["requests"]["cpu"]),
        (&json!("512Mi"), &json!("100m"))
    );
}

#[test]
fn a_limit_range_holds_the_pod_as_a_whole_and_the_limit_to_request_ratio() {
    let mut w = with_limit_range(json!([
        {"type": "Pod", "max": {"memory": "1Gi"}},
        {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
    ]));
    let pods = builtin("", "pods");
    let container = |name: &str, memory: &str| {
        json!({"name": name, "image": "app:1", "resources": {
            "requests": {"cpu": "100m", "memory": memory}, "limits": {"cpu": "200m", "memory": memory}}})
    };
    let message = refusal(w.try_create(
        &pods,
        Some("default"),
        pod_with("big", json!([container("a", "768Mi"), container("b", "512Mi")])),
    ));
    assert_eq!(
        message,
        r#"pods "big" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1280Mi"#
    );
    w.create(
        &pods,
        Some("default"),
        pod_with("ok", json!([container("a", "512Mi"), container("b", "512Mi")])),
    );
    let bursty = json!({"name": "a", "image": "app:1", "resources": {"requests": {"cpu": "300m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "64Mi"}}});
    let message = refusal(w.try_create(&pods, Some("default"), pod_with("bursty", json!([bursty]))));
    assert_eq!(
        message,
        r#"pods "bursty" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 3.333333"#
    );
    // A Pod item sets no defaults: a minimum it has needs the containers' requests.
    let mut w = with_limit_range(json!([{"type": "Pod", "min": {"cpu": "100m"}}]));
    let message = refusal(w.try_create(
        &pods,
        Some("default"),
        pod_with("bare", json!([{"name": "app", "image": "app:1"}])),
    ));
    assert_eq!(
        message,
        r#"pods "bare" is forbidden: minimum cpu usage per Pod is 100m.  No request is specified"#
    );
}

#[test]
fn a_limit_range_bounds_a_claims_storage_request_but_not_one_already_stored() {
    let mut w = with_limit_range(json!([
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
    ]));
    let claims = builtin("", "persistentvolumeclaims");
    let claim = |name: &str, size: &str| json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}});
    let message = refusal(w.try_create(&claims, Some("default"), claim("tiny", "500Mi")));
    assert_eq!(
        message,
        r#"persistentvolumeclaims "tiny" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"#
    );
    // A claim made before the range keeps its request through its updates (a stored request is
    // not checked again).
    let mut w2 = with_limit_range(json!([]));
    w2.create(&claims, Some("default"), claim("data", "50Gi"));
    let range = json!({"metadata": {"name": "late"}, "spec": {"limits": [
        {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}},
    ]}});
    w2.create(&builtin("", "limitranges"), Some("default"), range);
    w2.try_merge(&claims, Some("default"), "data", json!({"metadata": {"labels": {"tier": "db"}}})).unwrap();
    let message = refusal(w2.try_create(&claims, Some("default"), claim("more", "50Gi")));
    assert_eq!(
        message,
        r#"persistentvolumeclaims "more" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 50Gi"#
    );
    // Other namespaces are not limited, nor is anything with the plugins off.
    w.create(&claims, Some("kube-system"), claim("tiny", "500Mi"));
    let mut off = World::new();
    off.create(
        &builtin("", "limitranges"),
        Some("default"),
        json!({"metadata": {"name": "l"}, "spec": {"limits": [
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
        ]}}),
    );
    off.create(&claims, Some("default"), claim("tiny", "500Mi"));
}
