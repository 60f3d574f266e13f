//! The Pod status the kubelet-lite writes at each stage of a Pod's life ([`Stage`]), generated as
//! the kubelet generates it (`generateAPIPodStatus`, `pkg/kubelet/status/generate.go`):
//! - **accepted**: the kubelet took the Pod on and creates its sandbox: phase `Pending`,
//!   `startTime` and the host's addresses, every container waiting (`ContainerCreating`, or
//!   `PodInitializing` when the Pod has init containers), `PodReadyToStartContainers=False`;
//! - **initializing**: the sandbox is up (the Pod's IP is known); the init containers run one
//!   after another, each to completion (`terminated`, exit code 0, `Completed`, and `ready`), but a
//!   sidecar (an init container with `restartPolicy: Always`) starts and keeps running;
//!   `Initialized=False` (`ContainersNotInitialized`) names those not done;
//! - **started**: the containers run (phase `Running`), or fail as [`super::kubelet::FAIL_ANNOTATION`] says
//!   (all of them, or those it names: the others run as in a Pod where none fails, and the phase
//!   of a Pod whose containers are not restarted is `getPhase`'s: `Running` while one runs, then
//!   `Failed` if one failed, else `Succeeded`).
//!   A failing container that is restarted (`restartPolicy` `Always` or `OnFailure`) crash-loops
//!   as the kubelet's `doBackOff` has it: the first restart comes at once, and each later one
//!   after a back-off of 10 s, doubled per restart up to 5 min, counted from the last exit
//!   ([`crash_loop_backoff`]). Between restarts the container waits in `CrashLoopBackOff` with
//!   the kubelet's message (`back-off 20s restarting failed container=app
//!   pod=web-0_ns(<uid>)`), its `restartCount` the restarts so far and its `lastState` the run
//!   that just ended ([`restarted`], [`next_restart`]). A restarted container runs for
//!   [`CRASH_RUN`] (one restart more, `running`, and ready if no probe holds it, as a failing
//!   process is until it exits) before it exits again and backs off once more.
//!
//! The conditions are derived from the container statuses, as upstream's: `Initialized` once
//! every regular init container completed and every sidecar started; `ContainersReady` once every
//! sidecar and container is ready; `Ready` once `ContainersReady` is and every readiness gate's
//! condition (`spec.readinessGates`, which some other controller sets) is `True`; each
//! `False` with upstream's reason and message (`containers with unready status: [app]`,
//! `corresponding condition of pod readiness gate "x" does not exist.`). Conditions the kubelet
//! does not own (a readiness gate's, `DisruptionTarget`, `PodScheduled`) are kept as they are.
//!
//! Probes are never run (kube-sim runs no process): a container's probes pass at the first
//! probe that may succeed. A container with a `startupProbe` is `started` once its
//! `initialDelaySeconds` have passed since it started, and one with a `readinessProbe` is
//! `ready` once it is started and its `initialDelaySeconds` plus `successThreshold - 1` periods
//! have passed; until then it runs not ready, as on a node (the kubelet's readiness result starts
//! as failure). Liveness probes never fail. A Pod annotated
//! [`super::kubelet::UNREADY_ANNOTATION`]` = "true"` runs its containers not ready, as if their
//! readiness probes failed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use sim::api::ResourceExt;
use sim::world::{CRASH_LOOP_BACKOFF_INITIAL, CRASH_LOOP_BACKOFF_MAX};

use super::kubelet::{HOST_IP, UNREADY_ANNOTATION};
use super::{hashing, kubelet_resize, pod_state};

/// Where the kubelet-lite is with a Pod it runs, as its status shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Not taken on yet: no `startTime`.
    New,
    /// Taken on; the sandbox is being created.
    Accepted,
    /// The sandbox is up and init container `k` was the last started (those before it completed
    /// or, sidecars, run).
    Initializing(usize),
    /// The containers were started: phase `Running`, or a finished phase.
    Started,
}

/// The [`Stage`] `pod`'s status shows.
pub fn stage(pod: &Pod) -> Stage {
    if pod_state::phase(pod) != pod_state::PHASE_PENDING || has_config_error(pod) {
        return Stage::Started;
    }
    let Some(status) = pod.status.as_ref() else { return Stage::New };
    if status.start_time.is_none() {
        return Stage::New;
    }
    let sandbox = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "PodReadyToStartContainers" && c.status == "True");
    if !sandbox {
        return Stage::Accepted;
    }
    // A crash-looping init container waits between its runs, but has begun.
    let begun = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| !is_waiting(c) || backing_off(c).is_some())
        .count();
    match begun.checked_sub(1) {
        Some(k) => Stage::Initializing(k),
        None => Stage::Accepted,
    }
}

/// The stage after `stage` for `pod`: the first init container, the next one, or the containers.
pub fn next_stage(pod: &Pod, stage: Stage) -> Stage {
    let inits = init_containers(pod).len();
    match stage {
        Stage::New => Stage::Accepted,
        Stage::Accepted if inits > 0 => Stage::Initializing(0),
        Stage::Initializing(k) if k + 1 < inits => Stage::Initializing(k + 1),
        _ => Stage::Started,
    }
}

/// The Pod's init containers.
pub fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().and_then(|s| s.init_containers.as_deref()).unwrap_or_default()
}

/// The Pod's (regular) containers.
pub fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default()
}

/// Whether `container` is a sidecar: an init container with `restartPolicy: Always`
/// (`podutil.IsRestartableInitContainer`).
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

fn is_waiting(status: &ContainerStatus) -> bool {
    status.state.as_ref().is_none_or(|s| s.running.is_none() && s.terminated.is_none())
}

/// How the Pod's containers end once started: the kubelet-lite's script for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// They run (until deleted, or until [`Outcome::Succeeded`]).
    Run,
    /// They exited with this code and are not restarted (`restartPolicy: Never`): phase `Failed`.
    Failed(i32),
    /// They exited with this code, were restarted once and are backing off: `CrashLoopBackOff`.
    CrashLoop(i32),
    /// They all exited 0: phase `Succeeded`.
    Succeeded,
}

/// What the kubelet-lite runs one container as.
#[derive(Clone, Copy)]
enum Run {
    Waiting(&'static str),
    Running,
    Exited(i32, &'static str),
    CrashLoop(i32),
}

/// The status of `current` (the Pod as the server has it) at `stage`, the containers ending as
/// `outcome` says once started; `pod_ip` is the Pod's address once its sandbox is up.
pub fn status(current: &Pod, stage: Stage, outcome: Outcome, pod_ip: &str, now: Timestamp) -> PodStatus {
    status_blocked(current, stage, outcome, pod_ip, now, &BTreeMap::new())
}

/// The reason of a container the kubelet could not create for its configuration (a ConfigMap or
/// Secret its environment reads is missing: [`super::kubelet_sources::config_error`]).
pub const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";

/// Whether `status` is of a container never started: waiting to be created, or refused for its
/// configuration.
fn never_started(status: &ContainerStatus) -> bool {
    let reason = status.state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.as_deref());
    matches!(reason, Some("ContainerCreating" | "PodInitializing" | CREATE_CONTAINER_CONFIG_ERROR))
}

/// Whether `status` waits in [`CREATE_CONTAINER_CONFIG_ERROR`].
fn refused(status: &ContainerStatus) -> bool {
    let waiting = status.state.as_ref().and_then(|s| s.waiting.as_ref());
    waiting.and_then(|w| w.reason.as_deref()) == Some(CREATE_CONTAINER_CONFIG_ERROR)
}

fn main_statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default()
}

/// Whether one of `pod`'s (regular) containers waits in [`CREATE_CONTAINER_CONFIG_ERROR`].
pub fn has_config_error(pod: &Pod) -> bool {
    main_statuses(pod).iter().any(refused)
}

/// The (regular) containers of `pod` that wait in [`CREATE_CONTAINER_CONFIG_ERROR`].
pub fn refused_containers(pod: &Pod) -> BTreeSet<String> {
    main_statuses(pod).iter().filter(|s| refused(s)).map(|s| s.name.clone()).collect()
}

/// Whether one of `pod`'s init containers waits in [`CREATE_CONTAINER_CONFIG_ERROR`].
pub fn has_init_config_error(pod: &Pod) -> bool {
    let statuses = pod.status.as_ref().and_then(|s| s.init_container_statuses.as_deref()).unwrap_or_default();
    statuses.iter().any(refused)
}

/// The status of `current` when init container `k` is to start (`stage` is
/// [`Stage::Initializing`]`(k)`) but the kubelet could not create it for its configuration: as
/// at that stage, with container `k` waiting in [`CREATE_CONTAINER_CONFIG_ERROR`] with `error`
/// (`kubectl get pods` shows `Init:CreateContainerConfigError`). Its conditions are the stage's:
/// `k` is not complete either way.
pub fn init_refused(
    current: &Pod,
    k: usize,
    outcome: Outcome,
    pod_ip: &str,
    now: Timestamp,
    error: &str,
) -> PodStatus {
    let mut status = self::status(current, Stage::Initializing(k), outcome, pod_ip, now);
    if let Some(container) = status.init_container_statuses.as_mut().and_then(|s| s.get_mut(k)) {
        *container = ContainerStatus {
            name: container.name.clone(),
            image: container.image.clone(),
            started: Some(false),
            state: Some(waiting(CREATE_CONTAINER_CONFIG_ERROR, Some(error))),
            ..ContainerStatus::default()
        };
    }
    status
}

/// [`status`], where each container named in `config_errors` that has not started yet is not
/// created but waits in [`CREATE_CONTAINER_CONFIG_ERROR`] with its error; the Pod is `Running`
/// only if another of its containers is.
pub fn status_blocked(
    current: &Pod,
    stage: Stage,
    outcome: Outcome,
    pod_ip: &str,
    now: Timestamp,
    config_errors: &BTreeMap<String, String>,
) -> PodStatus {
    let none = PodStatus::default();
    let old = current.status.as_ref().unwrap_or(&none);
    let has_inits = !init_containers(current).is_empty();
    let waiting = if has_inits { "PodInitializing" } else { "ContainerCreating" };
    let unready = current.annotations().get(UNREADY_ANNOTATION).is_some_and(|v| v == "true");
    let fails_all = super::kubelet::fails_all(current);
    let fails_any = super::kubelet::fails(current);
    let init_statuses: Vec<ContainerStatus> = init_containers(current)
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let run = match stage {
                Stage::New | Stage::Accepted => Run::Waiting(waiting),
                Stage::Initializing(k) if j > k => Run::Waiting(waiting),
                Stage::Initializing(k) if j == k || is_sidecar(c) => Run::Running,
                Stage::Started if is_sidecar(c) => match outcome {
                    Outcome::Run | Outcome::CrashLoop(_) => Run::Running,
                    // Some containers failed, others run on: so do the sidecars.
                    Outcome::Failed(_) if !fails_all => Run::Running,
                    // A finished Pod's sidecars were stopped.
                    Outcome::Failed(_) | Outcome::Succeeded => Run::Exited(0, "Completed"),
                },
                Stage::Initializing(_) | Stage::Started => Run::Exited(0, "Completed"),
            };
            container_status(current, unready, old, true, c, run, now)
        })
        .collect();
    let main_run = match (stage, outcome) {
        (Stage::Started, Outcome::Run) => Run::Running,
        (Stage::Started, Outcome::Failed(code)) => Run::Exited(code, "Error"),
        (Stage::Started, Outcome::CrashLoop(code)) => Run::CrashLoop(code),
        (Stage::Started, Outcome::Succeeded) => Run::Exited(0, "Completed"),
        _ => Run::Waiting(waiting),
    };
    // A container the fail annotation does not name runs as in a Pod where none fails (and,
    // in a Pod whose failing containers are not restarted, completes with the Pod's run).
    let healthy_run = match (stage, outcome) {
        (Stage::Started, Outcome::Run | Outcome::CrashLoop(_) | Outcome::Failed(_)) => Run::Running,
        _ => main_run,
    };
    let run_of = |c: &Container| {
        if !fails_any || super::kubelet::fails_container(current, &c.name) { main_run } else { healthy_run }
    };
    let blocked = |c: &Container| {
        let error = config_errors.get(&c.name).filter(|_| stage == Stage::Started)?;
        previous(old, false, &c.name).is_none_or(never_started).then_some(error)
    };
    let main_statuses: Vec<ContainerStatus> = containers(current)
        .iter()
        .map(|c| match blocked(c) {
            Some(error) => ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
                started: Some(false),
                state: Some(self::waiting(CREATE_CONTAINER_CONFIG_ERROR, Some(error))),
                ..ContainerStatus::default()
            },
            None => container_status(current, unready, old, false, c, run_of(c), now),
        })
        .collect();
    let blocked_count = containers(current).iter().filter(|c| blocked(c).is_some()).count();
    let phase = match (stage, outcome) {
        // Not one container created: still Pending (`getPhase`).
        (Stage::Started, _) if blocked_count > 0 && blocked_count == containers(current).len() => {
            pod_state::PHASE_PENDING
        }
        (Stage::Started, Outcome::Run | Outcome::CrashLoop(_)) => pod_state::PHASE_RUNNING,
        (Stage::Started, _) if blocked_count > 0 => pod_state::PHASE_RUNNING,
        // `getPhase` for containers that are not restarted: Running while one runs, then Failed
        // if one failed, else Succeeded.
        (Stage::Started, Outcome::Failed(_) | Outcome::Succeeded) => {
            let exit = |s: &ContainerStatus| {
                s.state.as_ref().and_then(|st| st.terminated.as_ref()).map(|t| t.exit_code)
            };
            if main_statuses.iter().any(|s| exit(s).is_none()) {
                pod_state::PHASE_RUNNING
            } else if main_statuses.iter().any(|s| exit(s).is_some_and(|code| code != 0)) {
                pod_state::PHASE_FAILED
            } else {
                pod_state::PHASE_SUCCEEDED
            }
        }
        _ => pod_state::PHASE_PENDING,
    };
    let finished = matches!(phase, pod_state::PHASE_FAILED | pod_state::PHASE_SUCCEEDED);
    // Ephemeral containers run once the Pod's containers do, and until it ends.
    let ephemeral = if phase == pod_state::PHASE_RUNNING {
        let statuses: Vec<ContainerStatus> = ephemeral_containers(current)
            .map(|(name, image)| ephemeral_running(current, old, name, image, now))
            .collect();
        (!statuses.is_empty()).then_some(statuses)
    } else {
        old.ephemeral_container_statuses.clone()
    };
    let sandbox = !matches!(stage, Stage::New | Stage::Accepted) && !finished;
    let mut conditions = conditions(current, phase, sandbox, &init_statuses, &main_statuses, now);
    if finished {
        // A finished Pod is resized no more.
        let resize = [kubelet_resize::RESIZE_PENDING, kubelet_resize::RESIZE_IN_PROGRESS];
        conditions.retain(|c| !resize.contains(&c.type_.as_str()));
    }
    // Addresses: the host's once taken on, the Pod's once the sandbox is up; a finished Pod keeps
    // them, as the kubelet's status of a finished Pod does.
    let ip = (sandbox || finished).then(|| old.pod_ip.clone().unwrap_or_else(|| pod_ip.to_owned()));
    let mut status = PodStatus {
        phase: Some(phase.to_owned()),
        conditions: Some(conditions),
        host_ip: Some(HOST_IP.to_owned()),
        host_ips: Some(vec![HostIP { ip: HOST_IP.to_owned() }]),
        pod_ips: ip.clone().map(|ip| vec![PodIP { ip }]),
        pod_ip: ip,
        // The kubelet stamps startTime once, when it takes the Pod on.
        start_time: Some(old.start_time.clone().unwrap_or(Time(now))),
        init_container_statuses: has_inits.then_some(init_statuses),
        container_statuses: Some(main_statuses),
        ephemeral_container_statuses: ephemeral,
        qos_class: old.qos_class.clone(),
        ..PodStatus::default()
    };
    kubelet_resize::report_resources(current, &mut status);
    status
}

/// The status of `current` once the kubelet killed its containers because it is being deleted
/// (`syncTerminatingPod`, then `TerminatePod`): a running container terminated with exit code 137
/// (killed at the end of the grace period: kube-sim runs no process that would exit on SIGTERM),
/// one that never ran terminated as `ContainerStatusUnknown`, one that already ended as it was;
/// phase `Failed` (not every container succeeded), the sandbox gone.
pub fn killed(current: &Pod, now: Timestamp) -> PodStatus {
    killed_because(current, now, None)
}

/// [`killed`], with the Pod's `reason` and `message` when the kubelet itself ended it (its
/// `activeDeadlineSeconds` passed: `DeadlineExceeded`).
pub fn killed_because(current: &Pod, now: Timestamp, why: Option<(&str, &str)>) -> PodStatus {
    let old = current.status.clone().unwrap_or_default();
    let kill = |statuses: &Option<Vec<ContainerStatus>>| {
        statuses.as_ref().map(|statuses| {
            statuses
                .iter()
                .map(|s| {
                    let state = s.state.clone().unwrap_or_default();
                    if state.terminated.is_some() {
                        return s.clone();
                    }
                    let terminated = match state.running {
                        Some(running) => ContainerStateTerminated {
                            exit_code: 137,
                            reason: Some("Error".to_owned()),
                            started_at: running.started_at,
                            finished_at: Some(Time(now)),
                            container_id: s.container_id.clone(),
                            ..ContainerStateTerminated::default()
                        },
                        None => ContainerStateTerminated {
                            exit_code: 137,
                            reason: Some("ContainerStatusUnknown".to_owned()),
                            message: Some(
                                "The container could not be located when the pod was terminated".to_owned(),
                            ),
                            ..ContainerStateTerminated::default()
                        },
                    };
                    ContainerStatus {
                        ready: false,
                        started: Some(false),
                        state: Some(ContainerState {
                            terminated: Some(terminated),
                            ..ContainerState::default()
                        }),
                        ..s.clone()
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    let init_statuses = kill(&old.init_container_statuses);
    let main_statuses = kill(&old.container_statuses);
    let ephemeral_statuses = kill(&old.ephemeral_container_statuses);
    let phase = pod_state::PHASE_FAILED;
    let conditions = conditions(
        current,
        phase,
        false,
        init_statuses.as_deref().unwrap_or_default(),
        main_statuses.as_deref().unwrap_or_default(),
        now,
    );
    let (reason, message) = match why {
        Some((reason, message)) => (Some(reason.to_owned()), Some(message.to_owned())),
        None => (old.reason.clone(), old.message.clone()),
    };
    PodStatus {
        phase: Some(phase.to_owned()),
        conditions: Some(conditions),
        init_container_statuses: init_statuses,
        container_statuses: main_statuses,
        ephemeral_container_statuses: ephemeral_statuses,
        reason,
        message,
        ..old
    }
}

/// When the kubelet ends `pod` for its `activeDeadlineSeconds`, counted from its `startTime`
/// (`activeDeadlineHandler.pastActiveDeadline`).
pub fn active_deadline(pod: &Pod) -> Option<Timestamp> {
    let seconds = pod.spec.as_ref()?.active_deadline_seconds?;
    let start = pod.status.as_ref()?.start_time.as_ref()?.0;
    start.checked_add(SignedDuration::from_secs(seconds.max(0))).ok()
}

/// The earliest time after `now` at which a running container of `pod` becomes started or ready
/// (by their probes), if any is still waiting for its probes.
pub fn next_probe_due(pod: &Pod, now: Timestamp) -> Option<Timestamp> {
    let status = pod.status.as_ref()?;
    let statuses =
        status.init_container_statuses.iter().flatten().chain(status.container_statuses.iter().flatten());
    let unready = pod.annotations().get(UNREADY_ANNOTATION).is_some_and(|v| v == "true");
    let inits = init_containers(pod).iter().map(|c| (c, true));
    let spec = inits.chain(containers(pod).iter().map(|c| (c, false)));
    let mut due: Option<Timestamp> = None;
    for s in statuses {
        let Some(since) = running_since(s) else { continue };
        let Some((container, init)) = spec.clone().find(|(c, _)| c.name == s.name) else { continue };
        let (started, ready) = probe_due(container, since);
        let pending = [(s.started != Some(true), started), (!s.ready && (init || !unready), ready)];
        for (waiting, at) in pending {
            if waiting && due.is_none_or(|d| at < d) {
                due = Some(at);
            }
        }
    }
    due.map(|d| d.max(now))
}

/// Whether the kubelet's view of `current` (its containers' `started`, `ready`, restart counts and
/// waiting reasons, and the
/// conditions it owns, with their reasons and messages) differs from what `next` says: a write
/// is due.
pub fn differs(current: &Pod, next: &PodStatus) -> bool {
    type Flags<'a> = (&'a str, bool, Option<bool>, i32, Option<(Option<&'a str>, Option<&'a str>)>);
    fn flags(s: &PodStatus) -> impl Iterator<Item = Flags<'_>> {
        let containers = s
            .init_container_statuses
            .iter()
            .flatten()
            .chain(s.container_statuses.iter().flatten())
            .chain(s.ephemeral_container_statuses.iter().flatten());
        containers.map(|c| {
            let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
            let why = waiting.map(|w| (w.reason.as_deref(), w.message.as_deref()));
            (c.name.as_str(), c.ready, c.started, c.restart_count, why)
        })
    }
    fn conditions(s: &PodStatus) -> impl Iterator<Item = (&str, &str, Option<&str>, Option<&str>)> {
        let conditions = s.conditions.iter().flatten();
        conditions.map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref(), c.message.as_deref()))
    }
    current.status.as_ref().is_none_or(|s| {
        s.phase != next.phase || !flags(s).eq(flags(next)) || !conditions(s).eq(conditions(next))
    })
}

/// When a container running since `since` is started and ready, by its probes.
fn probe_due(container: &Container, since: Timestamp) -> (Timestamp, Timestamp) {
    let after = |probe: Option<&Probe>, from: Timestamp| {
        let Some(p) = probe else { return from };
        let delay = i64::from(p.initial_delay_seconds.unwrap_or(0).max(0));
        let more = i64::from(p.success_threshold.unwrap_or(1).max(1) - 1)
            * i64::from(p.period_seconds.unwrap_or(10).max(1));
        from.checked_add(SignedDuration::from_secs(delay + more)).unwrap_or(from)
    };
    let started = after(container.startup_probe.as_ref(), since);
    let ready = after(container.readiness_probe.as_ref(), since).max(started);
    (started, ready)
}

fn running_since(status: &ContainerStatus) -> Option<Timestamp> {
    Some(status.state.as_ref()?.running.as_ref()?.started_at.as_ref()?.0)
}

fn previous<'a>(old: &'a PodStatus, init: bool, name: &str) -> Option<&'a ContainerStatus> {
    let list = if init { &old.init_container_statuses } else { &old.container_statuses };
    list.iter().flatten().find(|c| c.name == name)
}

/// A container's status: its state, and what a container runtime reports of each instance (and
/// `kubectl logs` reads, `model_apiserver_http::logs`): the `containerID` of each instance that
/// ran (from the Pod's uid, the container and its restart count, the same on every replay), when
/// it started (kept from the status before while it runs) and when it finished.
fn container_status(
    pod: &Pod,
    unready: bool,
    old: &PodStatus,
    init: bool,
    c: &Container,
    run: Run,
    now: Timestamp,
) -> ContainerStatus {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let before = previous(old, init, &c.name);
    let since = before.and_then(running_since);
    let base = ContainerStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        image_id: String::new(),
        ..ContainerStatus::default()
    };
    match run {
        // A crash-looping init container stays so between its restarts ([`init_crashed`]).
        Run::Running if init && before.is_some_and(|b| backing_off(b).is_some() || exits_at(b).is_some()) => {
            before.cloned().unwrap_or(base)
        }
        Run::Waiting(reason) => {
            ContainerStatus { started: Some(false), state: Some(waiting(reason, None)), ..base }
        }
        Run::Running => {
            // A regular init container is ready only once it completed; the unready annotation
            // fails the (regular) containers' readiness probes.
            let may_be_ready = if init { is_sidecar(c) } else { !unready };
            // Started now: its readiness starts as failure, and a startup probe has not passed.
            let (started, ready) = match since {
                Some(since) => {
                    let (started, ready) = probe_due(c, since);
                    (started <= now, ready <= now)
                }
                None => (c.startup_probe.is_none(), c.startup_probe.is_none() && c.readiness_probe.is_none()),
            };
            let state = ContainerState {
                running: Some(ContainerStateRunning { started_at: Some(Time(since.unwrap_or(now))) }),
                ..ContainerState::default()
            };
            // The same instance keeps its id, restarts and last run (a resize may have restarted
            // it, [`super::kubelet_resize`]).
            let same = before.filter(|_| since.is_some());
            ContainerStatus {
                ready: ready && started && may_be_ready,
                started: Some(started),
                container_id: same
                    .and_then(|b| b.container_id.clone())
                    .or_else(|| Some(container_id(uid, &c.name, 0))),
                restart_count: same.map_or(0, |b| b.restart_count),
                last_state: same.and_then(|b| b.last_state.clone()),
                state: Some(state),
                ..base
            }
        }
        // One that ended already stays as it ended.
        Run::Exited(..)
            if before.is_some_and(|b| b.state.as_ref().is_some_and(|s| s.terminated.is_some())) =>
        {
            before.cloned().unwrap_or(base)
        }
        Run::Exited(exit_code, reason) => {
            let id = container_id(uid, &c.name, before.map_or(0, |b| b.restart_count));
            let terminated = ContainerStateTerminated {
                exit_code,
                reason: Some(reason.to_owned()),
                started_at: Some(Time(since.unwrap_or(now))),
                finished_at: Some(Time(now)),
                container_id: Some(id.clone()),
                ..ContainerStateTerminated::default()
            };
            ContainerStatus {
                // A regular init container that completed counts as ready (what `Initialized`
                // reads).
                ready: init && !is_sidecar(c) && exit_code == 0,
                started: Some(false),
                // One that crash-looped before keeps its restarts and its last failed run.
                restart_count: before.map_or(0, |b| b.restart_count),
                last_state: before.and_then(|b| b.last_state.clone()),
                container_id: Some(id),
                state: Some(ContainerState { terminated: Some(terminated), ..ContainerState::default() }),
                ..base
            }
        }
        // Backing off already: it stays so until its restart ([`restarted`]).
        Run::CrashLoop(_) if before.is_some_and(|b| backing_off(b).is_some() || exits_at(b).is_some()) => {
            before.cloned().unwrap_or(base)
        }
        Run::CrashLoop(exit_code) => {
            // It exited, was restarted at once (the first restart has no back-off), exited again
            // and now backs off: what `kubectl get pods` shows as CrashLoopBackOff.
            crashed(pod, base, 1, exit_code, now)
        }
    }
}

/// The Pod's ephemeral containers (`kubectl debug`'s), by name and image.
pub fn ephemeral_containers(pod: &Pod) -> impl Iterator<Item = (&str, &str)> {
    let list = pod.spec.as_ref().and_then(|s| s.ephemeral_containers.as_deref()).unwrap_or_default();
    list.iter().map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default()))
}

/// The names of the ephemeral containers `pod`'s status shows running.
pub fn running_ephemeral(pod: &Pod) -> BTreeSet<String> {
    let statuses = pod.status.as_ref().and_then(|s| s.ephemeral_container_statuses.as_deref());
    let running =
        statuses.into_iter().flatten().filter(|s| s.state.as_ref().is_some_and(|s| s.running.is_some()));
    running.map(|s| s.name.clone()).collect()
}

/// An ephemeral container's status in a running Pod: started when the kubelet first saw it, and
/// running since (kube-sim runs no process that would exit); never ready, as the kubelet reports
/// ephemeral containers (no probes).
fn ephemeral_running(pod: &Pod, old: &PodStatus, name: &str, image: &str, now: Timestamp) -> ContainerStatus {
    let before = old.ephemeral_container_statuses.iter().flatten().find(|s| s.name == name);
    if let Some(before) =
        before.filter(|b| b.state.as_ref().is_some_and(|s| s.running.is_some() || s.terminated.is_some()))
    {
        return before.clone();
    }
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    ContainerStatus {
        name: name.to_owned(),
        image: image.to_owned(),
        started: Some(true),
        container_id: Some(container_id(uid, name, 0)),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning { started_at: Some(Time(now)) }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }
}

fn waiting(reason: &str, message: Option<&str>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_owned()),
            message: message.map(str::to_owned),
        }),
        ..ContainerState::default()
    }
}

/// The reason of a container backing off before its next restart.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";

/// How the kubelet names a Pod in its messages (`format.Pod`): `name_namespace(uid)`.
pub fn pod_description(pod: &Pod) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    format!("{}_{}({uid})", pod.name_any(), pod.namespace().unwrap_or_default())
}

/// The kubelet's back-off before the next restart of a container restarted `restarts` times
/// (`doBackOff`: the first restart comes at once, the second after
/// [`sim::world::CRASH_LOOP_BACKOFF_INITIAL`], each later one after twice the one before, at most
/// [`sim::world::CRASH_LOOP_BACKOFF_MAX`]).
pub fn crash_loop_backoff(restarts: i32) -> Duration {
    let doublings = u32::try_from(restarts.saturating_sub(1)).unwrap_or(0).min(16);
    CRASH_LOOP_BACKOFF_INITIAL.saturating_mul(1 << doublings).min(CRASH_LOOP_BACKOFF_MAX)
}

/// Go's `time.Duration.String` of a whole number of seconds under an hour (`10s`, `1m20s`,
/// `5m0s`), as the back-off message prints it.
fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 { format!("{secs}s") } else { format!("{}m{}s", secs / 60, secs % 60) }
}

/// `base` (a container of `pod`) after its run number `restarts` (counting from 0) exited with
/// `exit_code` at `now`: restarted `restarts` times, its last run terminated (`Error`), waiting
/// in `CrashLoopBackOff` with the kubelet's message, which names the back-off.
fn crashed(
    pod: &Pod,
    base: ContainerStatus,
    restarts: i32,
    exit_code: i32,
    now: Timestamp,
) -> ContainerStatus {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let id = container_id(uid, &base.name, restarts.saturating_sub(1));
    let last = ContainerStateTerminated {
        exit_code,
        reason: Some("Error".to_owned()),
        started_at: Some(Time(now)),
        finished_at: Some(Time(now)),
        container_id: Some(id.clone()),
        ..ContainerStateTerminated::default()
    };
    let message = format!(
        "back-off {} restarting failed container={} pod={}",
        go_duration(crash_loop_backoff(restarts)),
        base.name,
        pod_description(pod)
    );
    ContainerStatus {
        restart_count: restarts,
        ready: false,
        started: Some(false),
        container_id: Some(id),
        last_state: Some(ContainerState { terminated: Some(last), ..ContainerState::default() }),
        state: Some(waiting(CRASH_LOOP_BACK_OFF, Some(&message))),
        ..base
    }
}

/// When a container backing off in `CrashLoopBackOff` is restarted: its last run's finish plus
/// its back-off ([`crash_loop_backoff`]); `None` for a container not backing off.
fn backing_off(status: &ContainerStatus) -> Option<Timestamp> {
    let state = status.state.as_ref()?;
    if state.waiting.as_ref()?.reason.as_deref() != Some(CRASH_LOOP_BACK_OFF) {
        return None;
    }
    let finished = status.last_state.as_ref()?.terminated.as_ref()?.finished_at.as_ref()?.0;
    let backoff = SignedDuration::try_from(crash_loop_backoff(status.restart_count)).ok()?;
    finished.checked_add(backoff).ok()
}

/// When the kubelet next restarts one of `pod`'s crash-looping containers (init containers
/// too), if any backs off.
pub fn next_restart(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref()?;
    let statuses =
        status.init_container_statuses.iter().flatten().chain(status.container_statuses.iter().flatten());
    statuses.filter_map(backing_off).min()
}

/// How long a restarted failing container runs before it exits again.
pub const CRASH_RUN: Duration = Duration::from_secs(1);

/// When a restarted failing container that runs exits again ([`CRASH_RUN`] after it started);
/// `None` for a container not in that state (its first run is the kubelet-lite's start, not a
/// restart).
fn exits_at(status: &ContainerStatus) -> Option<Timestamp> {
    if status.restart_count == 0 {
        return None;
    }
    let since = running_since(status)?;
    since.checked_add(SignedDuration::try_from(CRASH_RUN).ok()?).ok()
}

/// When the kubelet next moves one of `pod`'s crash-looping containers on: a restart at the end
/// of its back-off, or the exit of a restarted one.
pub fn next_crash_step(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref()?;
    let statuses =
        status.init_container_statuses.iter().flatten().chain(status.container_statuses.iter().flatten());
    statuses.filter_map(|s| backing_off(s).or_else(|| exits_at(s))).min()
}

/// A crash-looping container restarted at `now` by the kubelet: running, one restart more, its
/// last state still the run before; started unless a startup probe must pass first, and ready
/// if nothing holds it unready (a readiness or startup probe, the unready annotation, or being
/// a regular init container), as a failing process that has not exited yet is on a node.
fn rerun(pod: &Pod, s: &ContainerStatus, init: bool, now: Timestamp) -> ContainerStatus {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let list = if init { init_containers(pod) } else { containers(pod) };
    let spec = list.iter().find(|c| c.name == s.name);
    let startup = spec.is_some_and(|c| c.startup_probe.is_some());
    let readiness = spec.is_some_and(|c| c.readiness_probe.is_some());
    let unready = pod.annotations().get(UNREADY_ANNOTATION).is_some_and(|v| v == "true");
    let may_be_ready = if init { spec.is_some_and(is_sidecar) } else { !unready };
    let restarts = s.restart_count.saturating_add(1);
    ContainerStatus {
        restart_count: restarts,
        ready: may_be_ready && !startup && !readiness,
        started: Some(!startup),
        container_id: Some(container_id(uid, &s.name, restarts)),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning { started_at: Some(Time(now)) }),
            ..ContainerState::default()
        }),
        ..s.clone()
    }
}

/// A restarted failing container that exited at `now` with its last exit code: waiting in
/// `CrashLoopBackOff` with the back-off its restart count gives, its last state this run.
fn exited(pod: &Pod, s: &ContainerStatus, now: Timestamp) -> ContainerStatus {
    let exit_code = s.last_state.as_ref().and_then(|l| l.terminated.as_ref()).map_or(1, |t| t.exit_code);
    let last = ContainerStateTerminated {
        exit_code,
        reason: Some("Error".to_owned()),
        started_at: running_since(s).map(Time),
        finished_at: Some(Time(now)),
        container_id: s.container_id.clone(),
        ..ContainerStateTerminated::default()
    };
    let message = format!(
        "back-off {} restarting failed container={} pod={}",
        go_duration(crash_loop_backoff(s.restart_count)),
        s.name,
        pod_description(pod)
    );
    ContainerStatus {
        ready: false,
        started: Some(false),
        last_state: Some(ContainerState { terminated: Some(last), ..ContainerState::default() }),
        state: Some(waiting(CRASH_LOOP_BACK_OFF, Some(&message))),
        ..s.clone()
    }
}

/// The status of `current` once each crash-looping container whose back-off has ended by `now`
/// was restarted (running again, one restart more) and each restarted one whose run has ended
/// exited again (back in `CrashLoopBackOff`, its back-off doubled); the
/// Pod's conditions follow (a container without probes is ready while it runs).
pub fn restarted(current: &Pod, now: Timestamp) -> PodStatus {
    let old = current.status.clone().unwrap_or_default();
    let step = |statuses: &Option<Vec<ContainerStatus>>, init: bool| {
        statuses.as_ref().map(|statuses| {
            statuses
                .iter()
                .map(|s| match (exits_at(s), backing_off(s)) {
                    (Some(exit), _) if exit <= now => exited(current, s, now),
                    (_, Some(due)) if due <= now => rerun(current, s, init, now),
                    _ => s.clone(),
                })
                .collect::<Vec<_>>()
        })
    };
    let init_container_statuses = step(&old.init_container_statuses, true);
    let container_statuses = step(&old.container_statuses, false);
    let phase = old.phase.clone().unwrap_or_else(|| pod_state::PHASE_PENDING.to_owned());
    let conditions = conditions(
        current,
        &phase,
        true,
        init_container_statuses.as_deref().unwrap_or_default(),
        container_statuses.as_deref().unwrap_or_default(),
        now,
    );
    PodStatus { init_container_statuses, container_statuses, conditions: Some(conditions), ..old }
}

/// The status of `current` when its init container `k` (which runs: `stage` is
/// [`Stage::Initializing`]`(k)`) has just exited with `exit_code`, and the Pod's
/// `restartPolicy` is `Never`: `k` terminated (`Error`), the containers after it never created,
/// phase `Failed` (what `kubectl get pods` shows as `Init:Error`).
pub fn init_failed(current: &Pod, k: usize, exit_code: i32, pod_ip: &str, now: Timestamp) -> PodStatus {
    let mut status = self::status(current, Stage::Initializing(k), Outcome::Run, pod_ip, now);
    let none = PodStatus::default();
    let old = current.status.as_ref().unwrap_or(&none);
    let unready = current.annotations().get(UNREADY_ANNOTATION).is_some_and(|v| v == "true");
    if let (Some(container), Some(statuses)) =
        (init_containers(current).get(k), status.init_container_statuses.as_mut())
        && let Some(slot) = statuses.get_mut(k)
    {
        *slot =
            container_status(current, unready, old, true, container, Run::Exited(exit_code, "Error"), now);
    }
    let phase = pod_state::PHASE_FAILED;
    let init_statuses = status.init_container_statuses.clone().unwrap_or_default();
    let main_statuses = status.container_statuses.clone().unwrap_or_default();
    status.conditions = Some(conditions(current, phase, false, &init_statuses, &main_statuses, now));
    status.phase = Some(phase.to_owned());
    status
}

/// The status of `current` when its init container `k` has just exited with `exit_code` and the
/// Pod's `restartPolicy` restarts it: as a failing container's, restarted at once, exited again,
/// and backing off (`Init:CrashLoopBackOff`); the Pod stays `Pending`, and its restarts go on as
/// [`restarted`] has them.
pub fn init_crashed(current: &Pod, k: usize, exit_code: i32, pod_ip: &str, now: Timestamp) -> PodStatus {
    let mut status = self::status(current, Stage::Initializing(k), Outcome::Run, pod_ip, now);
    if let Some(slot) = status.init_container_statuses.as_mut().and_then(|s| s.get_mut(k)) {
        let base = ContainerStatus {
            name: slot.name.clone(),
            image: slot.image.clone(),
            ..ContainerStatus::default()
        };
        *slot = crashed(current, base, 1, exit_code, now);
    }
    status
}

pub(crate) fn container_id(uid: &str, name: &str, restart: i32) -> String {
    let key = format!("{uid}/{name}/{restart}");
    format!("containerd://{:016x}", hashing::fnv64(key.as_bytes()))
}

/// The conditions of a Pod whose containers are as `init` and `main` say, in the order the
/// kubelet writes them: the conditions it does not own (a readiness gate's, `DisruptionTarget`)
/// kept first, then `PodReadyToStartContainers`, `Initialized`, `Ready`, `ContainersReady`, and
/// the scheduler's `PodScheduled` kept last.
fn conditions(
    current: &Pod,
    phase: &str,
    sandbox: bool,
    init: &[ContainerStatus],
    main: &[ContainerStatus],
    now: Timestamp,
) -> Vec<PodCondition> {
    const OWNED: [&str; 5] =
        ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
    let old = current.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let spec_inits = init_containers(current);
    let status_of = |name: &str| init.iter().chain(main).find(|s| s.name == name);
    let finished = matches!(phase, pod_state::PHASE_FAILED | pod_state::PHASE_SUCCEEDED);
    let terminal_reason = match phase {
        pod_state::PHASE_FAILED => Some("PodFailed"),
        pod_state::PHASE_SUCCEEDED => Some("PodCompleted"),
        _ => None,
    };

    // Initialized (GeneratePodInitializedCondition).
    let any_started = main
        .iter()
        .any(|s| s.state.as_ref().is_some_and(|st| st.running.is_some() || st.terminated.is_some()));
    let incomplete: Vec<&str> = spec_inits
        .iter()
        .filter(|c| {
            status_of(&c.name).is_none_or(|s| if is_sidecar(c) { s.started != Some(true) } else { !s.ready })
        })
        .map(|c| c.name.as_str())
        .collect();
    let initialized = if phase == pod_state::PHASE_SUCCEEDED {
        (true, Some("PodCompleted".to_owned()), None)
    } else if any_started || incomplete.is_empty() {
        (true, None, None)
    } else {
        let message = format!("containers with incomplete status: {}", go_list(&incomplete));
        (false, Some("ContainersNotInitialized".to_owned()), Some(message))
    };

    // ContainersReady and Ready (GenerateContainersReadyCondition, GeneratePodReadyCondition).
    let unready: Vec<&str> = spec_inits
        .iter()
        .filter(|c| is_sidecar(c))
        .chain(containers(current))
        .filter(|c| status_of(&c.name).is_none_or(|s| !s.ready))
        .map(|c| c.name.as_str())
        .collect();
    let containers_ready = if finished {
        (false, terminal_reason.map(str::to_owned), None)
    } else if unready.is_empty() {
        (true, None, None)
    } else {
        let message = format!("containers with unready status: {}", go_list(&unready));
        (false, Some("ContainersNotReady".to_owned()), Some(message))
    };
    let gates = current.spec.as_ref().and_then(|s| s.readiness_gates.as_deref()).unwrap_or_default();
    let gate_messages: Vec<String> = gates
        .iter()
        .filter_map(|g| match old.iter().find(|c| c.type_ == g.condition_type) {
            None => Some(format!(
                "corresponding condition of pod readiness gate {:?} does not exist.",
                g.condition_type
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate {:?} is not \"True\", but {}",
                g.condition_type, c.status
            )),
            Some(_) => None,
        })
        .collect();
    let ready = if !containers_ready.0 || gate_messages.is_empty() {
        containers_ready.clone()
    } else {
        (false, Some("ReadinessGatesNotReady".to_owned()), Some(gate_messages.join(", ")))
    };

    let mut out: Vec<PodCondition> =
        old.iter().filter(|c| !OWNED.contains(&c.type_.as_str())).cloned().collect();
    let generated = [
        ("PodReadyToStartContainers", (sandbox, None, None)),
        ("Initialized", initialized),
        ("Ready", ready),
        ("ContainersReady", containers_ready),
    ];
    for (type_, (status, reason, message)) in generated {
        out.push(condition(old, type_, status, reason, message, now));
    }
    out.push(match old.iter().find(|c| c.type_ == "PodScheduled") {
        Some(scheduled) => scheduled.clone(),
        None => condition(old, "PodScheduled", true, None, None, now),
    });
    out
}

/// Go's `%s` of a `[]string`: `[a b]`.
fn go_list(names: &[&str]) -> String {
    format!("[{}]", names.join(" "))
}

/// Condition `type_` now: its `lastTransitionTime` is kept from the current condition of that
/// type if its status did not change, and is now otherwise.
pub fn condition(
    old: &[PodCondition],
    type_: &str,
    status: bool,
    reason: Option<String>,
    message: Option<String>,
    now: Timestamp,
) -> PodCondition {
    let status = if status { "True" } else { "False" }.to_owned();
    let previous = old
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .and_then(|c| c.last_transition_time.clone());
    PodCondition {
        type_: type_.to_owned(),
        status,
        reason,
        message,
        last_transition_time: Some(previous.unwrap_or(Time(now))),
        ..PodCondition::default()
    }
}
