//! Owner references: the controller reference a workload controller puts on what it creates,
//! and the claims (adopt an orphan that matches, release an owned object that no longer does)
//! of apimachinery's `ControllerRefManager`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_core::Resource;

/// The controller reference to `owner`: `controller: true` and `blockOwnerDeletion: true`, as
/// `metav1.NewControllerRef` makes it (so that foreground deletion of the owner waits for it).
pub fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The object's controller reference (the owner reference with `controller: true`), if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.iter().flatten().find(|r| r.controller == Some(true))
}

/// Whether the object is controlled by the owner with uid `owner_uid`.
pub fn is_controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    controller_of(meta).is_some_and(|r| r.uid == owner_uid)
}

/// What a controller does with one candidate object when it claims its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Controlled by this owner and still matching: keep it.
    Owned,
    /// No controller and matching: adopt it (only if the owner is not being deleted).
    Adopt,
    /// Controlled by this owner but no longer matching: release it.
    Release,
    /// Someone else's, or not ours and not matching: leave it alone.
    Ignore,
}

/// How `ControllerRefManager.ClaimObject` treats `meta` for the owner `owner_uid`, given whether
/// the object matches the owner's selector. A deleted object is never adopted.
pub fn claim(meta: &ObjectMeta, owner_uid: &str, selected: bool) -> Claim {
    match controller_of(meta) {
        Some(r) if r.uid == owner_uid => {
            if selected {
                Claim::Owned
            } else {
                Claim::Release
            }
        }
        Some(_) => Claim::Ignore,
        None if selected && meta.deletion_timestamp.is_none() => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// The merge patch that adopts an object: its owner references plus `owner`, with the object's
/// uid as a precondition, as the real controller's adoption patch carries it: the server refuses
/// the patch if the name now belongs to another object.
pub fn adopt_patch(meta: &ObjectMeta, owner: OwnerReference) -> serde_json::Value {
    let mut refs: Vec<OwnerReference> = meta.owner_references.clone().unwrap_or_default();
    refs.push(owner);
    serde_json::json!({ "metadata": { "ownerReferences": refs, "uid": meta.uid } })
}

/// The merge patch that releases an object: its owner references without `owner_uid`.
pub fn release_patch(meta: &ObjectMeta, owner_uid: &str) -> serde_json::Value {
    let refs: Vec<&OwnerReference> =
        meta.owner_references.iter().flatten().filter(|r| r.uid != owner_uid).collect();
    serde_json::json!({ "metadata": { "ownerReferences": refs, "uid": meta.uid } })
}
