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
