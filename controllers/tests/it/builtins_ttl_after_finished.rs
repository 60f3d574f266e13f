//! The TTL-after-finished controller with the Job controller, the garbage collector and the
//! kubelet-lite, on the virtual clock: a finished Job with `ttlSecondsAfterFinished` goes that
//! long after it finished, its Pods before it (foreground); one without a TTL stays; one whose
//! TTL is raised before it expires stays until the new expiry, also under faults.

use std::time::Duration;

use controllers::builtins::ttl_after_finished::Ttl;
use controllers::builtins::{self, kubelet, snapshot, ttl_after_finished};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use model_apiserver::Snapshot;
use sim::api::{Api, ObjectMeta, Patch};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);
/// How long after its expiry a Job's deletion may start in a fault-free run: times have whole
/// seconds, so the expiry read from them may be up to a second early or late on the clock.
const DELETION_SLACK: SignedDuration = SignedDuration::from_secs(2);

fn job(name: &str, ttl: Option<i32>, fail: bool) -> Job {
    let annotations = fail.then(|| [(kubelet::FAIL_ANNOTATION.to_owned(), "true".to_owned())].into());
    Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            ttl_seconds_after_finished: ttl,
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { annotations, ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "work".to_owned(),
                        image: Some("work:1".to_owned()),
                        ..Container::default()
                    }],
                    restart_policy: Some("Never".to_owned()),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// The Job controller, the garbage collector (foreground deletion), the kubelet-lite and the
/// TTL-after-finished controller.
fn jobs_world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    let world = builtins::garbage_collector(builtins::job_controller(world));
    builtins::ttl_after_finished_controller(builtins::kubelet(world))
}

fn finished(job: Option<&Job>) -> bool {
    job.is_some_and(builtins::job::is_finished)
}

/// The Pods of Job `name` (by the `job-name` label the Job controller puts on them).
fn pods_of(snap: &Snapshot, name: &str) -> usize {
    snapshot::objects::<Pod>(snap, Some("default"))
        .iter()
        .filter(|p| {
            p.metadata.labels.as_ref().and_then(|l| l.get("job-name")).map(String::as_str) == Some(name)
        })
        .count()
}

/// While Job `name` is being deleted, its deletion started at least `ttl` after it finished (and,
/// with `slack`, at most `ttl + slack` after); and it never goes while Pods of it remain.
fn deleted_on_time(name: &'static str, ttl: i64, slack: Option<SignedDuration>) -> FnProperty {
    FnProperty::always(format!("job {name} is deleted {ttl}s after it finished, pods first"), move |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let Some(job) = snapshot::object::<Job>(snap, Some("default"), name) else {
            let pods = pods_of(snap, name);
            return if pods == 0 { Ok(()) } else { Err(format!("job gone while {pods} pods remain")) };
        };
        let Some(deleted) = job.metadata.deletion_timestamp.as_ref() else { return Ok(()) };
        let finished = ttl_after_finished::finish_time(&job).ok_or("deleted before it finished")?;
        let since = deleted.0.duration_since(finished);
        let ttl = SignedDuration::from_secs(ttl);
        if since < ttl || slack.is_some_and(|slack| since > ttl + slack) {
            Err(format!("deleted {since:?} after it finished, with a TTL of {ttl:?}"))
        } else {
            Ok(())
        }
    })
}

fn gone(name: &'static str) -> FnProperty {
    FnProperty::at_end(format!("job {name} and its pods are gone"), move |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let job = snapshot::object::<Job>(snap, Some("default"), name);
        let pods = pods_of(snap, name);
        if job.is_none() && pods == 0 { Ok(()) } else { Err(format!("job {job:?}, {pods} pods")) }
    })
}

fn sweep_passes(name: &str, world: &SimBuilder, seeds: u64) {
    let report = sweep(&SweepConfig::new(name).seeds(seeds), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn a_completed_job_with_a_ttl_of_5s_is_deleted_5s_after_it_finished_and_its_pods_first() {
    let world = jobs_world("builtins-ttl-complete")
        .workload(|w| async move {
            let jobs: Api<Job> = Api::namespaced(w.client(), "default");
            w.apply(&jobs, &job("pi", Some(5), false)).await?;
            w.wait_for(&jobs, "pi", finished, WAIT).await?;
            w.wait_for(&jobs, "pi", |j| j.is_none(), WAIT).await
        })
        .property(deleted_on_time("pi", 5, Some(DELETION_SLACK)))
        .property(gone("pi"));
    sweep_passes("builtins-ttl-complete", &world, SEEDS);
}

/// What the TTL controller sent: for each delete of a Job, its preconditions beside the uid and
/// resourceVersion the controller's own last read of that Job answered.
#[derive(Clone, Default)]
struct TtlDeletes(std::sync::Arc<std::sync::Mutex<TtlDeletesSeen>>);

/// A Job's uid and resourceVersion, as read or as preconditions.
type UidAndVersion = (Option<String>, Option<String>);

#[derive(Default)]
struct TtlDeletesSeen {
    /// The uid and resourceVersion of the TTL controller's last read of a Job, by call target.
    read: std::collections::BTreeMap<String, UidAndVersion>,
    /// Per delete: (its preconditions' uid and resourceVersion, the last read's).
    deletes: Vec<(UidAndVersion, Option<UidAndVersion>)>,
}

impl sim::transport::FaultHook for TtlDeletes {
    fn before_call(
        &mut self,
        call: &sim::transport::CallInfo<'_>,
        request: &model_apiserver::Request,
    ) -> Option<kube_core::Status> {
        if call.node == ttl_after_finished::NODE
            && let model_apiserver::Verb::Delete { params, .. } = &request.verb
            && call.target.starts_with("jobs/")
        {
            let sent = params.preconditions.as_ref().map(|p| (p.uid.clone(), p.resource_version.clone()));
            let mut seen = self.0.lock().unwrap();
            let read = seen.read.get(call.target).cloned();
            seen.deletes.push((sent.unwrap_or_default(), read));
        }
        None
    }
    fn after_call(
        &mut self,
        call: &sim::transport::CallInfo<'_>,
        result: &mut Result<model_apiserver::Response, kube_core::Status>,
    ) {
        if call.node == ttl_after_finished::NODE
            && call.verb == "get"
            && let Ok(model_apiserver::Response::Object(job)) = result
        {
            let read = (job.metadata.uid.clone(), job.metadata.resource_version.clone());
            self.0.lock().unwrap().read.insert(call.target.to_owned(), read);
        }
    }
}

/// The delete carries the fresh read's uid and resourceVersion as preconditions, so that a Job
/// replaced or changed (its TTL raised) between that read and the delete is not deleted: the
/// window is too short for a sweep to hit, so the request itself is checked.
#[test]
fn the_delete_is_preconditioned_on_the_uid_and_resource_version_of_the_fresh_read() {
    let deletes = TtlDeletes::default();
    let hook = deletes.clone();
    let world = jobs_world("builtins-ttl-preconditions").fault_hook(move |_seed| hook.clone()).workload(
        |w| async move {
            let jobs: Api<Job> = Api::namespaced(w.client(), "default");
            w.apply(&jobs, &job("pi", Some(5), false)).await?;
            w.wait_for(&jobs, "pi", |j| j.is_none(), WAIT).await
        },
    );
    for seed in 0..5 {
        let report = world.run(seed);
        assert!(report.verdict.is_pass(), "seed {seed}: {:?}", report.verdict);
    }
    let seen = deletes.0.lock().unwrap();
    assert!(seen.deletes.len() >= 5, "one delete a seed at least, got {}", seen.deletes.len());
    for (sent, read) in &seen.deletes {
        let read = read.as_ref().expect("a delete follows a read of the Job");
        assert!(sent.0.is_some() && sent.1.is_some(), "preconditions sent: {sent:?}");
        assert_eq!(sent, read, "the preconditions are the fresh read's uid and resourceVersion");
    }
}

#[test]
fn a_failed_job_with_a_ttl_is_deleted_too() {
    let world = jobs_world("builtins-ttl-failed")
        .workload(|w| async move {
            let jobs: Api<Job> = Api::namespaced(w.client(), "default");
            w.apply(&jobs, &job("broken", Some(3), true)).await?;
            w.wait_for(&jobs, "broken", finished, WAIT).await?;
            w.wait_for(&jobs, "broken", |j| j.is_none(), WAIT).await
        })
        .property(deleted_on_time("broken", 3, Some(DELETION_SLACK)))
        .property(gone("broken"));
    sweep_passes("builtins-ttl-failed", &world, SEEDS);
}

#[test]
fn a_finished_job_without_a_ttl_stays_with_its_pods() {
    let world = jobs_world("builtins-ttl-none")
        .workload(|w| async move {
            let jobs: Api<Job> = Api::namespaced(w.client(), "default");
            w.apply(&jobs, &job("kept", None, false)).await?;
            w.apply(&jobs, &job("short", Some(1), false)).await?;
            w.wait_for(&jobs, "kept", finished, WAIT).await?;
            // Long after the other Job, which finished about as early, went.
            w.wait_for(&jobs, "short", |j| j.is_none(), WAIT).await?;
            w.sleep(Duration::from_secs(30)).await;
            Ok(())
        })
        .property(FnProperty::at_end("the job without a TTL and its pod remain", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let job = snapshot::object::<Job>(snap, Some("default"), "kept");
            let pods = pods_of(snap, "kept");
            match job {
                Some(job) if job.metadata.deletion_timestamp.is_none() && pods == 1 => Ok(()),
                job => Err(format!("job {job:?}, {pods} pods")),
            }
        }))
        .property(gone("short"));
    sweep_passes("builtins-ttl-none", &world, SEEDS);
}

/// A Job with a TTL of 5 s whose TTL the workload raises to 20 s as soon as it finished.
fn raised_world(scenario: &str) -> SimBuilder {
    jobs_world(scenario).workload(|w| async move {
        let jobs: Api<Job> = Api::namespaced(w.client(), "default");
        w.apply(&jobs, &job("pi", Some(5), false)).await?;
        w.wait_for(&jobs, "pi", finished, WAIT).await?;
        let raise = serde_json::json!({ "spec": { "ttlSecondsAfterFinished": 20 } });
        w.patch(&jobs, "pi", &Patch::Merge(raise)).await?;
        w.wait_for(&jobs, "pi", |j| j.is_none(), Duration::from_secs(400)).await
    })
}

#[test]
fn a_job_whose_ttl_is_raised_before_it_expires_is_kept_until_the_new_expiry() {
    let world = raised_world("builtins-ttl-raised")
        .property(deleted_on_time("pi", 20, Some(DELETION_SLACK)))
        .property(gone("pi"));
    sweep_passes("builtins-ttl-raised", &world, SEEDS);
}

#[test]
fn under_swarm_faults_on_the_ttl_controller_a_raised_ttl_is_never_cut_short() {
    // Stale caches, stale reads, crashes and lost answers on the TTL controller: the re-read
    // and the resourceVersion precondition keep the Job until its new expiry, however late the
    // deletion then comes.
    let world = raised_world("builtins-ttl-raised-faults");
    let swarm =
        SwarmConfig { controllers: vec![ttl_after_finished::NODE.to_owned()], ..SwarmConfig::default() };
    let world = world.swarm(swarm).property(deleted_on_time("pi", 20, None)).property(gone("pi"));
    sweep_passes("builtins-ttl-raised-faults", &world, 40);
}

fn finished_job(ttl: Option<i32>, finished_at: Option<Timestamp>) -> Job {
    let condition = JobCondition {
        type_: "Complete".to_owned(),
        status: "True".to_owned(),
        last_transition_time: finished_at.map(Time),
        ..JobCondition::default()
    };
    Job {
        status: Some(JobStatus { conditions: Some(vec![condition]), ..JobStatus::default() }),
        ..job("pi", ttl, false)
    }
}

#[test]
fn the_ttl_counts_from_the_finishing_conditions_transition_time() {
    let finished: Timestamp = "2026-01-01T00:00:10Z".parse().expect("a time");
    let at = |seconds: i64| finished + SignedDuration::from_secs(seconds);
    let job = finished_job(Some(5), Some(finished));
    assert_eq!(ttl_after_finished::ttl_at(&job, at(2)), Ttl::ExpiresIn(Duration::from_secs(3)));
    assert_eq!(ttl_after_finished::ttl_at(&job, at(5)), Ttl::Expired);
    assert_eq!(ttl_after_finished::ttl_at(&job, at(9)), Ttl::Expired);
    // A TTL of 0 expires as the Job finishes.
    assert_eq!(ttl_after_finished::ttl_at(&finished_job(Some(0), Some(finished)), at(0)), Ttl::Expired);
}

#[test]
fn a_job_without_a_ttl_unfinished_being_deleted_or_without_a_finish_time_is_kept() {
    let finished: Timestamp = "2026-01-01T00:00:10Z".parse().expect("a time");
    let later = finished + SignedDuration::from_secs(3600);
    assert_eq!(ttl_after_finished::ttl_at(&finished_job(None, Some(finished)), later), Ttl::Keep);
    assert_eq!(ttl_after_finished::ttl_at(&job("pi", Some(5), false), later), Ttl::Keep);
    assert_eq!(ttl_after_finished::ttl_at(&finished_job(Some(5), None), later), Ttl::Keep);
    let mut deleting = finished_job(Some(5), Some(finished));
    deleting.metadata.deletion_timestamp = Some(Time(later));
    assert_eq!(ttl_after_finished::ttl_at(&deleting, later), Ttl::Keep);
}
