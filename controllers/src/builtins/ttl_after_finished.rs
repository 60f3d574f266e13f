//! The TTL-after-finished controller: deletes a finished Job `spec.ttlSecondsAfterFinished`
//! seconds after it finished, Pods and all, as kube-controller-manager's `ttlafterfinished`
//! controller (`pkg/controller/ttlafterfinished`).
//!
//! - A Job needs cleanup when `ttlSecondsAfterFinished` is set and it has finished: a `Complete`
//!   or `Failed` condition that is `True` ([`job::is_finished`](super::job::is_finished)). Only
//!   such Jobs not being deleted are synced, as upstream's add and update handlers enqueue only
//!   them; a Job whose TTL is unset stays.
//! - It finished at that condition's `lastTransitionTime` (upstream's `jobFinishTime`) and
//!   expires `ttlSecondsAfterFinished` later, on the virtual clock (`sim::time`). Until then it
//!   is synced again when it expires.
//! - An expired Job (as cached) is read again from the server and its TTL checked again on that
//!   fresh copy, so that a TTL raised or removed meanwhile keeps it (then it is synced again at
//!   the new expiry); a Job gone meanwhile is no error. Then it is deleted with propagation
//!   `Foreground` (the garbage collector deletes its Pods before it goes) and the fresh copy's
//!   uid and resourceVersion as preconditions: a Job replaced or changed since that read is not
//!   deleted; the 409 is retried and the retry reads it again.
//!
//! Where it differs:
//! - The preconditions: the upstream versions read send the fresh copy's uid only; the
//!   resourceVersion too closes the window between the sanity read and the delete, in which a
//!   raised TTL would otherwise be missed.
//! - A finished Job whose finishing condition has no `lastTransitionTime`: upstream's sync fails
//!   and is retried with backoff, for ever; here it waits for the Job to change (only a change
//!   can give it one), so that a world holding one still goes quiet.
//! - No metrics (`job_deletion_duration_seconds`). Upstream publishes no Events, nor does this.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use sim::api::{Api, DeleteParams, Preconditions, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, reflector, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code};
use super::job;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (upstream's controller name).
pub const NODE: &str = "ttl-after-finished-controller";
/// The shortest recheck: a Job expires once its time left is not positive, so a recheck due now
/// is taken a moment later, never in a loop at one virtual instant.
const RECHECK_MIN: Duration = Duration::from_millis(1);

/// Add the TTL-after-finished controller to a world, on node [`NODE`].
pub fn ttl_after_finished_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
}

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let jobs = reflector::informer(Api::<Job>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial list reaches the filter.
    let to_clean = jobs.subscribe().filter(|job| {
        futures::future::ready(job.metadata.deletion_timestamp.is_none() && needs_cleanup(job))
    });
    Controller::for_shared_stream(to_clean, jobs)
        .run_limited_by(RateLimiter::default(), reconcile, Arc::new(Context { client }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Whether the Job has a TTL and has finished (upstream's `needsCleanup`).
pub fn needs_cleanup(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|s| s.ttl_seconds_after_finished.is_some()) && job::is_finished(job)
}

/// When the Job finished: the `lastTransitionTime` of its first `Complete` or `Failed` condition
/// that is `True` (upstream's `jobFinishTime`); `None` if it has none.
pub fn finish_time(job: &Job) -> Option<Timestamp> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let finished =
        conditions.iter().find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")?;
    finished.last_transition_time.as_ref().map(|t| t.0)
}

/// When the Job's TTL expires: its finish time plus `ttlSecondsAfterFinished`; `None` unless it
/// needs cleanup and has a finish time.
pub fn expiry(job: &Job) -> Option<Timestamp> {
    if !needs_cleanup(job) {
        return None;
    }
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    finish_time(job)?.checked_add(SignedDuration::from_secs(i64::from(ttl))).ok()
}

/// What a Job's TTL says to do now (upstream's `processTTL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// Nothing: the Job is being deleted, has no TTL, has not finished, or has no finish time.
    Keep,
    /// Look again after this long, when it expires.
    ExpiresIn(Duration),
    /// Delete it.
    Expired,
}

/// What `job`'s TTL says to do at `now`.
pub fn ttl_at(job: &Job, now: Timestamp) -> Ttl {
    if job.metadata.deletion_timestamp.is_some() {
        return Ttl::Keep;
    }
    let Some(expires) = expiry(job) else {
        if needs_cleanup(job) {
            tracing::debug!(job = %job.name_any(), "finished, but the finishing condition has no time");
        }
        return Ttl::Keep;
    };
    match Duration::try_from(expires.duration_since(now)) {
        Ok(left) if !left.is_zero() => Ttl::ExpiresIn(left),
        // Not positive: expired (a negative duration does not convert).
        _ => Ttl::Expired,
    }
}

/// Sync one Job (upstream's `processJob`).
pub async fn reconcile(cached: Arc<Job>, ctx: Arc<Context>) -> Result<Action, Error> {
    match ttl_at(&cached, sim::time::now()) {
        Ttl::Keep => return Ok(Action::await_change()),
        Ttl::ExpiresIn(left) => return Ok(Action::requeue(left.max(RECHECK_MIN))),
        Ttl::Expired => {}
    }
    let name = cached.name_any();
    let namespace = cached.namespace().ok_or(Error::MissingNamespace { kind: "Job", name: name.clone() })?;
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    // The cached TTL may be stale: check the Job as it is now before deleting it.
    let Some(fresh) = api.get_opt(&name).await? else { return Ok(Action::await_change()) };
    match ttl_at(&fresh, sim::time::now()) {
        Ttl::Keep => return Ok(Action::await_change()),
        Ttl::ExpiresIn(left) => return Ok(Action::requeue(left.max(RECHECK_MIN))),
        Ttl::Expired => {}
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: fresh.uid(), resource_version: fresh.resource_version() }),
        ..DeleteParams::foreground()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(Action::await_change()),
        // Gone meanwhile. A 409 (replaced or changed since the read, or a fault) is retried.
        Err(e) if has_code(&e, 404) => Ok(Action::await_change()),
        Err(e) => Err(e.into()),
    }
}
