//! A built-in body's unknown fields are the fields a round trip through the kind's Go type
//! loses, as the model first named them: deserialize into the k8s-openapi type, serialize back,
//! walk both. The model now finds them while deserializing, once, and falls back to that round
//! trip where the two could differ; this test keeps the round trip as the reference, over
//! valid bodies of every kind the model decodes, changed at random at every depth: added
//! fields (objects, lists, nulls), nulls, wrong types, values wrapped in lists, repeated list
//! items and removed fields.

#[path = "common/mod.rs"]
mod common;

use common::*;
use k8s_openapi::api::{
    apps::v1 as apps, batch::v1 as batch, coordination::v1 as coordination, core::v1 as core,
    events::v1 as events, networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
    scheduling::v1 as scheduling,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use kube_core::{DynamicObject, params::PostParams};
use model_apiserver::{Context, FieldValidation, Request, ResourceTypes};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// Changed bodies tried.
const CASES: usize = 3_000;

/// One valid body of each kind, one a line.
const BODIES: &str = include_str!("unknown_fields_bodies.json");

/// xorshift64: a fixed, reproducible sequence of choices.
struct Choices(u64);

impl Choices {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn node_paths(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                path.push(Step::Key(k.clone()));
                node_paths(c, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                path.push(Step::Index(i));
                node_paths(c, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn node_at<'v>(mut v: &'v mut Value, path: &[Step]) -> &'v mut Value {
    for step in path {
        v = match step {
            Step::Key(k) => &mut v[k.as_str()],
            Step::Index(i) => &mut v[*i],
        };
    }
    v
}

fn some_value(c: &mut Choices) -> Value {
    [
        Value::Null,
        json!("s"),
        json!(7),
        json!(true),
        json!({"a": 1, "zz": {"b": null}}),
        json!([{"name": "x", "q": 1}, 2]),
        json!([]),
        json!({}),
        json!(-1.5),
    ][c.below(9)]
    .clone()
}

/// Field names to add: unknown ones, and known ones in the wrong place.
const KEYS: [&str; 12] = [
    "zz",
    "name",
    "spec",
    "image",
    "status",
    "containers",
    "value",
    "type",
    "ports",
    "port",
    "items",
    "x-kubernetes-preserve-unknown-fields",
];

/// The fields no change touches.
const PROTECTED: [&str; 3] = ["metadata", "apiVersion", "kind"];

/// One random change somewhere under `body`'s content (metadata, apiVersion and kind stay:
/// DynamicObject's typed metadata never carries an unknown field to decoding).
fn change(body: &mut Value, c: &mut Choices) {
    let mut paths = Vec::new();
    node_paths(body, &mut Vec::new(), &mut paths);
    paths.retain(|p| !matches!(p.first(), Some(Step::Key(k)) if PROTECTED.contains(&k.as_str())));
    let path = paths[c.below(paths.len())].clone();
    let top = path.is_empty();
    let node = node_at(body, &path);
    match c.below(7) {
        0 | 1 => {
            if let Some(m) = node.as_object_mut() {
                m.insert(KEYS[c.below(KEYS.len())].to_owned(), some_value(c));
            }
        }
        2 if !top => *node = Value::Null,
        3 if !top => *node = some_value(c),
        4 => {
            if let Some(first) = node.as_array().and_then(|items| items.first().cloned()) {
                node.as_array_mut().unwrap().push(first);
            }
        }
        5 => {
            if let Some(m) = node.as_object_mut() {
                let keys: Vec<String> =
                    m.keys().filter(|k| !(top && PROTECTED.contains(&k.as_str()))).cloned().collect();
                if !keys.is_empty() {
                    m.remove(&keys[c.below(keys.len())]);
                }
            }
        }
        6 if !top => *node = json!([node.take()]),
        _ => {}
    }
}

/// The reference: `body` through `T` and back, or `None` for a body `T` refuses.
fn round_trip<T: DeserializeOwned + Serialize>(body: &Value) -> Option<Value> {
    let typed = T::deserialize(body).ok()?;
    Some(serde_json::to_value(typed).expect("a typed object serializes"))
}

/// The reference for `body` of its kind: `Err(())` for a kind without a Go type here.
fn reference(body: &Value) -> Result<Option<Value>, ()> {
    let kind = (body["apiVersion"].as_str().unwrap_or_default(), body["kind"].as_str().unwrap_or_default());
    Ok(match kind {
        ("v1", "Pod") => round_trip::<core::Pod>(body),
        ("v1", "ConfigMap") => round_trip::<core::ConfigMap>(body),
        ("v1", "Secret") => round_trip::<core::Secret>(body),
        ("v1", "Service") => round_trip::<core::Service>(body),
        ("v1", "ServiceAccount") => round_trip::<core::ServiceAccount>(body),
        ("v1", "PersistentVolumeClaim") => round_trip::<core::PersistentVolumeClaim>(body),
        ("v1", "Namespace") => round_trip::<core::Namespace>(body),
        ("v1", "Node") => round_trip::<core::Node>(body),
        ("v1", "PersistentVolume") => round_trip::<core::PersistentVolume>(body),
        ("v1", "Endpoints") => round_trip::<core::Endpoints>(body),
        ("v1", "ResourceQuota") => round_trip::<core::ResourceQuota>(body),
        ("v1", "LimitRange") => round_trip::<core::LimitRange>(body),
        ("v1", "Event") => round_trip::<core::Event>(body),
        ("apps/v1", "Deployment") => round_trip::<apps::Deployment>(body),
        ("apps/v1", "ReplicaSet") => round_trip::<apps::ReplicaSet>(body),
        ("apps/v1", "StatefulSet") => round_trip::<apps::StatefulSet>(body),
        ("apps/v1", "DaemonSet") => round_trip::<apps::DaemonSet>(body),
        ("batch/v1", "Job") => round_trip::<batch::Job>(body),
        ("batch/v1", "CronJob") => round_trip::<batch::CronJob>(body),
        ("networking.k8s.io/v1", "Ingress") => round_trip::<networking::Ingress>(body),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<policy::PodDisruptionBudget>(body),
        ("coordination.k8s.io/v1", "Lease") => round_trip::<coordination::Lease>(body),
        ("events.k8s.io/v1", "Event") => round_trip::<events::Event>(body),
        ("scheduling.k8s.io/v1", "PriorityClass") => round_trip::<scheduling::PriorityClass>(body),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<rbac::Role>(body),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<rbac::RoleBinding>(body),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<rbac::ClusterRole>(body),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<rbac::ClusterRoleBinding>(body)
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            round_trip::<apiextensions::CustomResourceDefinition>(body)
        }
        _ => return Err(()),
    })
}

/// The fields of `input` that `known` lacks, as kube-apiserver's strict decoder names them
/// (`spec.containers[0].foo`), and those set to null (no field: they are dropped unnamed), as
/// JSON pointers.
struct Lost {
    fields: Vec<String>,
    nulls: Vec<String>,
}

fn lost_fields(input: &Value, known: &Value, path: &str, pointer: &str, out: &mut Lost) {
    match (input, known) {
        (Value::Object(fields), Value::Object(known_fields)) => {
            for (key, value) in fields {
                let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                let pointer = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match known_fields.get(key) {
                    Some(k) => lost_fields(value, k, &at, &pointer, out),
                    None if value.is_null() => out.nulls.push(pointer),
                    None => out.fields.push(at),
                }
            }
        }
        (Value::Array(items), Value::Array(known_items)) => {
            for (i, (item, k)) in items.iter().zip(known_items).enumerate() {
                lost_fields(item, k, &format!("{path}[{i}]"), &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn unknown_fields_are_the_fields_a_round_trip_through_the_go_type_loses() {
    let bodies: Vec<Value> = serde_json::from_str(BODIES).expect("the bodies parse");
    let types = ResourceTypes::builtin();
    let mut w = World::new();
    let mut c = Choices(0x9E37_79B9_7F4A_7C15);
    let (mut named, mut refused) = (0, 0);
    for case in 0..CASES {
        let mut body = bodies[c.below(bodies.len())].clone();
        for _ in 0..=c.below(4) {
            change(&mut body, &mut c);
        }
        body["metadata"] = json!({"name": format!("case-{case}")});
        let ty = types
            .by_kind(body["apiVersion"].as_str().unwrap(), body["kind"].as_str().unwrap())
            .expect("a built-in kind");
        let object: DynamicObject = serde_json::from_value(body).expect("metadata and kind are kept");
        // What decoding sees: the object as the server holds it.
        let decoded = serde_json::to_value(&object).unwrap();
        let known = reference(&decoded).expect("every kind of the bodies has a Go type");
        let namespace = ty.namespaced.then_some("default");
        let strict = c.below(2) == 0;
        let directive = if strict { FieldValidation::Strict } else { FieldValidation::Warn };
        let request = Request::create(&ty.api, namespace, object, PostParams::default())
            .with_field_validation(directive);
        let mut ctx = Context::new(w.now, &mut w.ids);
        let answer = w.server.handle(request, &mut ctx);
        let warnings = ctx.take_warnings();
        let Some(known) = known else {
            let status = answer.expect_err("a body its type refuses is refused");
            assert_eq!((status.code, warnings.len()), (400, 0), "{decoded}: {}", status.message);
            refused += 1;
            continue;
        };
        let mut lost = Lost { fields: Vec::new(), nulls: Vec::new() };
        lost_fields(&decoded, &known, "", "", &mut lost);
        let expected: Vec<String> =
            lost.fields.iter().map(|p| format!("unknown field {}", Value::String(p.clone()))).collect();
        if strict && !expected.is_empty() {
            let status = answer.as_ref().expect_err("Strict refuses unknown fields");
            let why = format!("strict decoding error: {}", expected.join(", "));
            assert!(status.code == 400 && status.message.ends_with(&why), "{decoded}: {}", status.message);
        } else if !strict {
            assert_eq!(warnings, expected, "{decoded}");
        }
        // A null the type has no field for is not stored (defaulting may set the field again);
        // one the Go type encodes a zero field as (a zero `metav1.Time` is `null`) is stored as
        // the same body without it is.
        if let Ok(stored) = answer {
            let stored = serde_json::to_value(&*common::object(stored)).unwrap();
            for (i, pointer) in lost.nulls.iter().enumerate() {
                if stored.pointer(pointer) != Some(&Value::Null) {
                    continue;
                }
                let mut without = decoded.clone();
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                without.pointer_mut(parent).and_then(Value::as_object_mut).unwrap().remove(key);
                without["metadata"] = json!({"name": format!("case-{case}-{i}")});
                let object: DynamicObject = serde_json::from_value(without).unwrap();
                let request = Request::create(&ty.api, namespace, object, PostParams::default());
                let mut ctx = Context::new(w.now, &mut w.ids);
                let alone = w.server.handle(request, &mut ctx).expect("the body without the null is taken");
                let alone = serde_json::to_value(&*common::object(alone)).unwrap();
                assert_eq!(alone.pointer(pointer), Some(&Value::Null), "{pointer} of {decoded}: {stored}");
            }
        }
        let lost = lost.fields;
        named += usize::from(!lost.is_empty());
    }
    // The changes reach both outcomes often enough to mean something.
    assert!(named > CASES / 20 && refused > CASES / 20, "{named} with unknown fields, {refused} refused");
}
