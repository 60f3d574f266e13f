//! kube-apiserver's `PersistentVolumeClaimResize` admission plugin
//! (`plugin/pkg/admission/storage/persistentvolume/resize`), on in every cluster: an update of a
//! claim (not of its status) that grows its storage request is refused 403 Forbidden
//! - `Only bound persistent volume claims can be expanded` unless the stored claim is `Bound`
//!   (validation refuses such a write first, 422, so this shows only where validation lets it
//!   through);
//! - `only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc
//!   must support resize` unless the claim names the same non-empty StorageClass before and after
//!   and that class exists with `allowVolumeExpansion: true`.
//!
//! A request that stays or shrinks passes. The class is read from the store, as upstream reads
//! its StorageClass lister.

use std::sync::Arc;

use kube_core::{DynamicObject, Status};
use serde_json::Value;

use crate::{errors, quantity, validation::core::BETA_CLASS};

/// The plugin's `Validate` of an update of claim `old` into `new`; `class` reads a stored
/// StorageClass by name.
pub(crate) fn validate_update(
    old: &DynamicObject,
    new: &DynamicObject,
    class: impl Fn(&str) -> Option<Arc<DynamicObject>>,
) -> Result<(), Status> {
    let size = |o: &DynamicObject| {
        let text = o.data.pointer("/spec/resources/requests/storage").and_then(Value::as_str);
        text.and_then(quantity::value).unwrap_or(0.0)
    };
    if size(new) <= size(old) {
        return Ok(());
    }
    let name = new.metadata.name.as_deref().unwrap_or_default();
    let forbidden = |why: &str| errors::forbidden("", "persistentvolumeclaims", name, why);
    if old.data.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return Err(forbidden("Only bound persistent volume claims can be expanded"));
    }
    let (old_class, new_class) = (claim_class(old), claim_class(new));
    let allowed = !new_class.is_empty()
        && new_class == old_class
        && class(new_class)
            .is_some_and(|sc| sc.data.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true));
    if !allowed {
        return Err(forbidden(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        ));
    }
    Ok(())
}

/// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`, else "".
fn claim_class(claim: &DynamicObject) -> &str {
    let annotation = claim.metadata.annotations.as_ref().and_then(|a| a.get(BETA_CLASS));
    match annotation {
        Some(class) => class,
        None => claim.data.pointer("/spec/storageClassName").and_then(Value::as_str).unwrap_or_default(),
    }
}
