//! The kubelet-lite registers its Node, and the scheduler-lite places Pods on the Nodes they fit:
//! cordoned Nodes, untolerated taints, `nodeSelector` and required node affinity keep a Pod off
//! a Node, with kube-scheduler's `Unschedulable` message when none is left, and a change of a
//! Node schedules a waiting Pod again.

use std::time::Duration;

use controllers::builtins::{self, kubelet, pod_state, scheduler, snapshot};
use k8s_openapi::api::core::v1::{Node, Pod};
use sim::api::{Api, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);

fn pod(name: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  \
         terminationGracePeriodSeconds: 1\n  containers: [{{name: app, image: app}}]\n{extra_spec}"
    )
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

/// The `PodScheduled=False` message of a Pod the scheduler-lite could not place.
fn unschedulable_message(pod: Option<&Pod>) -> Option<String> {
    let conditions = pod?.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    (c.reason.as_deref() == Some(kubelet::UNSCHEDULABLE)).then(|| c.message.clone().unwrap_or_default())
}

fn sweep_passes(name: &str, world: &SimBuilder) {
    let report = sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn the_kubelet_registers_its_ready_node_and_a_pod_runs_on_it() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-register"))
        .workload(|w| async move {
            w.apply_yaml("default", &pod("app", "")).await?;
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::at_end("node-1 registered, Ready, running the Pod", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let node = snapshot::object::<Node>(snap, None, kubelet::NODE_NAME).ok_or("no node-1")?;
            let labels = node.metadata.labels.clone().unwrap_or_default();
            let status = node.status.clone().unwrap_or_default();
            let ready = status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Ready");
            let found = (
                labels.get("kubernetes.io/hostname").map(String::as_str),
                ready.map(|c| (c.status, c.reason)),
                status.node_info.map(|i| i.kubelet_version),
            );
            let want = (
                Some(kubelet::NODE_NAME),
                Some(("True".to_owned(), Some("KubeletReady".to_owned()))),
                Some(kubelet::KUBELET_VERSION.to_owned()),
            );
            if found != want {
                return Err(format!("node {found:?}"));
            }
            let app = snapshot::object::<Pod>(snap, Some("default"), "app").ok_or("no pod")?;
            if node_of(&app) == Some(kubelet::NODE_NAME) {
                Ok(())
            } else {
                Err(format!("pod on {:?}", node_of(&app)))
            }
        }));
    sweep_passes("builtins-scheduler-register", &world);
}

// A Pod whose selector no Node matches waits with the scheduler's message; labelling the Node
// (a Node event, nothing about the Pod) schedules it.
#[test]
fn a_pod_no_node_matches_waits_unschedulable_until_a_node_is_labelled_for_it() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-selector")).workload(|w| async move {
        w.apply_yaml("default", &pod("db", "  nodeSelector: {disk: ssd}\n")).await?;
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let want = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: \
                    0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
        w.wait_for(&pods, "db", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
        let nodes: Api<Node> = Api::all(w.client());
        let label = serde_json::json!({"metadata": {"labels": {"disk": "ssd"}}});
        w.patch(&nodes, kubelet::NODE_NAME, &Patch::Merge(label)).await?;
        w.wait_for(&pods, "db", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
    });
    sweep_passes("builtins-scheduler-selector", &world);
}

// Two Nodes: the kubelet's, cordoned, and `node-a`, tainted. A Pod that tolerates the taint
// goes to node-a; one that does not waits with both reasons counted; uncordoning node-1 places
// it there.
#[test]
fn cordoned_and_tainted_nodes_keep_pods_off_unless_tolerated_and_uncordoning_schedules_the_waiting_pod() {
    let node_a = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}\n\
                  spec:\n  taints: [{key: dedicated, value: db, effect: NoSchedule}]\n";
    let tolerant = "  tolerations: [{key: dedicated, operator: Equal, value: db, effect: NoSchedule}]\n";
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-cordon"))
        .workload(move |w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
            w.apply_yaml("default", node_a).await?;
            let cordon = |on: bool| Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}}));
            w.patch(&nodes, kubelet::NODE_NAME, &cordon(true)).await?;
            // Time for the scheduler's Node cache to show the cordon (a few watch deliveries):
            // before it, db could still go to node-1, the first of two Nodes that fit it.
            w.sleep(Duration::from_secs(1)).await;
            w.apply_yaml("default", &pod("db", tolerant)).await?;
            w.apply_yaml("default", &pod("web", "")).await?;
            let want = "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 1 node(s) were \
                        unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
            w.wait_for(&pods, "web", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
            w.wait_for(&pods, "db", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.patch(&nodes, kubelet::NODE_NAME, &cordon(false)).await?;
            w.wait_for(&pods, "web", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::at_end("db on node-a, web on node-1", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let placed: Vec<(String, Option<String>)> = snapshot::objects::<Pod>(snap, Some("default"))
                .iter()
                .map(|p| (p.metadata.name.clone().unwrap_or_default(), node_of(p).map(str::to_owned)))
                .collect();
            let want = [("db".to_owned(), Some("node-a".to_owned())), ("web".to_owned(), Some("node-1".to_owned()))];
            if placed == want { Ok(()) } else { Err(format!("placed {placed:?}")) }
        }));
    sweep_passes("builtins-scheduler-cordon", &world);
}

// Pods that fit both Nodes are spread: with two schedulable Nodes, four Pods made one after
// another (each Running before the next) end two on each.
#[test]
fn pods_that_fit_several_nodes_are_spread_over_them() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-spread"))
        .workload(|w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
            w.apply_yaml("default", "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n").await?;
            for name in ["p0", "p1", "p2", "p3"] {
                w.apply_yaml("default", &pod(name, "")).await?;
                w.wait_for(&pods, name, |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            }
            Ok(())
        })
        .property(FnProperty::at_end("two pods on each node", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let pods = snapshot::objects::<Pod>(snap, Some("default"));
            let on = |node: &str| pods.iter().filter(|p| node_of(p) == Some(node)).count();
            if (on("node-1"), on("node-a")) == (2, 2) {
                Ok(())
            } else {
                Err(format!("{} and {}", on("node-1"), on("node-a")))
            }
        }));
    sweep_passes("builtins-scheduler-spread", &world);
}

fn node_yaml(yaml: &str) -> Node {
    serde_yaml_ng::from_str(yaml).expect("a Node")
}

fn pod_yaml(spec: &str) -> Pod {
    serde_yaml_ng::from_str(&pod("p", spec)).expect("a Pod")
}

#[test]
fn required_node_affinity_terms_are_ored_and_their_expressions_anded() {
    let node = node_yaml("metadata: {name: n1, labels: {zone: a, cores: '8'}}");
    let affinity = |terms: &str| {
        pod_yaml(&format!(
            "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        \
             nodeSelectorTerms: {terms}\n"
        ))
    };
    let fits = |terms: &str| scheduler::matches_affinity(&affinity(terms), &node);
    assert!(fits("[{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]"));
    assert!(!fits("[{matchExpressions: [{key: zone, operator: NotIn, values: [a]}]}]"));
    assert!(fits(
        "[{matchExpressions: [{key: gpu, operator: DoesNotExist}, {key: zone, operator: Exists}]}]"
    ));
    assert!(!fits("[{matchExpressions: [{key: gpu, operator: Exists}, {key: zone, operator: Exists}]}]"));
    assert!(fits("[{matchExpressions: [{key: cores, operator: Gt, values: ['4']}]}]"));
    assert!(!fits("[{matchExpressions: [{key: cores, operator: Lt, values: ['4']}]}]"));
    assert!(fits(
        "[{matchExpressions: [{key: gpu, operator: Exists}]}, {matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]"
    ));
    assert!(!fits("[{matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]}]"));
    // An empty term matches no Node.
    assert!(!fits("[{}]"));
    assert!(!scheduler::matches_affinity(&pod_yaml("  nodeSelector: {zone: b}\n"), &node));
    assert!(scheduler::matches_affinity(&pod_yaml("  nodeSelector: {zone: a}\n"), &node));
}

#[test]
fn a_toleration_matches_a_taint_by_effect_key_and_operator() {
    let taint = |yaml: &str| serde_yaml_ng::from_str::<k8s_openapi::api::core::v1::Taint>(yaml).unwrap();
    let toleration =
        |yaml: &str| serde_yaml_ng::from_str::<k8s_openapi::api::core::v1::Toleration>(yaml).unwrap();
    let dedicated = taint("{key: dedicated, value: db, effect: NoSchedule}");
    assert!(scheduler::tolerates(&toleration("{key: dedicated, value: db}"), &dedicated));
    assert!(!scheduler::tolerates(&toleration("{key: dedicated, value: web}"), &dedicated));
    assert!(scheduler::tolerates(
        &toleration("{key: dedicated, operator: Exists, effect: NoSchedule}"),
        &dedicated
    ));
    assert!(!scheduler::tolerates(
        &toleration("{key: dedicated, operator: Exists, effect: NoExecute}"),
        &dedicated
    ));
    assert!(scheduler::tolerates(&toleration("{operator: Exists}"), &dedicated));
    // A PreferNoSchedule taint never keeps a Pod off.
    let node = node_yaml("metadata: {name: n1}\nspec: {taints: [{key: soft, effect: PreferNoSchedule}]}");
    assert_eq!(scheduler::rejection(&pod_yaml(""), &node), None);
}

#[test]
fn with_no_node_registered_the_message_is_the_schedulers_no_nodes_available() {
    let pod = pod_yaml("");
    assert_eq!(
        scheduler::choose(&pod, &[], &[], &Default::default(), &Default::default()).err().as_deref(),
        Some(scheduler::NO_NODES)
    );
}

// A Pod created with scheduling gates waits with the API server's `SchedulingGated` condition,
// unbound, however long; removing its gates (an update of the Pod) lets the scheduler bind it.
#[test]
fn a_gated_pod_waits_until_its_gates_are_removed() {
    let world =
        builtins::kubelet(Sim::builder().scenario("builtins-scheduler-gates")).workload(|w| async move {
            w.apply_yaml("default", &pod("held", "  schedulingGates: [{name: example.com/quota}]\n")).await?;
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let gated = |p: Option<&Pod>| {
                let conditions = p.and_then(|p| p.status.as_ref()?.conditions.clone()).unwrap_or_default();
                p.is_some_and(|p| node_of(p).is_none())
                    && conditions
                        .iter()
                        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated"))
            };
            w.wait_for(&pods, "held", gated, WAIT).await?;
            w.sleep(Duration::from_secs(120)).await;
            // Still unbound, with its condition, two minutes on (this wait only looks once).
            w.wait_for(&pods, "held", gated, Duration::ZERO).await?;
            let ungate = serde_json::json!({"spec": {"schedulingGates": null}});
            w.patch(&pods, "held", &Patch::Merge(ungate)).await?;
            w.wait_for(&pods, "held", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        });
    sweep_passes("builtins-scheduler-gates", &world);
}

fn requesting(cpu: &str) -> String {
    format!("  containers: [{{name: app, image: app, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n")
}

fn pod_requesting(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  \
         terminationGracePeriodSeconds: 1\n{}",
        requesting(cpu)
    )
}

// node-1 has 8 cores: a Pod asking for 5 runs, one asking for 4 more waits with the scheduler's
// `Insufficient cpu` (preemption finds no victim: every Pod has the same priority), and runs once
// the first is deleted; one asking for more than the whole Node is told preemption cannot help.
#[test]
fn a_pod_waits_for_room_on_its_node_and_runs_when_a_pod_leaves() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-resources")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &pod_requesting("big", "5")).await?;
        w.wait_for(&pods, "big", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
        w.apply_yaml("default", &pod_requesting("more", "4000m")).await?;
        let want = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No \
                    preemption victims found for incoming pod.";
        w.wait_for(&pods, "more", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
        w.apply_yaml("default", &pod_requesting("huge", "9")).await?;
        let want = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 \
                    Preemption is not helpful for scheduling.";
        w.wait_for(&pods, "huge", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
        w.delete(&pods, "big").await?;
        w.wait_for(&pods, "more", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
        w.wait_for(&pods, "huge", |p| p.is_some_and(|p| node_of(p).is_none()), Duration::ZERO).await
    });
    sweep_passes("builtins-scheduler-resources", &world);
}

// Two Pods binding the same host port cannot share a Node: the second waits with `NodePorts`'
// reason until the first is gone.
#[test]
fn a_host_port_is_taken_until_its_pod_leaves() {
    let with_port = |name: &str| {
        pod(name, "").replace(
            "containers: [{name: app, image: app}]",
            "containers: [{name: app, image: app, ports: [{containerPort: 80, hostPort: 8080}]}]",
        )
    };
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-ports")).workload(move |w| {
        let (first, second) = (with_port("first"), with_port("second"));
        async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply_yaml("default", &first).await?;
            w.wait_for(&pods, "first", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.apply_yaml("default", &second).await?;
            let want = "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. \
                        preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
            w.wait_for(&pods, "second", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
            w.delete(&pods, "first").await?;
            w.wait_for(&pods, "second", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        }
    });
    sweep_passes("builtins-scheduler-ports", &world);
}

#[test]
fn a_pods_request_sums_its_containers_and_sidecars_takes_the_largest_init_step_and_adds_overhead() {
    let pod = pod_yaml(
        "  overhead: {cpu: 100m}\n  initContainers:\n  \
         - {name: setup, image: i, resources: {requests: {cpu: '2', memory: 1Gi}}}\n  \
         - {name: proxy, image: i, restartPolicy: Always, resources: {requests: {cpu: 500m}}}\n  \
         - {name: late, image: i, resources: {requests: {cpu: '1'}}}\n",
    );
    let mut spec = pod.spec.clone().unwrap();
    spec.containers[0].resources = serde_yaml_ng::from_str("{requests: {cpu: 250m, memory: 512Mi}}").unwrap();
    let pod = Pod { spec: Some(spec), ..pod };
    let requests = scheduler::pod_requests(&pod);
    // cpu: containers 0.25 + sidecar 0.5 = 0.75; init steps: setup 2, late 1 + 0.5; largest 2;
    // plus 0.1 overhead. memory: max(512Mi, 1Gi).
    assert_eq!(requests.get("cpu").copied(), Some(2.1));
    assert_eq!(requests.get("memory").copied(), Some(1073741824.0));
}

#[test]
fn a_pod_that_may_not_preempt_says_so() {
    let pod = pod_yaml(
        &format!("  preemptionPolicy: Never\n{}", requesting("9"))
            .replace("  containers: [{name: app, image: app}]\n", ""),
    );
    let node = node_yaml("metadata: {name: n1}");
    let node = std::sync::Arc::new(node);
    let message = scheduler::choose(
        &pod,
        std::slice::from_ref(&node),
        &[Vec::new()],
        &Default::default(),
        &Default::default(),
    )
    .err();
    assert_eq!(
        message.as_deref(),
        Some(
            "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.."
        )
    );
}

// Pods created together are scheduled one after another, each counting the ones bound before it
// even while the Pod cache does not show those bindings yet (kube-scheduler's assumed Pods): of
// three Pods asking 3 cores each of node-1's 8, two run and the third waits.
#[test]
fn pods_scheduled_in_quick_succession_never_overcommit_their_node() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-assume"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            for name in ["a", "b", "c"] {
                w.apply_yaml("default", &pod_requesting(name, "3")).await?;
            }
            let settled = |all: &[Pod]| {
                let running = all.iter().filter(|p| pod_state::is_running_and_ready(p)).count();
                let waiting = all.iter().filter(|p| unschedulable_message(Some(p)).is_some()).count();
                running == 2 && waiting == 1
            };
            w.wait_for_all(&pods, settled, WAIT).await
        })
        .property(FnProperty::always("node-1 is never asked for more than its 8 cores", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let bound: Vec<Pod> = snapshot::objects::<Pod>(snap, Some("default"))
                .into_iter()
                .filter(|p| node_of(p) == Some(kubelet::NODE_NAME) && !pod_state::is_finished(p))
                .collect();
            if bound.len() <= 2 {
                Ok(())
            } else {
                Err(format!("{} Pods of 3 cores bound to node-1", bound.len()))
            }
        }));
    sweep_passes("builtins-scheduler-assume", &world);
}

// A fault's 409 Conflict on the kubelet's Node create made nothing: the kubelet reads the Node,
// finds none and registers again (its `registerWithAPIServer` takes only an existing Node for
// registered), so the Pod still runs.
#[test]
fn a_conflict_on_the_node_create_is_not_taken_for_a_registered_node() {
    use sim::faults::{FaultPlan, InjectedError, PlannedFault, Trigger};
    let conflict = PlannedFault {
        trigger: Trigger::NthWrite { controller: kubelet::NODE.to_owned(), n: 1, kind: None, verb: None },
        fault: sim::faults::Fault::ApiError {
            controller: kubelet::NODE.to_owned(),
            error: InjectedError::Conflict,
        },
    };
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-register-conflict"))
        .faults(FaultPlan { faults: vec![conflict] })
        .workload(|w| async move {
            w.apply_yaml("default", &pod("app", "")).await?;
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        });
    sweep_passes("builtins-scheduler-register-conflict", &world);
    let run = world.run(0);
    assert!(run.unfired.is_empty(), "the conflict did not fire: {:?}", run.unfired);
}

fn pod_with_priority(name: &str, class: Option<&str>, cpu: &str) -> String {
    let class = class.map(|c| format!("  priorityClassName: {c}\n")).unwrap_or_default();
    format!("{}{class}", pod_requesting(name, cpu))
}

/// Whether the scheduler marked `pod` as preempted (`DisruptionTarget`, `PreemptionByScheduler`)
/// and deleted it.
fn preempted(pod: Option<&Pod>) -> bool {
    pod.is_some_and(|p| {
        p.metadata.deletion_timestamp.is_some()
            && p.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                c.iter().any(|c| {
                    c.type_ == "DisruptionTarget"
                        && c.status == "True"
                        && c.reason.as_deref() == Some(scheduler::REASON_PREEMPTION_BY_SCHEDULER)
                })
            })
    })
}

// node-1 has 8 cores: `a` and `b` (class `low`, 3 cores each, `a` started first) and `c` (no
// class, priority 0, 1 core) run. `vip` (class `high`, 4 cores) fits nowhere, so the default
// preemption plugin evicts the fewest Pods of lower priority that make room, sparing the most
// important first: `a` (same priority as `b`, started earlier) is put back, `b` must go, `c` (the
// lowest priority, but small) still fits beside `a` and `vip`. `vip` is nominated to node-1 while
// `b` terminates, then runs there; `b` gets `DisruptionTarget` and a `Preempted` event.
#[test]
fn a_pod_of_higher_priority_preempts_the_fewest_least_important_pods_and_runs() {
    use k8s_openapi::api::core::v1::Event;
    // Every built-in, for the API server's Priority admission plugin, which resolves the classes.
    let world = builtins::all(Sim::builder().scenario("builtins-scheduler-preemption")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        for (class, value) in [("low", 10), ("high", 1000)] {
            let yaml = format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {class}}}\nvalue: {value}\n");
            w.apply_yaml("default", &yaml).await?;
        }
        for (name, class, cpu) in [("a", Some("low"), "3"), ("b", Some("low"), "3"), ("c", None, "1")] {
            w.apply_yaml("default", &pod_with_priority(name, class, cpu)).await?;
            w.wait_for(&pods, name, |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.sleep(Duration::from_secs(1)).await;
        }
        w.apply_yaml("default", &pod_with_priority("vip", Some("high"), "4")).await?;
        let nominated = |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref()).and_then(|s| s.nominated_node_name.as_deref())
                == Some(kubelet::NODE_NAME)
                && p.is_some_and(|p| node_of(p).is_none())
                && unschedulable_message(p).is_some_and(|m| m.starts_with("0/1 nodes are available: 1 Insufficient cpu."))
        };
        w.wait_for(&pods, "vip", nominated, WAIT).await?;
        w.wait_for(&pods, "b", preempted, WAIT).await?;
        w.wait_for(&pods, "vip", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
        w.wait_for(&pods, "b", |p| p.is_none(), WAIT).await?;
        for name in ["a", "c"] {
            w.wait_for(&pods, name, |p| p.is_some_and(pod_state::is_running_and_ready), Duration::ZERO).await?;
        }
        Ok(())
    })
    .property(FnProperty::at_end("the victim has a Preempted event naming the preemptor", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let vip = snapshot::object::<Pod>(snap, Some("default"), "vip").ok_or("no vip")?;
        let note = format!("Preempted by pod {} on node {}", vip.metadata.uid.unwrap_or_default(), kubelet::NODE_NAME);
        let found = snapshot::objects::<Event>(snap, Some("default")).into_iter().any(|e| {
            e.reason.as_deref() == Some("Preempted")
                && e.involved_object.name.as_deref() == Some("b")
                && e.message.as_deref() == Some(note.as_str())
        });
        if found { Ok(()) } else { Err(format!("no event {note:?} about b")) }
    }));
    sweep_passes("builtins-scheduler-preemption", &world);
}

// The scheduler-lite's reconcile may hold a copy of a Pod older than its cache: one that the
// cache already shows bound is not scheduled again. Three Pods asking 3 cores each of node-1's
// 8, created together: a bound Pod never carries `PodScheduled=False` (the stale copy counted the
// Pod as its own neighbour and marked it `Unschedulable` while it ran, in 2 of 300 seeds).
#[test]
fn a_pod_the_cache_shows_bound_is_never_marked_unschedulable() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-scheduler-stale-copy"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            for name in ["a", "b", "c"] {
                w.apply_yaml("default", &pod_requesting(name, "3")).await?;
            }
            let running =
                |all: &[Pod]| all.iter().filter(|p| pod_state::is_running_and_ready(p)).count() == 2;
            w.wait_for_all(&pods, running, WAIT).await
        })
        .property(FnProperty::always("a bound Pod is not PodScheduled=False", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let marked: Vec<String> = snapshot::objects::<Pod>(snap, Some("default"))
                .into_iter()
                .filter(|p| node_of(p).is_some() && unschedulable_message(Some(p)).is_some())
                .filter_map(|p| p.metadata.name)
                .collect();
            if marked.is_empty() { Ok(()) } else { Err(format!("bound but Unschedulable: {marked:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-scheduler-stale-copy").seeds(300), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
