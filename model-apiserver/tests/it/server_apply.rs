//! Server-side apply through ApiServer::handle, and managedFields of ordinary writes.
// The helper answers what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{
    DynamicObject,
    params::{GetParams, Patch, PatchParams, PostParams},
};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

fn apply_cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn apply(
    w: &mut World,
    manager: &str,
    force: bool,
    body: Value,
) -> Result<std::sync::Arc<kube_core::DynamicObject>, kube_core::Status> {
    let name = body["metadata"]["name"].as_str().unwrap().to_owned();
    let mut params = PatchParams::apply(manager);
    params.force = force;
    w.handle(Request::patch(&cm(), Some("default"), &name, Patch::Apply(body), params)).map(object)
}

fn managers(o: &kube_core::DynamicObject) -> Vec<(String, String)> {
    o.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.clone().unwrap_or_default(), m.operation.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn an_apply_to_an_absent_object_creates_it() {
    let mut w = World::new();
    let o = apply(&mut w, "ctrl", false, apply_cm("a", json!({"k": "v"}))).unwrap();
    assert_eq!(o.data["data"], json!({"k": "v"}));
    assert_eq!(rv(&o), 5);
    assert!(o.metadata.uid.is_some());
    assert_eq!(managers(&o), [("ctrl".to_owned(), "Apply".to_owned())]);
}

#[test]
fn an_apply_without_a_field_manager_gets_422_invalid() {
    let mut w = World::new();
    let r = Request::patch(
        &cm(),
        Some("default"),
        "a",
        Patch::Apply(apply_cm("a", json!({}))),
        PatchParams::default(),
    );
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
}

#[test]
fn applying_a_field_another_manager_owns_gets_409_unless_forced() {
    let mut w = World::new();
    apply(&mut w, "a", false, apply_cm("x", json!({"k": "1"}))).unwrap();
    let err = apply(&mut w, "b", false, apply_cm("x", json!({"k": "2"}))).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    assert_eq!(err.details.as_ref().unwrap().causes[0].reason, "FieldManagerConflict");
    assert_eq!(w.server.revision(), 5);
    let forced = apply(&mut w, "b", true, apply_cm("x", json!({"k": "2"}))).unwrap();
    assert_eq!(forced.data["data"], json!({"k": "2"}));
    assert_eq!(rv(&forced), 6);
}

#[test]
fn applying_the_same_configuration_again_is_a_no_op() {
    let mut w = World::new();
    let first = apply(&mut w, "a", false, apply_cm("x", json!({"k": "1"}))).unwrap();
    w.advance_seconds(10);
    let again = apply(&mut w, "a", false, apply_cm("x", json!({"k": "1"}))).unwrap();
    assert_eq!(rv(&again), rv(&first));
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn an_update_by_a_named_manager_takes_the_field_and_a_later_apply_conflicts() {
    let mut w = World::new();
    apply(&mut w, "a", false, apply_cm("x", json!({"k": "1"}))).unwrap();
    let params = PatchParams { field_manager: Some("editor".into()), ..Default::default() };
    let r = Request::patch(&cm(), Some("default"), "x", Patch::Merge(json!({"data": {"k": "2"}})), params);
    let edited = object(w.handle(r).unwrap());
    // The editor took the applier's only field; an entry left owning nothing is dropped.
    assert_eq!(managers(&edited), [("editor".to_owned(), "Update".to_owned())]);
    let err = apply(&mut w, "a", false, apply_cm("x", json!({"k": "3"}))).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
}

#[test]
fn writes_without_a_field_manager_to_unapplied_objects_keep_no_managed_fields() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    assert_eq!(a.metadata.managed_fields, None);
    let b = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap();
    assert_eq!(b.metadata.managed_fields, None);
}

#[test]
fn force_on_a_non_apply_patch_gets_422_invalid() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let params = PatchParams { force: true, ..Default::default() };
    let err =
        w.handle(Request::patch(&cm(), Some("default"), "a", Patch::Merge(json!({})), params)).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

#[test]
fn an_apply_to_status_changes_only_the_status() {
    let mut w = World::new();
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    });
    w.create(&deployments(), Some("default"), body);
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                        "spec": {"replicas": 9}, "status": {"readyReplicas": 2}});
    let r = Request::patch(
        &deployments(),
        Some("default"),
        "d",
        Patch::Apply(status),
        PatchParams::apply("ctrl"),
    )
    .with_subresource(Subresource::Status);
    let d = object(w.handle(r).unwrap());
    assert_eq!(d.data["status"], json!({"readyReplicas": 2}));
    assert_eq!(d.data["spec"]["replicas"], json!(2));
    assert_eq!(d.metadata.generation, Some(1));
}

#[test]
fn an_apply_to_scale_gets_415() {
    let mut w = World::new();
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    w.create(&deployments(), Some("default"), body);
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
    let r =
        Request::patch(&deployments(), Some("default"), "d", Patch::Apply(scale), PatchParams::apply("hpa"))
            .with_subresource(Subresource::Scale);
    assert_eq!(code_reason(&w.handle(r).unwrap_err()), (415, "UnsupportedMediaType"));
    let get = Request::get(&deployments(), Some("default"), "d", GetParams::default());
    assert_eq!(object(w.handle(get).unwrap()).data["spec"]["replicas"], json!(1));
}

#[test]
fn an_update_of_an_object_created_without_managed_fields_records_none_until_an_apply() {
    // kube-apiserver tracks ownership from a create or a first apply: a create that sets no
    // field records nothing, and later updates of that object record nothing either.
    let mut w = World::new();
    let named = |m: &str| PostParams { field_manager: Some(m.to_owned()), ..Default::default() };
    let body = obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare"}}));
    let created = object(w.handle(Request::create(&cm(), Some("default"), body, named("creator"))).unwrap());
    assert!(created.metadata.managed_fields.as_ref().is_none_or(|m| m.is_empty()));
    let params = PatchParams { field_manager: Some("editor".to_owned()), ..Default::default() };
    let r = Request::patch(&cm(), Some("default"), "bare", Patch::Merge(json!({"data": {"k": "v"}})), params);
    let patched = object(w.handle(r).unwrap());
    assert_eq!(patched.data["data"], json!({"k": "v"}));
    assert!(patched.metadata.managed_fields.as_ref().is_none_or(|m| m.is_empty()));
    let mut update = DynamicObject::clone(&patched);
    update.data["data"]["k"] = json!("w");
    let r = Request::update(&cm(), Some("default"), "bare", update, named("editor"));
    let updated = object(w.handle(r).unwrap());
    assert!(updated.metadata.managed_fields.as_ref().is_none_or(|m| m.is_empty()));
    // An apply is tracked, and from then on updates are too.
    let applied = apply(&mut w, "ctrl", true, apply_cm("bare", json!({"a": "1"}))).unwrap();
    assert_eq!(managers(&applied), [("ctrl".to_owned(), "Apply".to_owned())]);
    let params = PatchParams { field_manager: Some("editor".to_owned()), ..Default::default() };
    let r = Request::patch(&cm(), Some("default"), "bare", Patch::Merge(json!({"data": {"b": "2"}})), params);
    let patched = object(w.handle(r).unwrap());
    assert_eq!(
        managers(&patched),
        [("ctrl".to_owned(), "Apply".to_owned()), ("editor".to_owned(), "Update".to_owned())]
    );
}

// structured-merge-diff's keyedAssociativeListItemToPathElement (typed/helpers.go): an item of
// a keyed list that omits a key field without a schema default fails the field manager's
// typed conversion ("failed to create typed patch object", structuredmerge.go Apply), an error
// that is no API status: 500 with no reason. A container port may omit its protocol (default
// TCP), not its containerPort.
#[test]
fn an_apply_whose_keyed_list_item_omits_its_key_gets_the_typed_patch_error() {
    let mut w = World::new();
    let deploy = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"a": "b"}},
                        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": containers}}}})
    };
    let send = |w: &mut World, body: Value| {
        w.handle(Request::patch(
            &deployments(),
            Some("default"),
            "d",
            Patch::Apply(body),
            PatchParams::apply("m"),
        ))
    };
    let err = send(&mut w, deploy(json!([{"image": "i:1"}]))).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (500, ""));
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
    let err = send(&mut w, deploy(json!([{"name": "c", "image": "i:1", "ports": [{"name": "http"}]}])))
        .unwrap_err();
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): .spec.template.spec.containers[name=\"c\"].ports: element 0: associative list with keys has an element that omits key field \"containerPort\" (and doesn't have default value)"
    );
    assert!(
        send(&mut w, deploy(json!([{"name": "c", "image": "i:1", "ports": [{"containerPort": 80}]}])))
            .is_ok()
    );
}

/// A CRD whose schema marks a struct atomic (kubebuilder's `+structType=atomic`, as a
/// SecretKeySelector in prometheus-operator's `additionalScrapeConfigs`) and its conditions a map
/// list keyed by `type` (`+listType=map +listMapKey=type`).
fn gadgets_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "ref": {
                            "type": "object", "x-kubernetes-map-type": "atomic", "required": ["key"],
                            "properties": {"name": {"type": "string"}, "key": {"type": "string"}}
                        },
                        "replicas": {"type": "integer"},
                        "ports": {
                            "type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "scheme"],
                            "items": {"type": "object", "required": ["port"], "properties": {
                                "port": {"type": "integer"},
                                "scheme": {"type": "string", "default": "http"}
                            }}
                        }
                    }},
                    "status": {"type": "object", "properties": {"conditions": {
                        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                        "items": {"type": "object", "required": ["type"], "properties": {
                            "type": {"type": "string"}, "status": {"type": "string"}
                        }}
                    }}}
                }}}
            }]
        }
    })
}

fn gadgets() -> kube_core::ApiResource {
    kube_core::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    }
}

fn apply_gadget(
    w: &mut World,
    manager: &str,
    status: bool,
    body: Value,
) -> Result<std::sync::Arc<DynamicObject>, kube_core::Status> {
    let mut body = body;
    body["apiVersion"] = json!("example.com/v1");
    body["kind"] = json!("Gadget");
    body["metadata"] = json!({"name": "g"});
    let r = Request::patch(&gadgets(), Some("default"), "g", Patch::Apply(body), PatchParams::apply(manager));
    w.handle(if status { r.with_subresource(Subresource::Status) } else { r }).map(object)
}

fn fields_of(o: &DynamicObject, manager: &str) -> Value {
    let entry = o.metadata.managed_fields.iter().flatten().find(|m| m.manager.as_deref() == Some(manager));
    entry.and_then(|m| m.fields_v1.as_ref()).map(|f| f.0.clone()).unwrap_or(Value::Null)
}

#[test]
fn a_custom_resources_atomic_struct_is_owned_and_removed_whole() {
    let mut w = World::new();
    w.create(&builtin("apiextensions.k8s.io", "customresourcedefinitions"), None, gadgets_crd());
    let spec = json!({"spec": {"replicas": 1, "ref": {"name": "secret", "key": "config.yaml"}}});
    let o = apply_gadget(&mut w, "kubectl", false, spec).unwrap();
    assert_eq!(fields_of(&o, "kubectl")["f:spec"], json!({"f:ref": {}, "f:replicas": {}}));
    // Applied again without it: structured-merge-diff removes the atomic struct whole (leaving
    // `ref: {}` behind would fail its `required: [key]`).
    let o = apply_gadget(&mut w, "kubectl", false, json!({"spec": {"replicas": 1}})).unwrap();
    assert_eq!(o.data["spec"], json!({"replicas": 1}));
}

#[test]
fn two_managers_apply_their_own_conditions_of_a_map_list_without_a_conflict() {
    let mut w = World::new();
    w.create(&builtin("apiextensions.k8s.io", "customresourcedefinitions"), None, gadgets_crd());
    apply_gadget(&mut w, "creator", false, json!({"spec": {"replicas": 1}})).unwrap();
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    apply_gadget(&mut w, "ready-controller", true, ready).unwrap();
    let synced = json!({"status": {"conditions": [{"type": "Synced", "status": "False"}]}});
    let o = apply_gadget(&mut w, "sync-controller", true, synced).unwrap();
    assert_eq!(
        o.data["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}])
    );
    assert_eq!(
        fields_of(&o, "sync-controller"),
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Synced\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
    );
    // Taking another manager's item is a conflict on its fields, as on a cluster.
    let steal = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    let err = apply_gadget(&mut w, "sync-controller", true, steal).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    // An item without its key is refused as the typed patch refuses it.
    let keyless = json!({"status": {"conditions": [{"status": "True"}]}});
    let err = apply_gadget(&mut w, "sync-controller", true, keyless).unwrap_err();
    assert!(err.message.contains("omits key field \"type\""), "{}", err.message);
}

#[test]
fn a_map_list_item_may_leave_out_a_key_its_schema_defaults() {
    // structured-merge-diff takes a key field's default from the schema (as a ContainerPort's
    // `protocol` in a CRD): the apply is no typed-patch error.
    let mut w = World::new();
    w.create(&builtin("apiextensions.k8s.io", "customresourcedefinitions"), None, gadgets_crd());
    let o = apply_gadget(&mut w, "kubectl", false, json!({"spec": {"ports": [{"port": 80}]}})).unwrap();
    assert_eq!(o.data["spec"]["ports"], json!([{"port": 80, "scheme": "http"}]));
}
