//! The CronJob controller: a Job for each due time of a cron schedule, on the virtual clock, as
//! kube-controller-manager's `CronJobControllerV2` (`pkg/controller/cronjob`).
//!
//! - The schedule is the standard five-field cron syntax (and its `@hourly`-style nicknames; not
//!   `@every`), parsed with `croner` and evaluated in UTC (`spec.timeZone` may only be UTC) on
//!   the run's virtual wall clock (`sim::time`). Each sync looks for the most recent due time
//!   after `status.lastScheduleTime` (or the creation), not older than
//!   `startingDeadlineSeconds`, and requeues itself for the next one (plus 100 ms, as upstream).
//! - The Job of due time `t` is named `<cronjob>-<t in minutes since the epoch>`, made from
//!   `jobTemplate` with a controller reference and the
//!   `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation, so a time is never run twice.
//! - `concurrencyPolicy`: Allow runs Jobs side by side; Forbid skips a due time while a Job is
//!   active (`JobAlreadyActive`); Replace deletes the active Jobs first.
//! - `suspend` stops scheduling (and the requeues: a suspended CronJob leaves the world quiet).
//! - `status.active` lists the running Jobs (finished ones leave it with `SawCompletedJob`;
//!   Jobs it does not list are added back, so a create whose answer was lost is not forgotten),
//!   with `lastScheduleTime` and `lastSuccessfulTime`.
//! - Finished Jobs beyond `successfulJobsHistoryLimit` (default 3) and `failedJobsHistoryLimit`
//!   (default 1) are deleted, oldest first, in the background.
//! - Jobs are read from the controller's Job informer cache, as upstream reads its Job lister,
//!   and syncs start once it has its first list. A Job that `status.active` lists and the cache
//!   does not show is read from the server before it is called missing (upstream's "slow watch"
//!   guard), so a Job just created is not dropped from `status.active`.
//! - Events: `SuccessfulCreate` ("Created job x"), `SawCompletedJob`, `SuccessfulDelete`,
//!   `JobAlreadyActive`, `MissSchedule`, `UnexpectedJob` (a warning), `MissingJob` (normal, as
//!   upstream's) and the warning `FailedCreate` ("Error creating job: ...", none in a terminating
//!   namespace).
//!
//! A CronJob that is not suspended always has a requeue pending, for its next schedule: an idle
//! one ([`Action::requeue_idle`]), which the liveness phase does not wait for. A world holding a
//! CronJob is quiet between its runs; a workload that wants to see a run waits for it (the
//! schedules come while it waits), and the end checks judge the world as the last run left it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::events::Recorder;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp, tz::TimeZone};
use model_apiserver::versions::WorkloadSpec;
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::Store;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code, is_namespace_terminating, status_message};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::{events, job, owners};

/// The CronJob controller's node.
pub const NODE: &str = "cronjob-controller";
/// The annotation holding the due time a Job was made for.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// `successfulJobsHistoryLimit` when unset.
pub const SUCCESSFUL_JOBS_HISTORY_LIMIT_DEFAULT: i32 = 3;
/// `failedJobsHistoryLimit` when unset.
pub const FAILED_JOBS_HISTORY_LIMIT_DEFAULT: i32 = 1;
/// How long after a due time the controller looks again (upstream's `nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// Add the CronJob controller to a world, on node [`NODE`].
pub fn cronjob_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: Recorder,
    /// The Job informer's cache, which syncs read.
    jobs: Store<Job>,
}

/// The CronJob controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let Some((jobs, job_changes)) = super::synced_cache::<Job>(&client).await else { return };
    let controller = Controller::new(Api::<CronJob>::all(client.clone()), watcher::Config::default());
    let ctx = Arc::new(Context { recorder: events::recorder(&client, NODE), client, jobs });
    controller
        .owns_shared_stream(job_changes)
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Parse a CronJob schedule: five fields (minute, hour, day of month, month, day of week) or a
/// nickname, as `cron.ParseStandard`. A day of month and a day of week both restricted match
/// either, as in standard cron.
pub fn parse_schedule(schedule: &str) -> Result<Cron, String> {
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    parser.parse(schedule).map_err(|e| format!("unparseable schedule {schedule:?}: {e}"))
}

/// The most recent due time of `cron` in `(after, now]`, if any.
pub fn most_recent_due(cron: &Cron, after: Timestamp, now: Timestamp) -> Option<Timestamp> {
    let now = now.to_zoned(TimeZone::UTC);
    let due = cron.find_previous_occurrence(&now, true).ok()?.timestamp();
    (due > after).then_some(due)
}

/// The first due time of `cron` after `now`.
pub fn next_due(cron: &Cron, now: Timestamp) -> Option<Timestamp> {
    cron.find_next_occurrence(&now.to_zoned(TimeZone::UTC), false).ok().map(|z| z.timestamp())
}

/// The name of the Job of due time `due`: `<cronjob>-<minutes since the epoch>`.
pub fn job_name(cronjob: &str, due: Timestamp) -> String {
    format!("{cronjob}-{}", due.as_second().div_euclid(60))
}

fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference { resource_version: None, ..events::reference(job) }
}

fn failed(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
}

/// Sync one CronJob.
pub async fn reconcile(cj: Arc<CronJob>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = cj.name_any();
    let namespace = cj.namespace().ok_or(Error::MissingNamespace { kind: "CronJob", name: name.clone() })?;
    let uid = cj.uid().unwrap_or_default();
    let jobs_api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let jobs: Vec<Job> = ctx
        .jobs
        .state_filter(|j| {
            j.metadata.namespace.as_deref() == Some(namespace.as_str())
                && owners::is_controlled_by(&j.metadata, &uid)
        })
        .into_iter()
        .map(Arc::unwrap_or_clone)
        .collect();
    let cronjobs: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    // A running Job the cached CronJob does not list may be one the previous sync created and
    // recorded, with the status write not yet in the cache: re-read the CronJob before calling
    // it unexpected, as upstream's syncCronJob does (`GetCronJob`, then `inActiveList`).
    let unlisted = jobs.iter().any(|j| !job::is_finished(j) && !lists(&cj, j));
    let cj = if unlisted {
        match cronjobs.get(&name).await {
            Ok(fresh) if fresh.uid() == cj.uid() => Arc::new(fresh),
            Ok(_) => return Ok(Action::await_change()),
            Err(e) if has_code(&e, 404) => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    } else {
        cj
    };
    let sync = Sync { cj: &cj, ctx: &ctx, api: &jobs_api };
    let mut status = cj.status.clone().unwrap_or_default();
    sync.track_active(&jobs, &mut status).await?;
    if cj.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    sync.cleanup_finished(&jobs, &status).await?;
    let requeue =
        if cj.spec().suspend == Some(true) { None } else { sync.schedule(&jobs, &mut status).await? };
    if !super::status_patch::unchanged::<CronJob, _>(cj.status.as_ref(), &status) {
        // Conditional on the resourceVersion read: a sync from a stale cache must not write an
        // older lastScheduleTime or active list back (409, and the retry reads afresh).
        // Replacing the status: an emptied active list must be named (null), or the merge
        // patch keeps the last Job in it forever.
        let mut patch = super::status_patch::replacing(cj.status.as_ref(), &status)?;
        patch["metadata"] = serde_json::json!({ "resourceVersion": cj.resource_version() });
        match cronjobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(e) if has_code(&e, 404) => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    }
    // The next schedule is the world's clock, not work this sync leaves undone: an idle requeue,
    // so that a world holding a CronJob is quiet between its runs (a backup CronJob of a
    // database operator would otherwise keep every run from ever quiescing).
    Ok(requeue.map_or_else(Action::await_change, Action::requeue_idle))
}

/// Whether `cj`'s `status.active` lists `job`.
fn lists(cj: &CronJob, job: &Job) -> bool {
    cj.status.as_ref().and_then(|s| s.active.as_ref()).is_some_and(|a| a.iter().any(|r| r.uid == job.uid()))
}

/// What one sync writes through.
struct Sync<'a> {
    cj: &'a CronJob,
    ctx: &'a Context,
    api: &'a Api<Job>,
}

impl Sync<'_> {
    async fn event(&self, reason: &str, message: String) {
        events::normal(&self.ctx.recorder, &events::reference(self.cj), reason, message).await;
    }

    async fn warning(&self, reason: &str, message: String) {
        events::warning(&self.ctx.recorder, &events::reference(self.cj), reason, message).await;
    }

    /// `status.active` follows the Jobs: finished ones leave it (and a successful one sets
    /// `lastSuccessfulTime`), missing ones leave it, unlisted running ones join it. A listed Job
    /// the cache does not show is read from the server first: missing only if it is not there.
    async fn track_active(&self, jobs: &[Job], status: &mut CronJobStatus) -> Result<(), Error> {
        let mut active = status.active.clone().unwrap_or_default();
        for job in jobs {
            let listed = active.iter().any(|r| r.uid == job.uid());
            let finished = job::is_finished(job);
            if !listed && !finished {
                self.warning(
                    "UnexpectedJob",
                    format!("Saw a job that the controller did not create or forgot: {}", job.name_any()),
                )
                .await;
                active.push(job_reference(job));
            } else if listed && finished {
                let condition = if failed(job) { "Failed" } else { "Complete" };
                self.event(
                    "SawCompletedJob",
                    format!("Saw completed job: {}, condition: {condition}", job.name_any()),
                )
                .await;
                active.retain(|r| r.uid != job.uid());
                if condition == "Complete" {
                    let completed = job.status.as_ref().and_then(|s| s.completion_time.clone());
                    let completed = completed.unwrap_or_else(sim::time::now_k8s);
                    if status.last_successful_time.as_ref().is_none_or(|t| t.0 < completed.0) {
                        status.last_successful_time = Some(completed);
                    }
                }
            }
        }
        let mut kept = Vec::with_capacity(active.len());
        for reference in active {
            if jobs.iter().any(|j| j.uid() == reference.uid) {
                kept.push(reference);
                continue;
            }
            // Not in the cache: the watch may be slow to show a Job just created (upstream's
            // `GetJob` before `MissingJob`).
            let name = reference.name.clone().unwrap_or_default();
            if self.api.get_opt(&name).await?.is_some() {
                kept.push(reference);
            } else {
                self.event("MissingJob", format!("Active job went missing: {name}")).await;
            }
        }
        status.active = (!kept.is_empty()).then_some(kept);
        Ok(())
    }

    /// Delete the oldest finished Jobs beyond the history limits.
    async fn cleanup_finished(&self, jobs: &[Job], status: &CronJobStatus) -> Result<(), Error> {
        let spec = self.cj.spec();
        let limits = [
            (false, spec.successful_jobs_history_limit.unwrap_or(SUCCESSFUL_JOBS_HISTORY_LIMIT_DEFAULT)),
            (true, spec.failed_jobs_history_limit.unwrap_or(FAILED_JOBS_HISTORY_LIMIT_DEFAULT)),
        ];
        let active = status.active.clone().unwrap_or_default();
        for (want_failed, limit) in limits {
            let mut finished: Vec<&Job> = jobs
                .iter()
                .filter(|j| {
                    job::is_finished(j) && failed(j) == want_failed && j.metadata.deletion_timestamp.is_none()
                })
                .filter(|j| !active.iter().any(|r| r.uid == j.uid()))
                .collect();
            finished.sort_by(|a, b| {
                let start = |j: &Job| {
                    j.status
                        .as_ref()
                        .and_then(|s| s.start_time.clone())
                        .or_else(|| j.metadata.creation_timestamp.clone())
                };
                (start(a).map(|t| t.0), a.metadata.name.clone())
                    .cmp(&(start(b).map(|t| t.0), b.metadata.name.clone()))
            });
            let surplus = finished.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
            for job in finished.into_iter().take(surplus) {
                self.delete(job).await?;
            }
        }
        Ok(())
    }

    /// Delete a Job and its Pods (background propagation).
    async fn delete(&self, job: &Job) -> Result<(), Error> {
        let params = DeleteParams {
            preconditions: Some(sim::api::Preconditions { uid: job.uid(), resource_version: None }),
            ..DeleteParams::background()
        };
        match self.api.delete(&job.name_any(), &params).await {
            Ok(_) => {
                self.event("SuccessfulDelete", format!("Deleted job {}", job.name_any())).await;
                Ok(())
            }
            Err(e) if has_code(&e, 404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Run the most recent due time if it is not run yet and the policy allows; when to look
    /// again.
    async fn schedule(&self, jobs: &[Job], status: &mut CronJobStatus) -> Result<Option<Duration>, Error> {
        let cj = self.cj;
        if let Some(zone) = cj.spec().time_zone.as_deref().filter(|z| !matches!(*z, "UTC" | "Etc/UTC")) {
            let reason = format!("time zone {zone:?}: only UTC is modelled");
            return Err(Error::InvalidSpec { kind: "CronJob", name: cj.name_any(), reason });
        }
        let cron = parse_schedule(&cj.spec().schedule).map_err(|reason| Error::InvalidSpec {
            kind: "CronJob",
            name: cj.name_any(),
            reason,
        })?;
        let now = sim::time::now();
        let requeue = next_due(&cron, now)
            .and_then(|next| Duration::try_from(next.duration_since(now)).ok())
            .map(|d| d + NEXT_SCHEDULE_DELTA);
        let mut earliest = status
            .last_schedule_time
            .as_ref()
            .or(cj.metadata.creation_timestamp.as_ref())
            .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
        let deadline = cj.spec().starting_deadline_seconds.map(SignedDuration::from_secs);
        if let Some(deadline) = deadline {
            earliest = earliest.max(now - deadline);
        }
        let Some(due) = most_recent_due(&cron, earliest, now) else { return Ok(requeue) };
        if deadline.is_some_and(|d| due + d < now) {
            self.warning("MissSchedule", format!("Missed scheduled time to start a job: {due}")).await;
            return Ok(requeue);
        }
        let name = job_name(&cj.name_any(), due);
        let active = status.active.clone().unwrap_or_default();
        if jobs.iter().any(|j| j.name_any() == name)
            || active.iter().any(|r| r.name.as_deref() == Some(&name))
        {
            return Ok(requeue);
        }
        match cj.spec().concurrency_policy.as_deref() {
            Some("Forbid") if !active.is_empty() => {
                let message =
                    "Not starting job because prior execution is running and concurrency policy is Forbid";
                self.event("JobAlreadyActive", message.to_owned()).await;
                return Ok(requeue);
            }
            Some("Replace") => {
                for job in jobs.iter().filter(|j| active.iter().any(|r| r.uid == j.uid())) {
                    self.delete(job).await?;
                }
                status.active = None;
            }
            _ => {}
        }
        let job = self.job_for(&name, due);
        let created = match self.api.create(&PostParams::default(), &job).await {
            Ok(created) => created,
            // Ours already (a create whose answer was lost): the next sync lists it as active.
            Err(e) if has_code(&e, 409) => match self.api.get_opt(&name).await? {
                Some(existing)
                    if owners::is_controlled_by(&existing.metadata, &cj.uid().unwrap_or_default()) =>
                {
                    existing
                }
                _ => return Err(e.into()),
            },
            // Refused as every create in a terminating namespace is: no event, as upstream
            // (which retries it all the same).
            Err(e) if is_namespace_terminating(&e) => return Err(e.into()),
            Err(e) => {
                self.warning("FailedCreate", format!("Error creating job: {}", status_message(&e))).await;
                return Err(e.into());
            }
        };
        self.event("SuccessfulCreate", format!("Created job {name}")).await;
        let mut active = status.active.clone().unwrap_or_default();
        if !active.iter().any(|r| r.uid == created.uid()) {
            active.push(job_reference(&created));
        }
        status.active = Some(active);
        status.last_schedule_time = Some(Time(due));
        Ok(requeue)
    }

    /// The Job of due time `due` (`getJobFromTemplate2`).
    fn job_for(&self, name: &str, due: Timestamp) -> Job {
        let template = &self.cj.spec().job_template;
        let meta = template.metadata.clone().unwrap_or_default();
        let mut annotations = meta.annotations.unwrap_or_default();
        annotations.insert(SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(), due.to_string());
        Job {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: self.cj.namespace(),
                labels: meta.labels.or_else(|| Some(BTreeMap::new())),
                annotations: Some(annotations),
                owner_references: Some(vec![owners::controller_ref(self.cj)]),
                ..ObjectMeta::default()
            },
            spec: template.spec.clone(),
            status: None,
        }
    }
}
