//! `pods/{name}/resize`, in-place Pod vertical scaling as kube-apiserver 1.33 serves it: the Pod
//! read through it, its containers' cpu and memory changed by a patch of it (nothing else taken,
//! the generation bumped), validated as `ValidatePodResize` validates it, refused through the Pod
//! itself, and counted by the `LimitRanger` and `ResourceQuota` plugins.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

use common::*;
use kube_core::DynamicObject;
use kube_core::params::{GetParams, Patch, PatchParams, PostParams};
use model_apiserver::{Request, ServerConfig, Subresource};
use serde_json::{Value, json};

fn pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "app:1", "resources": resources}]}})
}

fn burstable() -> Value {
    json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}})
}

fn patch_resize(w: &mut World, name: &str, patch: Value) -> Result<Arc<DynamicObject>, kube_core::Status> {
    let request =
        Request::patch(&pods(), Some("default"), name, Patch::Strategic(patch), PatchParams::default())
            .with_subresource(Subresource::Resize);
    w.handle(request).map(object)
}

fn resources(w: &mut World, name: &str) -> Value {
    w.get(&pods(), Some("default"), name).data["spec"]["containers"][0]["resources"].clone()
}

/// The causes of a 422, as `path: message`.
fn invalid(result: Result<Arc<DynamicObject>, kube_core::Status>) -> Vec<String> {
    let status = result.expect_err("refused");
    assert_eq!(code_reason(&status), (422, "Invalid"), "{status:?}");
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
}

fn cpu(request: &str, limit: &str) -> Value {
    json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": request}, "limits": {"cpu": limit}}}]}})
}

#[test]
fn cpu_and_memory_change_through_the_subresource_and_nothing_else_does() {
    let mut w = World::new();
    let created = w.create(&pods(), Some("default"), pod("web", burstable()));
    let read = w
        .handle(
            Request::get(&pods(), Some("default"), "web", GetParams::default())
                .with_subresource(Subresource::Resize),
        )
        .map(object)
        .unwrap();
    assert_eq!(read.metadata.uid, created.metadata.uid);
    // The labels, the image and the deadline the patch also changes are dropped.
    let patched = patch_resize(
        &mut w,
        "web",
        json!({"metadata": {"labels": {"app": "other"}},
               "spec": {"activeDeadlineSeconds": 5,
                        "containers": [{"name": "app", "image": "app:2",
                                        "resources": {"requests": {"cpu": "300m", "memory": "96Mi"},
                                                      "limits": {"cpu": "400m"}}}]}}),
    )
    .unwrap();
    let container = &patched.data["spec"]["containers"][0];
    assert_eq!(container["resources"]["requests"], json!({"cpu": "300m", "memory": "96Mi"}));
    assert_eq!(container["resources"]["limits"], json!({"cpu": "400m", "memory": "128Mi"}));
    assert_eq!(container["image"], "app:1");
    assert_eq!(patched.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(patched.data.pointer("/spec/activeDeadlineSeconds").is_none());
    assert_eq!(patched.metadata.generation, Some(created.metadata.generation.unwrap() + 1));
    // The Pod's own update may not change them.
    let mut changed = DynamicObject::clone(&w.get(&pods(), Some("default"), "web"));
    changed.data["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("350m");
    let request = Request::update(&pods(), Some("default"), "web", changed, PostParams::default());
    let causes = invalid(w.handle(request).map(object));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert!(
        causes[0].starts_with("spec: Forbidden: pod updates may not change fields other than"),
        "{causes:?}"
    );
}

#[test]
fn a_resize_keeps_the_qos_class_and_removes_nothing() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod("web", burstable()));
    // Requests equal to the limits would make it Guaranteed.
    let guaranteed = json!({"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "200m", "memory": "128Mi"}}}]}});
    assert_eq!(
        invalid(patch_resize(&mut w, "web", guaranteed)),
        [r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#]
    );
    // A limit removed (a JSON merge patch drops the key).
    let request = Request::patch(
        &pods(),
        Some("default"),
        "web",
        Patch::Merge(json!({"spec": {"containers": [{"name": "app", "image": "app:1",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}}]}})),
        PatchParams::default(),
    )
    .with_subresource(Subresource::Resize);
    assert_eq!(
        invalid(w.handle(request).map(object)),
        ["spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"]
    );
    // Memory limits go down only with a RestartContainer policy.
    let lower =
        json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "96Mi"}}}]}});
    assert_eq!(
        invalid(patch_resize(&mut w, "web", lower)),
        [
            "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer"
        ]
    );
    // Only cpu and memory.
    let storage = json!({"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"ephemeral-storage": "1Gi"}}}]}});
    assert_eq!(
        invalid(patch_resize(&mut w, "web", storage)),
        ["spec: Forbidden: only cpu and memory resources are mutable"]
    );
    // The policy itself is not changed through a resize.
    let policy = json!({"spec": {"containers": [{"name": "app",
        "resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}]}});
    assert_eq!(
        invalid(patch_resize(&mut w, "web", policy)),
        ["spec: Forbidden: only cpu and memory resources are mutable"]
    );
    // Nothing was stored.
    assert_eq!(resources(&mut w, "web"), burstable());
}

#[test]
fn containers_are_not_added_renamed_or_reordered_and_some_pods_are_not_resized() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod("web", burstable()));
    let request = Request::patch(
        &pods(),
        Some("default"),
        "web",
        Patch::Merge(
            json!({"spec": {"containers": [{"name": "other", "image": "app:1", "resources": burstable()}]}}),
        ),
        PatchParams::default(),
    )
    .with_subresource(Subresource::Resize);
    assert_eq!(
        invalid(w.handle(request).map(object)),
        ["spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"]
    );
    let added = json!({"spec": {"containers": [{"name": "side", "image": "side:1"}]}});
    assert_eq!(
        invalid(patch_resize(&mut w, "web", added)),
        ["spec.containers: Forbidden: containers may not be added or removed on resize"]
    );
    // A static Pod stands alone.
    let mut mirror = pod("mirror", burstable());
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc"});
    w.create(&pods(), Some("default"), mirror);
    assert_eq!(
        invalid(patch_resize(&mut w, "mirror", cpu("150m", "200m"))),
        [": Forbidden: static pods cannot be resized"]
    );
    // A running container the kubelet reports no resources of: a node without resize.
    let mut running = DynamicObject::clone(&w.get(&pods(), Some("default"), "web"));
    running.data["status"]["containerStatuses"] = json!([{"name": "app", "image": "app:1", "imageID": "",
        "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]);
    let request = Request::update(&pods(), Some("default"), "web", running, PostParams::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
    assert_eq!(
        invalid(patch_resize(&mut w, "web", cpu("150m", "200m"))),
        ["spec: Forbidden: Pod running on node without support for resize"]
    );
}

#[test]
fn resize_policies_are_validated_with_the_pod() {
    let mut w = World::new();
    let mut never = pod("job", burstable());
    never["spec"]["restartPolicy"] = json!("Never");
    never["spec"]["containers"][0]["resizePolicy"] = json!([
        {"resourceName": "cpu", "restartPolicy": "RestartContainer"},
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "gpu", "restartPolicy": "Sometimes"}]);
    let causes = invalid(w.try_create(&pods(), Some("default"), never));
    assert_eq!(
        causes,
        [
            r#"spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when `restartPolicy` is 'Never'"#,
            r#"spec.containers[0].resizePolicy[1]: Duplicate value: "cpu""#,
            r#"spec.containers[0].resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory""#,
            r#"spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer""#,
            r#"spec.containers[0].resizePolicy: Invalid value: "Sometimes": must be 'NotRequired' when `restartPolicy` is 'Never'"#,
        ]
    );
    // With RestartContainer for memory, its limit may go down.
    let mut restarts = pod("restarts", burstable());
    restarts["spec"]["containers"][0]["resizePolicy"] =
        json!([{"resourceName": "memory", "restartPolicy": "RestartContainer"}]);
    w.create(&pods(), Some("default"), restarts);
    let lower =
        json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "96Mi"}}}]}});
    patch_resize(&mut w, "restarts", lower).unwrap();
    assert_eq!(resources(&mut w, "restarts")["limits"]["memory"], "96Mi");
}

#[test]
fn the_limit_ranger_and_the_quota_count_a_resize() {
    let mut w = World::with_config(ServerConfig {
        pod_admission_plugins: true,
        resource_quota: true,
        ..ServerConfig::default()
    });
    w.create(
        &builtin("", "limitranges"),
        Some("default"),
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
    );
    w.create(&pods(), Some("default"), pod("web", burstable()));
    let status = patch_resize(&mut w, "web", cpu("100m", "2")).expect_err("over the maximum");
    assert_eq!(code_reason(&status), (403, "Forbidden"));
    assert_eq!(
        status.message,
        r#"pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#
    );
    // A quota of cpu requests: the resize is charged what it adds.
    let created = w.create(
        &builtin("", "resourcequotas"),
        Some("default"),
        json!({"metadata": {"name": "q"}, "spec": {"hard": {"requests.cpu": "500m"}}}),
    );
    let mut synced = DynamicObject::clone(&created);
    synced.data["status"] = json!({"hard": {"requests.cpu": "500m"}, "used": {"requests.cpu": "100m"}});
    let request =
        Request::update(&builtin("", "resourcequotas"), Some("default"), "q", synced, PostParams::default())
            .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
    patch_resize(&mut w, "web", cpu("300m", "400m")).unwrap();
    let used = w.get(&builtin("", "resourcequotas"), Some("default"), "q").data["status"]["used"].clone();
    assert_eq!(used, json!({"requests.cpu": "300m"}));
    let status = patch_resize(&mut w, "web", cpu("600m", "800m")).expect_err("over the quota");
    assert_eq!(
        status.message,
        r#"pods "web" is forbidden: exceeded quota: q, requested: requests.cpu=300m, used: requests.cpu=300m, limited: requests.cpu=500m"#
    );
}
