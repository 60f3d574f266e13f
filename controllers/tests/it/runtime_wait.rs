//! kube-runtime's `await_condition` and `wait::conditions` against the built-ins, as a user's
//! script waits with them: the kubelet-lite runs a Pod (`is_pod_running`), the Deployment and
//! ReplicaSet controllers roll a Deployment out (`is_deployment_completed`), and the Job
//! controller completes a Job (`is_job_completed`). Each wait goes through the simulated watcher.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, pod_state};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, ObjectMeta};
use sim::runtime::wait::{Condition, await_condition, conditions};
use sim::{SimBuilder, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 10;
/// A virtual-time bound on each wait, so that a wait that never ends fails the run.
const WAIT: Duration = Duration::from_secs(120);

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: Some("default".to_owned()), ..ObjectMeta::default() }
}

fn pod_spec(restart_policy: &str) -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "app".to_owned(),
            image: Some("app:1".to_owned()),
            ..Container::default()
        }],
        restart_policy: Some(restart_policy.to_owned()),
        termination_grace_period_seconds: Some(1),
        ..PodSpec::default()
    }
}

/// `await_condition` on `api`'s object `name`, bounded by [`WAIT`], as a workload step: the
/// object it returned, or the step's error.
async fn wait_until<K>(
    api: &Api<K>,
    name: &str,
    condition: impl Condition<K>,
) -> Result<Option<K>, WorkloadError>
where
    K: sim::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let failed =
        |reason: String| WorkloadError { step: 0, action: format!("await_condition {name}"), reason };
    match madsim::time::timeout(WAIT, await_condition(api.clone(), name, condition)).await {
        Ok(Ok(object)) => Ok(object),
        Ok(Err(error)) => Err(failed(error.to_string())),
        Err(_) => Err(failed(format!("timed out after {WAIT:?}"))),
    }
}

fn check(ok: bool, what: String) -> Result<(), WorkloadError> {
    if ok { Ok(()) } else { Err(WorkloadError { step: 0, action: "check".to_owned(), reason: what }) }
}

fn sweep_passes(name: &str, world: SimBuilder) {
    sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options))
        .assert_all_passed();
}

#[test]
fn await_condition_is_pod_running_returns_the_pod_the_kubelet_started() {
    let world = builtins::kubelet(sim::Sim::builder()).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply(&pods, &Pod { metadata: meta("app"), spec: Some(pod_spec("Always")), status: None }).await?;
        let pod = wait_until(&pods, "app", conditions::is_pod_running()).await?;
        let pod =
            pod.ok_or_else(|| WorkloadError { step: 0, action: "check".into(), reason: "no pod".into() })?;
        check(pod_state::phase(&pod) == "Running", format!("phase {}", pod_state::phase(&pod)))?;
        check(pod.spec.and_then(|s| s.node_name).is_some(), "running but not bound".to_owned())
    });
    sweep_passes("wait-pod-running", world);
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

#[test]
fn await_condition_is_deployment_completed_returns_once_every_replica_is_available() {
    let world = sim::Sim::builder();
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(world)));
    let world = world.workload(|w| async move {
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        let web = Deployment {
            metadata: meta("web"),
            spec: DeploymentSpec {
                replicas: Some(3),
                selector: LabelSelector { match_labels: Some(labels()), ..LabelSelector::default() },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels()), ..ObjectMeta::default() }),
                    spec: Some(pod_spec("Always")),
                },
                ..DeploymentSpec::default()
            },
            status: None,
        };
        w.apply(&deployments, &web).await?;
        let done = wait_until(&deployments, "web", conditions::is_deployment_completed()).await?;
        let status = done.and_then(|d| d.status).unwrap_or_default();
        let counts = (status.replicas, status.updated_replicas, status.available_replicas);
        check(
            counts == (Some(3), Some(3), Some(3)),
            format!("completed with (replicas, updated, available) {counts:?}"),
        )
    });
    sweep_passes("wait-deployment-completed", world);
}

#[test]
fn await_condition_is_job_completed_returns_once_every_completion_succeeded() {
    let world = builtins::kubelet(builtins::job_controller(sim::Sim::builder())).workload(|w| async move {
        let jobs: Api<Job> = Api::namespaced(w.client(), "default");
        let pi = Job {
            metadata: meta("pi"),
            spec: Some(JobSpec {
                completions: Some(3),
                parallelism: Some(2),
                template: PodTemplateSpec { metadata: None, spec: Some(pod_spec("Never")) },
                ..JobSpec::default()
            }),
            status: None,
        };
        w.apply(&jobs, &pi).await?;
        // Not complete at first: the combinator holds only once the Job is complete.
        let not_yet = conditions::is_job_completed().not();
        check(not_yet.matches_object(None), "a missing Job is not complete".to_owned())?;
        let done = wait_until(&jobs, "pi", conditions::is_job_completed()).await?;
        let status = done.and_then(|j| j.status).unwrap_or_default();
        check(status.succeeded == Some(3), format!("completed with {:?} succeeded", status.succeeded))
    });
    sweep_passes("wait-job-completed", world);
}
