//! `Api<Pod>::logs` and `log_stream`, as kube 5's: a controller that reads logs ports by its
//! `use` lines. The logs are the synthetic lines rendered from the Pod's container statuses,
//! with kube-apiserver's and the kubelet's refusals.

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use sim::api::{Api, LogParams, Patch, PatchParams, PostParams};
use sim::{Error, Sim, Verdict, Workload, WorkloadError};

fn pod(name: &str, containers: &[&str], node: Option<&str>) -> Pod {
    let containers: Vec<_> =
        containers.iter().map(|c| serde_json::json!({"name": c, "image": format!("{c}:1.0")})).collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"containers": containers, "nodeName": node},
    }))
    .expect("a Pod")
}

fn code(result: Result<String, Error>) -> (u16, String) {
    match result {
        Err(Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn run_script<F, Fut>(script: F) -> Verdict
where
    F: Fn(Workload) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), WorkloadError>> + 'static,
{
    Sim::builder().workload(script).run(1).verdict
}

#[test]
fn a_running_containers_log_tells_its_story_and_the_options_select_from_it() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        pods.create(&PostParams::default(), &pod("web", &["web"], Some("node-1"))).await.expect("create");
        let (status, message) = code(pods.logs("web", &LogParams::default()).await);
        assert_eq!(status, 400);
        assert_eq!(message, "container \"web\" in pod \"web\" is waiting to start: ContainerCreating");
        let running = Patch::Merge(serde_json::json!({"status": {"phase": "Running", "containerStatuses": [{
            "name": "web", "image": "web:1.0", "imageID": "", "ready": true, "restartCount": 0,
            "containerID": "containerd://1", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
        }]}}));
        pods.patch_status("web", &PatchParams::default(), &running).await.expect("status");
        let log = pods.logs("web", &LogParams::default()).await.expect("logs");
        assert_eq!(
            log,
            "kube-sim: a synthetic log (kube-sim runs no container processes)\n\
             kube-sim: container \"web\" started from image \"web:1.0\" (restart 0)\n"
        );
        let last = LogParams { tail_lines: Some(1), timestamps: true, ..LogParams::default() };
        assert_eq!(
            pods.logs("web", &last).await.expect("logs"),
            "2026-01-01T00:00:00.000000000Z kube-sim: container \"web\" started from image \"web:1.0\" (restart 0)\n"
        );
        let mut streamed = String::new();
        let stream = pods.log_stream("web", &LogParams::default()).await.expect("log_stream");
        futures::pin_mut!(stream);
        stream.read_to_string(&mut streamed).await.expect("read");
        assert_eq!(streamed, log);
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn logs_refuse_as_kube_apiserver_does() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        pods.create(&PostParams::default(), &pod("two", &["a", "b"], Some("node-1"))).await.expect("create");
        pods.create(&PostParams::default(), &pod("unbound", &["a"], None)).await.expect("create");
        assert_eq!(
            code(pods.logs("two", &LogParams::default()).await),
            (400, "a container name must be specified for pod two, choose one of: [a b]".to_owned())
        );
        let other = LogParams { container: Some("c".to_owned()), ..LogParams::default() };
        assert_eq!(
            code(pods.logs("two", &other).await),
            (400, "container c is not valid for pod two".to_owned())
        );
        assert_eq!(code(pods.logs("gone", &LogParams::default()).await).0, 404);
        let negative = LogParams { tail_lines: Some(-1), ..LogParams::default() };
        let (status, message) = code(pods.logs("two", &negative).await);
        assert_eq!(status, 422);
        assert!(message.starts_with("PodLogOptions \"two\" is invalid: tailLines"), "{message}");
        assert_eq!(
            pods.logs("unbound", &LogParams::default()).await.expect("logs"),
            "",
            "no node: nothing to read"
        );
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}
