//! The ReplicaSet controller with the kubelet-lite: Pods are created to match `replicas`, become
//! Running and Ready, and are deleted when the ReplicaSet scales down.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fault_plans::{crash_after_create, lagging_watch};
use controllers::builtins::{self, owners, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, ObjectMeta, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(60);

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn replica_set(replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector { match_labels: Some(labels()), ..LabelSelector::default() },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels()), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".to_owned(),
                        image: Some("nginx:1".to_owned()),
                        ..Container::default()
                    }],
                    termination_grace_period_seconds: Some(1),
                    ..PodSpec::default()
                }),
            }),
            ..ReplicaSetSpec::default()
        },
        status: None,
    }
}

/// The active Pods controlled by the ReplicaSet `web` in a snapshot.
fn active_pods(snap: &model_apiserver::Snapshot) -> Vec<Pod> {
    let Some(rs) = snapshot::object::<ReplicaSet>(snap, Some("default"), "web") else { return Vec::new() };
    let uid = rs.metadata.uid.unwrap_or_default();
    snapshot::objects::<Pod>(snap, Some("default"))
        .into_iter()
        .filter(|p| owners::is_controlled_by(&p.metadata, &uid) && pod_state::is_active(p))
        .collect()
}

fn ready_replicas(rs: Option<&ReplicaSet>, want: i32) -> bool {
    rs.and_then(|rs| rs.status.as_ref()).is_some_and(|s| s.ready_replicas == Some(want) && s.replicas == want)
}

/// Scale 3, wait until 3 are ready, scale to 1, wait until 1 is.
fn scaling_world() -> SimBuilder {
    let world = Sim::builder().scenario("builtins-replicaset-scaling");
    let world = builtins::kubelet(builtins::replicaset_controller(world));
    world
        .workload(|w| async move {
            let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &replica_set(3)).await?;
            w.wait_for(&sets, "web", |rs| ready_replicas(rs, 3), WAIT).await?;
            w.patch(&sets, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 1 } }))).await?;
            w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), WAIT).await
        })
        .property(FnProperty::always("never more than 3 active pods", |view| {
            let pods = active_pods(view.cluster("default").ok_or("no cluster")?);
            if pods.len() <= 3 { Ok(()) } else { Err(format!("{} active pods", pods.len())) }
        }))
        .property(FnProperty::at_end("one running and ready pod remains", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let pods = active_pods(snap);
            let all = snapshot::objects::<Pod>(snap, Some("default"));
            let ready = pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count();
            if pods.len() == 1 && ready == 1 && all.len() == 1 {
                Ok(())
            } else {
                Err(format!("{} active, {ready} ready, {} pods in total", pods.len(), all.len()))
            }
        }))
}

#[test]
fn replicaset_scales_up_to_three_ready_pods_and_down_to_one() {
    let world = scaling_world();
    let report = sweep(&SweepConfig::new("builtins-replicaset-scaling").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn replicaset_pods_get_generated_names_and_a_blocking_controller_reference() {
    let world = scaling_world().property(FnProperty::at_end("pod metadata", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let rs = snapshot::object::<ReplicaSet>(snap, Some("default"), "web").ok_or("no rs")?;
        for pod in active_pods(snap) {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let owner = owners::controller_of(&pod.metadata).ok_or("no controller")?;
            let expected = (
                pod.metadata.generate_name.as_deref(),
                name.len(),
                owner.kind.as_str(),
                owner.block_owner_deletion,
                Some(owner.uid.as_str()),
            );
            let want = (Some("web-"), "web-".len() + 5, "ReplicaSet", Some(true), rs.metadata.uid.as_deref());
            if expected != want {
                return Err(format!("pod {name}: {expected:?}, want {want:?}"));
            }
        }
        Ok(())
    }));
    let report = world.run(3);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
}

#[test]
fn replicaset_adopts_a_matching_orphan_pod_instead_of_creating_one() {
    let world = builtins::kubelet(builtins::replicaset_controller(Sim::builder()))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let template = replica_set(1).spec.template.unwrap_or_default();
            let orphan = Pod {
                metadata: ObjectMeta {
                    name: Some("orphan".to_owned()),
                    labels: Some(labels()),
                    ..ObjectMeta::default()
                },
                spec: template.spec,
                status: None,
            };
            w.apply(&pods, &orphan).await?;
            let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &replica_set(1)).await?;
            w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), WAIT).await
        })
        .property(FnProperty::at_end("the orphan was adopted", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let names: Vec<String> = active_pods(snap).into_iter().filter_map(|p| p.metadata.name).collect();
            if names == ["orphan"] { Ok(()) } else { Err(format!("controlled pods: {names:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-replicaset-adoption").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// The scaling world with the ReplicaSet controller's Pod watch held back `extra_ms` per pull
/// for the first ten seconds: its Pod cache lags seconds behind the Pods it creates, while the
/// ReplicaSet's own events (its status writes) keep triggering syncs.
fn lagging_pod_cache_world(extra_ms: u64) -> SimBuilder {
    scaling_world().faults(lagging_watch(builtins::replicaset::NODE, "pods", extra_ms, 10_000))
}

#[test]
fn replicaset_creates_no_pod_twice_while_its_pod_cache_lags_behind_its_creates() {
    // The always-property of the scaling world (never more than 3 active Pods) fails at once if a
    // sync takes the lagging cache's missing Pods for missing Pods: the expectations of the Pods
    // it created hold its creates back until the cache shows them, as upstream's do.
    let world = lagging_pod_cache_world(3_000);
    let report =
        sweep(&SweepConfig::new("builtins-replicaset-lagging-cache").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

#[test]
fn a_restarted_replicaset_controller_waits_for_its_pod_cache_before_it_syncs() {
    // Crashed right after its third create and restarted: the new incarnation starts with an
    // empty Pod cache and no expectations, and must not take the empty cache for no Pods.
    let plan = crash_after_create(builtins::replicaset::NODE, "Pod", 3);
    let world = scaling_world().faults(plan);
    let report = sweep(&SweepConfig::new("builtins-replicaset-restart").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
    for seed in 0..3 {
        let run = world.run(seed);
        assert!(run.unfired.is_empty(), "seed {seed}: the crash did not fire: {:?}", run.unfired);
    }
}

#[test]
fn a_pod_force_deleted_while_the_cache_lags_is_replaced_without_waiting_out_the_expectations() {
    // The controller's Pod watch is held back 3 s a pull, and the workload force-deletes the
    // first Pod as soon as it exists. The controller's expectation of that Pod is met when its
    // cache shows the Pod, and the deletion reaches the cache after it: the controller replaces
    // the Pod within a minute, never waiting out the five minutes an unmet expectation would
    // hold it back.
    let world = builtins::kubelet(builtins::replicaset_controller(Sim::builder()))
        .workload(|w| async move {
            let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &replica_set(1)).await?;
            let first = loop {
                let listed = pods.list(&Default::default()).await.map_err(|e| failed("list pods", e))?;
                if let Some(pod) = listed.items.into_iter().next() {
                    break pod.metadata.name.unwrap_or_default();
                }
                w.sleep(Duration::from_millis(10)).await;
            };
            // Gone at once (no grace period), not terminating: the cache never holds it.
            let now = sim::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
            pods.delete(&first, &now).await.map_err(|e| failed("delete pod", e))?;
            w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), WAIT).await
        })
        .faults(lagging_watch(builtins::replicaset::NODE, "pods", 3_000, 30_000));
    let report =
        sweep(&SweepConfig::new("builtins-replicaset-force-deleted").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

fn failed(action: &str, error: sim::Error) -> sim::WorkloadError {
    sim::WorkloadError { step: 0, action: action.to_owned(), reason: error.to_string() }
}

/// Refuses the ReplicaSet controller's first `refusals` Pod creates (500), recording the virtual
/// time of every create it sends.
#[derive(Clone)]
struct RefusedCreates {
    refusals: usize,
    sent: std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl sim::transport::FaultHook for RefusedCreates {
    fn before_call(
        &mut self,
        call: &sim::transport::CallInfo<'_>,
        _request: &model_apiserver::Request,
    ) -> Option<kube_core::Status> {
        if call.node != builtins::replicaset::NODE
            || call.verb != "create"
            || !call.target.starts_with("pods/")
        {
            return None;
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push(call.elapsed);
        (sent.len() <= self.refusals).then(|| model_apiserver::errors::internal_error("refused by the test"))
    }
}

/// A sync that keeps failing is retried as kube-controller-manager's work queue retries it: 5 ms
/// after the first failure, doubling at each one after (plus the calls' own latency), not every
/// half second; and once a create goes through, the ReplicaSet gets its Pod.
#[test]
fn a_failing_sync_is_retried_after_5ms_doubling_at_each_failure() {
    let hook = RefusedCreates { refusals: 7, sent: Default::default() };
    let sent = hook.sent.clone();
    let world =
        builtins::kubelet(builtins::replicaset_controller(Sim::builder().scenario("builtins-rs-backoff")))
            .fault_hook(move |_seed| hook.clone())
            .workload(|w| async move {
                let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
                w.apply(&sets, &replica_set(1)).await?;
                w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), WAIT).await
            });
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 8, "seven refused creates and the one that went through: {sent:?}");
    let gaps: Vec<Duration> = sent.windows(2).map(|w| w[1] - w[0]).collect();
    for (i, gap) in gaps.iter().enumerate() {
        let backoff = Duration::from_millis(5 << i);
        // The retry waits its backoff, then reads and creates again: a few calls' latency more.
        assert!(
            *gap >= backoff && *gap < backoff + Duration::from_millis(100),
            "gap {i}: {gap:?} in {gaps:?}"
        );
    }
}
