//! `Api<Pod>::evict` through the simulated transport: kube 5's signature and body, the server's
//! PodDisruptionBudget checks, and `create_subresource("eviction", ...)` reaching the server.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{Eviction, PodDisruptionBudget};
use kube_core::ObjectMeta;
use sim::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams};
use sim::{Error, Sim, Verdict, Workload, WorkloadError};

/// Run `script` as the workload of an empty world and return its verdict.
fn run_script<F, Fut>(script: F) -> Verdict
where
    F: Fn(Workload) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), WorkloadError>> + 'static,
{
    Sim::builder().workload(script).run(1).verdict
}

/// A scheduled pod `app: web`, Running and Ready as a kubelet reports it.
async fn running_pod(pods: &Api<Pod>, name: &str) {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]},
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod).await.expect("create");
    let status = serde_json::json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await.expect("status");
}

/// A budget over `app: web` allowing `allowed` disruptions, as the disruption controller says.
async fn budget(budgets: &Api<PodDisruptionBudget>, allowed: i32) {
    let pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }))
    .expect("a budget");
    budgets.create(&PostParams::default(), &pdb).await.expect("create");
    let status = serde_json::json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
        "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}});
    budgets.patch_status("web", &PatchParams::default(), &Patch::Merge(status)).await.expect("status");
}

#[test]
fn evict_without_a_budget_deletes_the_pod_and_answers_success_201() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        running_pod(&pods, "web-0").await;
        let status = pods.evict("web-0", &EvictParams::default()).await.expect("evict");
        assert!(status.is_success());
        assert_eq!(status.code, 201);
        let pod = pods.get("web-0").await.expect("marked, not gone: it runs on a node");
        assert!(pod.metadata.deletion_timestamp.is_some());
        let conditions = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        assert!(conditions.iter().any(|c| c.type_ == "DisruptionTarget" && c.status == "True"));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn evict_under_a_budget_spends_one_disruption_then_is_refused_with_429() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        let budgets: Api<PodDisruptionBudget> = Api::default_namespaced(w.client());
        running_pod(&pods, "web-0").await;
        running_pod(&pods, "web-1").await;
        budget(&budgets, 1).await;
        pods.evict("web-0", &EvictParams::default()).await.expect("one disruption allowed");
        let status = budgets.get("web").await.expect("budget").status.expect("status");
        assert_eq!(
            status.disrupted_pods.map(|p| p.into_keys().collect::<Vec<_>>()),
            Some(vec!["web-0".into()])
        );
        match pods.evict("web-1", &EvictParams::default()).await {
            Err(Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (429, "TooManyRequests"));
                assert_eq!(
                    status.message,
                    "Cannot evict pod as it would violate the pod's disruption budget."
                );
                let cause = &status.details.as_ref().expect("details").causes[0];
                assert_eq!(cause.reason, "DisruptionBudget");
                assert_eq!(
                    cause.message,
                    "The disruption budget web needs 1 healthy pods and has 2 currently"
                );
            }
            other => panic!("expected 429, got {other:?}"),
        }
        let kept = pods.get("web-1").await.expect("kept");
        assert!(kept.metadata.deletion_timestamp.is_none());
        match pods.evict("missing", &EvictParams::default()).await {
            Err(Error::Api(status)) => assert_eq!(status.code, 404),
            other => panic!("expected 404, got {other:?}"),
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube 5 sends its `delete_options` under a key the Eviction type lacks: the server ignores
/// them (as kube-apiserver does), while `post_options.dry_run` reaches it.
#[test]
fn evict_params_delete_options_are_ignored_as_by_kube_apiserver_but_dry_run_is_not() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        running_pod(&pods, "web-0").await;
        let dry_run = EvictParams {
            post_options: PostParams { dry_run: true, ..PostParams::default() },
            ..EvictParams::default()
        };
        pods.evict("web-0", &dry_run).await.expect("dry run");
        assert!(pods.get("web-0").await.expect("get").metadata.deletion_timestamp.is_none());
        let now = EvictParams {
            delete_options: Some(DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() }),
            ..EvictParams::default()
        };
        pods.evict("web-0", &now).await.expect("evict");
        let pod = pods.get("web-0").await.expect("still there: the grace period was not read");
        assert_eq!(pod.metadata.deletion_grace_period_seconds, Some(30));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn create_subresource_eviction_goes_to_the_server() {
    let verdict = run_script(|w| async move {
        let pods: Api<Pod> = Api::default_namespaced(w.client());
        running_pod(&pods, "web-0").await;
        let eviction = Eviction {
            metadata: ObjectMeta { name: Some("web-0".into()), ..ObjectMeta::default() },
            ..Eviction::default()
        };
        let status: kube_core::Status = pods
            .create_subresource("eviction", "web-0", &PostParams::default(), &eviction)
            .await
            .expect("evict");
        assert_eq!((status.is_success(), status.code), (true, 201));
        let other = Eviction {
            metadata: ObjectMeta { name: Some("other".into()), ..ObjectMeta::default() },
            ..Eviction::default()
        };
        let refused: Result<kube_core::Status, Error> =
            pods.create_subresource("eviction", "web-0", &PostParams::default(), &other).await;
        let Err(Error::Api(status)) = refused else { panic!("a name mismatch is 400") };
        assert_eq!(status.message, "name in URL does not match name in Eviction object");
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}
