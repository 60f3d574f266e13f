//! `serviceaccounts/{name}/token`: TokenRequests as kube-apiserver answers them.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use base64::Engine;
use common::*;
use kube_core::params::PostParams;
use kube_core::{DynamicObject, Status};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

fn request(w: &mut World, account: &str, body: Value) -> Result<DynamicObject, Status> {
    let object: DynamicObject = serde_json::from_value(body).unwrap();
    let sas = builtin("", "serviceaccounts");
    let answer = w.handle(Request::create_subresource(
        &sas,
        Some("default"),
        account,
        Subresource::Token,
        object,
        PostParams::default(),
    ))?;
    Ok((**answer.object().expect("an object")).clone())
}

fn world() -> World {
    let mut w = World::new();
    w.create(
        &builtin("", "serviceaccounts"),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}}),
    );
    w
}

fn token_request(spec: Value) -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
}

/// The claims of a token.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[test]
fn a_token_request_gets_a_token_for_the_account_with_the_default_hour_and_audience() {
    let mut w = world();
    let revision = w.server.revision();
    let answer = request(&mut w, "op", token_request(json!({}))).unwrap();
    assert_eq!(answer.types.as_ref().map(|t| t.kind.as_str()), Some("TokenRequest"));
    assert_eq!(
        answer.data["spec"],
        json!({"audiences": ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": 3600})
    );
    let token = answer.data["status"]["token"].as_str().unwrap();
    let c = claims(token);
    assert_eq!(c["sub"], "system:serviceaccount:default:op");
    assert_eq!(c["kubernetes.io"]["serviceaccount"]["name"], "op");
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 3600);
    assert_eq!(c["iat"].as_i64(), Some(T0_SECONDS));
    assert_eq!(answer.data["status"]["expirationTimestamp"], "2026-01-01T01:00:00Z");
    // Nothing is stored.
    assert_eq!(w.server.revision(), revision);
}

#[test]
fn a_token_bound_to_a_pod_names_it_and_a_missing_pod_or_account_is_404() {
    let mut w = world();
    let pod = w.create(
        &builtin("", "pods"),
        Some("default"),
        json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    let bound = json!({"audiences": ["vault"], "expirationSeconds": 600,
                       "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod.metadata.uid}});
    let answer = request(&mut w, "op", token_request(bound)).unwrap();
    let c = claims(answer.data["status"]["token"].as_str().unwrap());
    assert_eq!((&c["aud"], &c["kubernetes.io"]["pod"]["name"]), (&json!(["vault"]), &json!("p")));
    let err =
        request(&mut w, "op", token_request(json!({"boundObjectRef": {"kind": "Pod", "name": "gone"}})))
            .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (404, "pods \"gone\" not found"));
    let err = request(&mut w, "ghost", token_request(json!({}))).unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (404, "serviceaccounts \"ghost\" not found"));
}

#[test]
fn an_expiration_under_ten_minutes_is_invalid() {
    let mut w = world();
    let err = request(&mut w, "op", token_request(json!({"expirationSeconds": 599}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"op\" is invalid: spec.expirationSeconds: Invalid value: 599: may not \
         specify a duration less than 10 minutes"
    );
}
