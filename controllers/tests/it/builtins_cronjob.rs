//! The CronJob controller with the Job controller and the kubelet-lite, on the virtual clock:
//! a `* * * * *` CronJob runs a Job each virtual minute, named after its minute, and each
//! concurrency policy treats a Job that is still running as upstream does.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fault_plans::{RefusedCreates, lagging_watch};
use controllers::builtins::{self, cronjob, kubelet, snapshot};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::api::events::v1::Event;
use sim::api::{Api, ObjectMeta, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

/// The run's clock starts at 2026-01-01T00:00:00Z: minute 29_453_760 since the epoch.
const FIRST_MINUTE: i64 = 29_453_760;
/// Long enough for the due times of minutes 1, 2 and 3.
const RUN_FOR: Duration = Duration::from_secs(200);

fn backup(policy: &str, never_finishes: bool) -> CronJob {
    let annotations =
        never_finishes.then(|| BTreeMap::from([(kubelet::FAIL_ANNOTATION.to_owned(), "true".to_owned())]));
    CronJob {
        metadata: ObjectMeta {
            name: Some("backup".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: CronJobSpec {
            schedule: "* * * * *".to_owned(),
            concurrency_policy: Some(policy.to_owned()),
            successful_jobs_history_limit: Some(2),
            job_template: JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta { annotations, ..ObjectMeta::default() }),
                        spec: Some(PodSpec {
                            containers: vec![Container {
                                name: "backup".to_owned(),
                                image: Some("backup:1".to_owned()),
                                ..Container::default()
                            }],
                            // A failing container restarts in place: its Job never finishes.
                            restart_policy: Some("OnFailure".to_owned()),
                            termination_grace_period_seconds: Some(1),
                            ..PodSpec::default()
                        }),
                    },
                    ..JobSpec::default()
                }),
            },
            ..CronJobSpec::default()
        },
        status: None,
    }
}

fn world(name: &'static str, policy: &'static str, never_finishes: bool) -> SimBuilder {
    let world = Sim::builder().scenario(name);
    let world = builtins::kubelet(builtins::job_controller(builtins::cronjob_controller(world)));
    world.workload(move |w| async move {
        let cronjobs: Api<CronJob> = Api::namespaced(w.client(), "default");
        w.apply(&cronjobs, &backup(policy, never_finishes)).await?;
        w.sleep(RUN_FOR).await;
        // A CronJob always has its next due time pending: suspending it lets the world go quiet.
        w.patch(&cronjobs, "backup", &Patch::Merge(serde_json::json!({ "spec": { "suspend": true } })))
            .await?;
        w.sleep(Duration::from_secs(5)).await;
        Ok(())
    })
}

/// The minutes (since the start) of the CronJob's Jobs, and how many of them finished.
fn jobs(view: &sim::EndView<'_>) -> Result<(Vec<i64>, usize, CronJob), String> {
    let snap = view.cluster("default").ok_or("no cluster")?;
    let mut minutes: Vec<i64> = snapshot::objects::<Job>(snap, Some("default"))
        .iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter_map(|j| j.metadata.name.as_deref()?.strip_prefix("backup-")?.parse::<i64>().ok())
        .map(|m| m - FIRST_MINUTE)
        .collect();
    minutes.sort();
    let finished = snapshot::objects::<Job>(snap, Some("default"))
        .iter()
        .filter(|j| builtins::job::is_finished(j))
        .count();
    let cj = snapshot::object::<CronJob>(snap, Some("default"), "backup").ok_or("no cronjob")?;
    Ok((minutes, finished, cj))
}

/// The reasons of the CronJob controller's events, once per occurrence (a repeat of an event is
/// one Event whose `count` goes up, as client-go's recorder publishes it).
fn reasons(view: &sim::EndView<'_>) -> Vec<String> {
    let Some(snap) = view.cluster("default") else { return Vec::new() };
    snapshot::objects::<Event>(snap, Some("default"))
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some(cronjob::NODE))
        .flat_map(|e| {
            let count = e.deprecated_count.map_or(1, |c| usize::try_from(c).unwrap_or(1));
            std::iter::repeat_n(e.reason.unwrap_or_default(), count)
        })
        .collect()
}

#[test]
fn a_cronjob_runs_a_job_each_minute_on_the_virtual_clock_and_keeps_its_history_limit() {
    let world = world("builtins-cronjob", "Allow", false).property(FnProperty::at_end(
        "jobs of minutes 2 and 3 kept, every one finished",
        |view| {
            let (minutes, finished, cj) = jobs(view)?;
            let status = cj.status.unwrap_or_default();
            let last = status.last_schedule_time.map(|t| t.0.to_string());
            let reasons = reasons(view);
            let created = reasons.iter().filter(|r| *r == "SuccessfulCreate").count();
            if minutes == [2, 3]
                && finished == 2
                && last.as_deref() == Some("2026-01-01T00:03:00Z")
                && status.last_successful_time.is_some()
                && status.active.is_none()
                && created >= 1
                && reasons.iter().any(|r| r == "SawCompletedJob")
                && reasons.iter().any(|r| r == "SuccessfulDelete")
            {
                Ok(())
            } else {
                Err(format!(
                    "job minutes {minutes:?}, {finished} finished, last schedule {last:?}, last \
                     successful {:?}, active {:?}, events {reasons:?}",
                    status.last_successful_time, status.active
                ))
            }
        },
    ));
    let report =
        sweep(&SweepConfig::new("builtins-cronjob").seeds(10), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn a_job_the_lagging_cache_does_not_show_yet_is_neither_missing_nor_unexpected() {
    // The controller's Job watch held back 3 s a pull for the whole run: a sync right after a
    // create finds the Job in `status.active` but not in the cache, and must read it from the
    // server before calling it missing, as upstream's does; nor may a Job be created twice.
    let plan = lagging_watch(cronjob::NODE, "jobs", 3_000, RUN_FOR.as_millis() as u64);
    let world = world("builtins-cronjob-lagging-cache", "Allow", true).faults(plan).property(
        FnProperty::at_end("three jobs, one a minute, none missing or unexpected", |view| {
            let (minutes, _, cj) = jobs(view)?;
            let active = cj.status.and_then(|s| s.active).map_or(0, |a| a.len());
            let reasons = reasons(view);
            let odd: Vec<&String> =
                reasons.iter().filter(|r| *r == "MissingJob" || *r == "UnexpectedJob").collect();
            let created = reasons.iter().filter(|r| *r == "SuccessfulCreate").count();
            if minutes == [1, 2, 3] && active == 3 && odd.is_empty() && created == 3 {
                Ok(())
            } else {
                Err(format!("jobs {minutes:?}, {active} active, events {reasons:?}"))
            }
        }),
    );
    let report = sweep(&SweepConfig::new("builtins-cronjob-lagging-cache").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn allow_runs_a_new_job_while_the_previous_one_still_runs() {
    let world = world("builtins-cronjob-allow", "Allow", true).property(FnProperty::at_end(
        "three jobs run",
        |view| {
            let (minutes, _, cj) = jobs(view)?;
            let active = cj.status.and_then(|s| s.active).map_or(0, |a| a.len());
            if minutes == [1, 2, 3] && active == 3 {
                Ok(())
            } else {
                Err(format!("jobs {minutes:?}, {active} active"))
            }
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-cronjob-allow").seeds(5), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn forbid_skips_due_times_while_a_job_still_runs() {
    let world = world("builtins-cronjob-forbid", "Forbid", true).property(FnProperty::at_end(
        "one job runs",
        |view| {
            let (minutes, _, cj) = jobs(view)?;
            let active = cj.status.and_then(|s| s.active).map_or(0, |a| a.len());
            let skipped = reasons(view).iter().any(|r| r == "JobAlreadyActive");
            if minutes == [1] && active == 1 && skipped {
                Ok(())
            } else {
                Err(format!("jobs {minutes:?}, {active} active"))
            }
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-cronjob-forbid").seeds(5), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn replace_deletes_the_running_job_before_starting_the_next() {
    let world = world("builtins-cronjob-replace", "Replace", true).property(FnProperty::at_end(
        "the newest job runs alone",
        |view| {
            let (minutes, _, cj) = jobs(view)?;
            let active: Vec<String> = cj
                .status
                .and_then(|s| s.active)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|r| r.name)
                .collect();
            let want = format!("backup-{}", FIRST_MINUTE + 3);
            if minutes == [3] && active == [want] {
                Ok(())
            } else {
                Err(format!("jobs {minutes:?}, active {active:?}"))
            }
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-cronjob-replace").seeds(5), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_cronjob_left_scheduled_runs_while_the_workload_waits_and_the_world_still_quiesces() {
    // Not suspended at the end (a database operator's backup CronJob): its next schedule is
    // always pending, and is the world's clock, not work left undone. The runs of minutes 1 to 3
    // happen while the workload waits; the world is quiet after it, before minute 4.
    let world = Sim::builder().scenario("builtins-cronjob-left-scheduled");
    let world = builtins::kubelet(builtins::job_controller(builtins::cronjob_controller(world)))
        .workload(|w| async move {
            let cronjobs: Api<CronJob> = Api::namespaced(w.client(), "default");
            w.apply(&cronjobs, &backup("Allow", false)).await?;
            w.sleep(RUN_FOR).await;
            Ok(())
        })
        .property(FnProperty::at_end("jobs of minutes 2 and 3 kept, every one finished", |view| {
            let (minutes, finished, _) = jobs(view)?;
            if minutes == [2, 3] && finished == 2 {
                Ok(())
            } else {
                Err(format!("{minutes:?}, {finished} finished"))
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-cronjob-left-scheduled").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
    let run = world.run(1);
    assert!(run.stats.virtual_millis < 240_000, "ended at {} ms", run.stats.virtual_millis);
}

#[test]
fn a_suspended_cronjob_runs_nothing() {
    let world = Sim::builder().scenario("builtins-cronjob-suspended");
    let world = builtins::kubelet(builtins::job_controller(builtins::cronjob_controller(world)));
    let world = world
        .workload(|w| async move {
            let cronjobs: Api<CronJob> = Api::namespaced(w.client(), "default");
            let mut cj = backup("Allow", false);
            cj.spec.suspend = Some(true);
            w.apply(&cronjobs, &cj).await?;
            w.sleep(RUN_FOR).await;
            Ok(())
        })
        .property(FnProperty::at_end("no job", |view| {
            let (minutes, _, _) = jobs(view)?;
            if minutes.is_empty() { Ok(()) } else { Err(format!("jobs {minutes:?}")) }
        }));
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
}

/// A refused Job create is a `FailedCreate` Warning in upstream's words, and the retry still
/// runs the minute's Job.
#[test]
fn a_refused_job_create_is_a_failed_create_warning_and_the_retry_runs_the_job() {
    let hook = RefusedCreates::new(cronjob::NODE, "jobs/", 1);
    let world = world("builtins-cronjob-refused", "Allow", false)
        .fault_hook(move |_seed| hook.clone())
        .property(FnProperty::at_end("one FailedCreate, a Job created each minute", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let failed: Vec<String> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| {
                    e.reason.as_deref() == Some("FailedCreate") && e.type_.as_deref() == Some("Warning")
                })
                .filter_map(|e| e.note)
                .collect();
            // One Job a minute for the three minutes, the first on the retry.
            let created = reasons(view).iter().filter(|r| *r == "SuccessfulCreate").count();
            let expected = "Error creating job: Internal error occurred: refused by the test";
            if failed == [expected] && created == 3 {
                Ok(())
            } else {
                Err(format!("warnings {failed:?}, {created} created"))
            }
        }));
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
}
