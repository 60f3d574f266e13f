//! Admission hooks, as Rust closures: mutating hooks run first, then validating hooks.

use std::sync::Arc;

use kube_core::{DynamicObject, Status};

use crate::resources::ResourceType;

/// What an admission hook sees.
#[derive(Debug)]
pub struct AdmissionRequest<'a> {
    /// `create`, `update`, `patch` (as update) or `delete`.
    pub operation: &'static str,
    /// The resource type.
    pub resource: &'a ResourceType,
    /// The subresource, if any (`status`).
    pub subresource: Option<&'static str>,
    /// The object before the change (update, delete).
    pub old: Option<&'a DynamicObject>,
    /// The requesting user, if known.
    pub user: Option<&'a str>,
}

/// A mutating or validating hook. A mutating hook may change `object`; a validating hook gets the
/// final object and may only refuse. Returning `Err(status)` refuses the request with that status
/// (use 403 Forbidden or 422 Invalid as a webhook would).
pub type AdmissionHook =
    Arc<dyn Fn(&AdmissionRequest<'_>, &mut DynamicObject) -> Result<(), Status> + Send + Sync>;

/// The finalizer that keeps a PersistentVolumeClaim while a Pod uses it
/// (`volumeutil.PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The finalizer that keeps a PersistentVolume while it is bound
/// (`volumeutil.PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// kube-apiserver's `StorageObjectInUseProtection` admission plugin
/// (`plugin/pkg/admission/storage/storageobjectinuseprotection`): the create of a core
/// PersistentVolumeClaim or PersistentVolume (not of a subresource) gets its protection
/// finalizer, after those it has, unless it has it already. Other operations and kinds pass.
pub(crate) fn protect_storage_object(request: &AdmissionRequest<'_>, object: &mut DynamicObject) {
    if request.operation != "create"
        || request.subresource.is_some()
        || !request.resource.api.group.is_empty()
    {
        return;
    }
    let finalizer = match request.resource.api.plural.as_str() {
        "persistentvolumeclaims" => PVC_PROTECTION_FINALIZER,
        "persistentvolumes" => PV_PROTECTION_FINALIZER,
        _ => return,
    };
    let finalizers = object.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_owned());
    }
}
