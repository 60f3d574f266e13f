//! The tests of `controllers::builtins::daemonset` (its former unit tests: the library has no test harness).

use std::collections::BTreeMap;

use controllers::builtins::daemonset::*;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::{Node, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sim::api::ObjectMeta;

fn node(labels: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("n".to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

#[test]
fn a_node_runs_the_pod_when_its_labels_match_the_node_selector() {
    let mut ds = DaemonSet::default();
    assert!(should_run(&ds, &node(&[])));
    ds.spec.template.spec = Some(PodSpec {
        node_selector: Some(BTreeMap::from([("disk".to_owned(), "ssd".to_owned())])),
        ..PodSpec::default()
    });
    assert!(should_run(&ds, &node(&[("disk", "ssd"), ("zone", "a")])));
    assert!(!should_run(&ds, &node(&[("disk", "hdd")])));
    assert!(!should_run(&ds, &node(&[])));
}

#[test]
fn max_unavailable_defaults_to_one_and_rounds_percentages_up() {
    let mut ds = DaemonSet::default();
    assert_eq!(max_unavailable(&ds, 10), 1);
    let with = |v: IntOrString| DaemonSetUpdateStrategy {
        type_: Some("RollingUpdate".to_owned()),
        rolling_update: Some(RollingUpdateDaemonSet { max_unavailable: Some(v), max_surge: None }),
    };
    ds.spec.update_strategy = Some(with(IntOrString::String("25%".to_owned())));
    assert_eq!(max_unavailable(&ds, 10), 3);
    ds.spec.update_strategy = Some(with(IntOrString::Int(0)));
    assert_eq!(max_unavailable(&ds, 10), 1);
}

/// A DaemonSet whose template has `spec` (YAML).
fn daemon_set(spec: &str) -> DaemonSet {
    let mut ds = DaemonSet::default();
    ds.spec.template.spec = Some(serde_yaml_ng::from_str(spec).expect("a PodSpec"));
    ds
}

fn tainted(taints: &str) -> Node {
    serde_yaml_ng::from_str(&format!("metadata: {{name: n}}\nspec: {{taints: {taints}}}")).expect("a Node")
}

// upstream's `predicates`: taints count with the daemon tolerations every daemon Pod gets, so a
// not-ready or cordoned-by-taint Node keeps its daemon and a dedicated one needs the template's.
#[test]
fn a_node_with_a_taint_the_daemon_pod_does_not_tolerate_runs_none() {
    let plain = daemon_set("containers: []");
    assert!(!should_run(&plain, &tainted("[{key: dedicated, value: db, effect: NoSchedule}]")));
    assert!(!should_run(&plain, &tainted("[{key: dedicated, value: db, effect: NoExecute}]")));
    assert!(should_run(&plain, &tainted("[{key: dedicated, value: db, effect: PreferNoSchedule}]")));
    assert!(should_run(&plain, &tainted("[{key: node.kubernetes.io/not-ready, effect: NoExecute}]")));
    assert!(should_run(&plain, &tainted("[{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]")));
    assert!(!should_run(
        &plain,
        &tainted("[{key: node.kubernetes.io/network-unavailable, effect: NoSchedule}]")
    ));
    let host = daemon_set("containers: []\nhostNetwork: true");
    assert!(should_run(
        &host,
        &tainted("[{key: node.kubernetes.io/network-unavailable, effect: NoSchedule}]")
    ));
    let tolerant = daemon_set("containers: []\ntolerations: [{key: dedicated, operator: Exists}]");
    assert!(should_run(&tolerant, &tainted("[{key: dedicated, value: db, effect: NoSchedule}]")));
    // A cordon alone (`spec.unschedulable`) never keeps a daemon off.
    let cordoned: Node = serde_yaml_ng::from_str("metadata: {name: n}\nspec: {unschedulable: true}").unwrap();
    assert!(should_run(&plain, &cordoned));
}

#[test]
fn a_node_outside_the_required_node_affinity_runs_none() {
    let ds = daemon_set(
        "containers: []\naffinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: \
         {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}",
    );
    assert!(should_run(&ds, &node(&[("zone", "a")])));
    assert!(!should_run(&ds, &node(&[("zone", "b")])));
}

#[test]
fn daemon_pods_get_the_daemon_tolerations_once_after_their_own() {
    let spec: PodSpec = serde_yaml_ng::from_str(
        "containers: []\ntolerations: [{key: dedicated, operator: Exists}, \
         {key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]",
    )
    .unwrap();
    let keys: Vec<String> = daemon_tolerations(&spec).into_iter().filter_map(|t| t.key).collect();
    assert_eq!(
        keys,
        [
            "dedicated",
            "node.kubernetes.io/unschedulable",
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
        ]
    );
}
