//! CustomResourceDefinitions: loading them from YAML, validating them, and the resource types
//! they make servable.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::response::StatusCause;

use crate::resources::ResourceType;

/// Check what the real apiserver checks on a CRD.
pub fn validate_crd(crd: &CustomResourceDefinition) -> Vec<StatusCause> {
    let _ = crd;
    Vec::new()
}

/// One served resource type per served version of `crd`.
pub fn resource_types(crd: &CustomResourceDefinition) -> Vec<ResourceType> {
    let _ = crd;
    todo!("crd resource types")
}

/// Why CRDs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CrdLoadError {
    /// The document is not a valid CRD.
    #[error("{source_name}: document {document}: {field}: {message}")]
    Invalid {
        /// The file name, or `<string>`.
        source_name: String,
        /// 1-based document index.
        document: usize,
        /// The offending field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Load every CRD in a multi-document YAML string.
pub fn load_crds_from_yaml(source: &str, yaml: &str) -> Result<Vec<CustomResourceDefinition>, CrdLoadError> {
    let _ = (source, yaml);
    todo!("crd loading")
}

/// Load CRDs from a file, or from every `*.yaml`, `*.yml` and `*.json` file of a directory.
pub fn load_crds_from_path(path: &Path) -> Result<Vec<CustomResourceDefinition>, CrdLoadError> {
    let _ = path;
    todo!("crd loading")
}
