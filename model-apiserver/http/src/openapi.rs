//! OpenAPI v3 documents: enough for `kubectl apply` and `kubectl explain`.
//!
//! kubectl's `--validate=strict` (the default) first asks `/openapi/v3` whether the server
//! validates fields itself: it looks for a PATCH operation of the object's kind (by
//! `x-kubernetes-group-version-kind`) with a `fieldValidation` parameter. Each served type gets
//! such operations here, so kubectl leaves validation to the server. Client-side `kubectl apply`
//! computes its strategic merge patch from the types compiled into kubectl when the document has
//! no schema for the kind. `/openapi/v2` is converted from the v3 documents, in JSON and in
//! protobuf, for kubectl before 1.27 and other v2 readers (see [`v2`]).
//!
//! Schemas: the built-in kinds' come from k8s-openapi's generated JSON schemas (the real
//! descriptions, names like `io.k8s.api.apps.v1.Deployment`), with the patch tags of
//! [`model_apiserver::strategic::FIELDS`] added as `x-kubernetes-patch-strategy` and
//! `x-kubernetes-patch-merge-key`, which kubectl's client-side apply reads. Custom resources get
//! their CRD's `openAPIV3Schema`.

use std::sync::OnceLock;

use hyper::header::HeaderMap;
use k8s_openapi::{
    api::{apps, batch, coordination, core, events},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use model_apiserver::{
    ResourceType, ResourceTypes,
    strategic::{FIELDS, Strategy},
};
use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value, json};

use super::{
    discovery::SERVED_VERSION,
    http::{self, Reply},
    wire::Writer,
};

/// `/openapi/v2`: the Swagger 2.0 document of every served type, made from the same documents
/// as `/openapi/v3` ([`v2_document`]), in JSON, or in protobuf (gnostic's `openapi.v2.Document`,
/// see [`v2_protobuf`]) when the `Accept` header names protobuf, as kubectl before 1.27 and
/// `kubectl explain --output plaintext-openapiv2` ask for it.
pub fn v2(types: &ResourceTypes, headers: &HeaderMap) -> Reply {
    let doc = v2_document(types);
    if super::handler::accept(headers).contains("protobuf") {
        return http::with_type(200, http::full(v2_protobuf(&doc)), OPENAPI_V2_PROTOBUF);
    }
    http::json(200, &doc)
}

/// The media type kube-apiserver answers a protobuf OpenAPI v2 document with (the `@` of the
/// requested type is not valid in a Content-Type; Go clients reject it).
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The Swagger 2.0 document: the paths and definitions of every group version's v3 document,
/// converted ([`v2_schema`], [`v2_path_item`]), so that both versions always describe the same
/// types, CRDs' included.
pub fn v2_document(types: &ResourceTypes) -> Value {
    let mut group_versions: Vec<(String, String)> =
        types.iter().map(|t| (t.api.group.clone(), t.api.version.clone())).collect();
    group_versions.sort();
    group_versions.dedup();
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for (group, version) in group_versions {
        let Some(doc) = v3_group_version(types, &group, &version) else { continue };
        if let Some(Value::Object(items)) = doc.get("paths") {
            for (path, item) in items {
                paths.insert(path.clone(), v2_path_item(item));
            }
        }
        if let Some(Value::Object(schemas)) = doc.pointer("/components/schemas") {
            for (name, schema) in schemas {
                let converted = v2_schema(schema);
                match definitions.get_mut(name) {
                    // A definition shared by several group versions: each adds its kinds.
                    Some(existing) => merge_gvk(existing, &converted),
                    None => {
                        definitions.insert(name.clone(), converted);
                    }
                }
            }
        }
    }
    let (major, minor) = SERVED_VERSION;
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v{major}.{minor}.0")},
        "paths": paths,
        "definitions": definitions,
    })
}

/// The `x-kubernetes-group-version-kind` entries of `other` added to those of `existing`.
fn merge_gvk(existing: &mut Value, other: &Value) {
    const KEY: &str = "x-kubernetes-group-version-kind";
    let Some(Value::Array(more)) = other.get(KEY) else { return };
    match existing.get_mut(KEY) {
        Some(Value::Array(kinds)) => {
            for kind in more {
                if !kinds.contains(kind) {
                    kinds.push(kind.clone());
                }
            }
        }
        _ => existing[KEY] = Value::Array(more.clone()),
    }
}

/// A v3 schema as Swagger 2.0 has it, recursively: references point into `#/definitions/`, a
/// lone `allOf` reference becomes the reference itself (its description kept beside it, as
/// kube-apiserver's v2 has it), and what v2 cannot say is dropped as kube-apiserver's
/// `ToStructuralOpenAPIV2` drops it: `anyOf`, `oneOf`, `not` and other `allOf`s; the type of an
/// int-or-string; the type, items and properties of a `nullable` schema.
pub fn v2_schema(schema: &Value) -> Value {
    let Value::Object(map) = schema else { return schema.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "$ref" => {
                let target =
                    value.as_str().unwrap_or_default().replace("#/components/schemas/", "#/definitions/");
                out.insert(key.clone(), Value::String(target));
            }
            "allOf" => {
                if let Some([Value::Object(only)]) = value.as_array().map(Vec::as_slice)
                    && only.len() == 1
                    && let Some(Value::String(target)) = only.get("$ref")
                {
                    out.insert(
                        "$ref".to_owned(),
                        json!(target.replace("#/components/schemas/", "#/definitions/")),
                    );
                }
            }
            "anyOf" | "oneOf" | "not" | "nullable" => {}
            "properties" | "patternProperties" => {
                let converted: Map<String, Value> = value
                    .as_object()
                    .map(|props| props.iter().map(|(k, v)| (k.clone(), v2_schema(v))).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(converted));
            }
            "items" | "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), v2_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
    if nullable {
        for key in ["type", "items", "properties"] {
            out.remove(key);
        }
    }
    if map.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        out.remove("type");
    }
    if out.contains_key("$ref") {
        // A reference has no type of its own in v2.
        out.remove("type");
    }
    Value::Object(out)
}

/// A v3 path item's operations as v2 has them: the query parameters typed in place, the request
/// body's media types as `consumes` with a `body` parameter, the responses by code, and the
/// `x-kubernetes-*` extensions (which kubectl before 1.27 reads to learn whether the server
/// validates fields).
pub fn v2_path_item(item: &Value) -> Value {
    let Value::Object(methods) = item else { return json!({}) };
    let mut out = Map::new();
    for (method, op) in methods {
        let Value::Object(op) = op else { continue };
        let mut converted = Map::new();
        let mut parameters: Vec<Value> = op
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let mut param = json!({"name": p["name"], "in": p["in"]});
                if let Some(Value::Object(schema)) = p.get("schema") {
                    for (k, v) in schema {
                        param[k] = v.clone();
                    }
                }
                param
            })
            .collect();
        if let Some(Value::Object(content)) = op.get("requestBody").and_then(|b| b.get("content")) {
            converted.insert("consumes".to_owned(), json!(content.keys().collect::<Vec<_>>()));
            parameters.insert(
                0,
                json!({"name": "body", "in": "body", "required": true, "schema": {"type": "object"}}),
            );
        }
        converted.insert("parameters".to_owned(), Value::Array(parameters));
        converted.insert("produces".to_owned(), json!(["application/json", "application/yaml"]));
        for (key, value) in op {
            if key == "operationId" || key == "responses" || key.starts_with("x-") {
                converted.insert(key.clone(), value.clone());
            }
        }
        out.insert(method.clone(), Value::Object(converted));
    }
    Value::Object(out)
}

/// The v2 document in protobuf: gnostic's `openapi.v2.Document` (`swagger` 1, `info` 2, `paths`
/// 8, `definitions` 9), which kube-openapi's `proto.NewOpenAPIData` parses for kubectl. Values
/// of `default`, `enum`, `example` and vendor extensions are gnostic `Any`s holding YAML; JSON is
/// YAML, so they hold their JSON text.
pub fn v2_protobuf(doc: &Value) -> Vec<u8> {
    let mut out = Writer::new();
    out.string(1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Writer::new();
    info.string(1, doc["info"]["title"].as_str().unwrap_or_default());
    info.string(2, doc["info"]["version"].as_str().unwrap_or_default());
    out.message(2, info);
    let mut paths = Writer::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut named = Writer::new();
        named.string(1, path).message(2, pb_path_item(item));
        paths.message(2, named);
    }
    out.message(8, paths);
    let mut definitions = Writer::new();
    for (name, schema) in doc["definitions"].as_object().into_iter().flatten() {
        definitions.message(1, pb_named_schema(name, schema, 0));
    }
    out.message(9, definitions);
    out.finish()
}

/// How deep schemas nest in the protobuf encoding; deeper parts (only a hostile CRD has them:
/// the model bounds CRD nesting too) are left out.
const SCHEMA_DEPTH_MAX: usize = 64;

fn pb_any(value: &Value) -> Writer {
    let mut any = Writer::new();
    any.string(2, &value.to_string());
    any
}

fn pb_named_any(name: &str, value: &Value) -> Writer {
    let mut named = Writer::new();
    named.string(1, name).message(2, pb_any(value));
    named
}

fn pb_named_schema(name: &str, schema: &Value, depth: usize) -> Writer {
    let mut named = Writer::new();
    named.string(1, name).message(2, pb_schema(schema, depth));
    named
}

/// gnostic's `Schema` message.
fn pb_schema(schema: &Value, depth: usize) -> Writer {
    let mut out = Writer::new();
    let Value::Object(map) = schema else { return out };
    if depth >= SCHEMA_DEPTH_MAX {
        return out;
    }
    let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
    let number = |key: &str| map.get(key).and_then(Value::as_f64).unwrap_or_default();
    let int = |key: &str| map.get(key).and_then(Value::as_i64).unwrap_or_default();
    let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or_default();
    out.string(1, text("$ref")).string(2, text("format")).string(3, text("title"));
    out.string(4, text("description"));
    if let Some(default) = map.get("default") {
        out.message(5, pb_any(default));
    }
    out.double(6, number("multipleOf")).double(7, number("maximum")).bool(8, flag("exclusiveMaximum"));
    out.double(9, number("minimum")).bool(10, flag("exclusiveMinimum"));
    out.int64(11, int("maxLength")).int64(12, int("minLength")).string(13, text("pattern"));
    out.int64(14, int("maxItems")).int64(15, int("minItems")).bool(16, flag("uniqueItems"));
    out.int64(17, int("maxProperties")).int64(18, int("minProperties"));
    for required in map.get("required").and_then(Value::as_array).into_iter().flatten() {
        out.string(19, required.as_str().unwrap_or_default());
    }
    for value in map.get("enum").and_then(Value::as_array).into_iter().flatten() {
        out.message(20, pb_any(value));
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            out.bytes(21, &bool_oneof(*allowed));
        }
        Some(sub @ Value::Object(_)) => {
            let mut item = Writer::new();
            item.message(1, pb_schema(sub, depth + 1));
            out.message(21, item);
        }
        _ => {}
    }
    if let Some(ty) = map.get("type") {
        let mut item = Writer::new();
        match ty {
            Value::Array(types) => types.iter().for_each(|t| {
                item.string(1, t.as_str().unwrap_or_default());
            }),
            other => {
                item.string(1, other.as_str().unwrap_or_default());
            }
        }
        out.message(22, item);
    }
    if let Some(items) = map.get("items") {
        let mut item = Writer::new();
        match items {
            Value::Array(many) => many.iter().for_each(|s| {
                item.message(1, pb_schema(s, depth + 1));
            }),
            one => {
                item.message(1, pb_schema(one, depth + 1));
            }
        }
        out.message(23, item);
    }
    for sub in map.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        out.message(24, pb_schema(sub, depth + 1));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let mut props = Writer::new();
        for (name, sub) in properties {
            props.message(1, pb_named_schema(name, sub, depth + 1));
        }
        out.message(25, props);
    }
    out.string(26, text("discriminator")).bool(27, flag("readOnly"));
    if let Some(example) = map.get("example") {
        out.message(30, pb_any(example));
    }
    for (key, value) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
        out.message(31, pb_named_any(key, value));
    }
    out
}

/// `AdditionalPropertiesItem { bool boolean = 2 }` with the value written even when false (a set
/// oneof member is written whatever its value).
fn bool_oneof(value: bool) -> Vec<u8> {
    vec![2 << 3, u8::from(value)]
}

/// gnostic's `PathItem` (`get` 2, `put` 3, `post` 4, `delete` 5, `patch` 8).
fn pb_path_item(item: &Value) -> Writer {
    let mut out = Writer::new();
    for (method, field) in [("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("patch", 8)] {
        if let Some(op) = item.get(method) {
            out.message(field, pb_operation(op));
        }
    }
    out
}

/// gnostic's `Operation`: `operation_id` 5, `produces` 6, `consumes` 7, `parameters` 8,
/// `responses` 9, `vendor_extension` 13.
fn pb_operation(op: &Value) -> Writer {
    let mut out = Writer::new();
    out.string(5, op["operationId"].as_str().unwrap_or_default());
    for (field, key) in [(6, "produces"), (7, "consumes")] {
        for media in op[key].as_array().into_iter().flatten() {
            out.string(field, media.as_str().unwrap_or_default());
        }
    }
    for param in op["parameters"].as_array().into_iter().flatten() {
        let text = |key: &str| param[key].as_str().unwrap_or_default().to_owned();
        let mut parameter = Writer::new();
        if param["in"] == "body" {
            // BodyParameter { name 2, in 3, required 4, schema 5 }.
            let mut body = Writer::new();
            body.string(2, &text("name")).string(3, "body").bool(4, true);
            body.message(5, pb_schema(&param["schema"], 0));
            parameter.message(1, body);
        } else {
            // NonBodyParameter { query_parameter_sub_schema 3: { in 2, name 4, type 6, unique_items 20 } }.
            let mut query = Writer::new();
            query.string(2, &text("in")).string(4, &text("name")).string(6, &text("type"));
            query.bool(20, param["uniqueItems"].as_bool().unwrap_or_default());
            let mut non_body = Writer::new();
            non_body.message(3, query);
            parameter.message(2, non_body);
        }
        let mut item = Writer::new();
        item.message(1, parameter);
        out.message(8, item);
    }
    let mut responses = Writer::new();
    for (code, response) in op["responses"].as_object().into_iter().flatten() {
        let mut described = Writer::new();
        described.string(1, response["description"].as_str().unwrap_or_default());
        let mut value = Writer::new();
        value.message(1, described);
        let mut named = Writer::new();
        named.string(1, code).message(2, value);
        responses.message(1, named);
    }
    out.message(9, responses);
    for (key, value) in op.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("x-")) {
        out.message(13, pb_named_any(key, value));
    }
    out
}

/// `api/v1` or `apis/{group}/{version}`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// `/openapi/v3`: the index of group versions, each with a URL whose `hash` changes when its
/// types do (clients cache documents by it).
pub fn v3_index(types: &ResourceTypes) -> Value {
    let mut paths = Map::new();
    for ty in types.iter() {
        let path = gv_path(&ty.api.group, &ty.api.version);
        if !paths.contains_key(&path) {
            let hash = hash_of(&v3_group_version(types, &ty.api.group, &ty.api.version).unwrap_or_default());
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// FNV-1a of the document, in hex: a stable content hash without a dependency.
fn hash_of(doc: &Value) -> String {
    let text = doc.to_string();
    let hash = text
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016X}")
}

/// `/openapi/v3/apis/{group}/{version}`: the paths of every type in the group version.
pub fn v3_group_version(types: &ResourceTypes, group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> =
        types.iter().filter(|t| t.api.group == group && t.api.version == version).map(|t| &**t).collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for ty in served {
        add_schemas(ty, &mut schemas);
        let prefix = format!("/{}", gv_path(group, version));
        let collection = if ty.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", ty.api.plural)
        } else {
            format!("{prefix}/{}", ty.api.plural)
        };
        let gvk = json!({"group": group, "version": version, "kind": ty.api.kind});
        paths.insert(
            collection.clone(),
            json!({
                "get": operation("list", ty, &gvk, &[]),
                "post": operation("create", ty, &gvk, &["dryRun", "fieldManager", "fieldValidation"]),
            }),
        );
        paths.insert(format!("{collection}/{{name}}"), json!({
            "get": operation("read", ty, &gvk, &[]),
            "put": operation("replace", ty, &gvk, &["dryRun", "fieldManager", "fieldValidation"]),
            "patch": operation("patch", ty, &gvk, &["dryRun", "fieldManager", "fieldValidation", "force"]),
            "delete": operation("delete", ty, &gvk, &["dryRun", "gracePeriodSeconds", "propagationPolicy"]),
        }));
    }
    let (major, minor) = SERVED_VERSION;
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{major}.{minor}.0")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// One operation, tagged with the kind it acts on.
fn operation(action: &str, ty: &ResourceType, gvk: &Value, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|name| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    let mut op = json!({
        "operationId": format!("{action}{}", ty.api.kind),
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    });
    if action == "patch" {
        // kubectl's client-side apply sends a strategic merge patch only when the operation
        // lists its media type.
        let mut content = Map::new();
        let types: &[&str] = if ty.custom { &PATCH_TYPES[..3] } else { PATCH_TYPES };
        for media in types {
            content.insert((*media).to_owned(), json!({"schema": {"type": "object"}}));
        }
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

/// The patch media types; strategic merge patch (the last) is for built-in kinds only.
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The kind's schema (and everything it refers to) into `schemas`, tagged with its
/// group/version/kind.
fn add_schemas(ty: &ResourceType, schemas: &mut Map<String, Value>) {
    let gvk = json!([{"group": ty.api.group, "version": ty.api.version, "kind": ty.api.kind}]);
    if ty.custom {
        let Some(schema) = ty.schema.as_deref() else { return };
        let Ok(mut schema) = serde_json::to_value(schema) else { return };
        schema["x-kubernetes-group-version-kind"] = gvk;
        let reversed: Vec<&str> = ty.api.group.split('.').rev().collect();
        schemas.insert(format!("{}.{}.{}", reversed.join("."), ty.api.version, ty.api.kind), schema);
        return;
    }
    let builtin = builtin_schemas();
    let Some(name) = builtin_schema_name(&ty.api.group, &ty.api.kind) else { return };
    let Some(root) = builtin.get(name) else { return };
    let mut root = root.clone();
    root["x-kubernetes-group-version-kind"] = gvk;
    let mut pending = vec![root.clone()];
    schemas.insert(name.to_owned(), root);
    // Copy what the root refers to, transitively; bounded by the number of definitions.
    let mut budget = builtin.len();
    while let Some(schema) = pending.pop() {
        for referenced in refs(&schema) {
            if budget == 0 || schemas.contains_key(&referenced) {
                continue;
            }
            budget -= 1;
            if let Some(def) = builtin.get(&referenced) {
                pending.push(def.clone());
                schemas.insert(referenced, def.clone());
            }
        }
    }
}

/// The definitions a schema refers to (`$ref: "#/components/schemas/NAME"`).
fn refs(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && let Some(name) = r.strip_prefix("#/components/schemas/")
                {
                    found.push(name.to_owned());
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    found
}

/// The OpenAPI definition name of a built-in kind.
fn builtin_schema_name(group: &str, kind: &str) -> Option<&'static str> {
    Some(match (group, kind) {
        ("", "Namespace") => "io.k8s.api.core.v1.Namespace",
        ("", "Pod") => "io.k8s.api.core.v1.Pod",
        ("", "ConfigMap") => "io.k8s.api.core.v1.ConfigMap",
        ("", "Secret") => "io.k8s.api.core.v1.Secret",
        ("", "Service") => "io.k8s.api.core.v1.Service",
        ("", "ServiceAccount") => "io.k8s.api.core.v1.ServiceAccount",
        ("", "PersistentVolumeClaim") => "io.k8s.api.core.v1.PersistentVolumeClaim",
        ("apps", "Deployment") => "io.k8s.api.apps.v1.Deployment",
        ("apps", "ReplicaSet") => "io.k8s.api.apps.v1.ReplicaSet",
        ("apps", "StatefulSet") => "io.k8s.api.apps.v1.StatefulSet",
        ("batch", "Job") => "io.k8s.api.batch.v1.Job",
        ("batch", "CronJob") => "io.k8s.api.batch.v1.CronJob",
        ("", "Node") => "io.k8s.api.core.v1.Node",
        ("", "PersistentVolume") => "io.k8s.api.core.v1.PersistentVolume",
        ("", "Endpoints") => "io.k8s.api.core.v1.Endpoints",
        ("", "ResourceQuota") => "io.k8s.api.core.v1.ResourceQuota",
        ("", "LimitRange") => "io.k8s.api.core.v1.LimitRange",
        ("apps", "DaemonSet") => "io.k8s.api.apps.v1.DaemonSet",
        ("apps", "ControllerRevision") => "io.k8s.api.apps.v1.ControllerRevision",
        ("policy", "PodDisruptionBudget") => "io.k8s.api.policy.v1.PodDisruptionBudget",
        ("networking.k8s.io", "Ingress") => "io.k8s.api.networking.v1.Ingress",
        ("networking.k8s.io", "NetworkPolicy") => "io.k8s.api.networking.v1.NetworkPolicy",
        ("networking.k8s.io", "IngressClass") => "io.k8s.api.networking.v1.IngressClass",
        ("autoscaling", "HorizontalPodAutoscaler") => "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        ("storage.k8s.io", "StorageClass") => "io.k8s.api.storage.v1.StorageClass",
        ("discovery.k8s.io", "EndpointSlice") => "io.k8s.api.discovery.v1.EndpointSlice",
        ("", "PodTemplate") => "io.k8s.api.core.v1.PodTemplate",
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration"
        }
        ("scheduling.k8s.io", "PriorityClass") => "io.k8s.api.scheduling.v1.PriorityClass",
        ("rbac.authorization.k8s.io", "Role") => "io.k8s.api.rbac.v1.Role",
        ("rbac.authorization.k8s.io", "RoleBinding") => "io.k8s.api.rbac.v1.RoleBinding",
        ("rbac.authorization.k8s.io", "ClusterRole") => "io.k8s.api.rbac.v1.ClusterRole",
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => "io.k8s.api.rbac.v1.ClusterRoleBinding",
        ("coordination.k8s.io", "Lease") => "io.k8s.api.coordination.v1.Lease",
        ("", "Event") => "io.k8s.api.core.v1.Event",
        ("events.k8s.io", "Event") => "io.k8s.api.events.v1.Event",
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        }
        _ => return None,
    })
}

/// Every definition reachable from the built-in kinds, generated once (the schemas are
/// constants of the k8s-openapi version, not state).
fn builtin_schemas() -> &'static Map<String, Value> {
    static SCHEMAS: OnceLock<Map<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut generator = SchemaSettings::openapi3().into_generator();
        fn add<T: JsonSchema>(g: &mut schemars::SchemaGenerator) {
            let _ = g.subschema_for::<T>();
        }
        add::<core::v1::Namespace>(&mut generator);
        add::<core::v1::Pod>(&mut generator);
        add::<core::v1::ConfigMap>(&mut generator);
        add::<core::v1::Secret>(&mut generator);
        add::<core::v1::Service>(&mut generator);
        add::<core::v1::ServiceAccount>(&mut generator);
        add::<core::v1::PersistentVolumeClaim>(&mut generator);
        add::<apps::v1::Deployment>(&mut generator);
        add::<apps::v1::ReplicaSet>(&mut generator);
        add::<apps::v1::StatefulSet>(&mut generator);
        add::<batch::v1::Job>(&mut generator);
        add::<batch::v1::CronJob>(&mut generator);
        add::<core::v1::Node>(&mut generator);
        add::<core::v1::PersistentVolume>(&mut generator);
        add::<core::v1::Endpoints>(&mut generator);
        add::<core::v1::ResourceQuota>(&mut generator);
        add::<core::v1::LimitRange>(&mut generator);
        add::<apps::v1::DaemonSet>(&mut generator);
        add::<apps::v1::ControllerRevision>(&mut generator);
        add::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&mut generator);
        add::<k8s_openapi::api::networking::v1::Ingress>(&mut generator);
        add::<k8s_openapi::api::networking::v1::NetworkPolicy>(&mut generator);
        add::<k8s_openapi::api::networking::v1::IngressClass>(&mut generator);
        add::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(&mut generator);
        add::<k8s_openapi::api::storage::v1::StorageClass>(&mut generator);
        add::<k8s_openapi::api::discovery::v1::EndpointSlice>(&mut generator);
        add::<core::v1::PodTemplate>(&mut generator);
        add::<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>(&mut generator);
        add::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(&mut generator);
        add::<k8s_openapi::api::scheduling::v1::PriorityClass>(&mut generator);
        add::<k8s_openapi::api::rbac::v1::Role>(&mut generator);
        add::<k8s_openapi::api::rbac::v1::RoleBinding>(&mut generator);
        add::<k8s_openapi::api::rbac::v1::ClusterRole>(&mut generator);
        add::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(&mut generator);
        add::<coordination::v1::Lease>(&mut generator);
        add::<core::v1::Event>(&mut generator);
        add::<events::v1::Event>(&mut generator);
        add::<CustomResourceDefinition>(&mut generator);
        let mut definitions = generator.take_definitions(true);
        for (name, schema) in definitions.iter_mut() {
            tag_patch_strategies(name, schema);
        }
        definitions
    })
}

/// Add `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` to the properties the
/// strategic merge table tags. The table names Go types by their short names (and groups the
/// workload statuses as `WorkloadStatus`).
fn tag_patch_strategies(definition: &str, schema: &mut Value) {
    let short = definition.rsplit('.').next().unwrap_or("");
    let aliases: &[&str] = match short {
        "DeploymentStatus" | "ReplicaSetStatus" | "StatefulSetStatus" | "JobStatus" => &["WorkloadStatus"],
        "EphemeralContainer" => &["Container"],
        other => std::slice::from_ref(match FIELDS.iter().find(|f| f.parent == other) {
            Some(f) => &f.parent,
            None => return,
        }),
    };
    let Some(Value::Object(properties)) = schema.get_mut("properties") else { return };
    for meta in FIELDS.iter().filter(|f| aliases.contains(&f.parent)) {
        let Some(Value::Object(property)) = properties.get_mut(meta.field) else { continue };
        let (strategy, key) = match meta.strategy {
            Strategy::Default => continue,
            Strategy::Merge(key) => ("merge", key),
            Strategy::RetainKeys => ("retainKeys", ""),
            Strategy::MergeRetainKeys(key) => ("merge,retainKeys", key),
        };
        property.insert("x-kubernetes-patch-strategy".to_owned(), json!(strategy));
        if !key.is_empty() {
            property.insert("x-kubernetes-patch-merge-key".to_owned(), json!(key));
        }
    }
}
