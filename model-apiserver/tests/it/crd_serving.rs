//! Serving CustomResourceDefinitions: establishment, schema defaulting/pruning/validation,
//! custom-resource concurrency rules, subresources, and CRD deletion.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{
    ApiResource, WatchEvent,
    params::{GetParams, Patch, PatchParams, PostParams, WatchParams},
};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

fn crds() -> ApiResource {
    builtin("apiextensions.k8s.io", "customresourcedefinitions")
}

fn widgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
                },
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "size": {"type": "string"}
                        }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }
                }}
            }]
        }
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// A world with the Widget CRD established.
fn world() -> World {
    let mut w = World::new();
    w.create(&crds(), None, widget_crd());
    w
}

#[test]
fn a_deleted_crd_keeps_its_generation_and_has_no_grace_period() {
    let mut w = world();
    let before = w.get(&crds(), None, "widgets.example.com");
    w.create(&widgets(), Some("default"), widget("w", json!({})));
    let deleting = object(w.try_delete(&crds(), None, "widgets.example.com").unwrap());
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.deletion_grace_period_seconds, None);
    assert_eq!(deleting.metadata.generation, before.metadata.generation);
    // The registry's Delete marks it Terminating, deletion pending, in the same update.
    let conditions = deleting.data["status"]["conditions"].as_array().unwrap();
    let terminating = conditions.iter().find(|c| c["type"] == "Terminating").expect("Terminating");
    assert_eq!(
        (terminating["status"].as_str(), terminating["reason"].as_str()),
        (Some("True"), Some("InstanceDeletionPending"))
    );
}

#[test]
fn creating_a_crd_serves_its_versions_and_marks_it_established() {
    let mut w = World::new();
    assert_eq!(code_reason(&w.try_get(&widgets(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
    w.create(&crds(), None, widget_crd());
    let crd = w.get(&crds(), None, "widgets.example.com");
    let conditions: Vec<(&str, &str)> = crd.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(conditions, [("NamesAccepted", "True"), ("Established", "True")]);
    assert_eq!(crd.data["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(crd.metadata.generation, Some(1));
    let ty = w.server.types().get("example.com", "v1", "widgets").unwrap();
    assert!(ty.custom && ty.namespaced && ty.status_subresource && ty.tracks_generation);
    let err = w.try_get(&widgets(), Some("default"), "a").unwrap_err();
    assert_eq!(err.message, "widgets.example.com \"a\" not found");
}

#[test]
fn an_invalid_crd_gets_422_invalid() {
    let mut w = World::new();
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("wrong.example.com");
    let err = w.try_create(&crds(), None, crd).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(err.details.as_ref().unwrap().causes[0].field, "metadata.name");
    assert!(w.server.types().get("example.com", "v1", "widgets").is_none());
}

#[test]
fn a_custom_resource_is_defaulted_and_pruned() {
    let mut w = world();
    let o = w.create(&widgets(), Some("default"), widget("a", json!({"size": "big", "unknown": 1})));
    assert_eq!(o.data["spec"], json!({"replicas": 1, "size": "big"}));
    assert_eq!(o.metadata.generation, Some(1));
    assert_eq!(o.types.as_ref().unwrap().api_version, "example.com/v1");
}

#[test]
fn a_custom_resource_that_violates_its_schema_gets_422_with_causes() {
    let mut w = world();
    let err = w.try_create(&widgets(), Some("default"), widget("a", json!({"replicas": -1}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let details = err.details.as_ref().unwrap();
    assert_eq!(details.kind, "Widget");
    assert_eq!(details.causes[0].field, "spec.replicas");
}

#[test]
fn an_update_of_a_custom_resource_with_an_empty_resource_version_gets_422() {
    let mut w = world();
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    let err = w.try_update(&widgets(), Some("default"), obj(widget("a", json!({"size": "x"})))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "widgets.example.com \"a\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
    // The generic store's check names the resource, where schema validation names the kind.
    assert_eq!(err.details.as_ref().map(|d| d.kind.as_str()), Some("widgets"));
}

#[test]
fn a_merge_patch_of_a_custom_resource_needs_no_resource_version() {
    let mut w = world();
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    let o = w.try_merge(&widgets(), Some("default"), "a", json!({"spec": {"size": "x"}})).unwrap();
    assert_eq!(o.data["spec"], json!({"replicas": 1, "size": "x"}));
    assert_eq!(o.metadata.generation, Some(2));
}

#[test]
fn a_strategic_merge_patch_of_a_custom_resource_gets_415() {
    let mut w = world();
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    let patch = Patch::Strategic(json!({"spec": {"size": "x"}}));
    let err = w
        .handle(Request::patch(&widgets(), Some("default"), "a", patch, PatchParams::default()))
        .unwrap_err();
    assert_eq!(code_reason(&err), (415, "UnsupportedMediaType"));
    assert_eq!(
        err.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[test]
fn a_custom_resource_status_subresource_separates_status_from_spec() {
    let mut w = world();
    let a = w.create(&widgets(), Some("default"), widget("a", json!({})));
    let mut body = (*a).clone();
    body.data["status"] = json!({"replicas": 3});
    let main = w.try_update(&widgets(), Some("default"), body.clone()).unwrap();
    assert_eq!(main.data.get("status"), None);
    let r = Request::update(&widgets(), Some("default"), "a", body, PostParams::default())
        .with_subresource(Subresource::Status);
    let status = object(w.handle(r).unwrap());
    assert_eq!(status.data["status"], json!({"replicas": 3}));
    assert_eq!(status.metadata.generation, Some(1));
}

/// The apiextensions status strategy copies the stored object but for `.status`: a spec or a
/// label the status write changes, adds or leaves out is the stored one afterwards.
#[test]
fn a_custom_resource_status_write_keeps_the_stored_spec_and_metadata() {
    let mut w = world();
    let a = w.create(&widgets(), Some("default"), widget("a", json!({"replicas": 2})));
    let mut body = (*a).clone();
    body.data["spec"] = json!({"replicas": 9});
    body.metadata.labels = Some([("tier".to_owned(), "web".to_owned())].into());
    body.data["status"] = json!({"replicas": 2});
    let r = Request::update(&widgets(), Some("default"), "a", body.clone(), PostParams::default())
        .with_subresource(Subresource::Status);
    let written = object(w.handle(r).unwrap());
    assert_eq!(written.data["spec"], json!({"replicas": 2}));
    assert_eq!(written.data["status"], json!({"replicas": 2}));
    assert_eq!(written.metadata.labels, a.metadata.labels);
    body.data.as_object_mut().unwrap().remove("spec");
    body.data["status"] = json!({"replicas": 1});
    body.metadata.resource_version = written.metadata.resource_version.clone();
    let r = Request::update(&widgets(), Some("default"), "a", body, PostParams::default())
        .with_subresource(Subresource::Status);
    let written = object(w.handle(r).unwrap());
    assert_eq!(written.data["spec"], json!({"replicas": 2}));
    assert_eq!(written.data["status"], json!({"replicas": 1}));
}

#[test]
fn a_custom_resource_scale_subresource_reads_and_writes_replicas() {
    let mut w = world();
    w.create(&widgets(), Some("default"), widget("a", json!({"replicas": 2})));
    let get = Request::get(&widgets(), Some("default"), "a", GetParams::default())
        .with_subresource(Subresource::Scale);
    let scale = object(w.handle(get).unwrap());
    assert_eq!(scale.types.as_ref().unwrap().kind, "Scale");
    assert_eq!(scale.data["spec"], json!({"replicas": 2}));
    let patch = Patch::Merge(json!({"spec": {"replicas": 5}}));
    let r = Request::patch(&widgets(), Some("default"), "a", patch, PatchParams::default())
        .with_subresource(Subresource::Scale);
    assert_eq!(object(w.handle(r).unwrap()).data["spec"], json!({"replicas": 5}));
    assert_eq!(w.get(&widgets(), Some("default"), "a").data["spec"]["replicas"], json!(5));
}

#[test]
fn a_custom_resource_scale_write_takes_replicas_from_every_manager_and_gives_it_to_none() {
    // kube-apiserver's CRD scale handler cannot type a Scale for its field manager, so the
    // scaler gets no entry and the replicas field leaves its owner (kubernetes#131892).
    let mut w = world();
    let post = PostParams { field_manager: Some("alice".to_owned()), ..PostParams::default() };
    let r = Request::create(
        &widgets(),
        Some("default"),
        obj(widget("a", json!({"replicas": 2, "size": "s"}))),
        post,
    );
    w.handle(r).unwrap();
    let owned = |w: &mut World| -> Vec<(String, Option<String>, Value)> {
        let stored = w.get(&widgets(), Some("default"), "a");
        let entries = stored.metadata.managed_fields.clone().unwrap_or_default();
        entries
            .into_iter()
            .map(|e| {
                (e.manager.unwrap_or_default(), e.subresource, e.fields_v1.map(|f| f.0).unwrap_or_default())
            })
            .collect()
    };
    assert_eq!(
        owned(&mut w),
        vec![("alice".to_owned(), None, json!({"f:spec": {".": {}, "f:replicas": {}, "f:size": {}}}))]
    );
    let params = PatchParams { field_manager: Some("hpa".to_owned()), ..PatchParams::default() };
    let r = Request::patch(
        &widgets(),
        Some("default"),
        "a",
        Patch::Merge(json!({"spec": {"replicas": 4}})),
        params,
    )
    .with_subresource(Subresource::Scale);
    w.handle(r).unwrap();
    assert_eq!(w.get(&widgets(), Some("default"), "a").data["spec"]["replicas"], json!(4));
    assert_eq!(owned(&mut w), vec![("alice".to_owned(), None, json!({"f:spec": {".": {}, "f:size": {}}}))]);
}

#[test]
fn deleting_a_crd_stops_serving_it_and_deletes_its_objects() {
    let mut w = world();
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    w.create(&widgets(), Some("kube-system"), widget("b", json!({})));
    let before = w.server.revision();
    w.try_delete(&crds(), None, "widgets.example.com").unwrap();
    assert!(w.server.types().get("example.com", "v1", "widgets").is_none());
    assert_eq!(code_reason(&w.try_get(&widgets(), Some("default"), "a").unwrap_err()), (404, "NotFound"));
    let deleted: Vec<String> = w
        .server
        .events_after(before)
        .unwrap()
        .iter()
        .map(|e| format!("{:?} {}/{}", e.kind, e.key.resource, e.key.name))
        .collect();
    // Deletion starts (deletionTimestamp), the CRD turns Terminating, its objects go one by
    // one, and the cleanup finalizer's removal lets the CRD go.
    assert_eq!(
        deleted,
        [
            "Modified apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
            "Modified apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
            "Deleted example.com/widgets/a",
            "Deleted example.com/widgets/b",
            "Deleted apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
        ]
    );
    assert_eq!(code_reason(&w.try_get(&crds(), None, "widgets.example.com").unwrap_err()), (404, "NotFound"));
    // Recreating the CRD serves an empty collection.
    w.create(&crds(), None, widget_crd());
    let events = w.watch(&widgets(), None, "0", WatchParams { bookmarks: false, ..Default::default() });
    assert!(events.iter().all(|e| !matches!(e, WatchEvent::Added(_))));
    assert!(events.is_empty());
}

#[test]
fn every_served_version_of_a_crd_shares_one_storage() {
    let mut w = World::new();
    let mut crd = widget_crd();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    w.create(&crds(), None, crd);
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    let v2_api = ApiResource { version: "v2".into(), api_version: "example.com/v2".into(), ..widgets() };
    let seen = w.get(&v2_api, Some("default"), "a");
    assert_eq!(seen.types.as_ref().unwrap().api_version, "example.com/v2");
    assert_eq!(seen.data["spec"], json!({"replicas": 1}));
    let stored = w.get(&widgets(), Some("default"), "a");
    assert_eq!(stored.types.as_ref().unwrap().api_version, "example.com/v1");
}

#[test]
fn updating_a_crd_to_serve_a_new_version_serves_it() {
    let mut w = world();
    let v2_api = ApiResource { version: "v2".into(), api_version: "example.com/v2".into(), ..widgets() };
    assert_eq!(code_reason(&w.try_get(&v2_api, Some("default"), "a").unwrap_err()), (404, "NotFound"));
    let crd = w.get(&crds(), None, "widgets.example.com");
    let mut v2 = crd.data["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    let mut versions = crd.data["spec"]["versions"].as_array().unwrap().clone();
    versions.push(v2);
    let updated =
        w.try_merge(&crds(), None, "widgets.example.com", json!({"spec": {"versions": versions}})).unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    w.create(&widgets(), Some("default"), widget("a", json!({})));
    assert!(w.try_get(&v2_api, Some("default"), "a").is_ok());
}

#[test]
fn an_established_crd_carries_the_cleanup_finalizer() {
    let mut w = world();
    let crd = w.get(&crds(), None, "widgets.example.com");
    assert_eq!(crd.metadata.finalizers, Some(vec!["customresourcecleanup.apiextensions.k8s.io".to_owned()]));
}

#[test]
fn a_custom_resource_finalizer_holds_a_terminating_crd_until_it_is_removed() {
    let mut w = world();
    let mut held = widget("a", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
    w.create(&widgets(), Some("default"), held);
    w.create(&widgets(), Some("default"), widget("b", json!({})));
    w.try_delete(&crds(), None, "widgets.example.com").unwrap();
    let crd = w.get(&crds(), None, "widgets.example.com");
    let terminating =
        crd.data["status"]["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "Terminating");
    assert!(terminating, "{}", crd.data["status"]);
    let a = w.get(&widgets(), Some("default"), "a");
    assert!(a.metadata.deletion_timestamp.is_some());
    assert_eq!(code_reason(&w.try_get(&widgets(), Some("default"), "b").unwrap_err()), (404, "NotFound"));
    let err = w.try_create(&widgets(), Some("default"), widget("c", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (405, "MethodNotAllowed"));
    assert_eq!(err.message, "create is not supported on resources of kind \"widgets.example.com\"");
    // The operator removes its finalizer: the object goes, and with it the CRD.
    w.try_merge(&widgets(), Some("default"), "a", json!({"metadata": {"finalizers": null}})).unwrap();
    assert_eq!(code_reason(&w.try_get(&crds(), None, "widgets.example.com").unwrap_err()), (404, "NotFound"));
    assert!(w.server.types().get("example.com", "v1", "widgets").is_none());
}

#[test]
fn a_custom_resources_schema_defaults_are_owned_by_its_creator() {
    let mut w = world();
    let params =
        kube_core::params::PostParams { field_manager: Some("alice".to_owned()), ..Default::default() };
    let r =
        model_apiserver::Request::create(&widgets(), Some("default"), obj(widget("a", json!({}))), params);
    let created = object(w.handle(r).unwrap());
    assert_eq!(created.data["spec"]["replicas"], json!(1));
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!(entry.fields_v1.as_ref().unwrap().0, json!({"f:spec": {".": {}, "f:replicas": {}}}));
}

#[test]
fn a_custom_resource_field_its_schema_prunes_follows_field_validation() {
    let mut w = world();
    let body = obj(widget("b", json!({"size": "s", "colour": "red"})));
    let strict =
        model_apiserver::Request::create(&widgets(), Some("default"), body.clone(), Default::default())
            .with_field_validation(model_apiserver::FieldValidation::Strict);
    let err = w.handle(strict).unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.ends_with("strict decoding error: unknown field \"spec.colour\""), "{}", err.message);
    let created = w.create(&widgets(), Some("default"), serde_json::to_value(&body).unwrap());
    assert!(created.data["spec"].get("colour").is_none());
}

#[test]
fn the_crd_controllers_status_write_is_recorded_in_managed_fields() {
    // As recorded from kube-apiserver: the naming and establishing controllers own the accepted
    // names and their conditions in an Update entry of subresource status; the stored versions
    // are the registry's.
    let mut w = World::new();
    let params = kube_core::params::PostParams { field_manager: Some("me".to_owned()), ..Default::default() };
    w.handle(model_apiserver::Request::create(&crds(), None, obj(widget_crd()), params)).unwrap();
    let crd = w.get(&crds(), None, "widgets.example.com");
    let entries = crd.metadata.managed_fields.clone().unwrap_or_default();
    let who: Vec<(Option<&str>, Option<&str>)> =
        entries.iter().map(|e| (e.manager.as_deref(), e.subresource.as_deref())).collect();
    // Sorted as the real field manager encodes them: both Update entries of the same second,
    // so by manager name ("G" before "m").
    assert_eq!(who, [(Some("Go-http-client"), Some("status")), (Some("me"), None)]);
    let status = &entries[0].fields_v1.as_ref().unwrap().0["f:status"];
    assert_eq!(status.get("f:storedVersions"), None);
    assert!(status["f:acceptedNames"].get("f:plural").is_some());
    let established = &status["f:conditions"]["k:{\"type\":\"Established\"}"];
    assert_eq!(established.get("."), Some(&json!({})));
    assert!(established.get("f:lastTransitionTime").is_some());
    // A CRD created without a field manager carries no managedFields, and neither does its
    // controllers' write.
    let mut w = World::new();
    w.create(&crds(), None, widget_crd());
    assert!(
        w.get(&crds(), None, "widgets.example.com")
            .metadata
            .managed_fields
            .as_ref()
            .is_none_or(|m| m.is_empty())
    );
}

/// `ValidateStatusUpdate`: a status write is checked against the status schema alone, so
/// kube-openapi's paths in the messages start below `status` (Gateway API's "addresses[0].value
/// in body must be of type ipv4"), while the causes' fields are under `status`.
#[test]
fn a_status_write_is_checked_against_the_status_schema_with_paths_below_status() {
    let mut w = world();
    let a = w.create(&widgets(), Some("default"), widget("a", json!({})));
    let mut body = (*a).clone();
    body.data["status"] = json!({"replicas": "three"});
    let r = Request::update(&widgets(), Some("default"), "a", body, PostParams::default())
        .with_subresource(Subresource::Status);
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let causes: Vec<(String, String)> =
        err.details.unwrap().causes.into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(
        causes,
        [(
            "status.replicas".to_owned(),
            "Invalid value: \"string\": replicas in body must be of type integer: \"string\"".to_owned()
        )]
    );
    // The same value written through the main resource is not a status write: the status is
    // the stored one (none), and the whole object is valid.
    let mut body = (*a).clone();
    body.data["status"] = json!({"replicas": "three"});
    assert!(w.try_update(&widgets(), Some("default"), body).is_ok());
}

/// A float is stored as the nearest double to what was written, as kube-apiserver's Go decoder
/// reads it: it reads back as written.
#[test]
fn a_float_reads_back_exactly_as_written() {
    let mut w = World::new();
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ratio"] =
        json!({"type": "number"});
    w.create(&crds(), None, crd);
    let body = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"f"},
                   "spec":{"ratio":3.4028234663852886e+38}}"#;
    let created = w.create(&widgets(), Some("default"), serde_json::from_str(body).unwrap());
    assert_eq!(created.data["spec"]["ratio"].to_string(), "3.4028234663852886e+38");
}
