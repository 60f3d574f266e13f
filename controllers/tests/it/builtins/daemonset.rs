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
