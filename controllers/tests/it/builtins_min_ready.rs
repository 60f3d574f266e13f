//! `minReadySeconds`: a Pod counts as available only once it has been Ready for longer than
//! that, on the virtual clock, as kube-controller-manager's `podutil.IsPodAvailable` says. The
//! ReplicaSet's `availableReplicas` (and so its Deployment's rolling update), the StatefulSet's
//! ordered creation and the DaemonSet's rolling update all wait for it.

use std::time::Duration;

use controllers::builtins::{self, snapshot};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use sim::api::{Api, Patch};
use sim::{FnProperty, Sim, SweepConfig, sweep};

use crate::builtins_deployment::{REPLICAS, failed_step, rolled_out, web};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(300);

/// When the Pod's `Ready` condition last turned true (to the second, as stored).
fn ready_since(pod: &Pod) -> Option<jiff::Timestamp> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready" && c.status == "True")?;
    ready.last_transition_time.as_ref().map(|t| t.0)
}

#[test]
fn a_deployment_with_min_ready_seconds_counts_a_pod_available_only_after_it_and_rolls_out_no_faster() {
    const MIN_READY: i32 = 10;
    let mut deployment = web("web:1", None);
    deployment.spec.min_ready_seconds = Some(MIN_READY);
    let world = builtins::kubelet(builtins::replicaset_controller(builtins::deployment_controller(
        Sim::builder().scenario("builtins-min-ready-deployment"),
    )))
    .workload(move |w| {
        let deployment = deployment.clone();
        async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            w.apply(&deployments, &deployment).await?;
            // Every Pod Ready within a second or so of the others: none available yet.
            let all_ready = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.ready_replicas == Some(REPLICAS))
            };
            w.wait_for(&deployments, "web", all_ready, WAIT).await?;
            let ready = deployments.get("web").await.map_err(|e| failed_step("get web", e.to_string()))?;
            let available = ready.status.and_then(|s| s.available_replicas).unwrap_or(0);
            if available != 0 {
                return Err(failed_step("check no Pod is available yet", format!("{available} available")));
            }
            w.wait_for(&deployments, "web", rolled_out, WAIT).await?;
            let started = sim::time::elapsed().unwrap_or_default();
            let image = serde_json::json!({ "spec": { "template": { "spec": { "containers": [
                { "name": "web", "image": "web:2" } ] } } } });
            w.patch(&deployments, "web", &Patch::Merge(image)).await?;
            let updated = |d: Option<&Deployment>| {
                rolled_out(d)
                    && d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.observed_generation == Some(2))
            };
            w.wait_for(&deployments, "web", updated, WAIT).await?;
            // Four new Pods, at most one surging and one unavailable: at least two rounds of
            // `minReadySeconds` before the last new Pods are available.
            let took = sim::time::elapsed().unwrap_or_default().saturating_sub(started);
            if took < Duration::from_secs(2 * MIN_READY as u64) {
                return Err(failed_step("time the rollout", format!("rolled out in {took:?}")));
            }
            Ok(())
        }
    })
    .property(FnProperty::at_end("every Pod available in the end", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let d = snapshot::object::<Deployment>(snap, Some("default"), "web").ok_or("no web")?;
        let available = d.status.and_then(|s| s.available_replicas);
        if available == Some(REPLICAS) { Ok(()) } else { Err(format!("available {available:?}")) }
    }));
    let report = sweep(&SweepConfig::new("builtins-min-ready-deployment").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_statefulset_with_min_ready_seconds_creates_each_ordinal_once_the_previous_is_available() {
    const MIN_READY: i32 = 5;
    let claim = crate::builtins_volumes::claim("data", None, "1Gi").spec.expect("a claim spec");
    let mut set = crate::builtins_statefulset::db_claiming(3, claim);
    set.spec.min_ready_seconds = Some(MIN_READY);
    let world = builtins::kubelet(builtins::local_provisioner(builtins::persistentvolume_binder(
        builtins::statefulset_controller(Sim::builder().scenario("builtins-min-ready-statefulset")),
    )))
    .workload(move |w| {
        let set = set.clone();
        async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &set).await?;
            let available = |s: Option<&StatefulSet>| {
                s.and_then(|s| s.status.as_ref()).is_some_and(|s| s.available_replicas == Some(3))
            };
            w.wait_for(&sets, "db", available, WAIT).await
        }
    })
    .property(FnProperty::always(
        "db-<i+1> is created only minReadySeconds after db-<i> is Ready",
        |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            for ordinal in 1..3 {
                let Some(next) = snapshot::object::<Pod>(snap, Some("default"), &format!("db-{ordinal}"))
                else {
                    continue;
                };
                let previous = snapshot::object::<Pod>(snap, Some("default"), &format!("db-{}", ordinal - 1))
                    .ok_or(format!("db-{ordinal} without db-{}", ordinal - 1))?;
                let created = next.metadata.creation_timestamp.as_ref().map(|t| t.0);
                let available_from = ready_since(&previous)
                    .and_then(|t| t.checked_add(jiff::SignedDuration::from_secs(i64::from(MIN_READY))).ok());
                // Both stored to the second: the controller saw it available strictly later.
                if !matches!((available_from, created), (Some(from), Some(created)) if from <= created) {
                    return Err(format!(
                        "db-{ordinal} created at {created:?}, db-{} available from {available_from:?}",
                        ordinal - 1
                    ));
                }
            }
            Ok(())
        },
    ));
    let report = sweep(&SweepConfig::new("builtins-min-ready-statefulset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_daemonset_with_min_ready_seconds_rolls_one_node_at_a_time_each_after_it() {
    const MIN_READY: i32 = 10;
    let world = builtins::kubelet(builtins::daemonset_controller(
        Sim::builder().scenario("builtins-min-ready-daemonset"),
    ))
    .workload(|w| async move {
        let nodes: Api<Node> = Api::all(w.client());
        for name in ["node-a", "node-b", "node-c"] {
            w.apply(&nodes, &crate::builtins_daemonset::node(name, "worker")).await?;
        }
        let sets: Api<DaemonSet> = Api::namespaced(w.client(), "default");
        let mut agent = crate::builtins_daemonset::agent();
        agent.spec.min_ready_seconds = Some(MIN_READY);
        w.apply(&sets, &agent).await?;
        let all_ready = |ds: Option<&DaemonSet>| {
            ds.and_then(|ds| ds.status.as_ref()).is_some_and(|s| s.number_ready == 3)
        };
        w.wait_for(&sets, "agent", all_ready, WAIT).await?;
        let ready = sets.get("agent").await.map_err(|e| failed_step("get agent", e.to_string()))?;
        let available = ready.status.and_then(|s| s.number_available).unwrap_or(0);
        if available != 0 {
            return Err(failed_step("check no Pod is available yet", format!("{available} available")));
        }
        w.wait_for(&sets, "agent", crate::builtins_daemonset::rolled_out(3), WAIT).await?;
        let started = sim::time::elapsed().unwrap_or_default();
        crate::builtins_daemonset::roll_agent_to_image_2(&w, &sets, WAIT).await?;
        // One Node at a time (maxUnavailable 1), each new Pod available before the next Node's
        // old one goes: three rounds of `minReadySeconds`.
        let took = sim::time::elapsed().unwrap_or_default().saturating_sub(started);
        if took < Duration::from_secs(3 * MIN_READY as u64) {
            return Err(failed_step("time the rollout", format!("rolled out in {took:?}")));
        }
        Ok(())
    });
    let report = sweep(&SweepConfig::new("builtins-min-ready-daemonset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
