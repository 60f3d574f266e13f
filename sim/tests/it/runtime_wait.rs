//! kube-runtime's `wait` over the simulation: `await_condition` on the simulated watcher (so
//! watch faults reach it), the `Condition` combinators, `wait::conditions` and
//! `delete::delete_and_finalize`.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::{
    ConfigMap, LoadBalancerIngress, LoadBalancerStatus, Pod, PodStatus, Service, ServiceSpec, ServiceStatus,
};
use kube_core::ObjectMeta;
use sim::api::{Api, DeleteParams, Patch};
use sim::faults::{Fault, FaultPlan, PlannedFault, Trigger};
use sim::runtime::wait::{self, Condition, await_condition, conditions, delete::delete_and_finalize};
use sim::runtime::watcher;
use sim::{Clients, Sim, Verdict};

use common::*;

/// What a test's waiter saw, one line per item.
type Seen = Arc<Mutex<Vec<String>>>;

fn cms(w: &sim::Workload) -> Api<ConfigMap> {
    Api::namespaced(w.client(), "default")
}

fn value(cm: &ConfigMap) -> String {
    cm.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default()
}

fn has_value(want: &'static str) -> impl Fn(Option<&ConfigMap>) -> bool {
    move |cm: Option<&ConfigMap>| cm.is_some_and(|cm| value(cm) == want)
}

/// A world whose controller `waiter` runs `wait` once on the default cluster's ConfigMaps in
/// `default`, records what it returned, then idles (a returning main future is an exit).
fn waiter<F, Fut>(seen: Seen, wait: F) -> sim::SimBuilder
where
    F: Fn(Api<ConfigMap>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = String> + 'static,
{
    Sim::builder().controller("waiter", move |clients: Clients| {
        let (seen, wait) = (seen.clone(), wait.clone());
        async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            let line = wait(api).await;
            seen.lock().unwrap().push(line);
            std::future::pending::<()>().await;
        }
    })
}

#[test]
fn await_condition_returns_the_first_version_of_the_object_that_matches() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let report = waiter(seen.clone(), |api| async move {
            match await_condition(api, "a", has_value("2")).await {
                Ok(Some(cm)) => format!("matched v={}", value(&cm)),
                Ok(None) => "matched a missing object".to_owned(),
                Err(error) => format!("error: {error}"),
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(500)).await;
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            w.sleep(Duration::from_millis(500)).await;
            // Still not matched: the waiter has seen only v=1.
            w.patch(&cms(&w), "a", &Patch::Merge(serde_json::json!({ "data": { "v": "2" } }))).await?;
            w.sleep(Duration::from_millis(500)).await;
            w.patch(&cms(&w), "a", &Patch::Merge(serde_json::json!({ "data": { "v": "3" } }))).await?;
            Ok(())
        })
        .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(*seen.lock().unwrap(), ["matched v=2"], "seed {seed}");
    }
}

#[test]
fn await_condition_passes_none_for_a_missing_object_until_it_is_created() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let probe = Seen::default();
        let calls = probe.clone();
        let report = waiter(seen.clone(), move |api| {
            let calls = calls.clone();
            async move {
                let created = move |cm: Option<&ConfigMap>| {
                    calls.lock().unwrap().push(if cm.is_some() { "some" } else { "none" }.to_owned());
                    conditions::is_created().matches_object(cm)
                };
                match await_condition(api, "late", created).await {
                    Ok(Some(cm)) => format!("created v={}", value(&cm)),
                    Ok(None) => "none".to_owned(),
                    Err(error) => format!("error: {error}"),
                }
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_secs(1)).await;
            w.apply(&cms(&w), &config_map("late", "x")).await?;
            Ok(())
        })
        .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(*seen.lock().unwrap(), ["created v=x"], "seed {seed}");
        // The initial list found nothing: the condition saw `None` first, then the object.
        assert_eq!(*probe.lock().unwrap(), ["none", "some"], "seed {seed}");
    }
}

#[test]
fn a_watch_fault_on_the_waiting_node_ends_await_condition_with_probe_failed() {
    // The watch is held from 200 ms for 500 ms, then expires (410): kube's await_condition
    // fails on the watcher's first error instead of relisting.
    let plan = FaultPlan {
        faults: vec![PlannedFault {
            trigger: Trigger::AtTime { at_ms: 200 },
            fault: Fault::SkipByRelist { controller: "waiter".into(), duration_ms: 500 },
        }],
    };
    for seed in 0..3 {
        let seen: Seen = Arc::default();
        let report = waiter(seen.clone(), |api| async move {
            match await_condition(api, "a", has_value("never")).await {
                Ok(_) => "matched".to_owned(),
                Err(wait::Error::ProbeFailed(watcher::Error::WatchError(status))) => {
                    format!("probe failed: watch error {}", status.code)
                }
                Err(error) => format!("other error: {error}"),
            }
        })
        .faults(plan.clone())
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            w.sleep(Duration::from_millis(400)).await;
            w.patch(&cms(&w), "a", &Patch::Merge(serde_json::json!({ "data": { "v": "2" } }))).await?;
            Ok(())
        })
        .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(*seen.lock().unwrap(), ["probe failed: watch error 410"], "seed {seed}");
    }
}

/// A ConfigMap with a finalizer that only the workload removes.
fn guarded(name: &str) -> ConfigMap {
    let mut cm = config_map(name, "1");
    cm.metadata.finalizers = Some(vec!["example.com/guard".to_owned()]);
    cm
}

#[test]
fn delete_and_finalize_returns_only_once_the_last_finalizer_is_removed() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let log = seen.clone();
        let report = waiter(seen.clone(), |api| async move {
            // After the workload's create.
            madsim::time::sleep(Duration::from_millis(500)).await;
            match delete_and_finalize(api, "g", &DeleteParams::default()).await {
                Ok(()) => "deleted".to_owned(),
                Err(error) => format!("error: {error}"),
            }
        })
        .workload(move |w| {
            let log = log.clone();
            async move {
                w.apply(&cms(&w), &guarded("g")).await?;
                // The waiter deletes at 500 ms and waits on the finalizer.
                w.sleep(Duration::from_secs(2)).await;
                log.lock().unwrap().push("finalizer removed".to_owned());
                let remove = Patch::Merge(serde_json::json!({ "metadata": { "finalizers": null } }));
                w.patch(&cms(&w), "g", &remove).await?;
                w.wait_for(&cms(&w), "g", |cm| cm.is_none(), Duration::from_secs(5)).await
            }
        })
        .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(*seen.lock().unwrap(), ["finalizer removed", "deleted"], "seed {seed}");
    }
}

#[test]
fn delete_and_finalize_of_a_missing_object_fails_with_the_delete_error() {
    let seen: Seen = Arc::default();
    let report = waiter(seen.clone(), |api| async move {
        match delete_and_finalize(api, "missing", &DeleteParams::default()).await {
            Ok(()) => "deleted".to_owned(),
            Err(wait::delete::Error::Delete(sim::Error::Api(status))) => {
                format!("delete failed: {}", status.code)
            }
            Err(error) => format!("other error: {error}"),
        }
    })
    .workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        Ok(())
    })
    .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(*seen.lock().unwrap(), ["delete failed: 404"]);
}

fn meta(uid: &str) -> ObjectMeta {
    ObjectMeta { name: Some("o".to_owned()), uid: Some(uid.to_owned()), ..ObjectMeta::default() }
}

#[test]
fn is_deleted_holds_for_a_missing_object_and_for_one_recreated_under_the_same_name() {
    let cm = |uid: &str| ConfigMap { metadata: meta(uid), ..ConfigMap::default() };
    let deleted = conditions::is_deleted::<ConfigMap>("uid-1");
    assert!(deleted.matches_object(None));
    assert!(!deleted.matches_object(Some(&cm("uid-1"))));
    assert!(deleted.matches_object(Some(&cm("uid-2"))));
    assert!(conditions::is_created::<ConfigMap>().matches_object(Some(&cm("uid-1"))));
    assert!(!conditions::is_created::<ConfigMap>().matches_object(None));
}

#[test]
fn not_and_or_combine_conditions_as_boolean_logic() {
    let yes = |_: Option<&ConfigMap>| true;
    let no = |_: Option<&ConfigMap>| false;
    assert!(!yes.not().matches_object(None));
    assert!(no.not().matches_object(None));
    assert!(yes.and(yes).matches_object(None));
    assert!(!yes.and(no).matches_object(None));
    assert!(!no.and(yes).matches_object(None));
    assert!(yes.or(no).matches_object(None));
    assert!(no.or(yes).matches_object(None));
    assert!(!no.or(no).matches_object(None));
    // A combinator over a named condition, as a user writes one.
    let v2_or_gone = has_value("2").or(|cm: Option<&ConfigMap>| cm.is_none());
    assert!(v2_or_gone.matches_object(None));
    assert!(v2_or_gone.matches_object(Some(&config_map("a", "2"))));
    assert!(!v2_or_gone.matches_object(Some(&config_map("a", "1"))));
}

#[test]
fn pod_and_job_conditions_read_the_phase_and_the_complete_condition() {
    let pod = |phase: &str| Pod {
        status: Some(PodStatus { phase: Some(phase.to_owned()), ..PodStatus::default() }),
        ..Pod::default()
    };
    assert!(conditions::is_pod_running().matches_object(Some(&pod("Running"))));
    assert!(!conditions::is_pod_running().matches_object(Some(&pod("Pending"))));
    assert!(!conditions::is_pod_running().matches_object(None));
    let job = |type_: &str, status: &str| Job {
        status: Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                ..JobCondition::default()
            }]),
            ..JobStatus::default()
        }),
        ..Job::default()
    };
    assert!(conditions::is_job_completed().matches_object(Some(&job("Complete", "True"))));
    assert!(!conditions::is_job_completed().matches_object(Some(&job("Complete", "False"))));
    assert!(!conditions::is_job_completed().matches_object(Some(&job("Failed", "True"))));
    assert!(!conditions::is_job_completed().matches_object(None));
}

#[test]
fn deployment_completed_needs_progressing_with_new_replica_set_available() {
    let deployment = |reason: &str, status: &str| Deployment {
        status: Some(DeploymentStatus {
            conditions: Some(vec![DeploymentCondition {
                type_: Some("Progressing".to_owned()),
                reason: Some(reason.to_owned()),
                status: Some(status.to_owned()),
                ..DeploymentCondition::default()
            }]),
            ..DeploymentStatus::default()
        }),
        ..Deployment::default()
    };
    let completed = conditions::is_deployment_completed();
    assert!(completed.matches_object(Some(&deployment("NewReplicaSetAvailable", "True"))));
    assert!(!completed.matches_object(Some(&deployment("ReplicaSetUpdated", "True"))));
    assert!(!completed.matches_object(Some(&deployment("NewReplicaSetAvailable", "False"))));
    assert!(!completed.matches_object(None));
}

#[test]
fn a_load_balancer_service_is_provisioned_once_every_ingress_has_an_address() {
    let service = |type_: &str, ingress: Option<Vec<LoadBalancerIngress>>| Service {
        metadata: meta("s"),
        spec: Some(ServiceSpec { type_: Some(type_.to_owned()), ..ServiceSpec::default() }),
        status: Some(ServiceStatus {
            load_balancer: Some(LoadBalancerStatus { ingress }),
            ..ServiceStatus::default()
        }),
    };
    let with_ip = LoadBalancerIngress { ip: Some("10.0.0.1".to_owned()), ..LoadBalancerIngress::default() };
    let pending = LoadBalancerIngress::default();
    let provisioned = conditions::is_service_loadbalancer_provisioned();
    assert!(provisioned.matches_object(Some(&service("ClusterIP", None))));
    assert!(!provisioned.matches_object(Some(&service("LoadBalancer", None))));
    assert!(provisioned.matches_object(Some(&service("LoadBalancer", Some(vec![with_ip.clone()])))));
    assert!(!provisioned.matches_object(Some(&service("LoadBalancer", Some(vec![with_ip, pending])))));
    assert!(!provisioned.matches_object(None));
}
