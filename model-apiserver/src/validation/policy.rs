//! policy/v1 spec validation, after `pkg/apis/policy/validation/validation.go`: a
//! PodDisruptionBudget sets minAvailable or maxUnavailable (not both), each an int or a percent
//! of at most 100%, with a valid selector.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube_core::response::StatusCause;

use super::field::{Path, int_or_percent, invalid, label_selector, one_of_if_set};

/// ValidatePodDisruptionBudgetSpec.
pub(crate) fn pod_disruption_budget(pdb: &PodDisruptionBudget, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let Some(spec) = &pdb.spec else { return };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        let shown = serde_json::to_string(spec).unwrap_or_default();
        out.push(invalid(&path, shown, "minAvailable and maxUnavailable cannot be both set"));
    }
    if let Some(v) = &spec.min_available {
        int_or_percent(v, &path.child("minAvailable"), true, out);
    }
    if let Some(v) = &spec.max_unavailable {
        int_or_percent(v, &path.child("maxUnavailable"), true, out);
    }
    if let Some(s) = &spec.selector {
        label_selector(s, &path.child("selector"), out);
    }
    one_of_if_set(
        spec.unhealthy_pod_eviction_policy.as_deref(),
        &path.child("unhealthyPodEvictionPolicy"),
        &["AlwaysAllow", "IfHealthyBudget"],
        out,
    );
}
