//! RBAC's escalation and bind prevention for the users configured as ServiceAccounts, and the
//! bootstrap `admin`, `edit` and `view` ClusterRoles they are bound to.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

use common::*;
use kube_core::params::{ListParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, Status};
use model_apiserver::rbac::ServiceAccount;
use model_apiserver::{Request, Response, ServerConfig};
use serde_json::{Value, json};

const OPERATOR: &str = "operator";

/// How upstream names the operator in an escalation refusal.
const HOLDER: &str = "user \"system:serviceaccount:ops:op\" (groups=[\"system:serviceaccounts\" \
                      \"system:serviceaccounts:ops\" \"system:authenticated\"]) is attempting to grant RBAC \
                      permissions not currently held:";

fn rbac(plural: &str) -> ApiResource {
    builtin("rbac.authorization.k8s.io", plural)
}

/// A server where `operator` is the ServiceAccount `ops/op`, bound in `ops` to a Role `op`
/// with `rules` (and to nothing else).
fn world(rules: Value) -> World {
    let mut config = ServerConfig::default();
    config.service_accounts.insert(OPERATOR.to_owned(), ServiceAccount::new("ops", "op"));
    let mut ids = model_apiserver::SeqIds::default();
    let now = jiff::Timestamp::from_second(T0_SECONDS).unwrap();
    let server = model_apiserver::ApiServer::with_config(config)
        .with_bootstrap_objects(&mut model_apiserver::Context::new(now, &mut ids));
    let mut w = World { server, ids, now };
    w.create(
        &namespaces(),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}),
    );
    w.create(&rbac("roles"), Some("ops"), role("op", rules));
    w.create(&rbac("rolebindings"), Some("ops"), binding("RoleBinding", "op", "Role", "op", the_operator()));
    w
}

fn role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": "ops"}, "rules": rules})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
           "rules": rules})
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, subject: Value) -> Value {
    let mut metadata = json!({"name": name});
    if kind == "RoleBinding" {
        metadata["namespace"] = json!("ops");
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

fn someone() -> Value {
    json!({"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"})
}

fn as_operator(mut request: Request) -> Request {
    request.user = Some(Arc::from(OPERATOR));
    request
}

/// Create `body` as the operator.
fn create(w: &mut World, plural: &str, body: Value) -> Result<Response, Status> {
    let ns = body["metadata"]["namespace"].as_str().map(str::to_owned);
    w.handle(as_operator(Request::create(&rbac(plural), ns.as_deref(), obj(body), PostParams::default())))
}

fn forbidden(result: Result<Response, Status>) -> String {
    let err = result.expect_err("forbidden");
    assert_eq!(code_reason(&err), (403, "Forbidden"), "{err:?}");
    err.message
}

/// Rules that let the operator create and update roles and bindings in its namespace.
fn writes_roles_and_bindings() -> Value {
    json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
            "verbs": ["create", "update", "patch", "get"]}])
}

fn with_rules(base: Value, more: Value) -> Value {
    let mut all = base.as_array().unwrap().clone();
    all.extend(more.as_array().unwrap().iter().cloned());
    Value::Array(all)
}

fn list_pods() -> Value {
    json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
}

#[test]
fn a_role_granting_what_its_writer_does_not_hold_is_refused_in_kube_apiservers_words() {
    let mut w = world(writes_roles_and_bindings());
    let message = forbidden(create(&mut w, "roles", role("reader", list_pods())));
    assert_eq!(
        message,
        format!(
            "roles.rbac.authorization.k8s.io \"reader\" is forbidden: {HOLDER}\n\
             {{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\"]}}"
        )
    );
    // Nothing was stored.
    assert!(w.try_get(&rbac("roles"), Some("ops"), "reader").is_err());
    // Once the operator holds `list pods`, it may grant it.
    w.try_update(
        &rbac("roles"),
        Some("ops"),
        obj(role("op", with_rules(writes_roles_and_bindings(), list_pods()))),
    )
    .unwrap();
    create(&mut w, "roles", role("reader", list_pods())).expect("the operator holds what it grants");
}

#[test]
fn missing_permissions_are_broken_down_compacted_per_resource_and_sorted() {
    let held = json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]);
    let mut w = world(with_rules(writes_roles_and_bindings(), held));
    let wanted = json!([
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get", "delete"]},
        {"apiGroups": ["", "batch"], "resources": ["pods", "jobs"], "verbs": ["watch", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments/status", "*/scale"], "verbs": ["update"]},
    ]);
    let message = forbidden(create(&mut w, "roles", role("wide", wanted)));
    let expected = [
        r#"{APIGroups:[""], Resources:["jobs"], Verbs:["watch" "list"]}"#,
        r#"{APIGroups:[""], Resources:["pods"], Verbs:["watch" "list"]}"#,
        r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}"#,
        r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}"#,
        r#"{APIGroups:["apps"], Resources:["*/scale"], Verbs:["update"]}"#,
        r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete"]}"#,
        r#"{APIGroups:["apps"], Resources:["deployments/status"], Verbs:["update"]}"#,
        r#"{APIGroups:["batch"], Resources:["jobs"], Verbs:["watch" "list"]}"#,
        r#"{APIGroups:["batch"], Resources:["pods"], Verbs:["watch" "list"]}"#,
    ];
    assert_eq!(
        message,
        format!("roles.rbac.authorization.k8s.io \"wide\" is forbidden: {HOLDER}\n{}", expected.join("\n"))
    );
}

#[test]
fn wildcards_and_subresource_wildcards_cover_what_they_name() {
    let held = json!([
        {"apiGroups": ["*"], "resources": ["configmaps"], "verbs": ["*"]},
        {"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["update"]},
    ]);
    let mut w = world(with_rules(writes_roles_and_bindings(), held));
    let covered = json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "delete"], "resourceNames": ["x"]},
        {"apiGroups": ["apps"], "resources": ["deployments/status", "statefulsets/status"], "verbs": ["update"]},
    ]);
    create(&mut w, "roles", role("covered", covered)).expect("a wildcard covers what it names");
    let message = forbidden(create(
        &mut w,
        "roles",
        role("status", json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]}])),
    ));
    assert!(
        message.ends_with(r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["update"]}"#),
        "{message}"
    );
}

#[test]
fn the_escalate_verb_lets_a_writer_grant_what_it_does_not_hold() {
    let escalate =
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]);
    let mut w = world(with_rules(writes_roles_and_bindings(), escalate));
    create(&mut w, "roles", role("reader", list_pods())).expect("escalate allows any rules");
}

#[test]
fn an_escalate_limited_to_names_covers_updates_of_those_roles_not_creates() {
    // A create has no name in its request attributes (a POST to the collection), so a
    // name-limited `escalate` allows only updates of that role, as upstream.
    let escalate = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                           "resourceNames": ["reader"], "verbs": ["escalate"]}]);
    let mut w = world(with_rules(writes_roles_and_bindings(), escalate));
    forbidden(create(&mut w, "roles", role("reader", list_pods())));
    w.create(&rbac("roles"), Some("ops"), role("reader", json!([])));
    let update = Request::update(
        &rbac("roles"),
        Some("ops"),
        "reader",
        obj(role("reader", list_pods())),
        PostParams::default(),
    );
    w.handle(as_operator(update)).expect("escalate on the role by name allows its update");
}

#[test]
fn an_update_of_only_finalizers_and_owner_references_is_not_checked() {
    let mut w = world(writes_roles_and_bindings());
    w.create(&rbac("roles"), Some("ops"), role("reader", list_pods()));
    let gc_only = json!({"metadata": {"finalizers": ["example.com/keep"],
                                      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                           "uid": "0a7c1c39-5ad9-4e4b-9d4b-000000000001"}]}});
    let patch = |body: &Value| {
        as_operator(Request::patch(
            &rbac("roles"),
            Some("ops"),
            "reader",
            Patch::Merge(body.clone()),
            PatchParams::default(),
        ))
    };
    w.handle(patch(&gc_only)).expect("the garbage collector's fields are not checked");
    let message = forbidden(w.handle(patch(&json!({"metadata": {"labels": {"team": "a"}}}))));
    assert!(
        message.starts_with("roles.rbac.authorization.k8s.io \"reader\" is forbidden: user"),
        "{message}"
    );
}

#[test]
fn a_binding_to_a_role_its_writer_does_not_hold_is_refused_unless_it_may_bind_it() {
    let mut w = world(writes_roles_and_bindings());
    w.create(&rbac("roles"), Some("ops"), role("pod-reader", list_pods()));
    let message = forbidden(create(
        &mut w,
        "rolebindings",
        binding("RoleBinding", "b1", "Role", "pod-reader", someone()),
    ));
    assert_eq!(
        message,
        format!(
            "rolebindings.rbac.authorization.k8s.io \"b1\" is forbidden: {HOLDER}\n\
             {{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\"]}}"
        )
    );
    // A role that does not exist is not found, as the registry's getter answers.
    let err =
        create(&mut w, "rolebindings", binding("RoleBinding", "b0", "Role", "ghost", someone())).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "roles.rbac.authorization.k8s.io \"ghost\" not found");
    // `bind` on that role, by name, allows the binding.
    let bind = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                       "resourceNames": ["pod-reader"], "verbs": ["bind"]}]);
    w.try_update(&rbac("roles"), Some("ops"), obj(role("op", with_rules(writes_roles_and_bindings(), bind))))
        .unwrap();
    create(&mut w, "rolebindings", binding("RoleBinding", "b1", "Role", "pod-reader", someone()))
        .expect("bind allows binding the role");
}

#[test]
fn a_writer_holding_every_permission_of_the_role_may_bind_it() {
    let mut w = world(with_rules(writes_roles_and_bindings(), list_pods()));
    w.create(&rbac("roles"), Some("ops"), role("pod-reader", list_pods()));
    create(&mut w, "rolebindings", binding("RoleBinding", "b1", "Role", "pod-reader", someone()))
        .expect("the operator holds list pods");
    // A binding of the operator to a missing role adds a resolution error to a refusal.
    w.create(
        &rbac("rolebindings"),
        Some("ops"),
        binding("RoleBinding", "dangling", "Role", "ghost", the_operator()),
    );
    let message = forbidden(create(
        &mut w,
        "roles",
        role("writer", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}])),
    ));
    assert!(
        message.ends_with(
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"create\"]}; resolution errors: \
             [roles.rbac.authorization.k8s.io \"ghost\" not found]"
        ),
        "{message}"
    );
}

#[test]
fn cluster_role_bindings_need_the_permissions_cluster_wide_or_bind_on_the_cluster_role() {
    let mut w = world(list_pods());
    let crb = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterrolebindings"], "verbs": ["create"]}]);
    w.create(&rbac("clusterroles"), None, cluster_role("crb-writer", crb));
    w.create(
        &rbac("clusterrolebindings"),
        None,
        binding("ClusterRoleBinding", "op", "ClusterRole", "crb-writer", the_operator()),
    );
    w.create(&rbac("clusterroles"), None, cluster_role("pod-lister", list_pods()));
    // `list pods` held in `ops` only does not cover a cluster-wide grant.
    let message = forbidden(create(
        &mut w,
        "clusterrolebindings",
        binding("ClusterRoleBinding", "pods", "ClusterRole", "pod-lister", someone()),
    ));
    assert!(
        message.starts_with("clusterrolebindings.rbac.authorization.k8s.io \"pods\" is forbidden: user"),
        "{message}"
    );
    let bind = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"]}]);
    w.create(&rbac("clusterroles"), None, cluster_role("binder", bind));
    w.create(
        &rbac("clusterrolebindings"),
        None,
        binding("ClusterRoleBinding", "binder", "ClusterRole", "binder", the_operator()),
    );
    create(
        &mut w,
        "clusterrolebindings",
        binding("ClusterRoleBinding", "pods", "ClusterRole", "pod-lister", someone()),
    )
    .expect("bind on clusterroles allows it");
}

#[test]
fn an_aggregation_rule_needs_every_permission() {
    let mut w = world(json!([]));
    let writer = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}]);
    w.create(&rbac("clusterroles"), None, cluster_role("cr-writer", writer));
    w.create(
        &rbac("clusterrolebindings"),
        None,
        binding("ClusterRoleBinding", "op", "ClusterRole", "cr-writer", the_operator()),
    );
    let mut aggregating = cluster_role("gather", json!([]));
    aggregating["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {"example.com/gather": "true"}}]});
    let message = forbidden(create(&mut w, "clusterroles", aggregating));
    assert_eq!(
        message,
        "clusterroles.rbac.authorization.k8s.io \"gather\" is forbidden: must have cluster-admin privileges to use \
         the aggregationRule"
    );
}

#[test]
fn unconfigured_users_are_not_checked() {
    let mut w = world(json!([]));
    w.create(
        &rbac("roles"),
        Some("ops"),
        role("anything", json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])),
    );
    w.create(
        &rbac("rolebindings"),
        Some("ops"),
        binding("RoleBinding", "admin", "ClusterRole", "cluster-admin", someone()),
    );
}

fn can(w: &mut World, request: Request) -> bool {
    match w.handle(as_operator(request)) {
        Ok(_) => true,
        Err(err) if code_reason(&err) == (403, "Forbidden") => false,
        Err(err) => panic!("neither allowed nor forbidden: {err:?}"),
    }
}

fn list_in(ar: &ApiResource, ns: &str) -> Request {
    Request::list(ar, Some(ns), ListParams::default())
}

fn create_in(ar: &ApiResource, ns: &str, body: Value) -> Request {
    Request::create(ar, Some(ns), obj(body), PostParams::default())
}

fn a_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ops"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn a_config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ops"}})
}

#[test]
fn a_role_binding_to_view_lets_the_account_read_but_not_write_or_read_secrets() {
    let mut w = world(json!([]));
    w.create(
        &rbac("rolebindings"),
        Some("ops"),
        binding("RoleBinding", "view", "ClusterRole", "view", the_operator()),
    );
    assert!(can(&mut w, list_in(&pods(), "ops")));
    assert!(can(&mut w, list_in(&deployments(), "ops")));
    assert!(can(&mut w, list_in(&builtin("discovery.k8s.io", "endpointslices"), "ops")));
    assert!(!can(&mut w, create_in(&pods(), "ops", a_pod("p"))));
    assert!(!can(&mut w, list_in(&builtin("", "secrets"), "ops")));
    assert!(!can(&mut w, list_in(&rbac("roles"), "ops")));
    // Only in the binding's namespace.
    assert!(!can(&mut w, list_in(&pods(), "default")));
}

#[test]
fn a_role_binding_to_edit_adds_writes_and_secrets_and_admin_adds_roles() {
    let mut w = world(json!([]));
    w.create(
        &rbac("rolebindings"),
        Some("ops"),
        binding("RoleBinding", "edit", "ClusterRole", "edit", the_operator()),
    );
    // edit aggregates view.
    assert!(can(&mut w, list_in(&pods(), "ops")));
    assert!(can(&mut w, create_in(&cm(), "ops", a_config_map("c1"))));
    assert!(can(&mut w, list_in(&builtin("", "secrets"), "ops")));
    assert!(can(&mut w, list_in(&builtin("coordination.k8s.io", "leases"), "ops")));
    assert!(!can(&mut w, list_in(&rbac("roles"), "ops")));
    assert!(!can(
        &mut w,
        create_in(
            &builtin("", "resourcequotas"),
            "ops",
            json!({
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ops"}})
        )
    ));
    w.create(
        &rbac("rolebindings"),
        Some("ops"),
        binding("RoleBinding", "admin", "ClusterRole", "admin", the_operator()),
    );
    // admin aggregates edit (and so view) and adds roles and bindings.
    assert!(can(&mut w, list_in(&rbac("roles"), "ops")));
    assert!(can(&mut w, create_in(&cm(), "ops", a_config_map("c2"))));
    // An admin of the namespace may grant what it holds there, edit included, but not beyond.
    create(&mut w, "rolebindings", binding("RoleBinding", "someone-edit", "ClusterRole", "edit", someone()))
        .expect("admin holds everything edit grants");
    forbidden(create(
        &mut w,
        "rolebindings",
        binding("RoleBinding", "someone-root", "ClusterRole", "cluster-admin", someone()),
    ));
}
