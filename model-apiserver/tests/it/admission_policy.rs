//! ValidatingAdmissionPolicy: bound CEL policies refuse what kube-apiserver's plugin refuses, in
//! its words, and leave everything else alone.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::ApiResource;
use serde_json::{Value, json};

fn policies() -> ApiResource {
    builtin("admissionregistration.k8s.io", "validatingadmissionpolicies")
}

fn bindings() -> ApiResource {
    builtin("admissionregistration.k8s.io", "validatingadmissionpolicybindings")
}

fn deployments() -> ApiResource {
    builtin("apps", "deployments")
}

/// At most five replicas for a Deployment, in namespaces labelled `env: prod`; the binding
/// denies.
fn world_with(validation: Value, actions: Value) -> World {
    let mut w = World::new();
    w.create(
        &builtin("", "namespaces"),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "prod", "labels": {"env": "prod"}}}),
    );
    w.create(&policies(), None, json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replica-limit"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
                "namespaceSelector": {"matchLabels": {"env": "prod"}}
            },
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
            "validations": [validation]
        }
    }));
    w.create(
        &bindings(),
        None,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "replica-limit-binding"},
            "spec": {"policyName": "replica-limit", "validationActions": actions}
        }),
    );
    w
}

fn world() -> World {
    world_with(json!({"expression": "variables.replicas <= 5"}), json!(["Deny"]))
}

fn deployment(ns: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
    })
}

#[test]
fn a_bound_policy_refuses_a_write_it_fails_in_the_plugins_words() {
    let mut w = world();
    let err = w.try_create(&deployments(), Some("prod"), deployment("prod", 6)).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding \
         'replica-limit-binding' denied request: failed expression: variables.replicas <= 5"
    );
    assert_eq!(
        err.details.as_ref().unwrap().causes[0].message,
        err.message.split("forbidden: ").nth(1).unwrap()
    );
    // Within the limit, and an update past it.
    w.create(&deployments(), Some("prod"), deployment("prod", 3));
    let err = w.try_merge(&deployments(), Some("prod"), "web", json!({"spec": {"replicas": 9}})).unwrap_err();
    assert_eq!(err.code, 422);
}

#[test]
fn outside_its_namespace_selector_or_resources_the_policy_does_not_apply() {
    let mut w = world();
    w.create(&deployments(), Some("default"), deployment("default", 9));
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"replicas": 9, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    w.create(&builtin("apps", "replicasets"), Some("prod"), rs);
}

#[test]
fn a_message_expression_and_reason_word_the_refusal_and_warn_only_bindings_do_not_deny() {
    let validation = json!({"expression": "object.spec.replicas <= 5", "reason": "Forbidden",
        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' exceed 5'"});
    let mut w = world_with(validation.clone(), json!(["Deny"]));
    let err = w.try_create(&deployments(), Some("prod"), deployment("prod", 7)).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert!(err.message.ends_with("denied request: replicas 7 exceed 5"), "{}", err.message);
    let mut w = world_with(validation, json!(["Warn"]));
    w.create(&deployments(), Some("prod"), deployment("prod", 7));
}

#[test]
fn an_expression_that_fails_to_evaluate_refuses_under_fail_and_is_ignored_under_ignore() {
    let mut w = world_with(json!({"expression": "object.spec.missing > 1"}), json!(["Deny"]));
    let err = w.try_create(&deployments(), Some("prod"), deployment("prod", 1)).unwrap_err();
    assert!(
        err.message.contains("denied request: expression 'object.spec.missing > 1' resulted in error:"),
        "{}",
        err.message
    );
    let stored = w.get(&policies(), None, "replica-limit");
    let mut ignoring = serde_json::to_value(&*stored).unwrap();
    ignoring["spec"]["failurePolicy"] = json!("Ignore");
    w.try_update(&policies(), None, obj(ignoring)).unwrap();
    w.create(&deployments(), Some("prod"), deployment("prod", 1));
}

// A policy may call Kubernetes' CEL libraries, and hold a library value in a variable.
#[test]
fn a_policy_calling_the_quantity_library_refuses_a_container_asking_too_much_memory() {
    let mut w = world_with(
        json!({"expression": "object.spec.template.spec.containers.all(c, !has(c.resources) || \
               !has(c.resources.limits) || !has(c.resources.limits.memory) || \
               !quantity(c.resources.limits.memory).isGreaterThan(quantity('1Gi')))",
               "message": "a container may use at most 1Gi"}),
        json!(["Deny"]),
    );
    let with_limit = |memory: &str| {
        let mut d = deployment("prod", 1);
        d["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"memory": memory}});
        d
    };
    w.create(&deployments(), Some("prod"), with_limit("512Mi"));
    let err = w.try_create(&deployments(), Some("prod"), {
        let mut d = with_limit("2G");
        d["metadata"]["name"] = json!("big");
        d
    });
    let err = err.unwrap_err();
    assert!(err.message.ends_with("denied request: a container may use at most 1Gi"), "{}", err.message);
}
