//! The scheduler-lite's filters that read where other Pods run: required Pod affinity and
//! anti-affinity (the Pod's and the running Pods'), and `DoNotSchedule` topology spread
//! constraints, with kube-scheduler's reasons, and a waiting Pod scheduled again when a Pod is
//! bound, leaves, or a Node changes.

use std::sync::Arc;
use std::time::Duration;

use controllers::builtins::{self, kubelet, pod_state, pod_topology, scheduler, snapshot};
use k8s_openapi::api::core::v1::{Node, Pod};
use sim::api::{Api, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);

/// A Pod in `default` (unless `extra_meta` says otherwise) with `labels` and `extra_spec`.
fn pod(name: &str, labels: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {{{labels}}}}}\nspec:\n  \
         terminationGracePeriodSeconds: 1\n  containers: [{{name: app, image: app}}]\n{extra_spec}"
    )
}

fn anti_affinity(selector: &str, key: &str) -> String {
    format!(
        "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
         - {{labelSelector: {{matchLabels: {{{selector}}}}}, topologyKey: {key}}}\n"
    )
}

fn affinity(selector: &str, key: &str) -> String {
    anti_affinity(selector, key).replace("podAntiAffinity", "podAffinity")
}

fn node(name: &str, labels: &str) -> String {
    format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{{labels}}}}}\n")
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

fn unschedulable_message(pod: Option<&Pod>) -> Option<String> {
    let conditions = pod?.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    (c.reason.as_deref() == Some(kubelet::UNSCHEDULABLE)).then(|| c.message.clone().unwrap_or_default())
}

fn running(p: Option<&Pod>) -> bool {
    p.is_some_and(pod_state::is_running_and_ready)
}

fn sweep_passes(name: &str, world: &SimBuilder) {
    let report = sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

/// Where each Pod of `default` ended, by name.
fn placement(snap: Option<&model_apiserver::Snapshot>) -> Result<Vec<(String, Option<String>)>, String> {
    let snap = snap.ok_or("no cluster")?;
    let pods = snapshot::objects::<Pod>(snap, Some("default"));
    Ok(pods
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), node_of(p).map(str::to_owned)))
        .collect())
}

// Three replicas that refuse to share a host, on two hosts: two run, the third waits with the
// anti-affinity reason (an eviction could help, but every Pod has the same priority), and runs
// once a third host registers. No two of them ever share a Node.
#[test]
fn replicas_with_required_anti_affinity_never_share_a_node_and_the_extra_one_waits_for_a_node() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-pod-anti-affinity"))
        .workload(|w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
            w.apply_yaml("default", &node("node-a", "kubernetes.io/hostname: node-a")).await?;
            for name in ["db-0", "db-1", "db-2"] {
                w.apply_yaml("default", &pod(name, "app: db", &anti_affinity("app: db", "kubernetes.io/hostname")))
                    .await?;
            }
            let want = "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: 0/2 \
                        nodes are available: 2 No preemption victims found for incoming pod.";
            let settled = |all: &[Pod]| {
                let running = all.iter().filter(|p| pod_state::is_running_and_ready(p)).count();
                let waiting = all.iter().filter(|p| unschedulable_message(Some(p)).as_deref() == Some(want)).count();
                running == 2 && waiting == 1
            };
            w.wait_for_all(&pods, settled, WAIT).await?;
            w.apply_yaml("default", &node("node-b", "kubernetes.io/hostname: node-b")).await?;
            w.wait_for_all(&pods, |all| all.iter().filter(|p| pod_state::is_running_and_ready(p)).count() == 3, WAIT)
                .await
        })
        .property(FnProperty::always("no two db Pods share a Node", |view| {
            let placed = placement(view.cluster("default"))?;
            let mut nodes: Vec<&String> = placed.iter().filter_map(|(_, n)| n.as_ref()).collect();
            let bound = nodes.len();
            nodes.sort();
            nodes.dedup();
            if nodes.len() == bound { Ok(()) } else { Err(format!("placed {placed:?}")) }
        }));
    sweep_passes("builtins-pod-anti-affinity", &world);
}

// A Pod that must run beside a cache waits while no cache runs (it does not match its own
// terms, so it is not the first of a group), with a reason no eviction undoes, and goes to the
// cache's Node once the cache is bound: another Pod's binding schedules it again (no Node
// changes meanwhile).
#[test]
fn a_pod_with_required_affinity_waits_for_its_peer_and_joins_its_node() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-pod-affinity"))
        .workload(|w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
            w.apply_yaml("default", &node("node-a", "kubernetes.io/hostname: node-a")).await?;
            w.apply_yaml("default", &pod("web", "app: web", &affinity("app: cache", "kubernetes.io/hostname")))
                .await?;
            let want = "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. preemption: 0/2 nodes \
                        are available: 2 Preemption is not helpful for scheduling.";
            w.wait_for(&pods, "web", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
            // The cache is pinned to node-a; nothing but its binding happens after.
            let pinned = "  nodeSelector: {kubernetes.io/hostname: node-a}\n";
            w.apply_yaml("default", &pod("cache", "app: cache", pinned)).await?;
            w.wait_for(&pods, "cache", running, WAIT).await?;
            w.wait_for(&pods, "web", running, WAIT).await
        })
        .property(FnProperty::at_end("web beside the cache on node-a", |view| {
            let placed = placement(view.cluster("default"))?;
            let want = [("cache".to_owned(), Some("node-a".to_owned())), ("web".to_owned(), Some("node-a".to_owned()))];
            if placed == want { Ok(()) } else { Err(format!("placed {placed:?}")) }
        }));
    sweep_passes("builtins-pod-affinity", &world);
}

// A running Pod's anti-affinity keeps matching Pods off its host: a Pod with no rules of its own
// waits with the existing-Pods reason until the loner leaves.
#[test]
fn a_running_pods_anti_affinity_keeps_matching_pods_off_until_it_leaves() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-existing-anti-affinity")).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply_yaml("default", &pod("loner", "app: loner", &anti_affinity("app: web", "kubernetes.io/hostname")))
            .await?;
        w.wait_for(&pods, "loner", running, WAIT).await?;
        w.apply_yaml("default", &pod("web", "app: web", "")).await?;
        let want = "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules. preemption: \
                    0/1 nodes are available: 1 No preemption victims found for incoming pod.";
        w.wait_for(&pods, "web", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
        // A Pod the rule does not select runs beside it.
        w.apply_yaml("default", &pod("other", "app: other", "")).await?;
        w.wait_for(&pods, "other", running, WAIT).await?;
        w.delete(&pods, "loner").await?;
        w.wait_for(&pods, "web", running, WAIT).await
    });
    sweep_passes("builtins-existing-anti-affinity", &world);
}

// Zones a and b, each one Node, and the kubelet's node-1 without a zone label. With maxSkew 1,
// the first Pod goes to zone b (zone a is cordoned, but its domain still counts: taints are
// ignored by default); the second would make zone b two ahead of zone a and waits; node-1 lacks
// the label. Uncordoning zone a places it there.
#[test]
fn a_spread_constraint_keeps_a_zone_from_running_ahead_and_a_node_without_the_label_out() {
    let spread = "  topologySpreadConstraints:\n  \
                  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}\n";
    let world = builtins::kubelet(Sim::builder().scenario("builtins-topology-spread"))
        .workload(move |w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
            // zone-a is made cordoned, so that no cache ever shows it open before s0 is placed.
            w.apply_yaml("default", &format!("{}spec: {{unschedulable: true}}\n", node("zone-a", "zone: a"))).await?;
            w.apply_yaml("default", &node("zone-b", "zone: b")).await?;
            let cordon = |on: bool| Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}}));
            w.apply_yaml("default", &pod("s0", "app: spread", spread)).await?;
            w.wait_for(&pods, "s0", running, WAIT).await?;
            w.apply_yaml("default", &pod("s1", "app: spread", spread)).await?;
            let want = "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) \
                        didn't match pod topology spread constraints (missing required label), 1 node(s) were \
                        unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for \
                        incoming pod, 2 Preemption is not helpful for scheduling.";
            w.wait_for(&pods, "s1", |p| unschedulable_message(p).as_deref() == Some(want), WAIT).await?;
            w.patch(&nodes, "zone-a", &cordon(false)).await?;
            w.wait_for(&pods, "s1", running, WAIT).await
        })
        .property(FnProperty::at_end("one Pod in each zone", |view| {
            let placed = placement(view.cluster("default"))?;
            let want = [("s0".to_owned(), Some("zone-b".to_owned())), ("s1".to_owned(), Some("zone-a".to_owned()))];
            if placed == want { Ok(()) } else { Err(format!("placed {placed:?}")) }
        }));
    sweep_passes("builtins-topology-spread", &world);
}

fn node_in(name: &str, zone: &str) -> Arc<Node> {
    let yaml =
        format!("metadata: {{name: {name}, labels: {{zone: {zone}, kubernetes.io/hostname: {name}}}}}");
    Arc::new(serde_yaml_ng::from_str(&yaml).expect("a Node"))
}

fn pod_value(namespace: &str, labels: &str, spec: &str) -> Pod {
    let yaml = pod("p", labels, spec).replace("namespace: default", &format!("namespace: {namespace}"));
    serde_yaml_ng::from_str(&yaml).expect("a Pod")
}

fn bound(namespace: &str, labels: &str, spec: &str) -> Arc<Pod> {
    Arc::new(pod_value(namespace, labels, spec))
}

/// The Node `pod` goes to among `nodes` with `placed`, or the scheduler's message.
fn choice(
    pod: &Pod,
    nodes: &[Arc<Node>],
    placed: &[Vec<Arc<Pod>>],
    namespaces: &pod_topology::NamespaceLabels,
) -> Result<String, String> {
    scheduler::choose(pod, nodes, placed, namespaces, &Default::default())
        .map(|n| n.metadata.name.clone().unwrap_or_default())
}

#[test]
fn min_domains_counts_missing_zones_as_empty_and_match_label_keys_narrow_the_count() {
    let nodes = [node_in("n-a", "a"), node_in("n-b", "b")];
    let constraint = |extra: &str| {
        format!(
            "  topologySpreadConstraints:\n  - {{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, \
             labelSelector: {{matchLabels: {{app: s}}}}{extra}}}\n"
        )
    };
    // Zone a has 2, zone b 1: a third goes to b; with minDomains 3 (only 2 zones) the minimum is
    // 0, so both zones are full at maxSkew 1 and beyond.
    let placed = vec![
        vec![bound("default", "app: s", ""), bound("default", "app: s", "")],
        vec![bound("default", "app: s", "")],
    ];
    let incoming = pod_value("default", "app: s", &constraint(""));
    assert_eq!(choice(&incoming, &nodes, &placed, &Default::default()), Ok("n-b".to_owned()));
    let incoming = pod_value("default", "app: s", &constraint(", minDomains: 3"));
    assert_eq!(
        choice(&incoming, &nodes, &placed, &Default::default()),
        Err("0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints. preemption: 0/2 \
             nodes are available: 2 No preemption victims found for incoming pod."
            .to_owned())
    );
    // matchLabelKeys: only the Pods of the same revision count, so zone a's two old Pods do not.
    let placed = vec![
        vec![bound("default", "app: s, rev: old", ""), bound("default", "app: s, rev: old", "")],
        vec![bound("default", "app: s, rev: new", "")],
    ];
    let incoming = pod_value("default", "app: s, rev: new", &constraint(", matchLabelKeys: [rev]"));
    assert_eq!(choice(&incoming, &nodes, &placed, &Default::default()), Ok("n-a".to_owned()));
    // Pods of another namespace, and Pods being deleted, do not count.
    let mut leaving = pod_value("default", "app: s", "");
    leaving.metadata.deletion_timestamp = serde_json::from_str("\"2026-01-01T00:00:00Z\"").ok();
    let placed = vec![
        vec![bound("other", "app: s", ""), bound("other", "app: s", ""), Arc::new(leaving)],
        vec![bound("default", "app: s", "")],
    ];
    let incoming = pod_value("default", "app: s", &constraint(""));
    assert_eq!(choice(&incoming, &nodes, &placed, &Default::default()), Ok("n-a".to_owned()));
}

#[test]
fn affinity_terms_select_namespaces_by_name_or_label_and_the_first_of_a_group_goes_anywhere() {
    let nodes = [node_in("n-a", "a"), node_in("n-b", "b")];
    // The first Pod of a group with affinity to its own kind goes anywhere.
    let group = pod_value("default", "app: g", &affinity("app: g", "zone"));
    assert_eq!(choice(&group, &nodes, &[vec![], vec![]], &Default::default()), Ok("n-a".to_owned()));
    // Once one runs in zone b, the next must join it.
    let placed = vec![vec![], vec![bound("default", "app: g", "")]];
    assert_eq!(choice(&group, &nodes, &placed, &Default::default()), Ok("n-b".to_owned()));
    // A term with no namespaces looks in the Pod's own: a peer in another namespace is not seen.
    let placed = vec![vec![], vec![bound("other", "app: g", "")]];
    assert_eq!(choice(&group, &nodes, &placed, &Default::default()), Ok("n-a".to_owned()));
    // An anti-affinity term that selects namespaces by label sees Pods in those namespaces only.
    let by_label = anti_affinity("app: db", "zone")
        .replace("topologyKey: zone", "topologyKey: zone, namespaceSelector: {matchLabels: {team: x}}");
    let incoming = pod_value("default", "app: db", &by_label);
    let placed = vec![vec![bound("team-x", "app: db", "")], vec![bound("team-y", "app: db", "")]];
    let labels = |team: &str| std::collections::BTreeMap::from([("team".to_owned(), team.to_owned())]);
    let namespaces = pod_topology::NamespaceLabels::from([
        ("team-x".to_owned(), labels("x")),
        ("team-y".to_owned(), labels("y")),
    ]);
    assert_eq!(choice(&incoming, &nodes, &placed, &namespaces), Ok("n-b".to_owned()));
    // `namespaceSelector: {}` selects every namespace.
    let everywhere = anti_affinity("app: db", "zone")
        .replace("topologyKey: zone", "topologyKey: zone, namespaceSelector: {}");
    let incoming = pod_value("default", "app: db", &everywhere);
    assert!(choice(&incoming, &nodes, &placed, &namespaces).is_err());
    assert!(pod_topology::needs_namespace_labels(&incoming, &placed));
    // A term without a labelSelector selects no Pod.
    let nothing = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
                   - {topologyKey: zone}\n";
    let incoming = pod_value("default", "app: db", nothing);
    let placed = vec![vec![bound("default", "app: db", "")], vec![bound("default", "app: db", "")]];
    assert_eq!(choice(&incoming, &nodes, &placed, &Default::default()), Ok("n-a".to_owned()));
}
