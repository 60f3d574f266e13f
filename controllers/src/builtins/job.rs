//! The Job controller (basic): runs Pods until `completions` of them succeed, at most
//! `parallelism` at a time, and gives up after more than `backoffLimit` failed Pods, as
//! kube-controller-manager's `JobController`, in both completion modes (NonIndexed and Indexed).
//!
//! - Pods are read from the controller's Pod informer cache, as upstream reads its Pod lister, and
//!   belong to the Job by controller reference; the create and delete step waits on
//!   [`expectations`](super::expectations) as upstream's does (a sync that runs before the cache
//!   shows the Pods the previous one created or deleted writes the status only), and syncs start
//!   once the cache has its first list. Pods get `generateName: <job>-` (NonIndexed) and the
//!   labels a real API server adds to a Job's template (`batch.kubernetes.io/controller-uid`,
//!   `batch.kubernetes.io/job-name` and their legacy forms).
//! - Without `completions`, the Job is complete once one Pod succeeded and none is active (the
//!   work-queue pattern); `parallelism` defaults to 1 and `backoffLimit` to 6.
//! - `completionMode: Indexed` ([`super::indexed_job`]): each Pod holds a completion index in
//!   0..`completions`, as the annotation and label `batch.kubernetes.io/job-completion-index`,
//!   with `spec.hostname` `<job>-<index>` (the template's `subdomain` kept), the
//!   `JOB_COMPLETION_INDEX` variable in every container from that label through the downward API,
//!   and the name `<job>-<index>-<random>`. Missing indexes get one Pod each, lowest first, at
//!   most `parallelism` at a time; a succeeded Pod completes its index, `status.completedIndexes`
//!   lists the completed ones in upstream's interval form ("0-2,4") and `status.succeeded` counts
//!   them; the Job is Complete once every index is. A failed Pod counts against `backoffLimit`
//!   (and its failure backoff) as in NonIndexed mode, and its index gets a new Pod. Active Pods
//!   without a valid index (none, or not below `completions`) are deleted, and so are all but
//!   one of those sharing an index, before anything is created (upstream's
//!   `activePodsForRemoval`); Pods without a valid index are not counted.
//! - A Job that met its completions gets the interim condition `SuccessCriteriaMet`
//!   (`CompletionsReached`), one that gives up `FailureTarget` (`BackoffLimitExceeded`,
//!   `DeadlineExceeded`, `PodFailurePolicy`) once it could delete all its active Pods; the final
//!   `Complete` or `Failed` (same reason and message, with `completionTime` for `Complete`, the
//!   `Completed` event or the Warning) follows once no Pod of it is terminating, as upstream's
//!   `delayTerminalCondition` (on since 1.29 with `JobPodReplacementPolicy`). A Job is finished
//!   only with the final condition; the interim one decides every later sync.
//!   `status.terminating` counts the Pods being deleted, those deleted by the sync included.
//! - `podFailurePolicy` (upstream's `matchPodFailurePolicy`): each failed Pod is matched against
//!   the rules in order, on its containers' (then init containers') non-zero exit codes (`In` or
//!   `NotIn` the values, of the named container or any) or on its conditions (type and status);
//!   an `Ignore` rule's Pods count nowhere (not in `failed`, `backoffLimit` or the failure
//!   backoff), a `FailJob` rule's first Pod (in name order) fails the Job at once with reason
//!   `PodFailurePolicy` and upstream's message (`Container c for pod ns/p failed with exit code 42
//!   matching FailJob rule at index 1`, `Pod ns/p has condition DisruptionTarget matching ...`),
//!   `Count` (and `FailIndex`, without the per-index backoff) counts as without a policy. The
//!   kubelet-lite's [`EXIT_CODE_ANNOTATION`](super::kubelet::EXIT_CODE_ANNOTATION) sets the exit
//!   code a failing Pod reports.
//! - After a failed Pod the next one waits out upstream's Pod-failure backoff: 10 s, doubled for
//!   each failure since the last success, at most 10 minutes ([`POD_FAILURE_BACKOFF`]). A failed
//!   sync is retried after 1 s doubling to 60 s, the Job controller's own queue
//!   ([`super::rate_limit`]). Not modelled: the 1 s batching of Pod events into one sync.
//! - `suspend: true` deletes the active Pods and creates none, with the condition `Suspended`
//!   True (`JobSuspended`, a `Suspended` event); resuming sets it False (`JobResumed`, a
//!   `Resumed` event) and starts `startTime` again. A Job created suspended has no `startTime`
//!   until it is resumed.
//! - `activeDeadlineSeconds`: once the Job has been active (not suspended) that long since its
//!   `startTime`, it fails (`DeadlineExceeded`, "Job was active longer than specified deadline",
//!   a Warning of that reason) and its active Pods are deleted; it is synced again when the
//!   deadline comes.
//! - Status: `active`, `ready`, `succeeded`, `failed`, `conditions`, `startTime` and
//!   `completionTime` (on the virtual clock, `sim::time`), `completedIndexes`. Not modelled: Pod
//!   tracking finalizers (a failed Pod deleted before a sync saw it is not counted), success
//!   policies, `podReplacementPolicy: Failed`, the
//!   per-index backoff of Indexed Jobs (`backoffLimitPerIndex`, `maxFailedIndexes`,
//!   `status.failedIndexes`, the `job-index-failure-count` annotation: such a Job runs as one
//!   without them, under `backoffLimit`, which the API server defaults to 2147483647 for it).
//! - Events: `SuccessfulCreate` ("Created pod: x"), `SuccessfulDelete` ("Deleted pod: x"), the
//!   Warnings `FailedCreate` / `FailedDelete` ([`super::pod_control`]), `Completed` ("Job
//!   completed"), the Warnings `BackoffLimitExceeded` and `DeadlineExceeded`, and `Suspended` /
//!   `Resumed`, as upstream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use sim::api::{Api, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::Store;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::Error;
use super::expectations::{Expectations, Wait};
use super::pod_control::{self, Created};
use super::rate_limit::{JOB_MAX_DELAY, RateLimiter, RunRateLimited, SLOW_BASE_DELAY};
use super::templates::{PodName, pod_from_template};
use super::{events, indexed_job, owners, pod_state};

/// The Job controller's node.
pub const NODE: &str = "job-controller";
/// `spec.completionMode` of a Job whose Pods each get a completion index.
pub const INDEXED: &str = "Indexed";
/// `backoffLimit` when unset.
pub const BACKOFF_LIMIT_DEFAULT: i32 = 6;
/// At most this many Pods are created or deleted in one sync (the real `MaxPodCreateDeletePerSync`).
pub const POD_WRITES_PER_SYNC_MAX: usize = 500;
/// How long the Job waits after a failed Pod before it creates another, doubled at each failure
/// since its last success (`DefaultJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest that wait gets (`MaxJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF_MAX: Duration = Duration::from_secs(600);

/// Add the Job controller to a world, on node [`NODE`].
pub fn job_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: super::events::Recorder,
    /// The Pod informer's cache, which syncs read.
    pods: Store<Pod>,
    /// What earlier syncs created and deleted that `pods` may not show yet.
    expectations: Expectations,
}

/// The Job controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let Some((pods, pod_changes)) = super::synced_cache::<Pod>(&client).await else { return };
    let controller = Controller::new(Api::<Job>::all(client.clone()), watcher::Config::default());
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, NODE),
        client,
        pods,
        expectations: Expectations::default(),
    });
    controller
        .owns_shared_stream(pod_changes)
        .run_limited_by(
            RateLimiter::new(JOB_MAX_DELAY).starting_at(SLOW_BASE_DELAY).without_bucket(),
            reconcile,
            ctx,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Whether the Job has a `Complete` or `Failed` condition that is `True`.
pub fn is_finished(job: &Job) -> bool {
    job.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
        conditions.iter().any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
    })
}

fn condition(type_: &str, reason: &str, message: &str) -> JobCondition {
    let now = sim::time::now_k8s();
    JobCondition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// Sync one Job.
pub async fn reconcile(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = job.name_any();
    let namespace = job.namespace().ok_or(Error::MissingNamespace { kind: "Job", name: name.clone() })?;
    if job.metadata.deletion_timestamp.is_some() || is_finished(&job) {
        return Ok(Action::await_change());
    }
    let spec = job.spec.clone().unwrap_or_default();
    let uid = job.uid().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let wait = ctx.expectations.check(&uid, &namespace, &ctx.pods, sim::time::now());
    let pods = ctx.pods.state_filter(|p| {
        p.metadata.namespace.as_deref() == Some(namespace.as_str())
            && owners::is_controlled_by(&p.metadata, &uid)
    });
    // An Indexed Job counts only the Pods of an index below `completions` (upstream's
    // `getValidPodsWithFilter`); validation makes an Indexed Job set `completions`.
    let indexed = spec.completion_mode.as_deref() == Some(INDEXED);
    let completions_indexed = spec.completions.filter(|_| indexed).unwrap_or(0).max(0);
    let counted: Vec<Arc<Pod>> = if indexed {
        pods.iter().filter(|p| indexed_job::has_valid_index(p, completions_indexed)).cloned().collect()
    } else {
        pods.clone()
    };
    // The pod failure policy: a failed Pod an `Ignore` rule matches counts nowhere (neither
    // `failed`, `backoffLimit` nor the failure backoff); the first a `FailJob` rule matches, in
    // name order, fails the Job.
    let mut fail_job: Option<String> = None;
    let counted: Vec<Arc<Pod>> = match &spec.pod_failure_policy {
        None => counted,
        Some(policy) => {
            let mut kept = Vec::with_capacity(counted.len());
            for pod in counted {
                if pod_state::phase(&pod) == pod_state::PHASE_FAILED {
                    match failure_policy_action(policy, &pod) {
                        PolicyAction::Ignore => continue,
                        PolicyAction::FailJob(message) if fail_job.is_none() => fail_job = Some(message),
                        _ => {}
                    }
                }
                kept.push(pod);
            }
            kept
        }
    };
    let count = |f: fn(&Pod) -> bool| i32::try_from(pods.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX);
    let count_counted =
        |f: fn(&Pod) -> bool| i32::try_from(counted.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX);
    let previous = job.status.clone().unwrap_or_default();
    // Indexed: the completed indexes, those the status records and those of succeeded Pods; the
    // Job's `succeeded` is their number (upstream's `calculateSucceededIndexes`).
    let completed_indexes = indexed.then(|| {
        indexed_job::succeeded_indexes(
            previous.completed_indexes.as_deref(),
            pods.iter().map(|p| &**p),
            completions_indexed,
        )
    });
    let succeeded = match &completed_indexes {
        Some(indexes) => indexes.total(),
        None => count(|p| pod_state::phase(p) == pod_state::PHASE_SUCCEEDED),
    };
    let failed = count_counted(|p| pod_state::phase(p) == pod_state::PHASE_FAILED);
    let mut active: Vec<&Pod> = pods.iter().map(|p| &**p).filter(|p| pod_state::is_active(p)).collect();
    let parallelism = spec.parallelism.unwrap_or(1).max(0);
    let interim = |type_: &str| {
        previous.conditions.iter().flatten().find(|c| c.type_ == type_ && c.status == "True").cloned()
    };
    // An interim condition an earlier sync wrote decides (upstream's `finishedCondition`):
    // `SuccessCriteriaMet`, then `FailureTarget`.
    let success_met = interim(SUCCESS_CRITERIA_MET).is_some();
    let failure_target = interim(FAILURE_TARGET).filter(|_| !success_met);
    let now = sim::time::now();
    let suspended = spec.suspend == Some(true);
    // Started when first not suspended (upstream sets `startTime` only then); resuming starts it
    // again below, so that `activeDeadlineSeconds` counts continuous activity.
    let mut start_time = previous.start_time.clone().or_else(|| (!suspended).then(sim::time::now_k8s));
    let backoff_exceeded = failed > spec.backoff_limit.unwrap_or(BACKOFF_LIMIT_DEFAULT);
    let deadline_left = active_deadline_left(&spec, start_time.as_ref(), suspended, now);
    let failure: Option<(&str, String)> = if success_met {
        None
    } else if let Some(target) = &failure_target {
        Some((target.reason.as_deref().unwrap_or_default(), target.message.clone().unwrap_or_default()))
    } else if let Some(message) = fail_job {
        Some((FAILED_POD_FAILURE_POLICY, message))
    } else if backoff_exceeded {
        Some((FAILED_BACKOFF_LIMIT.0, FAILED_BACKOFF_LIMIT.1.to_owned()))
    } else if deadline_left.is_some_and(|left| left.is_zero()) {
        Some((FAILED_DEADLINE.0, FAILED_DEADLINE.1.to_owned()))
    } else {
        None
    };
    let gave_up = failure.is_some();
    // A suspended Job runs no Pod (upstream's `manageJob` deletes its active ones).
    let wanted = if success_met || gave_up || suspended {
        0
    } else {
        match spec.completions {
            Some(completions) => parallelism.min(completions - succeeded).max(0),
            None if succeeded > 0 => 0,
            None => parallelism,
        }
    };
    let wanted = usize::try_from(wanted).unwrap_or(0);
    let backoff = failure_backoff(&counted, now);
    // The Pods to delete: beyond `wanted`, the first in deletion order; an Indexed Job's also
    // those of no valid index and all but one of those sharing an index (upstream's
    // `activePodsForRemoval`). Deleting takes precedence over creating, as upstream's.
    let surplus = active.len().saturating_sub(wanted);
    let removal: Vec<&Pod> = if indexed {
        indexed_job::pods_for_removal(&active, completions_indexed, surplus)
    } else if surplus > 0 {
        active.sort_by(|a, b| pod_state::deletion_order(a, b));
        active[..surplus].to_vec()
    } else {
        Vec::new()
    };
    let mut created = 0;
    let mut deleted_now = 0;
    if wait != Wait::Satisfied {
        // Earlier creates or deletes not in the cache yet: no Pod is created or deleted.
    } else if !removal.is_empty() {
        for pod in removal.iter().take(POD_WRITES_PER_SYNC_MAX) {
            pod_control::delete(&api, pod, &*job, &ctx.recorder).await?;
            // Gone or going either way: the cache is to show it.
            ctx.expectations.deleted(&uid, pod.name_any(), pod.uid().unwrap_or_default(), sim::time::now());
        }
        let deleted: Vec<&Pod> = removal.iter().take(POD_WRITES_PER_SYNC_MAX).copied().collect();
        deleted_now = deleted.len();
        active.retain(|p| !deleted.iter().any(|d| std::ptr::eq(*d, *p)));
    } else if active.len() < wanted && !backoff.is_zero() {
        // Pods failed lately: the next ones wait out the backoff (`enqueueSyncJobWithDelay`).
    } else if active.len() < wanted {
        let missing = (wanted - active.len()).min(POD_WRITES_PER_SYNC_MAX);
        // An Indexed Job's new Pods take the lowest indexes neither completed nor running.
        let indexes: Vec<Option<i32>> = match &completed_indexes {
            Some(done) => indexed_job::first_pending(&active, done, missing, completions_indexed)
                .into_iter()
                .map(Some)
                .collect(),
            None => vec![None; missing],
        };
        for index in indexes {
            let pod = job_pod(&job, &namespace, index);
            match pod_control::create(&api, &pod, &*job, &ctx.recorder).await? {
                Created::Pod(pod) => ctx.expectations.created(&uid, pod.name_any(), sim::time::now()),
                // Every create will be refused: nothing to do, as upstream.
                Created::NamespaceTerminating => break,
            }
            created += 1;
        }
    }
    // Pods being deleted, those deleted just now among them (upstream's `terminating += deleted`).
    let terminating = count(|p| pod_state::is_terminating(p) && !pod_state::is_finished(p))
        .saturating_add(i32::try_from(deleted_now).unwrap_or(i32::MAX));
    // Complete once enough Pods succeeded and none is active any more (upstream reads `active`
    // after its deletes); a failed Job only once this sync could delete all its active Pods with
    // its expectations met (upstream's `deleted != active || !satisfiedExpectations`).
    let complete = success_met
        || (failure.is_none()
            && active.is_empty()
            && match spec.completions {
                Some(completions) => succeeded >= completions,
                None => succeeded >= 1,
            });
    let failing = failure.as_ref().filter(|_| wait == Wait::Satisfied && active.is_empty());
    let mut conditions = job.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    // `Suspended`, only when the create and delete step ran (upstream's `manageJobCalled`): True
    // while suspended, False once resumed (never added False).
    let mut suspension = None;
    if wait == Wait::Satisfied && !complete && !gave_up {
        suspension = if suspended {
            ensure_condition(&mut conditions, "Suspended", "True", "JobSuspended", "Job suspended")
                .then_some(("Suspended", "Job suspended"))
        } else {
            ensure_condition(&mut conditions, "Suspended", "False", "JobResumed", "Job resumed")
                .then_some(("Resumed", "Job resumed"))
        };
        if suspension.is_some_and(|(reason, _)| reason == "Resumed") {
            start_time = Some(sim::time::now_k8s());
        }
    }
    // The interim condition first (`SuccessCriteriaMet`, `FailureTarget`), the final one
    // (`Complete`, `Failed`) once no Pod is terminating (`delayTerminalCondition`, on since 1.29
    // with `JobPodReplacementPolicy`).
    let mut finished = false;
    if complete {
        if !success_met {
            conditions.push(condition(SUCCESS_CRITERIA_MET, COMPLETIONS_REACHED.0, COMPLETIONS_REACHED.1));
        }
        if terminating == 0 {
            conditions.push(condition("Complete", COMPLETIONS_REACHED.0, COMPLETIONS_REACHED.1));
            finished = true;
        }
    } else if let Some((reason, message)) = failing {
        if failure_target.is_none() {
            conditions.push(condition(FAILURE_TARGET, reason, message));
        }
        if terminating == 0 {
            conditions.push(condition("Failed", reason, message));
            finished = true;
        }
    }
    let completion_time =
        if complete && finished { Some(sim::time::now_k8s()) } else { previous.completion_time.clone() };
    let status = JobStatus {
        active: Some(i32::try_from(active.len() + created).unwrap_or(i32::MAX)),
        ready: Some(
            i32::try_from(active.iter().filter(|p| pod_state::is_ready(p)).count()).unwrap_or(i32::MAX),
        ),
        succeeded: Some(succeeded),
        failed: Some(failed),
        terminating: Some(terminating),
        // Left out while empty, as Go's `omitempty` leaves it out.
        completed_indexes: match completed_indexes {
            Some(indexes) => Some(indexes.to_string()).filter(|i| !i.is_empty()),
            None => previous.completed_indexes.clone(),
        },
        conditions: (!conditions.is_empty()).then_some(conditions),
        start_time,
        completion_time,
        ..previous
    };
    if job.status.as_ref() != Some(&status) {
        let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
        let patch = super::status_patch::replacing(job.status.as_ref(), &status)?;
        jobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        let regarding = events::reference(&*job);
        if finished && complete {
            events::normal(&ctx.recorder, &regarding, "Completed", "Job completed".to_owned()).await;
        } else if let Some((reason, message)) = failing.filter(|_| finished) {
            events::warning(&ctx.recorder, &regarding, reason, message.clone()).await;
        } else if let Some((reason, message)) = suspension {
            events::normal(&ctx.recorder, &regarding, reason, message.to_owned()).await;
        }
    }
    // The next look: when expectations expire, the failure backoff ends, or the active deadline
    // passes (upstream's `AddAfter` of the deadline's remaining time), whichever comes first.
    let expire = match wait {
        // The Pod events that fulfil them trigger the next sync; if none comes, they expire.
        Wait::Pending(expire) => Some(expire),
        Wait::Satisfied if active.len() < wanted && !backoff.is_zero() => Some(backoff),
        Wait::Satisfied => None,
    };
    let deadline = deadline_left.filter(|_| !complete && !gave_up);
    Ok(match expire.into_iter().chain(deadline).min() {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

/// The interim condition of a Job that met its success criteria, before `Complete`.
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
/// The interim condition of a Job that failed, before `Failed`.
pub const FAILURE_TARGET: &str = "FailureTarget";
/// The reason and message of `SuccessCriteriaMet` and `Complete` (`JobReasonCompletionsReached`).
const COMPLETIONS_REACHED: (&str, &str) = ("CompletionsReached", "Reached expected number of succeeded pods");

/// The `Failed` condition's reason and message when more Pods failed than `backoffLimit` allows.
const FAILED_BACKOFF_LIMIT: (&str, &str) =
    ("BackoffLimitExceeded", "Job has reached the specified backoff limit");
/// The `Failed` condition's reason when a `FailJob` rule of the pod failure policy matched a
/// failed Pod (upstream's `JobReasonPodFailurePolicy`).
const FAILED_POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// What the pod failure policy does with a failed Pod (`matchPodFailurePolicy`).
enum PolicyAction {
    /// No rule matched, or a `Count` (or, without a per-index backoff, `FailIndex`) rule did.
    Count,
    /// An `Ignore` rule matched: the failure counts nowhere.
    Ignore,
    /// A `FailJob` rule matched: the Job fails with this message.
    FailJob(String),
}

/// The first rule of `policy` that matches the failed `pod`, as upstream's
/// `matchPodFailurePolicy`: a rule on exit codes matches a container (then an init container)
/// of the rule's name, or any, that terminated with a non-zero code that is `In` (or `NotIn`)
/// the values; a rule on Pod conditions matches a condition of one of its types with the
/// pattern's status (`True` when unset).
fn failure_policy_action(policy: &k8s_openapi::api::batch::v1::PodFailurePolicy, pod: &Pod) -> PolicyAction {
    let status = pod.status.as_ref();
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    for (index, rule) in policy.rules.iter().enumerate() {
        let what = if let Some(codes) = &rule.on_exit_codes {
            let statuses = status.into_iter().flat_map(|s| {
                s.container_statuses.iter().flatten().chain(s.init_container_statuses.iter().flatten())
            });
            let matching = statuses.filter_map(|c| {
                let code = c.state.as_ref()?.terminated.as_ref()?.exit_code;
                let named = codes.container_name.as_deref().is_none_or(|n| n == c.name);
                let listed = codes.values.contains(&code);
                let hit = named && code != 0 && if codes.operator == "NotIn" { !listed } else { listed };
                hit.then(|| (c.name.clone(), code))
            });
            matching.into_iter().next().map(|(container, code)| {
                format!(
                    "Container {container} for pod {namespace}/{name} failed with exit code {code} matching {} \
                     rule at index {index}",
                    rule.action
                )
            })
        } else {
            let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
            let patterns = rule.on_pod_conditions.as_deref().unwrap_or_default();
            let wanted = |pattern: &k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern| {
                // JSON: the status' Option-ness differs between Kubernetes versions.
                let value = serde_json::to_value(pattern).unwrap_or_default();
                value.get("status").and_then(serde_json::Value::as_str).unwrap_or("True").to_owned()
            };
            conditions
                .iter()
                .find(|c| patterns.iter().any(|p| p.type_ == c.type_ && wanted(p) == c.status))
                .map(|c| {
                    format!(
                        "Pod {namespace}/{name} has condition {} matching {} rule at index {index}",
                        c.type_, rule.action
                    )
                })
        };
        let Some(message) = what else { continue };
        return match rule.action.as_str() {
            "Ignore" => PolicyAction::Ignore,
            "FailJob" => PolicyAction::FailJob(message),
            _ => PolicyAction::Count,
        };
    }
    PolicyAction::Count
}

/// The `Failed` condition's reason and message when the Job ran longer than
/// `activeDeadlineSeconds` (upstream's `JobReasonDeadlineExceeded`).
const FAILED_DEADLINE: (&str, &str) = ("DeadlineExceeded", "Job was active longer than specified deadline");

/// How long the Job may still be active under `activeDeadlineSeconds` (zero once past it,
/// upstream's `pastActiveDeadline`): `None` without a deadline, a start, or while suspended.
fn active_deadline_left(
    spec: &k8s_openapi::api::batch::v1::JobSpec,
    start_time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    suspended: bool,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let seconds = u64::try_from(spec.active_deadline_seconds?).unwrap_or(0);
    let start = start_time?.0;
    if suspended {
        return None;
    }
    let active_for = Duration::try_from(now.duration_since(start)).unwrap_or_default();
    Some(Duration::from_secs(seconds).saturating_sub(active_for))
}

/// Set condition `type_` to `status` with `reason` and `message` (upstream's
/// `ensureJobConditionStatus`): a condition that differs is replaced (a new transition time), a
/// missing one is added unless it would be `False`. Whether anything changed.
fn ensure_condition(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> bool {
    let fresh = || JobCondition { status: status.to_owned(), ..condition(type_, reason, message) };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c)
            if c.status == status
                && c.reason.as_deref() == Some(reason)
                && c.message.as_deref() == Some(message) =>
        {
            false
        }
        Some(c) => {
            *c = fresh();
            true
        }
        None if status == "False" => false,
        None => {
            conditions.push(fresh());
            true
        }
    }
}

/// How long the Job still waits before it creates Pods after failures (upstream's
/// `backoffRecord.getRemainingTime`): [`POD_FAILURE_BACKOFF`] doubled for each Pod that failed
/// after the last one that succeeded, at most [`POD_FAILURE_BACKOFF_MAX`], counted from the last
/// failure. Upstream keeps that record as Pods finish; here every finished Pod is still there to
/// count (no tracking finalizers: finished Pods are not removed), which gives the same record.
fn failure_backoff(pods: &[Arc<Pod>], now: jiff::Timestamp) -> Duration {
    let finished = |phase: &str| -> Vec<jiff::Timestamp> {
        pods.iter().filter(|p| pod_state::phase(p) == phase).map(|p| finish_time(p)).collect()
    };
    let last_success = finished(pod_state::PHASE_SUCCEEDED).into_iter().max();
    let failures: Vec<jiff::Timestamp> = finished(pod_state::PHASE_FAILED)
        .into_iter()
        .filter(|t| last_success.is_none_or(|s| *t > s))
        .collect();
    let Some(last_failure) = failures.iter().max() else { return Duration::ZERO };
    let mut backoff = POD_FAILURE_BACKOFF;
    for _ in 1..failures.len() {
        backoff = backoff.saturating_mul(2);
        if backoff >= POD_FAILURE_BACKOFF_MAX {
            backoff = POD_FAILURE_BACKOFF_MAX;
            break;
        }
    }
    let elapsed = Duration::try_from(now.duration_since(*last_failure)).unwrap_or_default();
    backoff.saturating_sub(elapsed)
}

/// When a Pod finished (upstream's `getFinishedTime`): its containers' last `finishedAt`, else
/// its deletion, else its creation.
fn finish_time(pod: &Pod) -> jiff::Timestamp {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    let finished = statuses.into_iter().flatten().filter_map(|c| {
        let terminated = c.state.as_ref()?.terminated.as_ref()?;
        terminated.finished_at.as_ref().map(|t| t.0)
    });
    finished
        .max()
        .or_else(|| pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or_default()
}

/// A new Pod of `job`, with the labels a real API server puts on a Job's template; of an
/// Indexed Job, the Pod of `index` ([`indexed_job::set_index`]), named `<job>-<index>-<random>`.
fn job_pod(job: &Job, namespace: &str, index: Option<i32>) -> Pod {
    let template = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
    let generate_name = match index {
        Some(index) => indexed_job::generate_name(&job.name_any(), index),
        None => format!("{}-", job.name_any()),
    };
    let mut pod = pod_from_template(
        &template,
        PodName::Generate(generate_name),
        namespace,
        owners::controller_ref(job),
    );
    if let Some(index) = index {
        indexed_job::set_index(&mut pod, &job.name_any(), index);
    }
    let uid = job.uid().unwrap_or_default();
    let name = job.name_any();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        labels.insert(key.to_owned(), value.clone());
    }
    pod
}
