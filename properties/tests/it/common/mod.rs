//! Hand-built snapshots for the checkers' tests.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::sync::Arc;

use kube_core::DynamicObject;
use model_apiserver::{ObjectKey, ResourceTypes, Snapshot};
use serde_json::Value;

/// The storage key of an object's kind: the built-in table's, else `group/plural` guessed by
/// lowercasing the kind and adding `s` (enough for test custom resources).
pub fn resource_of(api_version: &str, kind: &str) -> String {
    if let Some(ty) = ResourceTypes::builtin().by_kind(api_version, kind) {
        return ty.storage_key().to_string();
    }
    let plural = format!("{}s", kind.to_lowercase());
    match api_version.rsplit_once('/') {
        Some((group, _)) => format!("{group}/{plural}"),
        None => plural,
    }
}

/// The key an object is stored under.
pub fn key_of(object: &Value) -> ObjectKey {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    ObjectKey {
        resource: Arc::from(resource_of(text("/apiVersion"), text("/kind"))),
        namespace: Arc::from(text("/metadata/namespace")),
        name: Arc::from(text("/metadata/name")),
    }
}

/// A key by parts.
pub fn key(resource: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey { resource: Arc::from(resource), namespace: Arc::from(namespace), name: Arc::from(name) }
}

/// A snapshot holding exactly these objects (JSON as the API server stores them).
pub fn snapshot(objects: &[Value]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for object in objects {
        let parsed: DynamicObject = serde_json::from_value(object.clone()).expect("test objects are valid");
        snapshot.objects.insert(key_of(object), Arc::new(parsed));
    }
    snapshot
}
