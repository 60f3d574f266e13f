//! autoscaling/v2 spec validation, after `pkg/apis/autoscaling/validation/validation.go`
//! (`validateHorizontalPodAutoscalerSpec`): the replica bounds and the scale target. Metrics and
//! behavior are not checked yet.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube_core::response::StatusCause;

use super::field::{Path, invalid, q, required};
use crate::versions::Required;

/// validateHorizontalPodAutoscalerSpec, with the HPAScaleToZero gate off (minReplicas ≥ 1).
pub(crate) fn horizontal_pod_autoscaler(hpa: &HorizontalPodAutoscaler, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = hpa.spec.value();
    if let Some(min) = spec.min_replicas.filter(|m| *m < 1) {
        out.push(invalid(&path.child("minReplicas"), min, "must be greater than or equal to 1"));
    }
    if spec.max_replicas < 1 {
        out.push(invalid(&path.child("maxReplicas"), spec.max_replicas, "must be greater than 0"));
    }
    if spec.min_replicas.is_some_and(|min| spec.max_replicas < min) {
        out.push(invalid(
            &path.child("maxReplicas"),
            spec.max_replicas,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    // ValidateCrossVersionObjectReference: kind and name are required path segment names.
    let target = path.child("scaleTargetRef");
    for (field, value) in [("kind", &spec.scale_target_ref.kind), ("name", &spec.scale_target_ref.name)] {
        if value.is_empty() {
            out.push(required(&target.child(field), ""));
            continue;
        }
        for message in path_segment_name(value) {
            out.push(invalid(&target.child(field), q(value), message));
        }
    }
}

/// apimachinery's `IsValidPathSegmentName`.
fn path_segment_name(name: &str) -> Vec<&'static str> {
    match name {
        "." => return vec!["may not be '.'"],
        ".." => return vec!["may not be '..'"],
        _ => {}
    }
    let mut messages = Vec::new();
    if name.contains('/') {
        messages.push("may not contain '/'");
    }
    if name.contains('%') {
        messages.push("may not contain '%'");
    }
    messages
}
