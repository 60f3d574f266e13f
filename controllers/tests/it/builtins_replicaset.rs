//! The ReplicaSet controller with the kubelet-lite: Pods are created to match `replicas`, become
//! Running and Ready, and are deleted when the ReplicaSet scales down.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::builtins_namespace_defaults::namespace;
use crate::fault_plans::{RefusedCreates, crash_after_create, lagging_watch};
use controllers::builtins::{self, owners, pod_state, snapshot};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, Event, Namespace, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use sim::api::{Api, ObjectMeta, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(60);

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

/// ReplicaSet `web` of `replicas` nginx Pods labelled `app=web` (grace period 1 s).
pub(crate) fn replica_set(replicas: i32) -> ReplicaSet {
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
            // The orphan exists before the ReplicaSet, long enough for the controller's Pod cache
            // to show it. Made in the same instant, the cache may not (seed 175 of 200: its list
            // predates the orphan, whose watch event comes 2 ms after the first sync), and then
            // a Pod is created and the orphan adopted and deleted as the surplus, as upstream's
            // informer-fed sync does too.
            w.sleep(Duration::from_secs(1)).await;
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

/// The Events about the ReplicaSet `web` with `reason`: (type, message, count).
fn events_about_web(view: &sim::EndView<'_>, reason: &str) -> Vec<(String, String, i32)> {
    let Some(snap) = view.cluster("default") else { return Vec::new() };
    snapshot::objects::<Event>(snap, Some("default"))
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("web") && e.reason.as_deref() == Some(reason))
        .map(|e| (e.type_.unwrap_or_default(), e.message.unwrap_or_default(), e.count.unwrap_or(1)))
        .collect()
}

/// A sync that keeps failing is retried as kube-controller-manager's work queue retries it: 5 ms
/// after the first failure, doubling at each one after (plus the calls' own latency), not every
/// half second; each refused create is a `FailedCreate` Warning with the server's message, as
/// `RealPodControl` publishes it; and once a create goes through, the ReplicaSet gets its Pod.
#[test]
fn a_failing_sync_is_retried_after_5ms_doubling_at_each_failure_and_each_failure_is_a_warning() {
    let hook = RefusedCreates::new(builtins::replicaset::NODE, "pods/", 7);
    let sent = hook.sent.clone();
    let world =
        builtins::kubelet(builtins::replicaset_controller(Sim::builder().scenario("builtins-rs-backoff")))
            .fault_hook(move |_seed| hook.clone())
            .property(FnProperty::at_end("FailedCreate Warnings, then SuccessfulCreate", |view| {
                let failed = events_about_web(view, "FailedCreate");
                let message = "Error creating: Internal error occurred: refused by the test";
                let count: i32 = failed.iter().map(|(_, _, count)| count).sum();
                if count != 7 || failed.iter().any(|(type_, m, _)| type_ != "Warning" || m != message) {
                    return Err(format!("seven {message:?} Warnings expected: {failed:?}"));
                }
                match events_about_web(view, "SuccessfulCreate").as_slice() {
                    [(type_, _, 1)] if type_ == "Normal" => Ok(()),
                    other => Err(format!("one SuccessfulCreate expected: {other:?}")),
                }
            }))
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

/// In a namespace being terminated every create is refused (403, `NamespaceTerminating`): the
/// controller gives up creating without failing the sync, as upstream's, instead of retrying a
/// create that cannot succeed.
#[test]
fn a_replicaset_in_a_terminating_namespace_does_not_retry_its_refused_creates() {
    let hook = RefusedCreates::new(builtins::replicaset::NODE, "pods/", 0);
    let sent = hook.sent.clone();
    // No namespace controller: the namespace stays Terminating with the ReplicaSet in it.
    let world = builtins::kubelet(builtins::replicaset_controller(
        Sim::builder().scenario("builtins-rs-terminating"),
    ))
    .fault_hook(move |_seed| hook.clone())
    .workload(|w| async move {
        let namespaces: Api<Namespace> = Api::all(w.client());
        w.apply(&namespaces, &namespace("team")).await?;
        let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "team");
        let mut rs = replica_set(1);
        rs.metadata.namespace = Some("team".to_owned());
        w.apply(&sets, &rs).await?;
        w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), WAIT).await?;
        namespaces.delete("team", &Default::default()).await.map_err(|e| failed("delete namespace", e))?;
        let patch = Patch::Merge(serde_json::json!({"spec": {"replicas": 3}}));
        sets.patch("web", &Default::default(), &patch).await.map_err(|e| failed("scale", e))?;
        w.sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    let report = world.run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    // The first create made the one Pod; the others came after the scale.
    let refused = sent.lock().unwrap().len() - 1;
    // The scale and the sync's own status write each trigger a sync: a create or two, where
    // retrying the failed sync would make one at every backoff step (over ten in ten seconds).
    assert!((1..=3).contains(&refused), "{refused} creates after the scale");
}

#[test]
fn a_pod_deleted_while_the_pod_watch_is_down_is_replaced_after_the_relist() {
    // The controller's watches are held 2 s from the moment its Pod runs, then expire (410): the
    // deletion the workload makes meanwhile is never delivered as an event, and the relist
    // simply no longer holds the Pod. kube-controller-manager's informer hands that Pod to its
    // delete handler (`DeletedFinalStateUnknown`), so the ReplicaSet is synced and the Pod
    // replaced at once, not at some later event.
    let hold = sim::faults::PlannedFault {
        trigger: sim::faults::Trigger::AtTime { at_ms: 3_000 },
        fault: sim::faults::Fault::SkipByRelist {
            controller: builtins::replicaset::NODE.to_owned(),
            duration_ms: 2_000,
        },
    };
    let world = Sim::builder().scenario("builtins-replicaset-relist-gap");
    let world = builtins::kubelet(builtins::replicaset_controller(world))
        .workload(|w| async move {
            let sets: Api<ReplicaSet> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &replica_set(1)).await?;
            w.wait_for(&sets, "web", |rs| ready_replicas(rs, 1), Duration::from_millis(2_500)).await?;
            let since_start = sim::time::elapsed().unwrap_or_default();
            w.sleep(Duration::from_secs(4).saturating_sub(since_start)).await;
            let listed = pods.list(&Default::default()).await.map_err(|e| failed("list pods", e))?;
            let first = listed.items.into_iter().next().and_then(|p| p.metadata.name).unwrap_or_default();
            let now = sim::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
            pods.delete(&first, &now).await.map_err(|e| failed("delete pod", e))?;
            w.wait_for_all(&pods, |all| all.iter().any(|p| p.metadata.name.as_deref() != Some(&first)), WAIT)
                .await
        })
        .faults(sim::faults::FaultPlan { faults: vec![hold] });
    let report = sweep(&SweepConfig::new("builtins-replicaset-relist-gap").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
