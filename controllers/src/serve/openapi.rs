//! OpenAPI v3 documents: enough for `kubectl apply` and `kubectl explain`.
//!
//! kubectl's `--validate=strict` (the default) first asks `/openapi/v3` whether the server
//! validates fields itself: it looks for a PATCH operation of the object's kind (by
//! `x-kubernetes-group-version-kind`) with a `fieldValidation` parameter. Each served type gets
//! such operations here, so kubectl leaves validation to the server. Client-side `kubectl apply`
//! computes its strategic merge patch from the types compiled into kubectl when the document has
//! no schema for the kind. `/openapi/v2` is not served: kubectl 1.27+ uses v3.

use hyper::header::HeaderMap;
use model_apiserver::{ResourceType, ResourceTypes};
use serde_json::{Map, Value, json};

use super::{
    discovery::SERVED_VERSION,
    http::{self, Reply},
};

/// `/openapi/v2`: not served.
pub fn v2(_headers: &HeaderMap) -> Reply {
    http::status(
        &kube_core::Status::failure("the server could not find the requested resource", "NotFound")
            .with_code(404),
    )
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
    for ty in served {
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
        "components": {"schemas": {}},
    }))
}

/// One operation, tagged with the kind it acts on.
fn operation(action: &str, ty: &ResourceType, gvk: &Value, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|name| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    json!({
        "operationId": format!("{action}{}", ty.api.kind),
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    })
}
