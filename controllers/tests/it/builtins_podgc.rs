//! The Pod garbage collector with the Deployment and ReplicaSet controllers and the kubelet-lite:
//! the Pods of a deleted Node are force-deleted once it has been gone for the 40 s quarantine,
//! and the ReplicaSet's replacements run on a Node that exists; a Node registered again within
//! the quarantine keeps its Pods; a Pod held by a finalizer ends Failed with `DisruptionTarget`;
//! a terminating Pod never scheduled ends Failed; a terminating Pod on an out-of-service Node
//! goes without waiting for its grace period. Also under swarm faults, with every built-in.

use std::time::Duration;

use controllers::builtins::{self, checks, kubelet, pod_state, podgc, snapshot};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use sim::api::{Api, Patch};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(120);
/// Under faults: a delayed watch holds back every event behind it.
const FAULTS_WAIT: Duration = Duration::from_secs(400);
/// How long after the quarantine an orphaned Pod may go in a fault-free run: the Node's deletion
/// reaches the collector's cache, and the workload sees the Pod go, within moments.
const QUARANTINE_SLACK: Duration = Duration::from_secs(5);

fn node(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
    )
}

/// A Deployment `name` of `replicas` Pods labelled `app: <name>`, with `extra_spec` in their spec.
fn deployment(name: &str, replicas: u32, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  \
         replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    \
         metadata: {{labels: {{app: {name}}}}}\n    spec:\n      terminationGracePeriodSeconds: 1\n      \
         containers: [{{name: app, image: app}}]\n{extra_spec}"
    )
}

/// A bare Pod `name` with `extra_spec` (and `extra_meta` in its metadata).
fn pod(name: &str, extra_meta: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n{extra_meta}spec:\n  \
         containers: [{{name: app, image: app}}]\n{extra_spec}"
    )
}

const FINALIZER: &str = "example.com/hold";

fn cordon(on: bool) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}}))
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

fn app_of(pod: &Pod) -> Option<&str> {
    pod.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str)
}

/// The Pods bound to `node` that are Running and Ready and not being deleted.
fn running_on(pods: &[Pod], node: &str) -> usize {
    pods.iter()
        .filter(|p| {
            node_of(p) == Some(node) && pod_state::is_running_and_ready(p) && !pod_state::is_terminating(p)
        })
        .count()
}

fn disruption_target(pod: &Pod) -> Option<&PodCondition> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == podgc::CONDITION_DISRUPTION_TARGET)
}

fn failed_step(action: &str, reason: String) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason }
}

fn sweep_passes(name: &str, world: &SimBuilder, seeds: u64) {
    let report = sweep(&SweepConfig::new(name).seeds(seeds), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

/// The Deployment and ReplicaSet controllers, the kubelet-lite and the Pod garbage collector.
fn world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    let world = builtins::deployment_controller(builtins::replicaset_controller(world));
    builtins::podgc_controller(builtins::kubelet(world))
}

/// Every Pod of the Deployment `web` Running on node-1, and none left on node-a.
fn rescheduled_on_node_1() -> FnProperty {
    FnProperty::at_end("web's pods run on node-1 and none is left on node-a", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let pods = snapshot::objects::<Pod>(snap, Some("default"));
        let on_a = pods.iter().filter(|p| node_of(p) == Some("node-a")).count();
        let placed = (pods.len(), running_on(&pods, kubelet::NODE_NAME), on_a);
        if placed == (2, 2, 0) {
            Ok(())
        } else {
            Err(format!("(pods, running on node-1, on node-a): {placed:?}"))
        }
    })
}

/// node-1 cordoned and node-a declared, then the Deployment `web` of two Pods, which run on
/// node-a; then node-a is deleted and node-1 uncordoned. Returns when the deletion was sent.
async fn web_on_node_a_then_node_a_deleted(
    w: &sim::Workload,
    wait: Duration,
) -> Result<Timestamp, WorkloadError> {
    let nodes: Api<Node> = Api::all(w.client());
    let pods: Api<Pod> = Api::namespaced(w.client(), "default");
    w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), wait).await?;
    w.patch(&nodes, kubelet::NODE_NAME, &cordon(true)).await?;
    w.apply_yaml("default", &node("node-a")).await?;
    w.apply_yaml("default", &deployment("web", 2, "")).await?;
    w.wait_for_all(&pods, |pods| running_on(pods, "node-a") == 2, wait).await?;
    let deleted_at = sim::time::now();
    w.delete(&nodes, "node-a").await?;
    w.patch(&nodes, kubelet::NODE_NAME, &cordon(false)).await?;
    Ok(deleted_at)
}

#[test]
fn the_pods_of_a_deleted_node_are_deleted_after_the_quarantine_and_replaced_on_another_node() {
    let world = world("builtins-podgc-orphans")
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let deleted_at = web_on_node_a_then_node_a_deleted(&w, WAIT).await?;
            // Well within the quarantine, the Pods on the missing Node are left alone.
            w.sleep(Duration::from_secs(30)).await;
            w.wait_for_all(&pods, |pods| running_on(pods, "node-a") == 2, Duration::ZERO).await?;
            // The first of them to be marked Failed or to go.
            w.wait_for_all(&pods, |pods| running_on(pods, "node-a") < 2, WAIT).await?;
            let after = Duration::try_from(sim::time::now().duration_since(deleted_at)).unwrap_or_default();
            if after < podgc::QUARANTINE || after > podgc::QUARANTINE + QUARANTINE_SLACK {
                return Err(failed_step(
                    "check the quarantine",
                    format!("the first pod went {after:?} after its node"),
                ));
            }
            let done = |pods: &[Pod]| {
                pods.len() == 2
                    && running_on(pods, kubelet::NODE_NAME) == 2
                    && pods.iter().all(|p| node_of(p) != Some("node-a"))
            };
            w.wait_for_all(&pods, done, WAIT).await
        })
        .property(rescheduled_on_node_1());
    sweep_passes("builtins-podgc-orphans", &world, SEEDS);
}

// Two Deployments, one on node-a and one on node-b (by node selector); both Nodes are deleted and
// node-a registered again 10 s later: its Pods are kept, node-b's go (their replacements wait
// for a node-b, and run once one is registered).
#[test]
fn a_node_registered_again_within_the_quarantine_keeps_its_pods() {
    let on = |node: &str| format!("      nodeSelector: {{kubernetes.io/hostname: {node}}}\n");
    let world = world("builtins-podgc-back").workload(move |w| async move {
        let nodes: Api<Node> = Api::all(w.client());
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &node("node-a")).await?;
        w.apply_yaml("default", &node("node-b")).await?;
        w.apply_yaml("default", &deployment("a", 2, &on("node-a"))).await?;
        w.apply_yaml("default", &deployment("b", 2, &on("node-b"))).await?;
        let placed = |pods: &[Pod]| running_on(pods, "node-a") == 2 && running_on(pods, "node-b") == 2;
        w.wait_for_all(&pods, placed, WAIT).await?;
        let names_of_a = |pods: &[Pod]| -> Vec<String> {
            pods.iter().filter(|p| app_of(p) == Some("a")).filter_map(|p| p.metadata.name.clone()).collect()
        };
        let before = names_of_a(
            &pods.list(&Default::default()).await.map_err(|e| failed_step("list pods", e.to_string()))?.items,
        );
        w.delete(&nodes, "node-a").await?;
        w.delete(&nodes, "node-b").await?;
        w.sleep(Duration::from_secs(10)).await;
        w.apply_yaml("default", &node("node-a")).await?;
        // node-b's Pods go, replaced by Pods that no Node fits.
        let b_collected = |pods: &[Pod]| {
            let b: Vec<&Pod> = pods.iter().filter(|p| app_of(p) == Some("b")).collect();
            b.len() == 2 && b.iter().all(|p| !pod_state::is_scheduled(p))
        };
        w.wait_for_all(&pods, b_collected, WAIT).await?;
        // A node-b registered again runs them.
        w.apply_yaml("default", &node("node-b")).await?;
        w.wait_for_all(&pods, |pods| running_on(pods, "node-b") == 2, WAIT).await?;
        w.sleep(podgc::QUARANTINE).await;
        let a_kept = move |pods: &[Pod]| names_of_a(pods) == before && running_on(pods, "node-a") == 2;
        w.wait_for_all(&pods, a_kept, Duration::ZERO).await?;
        w.wait_for_all(&pods, |pods| pods.iter().all(|p| disruption_target(p).is_none()), Duration::ZERO)
            .await
    });
    sweep_passes("builtins-podgc-back", &world, SEEDS);
}

// A Pod bound to a Node that never existed, held by a finalizer: after the quarantine it is
// marked Failed with upstream's condition and deleted, and goes with its finalizer.
#[test]
fn an_orphaned_pod_held_by_a_finalizer_is_marked_failed_with_the_disruption_target_condition() {
    let world =
        builtins::podgc_controller(builtins::kubelet(Sim::builder().scenario("builtins-podgc-marked")))
            .workload(|w| async move {
                let pods: Api<Pod> = Api::namespaced(w.client(), "default");
                let meta = format!("  finalizers: [{FINALIZER}]\n");
                w.apply_yaml("default", &pod("lost", &meta, "  nodeName: node-x\n")).await?;
                let marked = |p: Option<&Pod>| {
                    p.is_some_and(|p| {
                        let condition = disruption_target(p);
                        pod_state::phase(p) == pod_state::PHASE_FAILED
                            && p.metadata.deletion_timestamp.is_some()
                            && p.metadata.deletion_grace_period_seconds == Some(0)
                            && condition.is_some_and(|c| {
                                (c.status.as_str(), c.reason.as_deref(), c.message.as_deref())
                                    == (
                                        "True",
                                        Some(podgc::REASON_DELETION_BY_POD_GC),
                                        Some(podgc::MESSAGE_NODE_GONE),
                                    )
                            })
                    })
                };
                w.wait_for(&pods, "lost", marked, WAIT).await?;
                w.patch(&pods, "lost", &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})))
                    .await?;
                w.wait_for(&pods, "lost", |p| p.is_none(), WAIT).await
            });
    sweep_passes("builtins-podgc-marked", &world, SEEDS);
}

// A Pod no Node fits, held by a finalizer and deleted: the server cannot remove it yet, and the
// collector marks it Failed (without a condition: its Node is not the cause).
#[test]
fn a_terminating_pod_never_scheduled_is_marked_failed() {
    let world =
        builtins::podgc_controller(builtins::kubelet(Sim::builder().scenario("builtins-podgc-unscheduled")))
            .workload(|w| async move {
                let pods: Api<Pod> = Api::namespaced(w.client(), "default");
                let meta = format!("  finalizers: [{FINALIZER}]\n");
                w.apply_yaml("default", &pod("waiting", &meta, "  nodeSelector: {disk: none}\n")).await?;
                let unschedulable = |p: Option<&Pod>| {
                    p.and_then(|p| p.status.as_ref()?.conditions.as_ref())
                        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "PodScheduled" && c.status == "False"))
                };
                w.wait_for(&pods, "waiting", unschedulable, WAIT).await?;
                w.delete(&pods, "waiting").await?;
                let failed = |p: Option<&Pod>| {
                    p.is_some_and(|p| {
                        pod_state::phase(p) == pod_state::PHASE_FAILED && disruption_target(p).is_none()
                    })
                };
                w.wait_for(&pods, "waiting", failed, WAIT).await?;
                w.patch(
                    &pods,
                    "waiting",
                    &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
                )
                .await?;
                w.wait_for(&pods, "waiting", |p| p.is_none(), WAIT).await
            });
    sweep_passes("builtins-podgc-unscheduled", &world, SEEDS);
}

// node-a is not Ready (it has no status) and gets the out-of-service taint: a Pod deleted there
// with a grace period of 30 s goes at once.
#[test]
fn a_terminating_pod_on_an_out_of_service_node_goes_without_its_grace_period() {
    let world = builtins::podgc_controller(builtins::kubelet(
        Sim::builder().scenario("builtins-podgc-out-of-service"),
    ))
    .workload(|w| async move {
        let nodes: Api<Node> = Api::all(w.client());
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &node("node-a")).await?;
        let spec = "  nodeName: node-a\n  terminationGracePeriodSeconds: 30\n";
        w.apply_yaml("default", &pod("stuck", "", spec)).await?;
        w.wait_for(&pods, "stuck", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
        let taint = serde_json::json!({"spec": {"taints": [
                {"key": podgc::TAINT_OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}]}});
        w.patch(&nodes, "node-a", &Patch::Merge(taint)).await?;
        w.delete(&pods, "stuck").await?;
        w.wait_for(&pods, "stuck", |p| p.is_none(), Duration::from_secs(5)).await?;
        // The kubelet-lite's own wait for the grace period ends before the world does.
        w.sleep(Duration::from_secs(30)).await;
        Ok(())
    });
    sweep_passes("builtins-podgc-out-of-service", &world, SEEDS);
}

#[test]
fn under_swarm_faults_the_pods_of_a_deleted_node_are_replaced_on_another_node() {
    let world = builtins::all(Sim::builder().scenario("builtins-podgc-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            web_on_node_a_then_node_a_deleted(&w, FAULTS_WAIT).await?;
            let done = |pods: &[Pod]| {
                pods.len() == 2
                    && running_on(pods, kubelet::NODE_NAME) == 2
                    && pods.iter().all(|p| node_of(p) != Some("node-a"))
            };
            w.wait_for_all(&pods, done, FAULTS_WAIT).await
        })
        .property(checks::garbage_collected())
        .property(rescheduled_on_node_1());
    sweep_passes("builtins-podgc-faults", &world, SEEDS);
}

fn running_pod() -> Pod {
    serde_yaml_ng::from_str(
        "metadata: {name: p, namespace: default, uid: u-1}\n\
         spec: {nodeName: node-a, containers: [{name: app}]}\n\
         status:\n  phase: Running\n  conditions: [{type: Ready, status: 'True'}]\n",
    )
    .expect("a Pod")
}

fn at(time: &str) -> Time {
    Time(time.parse().expect("a time"))
}

#[test]
fn a_running_pod_is_patched_failed_with_the_condition_and_its_uid_as_precondition() {
    let now = at("2026-01-01T00:01:00Z");
    let patch = podgc::failed_status_patch(&running_pod(), Some(podgc::node_gone_condition()), now);
    let want = serde_json::json!({
        "metadata": {"uid": "u-1"},
        "status": {"phase": "Failed", "conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists", "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
    });
    assert_eq!(patch, Some(want));
    // Without a condition (a terminating Pod), only the phase.
    let patch = podgc::failed_status_patch(&running_pod(), None, at("2026-01-01T00:01:00Z"));
    assert_eq!(patch, Some(serde_json::json!({"metadata": {"uid": "u-1"}, "status": {"phase": "Failed"}})));
}

#[test]
fn a_condition_already_true_keeps_its_transition_time_and_a_finished_pod_is_not_patched() {
    let mut pod = running_pod();
    let earlier = at("2026-01-01T00:00:10Z");
    let condition =
        PodCondition { last_transition_time: Some(earlier.clone()), ..podgc::node_gone_condition() };
    pod.status.as_mut().and_then(|s| s.conditions.as_mut()).expect("conditions").push(condition);
    let patch =
        podgc::failed_status_patch(&pod, Some(podgc::node_gone_condition()), at("2026-01-01T00:01:00Z"))
            .expect("a patch");
    assert_eq!(patch["status"]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:10Z");
    for phase in [pod_state::PHASE_SUCCEEDED, pod_state::PHASE_FAILED] {
        pod.status.as_mut().expect("a status").phase = Some(phase.to_owned());
        assert_eq!(
            podgc::failed_status_patch(&pod, Some(podgc::node_gone_condition()), earlier.clone()),
            None
        );
    }
}

#[test]
fn a_node_is_out_of_service_only_when_not_ready_and_tainted() {
    let node = |ready: &str, taints: &str| -> Node {
        serde_yaml_ng::from_str(&format!(
            "metadata: {{name: n}}\nspec: {{taints: {taints}}}\n\
             status: {{conditions: [{{type: Ready, status: '{ready}'}}]}}\n"
        ))
        .expect("a Node")
    };
    let out_of_service = "[{key: node.kubernetes.io/out-of-service, value: nodeshutdown, effect: NoExecute}]";
    assert!(podgc::is_out_of_service(&node("False", out_of_service)));
    assert!(podgc::is_out_of_service(&node("Unknown", out_of_service)));
    assert!(!podgc::is_out_of_service(&node("True", out_of_service)));
    assert!(!podgc::is_out_of_service(&node("False", "[{key: other, effect: NoExecute}]")));
}

#[test]
fn a_quarantine_lasts_40s_from_when_the_node_was_first_missed_and_a_release_ends_it() {
    let start: Timestamp = "2026-01-01T00:00:00Z".parse().expect("a time");
    let later = |seconds: i64| start + SignedDuration::from_secs(seconds);
    let quarantine = podgc::Quarantine::default();
    assert_eq!(quarantine.remaining("node-a", start), Some(podgc::QUARANTINE));
    assert_eq!(quarantine.remaining("node-a", later(30)), Some(Duration::from_secs(10)));
    assert_eq!(quarantine.remaining("node-a", later(40)), None);
    // Seen again, then missed again: a new quarantine.
    quarantine.release("node-a");
    assert_eq!(quarantine.remaining("node-a", later(50)), Some(podgc::QUARANTINE));
    quarantine.restart("node-a", later(95));
    assert_eq!(quarantine.remaining("node-a", later(100)), Some(Duration::from_secs(35)));
}

#[test]
fn the_pod_garbage_collector_comes_with_the_other_builtins() {
    let names = builtins::all(Sim::builder()).controller_names();
    assert!(names.iter().any(|n| n == podgc::NODE), "{} missing from {names:?}", podgc::NODE);
}
