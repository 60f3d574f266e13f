//! Decoding written objects as kube-apiserver does: the body's kind must be the URL's, a wrong
//! JSON type is 400, and unknown fields follow `fieldValidation` (Strict refuses, Warn drops
//! with a warning, Ignore drops) on create, update and every patch type; built-in objects never
//! store an unknown field, and custom resources get the same from their schema.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams, PostParams, ValidationDirective};
use model_apiserver::{Context, FieldValidation, Request};
use serde_json::json;

fn cm() -> kube_core::ApiResource {
    builtin("", "configmaps")
}

fn deploy() -> kube_core::ApiResource {
    builtin("apps", "deployments")
}

fn deployment(extra_spec: serde_json::Value) -> serde_json::Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
        }
    });
    for (k, v) in extra_spec.as_object().unwrap() {
        d["spec"][k] = v.clone();
    }
    d
}

/// Handle `request` and return the answer with the warnings it earned.
fn handle_warned(
    w: &mut World,
    request: Request,
) -> (Result<model_apiserver::Response, kube_core::Status>, Vec<String>) {
    let mut ctx = Context::new(w.now, &mut w.ids);
    let answer = w.server.handle(request, &mut ctx);
    (answer, ctx.take_warnings())
}

#[test]
fn a_configmap_value_of_the_wrong_json_type_gets_400_bad_request() {
    let mut w = World::new();
    let err = w
        .try_create(
            &cm(),
            Some("default"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"a": 1}}),
        )
        .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message.starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap:"),
        "{}",
        err.message
    );
    assert!(err.message.contains("data.a"), "{}", err.message);
    assert!(w.try_get(&cm(), Some("default"), "a").is_err(), "nothing was stored");
}

#[test]
fn a_deployments_replicas_given_as_a_string_gets_400_naming_the_field() {
    let mut w = World::new();
    let err = w.try_create(&deploy(), Some("default"), deployment(json!({"replicas": "three"}))).unwrap_err();
    assert_eq!(err.code, 400);
    assert!(
        err.message.contains("cannot unmarshal string into Go struct field .spec.replicas of type int32"),
        "{}",
        err.message
    );
}

#[test]
fn an_unknown_field_is_dropped_with_a_warning_by_default() {
    let mut w = World::new();
    let body = deployment(json!({"foo": 1, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "bogus": true}]}}}));
    let request = Request::create(&deploy(), Some("default"), obj(body), PostParams::default());
    let (answer, warnings) = handle_warned(&mut w, request);
    let created = object(answer.unwrap());
    assert_eq!(
        warnings,
        vec![
            "unknown field \"spec.foo\"".to_owned(),
            "unknown field \"spec.template.spec.containers[0].bogus\"".to_owned()
        ]
    );
    assert!(created.data["spec"].get("foo").is_none());
    assert!(created.data["spec"]["template"]["spec"]["containers"][0].get("bogus").is_none());
    let stored = w.get(&deploy(), Some("default"), "web");
    assert!(stored.data["spec"].get("foo").is_none(), "unknown fields are never stored");
}

#[test]
fn an_unknown_field_set_to_null_is_neither_warned_about_nor_stored() {
    // encoding/json leaves a null unknown field as nothing to report, as the real server does.
    let mut w = World::new();
    let body = deployment(json!({"gone": null, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}));
    let request = Request::create(&deploy(), Some("default"), obj(body), PostParams::default());
    let (answer, warnings) = handle_warned(&mut w, request);
    answer.unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    let stored = w.get(&deploy(), Some("default"), "web");
    assert!(stored.data["spec"].get("gone").is_none());
}

#[test]
fn strict_field_validation_refuses_a_create_naming_every_unknown_field() {
    let mut w = World::new();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
        "data": {"k": "v"}, "foo": 1, "bar": {"x": 1}});
    let request = Request::create(&cm(), Some("default"), obj(body), PostParams::default())
        .with_field_validation(FieldValidation::Strict);
    let err = w.handle(request).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message.ends_with("strict decoding error: unknown field \"bar\", unknown field \"foo\""),
        "{}",
        err.message
    );
    assert!(w.try_get(&cm(), Some("default"), "a").is_err());
}

#[test]
fn ignore_field_validation_drops_unknown_fields_without_a_warning() {
    let mut w = World::new();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "foo": 1});
    let request = Request::create(&cm(), Some("default"), obj(body), PostParams::default())
        .with_field_validation(FieldValidation::Ignore);
    let (answer, warnings) = handle_warned(&mut w, request);
    assert!(answer.unwrap().object().unwrap().data.get("foo").is_none());
    assert!(warnings.is_empty());
}

#[test]
fn an_update_with_an_unknown_field_follows_field_validation() {
    let mut w = World::new();
    w.create(
        &cm(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    );
    let body = obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "extra": "x"}));
    let strict = Request::update(&cm(), Some("default"), "a", body.clone(), PostParams::default())
        .with_field_validation(FieldValidation::Strict);
    assert_eq!(w.handle(strict).unwrap_err().code, 400);
    let (answer, warnings) =
        handle_warned(&mut w, Request::update(&cm(), Some("default"), "a", body, PostParams::default()));
    assert!(answer.unwrap().object().unwrap().data.get("extra").is_none());
    assert_eq!(warnings, vec!["unknown field \"extra\"".to_owned()]);
}

#[test]
fn a_merge_patch_adding_an_unknown_field_under_strict_gets_422_on_patch() {
    let mut w = World::new();
    w.create(
        &cm(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    );
    let params = PatchParams { field_validation: Some(ValidationDirective::Strict), ..Default::default() };
    let err = w
        .handle(Request::patch(&cm(), Some("default"), "a", Patch::Merge(json!({"spec": {"x": 1}})), params))
        .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldValueInvalid", "patch"));
    assert!(cause.message.contains("strict decoding error: unknown field \"spec\""), "{}", cause.message);
}

#[test]
fn json_and_strategic_patches_drop_unknown_fields_with_a_warning() {
    let mut w = World::new();
    w.create(&deploy(), Some("default"), deployment(json!({})));
    let json_patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/spec/paused2", "value": true}])).unwrap();
    let (answer, warnings) = handle_warned(
        &mut w,
        Request::patch(&deploy(), Some("default"), "web", Patch::Json(json_patch), PatchParams::default()),
    );
    assert!(answer.unwrap().object().unwrap().data["spec"].get("paused2").is_none());
    assert_eq!(warnings, vec!["unknown field \"spec.paused2\"".to_owned()]);
    let smp = Patch::Strategic(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "colour": "red"}]}}}}),
    );
    let (answer, warnings) =
        handle_warned(&mut w, Request::patch(&deploy(), Some("default"), "web", smp, PatchParams::default()));
    assert!(
        answer.unwrap().object().unwrap().data["spec"]["template"]["spec"]["containers"][0]
            .get("colour")
            .is_none()
    );
    assert_eq!(warnings, vec!["unknown field \"spec.template.spec.containers[0].colour\"".to_owned()]);
}

#[test]
fn a_patch_that_makes_a_value_the_wrong_type_gets_422_on_patch() {
    let mut w = World::new();
    w.create(&deploy(), Some("default"), deployment(json!({})));
    let err =
        w.try_merge(&deploy(), Some("default"), "web", json!({"spec": {"replicas": "three"}})).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(err.details.as_ref().unwrap().causes[0].field, "patch");
}

#[test]
fn an_apply_with_an_unknown_field_is_refused_whatever_the_directive() {
    let mut w = World::new();
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "datta": {"k": "v"}});
    let params = PatchParams::apply("alice");
    let err = w.handle(Request::patch(&cm(), Some("default"), "a", Patch::Apply(body), params)).unwrap_err();
    assert_eq!(err.code, 500);
    assert!(err.message.contains(".datta: field not declared in schema"), "{}", err.message);
}

#[test]
fn a_body_of_another_kind_gets_400_and_is_not_stored_under_the_urls_kind() {
    let mut w = World::new();
    let err = w
        .try_create(
            &cm(),
            Some("default"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
        )
        .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"
    );
    assert!(w.try_get(&cm(), Some("default"), "s").is_err());
    let err = w
        .try_create(
            &deploy(),
            Some("default"),
            json!({"apiVersion": "apps/v1beta9", "kind": "Deployment", "metadata": {"name": "d"}}),
        )
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert!(
        err.message.contains("no kind \"Deployment\" is registered for version \"apps/v1beta9\""),
        "{}",
        err.message
    );
}

#[test]
fn a_body_without_kind_or_api_version_takes_the_urls() {
    let mut w = World::new();
    let created = w.create(&cm(), Some("default"), json!({"metadata": {"name": "a"}, "data": {"k": "v"}}));
    let types = created.types.clone().unwrap();
    assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("v1", "ConfigMap"));
}
