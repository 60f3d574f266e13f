//! The node lifecycle and taint eviction controllers with the workload controllers and the
//! kubelet-lite: a `NoExecute` taint empties a Node of the Pods that do not tolerate it, at once
//! or after their `tolerationSeconds`, and a removed taint cancels a scheduled eviction; a Node
//! that is not Ready is tainted `not-ready` (`NoSchedule` and `NoExecute`), loses its Pods after
//! the 300 s kube-apiserver's admission gives them, and is untainted once Ready again; a
//! one-Node cluster whose Node is not Ready keeps its Pods; a cordon is a taint; a zone is
//! tainted one Node at a time. Also under swarm faults, with every built-in.

use std::time::Duration;

use controllers::builtins::{self, kubelet, node_lifecycle, pod_state, podgc, snapshot, taint_eviction};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Taint, Toleration};
use sim::api::{Api, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 10;
const WAIT: Duration = Duration::from_secs(120);
/// What kube-apiserver's `DefaultTolerationSeconds` gives a Pod for `not-ready` and `unreachable`.
const DEFAULT_TOLERATION: Duration = Duration::from_secs(300);

fn failed_step(action: &str, reason: String) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason }
}

fn sweep_passes(name: &str, world: &SimBuilder, seeds: u64) {
    let report = sweep(&SweepConfig::new(name).seeds(seeds), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

/// A Node `name`, in zone `zone` unless that is empty.
fn node(name: &str, zone: &str) -> String {
    let zone = if zone.is_empty() { String::new() } else { format!(", topology.kubernetes.io/zone: {zone}") };
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}{zone}}}}}\n"
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

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

fn app_of(pod: &Pod) -> Option<&str> {
    pod.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str)
}

/// The Pods of `app` bound to `node` that are Running and Ready and not being deleted.
fn running_on(pods: &[Pod], app: &str, node: &str) -> usize {
    pods.iter()
        .filter(|p| {
            app_of(p) == Some(app)
                && node_of(p) == Some(node)
                && pod_state::is_running_and_ready(p)
                && !pod_state::is_terminating(p)
        })
        .count()
}

fn taints(node: &Node) -> Vec<Taint> {
    node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default()
}

fn has_taint(node: &Node, key: &str, effect: &str) -> bool {
    taints(node).iter().any(|t| t.key == key && t.effect == effect)
}

/// Set `node`'s `Ready` condition to `status`, as its kubelet (or a lost kubelet's stand-in) would.
async fn set_ready(w: &sim::Workload, node: &str, status: &str) -> Result<(), WorkloadError> {
    let nodes: Api<Node> = Api::all(w.client());
    let patch = serde_json::json!({"status": {"conditions": [{
        "type": "Ready", "status": status, "reason": "KubeletNotReady", "message": "set by the test",
        "lastHeartbeatTime": sim::time::now_k8s(), "lastTransitionTime": sim::time::now_k8s()}]}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map(|_| ())
        .map_err(|e| failed_step(&format!("set {node} Ready={status}"), e.to_string()))
}

async fn taint_node(w: &sim::Workload, node: &str, taints: serde_json::Value) -> Result<(), WorkloadError> {
    let nodes: Api<Node> = Api::all(w.client());
    w.patch(&nodes, node, &Patch::Merge(serde_json::json!({"spec": {"taints": taints}}))).await.map(|_| ())
}

fn cordon(on: bool) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}}))
}

/// node-a declared and Ready, and `manifests` applied while node-1 is cordoned, so that their
/// Pods run on node-a; node-1 uncordoned once `placed` holds.
async fn placed_on_node_a(
    w: &sim::Workload,
    manifests: &[&str],
    placed: impl Fn(&[Pod]) -> bool,
) -> Result<(), WorkloadError> {
    let pods: Api<Pod> = Api::namespaced(w.client(), "default");
    let nodes: Api<Node> = Api::all(w.client());
    w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
    w.patch(&nodes, kubelet::NODE_NAME, &cordon(true)).await?;
    w.apply_yaml("default", &node("node-a", "")).await?;
    set_ready(w, "node-a", "True").await?;
    for manifest in manifests {
        w.apply_yaml("default", manifest).await?;
    }
    w.wait_for_all(&pods, placed, WAIT).await?;
    w.patch(&nodes, kubelet::NODE_NAME, &cordon(false)).await.map(|_| ())
}

/// The workload controllers, the kubelet-lite and the two controllers under test.
fn world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    let world = builtins::deployment_controller(builtins::replicaset_controller(world));
    let world = builtins::kubelet(world);
    builtins::taint_eviction_controller(builtins::node_lifecycle_controller(world))
}

fn evicted_by_taint(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    conditions.iter().any(|c| {
        (c.type_.as_str(), c.status.as_str(), c.reason.as_deref(), c.message.as_deref())
            == (
                podgc::CONDITION_DISRUPTION_TARGET,
                "True",
                Some(taint_eviction::REASON_DELETION_BY_TAINT_MANAGER),
                Some(taint_eviction::MESSAGE_TAINT_MANAGER),
            )
    })
}

/// Every event of `reason` in the default namespace, by message.
fn event_messages(view: &sim::EndView<'_>, reason: &str) -> Result<Vec<String>, String> {
    let snap = view.cluster("default").ok_or("no cluster")?;
    Ok(snapshot::objects::<Event>(snap, Some("default"))
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect())
}

// `kubectl taint nodes node-a maintenance=now:NoExecute`: web's Pods there are marked and
// deleted at once, and their replacements run on node-1; the Pod that tolerates the taint for
// ever stays.
#[test]
fn a_no_execute_taint_evicts_the_pods_that_do_not_tolerate_it_at_once() {
    let tolerate = "      tolerations: [{key: maintenance, operator: Exists, effect: NoExecute}]\n";
    let on_a = "      nodeSelector: {kubernetes.io/hostname: node-a}\n";
    let world = world("builtins-taint-eviction-now")
        .workload(move |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let agent = deployment("agent", 1, &format!("{tolerate}{on_a}"));
            let placed = |pods: &[Pod]| {
                running_on(pods, "web", "node-a") == 2 && running_on(pods, "agent", "node-a") == 1
            };
            placed_on_node_a(&w, &[&deployment("web", 2, ""), &agent], placed).await?;
            let tainted_at = sim::time::now();
            taint_node(
                &w,
                "node-a",
                serde_json::json!([{"key": "maintenance", "value": "now", "effect": "NoExecute"}]),
            )
            .await?;
            let gone_from_a = |pods: &[Pod]| {
                pods.iter().filter(|p| app_of(p) == Some("web")).all(|p| {
                    node_of(p) != Some("node-a") || (pod_state::is_terminating(p) && evicted_by_taint(p))
                })
            };
            w.wait_for_all(&pods, gone_from_a, Duration::from_secs(2)).await?;
            let after = Duration::try_from(sim::time::now().duration_since(tainted_at)).unwrap_or_default();
            if after > Duration::from_secs(2) {
                return Err(failed_step("check the eviction", format!("evicted {after:?} after the taint")));
            }
            let moved = |pods: &[Pod]| {
                running_on(pods, "web", kubelet::NODE_NAME) == 2
                    && pods.iter().filter(|p| app_of(p) == Some("web")).count() == 2
            };
            w.wait_for_all(&pods, moved, WAIT).await?;
            // The tolerating Pod stays, however long.
            w.sleep(Duration::from_secs(600)).await;
            w.wait_for_all(&pods, |pods| running_on(pods, "agent", "node-a") == 1, Duration::ZERO).await
        })
        .property(FnProperty::at_end("web's evictions are announced", |view| {
            let marked = event_messages(view, taint_eviction::EVENT_REASON)?;
            let marked =
                marked.iter().filter(|m| m.starts_with("Marking for deletion Pod default/web-")).count();
            if marked == 2 { Ok(()) } else { Err(format!("{marked} web Pods marked for deletion")) }
        }));
    sweep_passes("builtins-taint-eviction-now", &world, SEEDS);
}

// A Pod that tolerates the taint for 60 s goes 60 s after it (then the taint is removed: its
// replacement would go 60 s later, and so on); a second one whose taint is removed after 30 s
// stays, its eviction cancelled.
#[test]
fn a_pod_that_tolerates_a_taint_for_a_while_goes_after_that_while_unless_the_taint_goes_first() {
    let tolerate = |key: &str| {
        format!(
            "      tolerations: [{{key: {key}, operator: Exists, effect: NoExecute, tolerationSeconds: 60}}]\n"
        )
    };
    let world = world("builtins-taint-eviction-later")
        .workload(move |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply_yaml("default", &node("node-a", "z")).await?;
            w.apply_yaml("default", &node("node-b", "z")).await?;
            let on = |node: &str| format!("      nodeSelector: {{kubernetes.io/hostname: {node}}}\n");
            w.apply_yaml("default", &deployment("a", 1, &format!("{}{}", tolerate("gone"), on("node-a"))))
                .await?;
            w.apply_yaml("default", &deployment("b", 1, &format!("{}{}", tolerate("brief"), on("node-b"))))
                .await?;
            let placed =
                |pods: &[Pod]| running_on(pods, "a", "node-a") == 1 && running_on(pods, "b", "node-b") == 1;
            w.wait_for_all(&pods, placed, WAIT).await?;
            let names = |pods: &[Pod], app: &str| -> Vec<String> {
                pods.iter()
                    .filter(|p| app_of(p) == Some(app))
                    .filter_map(|p| p.metadata.name.clone())
                    .collect()
            };
            let listed =
                pods.list(&Default::default()).await.map_err(|e| failed_step("list", e.to_string()))?;
            let b_before = names(&listed.items, "b");
            taint_node(&w, "node-a", serde_json::json!([{"key": "gone", "effect": "NoExecute"}])).await?;
            taint_node(&w, "node-b", serde_json::json!([{"key": "brief", "effect": "NoExecute"}])).await?;
            let tainted_at = sim::time::now();
            w.sleep(Duration::from_secs(30)).await;
            taint_node(&w, "node-b", serde_json::json!(null)).await?;
            // Still there before the 60 s.
            w.wait_for_all(&pods, |pods| running_on(pods, "a", "node-a") == 1, Duration::ZERO).await?;
            let evicted = |pods: &[Pod]| {
                pods.iter()
                    .any(|p| app_of(p) == Some("a") && pod_state::is_terminating(p) && evicted_by_taint(p))
            };
            w.wait_for_all(&pods, evicted, WAIT).await?;
            let after = Duration::try_from(sim::time::now().duration_since(tainted_at)).unwrap_or_default();
            if after < Duration::from_secs(60) || after > Duration::from_secs(62) {
                return Err(failed_step(
                    "check the toleration",
                    format!("evicted {after:?} after the taint"),
                ));
            }
            // a's replacement tolerates the taint for 60 s too, and would be evicted in turn.
            taint_node(&w, "node-a", serde_json::json!(null)).await?;
            w.sleep(Duration::from_secs(120)).await;
            let b_kept =
                move |pods: &[Pod]| names(pods, "b") == b_before && running_on(pods, "b", "node-b") == 1;
            w.wait_for_all(&pods, b_kept, Duration::ZERO).await
        })
        .property(FnProperty::at_end("b's eviction is cancelled, a's announced", |view| {
            let messages = event_messages(view, taint_eviction::EVENT_REASON)?;
            let count = |prefix: &str| messages.iter().filter(|m| m.starts_with(prefix)).count();
            let seen = (
                count("Cancelling deletion of Pod default/b-"),
                count("Marking for deletion Pod default/a-"),
            );
            if seen == (1, 1) { Ok(()) } else { Err(format!("(b cancelled, a marked): {seen:?}")) }
        }));
    sweep_passes("builtins-taint-eviction-later", &world, SEEDS);
}

// An eviction scheduled before the Node is deleted still comes, as upstream's timed queue keeps
// it (no Pod garbage collector in this world to delete the orphan instead).
#[test]
fn a_scheduled_eviction_comes_even_after_its_node_is_deleted() {
    let world = world("builtins-taint-eviction-node-gone").workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let nodes: Api<Node> = Api::all(w.client());
        w.apply_yaml("default", &node("node-a", "z")).await?;
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: a-0, namespace: default, labels: {app: a}}\nspec:\n  \
                   nodeSelector: {kubernetes.io/hostname: node-a}\n  terminationGracePeriodSeconds: 1\n  \
                   containers: [{name: app, image: app}]\n  \
                   tolerations: [{key: gone, operator: Exists, effect: NoExecute, tolerationSeconds: 20}]\n";
        w.apply_yaml("default", pod).await?;
        w.wait_for_all(&pods, |pods| running_on(pods, "a", "node-a") == 1, WAIT).await?;
        let tainted_at = sim::time::now();
        taint_node(&w, "node-a", serde_json::json!([{"key": "gone", "effect": "NoExecute"}])).await?;
        w.sleep(Duration::from_secs(5)).await;
        w.delete(&nodes, "node-a").await?;
        let evicted = |pods: &[Pod]| pods.iter().any(|p| node_of(p) == Some("node-a") && evicted_by_taint(p));
        w.wait_for_all(&pods, evicted, Duration::from_secs(30)).await?;
        let after = Duration::try_from(sim::time::now().duration_since(tainted_at)).unwrap_or_default();
        if after < Duration::from_secs(20) || after > Duration::from_secs(22) {
            return Err(failed_step("check the eviction", format!("evicted {after:?} after the taint")));
        }
        Ok(())
    });
    sweep_passes("builtins-taint-eviction-node-gone", &world, SEEDS);
}

// With every built-in (so every Pod gets the 300 s `not-ready` toleration): node-a stops being
// Ready while node-1 is; node-a is tainted not-ready, NoSchedule and NoExecute, its Pods go
// after 300 s and run on node-1; Ready again, node-a loses both taints.
#[test]
fn a_node_that_is_not_ready_is_tainted_and_loses_its_pods_after_300s() {
    let world = builtins::all(Sim::builder().scenario("builtins-node-not-ready")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let nodes: Api<Node> = Api::all(w.client());
        w.apply_yaml("default", &node("node-a", "")).await?;
        set_ready(&w, "node-a", "True").await?;
        w.apply_yaml("default", &deployment("web", 2, "      nodeSelector: {zone: any}\n")).await?;
        // Placed on node-a by a label only it has, then the selector is dropped.
        let label = Patch::Merge(serde_json::json!({"metadata": {"labels": {"zone": "any"}}}));
        w.patch(&nodes, "node-a", &label).await?;
        w.wait_for_all(&pods, |pods| running_on(pods, "web", "node-a") == 2, WAIT).await?;
        let not_ready_at = sim::time::now();
        set_ready(&w, "node-a", "False").await?;
        let tainted = |n: Option<&Node>| {
            n.is_some_and(|n| {
                has_taint(n, node_lifecycle::TAINT_NOT_READY, "NoSchedule")
                    && has_taint(n, node_lifecycle::TAINT_NOT_READY, "NoExecute")
                    && taints(n).iter().all(|t| t.time_added.is_some())
            })
        };
        w.wait_for(&nodes, "node-a", tainted, Duration::from_secs(2)).await?;
        // The Pods tolerate it for 300 s.
        w.sleep(DEFAULT_TOLERATION - Duration::from_secs(5)).await;
        w.wait_for_all(&pods, |pods| running_on(pods, "web", "node-a") == 2, Duration::ZERO).await?;
        let unlabel = Patch::Merge(serde_json::json!({"metadata": {"labels": {"zone": null}}}));
        w.patch(&nodes, "node-a", &unlabel).await?;
        w.patch(&nodes, kubelet::NODE_NAME, &label).await?;
        let evicted = |pods: &[Pod]| {
            pods.iter()
                .filter(|p| node_of(p) == Some("node-a"))
                .all(|p| pod_state::is_terminating(p) && evicted_by_taint(p))
        };
        w.wait_for_all(&pods, evicted, Duration::from_secs(10)).await?;
        let after = Duration::try_from(sim::time::now().duration_since(not_ready_at)).unwrap_or_default();
        if after < DEFAULT_TOLERATION || after > DEFAULT_TOLERATION + Duration::from_secs(3) {
            return Err(failed_step("check the eviction", format!("evicted {after:?} after NotReady")));
        }
        w.wait_for_all(&pods, |pods| running_on(pods, "web", kubelet::NODE_NAME) == 2, WAIT).await?;
        set_ready(&w, "node-a", "True").await?;
        let untainted = |n: Option<&Node>| {
            n.is_some_and(|n| !taints(n).iter().any(|t| t.key == node_lifecycle::TAINT_NOT_READY))
        };
        w.wait_for(&nodes, "node-a", untainted, Duration::from_secs(2)).await
    });
    sweep_passes("builtins-node-not-ready", &world, SEEDS);
}

// node-a's kubelet is lost (its Ready set to Unknown, as the node lifecycle controller would
// after 50 s of silence): its Pods are marked not Ready at once, and deleted 300 s later; with no
// kubelet to end them they stay Terminating, while their replacements run on node-1; the
// kubelet back, they go.
#[test]
fn the_pods_of_a_lost_node_turn_unready_then_stay_terminating_until_it_is_back() {
    let world = builtins::all(Sim::builder().scenario("builtins-node-lost"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let nodes: Api<Node> = Api::all(w.client());
            let web = deployment("web", 2, "");
            placed_on_node_a(&w, &[&web], |pods| running_on(pods, "web", "node-a") == 2).await?;
            let lost_at = sim::time::now();
            set_ready(&w, "node-a", "Unknown").await?;
            let on_a = |pods: &[Pod]| {
                pods.iter().filter(|p| node_of(p) == Some("node-a")).cloned().collect::<Vec<_>>()
            };
            let unready = move |pods: &[Pod]| {
                let on_a = on_a(pods);
                on_a.len() == 2
                    && on_a.iter().all(|p| !pod_state::is_ready(p) && !pod_state::is_terminating(p))
            };
            w.wait_for_all(&pods, unready, Duration::from_secs(2)).await?;
            let unreachable = |n: Option<&Node>| {
                n.is_some_and(|n| {
                    has_taint(n, node_lifecycle::TAINT_UNREACHABLE, "NoSchedule")
                        && has_taint(n, node_lifecycle::TAINT_UNREACHABLE, "NoExecute")
                })
            };
            w.wait_for(&nodes, "node-a", unreachable, Duration::from_secs(2)).await?;
            // 300 s later they are deleted, and stay: no kubelet ends them.
            let terminating = move |pods: &[Pod]| {
                let on_a = on_a(pods);
                on_a.len() == 2 && on_a.iter().all(|p| pod_state::is_terminating(p) && evicted_by_taint(p))
            };
            w.wait_for_all(&pods, terminating, DEFAULT_TOLERATION + Duration::from_secs(5)).await?;
            let after = Duration::try_from(sim::time::now().duration_since(lost_at)).unwrap_or_default();
            if after < DEFAULT_TOLERATION {
                return Err(failed_step("check the eviction", format!("evicted {after:?} after the loss")));
            }
            w.wait_for_all(&pods, |pods| running_on(pods, "web", kubelet::NODE_NAME) == 2, WAIT).await?;
            w.sleep(Duration::from_secs(120)).await;
            w.wait_for_all(&pods, terminating, Duration::ZERO).await?;
            set_ready(&w, "node-a", "True").await?;
            let settled = |pods: &[Pod]| pods.len() == 2 && running_on(pods, "web", kubelet::NODE_NAME) == 2;
            w.wait_for_all(&pods, settled, WAIT).await?;
            let untainted = |n: Option<&Node>| n.is_some_and(|n| taints(n).is_empty());
            w.wait_for(&nodes, "node-a", untainted, Duration::from_secs(2)).await
        })
        .property(FnProperty::at_end("the lost node's Pods are announced not ready", |view| {
            let messages = event_messages(view, node_lifecycle::NODE_NOT_READY)?;
            let pods = messages.iter().filter(|m| *m == node_lifecycle::POD_NOT_READY_MESSAGE).count();
            let node = messages.iter().filter(|m| *m == "Node node-a status is now: NodeNotReady").count();
            if (pods, node) == (2, 1) {
                Ok(())
            } else {
                Err(format!("(pod events, node events): {:?}", (pods, node)))
            }
        }));
    sweep_passes("builtins-node-lost", &world, SEEDS);
}

// The known trap of a lost Node: a StatefulSet's Pod there is deleted after 300 s but stays
// Terminating, and its stable name keeps the replacement from being created, until an operator
// says the Node is gone for good (the out-of-service taint): the Pod garbage collector then
// force-deletes it and db-0 runs on node-1.
#[test]
fn a_statefulset_pod_on_a_lost_node_is_replaced_only_once_the_node_is_out_of_service() {
    let world = builtins::all(Sim::builder().scenario("builtins-node-lost-sts")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let db = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: default}\nspec:\n  \
                  replicas: 1\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    \
                  metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: db, image: db}]\n";
        placed_on_node_a(&w, &[db], |pods| running_on(pods, "db", "node-a") == 1).await?;
        set_ready(&w, "node-a", "Unknown").await?;
        let stuck = |p: Option<&Pod>| {
            p.is_some_and(|p| node_of(p) == Some("node-a") && pod_state::is_terminating(p) && evicted_by_taint(p))
        };
        w.wait_for(&pods, "db-0", stuck, DEFAULT_TOLERATION + Duration::from_secs(5)).await?;
        w.sleep(Duration::from_secs(300)).await;
        w.wait_for(&pods, "db-0", stuck, Duration::ZERO).await?;
        let out_of_service = serde_json::json!([{"key": podgc::TAINT_OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}]);
        let nodes_api: Api<Node> = Api::all(w.client());
        let current = nodes_api.get("node-a").await.map_err(|e| failed_step("get node-a", e.to_string()))?;
        let mut all = serde_json::to_value(taints(&current)).map_err(|e| failed_step("taints", e.to_string()))?;
        if let (Some(all), Some(extra)) = (all.as_array_mut(), out_of_service.as_array()) {
            all.extend(extra.iter().cloned());
        }
        taint_node(&w, "node-a", all).await?;
        let replaced = |p: Option<&Pod>| {
            p.is_some_and(|p| node_of(p) == Some(kubelet::NODE_NAME) && pod_state::is_running_and_ready(p))
        };
        w.wait_for(&pods, "db-0", replaced, WAIT).await
    });
    sweep_passes("builtins-node-lost-sts", &world, SEEDS);
}

// A daemon Pod tolerates `not-ready` and `unreachable` `NoExecute`, so node-a not Ready keeps
// its daemon: the `not-ready:NoSchedule` taint only keeps a new one off (upstream's
// `shouldContinueRunning`), and the DaemonSet counts it misscheduled. A user's `NoSchedule`
// taint likewise; a `NoExecute` one the daemon does not tolerate removes it.
#[test]
fn a_daemon_pod_stays_on_a_node_that_is_not_ready_or_tainted_no_schedule() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let world = builtins::all(Sim::builder().scenario("builtins-node-daemon")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let sets: Api<DaemonSet> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &node("node-a", "")).await?;
        set_ready(&w, "node-a", "True").await?;
        w.apply_yaml(
            "default",
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\nspec:\n  \
             selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    \
             spec:\n      containers: [{name: agent, image: agent}]\n",
        )
        .await?;
        let on_both = |pods: &[Pod]| {
            running_on(pods, "agent", "node-a") == 1 && running_on(pods, "agent", kubelet::NODE_NAME) == 1
        };
        w.wait_for_all(&pods, on_both, WAIT).await?;
        let name_on_a = |pods: &[Pod]| -> Vec<String> {
            pods.iter()
                .filter(|p| node_of(p) == Some("node-a"))
                .filter_map(|p| p.metadata.name.clone())
                .collect()
        };
        let listed = pods.list(&Default::default()).await.map_err(|e| failed_step("list", e.to_string()))?;
        let before = name_on_a(&listed.items);
        set_ready(&w, "node-a", "False").await?;
        taint_node(&w, "node-a", serde_json::json!([{"key": "maintenance", "effect": "NoSchedule"}])).await?;
        w.sleep(DEFAULT_TOLERATION * 2).await;
        let kept = {
            let before = before.clone();
            move |pods: &[Pod]| name_on_a(pods) == before && running_on(pods, "agent", "node-a") == 1
        };
        w.wait_for_all(&pods, kept, Duration::ZERO).await?;
        let counted = |ds: Option<&DaemonSet>| {
            ds.and_then(|ds| ds.status.as_ref())
                .is_some_and(|s| (s.desired_number_scheduled, s.number_misscheduled) == (1, 1))
        };
        w.wait_for(&sets, "agent", counted, Duration::ZERO).await?;
        // A NoExecute taint the daemon does not tolerate: it goes, and none comes back.
        taint_node(&w, "node-a", serde_json::json!([{"key": "drain", "effect": "NoExecute"}])).await?;
        w.wait_for_all(&pods, |pods| pods.iter().all(|p| node_of(p) != Some("node-a")), WAIT).await
    });
    sweep_passes("builtins-node-daemon", &world, SEEDS);
}

// A DaemonSet rolled while one of its Nodes is lost: that Node keeps its daemon Pod (it
// tolerates the `unreachable` taints) but should not run a new one, and upstream's rolling update
// still walks it: the old Pod, not Ready, is replaced at once (deleted; `Terminating` while the
// Node is lost), and the Node runs the new revision once it is back.
#[test]
fn a_daemon_pod_kept_on_a_lost_node_is_rolled_with_the_others() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let world = builtins::all(Sim::builder().scenario("builtins-node-daemon-roll")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let sets: Api<DaemonSet> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &node("node-a", "")).await?;
        set_ready(&w, "node-a", "True").await?;
        let daemon = |image: &str| {
            format!(
                "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: default}}\nspec:\n  \
                 selector: {{matchLabels: {{app: agent}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n    \
                 spec:\n      terminationGracePeriodSeconds: 1\n      containers: [{{name: agent, image: {image}}}]\n"
            )
        };
        w.apply_yaml("default", &daemon("agent:1")).await?;
        let image_on = |pods: &[Pod], node: &str, image: &str| {
            pods.iter().any(|p| {
                node_of(p) == Some(node)
                    && !pod_state::is_terminating(p)
                    && p.spec.as_ref().and_then(|s| s.containers[0].image.as_deref()) == Some(image)
            })
        };
        let on_both = |pods: &[Pod]| {
            running_on(pods, "agent", "node-a") == 1 && running_on(pods, "agent", kubelet::NODE_NAME) == 1
        };
        w.wait_for_all(&pods, on_both, WAIT).await?;
        set_ready(&w, "node-a", "Unknown").await?;
        let unready_on_a =
            |pods: &[Pod]| pods.iter().any(|p| node_of(p) == Some("node-a") && !pod_state::is_ready(p));
        w.wait_for_all(&pods, unready_on_a, Duration::from_secs(2)).await?;
        w.apply_yaml("default", &daemon("agent:2")).await?;
        // node-1 rolls; node-a's old Pod is deleted at once and stays Terminating.
        let rolled_while_lost = move |pods: &[Pod]| {
            image_on(pods, kubelet::NODE_NAME, "agent:2")
                && pods.iter().any(|p| node_of(p) == Some("node-a") && pod_state::is_terminating(p))
        };
        w.wait_for_all(&pods, rolled_while_lost, Duration::from_secs(30)).await?;
        set_ready(&w, "node-a", "True").await?;
        let done = move |pods: &[Pod]| {
            pods.len() == 2 && image_on(pods, "node-a", "agent:2") && image_on(pods, kubelet::NODE_NAME, "agent:2")
        };
        w.wait_for_all(&pods, done, WAIT).await?;
        let updated = |ds: Option<&DaemonSet>| {
            ds.and_then(|ds| ds.status.as_ref()).is_some_and(|s| s.updated_number_scheduled == Some(2))
        };
        w.wait_for(&sets, "agent", updated, WAIT).await
    });
    sweep_passes("builtins-node-daemon-roll", &world, SEEDS);
}

// The only Node stops being Ready: every zone is down, so the controller trusts no one and
// taints it NoSchedule only; its Pods stay. Unknown afterwards: unreachable instead.
#[test]
fn a_one_node_cluster_whose_node_is_not_ready_keeps_its_pods() {
    let world = builtins::all(Sim::builder().scenario("builtins-node-all-down")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let nodes: Api<Node> = Api::all(w.client());
        w.apply_yaml("default", &deployment("web", 2, "")).await?;
        w.wait_for_all(&pods, |pods| running_on(pods, "web", kubelet::NODE_NAME) == 2, WAIT).await?;
        set_ready(&w, kubelet::NODE_NAME, "False").await?;
        let only_no_schedule = |key: &'static str| {
            move |n: Option<&Node>| {
                n.is_some_and(|n| {
                    has_taint(n, key, "NoSchedule") && !taints(n).iter().any(|t| t.effect == "NoExecute")
                })
            }
        };
        w.wait_for(
            &nodes,
            kubelet::NODE_NAME,
            only_no_schedule(node_lifecycle::TAINT_NOT_READY),
            Duration::from_secs(2),
        )
        .await?;
        set_ready(&w, kubelet::NODE_NAME, "Unknown").await?;
        w.wait_for(
            &nodes,
            kubelet::NODE_NAME,
            only_no_schedule(node_lifecycle::TAINT_UNREACHABLE),
            Duration::from_secs(2),
        )
        .await?;
        w.sleep(DEFAULT_TOLERATION * 2).await;
        w.wait_for_all(&pods, |pods| running_on(pods, "web", kubelet::NODE_NAME) == 2, Duration::ZERO).await
    });
    sweep_passes("builtins-node-all-down", &world, SEEDS);
}

// A cordon is a taint too (`kubectl describe node` shows it), and goes with the uncordon; a
// condition under pressure likewise.
#[test]
fn a_cordoned_node_or_one_under_pressure_is_tainted_no_schedule_until_it_is_not() {
    let world = world("builtins-node-cordon-taint").workload(|w| async move {
        let nodes: Api<Node> = Api::all(w.client());
        w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
        let key = builtins::scheduler::TAINT_UNSCHEDULABLE;
        w.patch(&nodes, kubelet::NODE_NAME, &cordon(true)).await?;
        w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some_and(|n| has_taint(n, key, "NoSchedule")), Duration::from_secs(2))
            .await?;
        w.patch(&nodes, kubelet::NODE_NAME, &cordon(false)).await?;
        w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some_and(|n| taints(n).is_empty()), Duration::from_secs(2))
            .await?;
        let pressure = |status: &str| {
            serde_json::json!({"status": {"conditions": [{"type": "MemoryPressure", "status": status}]}})
        };
        let memory = "node.kubernetes.io/memory-pressure";
        nodes
            .patch_status(kubelet::NODE_NAME, &PatchParams::default(), &Patch::Strategic(&pressure("True")))
            .await
            .map_err(|e| failed_step("memory pressure", e.to_string()))?;
        w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some_and(|n| has_taint(n, memory, "NoSchedule")), Duration::from_secs(2))
            .await?;
        nodes
            .patch_status(kubelet::NODE_NAME, &PatchParams::default(), &Patch::Strategic(&pressure("False")))
            .await
            .map_err(|e| failed_step("no memory pressure", e.to_string()))?;
        w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some_and(|n| taints(n).is_empty()), Duration::from_secs(2))
            .await
    });
    sweep_passes("builtins-node-cordon-taint", &world, SEEDS);
}

// Five Nodes in one zone, two of them stop being Ready at once: the zone is not disrupted (2 of
// 6), so both are tainted NoExecute, 10 s apart.
#[test]
fn a_zone_has_its_nodes_tainted_no_execute_one_at_a_time() {
    let world = world("builtins-node-rate").workload(|w| async move {
        let nodes: Api<Node> = Api::all(w.client());
        let names = ["node-a", "node-b", "node-c", "node-d", "node-e"];
        for name in names {
            w.apply_yaml("default", &node(name, "")).await?;
            set_ready(&w, name, "True").await?;
        }
        set_ready(&w, "node-a", "False").await?;
        set_ready(&w, "node-b", "False").await?;
        let start = sim::time::now();
        let no_execute =
            |n: Option<&Node>| n.is_some_and(|n| has_taint(n, node_lifecycle::TAINT_NOT_READY, "NoExecute"));
        let mut at = Vec::new();
        for name in ["node-a", "node-b"] {
            let tainted = nodes.get(name).await.map_err(|e| failed_step("get", e.to_string()))?;
            at.push((name, no_execute(Some(&tainted))));
        }
        let first_tainted = at.iter().filter(|(_, t)| *t).count();
        if first_tainted > 1 {
            return Err(failed_step("check the rate", format!("both tainted at once: {at:?}")));
        }
        for name in ["node-a", "node-b"] {
            w.wait_for(&nodes, name, no_execute, Duration::from_secs(15)).await?;
        }
        let after = Duration::try_from(sim::time::now().duration_since(start)).unwrap_or_default();
        if after < node_lifecycle::TAINT_INTERVAL - Duration::from_secs(1) {
            return Err(failed_step("check the rate", format!("both tainted within {after:?}")));
        }
        Ok(())
    });
    sweep_passes("builtins-node-rate", &world, SEEDS);
}

#[test]
fn zone_states_follow_compute_zone_state() {
    use node_lifecycle::{ZoneState, zone_state};
    let t = Some("True");
    let f = Some("False");
    assert_eq!(zone_state(&[f]), ZoneState::FullDisruption);
    // A Node without a Ready condition is taken as alive (the kubelet-lite runs its Pods).
    assert_eq!(zone_state(&[None, f]), ZoneState::Normal);
    assert_eq!(zone_state(&[None, f, f, f]), ZoneState::PartialDisruption);
    assert_eq!(zone_state(&[t, f, f]), ZoneState::Normal);
    // More than 2 not Ready and at least 55 %.
    assert_eq!(zone_state(&[t, t, f, f, f]), ZoneState::PartialDisruption);
    assert_eq!(zone_state(&[t, t, t, f, f, f]), ZoneState::Normal);
    assert_eq!(zone_state(&[]), ZoneState::Normal);
}

#[test]
fn tolerations_match_taints_as_get_matching_tolerations_and_the_shortest_time_wins() {
    let taint = |key: &str| Taint { key: key.to_owned(), effect: "NoExecute".to_owned(), ..Taint::default() };
    let toleration = |key: &str, seconds: Option<i64>| Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some("NoExecute".to_owned()),
        toleration_seconds: seconds,
        ..Toleration::default()
    };
    let (a, b) = (taint("a"), taint("b"));
    let tolerations = [toleration("a", Some(30)), toleration("b", Some(10)), toleration("c", None)];
    let used = taint_eviction::matching_tolerations(&[&a, &b], &tolerations).expect("all tolerated");
    assert_eq!(taint_eviction::min_toleration_time(&used), Some(Duration::from_secs(10)));
    assert!(taint_eviction::matching_tolerations(&[&a, &taint("d")], &tolerations).is_none());
    let forever = [toleration("a", None)];
    let used = taint_eviction::matching_tolerations(&[&a], &forever).expect("tolerated");
    assert_eq!(taint_eviction::min_toleration_time(&used), None);
    let now = [toleration("a", Some(-5))];
    let used = taint_eviction::matching_tolerations(&[&a], &now).expect("tolerated");
    assert_eq!(taint_eviction::min_toleration_time(&used), Some(Duration::ZERO));
    assert_eq!(taint_eviction::min_toleration_time(&[]), Some(Duration::ZERO));
}

#[test]
fn under_swarm_faults_a_no_execute_taint_still_moves_the_pods() {
    let world = builtins::all(Sim::builder().scenario("builtins-taint-eviction-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world.swarm(swarm).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &node("node-a", "")).await?;
        w.apply_yaml("default", &deployment("web", 2, "")).await?;
        w.wait_for_all(
            &pods,
            |pods| pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count() == 2,
            WAIT * 3,
        )
        .await?;
        taint_node(&w, "node-a", serde_json::json!([{"key": "drain", "effect": "NoExecute"}])).await?;
        let moved = |pods: &[Pod]| {
            running_on(pods, "web", kubelet::NODE_NAME) == 2
                && pods.iter().all(|p| node_of(p) != Some("node-a"))
        };
        w.wait_for_all(&pods, moved, WAIT * 3).await
    });
    sweep_passes("builtins-taint-eviction-faults", &world, SEEDS);
}

#[test]
fn the_node_lifecycle_and_taint_eviction_controllers_come_with_the_other_builtins() {
    let names = builtins::all(Sim::builder()).controller_names();
    for node in [node_lifecycle::NODE, taint_eviction::NODE] {
        assert!(names.iter().any(|n| n == node), "{node} missing from {names:?}");
    }
}

/// A `loseNode` fault (the engine's, not a write of the test) on `node` at `at_ms` for
/// `duration_ms`.
fn lose(node: &str, at_ms: u64, duration_ms: u64) -> sim::faults::FaultPlan {
    use sim::faults::{Fault, PlannedFault, Trigger};
    let fault = Fault::LoseNode { node: node.to_owned(), duration_ms };
    sim::faults::FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms }, fault }] }
}

// The engine's lost Node, as the built-ins see it: in a one-Node cluster the node lifecycle
// controller marks its Pods not Ready and taints it `unreachable:NoSchedule` (and, every zone
// being down, not `NoExecute`: the Pods stay); when the kubelet posts its status again the
// taint goes and the kubelet-lite reports the Pods Ready again.
#[test]
fn a_lost_node_fault_turns_the_pods_unready_and_back_when_its_kubelet_returns() {
    const LOST_AT: Duration = Duration::from_secs(30);
    const LOST_FOR: Duration = Duration::from_secs(20);
    let world = builtins::all(Sim::builder().scenario("builtins-lose-node-fault"))
        .faults(lose(kubelet::NODE_NAME, LOST_AT.as_millis() as u64, LOST_FOR.as_millis() as u64))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let nodes: Api<Node> = Api::all(w.client());
            w.apply_yaml("default", &deployment("web", 2, "")).await?;
            let running = |pods: &[Pod]| running_on(pods, "web", kubelet::NODE_NAME) == 2;
            w.wait_for_all(&pods, running, LOST_AT - Duration::from_secs(5)).await?;
            let elapsed = sim::time::elapsed().unwrap_or_default();
            w.sleep(LOST_AT.saturating_sub(elapsed) + Duration::from_secs(2)).await;
            let unready = |pods: &[Pod]| {
                pods.len() == 2
                    && pods.iter().all(|p| !pod_state::is_ready(p) && !pod_state::is_terminating(p))
            };
            w.wait_for_all(&pods, unready, Duration::ZERO).await?;
            let unreachable = |n: Option<&Node>| {
                n.is_some_and(|n| {
                    has_taint(n, node_lifecycle::TAINT_UNREACHABLE, "NoSchedule")
                        && !has_taint(n, node_lifecycle::TAINT_UNREACHABLE, "NoExecute")
                })
            };
            w.wait_for(&nodes, kubelet::NODE_NAME, unreachable, Duration::ZERO).await?;
            // Back at 50 s: Ready again, untainted, the same two Pods. The last taint removed
            // takes the field with it, as upstream's patch does (a fault-free run's Node has none).
            let back = |pods: &[Pod]| pods.len() == 2 && running(pods);
            w.wait_for_all(&pods, back, LOST_FOR + Duration::from_secs(5)).await?;
            let untainted =
                |n: Option<&Node>| n.is_some_and(|n| n.spec.as_ref().is_some_and(|s| s.taints.is_none()));
            w.wait_for(&nodes, kubelet::NODE_NAME, untainted, Duration::from_secs(2)).await
        })
        .property(FnProperty::at_end("no web Pod was replaced", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let lifecycles = view.lifecycles.get("default").ok_or("no cluster")?;
            let deleted = lifecycles.iter().filter(|(k, l)| &*k.resource == "pods" && l.deleted > 0).count();
            let pods = snapshot::objects::<Pod>(snap, Some("default")).len();
            if (deleted, pods) == (0, 2) {
                Ok(())
            } else {
                Err(format!("{deleted} Pods deleted, {pods} left"))
            }
        }));
    sweep_passes("builtins-lose-node-fault", &world, SEEDS);
}

// Lost Nodes drawn by swarm selection (up to 7 minutes, past the 300 s the Pods tolerate
// `unreachable` for), in a two-Node cluster with every built-in: whatever is lost and for how
// long, the Deployment ends with its two Pods running and Ready, and no Pod stays Terminating.
// Some seeds lose one Node past the toleration, so that Pods are evicted and replaced (with
// both Nodes lost at once, the cluster is fully disrupted and nothing is evicted).
#[test]
fn under_lost_node_faults_a_deployment_ends_with_its_pods_running() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let replaced = std::sync::Arc::new(AtomicU64::new(0));
    let counted = replaced.clone();
    let world = builtins::all(Sim::builder().scenario("builtins-lose-node-swarm"));
    let swarm = SwarmConfig {
        kinds: vec![sim::faults::FaultKind::LoseNode],
        time_max_ms: 60_000,
        duration_max_ms: 420_000,
        ..SwarmConfig::default()
    };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            w.apply_yaml("default", &node("node-a", "")).await?;
            set_ready(&w, "node-a", "True").await?;
            w.apply_yaml("default", &deployment("web", 2, "")).await?;
            // Long enough for a loss to outlast the Pods' 300 s toleration.
            w.sleep(Duration::from_secs(480)).await;
            Ok(())
        })
        .liveness_wait(Duration::from_secs(600))
        .property(FnProperty::at_end(
            "web's two Pods run, Ready, and none is left Terminating",
            move |view| {
                let snap = view.cluster("default").ok_or("no cluster")?;
                let pods = snapshot::objects::<Pod>(snap, Some("default"));
                let ready = pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count();
                let lifecycles = view.lifecycles.get("default").ok_or("no cluster")?;
                if lifecycles.iter().any(|(k, l)| &*k.resource == "pods" && l.deleted > 0) {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                if (pods.len(), ready) == (2, 2) {
                    Ok(())
                } else {
                    Err(format!("{} Pods, {ready} Running and Ready", pods.len()))
                }
            },
        ));
    let report = sweep(&SweepConfig::new("builtins-lose-node-swarm").seeds(30), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
    assert!(replaced.load(Ordering::Relaxed) > 0, "no seed lost a Node long enough to evict its Pods");
}
