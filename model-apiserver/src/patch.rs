//! Patch application: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, with `test`).
//! Strategic merge patch for the built-in kinds is in [`crate::strategic`]; custom resources get
//! 415 for it, as on a real server. Server-side apply is handled by `server_apply`.

use kube_core::{DynamicObject, Status, params::Patch};

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
    let mut doc: serde_json::Value = serde_json::to_value(old)
        .map_err(|e| errors::internal_error(&format!("encoding the stored object: {e}")))?;
    match patch {
        Patch::Merge(p) => json_patch::merge(&mut doc, p),
        Patch::Json(p) => apply_json_patch(&mut doc, p)?,
        Patch::Strategic(_) if ty.custom => return Err(unsupported(CUSTOM_MEDIA_TYPES)),
        Patch::Strategic(p) => doc = crate::strategic::strategic_merge(&doc, p, &ty.api)?,
        // Applies go through `server_apply`; only `/scale` gets here, whose Scale view has no
        // field ownership in the model.
        Patch::Apply(_) => {
            return Err(errors::unsupported_media_type(
                "server-side apply to /scale is not supported by the model API server - accepted media types include: application/json-patch+json, application/merge-patch+json",
            ));
        }
        _ => return Err(unsupported(CUSTOM_MEDIA_TYPES)),
    }
    serde_json::from_value(doc)
        .map_err(|e| errors::bad_request(&format!("the patched object is not valid: {e}")))
}

/// RFC 6902, with one difference that the real server has: a `test` for `null` holds when the
/// path is absent (Go's json-patch treats a missing value as null). kube-rs's finalizer helper
/// relies on it, testing `/metadata/finalizers` for null before adding the first finalizer.
///
/// Applies to a scratch copy: on error the caller drops `doc`.
fn apply_json_patch(doc: &mut serde_json::Value, patch: &json_patch::Patch) -> Result<(), Status> {
    for (index, op) in patch.0.iter().enumerate() {
        if let json_patch::PatchOperation::Test(test) = op
            && test.value.is_null()
            && doc.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|mut e| {
            // One operation at a time: report its index in the whole patch.
            e.operation = index;
            Status::failure(&e.to_string(), "Invalid").with_code(422)
        })?;
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
