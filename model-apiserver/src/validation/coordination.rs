//! coordination.k8s.io/v1 spec validation, after `pkg/apis/coordination/validation`: a Lease's
//! duration is positive, its transitions non-negative, and a preferred holder needs a strategy.

use k8s_openapi::api::coordination::v1::Lease;
use kube_core::response::StatusCause;

use super::field::{NEGATIVE, Path, forbidden, invalid, one_of_if_set};

/// ValidateLeaseSpec.
pub(crate) fn lease(lease: &Lease, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let Some(spec) = &lease.spec else { return };
    if let Some(d) = spec.lease_duration_seconds.filter(|d| *d <= 0) {
        out.push(invalid(&path.child("leaseDurationSeconds"), d, "must be greater than 0"));
    }
    if let Some(t) = spec.lease_transitions.filter(|t| *t < 0) {
        out.push(invalid(&path.child("leaseTransitions"), t, NEGATIVE));
    }
    let strategy = spec.strategy.as_deref().filter(|s| !s.is_empty());
    one_of_if_set(strategy, &path.child("strategy"), &["OldestEmulationVersion"], out);
    if spec.preferred_holder.as_deref().is_some_and(|h| !h.is_empty()) && strategy.is_none() {
        out.push(forbidden(&path.child("preferredHolder"), "may only be specified if `strategy` is defined"));
    }
}
