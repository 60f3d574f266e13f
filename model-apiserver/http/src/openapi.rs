//! OpenAPI v3 documents: enough for `kubectl apply` and `kubectl explain`.
//!
//! kubectl's `--validate=strict` (the default) first asks `/openapi/v3` whether the server
//! validates fields itself: it looks for a PATCH operation of the object's kind (by
//! `x-kubernetes-group-version-kind`) with a `fieldValidation` parameter. Each served type gets
//! such operations here, so kubectl leaves validation to the server. Client-side `kubectl apply`
//! computes its strategic merge patch from the types compiled into kubectl when the document has
//! no schema for the kind. `/openapi/v2` is a valid document without definitions, for older
//! kubectl (see [`v2`]).
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
};

/// `/openapi/v2`: a valid document without definitions. kubectl before 1.27 (Debian bookworm's
/// kubernetes-client is 1.20) fetches it, in protobuf only, before `create -f` and `apply`:
/// finding no schema for a kind, it skips client-side validation and computes strategic merge
/// patches from its compiled-in types.
pub fn v2(headers: &HeaderMap) -> Reply {
    let (major, minor) = SERVED_VERSION;
    let version = format!("v{major}.{minor}.0");
    if super::handler::accept(headers).contains("protobuf") {
        return http::with_type(200, http::full(v2_protobuf(&version)), OPENAPI_V2_PROTOBUF);
    }
    http::json(
        200,
        &json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version}, "paths": {}, "definitions": {}}),
    )
}

/// The media type kube-apiserver answers a protobuf OpenAPI v2 document with (the `@` of the
/// requested type is not valid in a Content-Type; Go clients reject it).
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `Document { swagger: "2.0" (field 1), info: Info { title (1), version (2) } (field 2) }` in
/// protobuf wire format: each field is a length-delimited string or message.
fn v2_protobuf(version: &str) -> Vec<u8> {
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        // Wire type 2 (length-delimited); every length here is below 128, so one varint byte.
        let mut out = vec![(number << 3) | 2, u8::try_from(bytes.len()).unwrap_or(0)];
        out.extend_from_slice(bytes);
        out
    }
    let info = [field(1, b"Kubernetes"), field(2, version.as_bytes())].concat();
    [field(1, b"2.0"), field(2, &info)].concat()
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
