//! What a fresh kube-apiserver stores by itself, and the deletes it refuses: the `kubernetes`
//! Service with its Endpoints and EndpointSlice, the system PriorityClasses (validated and
//! undeletable as the registry makes them), and the immortal namespaces.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{DeleteParams, ListParams, PostParams};
use model_apiserver::{ApiServer, Context, Request, SeqIds};
use serde_json::json;

fn bootstrapped() -> World {
    let mut ids = SeqIds::default();
    let now = jiff::Timestamp::from_second(T0_SECONDS).unwrap();
    let server = ApiServer::new().with_bootstrap_objects(&mut Context::new(now, &mut ids));
    World { server, ids, now }
}

fn priority_classes() -> kube_core::ApiResource {
    builtin("scheduling.k8s.io", "priorityclasses")
}

fn priority_class(name: &str, value: i64) -> serde_json::Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
}

#[test]
fn a_fresh_server_has_the_kubernetes_service_and_its_endpoints() {
    let mut w = bootstrapped();
    let service = w.get(&builtin("", "services"), Some("default"), "kubernetes");
    assert_eq!(service.data["spec"]["clusterIP"], json!("10.96.0.1"));
    assert_eq!(service.data["spec"]["type"], json!("ClusterIP"));
    assert_eq!(
        service.data["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}])
    );
    assert_eq!(
        service.data["spec"].get("selector"),
        None,
        "the bootstrap controller keeps its endpoints, not a selector"
    );
    let labels = service.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("component").map(String::as_str), Some("apiserver"));
    assert_eq!(labels.get("provider").map(String::as_str), Some("kubernetes"));
    let managers: Vec<_> = service
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| m.manager.clone().unwrap_or_default())
        .collect();
    assert_eq!(managers, ["kube-apiserver"]);

    let endpoints = w.get(&builtin("", "endpoints"), Some("default"), "kubernetes");
    assert_eq!(
        endpoints.data["subsets"],
        json!([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}])
    );
    let skip = endpoints.metadata.labels.clone().unwrap_or_default();
    assert_eq!(skip.get("endpointslice.kubernetes.io/skip-mirror").map(String::as_str), Some("true"));

    let slice = w.get(&builtin("discovery.k8s.io", "endpointslices"), Some("default"), "kubernetes");
    assert_eq!(slice.data["addressType"], json!("IPv4"));
    assert_eq!(slice.data["endpoints"], json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]));
    let service_name = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(service_name.get("kubernetes.io/service-name").map(String::as_str), Some("kubernetes"));
}

#[test]
fn no_other_service_is_given_the_kubernetes_service_ip() {
    let mut w = bootstrapped();
    let services = builtin("", "services");
    for i in 0..300 {
        let created = w.create(
            &services,
            Some("default"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("s{i}")},
                   "spec": {"ports": [{"port": 80}]}}),
        );
        let ip = created.data["spec"]["clusterIP"].as_str().unwrap().to_owned();
        assert!(ip.starts_with("10.96.") && ip != "10.96.0.1" && ip != "10.96.0.0", "s{i} got {ip}");
    }
}

#[test]
fn the_system_priority_classes_exist_and_cannot_be_deleted() {
    let mut w = bootstrapped();
    let listed = w.list(&priority_classes(), None, ListParams::default());
    let classes: Vec<_> = listed
        .items
        .iter()
        .map(|pc| {
            (pc.metadata.name.clone().unwrap(), pc.data["value"].clone(), pc.data["preemptionPolicy"].clone())
        })
        .collect();
    assert_eq!(
        classes,
        [
            ("system-cluster-critical".to_owned(), json!(2_000_000_000), json!("PreemptLowerPriority")),
            ("system-node-critical".to_owned(), json!(2_000_001_000), json!("PreemptLowerPriority")),
        ]
    );
    let refused = w.try_delete(&priority_classes(), None, "system-node-critical").unwrap_err();
    assert_eq!(code_reason(&refused), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
    );
    w.get(&priority_classes(), None, "system-node-critical");
}

#[test]
fn a_priority_class_is_validated_and_defaulted_as_the_registry_does() {
    let mut w = World::new();
    let created = w.create(&priority_classes(), None, priority_class("high", 1000));
    assert_eq!(created.data["preemptionPolicy"], json!("PreemptLowerPriority"));

    let reserved = w.try_create(&priority_classes(), None, priority_class("system-mine", 5)).unwrap_err();
    assert_eq!(code_reason(&reserved), (422, "Invalid"));
    assert_eq!(
        reserved.message,
        "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names \
         with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
    );
    let wrong_value =
        w.try_create(&priority_classes(), None, priority_class("system-node-critical", 7)).unwrap_err();
    assert!(
        wrong_value
            .message
            .ends_with("error: value of system-node-critical PriorityClass must be 2000001000"),
        "{}",
        wrong_value.message
    );
    let too_high = w.try_create(&priority_classes(), None, priority_class("big", 1_000_000_001)).unwrap_err();
    assert_eq!(
        too_high.message,
        "PriorityClass.scheduling.k8s.io \"big\" is invalid: value: Forbidden: maximum allowed value of a user \
         defined priority is 1000000000"
    );
    let mut bad_policy = priority_class("odd", 1);
    bad_policy["preemptionPolicy"] = json!("Sometimes");
    let refused = w.try_create(&priority_classes(), None, bad_policy).unwrap_err();
    assert_eq!(
        refused.message,
        "PriorityClass.scheduling.k8s.io \"odd\" is invalid: preemptionPolicy: Unsupported value: \"Sometimes\": \
         supported values: \"PreemptLowerPriority\", \"Never\""
    );

    let changed = w.try_merge(&priority_classes(), None, "high", json!({"value": 2000})).unwrap_err();
    assert_eq!(
        changed.message,
        "PriorityClass.scheduling.k8s.io \"high\" is invalid: value: Forbidden: may not be changed in an update."
    );
    let policy =
        w.try_merge(&priority_classes(), None, "high", json!({"preemptionPolicy": "Never"})).unwrap_err();
    assert_eq!(
        policy.message,
        "PriorityClass.scheduling.k8s.io \"high\" is invalid: preemptionPolicy: Invalid value: \"Never\": field is immutable"
    );
    let described =
        w.try_merge(&priority_classes(), None, "high", json!({"description": "for the web tier"}));
    assert!(described.is_ok(), "the description may change: {described:?}");
}

#[test]
fn the_immortal_namespaces_cannot_be_deleted_and_others_can() {
    let mut w = bootstrapped();
    for name in ["default", "kube-system", "kube-public"] {
        let refused = w.try_delete(&namespaces(), None, name).unwrap_err();
        assert_eq!(code_reason(&refused), (403, "Forbidden"));
        assert_eq!(
            refused.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        let dry_run = DeleteParams { dry_run: true, ..DeleteParams::default() };
        let refused = w.handle(Request::delete(&namespaces(), None, name, dry_run)).unwrap_err();
        assert_eq!(code_reason(&refused), (403, "Forbidden"), "admission refuses a dry run too");
        let kept = w.get(&namespaces(), None, name);
        assert_eq!(kept.metadata.deletion_timestamp, None);
    }
    w.try_delete(&namespaces(), None, "kube-node-lease").expect("kube-node-lease is not immortal");
    w.handle(Request::create(
        &namespaces(),
        None,
        obj(json!({"metadata": {"name": "mine"}})),
        PostParams::default(),
    ))
    .unwrap();
    w.try_delete(&namespaces(), None, "mine").expect("a namespace of one's own goes");
}

#[test]
fn an_endpoints_port_defaults_to_tcp() {
    let mut w = World::new();
    let created = w.create(
        &builtin("", "endpoints"),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "db"},
               "subsets": [{"addresses": [{"ip": "10.1.0.5"}], "ports": [{"port": 5432}]}]}),
    );
    assert_eq!(created.data["subsets"][0]["ports"], json!([{"port": 5432, "protocol": "TCP"}]));
}
