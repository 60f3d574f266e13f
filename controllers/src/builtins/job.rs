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
//! - With `restartPolicy: OnFailure` a failing container is restarted in place and no Pod fails;
//!   the Job gives up (`BackoffLimitExceeded`) once the restart counts of its pending and running
//!   Pods' containers add up to `backoffLimit` (any restart for a limit of 0), as upstream's
//!   `pastBackoffLimitOnFailure`; the kubelet-lite restarts a crash-looping container after
//!   upstream's doubling back-off ([`super::kubelet_status`]), so a limit of 6 is reached some
//!   five minutes (virtual) after the first crash.
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
//!   `Count` counts as without a policy, `FailIndex` fails the Pod's index (below). The
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
//! - Pod tracking with finalizers (upstream's since 1.26): every Pod it creates carries
//!   [`TRACKING_FINALIZER`]. A finished Pod (succeeded, failed, or deleted before it succeeded:
//!   `podReplacementPolicy: TerminatingOrFailed`, unless the policy is `Failed` or a pod failure
//!   policy is set) is first recorded in `status.uncountedTerminatedPods`, then its finalizer is
//!   removed, then it moves into `succeeded` or `failed`: each Pod counts once, whatever becomes
//!   of it after. Status writes carry the resourceVersion read (`UpdateStatus`), so a count from
//!   a stale cache gets 409; finalizer removals the cache does not show yet are remembered as
//!   upstream's `finalizerExpectations`. A Pod taken away while the Job runs on (surplus,
//!   suspension) loses the finalizer before its delete and is not counted; a Job that finishes
//!   or is being deleted lets all its Pods go. A separate loop (the orphan Pod worker) removes
//!   the finalizer from Pods whose Job is gone, finished or no longer their controller, after
//!   reading a Job its cache does not show from the server.
//! - With `podReplacementPolicy: Failed` (or a pod failure policy) a Pod being deleted keeps its
//!   place, and an Indexed Job's Pod its index, until it has failed: no replacement runs beside
//!   it (upstream's `wantActive - terminating - active`).
//! - Status: `active`, `ready`, `succeeded`, `failed`, `terminating`, `uncountedTerminatedPods`,
//!   `conditions`, `startTime` and `completionTime` (on the virtual clock, `sim::time`),
//!   `completedIndexes`, `failedIndexes`.
//! - `managedBy` (on by default since 1.32): a Job whose `spec.managedBy` names another
//!   controller than [`MANAGED_BY`] (MultiKueue's, say) is left alone: no Pod, no status.
//! - `successPolicy` (Indexed Jobs, GA in 1.33): once nothing has failed the Job, the first rule
//!   its completed indexes satisfy (all of its `succeededIndexes`, or `succeededCount` of them,
//!   or `succeededCount` indexes anywhere) gives `SuccessCriteriaMet` with reason `SuccessPolicy`
//!   and `Matched rules at index <i>`; the other Pods are deleted, and `Complete` follows with the
//!   same reason and message once none is terminating.
//! - `backoffLimitPerIndex` (Indexed Jobs, GA in 1.33): every Pod carries
//!   [`indexed_job::FAILURE_COUNT`], the failures of its index before it (and
//!   [`indexed_job::IGNORED_FAILURE_COUNT`], those an `Ignore` rule passed over, when any). An
//!   index fails once a Pod of it fails with a count of `backoffLimitPerIndex`, or matches a
//!   `FailIndex` rule; `status.failedIndexes` lists the failed ones (`""` while none) and they get
//!   no more Pods. A failed index's replacement waits out the backoff of that index's failures
//!   alone (10 s doubling, from when its last Pod finished), and the failed Pod keeps its tracking
//!   finalizer until the replacement exists (upstream's `podsWithDelayedDeletionPerIndex`). The
//!   Job fails with `MaxFailedIndexesExceeded` when more indexes failed than `maxFailedIndexes`,
//!   or with `FailedIndexes` once every index completed or failed; the Job-wide `backoffLimit`,
//!   which the API server defaults to 2147483647 for such a Job, still counts every failure.
//! - Events: `SuccessfulCreate` ("Created pod: x"), `SuccessfulDelete` ("Deleted pod: x"), the
//!   Warnings `FailedCreate` / `FailedDelete` ([`super::pod_control`]), `Completed` ("Job
//!   completed"), the Warnings `BackoffLimitExceeded` and `DeadlineExceeded`, and `Suspended` /
//!   `Resumed`, as upstream.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use sim::api::{Api, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
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
    /// Per Job (by uid), the Pods (by uid) whose tracking finalizer a sync removed and `pods`
    /// may still show (upstream's `finalizerExpectations`): counted already.
    finalizers_removed: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl Context {
    /// The Pods of Job `job` whose finalizer removal `pods` (the Job's Pods in the cache) does
    /// not show yet; those it shows (without the finalizer, or gone) are forgotten.
    fn finalizers_removed(&self, job: &str, pods: &[Arc<Pod>]) -> BTreeSet<String> {
        let mut removed = self.finalizers_removed.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(uids) = removed.get_mut(job) else { return BTreeSet::new() };
        uids.retain(|uid| {
            pods.iter().any(|p| p.metadata.uid.as_deref() == Some(uid.as_str()) && has_tracking_finalizer(p))
        });
        let pending = uids.clone();
        if pending.is_empty() {
            removed.remove(job);
        }
        pending
    }

    fn expect_finalizer_removed(&self, job: &str, pod: &Pod) {
        let mut removed = self.finalizers_removed.lock().unwrap_or_else(PoisonError::into_inner);
        removed.entry(job.to_owned()).or_default().insert(pod.uid().unwrap_or_default());
    }
}

/// The Job controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let cache = reflector::informer(Api::<Pod>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial list reaches the stream.
    let pod_changes = cache.subscribe();
    // The orphan loop sees the Pods that carry the tracking finalizer, teed off the controller's
    // stream (a second subscription would cost every Pod change of the world a send).
    let (tracked_tx, orphan_changes) = futures::channel::mpsc::unbounded();
    let pod_changes = pod_changes.inspect(move |pod: &Arc<Pod>| {
        if has_tracking_finalizer(pod) {
            let _ = tracked_tx.unbounded_send(pod.clone());
        }
    });
    if cache.wait_until_ready().await.is_err() {
        return;
    }
    let controller = Controller::new(Api::<Job>::all(client.clone()), watcher::Config::default());
    let jobs = controller.store();
    let job_changes = jobs.subscribe();
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, NODE),
        client,
        pods: cache,
        expectations: Expectations::default(),
        finalizers_removed: Mutex::default(),
    });
    let syncs = controller
        .owns_shared_stream(pod_changes)
        .run_limited_by(
            RateLimiter::new(JOB_MAX_DELAY).starting_at(SLOW_BASE_DELAY).without_bucket(),
            reconcile,
            ctx.clone(),
        )
        .for_each(|_| futures::future::ready(()));
    futures::future::join(syncs, release_orphans(ctx, jobs, orphan_changes, job_changes)).await;
}

/// The orphan Pod worker (`syncOrphanPod`): a Pod that still carries [`TRACKING_FINALIZER`] but
/// whose Job is gone, finished, or no longer its controller loses the finalizer, so that a Job
/// deleted (or orphaning its Pods) never leaves them undeletable. It looks at each Pod that
/// changes, and at the Pods of each Job that changes into finished (upstream looks at a deleted
/// Job's Pods, `cleanupPodFinalizers`; a finished Job's Pods it releases once they are deleted):
/// a Pod a stale Job cache let it pass is looked at again once the cache shows the Job finished.
/// A Job the cache does not show is read from the server first: a lagging cache must not take a
/// running Job's Pods for orphans. A failed removal is tried again after
/// [`super::ERROR_REQUEUE`], while the Pod still needs it.
async fn release_orphans(
    ctx: Arc<Context>,
    jobs: Store<Job>,
    pod_changes: futures::channel::mpsc::UnboundedReceiver<Arc<Pod>>,
    job_changes: futures::channel::mpsc::UnboundedReceiver<Arc<Job>>,
) {
    if jobs.wait_until_ready().await.is_err() {
        return;
    }
    // Round-robin between the two streams: deterministic.
    let mut changes = futures::stream::select(
        pod_changes.map(|pod| vec![pod]),
        job_changes.filter(|job| futures::future::ready(is_finished(job))).map(|job| {
            let (uid, namespace) = (job.uid().unwrap_or_default(), job.namespace());
            ctx.pods.state_filter(|p| {
                p.metadata.namespace == namespace
                    && owners::is_controlled_by(&p.metadata, &uid)
                    && has_tracking_finalizer(p)
            })
        }),
    );
    while let Some(pods) = changes.next().await {
        for pod in pods {
            release_orphan(&ctx, &jobs, pod).await;
        }
    }
}

/// Remove an orphan Pod's [`TRACKING_FINALIZER`], retrying while it is still an orphan with it.
async fn release_orphan(ctx: &Context, jobs: &Store<Job>, mut pod: Arc<Pod>) {
    loop {
        if !has_tracking_finalizer(&pod) {
            return;
        }
        match is_orphan(ctx, jobs, &pod).await {
            Ok(false) => return,
            Ok(true) => {
                let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
                match remove_tracking_finalizer(&api, &pod).await {
                    Ok(()) => return,
                    Err(error) => {
                        tracing::debug!(%error, "removing an orphan Pod's tracking finalizer failed")
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "reading an orphan Pod's Job failed"),
        }
        madsim::time::sleep(super::ERROR_REQUEUE).await;
        let key = ObjectRef::new(&pod.name_any()).within(&pod.namespace().unwrap_or_default());
        match ctx.pods.get(&key).filter(|p| p.uid() == pod.uid()) {
            Some(latest) => pod = latest,
            None => return,
        }
    }
}

/// Whether no running Job controls the Pod: its controller reference names no Job, or one the
/// cache and then the server show gone, replaced, or finished. An error when the server could
/// not be read.
async fn is_orphan(ctx: &Context, jobs: &Store<Job>, pod: &Pod) -> Result<bool, sim::Error> {
    let namespace = pod.namespace().unwrap_or_default();
    let owner = pod.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
    let Some(owner) = owner.filter(|r| r.kind == "Job") else { return Ok(true) };
    let live = |job: &Job| job.uid().as_deref() == Some(owner.uid.as_str()) && !is_finished(job);
    if jobs.get(&ObjectRef::new(&owner.name).within(&namespace)).is_some_and(|j| live(&j)) {
        return Ok(false);
    }
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    Ok(!api.get_opt(&owner.name).await?.is_some_and(|j| live(&j)))
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
    if is_finished(&job) || is_managed_by_other(&job) {
        return Ok(Action::await_change());
    }
    // A Job being deleted only lets its Pods go (`canRemoveFinalizer`); it creates and deletes
    // nothing (upstream's `manageJob` is not called).
    let deleting = job.metadata.deletion_timestamp.is_some();
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
    // Pod tracking with finalizers: a finished Pod counts once, into `uncountedTerminatedPods`
    // while its finalizer is removed, then into `succeeded` or `failed`, whether or not the Pod
    // is still there after. Pods whose finalizer this controller removed but its cache still
    // shows are counted already (upstream's `finalizerExpectations`).
    let removed = ctx.finalizers_removed(&uid, &pods);
    let tracked = |p: &Pod| {
        has_tracking_finalizer(p) && !removed.contains(p.metadata.uid.as_deref().unwrap_or_default())
    };
    let uncounted = previous.uncounted_terminated_pods.clone().unwrap_or_default();
    let (mut uncounted_succeeded, mut uncounted_failed) =
        (uncounted.succeeded.unwrap_or_default(), uncounted.failed.unwrap_or_default());
    let mut counters = (previous.succeeded.unwrap_or(0), previous.failed.unwrap_or(0));
    // An earlier sync removed these finalizers but could not record it.
    let with_finalizer: BTreeSet<&str> =
        pods.iter().filter(|p| tracked(p)).filter_map(|p| p.metadata.uid.as_deref()).collect();
    move_counted(&mut uncounted_succeeded, &mut uncounted_failed, &mut counters, &with_finalizer);
    let only_failed_replaced =
        spec.pod_replacement_policy.as_deref() == Some("Failed") || spec.pod_failure_policy.is_some();
    let considered_failed = |p: &Pod| is_pod_failed(p, only_failed_replaced);
    let ignored = |p: &Pod| {
        spec.pod_failure_policy.as_ref().is_some_and(|policy| {
            pod_state::phase(p) == pod_state::PHASE_FAILED
                && matches!(failure_policy_action(policy, p), PolicyAction::Ignore)
        })
    };
    let uid_of = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    // `backoffLimitPerIndex` (Indexed Jobs): an index fails on its own once a Pod of it fails
    // after `backoffLimitPerIndex` earlier failures of it (the Pod's failure-count annotation), or
    // matches a `FailIndex` rule (upstream's `isIndexFailed`); the Job goes on with the others.
    let per_index = spec.backoff_limit_per_index.filter(|_| indexed);
    let index_failed = |p: &Pod| {
        per_index.is_some_and(|limit| {
            let action = spec
                .pod_failure_policy
                .as_ref()
                .filter(|_| pod_state::phase(p) == pod_state::PHASE_FAILED)
                .map(|policy| failure_policy_action(policy, p));
            considered_failed(p)
                && match action {
                    Some(PolicyAction::FailIndex) => true,
                    Some(PolicyAction::Ignore) => false,
                    _ => indexed_job::count_annotation(p, indexed_job::FAILURE_COUNT) >= limit,
                }
        })
    };
    // The failed indexes: those the status records and those of the failed Pods (upstream's
    // `calculateFailedIndexes`, which looks only at Pods not counted yet: here every Pod still in
    // the cache counts, as for the completed indexes, so that a Job cache that lags this
    // controller's own status write does not take a failed index for pending and run it again).
    let failed_indexes = per_index.map(|_| {
        let recorded = previous.failed_indexes.as_deref().unwrap_or_default();
        let newly = pods
            .iter()
            .filter(|p| index_failed(p))
            .filter_map(|p| indexed_job::completion_index(p))
            .filter(|i| *i < completions_indexed);
        indexed_job::Intervals::parse(recorded, completions_indexed).with_indexes(newly)
    });
    let new_succeeded = counted
        .iter()
        .filter(|p| tracked(p) && pod_state::phase(p) == pod_state::PHASE_SUCCEEDED)
        .filter(|p| !uncounted_succeeded.contains(&uid_of(p)))
        .count();
    let new_failed = counted
        .iter()
        .filter(|p| tracked(p) && considered_failed(p) && !ignored(p))
        .filter(|p| !uncounted_failed.contains(&uid_of(p)))
        .count();
    let as_count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let succeeded = match &completed_indexes {
        Some(indexes) => indexes.total(),
        None => counters.0.saturating_add(as_count(new_succeeded + uncounted_succeeded.len())),
    };
    let failed = counters.1.saturating_add(as_count(new_failed + uncounted_failed.len()));
    let mut active: Vec<&Pod> = pods.iter().map(|p| &**p).filter(|p| pod_state::is_active(p)).collect();
    let parallelism = spec.parallelism.unwrap_or(1).max(0);
    let interim = |type_: &str| {
        previous.conditions.iter().flatten().find(|c| c.type_ == type_ && c.status == "True").cloned()
    };
    // An interim condition an earlier sync wrote decides (upstream's `finishedCondition`):
    // `SuccessCriteriaMet`, then `FailureTarget`.
    let interim_success = interim(SUCCESS_CRITERIA_MET);
    let success_met = interim_success.is_some();
    let failure_target = interim(FAILURE_TARGET).filter(|_| !success_met);
    let now = sim::time::now();
    let suspended = spec.suspend == Some(true);
    // Started when first not suspended (upstream sets `startTime` only then); resuming starts it
    // again below, so that `activeDeadlineSeconds` counts continuous activity.
    let mut start_time = previous.start_time.clone().or_else(|| (!suspended).then(sim::time::now_k8s));
    let backoff_exceeded = failed > spec.backoff_limit.unwrap_or(BACKOFF_LIMIT_DEFAULT)
        || past_backoff_limit_on_failure(&spec, &pods);
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
    } else if let (Some(failed), Some(done)) = (&failed_indexes, &completed_indexes) {
        // Too many failed indexes, or every index done with some failed.
        if spec.max_failed_indexes.is_some_and(|max| failed.total() > max) {
            Some((FAILED_MAX_FAILED_INDEXES.0, FAILED_MAX_FAILED_INDEXES.1.to_owned()))
        } else if failed.total() > 0 && failed.total().saturating_add(done.total()) >= completions_indexed {
            Some((FAILED_INDEXES.0, FAILED_INDEXES.1.to_owned()))
        } else {
            None
        }
    } else {
        None
    };
    let gave_up = failure.is_some();
    // An Indexed Job's success policy, once nothing failed it: the first rule its completed
    // indexes satisfy makes it succeed now, its other Pods stopped (`matchSuccessPolicy`).
    let policy_success = match (&spec.success_policy, &completed_indexes) {
        (Some(policy), Some(done)) if !success_met && !gave_up => {
            indexed_job::success_policy_match(policy, completions_indexed, done)
        }
        _ => None,
    };
    let succeeding = success_met || policy_success.is_some();
    // A suspended Job runs no Pod (upstream's `manageJob` deletes its active ones).
    let wanted = if succeeding || gave_up || suspended {
        0
    } else {
        match spec.completions {
            Some(completions) => parallelism.min(completions - succeeded).max(0),
            None if succeeded > 0 => 0,
            None => parallelism,
        }
    };
    let wanted = usize::try_from(wanted).unwrap_or(0);
    // With a per-index backoff each index waits out its own failures' backoff, not the Job's.
    let backoff = if per_index.is_some() { Duration::ZERO } else { failure_backoff(&counted, now) };
    // Per index, its last failed Pod not counted yet, while no Pod of the index runs: the one its
    // replacement takes its failure count from, whose finalizer stays until then (upstream's
    // `getPodsWithDelayedDeletionPerIndex`).
    let mut delayed: BTreeMap<i32, &Pod> = BTreeMap::new();
    if let (Some(failed), Some(done)) = (&failed_indexes, &completed_indexes) {
        let running: BTreeSet<i32> = active.iter().filter_map(|p| indexed_job::completion_index(p)).collect();
        let absolute = indexed_job::absolute_failure_count;
        for pod in pods.iter().map(|p| &**p).filter(|p| tracked(p) && considered_failed(p)) {
            let Some(index) = indexed_job::completion_index(pod).filter(|i| *i < completions_indexed) else {
                continue;
            };
            if done.has(index) || failed.has(index) || running.contains(&index) {
                continue;
            }
            match delayed.get(&index) {
                Some(last) if absolute(last) > absolute(pod) || finish_time(pod) < finish_time(last) => {}
                _ => {
                    delayed.insert(index, pod);
                }
            }
        }
    }
    let delayed_uids: BTreeSet<&str> = delayed.values().filter_map(|p| p.metadata.uid.as_deref()).collect();
    // The soonest an index waiting out its backoff may get its Pod.
    let mut index_wait: Option<Duration> = None;
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
    // `podReplacementPolicy: Failed` (or a pod failure policy): a Pod being deleted is replaced
    // only once it has failed, so until then it keeps its place, and its index (upstream's
    // `wantActive - terminating - active`, `firstPendingIndexes`).
    let held: Vec<&Pod> = if only_failed_replaced {
        pods.iter()
            .map(|p| &**p)
            .filter(|p| pod_state::is_terminating(p) && !pod_state::is_finished(p))
            .collect()
    } else {
        Vec::new()
    };
    let occupied = active.len() + held.len();
    let mut created = 0;
    let mut deleted_now = 0;
    if wait != Wait::Satisfied || deleting {
        // Earlier creates or deletes not in the cache yet: no Pod is created or deleted.
    } else if !removal.is_empty() {
        for pod in removal.iter().take(POD_WRITES_PER_SYNC_MAX) {
            // A Pod taken away while the Job runs on (`deleteJobPods`) goes uncounted: its
            // finalizer goes first. One deleted because the Job finished (`deleteActivePods`)
            // keeps it, to be counted below.
            if !gave_up && !succeeding && has_tracking_finalizer(pod) {
                remove_tracking_finalizer(&api, pod).await?;
                ctx.expect_finalizer_removed(&uid, pod);
            }
            pod_control::delete(&api, pod, &*job, &ctx.recorder).await?;
            // Gone or going either way: the cache is to show it.
            ctx.expectations.deleted(&uid, pod.name_any(), pod.uid().unwrap_or_default(), sim::time::now());
        }
        let deleted: Vec<&Pod> = removal.iter().take(POD_WRITES_PER_SYNC_MAX).copied().collect();
        deleted_now = deleted.len();
        active.retain(|p| !deleted.iter().any(|d| std::ptr::eq(*d, *p)));
    } else if occupied < wanted && !backoff.is_zero() {
        // Pods failed lately: the next ones wait out the backoff (`enqueueSyncJobWithDelay`).
    } else if occupied < wanted {
        let missing = (wanted - occupied).min(POD_WRITES_PER_SYNC_MAX);
        // An Indexed Job's new Pods take the lowest indexes neither completed, failed nor
        // running; with a per-index backoff, only those whose backoff is over
        // (`getPodCreationInfoForIndependentIndexes`).
        let indexes: Vec<Option<i32>> = match &completed_indexes {
            Some(done) => {
                let done = failed_indexes.as_ref().map_or_else(|| done.clone(), |failed| done.merge(failed));
                let taken: Vec<&Pod> = active.iter().chain(&held).copied().collect();
                let pending = indexed_job::first_pending(&taken, &done, missing, completions_indexed);
                let ready = pending.into_iter().filter(|index| {
                    let left = delayed.get(index).map_or(Duration::ZERO, |last| index_backoff(last, now));
                    if !left.is_zero() {
                        index_wait = Some(index_wait.map_or(left, |w| w.min(left)));
                    }
                    left.is_zero()
                });
                ready.map(Some).collect()
            }
            None => vec![None; missing],
        };
        for index in indexes {
            let mut pod = job_pod(&job, &namespace, index);
            if let Some(index) = index.filter(|_| per_index.is_some()) {
                let replaced = delayed.get(&index).map(|p| (*p, ignored(p)));
                indexed_job::set_failure_counts(&mut pod, indexed_job::replacement_failure_counts(replaced));
            }
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
    let complete = succeeding
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
    if wait == Wait::Satisfied && !complete && !gave_up && !deleting {
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
    // The interim condition first (`SuccessCriteriaMet`, `FailureTarget`): the final one
    // (`Complete`, `Failed`) follows once every finished Pod is counted and no Pod is terminating
    // (`enactJobFinished`, `delayTerminalCondition`: on since 1.29 with `JobPodReplacementPolicy`).
    // `Complete` takes the reason and message of `SuccessCriteriaMet`.
    let final_condition = if complete {
        let (reason, message) = match (&interim_success, &policy_success) {
            (Some(met), _) => {
                (met.reason.clone().unwrap_or_default(), met.message.clone().unwrap_or_default())
            }
            (None, Some(matched)) => (SUCCESS_POLICY.to_owned(), matched.clone()),
            (None, None) => (COMPLETIONS_REACHED.0.to_owned(), COMPLETIONS_REACHED.1.to_owned()),
        };
        if !success_met {
            conditions.push(condition(SUCCESS_CRITERIA_MET, &reason, &message));
        }
        Some(("Complete", reason, message))
    } else if let Some((reason, message)) = failing {
        if failure_target.is_none() {
            conditions.push(condition(FAILURE_TARGET, reason, message));
        }
        Some(("Failed", (*reason).to_owned(), message.clone()))
    } else {
        None
    };
    // `trackJobStatusAndRemoveFinalizers`: the Pods whose finalizer may go now (every one of a Job
    // being deleted or finishing, else the finished ones), each finished one recorded as uncounted
    // first. Once the Job fails, every Pod not succeeded counts as failed.
    let finishing = final_condition.is_some();
    let release: Vec<&Pod> = pods
        .iter()
        .map(|p| &**p)
        .filter(|p| tracked(p))
        .filter(|p| {
            deleting
                || finishing
                || pod_state::phase(p) == pod_state::PHASE_SUCCEEDED
                || (considered_failed(p)
                    && !delayed_uids.contains(p.metadata.uid.as_deref().unwrap_or_default()))
        })
        .collect();
    for pod in &release {
        let pod_uid = uid_of(pod);
        let valid = !indexed || indexed_job::has_valid_index(pod, completions_indexed);
        if pod_state::phase(pod) == pod_state::PHASE_SUCCEEDED && !uncounted_failed.contains(&pod_uid) {
            if !indexed && !uncounted_succeeded.contains(&pod_uid) {
                uncounted_succeeded.push(pod_uid);
            }
        } else if (considered_failed(pod) || failing.is_some())
            && valid
            && !ignored(pod)
            && !uncounted_failed.contains(&pod_uid)
        {
            uncounted_failed.push(pod_uid);
        }
    }
    let completion_index_string = match &completed_indexes {
        Some(indexes) => Some(indexes.to_string()).filter(|i| !i.is_empty()),
        None => previous.completed_indexes.clone(),
    };
    let indexed_succeeded = completed_indexes.as_ref().map(|i| i.total());
    let status_with = |counters: (i32, i32),
                       succeeded_list: &[String],
                       failed_list: &[String],
                       conditions: &[JobCondition]| {
        JobStatus {
            active: Some(i32::try_from(active.len() + created).unwrap_or(i32::MAX)),
            ready: Some(
                i32::try_from(active.iter().filter(|p| pod_state::is_ready(p)).count()).unwrap_or(i32::MAX),
            ),
            succeeded: Some(indexed_succeeded.unwrap_or(counters.0)),
            failed: Some(counters.1),
            terminating: Some(terminating),
            // Left out while empty, as Go's `omitempty` leaves it out.
            completed_indexes: completion_index_string.clone(),
            // A pointer upstream: `""` while no index failed.
            failed_indexes: failed_indexes
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| previous.failed_indexes.clone()),
            uncounted_terminated_pods: Some(UncountedTerminatedPods {
                succeeded: Some(succeeded_list.to_vec()).filter(|l| !l.is_empty()),
                failed: Some(failed_list.to_vec()).filter(|l| !l.is_empty()),
            }),
            conditions: (!conditions.is_empty()).then(|| conditions.to_vec()),
            start_time: start_time.clone(),
            completion_time: previous.completion_time.clone(),
        }
    };
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut written = job.status.clone();
    let mut resource_version = job.resource_version();
    // Flush the uncounted Pods and the interim condition before any finalizer goes.
    let first = status_with(counters, &uncounted_succeeded, &uncounted_failed, &conditions);
    if written.as_ref() != Some(&first) {
        resource_version = write_status(&jobs, &name, written.as_ref(), &first, resource_version).await?;
        written = Some(first);
    }
    let mut release_error = None;
    let mut with_finalizer: BTreeSet<String> = with_finalizer.into_iter().map(str::to_owned).collect();
    for pod in &release {
        match remove_tracking_finalizer(&api, pod).await {
            Ok(()) => {
                ctx.expect_finalizer_removed(&uid, pod);
                with_finalizer.remove(&uid_of(pod));
            }
            Err(error) => {
                release_error.get_or_insert(error);
            }
        }
    }
    let with_finalizer: BTreeSet<&str> = with_finalizer.iter().map(String::as_str).collect();
    move_counted(&mut uncounted_succeeded, &mut uncounted_failed, &mut counters, &with_finalizer);
    let finished = final_condition.as_ref().is_some_and(|_| {
        uncounted_succeeded.is_empty()
            && uncounted_failed.is_empty()
            && terminating == 0
            && release_error.is_none()
    });
    if let Some((type_, reason, message)) = final_condition.as_ref().filter(|_| finished) {
        conditions.push(condition(type_, reason, message));
    }
    let mut last = status_with(counters, &uncounted_succeeded, &uncounted_failed, &conditions);
    if finished && complete {
        last.completion_time = Some(sim::time::now_k8s());
    }
    if written.as_ref() != Some(&last) {
        write_status(&jobs, &name, written.as_ref(), &last, resource_version).await?;
        written = Some(last);
    }
    if written != job.status {
        let regarding = events::reference(&*job);
        if finished && complete {
            events::normal(&ctx.recorder, &regarding, "Completed", "Job completed".to_owned()).await;
        } else if let Some((reason, message)) = failing.filter(|_| finished) {
            events::warning(&ctx.recorder, &regarding, reason, message.clone()).await;
        } else if let Some((reason, message)) = suspension {
            events::normal(&ctx.recorder, &regarding, reason, message.to_owned()).await;
        }
    }
    if let Some(error) = release_error {
        return Err(error.into());
    }
    // The next look: when expectations expire, the failure backoff ends, or the active deadline
    // passes (upstream's `AddAfter` of the deadline's remaining time), whichever comes first.
    let expire = match wait {
        // The Pod events that fulfil them trigger the next sync; if none comes, they expire.
        Wait::Pending(expire) => Some(expire),
        Wait::Satisfied if occupied < wanted && !backoff.is_zero() => Some(backoff),
        Wait::Satisfied => None,
    };
    let deadline = deadline_left.filter(|_| !complete && !gave_up);
    Ok(match expire.into_iter().chain(deadline).chain(index_wait).min() {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

/// The `spec.managedBy` of the Jobs this controller syncs (`batch.JobControllerName`).
pub const MANAGED_BY: &str = "kubernetes.io/job-controller";

/// Whether another controller manages the Job (`isJobManagedByOther`).
fn is_managed_by_other(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.managed_by.as_deref()).is_some_and(|m| m != MANAGED_BY)
}

/// The finalizer the Job controller gives every Pod it creates (`batch.JobTrackingFinalizer`),
/// and removes once it counted the Pod.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Whether the Pod carries [`TRACKING_FINALIZER`].
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata.finalizers.iter().flatten().any(|f| f == TRACKING_FINALIZER)
}

/// Upstream's `isPodFailed`: `Failed`, or, unless only failed Pods are replaced
/// (`podReplacementPolicy: Failed`, or a pod failure policy), being deleted before it succeeded.
fn is_pod_failed(pod: &Pod, only_failed_replaced: bool) -> bool {
    let phase = pod_state::phase(pod);
    phase == pod_state::PHASE_FAILED
        || (!only_failed_replaced
            && pod.metadata.deletion_timestamp.is_some()
            && phase != pod_state::PHASE_SUCCEEDED)
}

/// `cleanUncountedPodsWithoutFinalizers`: the uncounted Pods whose finalizer is gone move into
/// the counters.
fn move_counted(
    succeeded: &mut Vec<String>,
    failed: &mut Vec<String>,
    counters: &mut (i32, i32),
    with_finalizer: &BTreeSet<&str>,
) {
    let before = (succeeded.len(), failed.len());
    succeeded.retain(|uid| with_finalizer.contains(uid.as_str()));
    failed.retain(|uid| with_finalizer.contains(uid.as_str()));
    let moved = |from: usize, to: usize| i32::try_from(from - to).unwrap_or(i32::MAX);
    counters.0 = counters.0.saturating_add(moved(before.0, succeeded.len()));
    counters.1 = counters.1.saturating_add(moved(before.1, failed.len()));
}

/// Remove [`TRACKING_FINALIZER`] from a Pod (`removeTrackingFinalizerPatch`, a strategic merge
/// patch); a Pod gone already is no error.
async fn remove_tracking_finalizer(api: &Api<Pod>, pod: &Pod) -> Result<(), sim::Error> {
    let patch = serde_json::json!({
        "metadata": { "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER] }
    });
    match api.patch(&pod.name_any(), &PatchParams::default(), &Patch::Strategic(patch)).await {
        Ok(_) => Ok(()),
        Err(e) if super::error::has_code(&e, 404) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Write a Job's status as `UpdateStatus` does: replacing `old` with `new`, on the
/// resourceVersion read (a stale count gets 409 and the sync runs again). The new
/// resourceVersion.
async fn write_status(
    jobs: &Api<Job>,
    name: &str,
    old: Option<&JobStatus>,
    new: &JobStatus,
    resource_version: Option<String>,
) -> Result<Option<String>, Error> {
    let mut patch = super::status_patch::replacing(old, new)?;
    if let (Some(rv), Some(patch)) = (resource_version, patch.as_object_mut()) {
        patch.insert("metadata".to_owned(), serde_json::json!({ "resourceVersion": rv }));
    }
    let written = jobs.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(written.resource_version())
}

/// The interim condition of a Job that met its success criteria, before `Complete`.
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
/// The interim condition of a Job that failed, before `Failed`.
pub const FAILURE_TARGET: &str = "FailureTarget";
/// The reason and message of `SuccessCriteriaMet` and `Complete` (`JobReasonCompletionsReached`).
const COMPLETIONS_REACHED: (&str, &str) = ("CompletionsReached", "Reached expected number of succeeded pods");
/// The reason of `SuccessCriteriaMet` and `Complete` when a success policy rule matched
/// (`JobReasonSuccessPolicy`).
const SUCCESS_POLICY: &str = "SuccessPolicy";

/// The `Failed` condition's reason and message when more Pods failed than `backoffLimit` allows.
const FAILED_BACKOFF_LIMIT: (&str, &str) =
    ("BackoffLimitExceeded", "Job has reached the specified backoff limit");
/// The `Failed` condition's reason and message when more indexes failed than `maxFailedIndexes`
/// allows.
const FAILED_MAX_FAILED_INDEXES: (&str, &str) =
    ("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes");
/// The `Failed` condition's reason and message when every index succeeded or failed, and some
/// failed.
const FAILED_INDEXES: (&str, &str) = ("FailedIndexes", "Job has failed indexes");
/// The `Failed` condition's reason when a `FailJob` rule of the pod failure policy matched a
/// failed Pod (upstream's `JobReasonPodFailurePolicy`).
const FAILED_POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// What the pod failure policy does with a failed Pod (`matchPodFailurePolicy`).
enum PolicyAction {
    /// No rule matched, or a `Count` rule did.
    Count,
    /// An `Ignore` rule matched: the failure counts nowhere.
    Ignore,
    /// A `FailJob` rule matched: the Job fails with this message.
    FailJob(String),
    /// A `FailIndex` rule matched: the Pod's index fails at once (with `backoffLimitPerIndex`).
    FailIndex,
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
            "FailIndex" => PolicyAction::FailIndex,
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
/// failure. Upstream keeps that record in memory as Pods finish; here it is read from the
/// finished Pods still in the cache, which gives the same record unless someone deletes them.
/// Upstream's `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure` a failing container is
/// restarted in place, so no Pod fails; the Job gives up once the restarts of its pending and
/// running Pods' containers (init containers too) add up to `backoffLimit` (any restart, for a
/// limit of 0).
fn past_backoff_limit_on_failure(spec: &k8s_openapi::api::batch::v1::JobSpec, pods: &[Arc<Pod>]) -> bool {
    let template = spec.template.spec.as_ref();
    if template.and_then(|t| t.restart_policy.as_deref()) != Some("OnFailure") {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(pod_state::phase(p), pod_state::PHASE_RUNNING | pod_state::PHASE_PENDING))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()))
        .map(|c| i64::from(c.restart_count))
        .sum();
    match spec.backoff_limit.unwrap_or(BACKOFF_LIMIT_DEFAULT) {
        0 => restarts > 0,
        limit => restarts >= i64::from(limit),
    }
}

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
    remaining_backoff(failures.len(), *last_failure, now)
}

/// How long an index still waits before its next Pod (upstream's `getRemainingTimePerIndex`):
/// the backoff of the failures of the index so far (counted and ignored, the failed Pod's own
/// included), from when that Pod finished.
fn index_backoff(last_failed: &Pod, now: jiff::Timestamp) -> Duration {
    let earlier = indexed_job::absolute_failure_count(last_failed);
    let failures = usize::try_from(earlier).unwrap_or(0) + 1;
    remaining_backoff(failures, finish_time(last_failed), now)
}

/// [`POD_FAILURE_BACKOFF`] doubled for each of `failures` after the first, at most
/// [`POD_FAILURE_BACKOFF_MAX`], less the time since `last_failure` (`getRemainingTimeForFailuresCount`).
fn remaining_backoff(failures: usize, last_failure: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let mut backoff = POD_FAILURE_BACKOFF;
    for _ in 1..failures {
        backoff = backoff.saturating_mul(2);
        if backoff >= POD_FAILURE_BACKOFF_MAX {
            backoff = POD_FAILURE_BACKOFF_MAX;
            break;
        }
    }
    let elapsed = Duration::try_from(now.duration_since(last_failure)).unwrap_or_default();
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
    // Counted once it finishes, whatever happens to it after (`podTemplateSpec` of `manageJob`).
    pod.metadata.finalizers.get_or_insert_with(Vec::new).push(TRACKING_FINALIZER.to_owned());
    pod
}
