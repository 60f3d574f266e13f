//! Field selectors per kind, on list, watch and deletecollection: the fields each kind's
//! registry makes selectable, their values, and the 400 for the others.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{
    ApiResource, WatchEvent,
    params::{DeleteParams, ListParams, WatchParams},
};
use model_apiserver::{Request, Response, Subresource};
use serde_json::{Value, json};

fn select(w: &mut World, ar: &ApiResource, ns: Option<&str>, fields: &str) -> Vec<String> {
    let list = w.list(ar, ns, ListParams::default().fields(fields));
    list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect()
}

fn rejected(w: &mut World, ar: &ApiResource, ns: Option<&str>, fields: &str) -> String {
    let err = w.handle(Request::list(ar, ns, ListParams::default().fields(fields))).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"), "{fields}");
    err.message
}

fn pod(name: &str, spec: Value, status: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "busybox"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec, "status": status})
}

/// Pods p1 (on node-1, Running, host network, restartPolicy Never) and p2 (unscheduled,
/// Pending, service account `robot`), with status written through `/status`.
fn two_pods() -> World {
    let mut w = World::new();
    let p1 =
        pod("p1", json!({"nodeName": "node-1", "hostNetwork": true, "restartPolicy": "Never"}), json!({}));
    w.create(&pods(), Some("default"), p1);
    w.create(&pods(), Some("default"), pod("p2", json!({"serviceAccountName": "robot"}), json!({})));
    let status = json!({"status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "podIP": "10.0.0.7"}});
    let patch = kube_core::params::Patch::Merge(status);
    let r = w.handle(
        Request::patch(&pods(), Some("default"), "p1", patch, Default::default())
            .with_subresource(Subresource::Status),
    );
    r.unwrap();
    w
}

#[test]
fn pods_are_selected_by_node_phase_ip_restart_policy_service_account_and_host_network() {
    let mut w = two_pods();
    let ns = Some("default");
    assert_eq!(select(&mut w, &pods(), ns, "spec.nodeName=node-1"), ["p1"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.nodeName="), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.nodeName!=node-1"), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "status.phase=Running"), ["p1"]);
    assert_eq!(select(&mut w, &pods(), ns, "status.phase==Pending"), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "status.podIP=10.0.0.7"), ["p1"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.restartPolicy=Always"), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.serviceAccountName=robot"), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.schedulerName=default-scheduler"), ["p1", "p2"]);
    // An unset bool selects as "false", as the registry's field set has it.
    assert_eq!(select(&mut w, &pods(), ns, "spec.hostNetwork=false"), ["p2"]);
    assert_eq!(select(&mut w, &pods(), ns, "spec.hostNetwork=true,status.phase=Running"), ["p1"]);
    assert_eq!(select(&mut w, &pods(), ns, "status.nominatedNodeName="), ["p1", "p2"]);
    // spec.host is what old v1 clients call spec.nodeName.
    assert_eq!(select(&mut w, &pods(), ns, "spec.host=node-1"), ["p1"]);
    assert_eq!(select(&mut w, &pods(), None, "metadata.namespace=default,metadata.name=p2"), ["p2"]);
}

#[test]
fn a_pod_field_the_registry_does_not_select_on_gets_field_label_not_supported() {
    let mut w = two_pods();
    let message = rejected(&mut w, &pods(), Some("default"), "spec.bogus=x");
    assert_eq!(message, "field label not supported: spec.bogus");
}

#[test]
fn kinds_without_selectable_fields_of_their_own_accept_only_name_and_namespace() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "v"})));
    let message = rejected(&mut w, &cm(), Some("default"), "data.k=v");
    assert_eq!(
        message,
        r#""data.k" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    let services = builtin("", "services");
    let message = rejected(&mut w, &services, None, "spec.type=ClusterIP");
    assert!(message.starts_with(r#""spec.type" is not a known field selector"#), "{message}");
    let message = rejected(&mut w, &deployments(), None, "status.replicas=1");
    assert!(message.starts_with(r#""status.replicas" is not a known field selector"#), "{message}");
    assert_eq!(select(&mut w, &cm(), None, "metadata.name=a"), ["a"]);
}

#[test]
fn namespaces_are_selected_by_phase_and_name_but_not_by_namespace() {
    let mut w = World::new();
    w.create(
        &namespaces(),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
    );
    w.try_delete(&namespaces(), None, "doomed").unwrap();
    assert_eq!(select(&mut w, &namespaces(), None, "status.phase=Terminating"), ["doomed"]);
    assert_eq!(select(&mut w, &namespaces(), None, "metadata.name=default,status.phase=Active"), ["default"]);
    let message = rejected(&mut w, &namespaces(), None, "metadata.namespace=x");
    assert_eq!(message, "field label not supported: metadata.namespace");
}

#[test]
fn secrets_are_selected_by_type() {
    let mut w = World::new();
    let secrets = builtin("", "secrets");
    let secret = |name: &str, ty: Option<&str>| {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
        if let Some(ty) = ty {
            s["type"] = json!(ty);
        }
        s
    };
    w.create(&secrets, Some("default"), secret("tls", Some("kubernetes.io/tls-not-validated")));
    w.create(&secrets, Some("default"), secret("plain", None));
    assert_eq!(select(&mut w, &secrets, Some("default"), "type=Opaque"), ["plain"]);
    assert_eq!(select(&mut w, &secrets, Some("default"), "type!=Opaque"), ["tls"]);
    assert_eq!(rejected(&mut w, &secrets, None, "data.x=y"), "field label not supported: data.x");
}

#[test]
fn nodes_are_selected_by_unschedulable_which_is_false_when_unset() {
    let mut w = World::new();
    let nodes = builtin("", "nodes");
    let node = |name: &str, spec: Value| json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec});
    w.create(&nodes, None, node("cordoned", json!({"unschedulable": true})));
    w.create(&nodes, None, node("open", json!({})));
    assert_eq!(select(&mut w, &nodes, None, "spec.unschedulable=true"), ["cordoned"]);
    assert_eq!(select(&mut w, &nodes, None, "spec.unschedulable=false"), ["open"]);
    assert_eq!(
        rejected(&mut w, &nodes, None, "metadata.namespace="),
        "field label not supported: metadata.namespace"
    );
}

#[test]
fn jobs_are_selected_by_their_count_of_succeeded_pods() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let job = |name: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]
        }}}})
    };
    w.create(&jobs, Some("default"), job("done"));
    w.create(&jobs, Some("default"), job("new"));
    let patch = kube_core::params::Patch::Merge(json!({"status": {"succeeded": 1}}));
    w.handle(
        Request::patch(&jobs, Some("default"), "done", patch, Default::default())
            .with_subresource(Subresource::Status),
    )
    .unwrap();
    assert_eq!(select(&mut w, &jobs, Some("default"), "status.successful=1"), ["done"]);
    assert_eq!(select(&mut w, &jobs, Some("default"), "status.successful=0"), ["new"]);
    assert_eq!(
        rejected(&mut w, &jobs, None, "status.failed=0"),
        r#"field label "status.failed" not supported for batchv1.Job"#
    );
}

#[test]
fn replica_sets_are_selected_by_status_replicas() {
    let mut w = World::new();
    let rs = builtin("apps", "replicasets");
    let body = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    }});
    w.create(&rs, Some("default"), body);
    assert_eq!(select(&mut w, &rs, Some("default"), "status.replicas=0"), ["web"]);
    assert!(select(&mut w, &rs, Some("default"), "status.replicas=1").is_empty());
}

#[test]
fn a_watch_with_a_field_selector_sees_a_pod_that_leaves_it_deleted_as_it_was() {
    let mut w = World::new();
    let created = w.create(&pods(), Some("default"), pod("p", json!({}), json!({})));
    let patch = kube_core::params::Patch::Merge(json!({"status": {"phase": "Running"}}));
    let running = object(
        w.handle(
            Request::patch(&pods(), Some("default"), "p", patch, Default::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap(),
    );
    let params = WatchParams { bookmarks: false, ..Default::default() }.fields("status.phase=Pending");
    let events = w.watch(&pods(), Some("default"), &rv(&created).to_string(), params);
    let [WatchEvent::Deleted(gone)] = events.as_slice() else { panic!("{events:?}") };
    // The object as the watch last saw it (still Pending), at the revision that moved it out.
    assert_eq!(gone.data["status"]["phase"], "Pending");
    assert_eq!(rv(gone), rv(&running));
}

#[test]
fn deletecollection_with_a_field_selector_deletes_only_the_selected_objects() {
    let mut w = two_pods();
    let list = ListParams::default().fields("spec.nodeName=");
    let r = w.handle(Request::delete_collection(&pods(), Some("default"), list, DeleteParams::default()));
    let Ok(Response::List(deleted)) = r else { panic!("{r:?}") };
    assert_eq!(deleted.items.len(), 1);
    assert_eq!(select(&mut w, &pods(), Some("default"), ""), ["p1"]);
}

fn crds() -> ApiResource {
    builtin("apiextensions.k8s.io", "customresourcedefinitions")
}

fn gizmos() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    }
}

fn gizmo_crd(scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.shiny"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "color": {"type": "string"}, "size": {"type": "integer"}, "shiny": {"type": "boolean"},
                    "note": {"type": "string"}
                }}}}}
            }]
        }
    })
}

fn gizmo(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn custom_resources_are_selected_by_their_crd_selectable_fields() {
    let mut w = World::new();
    w.create(&crds(), None, gizmo_crd("Namespaced"));
    let ns = Some("default");
    w.create(&gizmos(), ns, gizmo("red", json!({"color": "red", "size": 3, "shiny": true})));
    w.create(&gizmos(), ns, gizmo("plain", json!({"note": "n"})));
    assert_eq!(select(&mut w, &gizmos(), ns, "spec.color=red"), ["red"]);
    assert_eq!(select(&mut w, &gizmos(), ns, "spec.size=3,spec.shiny=true"), ["red"]);
    // An absent field selects as the empty string.
    assert_eq!(select(&mut w, &gizmos(), ns, "spec.color="), ["plain"]);
    assert_eq!(select(&mut w, &gizmos(), ns, "metadata.namespace=default,metadata.name=plain"), ["plain"]);
    assert_eq!(rejected(&mut w, &gizmos(), ns, "spec.note=n"), "field label not supported: spec.note");
}

#[test]
fn a_cluster_scoped_custom_resource_is_not_selectable_by_namespace() {
    let mut w = World::new();
    w.create(&crds(), None, gizmo_crd("Cluster"));
    w.create(&gizmos(), None, gizmo("g", json!({"color": "blue"})));
    assert_eq!(select(&mut w, &gizmos(), None, "spec.color=blue"), ["g"]);
    let message = rejected(&mut w, &gizmos(), None, "metadata.namespace=");
    assert_eq!(message, "field label not supported: metadata.namespace");
}
