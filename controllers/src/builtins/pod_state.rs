//! What workload controllers read from a Pod: is it active, ready, finished; and which pods to
//! delete first when scaling down.

use std::cmp::Ordering;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// `Running`, as `status.phase` spells it.
pub const PHASE_RUNNING: &str = "Running";
/// `Succeeded`.
pub const PHASE_SUCCEEDED: &str = "Succeeded";
/// `Failed`.
pub const PHASE_FAILED: &str = "Failed";
/// `Pending`.
pub const PHASE_PENDING: &str = "Pending";

/// The pod's phase (`Pending` when unset, as a freshly created pod is).
pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or(PHASE_PENDING)
}

/// Whether the pod finished (Succeeded or Failed): it will never run again.
pub fn is_finished(pod: &Pod) -> bool {
    matches!(phase(pod), PHASE_SUCCEEDED | PHASE_FAILED)
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `controller.IsPodActive`: not finished and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !is_finished(pod) && !is_terminating(pod)
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether the pod is bound to a node (`spec.nodeName` set).
pub fn is_scheduled(pod: &Pod) -> bool {
    node_name(pod).is_some()
}

/// The Node the pod is bound to, if any (`spec.nodeName`, not empty).
pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}

/// Whether the pod is Running and Ready (what a StatefulSet waits for before the next ordinal).
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == PHASE_RUNNING && is_ready(pod)
}

/// Whether the pod counts as available with `minReadySeconds: 0`: active and ready.
pub fn is_available(pod: &Pod) -> bool {
    is_active(pod) && is_ready(pod)
}

/// Whether the pod is available at `now` for a controller whose `minReadySeconds` is
/// `min_ready_seconds`: active, ready, and ready for long enough ([`ready_for_at_least`]).
pub fn is_available_at(pod: &Pod, min_ready_seconds: Option<i32>, now: Timestamp) -> bool {
    is_available(pod) && ready_for_at_least(pod, min_ready_seconds, now)
}

/// Whether the pod's readiness counts as availability at `now` (`podutil.IsPodAvailable` on a
/// ready pod): always when `min_ready_seconds` is 0 or unset, else when its `Ready` condition
/// turned true more than that long before `now`.
pub fn ready_for_at_least(pod: &Pod, min_ready_seconds: Option<i32>, now: Timestamp) -> bool {
    let min_ready = i64::from(min_ready_seconds.unwrap_or(0).max(0));
    if min_ready == 0 {
        return true;
    }
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    let ready = conditions.into_iter().flatten().find(|c| c.type_ == "Ready");
    ready.and_then(|c| c.last_transition_time.as_ref()).is_some_and(|since| {
        since
            .0
            .checked_add(SignedDuration::from_secs(min_ready))
            .is_ok_and(|available_from| available_from < now)
    })
}

fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| cs.iter().map(|c| c.restart_count).sum())
}

fn phase_rank(pod: &Pod) -> u8 {
    match phase(pod) {
        PHASE_PENDING => 0,
        PHASE_RUNNING => 2,
        _ => 1,
    }
}

/// The order in which a ReplicaSet deletes pods when it scales down (`controller.ActivePods`'
/// `Less`): unscheduled before scheduled, Pending before Running, not ready before ready, more
/// restarts before fewer, newer before older; then by name, so that the order is total.
pub fn deletion_order(a: &Pod, b: &Pod) -> Ordering {
    is_scheduled(a)
        .cmp(&is_scheduled(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| restarts(b).cmp(&restarts(a)))
        .then_with(|| b.metadata.creation_timestamp.cmp(&a.metadata.creation_timestamp))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}
