//! Patch application: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, with `test`).
//! Strategic merge patch for the built-in kinds is in [`crate::strategic`]; custom resources get
//! 415 for it, as on a real server. Server-side apply is handled by `server_apply`.

use kube_core::{DynamicObject, ObjectMeta, Status, TypeMeta, params::Patch};
use serde::Deserialize;

use crate::{errors, resources::ResourceType};

/// Apply `patch` to the stored object `old` and decode the result.
///
/// JSON merge patch follows RFC 7386. JSON patch follows RFC 6902; a failed operation (a `test`
/// that does not hold, a path that does not exist) gets 422 Invalid with the patch library's
/// message, as the real server answers. Strategic merge patch applies to built-in kinds only
/// (custom resources get 415, as on a real server). Server-side apply does not come here but for
/// `/scale`, where it gets 415 UnsupportedMediaType.
pub(crate) fn apply_to_object(
    ty: &ResourceType,
    old: &DynamicObject,
    patch: &Patch<serde_json::Value>,
) -> Result<DynamicObject, Status> {
    let doc = match patch {
        Patch::Merge(p) => return merge_patch(old, p),
        Patch::Json(p) => {
            let mut doc = encode(old)?;
            apply_json_patch(&mut doc, p)?;
            doc
        }
        Patch::Strategic(_) if ty.custom => return Err(unsupported(CUSTOM_MEDIA_TYPES)),
        Patch::Strategic(p) => crate::strategic::strategic_merge(&encode(old)?, p, &ty.api)?,
        // Applies go through `server_apply`; only `/scale` gets here, whose Scale view has no
        // field ownership in the model.
        Patch::Apply(_) => {
            return Err(errors::unsupported_media_type(
                "server-side apply to /scale is not supported by the model API server - accepted media types include: application/json-patch+json, application/merge-patch+json",
            ));
        }
        _ => return Err(unsupported(CUSTOM_MEDIA_TYPES)),
    };
    decode(doc)
}

/// A JSON merge patch (RFC 7386) applied to the stored object `old`, as [`apply_to_object`]
/// applies one: exactly the object (or error) that encoding `old` as JSON, merging `patch` into
/// it and decoding the result gives, and for most patches without encoding all of `old` (see
/// [`merge_keeping_types`]).
pub fn merge_patch(old: &DynamicObject, patch: &serde_json::Value) -> Result<DynamicObject, Status> {
    if let Some(patched) = merge_keeping_types(old, patch) {
        return Ok(patched);
    }
    let mut doc = encode(old)?;
    json_patch::merge(&mut doc, patch);
    decode(doc)
}

/// The stored object as the JSON document a patch applies to.
fn encode(old: &DynamicObject) -> Result<serde_json::Value, Status> {
    serde_json::to_value(old).map_err(|e| errors::internal_error(&format!("encoding the stored object: {e}")))
}

/// A patched document as the object it describes.
fn decode(doc: serde_json::Value) -> Result<DynamicObject, Status> {
    object_from_value(doc).map_err(|e| errors::bad_request(&format!("the patched object is not valid: {e}")))
}

/// A JSON merge patch that names neither `apiVersion` nor `kind`, applied without encoding the
/// whole stored object: the merge runs on a copy of its content, with its metadata encoded only
/// if the patch names `metadata`; the type fields and any metadata the patch leaves alone are
/// the stored object's own. RFC 7386 changes only the keys a patch names, so the result is the
/// general path's (encode all, merge, decode): a status patch, the built-in controllers' most
/// common write, no longer encodes and decodes the object's whole metadata (managedFields
/// included). `None` where that path must answer: a patch that is not an object or names a type
/// field, content that is not a map, metadata the patch made undecodable (its error is the
/// general path's to give).
fn merge_keeping_types(old: &DynamicObject, patch: &serde_json::Value) -> Option<DynamicObject> {
    use serde_json::Value;
    const TYPE_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];
    let Value::Object(named) = patch else { return None };
    let Value::Object(content) = &old.data else { return None };
    if named.contains_key("apiVersion")
        || named.contains_key("kind")
        || TYPE_FIELDS.iter().any(|key| content.contains_key(*key))
    {
        return None;
    }
    let mut doc = content.clone();
    let names_metadata = named.contains_key("metadata");
    if names_metadata {
        doc.insert("metadata".to_owned(), serde_json::to_value(&old.metadata).ok()?);
    }
    let mut doc = Value::Object(doc);
    json_patch::merge(&mut doc, patch);
    let Value::Object(mut doc) = doc else { return None };
    let metadata = if names_metadata {
        match doc.remove("metadata") {
            None => ObjectMeta::default(),
            Some(metadata) => ObjectMeta::deserialize(&metadata).ok()?,
        }
    } else {
        old.metadata.clone()
    };
    Some(DynamicObject { types: old.types.clone(), metadata, data: Value::Object(doc) })
}

/// A patched or applied document as an object: exactly what `serde_json::from_value::<DynamicObject>`
/// answers, object or error, at about half its cost.
///
/// serde decodes `DynamicObject`'s two flattened fields (the type fields and `data`) by first
/// buffering the whole document into its own intermediate form and then building each field from
/// that: every patch and apply paid it for the whole object. A document that is a map whose
/// `apiVersion` and `kind` are both strings or both absent, and whose `metadata` (if any)
/// decodes, is split directly; anything else (a partial type, a `metadata` that does not decode)
/// takes serde's own path, so errors and edge cases stay serde's.
pub fn object_from_value(doc: serde_json::Value) -> Result<DynamicObject, serde_json::Error> {
    match doc {
        serde_json::Value::Object(map) => split_object(map).or_else(|map| serde_json::from_value(map.into())),
        other => serde_json::from_value(other),
    }
}

/// [`object_from_value`]'s direct path; the map back, untouched, where serde's path must answer.
fn split_object(
    mut map: serde_json::Map<String, serde_json::Value>,
) -> Result<DynamicObject, serde_json::Map<String, serde_json::Value>> {
    use serde_json::Value;
    let types = match (map.get("apiVersion"), map.get("kind")) {
        (Some(Value::String(api_version)), Some(Value::String(kind))) => {
            Some(TypeMeta { api_version: api_version.clone(), kind: kind.clone() })
        }
        (None, None) => None,
        _ => return Err(map),
    };
    let metadata = match map.get("metadata").map(ObjectMeta::deserialize) {
        None => ObjectMeta::default(),
        Some(Ok(metadata)) => metadata,
        Some(Err(_)) => return Err(map),
    };
    for key in ["apiVersion", "kind", "metadata"] {
        map.remove(key);
    }
    Ok(DynamicObject { types, metadata, data: Value::Object(map) })
}

/// RFC 6902, with one difference that the real server has: a `test` for `null` holds when the
/// path is absent (Go's json-patch treats a missing value as null). kube-rs's finalizer helper
/// relies on it, testing `/metadata/finalizers` for null before adding the first finalizer.
///
/// Applies to a scratch copy: on error the caller drops `doc`.
fn apply_json_patch(doc: &mut serde_json::Value, patch: &json_patch::Patch) -> Result<(), Status> {
    for op in &patch.0 {
        if let json_patch::PatchOperation::Test(test) = op
            && test.value.is_null()
            && doc.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        // kube-apiserver answers a patch that does not apply with apimachinery's generic 422
        // (`NewGenericServerResponse`), which keeps none of json-patch's own words.
        json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|_| errors::json_patch_failed())?;
    }
    Ok(())
}

/// The patch types the real server accepts for custom resources.
const CUSTOM_MEDIA_TYPES: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// 415 as the real server answers a patch type it does not accept.
fn unsupported(accepted: &str) -> Status {
    errors::unsupported_media_type(&format!(
        "the body of the request was in an unknown format - accepted media types include: {accepted}"
    ))
}
