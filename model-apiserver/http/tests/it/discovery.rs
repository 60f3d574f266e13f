//! The tests of `model_apiserver_http::discovery` (its former unit tests: the library has no test harness).

use model_apiserver_http::discovery::*;

#[test]
fn kubectl_accept_header_asks_for_aggregated_v2() {
    let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    assert_eq!(negotiate(kubectl), Form::Aggregated("v2"));
    let older = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    assert_eq!(negotiate(older), Form::Aggregated("v2beta1"));
}

#[test]
fn plain_json_or_no_accept_gets_the_legacy_form() {
    assert_eq!(negotiate("application/json, */*"), Form::Legacy);
    assert_eq!(negotiate(""), Form::Legacy);
    assert_eq!(
        negotiate("application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList"),
        Form::Legacy
    );
}

#[test]
fn protobuf_aggregated_is_passed_over_and_q_orders_the_ranges() {
    let accept = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                  application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.9,application/json;q=0.8";
    assert_eq!(negotiate(accept), Form::Aggregated("v2"));
    let legacy_first =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json";
    assert_eq!(negotiate(legacy_first), Form::Legacy);
}

/// A group's versions are listed highest Kubernetes priority first and the first is preferred,
/// as kube-apiserver sorts a CRD's group (`v2` before `v1` before `v1beta1`), not in name order.
#[test]
fn a_crd_groups_versions_are_in_kube_priority_order_and_the_highest_is_preferred() {
    use kube_core::params::PostParams;
    use model_apiserver::{ApiServer, Context, Request, SeqIds};
    let version = |name: &str, storage: bool| {
        serde_json::json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    let crd: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [version("v1", true), version("v1beta1", false), version("v2", false)]},
    }))
    .expect("a CRD");
    let crds = kube_core::ApiResource {
        group: "apiextensions.k8s.io".to_owned(),
        version: "v1".to_owned(),
        api_version: "apiextensions.k8s.io/v1".to_owned(),
        kind: "CustomResourceDefinition".to_owned(),
        plural: "customresourcedefinitions".to_owned(),
    };
    let mut ids = SeqIds::default();
    let mut ctx = Context::new(jiff::Timestamp::from_second(1_767_225_600).expect("a time"), &mut ids);
    let mut server = ApiServer::new();
    server
        .handle(Request::create(&crds, None, crd, PostParams::default()), &mut ctx)
        .expect("the CRD is created");

    let group = group(server.types(), "example.com").expect("the CRD's group is served");
    let versions: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
    assert_eq!(versions, vec!["v2", "v1", "v1beta1"]);
    assert_eq!(group.preferred_version.map(|v| v.group_version), Some("example.com/v2".to_owned()));
    let listed = group_list(server.types());
    let listed = listed.groups.iter().find(|g| g.name == "example.com").expect("listed");
    assert_eq!(listed.versions[0].version, "v2");
}
