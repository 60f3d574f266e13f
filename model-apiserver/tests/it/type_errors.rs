//! A body that does not fit its kind's Go type is refused with the JSON path and serde's words
//! of the innermost value that did not fit: server-side apply names them as
//! `.spec.replicas: invalid type: string "x", expected i32`, create words them as encoding/json
//! does (`Go struct field .spec.replicas of type int32`), and a CRD file's load error names them.
//! The model finds them in the one deserialization that also names a body's unknown fields
//! (`src/ignored.rs`). This test keeps `serde_path_to_error`, which the model ran again on a
//! refused body before, as the reference: every node of a valid body of each of several kinds is
//! replaced by each wrong JSON value (a wrong type at every depth, inside lists and string maps,
//! an int32 or int64 overflow, a string for a time, a quantity or base64 bytes), alone and with a
//! null at another node (the model's deserializer reads past a null differently).

#[path = "common/mod.rs"]
mod common;

use common::*;
use k8s_openapi::api::{
    apps::v1 as apps, batch::v1 as batch, coordination::v1 as coordination, core::v1 as core,
    networking::v1 as networking,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{
    DynamicObject, Status,
    params::{Patch, PatchParams, PostParams},
};
use model_apiserver::{Request, ResourceType, ResourceTypes, crd::CrdLoadError, crd::load_crds_from_yaml};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// What replaces a node: every JSON type, and the numbers and strings that only some fields
/// refuse (`x` is no time and no base64, 2147483648 overflows an int32, 9223372036854775808 an
/// int64).
fn wrong_values() -> Vec<Value> {
    let text = r#"["x", 7, -1, 2147483648, 9223372036854775808, 1.5, true, null,
        {}, {"a": 1}, [], [1], ["x"], [{"a": "b"}]]"#;
    serde_json::from_str(text).expect("the wrong values parse")
}

/// The name on the URL and in the bodies.
const NAME: &str = "web";

/// `serde_path_to_error`'s path and words for `body` as `T`, or `None` for a body that fits.
fn reference<T: DeserializeOwned>(body: &Value) -> Option<(String, String)> {
    let error = serde_path_to_error::deserialize::<_, T>(body).err()?;
    Some((error.path().to_string(), error.inner().to_string()))
}

/// A kind under test: a valid body and the reference for its Go type.
struct Kind {
    body: Value,
    reference: fn(&Value) -> Option<(String, String)>,
}

fn metadata() -> Value {
    json!({
        "name": NAME, "namespace": "default",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"example.com/note": "a", "": "empty key"},
        "finalizers": ["example.com/f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1",
                             "controller": true, "blockOwnerDeletion": false}],
        "generation": 2,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
    })
}

fn pod_spec() -> Value {
    json!({
        "containers": [{
            "name": "web", "image": "nginx:1.25", "args": ["-v"],
            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": 2}},
            "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "initialDelaySeconds": 3},
            "securityContext": {"runAsUser": 1000, "privileged": false,
                                "capabilities": {"add": ["NET_ADMIN"]}}
        }],
        "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420,
                                                "items": [{"key": "k", "path": "p"}]}},
                    {"name": "e", "emptyDir": {"sizeLimit": "1Gi"}}],
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
        "terminationGracePeriodSeconds": 30,
        "restartPolicy": "Always"
    })
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()})
}

fn conditions() -> Value {
    json!([{"type": "Available", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "R", "message": "m"}])
}

fn body(api_version: &str, kind: &str, fields: Value) -> Value {
    let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata()});
    for (key, value) in fields.as_object().expect("the fields are an object") {
        body[key] = value.clone();
    }
    body
}

/// A body of `kind` from the unknown-fields test's, with this test's metadata.
fn listed_body(kind: &str) -> Value {
    let bodies: Vec<Value> =
        serde_json::from_str(include_str!("unknown_fields_bodies.json")).expect("the bodies parse");
    let mut body = bodies.into_iter().find(|b| b["kind"] == kind).expect("a body of the kind");
    body["metadata"] = metadata();
    body
}

fn kinds() -> Vec<Kind> {
    let selector = json!({"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]});
    vec![
        Kind {
            body: body(
                "v1",
                "Pod",
                json!({
                    "spec": pod_spec(),
                    "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z", "podIP": "10.0.0.1",
                               "conditions": conditions(),
                               "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                                                      "image": "nginx", "imageID": "sha",
                                                      "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}
                }),
            ),
            reference: reference::<core::Pod>,
        },
        Kind {
            body: body(
                "apps/v1",
                "Deployment",
                json!({
                    "spec": {"replicas": 2, "selector": selector, "revisionHistoryLimit": 10, "paused": false,
                             "strategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                             "template": template()},
                    "status": {"replicas": 2, "observedGeneration": 2, "conditions": conditions()}
                }),
            ),
            reference: reference::<apps::Deployment>,
        },
        Kind {
            body: body(
                "apps/v1",
                "StatefulSet",
                json!({
                    "spec": {"replicas": 3, "serviceName": "web", "selector": selector, "template": template(),
                             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                             "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                       "spec": {"accessModes": ["ReadWriteOnce"],
                                                                "resources": {"requests": {"storage": "1Gi"}}}}]}
                }),
            ),
            reference: reference::<apps::StatefulSet>,
        },
        Kind {
            body: body(
                "batch/v1",
                "Job",
                json!({
                    "spec": {"completions": 2, "parallelism": 1, "backoffLimit": 3, "activeDeadlineSeconds": 600,
                             "template": {"spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "c", "image": "busybox"}]}},
                             "podFailurePolicy": {"rules": [{"action": "FailJob",
                                                             "onExitCodes": {"operator": "In", "values": [1, 2]}}]}},
                    "status": {"startTime": "2026-01-01T00:00:00Z", "succeeded": 1, "conditions": conditions()}
                }),
            ),
            reference: reference::<batch::Job>,
        },
        Kind {
            body: body(
                "batch/v1",
                "CronJob",
                json!({
                    "spec": {"schedule": "*/5 * * * *", "suspend": false, "successfulJobsHistoryLimit": 3,
                             "jobTemplate": {"spec": {"backoffLimit": 2, "template": template()}}}
                }),
            ),
            reference: reference::<batch::CronJob>,
        },
        Kind {
            body: body(
                "v1",
                "Service",
                json!({
                    "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "10.0.0.9",
                             "clusterIPs": ["10.0.0.9"], "sessionAffinity": "ClientIP",
                             "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}},
                             "ports": [{"name": "http", "port": 80, "targetPort": "http", "nodePort": 30080,
                                        "protocol": "TCP"},
                                       {"name": "https", "port": 443, "targetPort": 8443}]},
                    "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
                }),
            ),
            reference: reference::<core::Service>,
        },
        Kind {
            body: body(
                "v1",
                "ConfigMap",
                json!({
                    "data": {"a": "1", "b": "2"}, "binaryData": {"c": "YWJj"}, "immutable": false
                }),
            ),
            reference: reference::<core::ConfigMap>,
        },
        Kind {
            body: body(
                "v1",
                "Secret",
                json!({
                    "type": "Opaque", "data": {"a": "YWJj"}, "stringData": {"b": "x"}
                }),
            ),
            reference: reference::<core::Secret>,
        },
        Kind { body: listed_body("Ingress"), reference: reference::<networking::Ingress> },
        Kind { body: listed_body("Lease"), reference: reference::<coordination::Lease> },
        Kind {
            body: listed_body("CustomResourceDefinition"),
            reference: reference::<CustomResourceDefinition>,
        },
    ]
}

/// The JSON pointers of every node under `value`'s root, in document order.
fn pointers(value: &Value, at: &mut String, out: &mut Vec<String>) {
    let len = at.len();
    let child = |at: &mut String, step: &str, child: &Value, out: &mut Vec<String>| {
        at.push('/');
        at.push_str(&step.replace('~', "~0").replace('/', "~1"));
        out.push(at.clone());
        pointers(child, at, out);
        at.truncate(len);
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| child(at, k, v, out)),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| child(at, &i.to_string(), v, out)),
        _ => {}
    }
}

/// Whether one node is the other or under it.
fn related(a: &str, b: &str) -> bool {
    let under = |outer: &str, inner: &str| {
        inner.strip_prefix(outer).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    under(a, b) || under(b, a)
}

/// How many bodies each route refused, and how many fit.
#[derive(Default, Debug)]
struct Counts {
    fit: usize,
    applied: usize,
    created: usize,
    loaded: usize,
}

/// Apply answers the reference's path and words, as the field manager's typed conversion does.
/// `false` where the body never reaches it: its apiVersion is another (a string, a 400 then).
fn check_apply(w: &mut World, ty: &ResourceType, body: &Value, (path, message): &(String, String)) -> bool {
    if body["apiVersion"].as_str().is_some_and(|v| v != ty.api.api_version) {
        return false;
    }
    let namespace = ty.namespaced.then_some("default");
    let request =
        Request::patch(&ty.api, namespace, NAME, Patch::Apply(body.clone()), PatchParams::apply("types"));
    let status = w.handle(request).expect_err("apply refuses a body its type refuses");
    let object = if ty.namespaced { format!("default/{NAME}") } else { NAME.to_owned() };
    let group_version =
        if ty.api.group.is_empty() { format!("/{}", ty.api.version) } else { ty.api.api_version.clone() };
    let expected = format!(
        "failed to create typed patch object ({object}; {group_version}, Kind={}): .{path}: {message}",
        ty.api.kind
    );
    assert_eq!((status.code, status.message.as_str()), (500, expected.as_str()), "{body}");
    true
}

/// Create answers 400 naming the reference's path of what decoding sees (the object as the
/// server holds it, with typed metadata), as encoding/json places it. `false` where the body
/// never reaches decoding: its metadata does not parse, or its kind or apiVersion is another.
fn check_create(w: &mut World, kind: &Kind, ty: &ResourceType, body: &Value) -> bool {
    let Ok(object) = serde_json::from_value::<DynamicObject>(body.clone()) else { return false };
    if body["apiVersion"] != kind.body["apiVersion"] || body["kind"] != kind.body["kind"] {
        return false;
    }
    let decoded = serde_json::to_value(&object).expect("an object serializes");
    let Some((path, message)) = (kind.reference)(&decoded) else { return false };
    let namespace = ty.namespaced.then_some("default");
    let request = Request::create(&ty.api, namespace, object, PostParams::default());
    let status: Status = w.handle(request).expect_err("create refuses a body its type refuses");
    let at = if message.starts_with("invalid type") {
        format!("Go struct field .{path} of type ")
    } else {
        format!("json: {message} at .{path}")
    };
    assert!(status.code == 400 && status.message.contains(&at), "{decoded}: {}, not {at}", status.message);
    true
}

/// A CRD file names the reference's path and words, over the document as its YAML parses.
fn check_crd_load(body: &Value) -> bool {
    let text = body.to_string();
    let document: Value = serde_yaml_ng::from_str(&text).expect("JSON is YAML");
    if document["apiVersion"] != "apiextensions.k8s.io/v1" || document["kind"] != "CustomResourceDefinition" {
        return false;
    }
    let Err(expected) = serde_path_to_error::deserialize::<_, CustomResourceDefinition>(document) else {
        return false;
    };
    match load_crds_from_yaml("<string>", &text) {
        Err(CrdLoadError::Malformed { field, message, .. }) => {
            assert_eq!(
                (field, message),
                (expected.path().to_string(), expected.inner().to_string()),
                "{text}"
            )
        }
        other => panic!("{text}: {other:?}, not the malformed field {expected}"),
    }
    true
}

fn check_body(w: &mut World, kind: &Kind, ty: &ResourceType, body: &Value, counts: &mut Counts) {
    let Some(expected) = (kind.reference)(body) else {
        counts.fit += 1;
        return;
    };
    counts.applied += usize::from(check_apply(w, ty, body, &expected));
    counts.created += usize::from(check_create(w, kind, ty, body));
    if ty.api.kind == "CustomResourceDefinition" {
        counts.loaded += usize::from(check_crd_load(body));
    }
}

#[test]
fn a_type_error_has_the_path_and_words_serde_path_to_error_gives_at_every_node_of_several_kinds() {
    let types = ResourceTypes::builtin();
    let mut w = World::new();
    let mut counts = Counts::default();
    for kind in kinds() {
        let ty = types
            .by_kind(kind.body["apiVersion"].as_str().unwrap(), kind.body["kind"].as_str().unwrap())
            .expect("a built-in kind");
        assert_eq!((kind.reference)(&kind.body), None, "the valid {} body fits", ty.api.kind);
        let mut nodes = Vec::new();
        pointers(&kind.body, &mut String::new(), &mut nodes);
        for (i, node) in nodes.iter().enumerate() {
            let other = &nodes[(i * 31 + 7) % nodes.len()];
            for wrong in wrong_values() {
                let mut body = kind.body.clone();
                *body.pointer_mut(node).unwrap() = wrong;
                check_body(&mut w, &kind, ty, &body, &mut counts);
                if !related(node, other) {
                    *body.pointer_mut(other).unwrap() = Value::Null;
                    check_body(&mut w, &kind, ty, &body, &mut counts);
                }
            }
        }
    }
    println!("{counts:?}");
    // Every route saw many refusals, and the wrong values are not all refused either.
    assert!(counts.applied > 5_000 && counts.created > 2_000 && counts.loaded > 500, "{counts:?}");
    assert!(counts.fit > 1_000, "{counts:?}");
}
