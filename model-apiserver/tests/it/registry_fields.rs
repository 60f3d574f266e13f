//! What the registry sets after the client's write, and who owns it: defaults as the real
//! server records them (Job labels, headless Service families, CRD names and conversion) and
//! managedFields computed before the registry's own additions (cluster IPs, Job selectors,
//! Namespace finalizers), with Service ports keyed by port and protocol, atomic selectors, and
//! `/scale` writes recorded as the client's on the `scale` subresource.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams, PostParams};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

fn post_as(manager: &str) -> PostParams {
    PostParams { field_manager: Some(manager.to_owned()), ..PostParams::default() }
}

/// The fieldsV1 of `manager`'s entry.
fn fields_of(o: &kube_core::DynamicObject, manager: &str) -> Value {
    let entries = o.metadata.managed_fields.as_ref().expect("managedFields");
    let entry = entries.iter().find(|e| e.manager.as_deref() == Some(manager)).expect("an entry");
    entry.fields_v1.as_ref().expect("fieldsV1").0.clone()
}

#[test]
fn a_services_allocated_cluster_ip_and_families_are_not_owned_by_its_creator() {
    let mut w = World::new();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "x"}}});
    let r = Request::create(&builtin("", "services"), Some("default"), obj(svc), post_as("alice"));
    let created = object(w.handle(r).unwrap());
    let spec = &fields_of(&created, "alice")["f:spec"];
    for server_set in ["f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"] {
        assert!(spec.get(server_set).is_none(), "{server_set} is the registry's: {spec}");
    }
    assert!(spec["f:ports"].get(r#"k:{"port":80,"protocol":"TCP"}"#).is_some(), "{spec}");
    assert_eq!(spec["f:selector"], json!({}), "a Service's selector is atomic");
    assert_eq!(spec["f:type"], json!({}), "decoding defaults are the creator's");
}

#[test]
fn a_headless_service_gets_ip_families() {
    let mut w = World::new();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"},
                     "spec": {"clusterIP": "None", "ports": [{"port": 80}], "selector": {"app": "x"}}});
    let created = w.create(&builtin("", "services"), Some("default"), svc);
    assert_eq!(created.data["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(created.data["spec"]["ipFamilyPolicy"], json!("SingleStack"));
    assert_eq!(created.data["spec"]["clusterIPs"], json!(["None"]));
}

#[test]
fn a_deployments_selector_is_owned_whole() {
    let mut w = World::new();
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}});
    let r = Request::create(&builtin("apps", "deployments"), Some("default"), obj(d), post_as("alice"));
    let created = object(w.handle(r).unwrap());
    let spec = &fields_of(&created, "alice")["f:spec"];
    assert_eq!(spec["f:selector"], json!({}));
    assert!(
        spec["f:template"]["f:metadata"]["f:labels"].get("f:app").is_some(),
        "template labels are granular"
    );
}

#[test]
fn a_job_takes_its_templates_labels_and_its_creator_owns_neither_them_nor_the_selector() {
    let mut w = World::new();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "busybox"}]}}}});
    let r = Request::create(&builtin("batch", "jobs"), Some("default"), obj(job), post_as("alice"));
    let created = object(w.handle(r).unwrap());
    let labels = created.metadata.labels.clone().expect("labels");
    assert_eq!(labels.get("job-name").map(String::as_str), Some("j"));
    assert_eq!(labels.get("controller-uid"), created.metadata.uid.as_ref());
    let fields = fields_of(&created, "alice");
    assert!(fields.get("f:metadata").is_none(), "{fields}");
    assert!(fields["f:spec"].get("f:selector").is_none(), "{fields}");
    assert!(fields["f:spec"]["f:template"].get("f:metadata").is_none(), "{fields}");
}

#[test]
fn a_namespaces_finalizer_is_not_its_creators_but_its_name_label_is() {
    let mut w = World::new();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    let created = object(
        w.handle(Request::create(&builtin("", "namespaces"), None, obj(ns), post_as("alice"))).unwrap(),
    );
    let fields = fields_of(&created, "alice");
    assert!(fields.get("f:spec").is_none(), "{fields}");
    assert!(fields["f:metadata"]["f:labels"].get("f:kubernetes.io/metadata.name").is_some(), "{fields}");
}

#[test]
fn a_scale_write_is_recorded_as_the_clients_on_the_scale_subresource() {
    let mut w = World::new();
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}});
    let deployments = builtin("apps", "deployments");
    w.handle(Request::create(&deployments, Some("default"), obj(d), post_as("alice"))).unwrap();
    let params = PatchParams { field_manager: Some("hpa".to_owned()), ..PatchParams::default() };
    let r = Request::patch(
        &deployments,
        Some("default"),
        "web",
        Patch::Merge(json!({"spec": {"replicas": 6}})),
        params,
    )
    .with_subresource(Subresource::Scale);
    w.handle(r).unwrap();
    let stored = w.get(&deployments, Some("default"), "web");
    let entries = stored.metadata.managed_fields.clone().unwrap();
    let scale = entries.iter().find(|e| e.manager.as_deref() == Some("hpa")).expect("the scaler's entry");
    assert_eq!(scale.subresource.as_deref(), Some("scale"));
    assert_eq!(scale.time, None, "scale entries carry no time, as recorded");
    assert_eq!(scale.fields_v1.as_ref().unwrap().0, json!({"f:spec": {"f:replicas": {}}}));
    assert!(fields_of(&stored, "alice")["f:spec"].get("f:replicas").is_none(), "the scaler took replicas");
}

#[test]
fn owner_references_and_image_pull_secrets_are_owned_as_whole_items() {
    // OwnerReference and LocalObjectReference are `+structType=atomic`: the item's key is
    // owned, not its fields, as kube-apiserver records it.
    let mut w = World::new();
    let uid = "6f1c2a9e-0000-4000-8000-000000000001";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "controller": true, "blockOwnerDeletion": true}
    ]}});
    let created = object(
        w.handle(Request::create(&builtin("", "configmaps"), Some("default"), obj(cm), post_as("alice")))
            .unwrap(),
    );
    let key = format!(r#"k:{{"uid":"{uid}"}}"#);
    assert_eq!(fields_of(&created, "alice")["f:metadata"]["f:ownerReferences"], json!({".": {}, key: {}}));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "imagePullSecrets": [{"name": "registry"}],
        "containers": [{"name": "app", "image": "nginx"}]}});
    let created = object(
        w.handle(Request::create(&builtin("", "pods"), Some("default"), obj(pod), post_as("alice"))).unwrap(),
    );
    assert_eq!(
        fields_of(&created, "alice")["f:spec"]["f:imagePullSecrets"],
        json!({".": {}, r#"k:{"name":"registry"}"#: {}})
    );
}

#[test]
fn a_field_manager_longer_than_128_bytes_gets_422_on_the_options() {
    let mut w = World::new();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let r = Request::create(&builtin("", "configmaps"), Some("default"), obj(cm), post_as(&"x".repeat(129)));
    let err = w.handle(r).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let details = err.details.unwrap();
    assert_eq!((details.group.as_str(), details.kind.as_str()), ("meta.k8s.io", "CreateOptions"));
    assert_eq!(
        (details.causes[0].reason.as_str(), details.causes[0].field.as_str()),
        ("FieldValueTooLong", "fieldManager")
    );
}

#[test]
fn an_invalid_generate_name_is_reported_with_the_generated_name() {
    let mut w = World::new();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Bad_"}});
    let err = w.try_create(&builtin("", "configmaps"), Some("default"), cm).unwrap_err();
    let fields: Vec<String> = err.details.unwrap().causes.into_iter().map(|c| c.field).collect();
    assert!(fields.contains(&"metadata.generateName".to_owned()), "{fields:?}");
    assert!(fields.contains(&"metadata.name".to_owned()), "{fields:?}");
    let ok = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "good-"}});
    w.create(&builtin("", "configmaps"), Some("default"), ok);
}

#[test]
fn a_crd_gets_its_singular_list_kind_and_conversion_defaults() {
    let mut w = World::new();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Thing", "plural": "things"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let created = w.create(&builtin("apiextensions.k8s.io", "customresourcedefinitions"), None, crd);
    assert_eq!(created.data["spec"]["names"]["singular"], json!("thing"));
    assert_eq!(created.data["spec"]["names"]["listKind"], json!("ThingList"));
    assert_eq!(created.data["spec"]["conversion"], json!({"strategy": "None"}));
    let crds = builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let established = w.get(&crds, None, "things.example.com");
    assert_eq!(established.data["status"]["acceptedNames"]["listKind"], json!("ThingList"));
}
