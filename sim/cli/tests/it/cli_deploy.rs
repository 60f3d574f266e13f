//! deploy/nightly-job.yaml is a valid Indexed Job: it parses into k8s-openapi's `Job`, runs one
//! shard per completion index, and the model API server accepts it.

use k8s_openapi::api::batch::v1::Job;
use kube_core::params::PostParams;
use kube_core::{ApiResource, DynamicObject};
use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};

const MANIFEST: &str = include_str!("../../../../deploy/nightly-job.yaml");

fn job() -> Job {
    serde_yaml_ng::from_str(MANIFEST).expect("deploy/nightly-job.yaml parses as a batch/v1 Job")
}

#[test]
fn the_nightly_job_is_indexed_with_one_shard_per_completion() {
    let job = job();
    let spec = job.spec.as_ref().expect("a spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(8), Some(8)));
    let pod = spec.template.spec.as_ref().expect("a pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let container = &pod.containers[0];
    let script = container.args.as_ref().expect("args")[0].clone();
    assert!(
        script.starts_with("kube-sim explore --shard \"${JOB_COMPLETION_INDEX}/8\" --duration 50m"),
        "{script}"
    );
    assert!(
        script.contains(
            "--report \"/results/shard-${JOB_COMPLETION_INDEX}/report-${JOB_COMPLETION_INDEX}.json\""
        ),
        "{script}"
    );
    let mount = &container.volume_mounts.as_ref().expect("mounts")[0];
    assert_eq!((mount.name.as_str(), mount.mount_path.as_str()), ("results", "/results"));
    let volume = &pod.volumes.as_ref().expect("volumes")[0];
    assert_eq!(volume.name, "results");
}

#[test]
fn the_model_api_server_creates_the_nightly_job() {
    let job = job();
    let resource = ApiResource::erase::<Job>(&());
    let object: DynamicObject = serde_json::from_value(serde_json::to_value(&job).expect("a Job serializes"))
        .expect("a DynamicObject");
    let mut ids = SeqIds::default();
    let now = jiff::Timestamp::from_second(1_767_225_600).expect("a valid time");
    let mut server = ApiServer::new().with_default_namespaces(&mut Context::new(now, &mut ids));
    let request = Request::create(&resource, Some("default"), object, PostParams::default());
    let created = match server.handle(request, &mut Context::new(now, &mut ids)) {
        Ok(Response::Object(created)) => created,
        Ok(other) => panic!("create answered {other:?}"),
        Err(status) => {
            panic!("the server rejected the Job: {} {:?}: {}", status.code, status.reason, status.message)
        }
    };
    assert_eq!(created.metadata.name.as_deref(), Some("kube-sim-nightly"));
    assert_eq!(created.data["spec"]["completionMode"], "Indexed");
    assert_eq!(created.data["spec"]["completions"], 8);
}
