//! Built-in objects read back as their Go types encode them: empty `omitempty` fields left out,
//! fields without it there even when empty, structs always there. A controller comparing what
//! it wrote with what it reads meets these differences on a cluster, and here.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams};
use model_apiserver::Request;
use serde_json::{Value, json};

fn pod_with_empties() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}, "finalizers": []},
        "spec": {"hostNetwork": false, "nodeSelector": {}, "tolerations": [], "nodeName": "",
            "containers": [{"name": "c", "image": "i", "args": [], "env": null,
                "ports": [{"containerPort": 80, "hostPort": 0}]}]}})
}

#[test]
fn empty_omitempty_fields_are_left_out_and_structs_are_there() {
    let mut w = World::new();
    let p = w.create(&pods(), Some("default"), pod_with_empties());
    assert_eq!((&p.metadata.labels, &p.metadata.finalizers), (&None, &None));
    let spec = &p.data["spec"];
    for gone in ["hostNetwork", "nodeSelector", "tolerations", "nodeName"] {
        assert_eq!(spec.get(gone), None, "{gone} in {spec}");
    }
    let c = &spec["containers"][0];
    assert_eq!((c.get("args"), c.get("env")), (None, None));
    assert_eq!(c["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]));
    // `resources` is a struct, not a pointer: always there.
    assert_eq!(c["resources"], json!({}));
    // What a read answers is what the create answered.
    assert_eq!(w.get(&pods(), Some("default"), "p").data, p.data);
    // An explicit zero is decoded as none before defaulting, as in the Go struct.
    let mut zero = pod_with_empties();
    zero["metadata"]["name"] = json!("z");
    zero["spec"]["restartPolicy"] = json!("");
    assert_eq!(w.create(&pods(), Some("default"), zero).data["spec"]["restartPolicy"], json!("Always"));
}

#[test]
fn a_field_without_omitempty_is_null_when_never_set_and_kept_when_empty() {
    let mut w = World::new();
    let roles = builtin("rbac.authorization.k8s.io", "roles");
    let role = |name: &str| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}});
    assert_eq!(w.create(&roles, Some("default"), role("none")).data["rules"], Value::Null);
    assert!(w.get(&roles, Some("default"), "none").data.as_object().unwrap().contains_key("rules"));
    let mut empty = role("empty");
    empty["rules"] = json!([]);
    assert_eq!(w.create(&roles, Some("default"), empty).data["rules"], json!([]));
}

#[test]
fn pointers_keep_their_zeros_and_values_do_not() {
    let mut w = World::new();
    let deployments = builtin("apps", "deployments");
    let d = w.create(
        &deployments,
        Some("default"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 0, "paused": false, "minReadySeconds": 0,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}, "annotations": {}},
                    "spec": {"automountServiceAccountToken": false,
                        "containers": [{"name": "c", "image": "i"}]}}}}),
    );
    let spec = &d.data["spec"];
    assert_eq!(spec["replicas"], json!(0), "a pointer: 0 is a value");
    assert_eq!((spec.get("paused"), spec.get("minReadySeconds")), (None, None));
    // A template's zero creationTimestamp is left out (`omitzero`, Kubernetes 1.34 and later).
    assert_eq!(spec["template"]["metadata"], json!({"labels": {"app": "d"}}));
    assert_eq!(spec["template"]["spec"]["automountServiceAccountToken"], json!(false));
    // A condition's zero times are `null` (structs with their own encoding, no `omitzero`).
    let status = json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}});
    let patch = Patch::Merge(status);
    let written = object(
        w.handle(
            Request::patch(&deployments, Some("default"), "d", patch, PatchParams::default())
                .with_subresource(model_apiserver::Subresource::Status),
        )
        .unwrap(),
    );
    assert_eq!(
        written.data["status"]["conditions"],
        json!([{"type": "Available", "status": "True", "lastTransitionTime": null, "lastUpdateTime": null}])
    );
}

#[test]
fn writing_empties_where_nothing_is_stored_is_a_no_op() {
    let mut w = World::new();
    let created = w.create(&cm(), Some("default"), json!({"metadata": {"name": "a"}, "data": {"k": "v"}}));
    assert_eq!(created.data.get("binaryData"), None);
    // An update that adds only empty fields changes nothing: no new resourceVersion.
    let mut same = (*created).clone();
    same.data["binaryData"] = json!({});
    same.metadata.labels = Some(Default::default());
    let updated = w.try_update(&cm(), Some("default"), same).unwrap();
    assert_eq!(updated.metadata.resource_version, created.metadata.resource_version);
    // A merge patch that removes the last key leaves no `data` at all.
    let emptied = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": null}})).unwrap();
    assert_eq!(emptied.data.get("data"), None);
}

#[test]
fn custom_resources_keep_their_empties() {
    let mut w = World::new();
    let crds = builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}}});
    w.create(
        &crds,
        None,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": schema}}]}}),
    );
    let widgets = kube_core::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let created = w.create(
        &widgets,
        Some("default"),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"tags": [], "flag": false, "labels": {}}}),
    );
    assert_eq!(created.data["spec"], json!({"tags": [], "flag": false, "labels": {}}));
}

#[test]
fn encode_builtin_encodes_as_the_server_does_and_a_stored_object_is_already_encoded() {
    use model_apiserver::go_types::{encode_builtin, encode_builtin_field};
    let mut w = World::new();
    let stored = w.create(&pods(), Some("default"), pod_with_empties());
    let mut answered = serde_json::to_value(&*stored).unwrap();
    let before = answered.clone();
    assert!(encode_builtin("", "Pod", &mut answered));
    assert_eq!(answered, before, "what the server answers is what encoding gives");

    let mut status = json!({"replicas": 2, "readyReplicas": 0, "conditions": []});
    assert!(encode_builtin_field("apps", "ReplicaSet", "status", &mut status));
    assert_eq!(status, json!({"replicas": 2}));
    let mut role = json!({"metadata": {"name": "r"}});
    assert!(encode_builtin("rbac.authorization.k8s.io", "Role", &mut role));
    assert_eq!(role, json!({"metadata": {"name": "r"}, "rules": null}));
    // Not built in: nothing done.
    let mut widget = json!({"spec": {"tags": []}});
    assert!(!encode_builtin("example.com", "Widget", &mut widget));
    assert!(!encode_builtin_field("apps", "ReplicaSet", "nothing", &mut widget));
    assert_eq!(widget, json!({"spec": {"tags": []}}));
}
