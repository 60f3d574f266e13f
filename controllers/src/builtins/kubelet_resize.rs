//! In-place Pod resize as the kubelet of Kubernetes 1.33 carries it out
//! (`handlePodResourcesResize`, `canResizePod`, the status manager's resize conditions): what a
//! Pod's `/resize` asks for reaches the node's allocation, then the running containers.
//!
//! - **Reported resources.** Each container and sidecar of a Pod the kubelet took on reports
//!   `resources` (what it runs with: the allocation, once made) and `allocatedResources` (the
//!   allocated requests), from its first status on ([`report_resources`]); a Pod whose status
//!   reports none cannot be resized (kube-apiserver's `Pod running on node without support for
//!   resize`).
//! - **A resize** (the spec's cpu or memory no longer the allocation, [`step`]) is admitted if it
//!   fits: the Pod's requests within the Node's allocatable (else `PodResizePending` `Infeasible`,
//!   `Node didn't have enough capacity: memory, requested: 68719476736, capacity: 34359738368`,
//!   never retried until the spec changes) and beside the other Pods' (else `PodResizePending`
//!   `Deferred`, `Node didn't have enough resource: cpu, requested: 6000, used: 4000, capacity:
//!   8000`, retried at the kubelet's next sync of the Pod). An admitted resize is allocated
//!   (`allocatedResources` the new requests) and shows `PodResizeInProgress` until the runtime
//!   has it; then `resources` are the new ones and the condition goes ([`Step::Actuate`]).
//! - **Restarts.** A (regular) container whose `resizePolicy` for a changed resource (cpu requests or
//!   limits, memory limits) is `RestartContainer` is restarted as the resize is made: `Killing`
//!   (`Container app resize requires restart`), its restart count up, its last state the run that
//!   was killed (exit code 137), and running again (not ready again until its readiness probe
//!   passes).
//!
//! The scheduler and the quota count a Pod being resized by the larger of its spec and what it
//! reports (`UseStatusResources`, [`container_requests`]).
//!
//! Not modelled: resizing a Pod whose containers have not all started or crash-loop (its resize
//! waits until it runs), restarting a sidecar for its `resizePolicy` (it is resized in place), the
//! CPU and memory managers' static policies, swap; 1.34's ordering of deferred resizes and its
//! `ResizeStarted`/`ResizeCompleted` events.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod,
    PodCondition, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::kubelet_status::{containers, init_containers, is_sidecar};

/// The condition of a resize the kubelet could not admit (`Deferred` or `Infeasible`).
pub const RESIZE_PENDING: &str = "PodResizePending";
/// The condition of a resize the kubelet admitted and is making.
pub const RESIZE_IN_PROGRESS: &str = "PodResizeInProgress";
/// The reason of a resize that does not fit beside the Node's other Pods now.
pub const DEFERRED: &str = "Deferred";
/// The reason of a resize that does not fit the Node at all.
pub const INFEASIBLE: &str = "Infeasible";
/// The exit code of a container killed for a resize.
pub const KILLED_EXIT_CODE: i32 = 137;

/// What the kubelet does about a Pod's resources at a sync.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing asked: the spec is the allocation, and the runtime has it.
    Settled,
    /// Allocate the spec's resources (it fits) and start making them.
    Accept,
    /// The runtime has made the allocation: report it.
    Actuate,
    /// The spec does not fit: `PodResizePending` with this reason and message.
    Pending { reason: &'static str, message: String },
}

type Amounts = BTreeMap<String, f64>;

fn amounts(list: Option<&BTreeMap<String, Quantity>>) -> Amounts {
    list.into_iter().flatten().map(|(k, q)| (k.clone(), super::quantity::value(q).unwrap_or(0.0))).collect()
}

/// A resource list, an empty one as none.
fn empty_or(list: Option<&BTreeMap<String, Quantity>>) -> Option<&BTreeMap<String, Quantity>> {
    list.filter(|m| !m.is_empty())
}

/// Whether two resource lists hold the same amounts (`1` and `1000m` alike, an empty list as
/// none); the same text is the same amount without parsing.
fn same_amounts(a: Option<&BTreeMap<String, Quantity>>, b: Option<&BTreeMap<String, Quantity>>) -> bool {
    empty_or(a) == empty_or(b) || amounts(a) == amounts(b)
}

/// The containers whose resources the kubelet allocates: the regular ones and the sidecars, each
/// with whether it is an init container.
fn resizable(pod: &Pod) -> impl Iterator<Item = (&Container, bool)> {
    containers(pod)
        .iter()
        .map(|c| (c, false))
        .chain(init_containers(pod).iter().filter(|c| is_sidecar(c)).map(|c| (c, true)))
}

fn status_of<'s>(status: &'s PodStatus, name: &str, init: bool) -> Option<&'s ContainerStatus> {
    let list = if init { &status.init_container_statuses } else { &status.container_statuses };
    list.iter().flatten().find(|s| s.name == name)
}

fn status_of_mut<'s>(status: &'s mut PodStatus, name: &str, init: bool) -> Option<&'s mut ContainerStatus> {
    let list = if init { &mut status.init_container_statuses } else { &mut status.container_statuses };
    list.iter_mut().flatten().find(|s| s.name == name)
}

fn has_condition(pod: &Pod, type_: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == type_)
}

/// Whether `pod`'s status shows a resize pending or in progress.
pub fn shows_resize(pod: &Pod) -> bool {
    has_condition(pod, RESIZE_PENDING) || has_condition(pod, RESIZE_IN_PROGRESS)
}

/// Whether `pod`'s status shows a resize admitted and not made yet.
pub fn in_progress(pod: &Pod) -> bool {
    has_condition(pod, RESIZE_IN_PROGRESS)
}

/// Whether `pod`'s status shows a resize deferred (tried again at the next sync).
pub fn deferred(pod: &Pod) -> bool {
    pending_reason(pod) == Some(DEFERRED)
}

/// The reason of `pod`'s `PodResizePending` condition, if it has one.
fn pending_reason(pod: &Pod) -> Option<&str> {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    conditions.iter().find(|c| c.type_ == RESIZE_PENDING).and_then(|c| c.reason.as_deref())
}

/// The spec's resources of a container, as a container status reports them.
fn spec_resources(c: &Container) -> ResourceRequirements {
    let r = c.resources.as_ref();
    ResourceRequirements {
        requests: r.and_then(|r| r.requests.clone()).filter(|m| !m.is_empty()),
        limits: r.and_then(|r| r.limits.clone()).filter(|m| !m.is_empty()),
        ..ResourceRequirements::default()
    }
}

/// Give each container and sidecar status of `status` (the next status of `current`) the
/// `resources` and `allocatedResources` the kubelet reports: those `current` reports, or the
/// spec's for a container reported for the first time (the Pod was admitted with them).
pub fn report_resources(current: &Pod, status: &mut PodStatus) {
    let old = current.status.as_ref();
    for (c, init) in resizable(current) {
        let Some(next) = status_of_mut(status, &c.name, init) else { continue };
        match old.and_then(|old| status_of(old, &c.name, init)).filter(|s| s.resources.is_some()) {
            Some(before) => {
                next.resources.clone_from(&before.resources);
                next.allocated_resources.clone_from(&before.allocated_resources);
            }
            None => {
                let resources = spec_resources(c);
                next.allocated_resources.clone_from(&resources.requests);
                next.resources = Some(resources);
            }
        }
    }
}

/// What the kubelet does about `pod`'s resources now ([`Step`]); `fits` answers whether the
/// spec's requests fit the Node (`Err((reason, message))` if not).
pub fn step(pod: &Pod, fits: impl FnOnce(&Pod) -> Result<(), (&'static str, String)>) -> Step {
    let Some(status) = pod.status.as_ref() else { return Step::Settled };
    let in_progress = has_condition(pod, RESIZE_IN_PROGRESS);
    let mut reported = false;
    let mut asked = false;
    for (c, init) in resizable(pod) {
        let Some(s) = status_of(status, &c.name, init) else { continue };
        let Some(actual) = s.resources.as_ref() else { continue };
        reported = true;
        let spec = c.resources.as_ref();
        asked |= !same_amounts(spec.and_then(|r| r.requests.as_ref()), s.allocated_resources.as_ref());
        asked |= !in_progress && !same_amounts(spec.and_then(|r| r.limits.as_ref()), actual.limits.as_ref());
    }
    if !reported {
        return Step::Settled;
    }
    if in_progress {
        return Step::Actuate;
    }
    if !asked {
        return Step::Settled;
    }
    match fits(pod) {
        Ok(()) => Step::Accept,
        Err((reason, message)) => Step::Pending { reason, message },
    }
}

/// `pod` with its status as the kubelet's `step` leaves it: the Pod the next status is generated
/// from.
pub fn resized(pod: &Pod, step: &Step, unready: bool, now: Timestamp) -> Pod {
    let mut next = pod.clone();
    let Some(status) = next.status.as_mut() else { return next };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match step {
        Step::Settled => conditions.retain(|c| c.type_ != RESIZE_PENDING && c.type_ != RESIZE_IN_PROGRESS),
        Step::Pending { reason, message } => {
            set_condition(conditions, RESIZE_PENDING, Some(reason), Some(message), now);
        }
        Step::Accept => {
            conditions.retain(|c| c.type_ != RESIZE_PENDING);
            set_condition(conditions, RESIZE_IN_PROGRESS, None, None, now);
            for (c, init) in resizable(pod) {
                if let Some(s) = status_of_mut(status, &c.name, init).filter(|s| s.resources.is_some()) {
                    s.allocated_resources = spec_resources(c).requests;
                }
            }
        }
        Step::Actuate => {
            conditions.retain(|c| c.type_ != RESIZE_IN_PROGRESS);
            for (c, init) in resizable(pod) {
                let Some(s) = status_of_mut(status, &c.name, init) else { continue };
                let Some(actual) = s.resources.clone() else { continue };
                let made = ResourceRequirements {
                    requests: s.allocated_resources.clone(),
                    limits: spec_resources(c).limits,
                    claims: actual.claims.clone(),
                };
                // A sidecar is resized in place whatever its policy (see the module).
                let running = s.state.as_ref().is_some_and(|st| st.running.is_some());
                if !init && running && needs_restart(c, &actual, &made) {
                    restart(pod, c, s, unready, now);
                }
                s.resources = Some(made);
            }
        }
    }
    next
}

/// Condition `type_` (`True`) set in `conditions` with `reason` and `message`: its
/// `lastTransitionTime` kept while its reason stays, placed before the conditions the kubelet
/// generates (`PodReadyToStartContainers`...), `PodResizePending` before `PodResizeInProgress`.
fn set_condition(
    conditions: &mut Vec<PodCondition>,
    type_: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: Timestamp,
) {
    let kept = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.reason.as_deref() == reason)
        .and_then(|c| c.last_transition_time.clone());
    let condition = PodCondition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: reason.map(str::to_owned),
        message: message.map(str::to_owned),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(kept.unwrap_or(Time(now))),
        ..PodCondition::default()
    };
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) {
        *existing = condition;
        return;
    }
    let generated = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
    let mut at =
        conditions.iter().position(|c| generated.contains(&c.type_.as_str())).unwrap_or(conditions.len());
    if type_ == RESIZE_PENDING
        && let Some(in_progress) = conditions.iter().position(|c| c.type_ == RESIZE_IN_PROGRESS)
    {
        at = at.min(in_progress);
    }
    conditions.insert(at, condition);
}

/// Whether making `made` out of `actual` restarts `c` (`RestartContainer` for a changed cpu
/// request or limit, or memory limit; a memory request alone restarts nothing).
fn needs_restart(c: &Container, actual: &ResourceRequirements, made: &ResourceRequirements) -> bool {
    let policy = |resource: &str| {
        c.resize_policy
            .iter()
            .flatten()
            .find(|p| p.resource_name == resource)
            .map(|p| p.restart_policy.as_str())
    };
    let of = |r: &ResourceRequirements, limits: bool| {
        amounts(if limits { r.limits.as_ref() } else { r.requests.as_ref() })
    };
    let changed =
        |limits: bool, resource: &str| of(actual, limits).get(resource) != of(made, limits).get(resource);
    let cpu = changed(false, "cpu") || changed(true, "cpu");
    (cpu && policy("cpu") == Some("RestartContainer"))
        || (changed(true, "memory") && policy("memory") == Some("RestartContainer"))
}

/// `s` restarted now: the killed run its last state, one restart more, running again (started
/// and ready as a container just started: a probe holds it).
fn restart(pod: &Pod, c: &Container, s: &mut ContainerStatus, unready: bool, now: Timestamp) {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let since = s.state.as_ref().and_then(|st| st.running.as_ref()).and_then(|r| r.started_at.clone());
    let killed = ContainerStateTerminated {
        exit_code: KILLED_EXIT_CODE,
        reason: Some("Error".to_owned()),
        started_at: since,
        finished_at: Some(Time(now)),
        container_id: s.container_id.clone(),
        ..ContainerStateTerminated::default()
    };
    s.last_state = Some(ContainerState { terminated: Some(killed), ..ContainerState::default() });
    s.restart_count += 1;
    s.container_id = Some(super::kubelet_status::container_id(uid, &c.name, s.restart_count));
    s.state = Some(ContainerState {
        running: Some(ContainerStateRunning { started_at: Some(Time(now)) }),
        ..ContainerState::default()
    });
    s.started = Some(c.startup_probe.is_none());
    s.ready = c.startup_probe.is_none() && c.readiness_probe.is_none() && !unready;
}

/// What one container requests as the scheduler and the quota count it with in-place resize
/// (`PodResourcesOptions.UseStatusResources`, as [`model_apiserver::quota`] counts it): once its
/// status reports `resources`, the larger of the spec's, the reported and the allocated requests
/// (a resize down frees nothing until the node has made it); only the reported and allocated ones
/// when the kubelet found the resize infeasible.
pub fn container_requests(pod: &Pod, c: &Container, init: bool) -> Amounts {
    let spec_list = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    let spec = amounts(spec_list);
    let status = pod.status.as_ref().and_then(|s| status_of(s, &c.name, init));
    let Some((s, reported)) = status.and_then(|s| Some((s, s.resources.as_ref()?))) else { return spec };
    // No resize under way (the common case): the spec's, as reported and allocated.
    if empty_or(spec_list) == empty_or(reported.requests.as_ref())
        && empty_or(spec_list) == empty_or(s.allocated_resources.as_ref())
    {
        return spec;
    }
    let mut out = amounts(reported.requests.as_ref());
    let mut max = |from: Amounts| {
        for (k, v) in from {
            let slot = out.entry(k).or_insert(v);
            *slot = slot.max(v);
        }
    };
    max(amounts(s.allocated_resources.as_ref()));
    let infeasible = pending_reason(pod) == Some(INFEASIBLE);
    if !infeasible {
        max(spec);
    }
    out
}

/// `canResizePod`'s messages: the Pod's spec requests (`requested`, cpu in millicores, memory in
/// bytes) against the Node's `allocatable` (`Infeasible`: memory first), then beside `used`, what
/// the Node's other Pods hold (`Deferred`: cpu, memory, then the others by name).
pub fn fit(requested: &Amounts, used: &Amounts, allocatable: &Amounts) -> Result<(), (&'static str, String)> {
    let get = |m: &Amounts, k: &str| m.get(k).copied().unwrap_or(0.0);
    // MilliValue for cpu, Value for the others: both round up.
    let whole = |k: &str, v: f64| if k == "cpu" { (v * 1000.0).ceil() as i64 } else { v.ceil() as i64 };
    for name in ["memory", "cpu"] {
        if get(requested, name) > get(allocatable, name) {
            return Err((
                INFEASIBLE,
                format!(
                    "Node didn't have enough capacity: {name}, requested: {}, capacity: {}",
                    whole(name, get(requested, name)),
                    whole(name, get(allocatable, name))
                ),
            ));
        }
    }
    let fixed = ["cpu", "memory", "ephemeral-storage"];
    let others = requested.keys().filter(|k| !fixed.contains(&k.as_str()) && k.as_str() != "pods");
    for name in fixed.iter().copied().chain(others.map(String::as_str)) {
        let want = get(requested, name);
        if want > 0.0 && want > get(allocatable, name) - get(used, name) {
            return Err((
                DEFERRED,
                format!(
                    "Node didn't have enough resource: {name}, requested: {}, used: {}, capacity: {}",
                    whole(name, want),
                    whole(name, get(used, name)),
                    whole(name, get(allocatable, name))
                ),
            ));
        }
    }
    Ok(())
}
