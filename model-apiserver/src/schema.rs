//! Structural-schema validation, pruning and defaulting for custom resources.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kube_core::response::StatusCause;

/// Validate a whole custom resource object against its version's `openAPIV3Schema`.
pub fn validate(schema: &JSONSchemaProps, value: &serde_json::Value) -> Vec<StatusCause> {
    let _ = (schema, value);
    Vec::new()
}

/// Drop fields the schema does not know, unless `x-kubernetes-preserve-unknown-fields`.
pub fn prune(schema: &JSONSchemaProps, value: &mut serde_json::Value) {
    let _ = (schema, value);
}

/// Apply the schema's `default` values to absent fields, recursively.
pub fn apply_defaults(schema: &JSONSchemaProps, value: &mut serde_json::Value) {
    let _ = (schema, value);
}
