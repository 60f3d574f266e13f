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
