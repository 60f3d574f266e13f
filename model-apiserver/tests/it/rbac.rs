//! RBAC for the users configured as ServiceAccounts: what the stored roles and bindings allow,
//! and kube-apiserver's 403 for the rest.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

use common::*;
use kube_core::params::{GetParams, ListParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, Status};
use model_apiserver::rbac::ServiceAccount;
use model_apiserver::{Request, Response, ServerConfig, Subresource};
use serde_json::{Value, json};

const OPERATOR: &str = "operator";

fn rbac(plural: &str) -> ApiResource {
    builtin("rbac.authorization.k8s.io", plural)
}

fn configmaps() -> ApiResource {
    builtin("", "configmaps")
}

fn deployments() -> ApiResource {
    builtin("apps", "deployments")
}

/// A server where `operator` is the ServiceAccount `ops/op`, with `objects` created by an admin.
fn world(objects: &[(&str, Option<&str>, Value)]) -> World {
    let mut config = ServerConfig::default();
    config.service_accounts.insert(OPERATOR.to_owned(), ServiceAccount::new("ops", "op"));
    // What a fresh cluster holds: `cluster-admin` among it, since RBAC is checked.
    let mut ids = model_apiserver::SeqIds::default();
    let now = jiff::Timestamp::from_second(T0_SECONDS).unwrap();
    let server = model_apiserver::ApiServer::with_config(config)
        .with_bootstrap_objects(&mut model_apiserver::Context::new(now, &mut ids));
    let mut w = World { server, ids, now };
    w.create(
        &builtin("", "namespaces"),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}),
    );
    for (plural, ns, body) in objects {
        w.create(&rbac(plural), *ns, body.clone());
    }
    w
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(kind: &str, ns: Option<&str>, role_kind: &str, role: &str, subject: Value) -> Value {
    let mut metadata = json!({"name": format!("{role}-binding")});
    if let Some(ns) = ns {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    })
}

fn the_operator() -> Value {
    json!({"kind": "ServiceAccount", "name": "op", "namespace": "ops"})
}

fn as_operator(mut request: Request) -> Request {
    request.user = Some(Arc::from(OPERATOR));
    request
}

fn get(w: &mut World, ar: &ApiResource, ns: Option<&str>, name: &str) -> Result<Response, Status> {
    w.handle(as_operator(Request::get(ar, ns, name, GetParams::default())))
}

fn list(w: &mut World, ar: &ApiResource, ns: Option<&str>) -> Result<Response, Status> {
    w.handle(as_operator(Request::list(ar, ns, ListParams::default())))
}

fn config_map(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}})
}

fn forbidden(result: Result<Response, Status>) -> Status {
    let err = result.expect_err("forbidden");
    assert_eq!(code_reason(&err), (403, "Forbidden"), "{err:?}");
    err
}

#[test]
fn without_a_binding_every_request_of_the_account_is_forbidden_in_kube_apiservers_words() {
    let mut w = world(&[]);
    w.create(&configmaps(), Some("ops"), config_map("ops", "settings"));
    let err = forbidden(get(&mut w, &configmaps(), Some("ops"), "settings"));
    assert_eq!(
        err.message,
        "configmaps \"settings\" is forbidden: User \"system:serviceaccount:ops:op\" cannot get resource \"configmaps\" \
         in API group \"\" in the namespace \"ops\""
    );
    let details = err.details.expect("details");
    assert_eq!(
        (details.kind.as_str(), details.name.as_str(), details.group.as_str()),
        ("configmaps", "settings", "")
    );
    let err = forbidden(list(&mut w, &deployments(), None));
    assert_eq!(
        err.message,
        "deployments.apps is forbidden: User \"system:serviceaccount:ops:op\" cannot list resource \"deployments\" in \
         API group \"apps\" at the cluster scope"
    );
    // Other users (an admin, a built-in controller) are not checked.
    assert!(w.handle(Request::get(&configmaps(), Some("ops"), "settings", GetParams::default())).is_ok());
}

#[test]
fn a_cluster_role_binding_grants_its_verbs_everywhere_and_nothing_more() {
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]);
    let mut w = world(&[
        ("clusterroles", None, cluster_role("reader", rules)),
        (
            "clusterrolebindings",
            None,
            binding("ClusterRoleBinding", None, "ClusterRole", "reader", the_operator()),
        ),
    ]);
    assert!(list(&mut w, &configmaps(), None).is_ok());
    assert!(list(&mut w, &configmaps(), Some("default")).is_ok());
    let create = Request::create(
        &configmaps(),
        Some("default"),
        obj(config_map("default", "x")),
        PostParams::default(),
    );
    let err = forbidden(w.handle(as_operator(create)));
    assert!(
        err.message
            .starts_with("configmaps is forbidden: User \"system:serviceaccount:ops:op\" cannot create")
    );
    forbidden(list(&mut w, &builtin("", "secrets"), Some("default")));
}

#[test]
fn a_role_binding_grants_only_in_its_namespace_through_a_role_or_a_cluster_role() {
    let rules = json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]);
    let mut w = world(&[
        ("roles", Some("ops"), role("ops", "deployer", rules.clone())),
        (
            "rolebindings",
            Some("ops"),
            binding(
                "RoleBinding",
                Some("ops"),
                "Role",
                "deployer",
                json!({"kind": "ServiceAccount", "name": "op"}),
            ),
        ),
        (
            "clusterroles",
            None,
            cluster_role(
                "cm-editor",
                json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
            ),
        ),
        (
            "rolebindings",
            Some("default"),
            binding("RoleBinding", Some("default"), "ClusterRole", "cm-editor", the_operator()),
        ),
    ]);
    assert!(list(&mut w, &deployments(), Some("ops")).is_ok());
    forbidden(list(&mut w, &deployments(), Some("default")));
    forbidden(list(&mut w, &deployments(), None));
    assert!(list(&mut w, &configmaps(), Some("default")).is_ok());
    forbidden(list(&mut w, &configmaps(), Some("ops")));
}

#[test]
fn subresources_need_their_own_rule_and_resource_names_limit_named_requests() {
    let rules = json!([
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["leader"], "verbs": ["get", "update", "list"]},
        {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
    ]);
    let mut w = world(&[
        ("clusterroles", None, cluster_role("op", rules)),
        (
            "clusterrolebindings",
            None,
            binding("ClusterRoleBinding", None, "ClusterRole", "op", the_operator()),
        ),
    ]);
    w.create(&deployments(), Some("ops"), json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ops"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}));
    w.create(&configmaps(), Some("ops"), config_map("ops", "leader"));
    w.create(&configmaps(), Some("ops"), config_map("ops", "other"));
    let status = json!({"status": {"observedGeneration": 1}});
    let patch = || {
        Request::patch(
            &deployments(),
            Some("ops"),
            "web",
            Patch::Merge(status.clone()),
            PatchParams::default(),
        )
    };
    assert!(w.handle(as_operator(patch())).is_ok());
    let err = forbidden(w.handle(as_operator(patch().with_subresource(Subresource::Status))));
    assert_eq!(
        err.message,
        "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:ops:op\" cannot patch resource \
         \"deployments/status\" in API group \"apps\" in the namespace \"ops\""
    );
    // `*/status` of the core group: a Pod's or a ConfigMap's status, not a Deployment's.
    let status_get = Request::get(&deployments(), Some("ops"), "web", GetParams::default())
        .with_subresource(Subresource::Status);
    forbidden(w.handle(as_operator(status_get)));
    assert!(get(&mut w, &configmaps(), Some("ops"), "leader").is_ok());
    forbidden(get(&mut w, &configmaps(), Some("ops"), "other"));
    // A list names no object, unless its field selector does.
    forbidden(list(&mut w, &configmaps(), Some("ops")));
    let one = ListParams { field_selector: Some("metadata.name=leader".to_owned()), ..ListParams::default() };
    assert!(w.handle(as_operator(Request::list(&configmaps(), Some("ops"), one))).is_ok());
}

#[test]
fn groups_aggregated_cluster_roles_and_the_bootstrap_cluster_admin_grant_too() {
    let mut w = world(&[
        (
            "clusterroles",
            None,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "aggregate"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-op": "true"}}]},
            }),
        ),
        (
            "clusterroles",
            None,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "piece", "labels": {"example.com/aggregate-to-op": "true"}},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
            }),
        ),
        (
            "clusterrolebindings",
            None,
            binding(
                "ClusterRoleBinding",
                None,
                "ClusterRole",
                "aggregate",
                json!({"kind": "Group", "name": "system:serviceaccounts:ops", "apiGroup": "rbac.authorization.k8s.io"}),
            ),
        ),
    ]);
    assert!(list(&mut w, &configmaps(), Some("default")).is_ok());
    forbidden(list(&mut w, &builtin("", "secrets"), Some("default")));
    // cluster-admin exists from the start when RBAC is on.
    w.create(
        &rbac("clusterrolebindings"),
        None,
        binding("ClusterRoleBinding", None, "ClusterRole", "cluster-admin", the_operator()),
    );
    assert!(list(&mut w, &builtin("", "secrets"), Some("default")).is_ok());
}
