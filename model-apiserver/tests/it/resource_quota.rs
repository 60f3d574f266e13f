//! kube-apiserver's `ResourceQuota` admission plugin, the quota evaluators and the exact
//! quantities their statuses and refusals print.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{PatchParams, PostParams};
use model_apiserver::quantity::Amount;
use model_apiserver::quota::{self, Evaluator};
use model_apiserver::{Request, ServerConfig, Subresource};
use serde_json::{Value, json};

fn quotas() -> kube_core::discovery::ApiResource {
    builtin("", "resourcequotas")
}

fn with_quota_plugin() -> World {
    World::with_config(ServerConfig { resource_quota: true, ..ServerConfig::default() })
}

/// Create quota `name` with `hard`, and give it the status the quota controller would: `hard`,
/// and `used` as given.
fn synced_quota(w: &mut World, name: &str, spec: Value, used: Value) {
    let created = w.create(&quotas(), Some("default"), json!({"metadata": {"name": name}, "spec": spec}));
    let mut status = kube_core::DynamicObject::clone(&created);
    status.data["status"] = json!({"hard": spec["hard"], "used": used});
    let request = Request::update(&quotas(), Some("default"), name, status, PostParams::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
}

fn used(w: &mut World, name: &str) -> Value {
    w.get(&quotas(), Some("default"), name).data["status"]["used"].clone()
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "app", "image": "app:1", "resources": resources}]}})
}

fn forbidden_message(result: Result<std::sync::Arc<kube_core::DynamicObject>, kube_core::Status>) -> String {
    let status = result.expect_err("refused");
    assert_eq!(code_reason(&status), (403, "Forbidden"), "{status:?}");
    status.message
}

#[test]
fn quantities_print_in_apimachinerys_canonical_form() {
    let canonical = |text: &str| Amount::parse(text).map(|a| a.to_string());
    for (given, printed) in [
        ("1", "1"),
        ("1.5", "1500m"),
        ("0.1", "100m"),
        ("1000m", "1"),
        ("2000", "2k"),
        ("1500", "1500"),
        ("100u", "100u"),
        ("1536Mi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1.5Ki", "1536"),
        ("512Ki", "512Ki"),
        ("1Ki", "1Ki"),
        ("1e3", "1e3"),
        ("1E", "1E"),
        ("-2", "-2"),
        ("0", "0"),
        ("0Gi", "0"),
        // ParseQuantity reads an empty number as 0.
        ("Gi", "0"),
        (".", "0"),
    ] {
        assert_eq!(canonical(given).as_deref(), Some(printed), "{given}");
    }
    for bad in ["", "1.2.3", "1x", "1e", "--1"] {
        assert_eq!(Amount::parse(bad), None, "{bad}");
    }
    // Sums keep the first amount's format; a binary sum under 1024 prints as decimal.
    let sum = |a: &str, b: &str| (Amount::parse(a).unwrap() + Amount::parse(b).unwrap()).to_string();
    assert_eq!(sum("512Mi", "512Mi"), "1Gi");
    assert_eq!(sum("500m", "500m"), "1");
    assert_eq!(sum("1Gi", "1G"), "2073741824");
    assert_eq!(sum("0", "1Gi"), "1Gi");
    assert!(Amount::parse("1Gi").unwrap() > Amount::parse("1G").unwrap());
    assert_eq!(Amount::parse("1000m"), Amount::parse("1"));
}

#[test]
fn a_pod_counts_its_containers_its_peak_init_container_its_sidecars_and_its_overhead() {
    let pod: kube_core::DynamicObject = obj(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}},
            ],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "128Mi", "example.com/gpu": "1"}}},
            ],
            "overhead": {"cpu": "10m"},
        },
    }));
    let usage = Evaluator::Pods.usage(&pod, jiff::Timestamp::UNIX_EPOCH);
    let printed: Vec<(String, String)> = usage.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
    let expected = [
        ("count/pods", "1"),
        // The containers' 500m and the sidecar's 100m, against the init container's 2 with the
        // sidecar running beside it: the peak wins; then the overhead.
        ("cpu", "2110m"),
        ("limits.memory", "1Gi"),
        ("memory", "1Gi"),
        ("pods", "1"),
        ("requests.cpu", "2110m"),
        ("requests.example.com/gpu", "1"),
        ("requests.memory", "1Gi"),
    ];
    let expected: Vec<(String, String)> =
        expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(printed, expected);
    // A finished Pod counts as an object only.
    let mut done = pod.clone();
    done.data["status"] = json!({"phase": "Succeeded"});
    let usage = Evaluator::Pods.usage(&done, jiff::Timestamp::UNIX_EPOCH);
    assert_eq!(usage.keys().collect::<Vec<_>>(), ["count/pods"]);
}

#[test]
fn resource_names_map_to_the_evaluator_that_measures_them() {
    let of = |name: &str| Evaluator::of_resource_name(name);
    assert_eq!(of("pods"), Some(Evaluator::Pods));
    assert_eq!(of("requests.nvidia.com/gpu"), Some(Evaluator::Pods));
    assert_eq!(of("services.nodeports"), Some(Evaluator::Services));
    assert_eq!(of("gold.storageclass.storage.k8s.io/requests.storage"), Some(Evaluator::Claims));
    let count =
        |group: &str, plural: &str| Some(Evaluator::Count { group: group.into(), plural: plural.into() });
    assert_eq!(of("configmaps"), count("", "configmaps"));
    assert_eq!(of("count/secrets"), count("", "secrets"));
    assert_eq!(of("count/deployments.apps"), count("apps", "deployments"));
    assert_eq!(of("count/events"), None, "events are never counted");
    assert_eq!(of("bananas"), None);
}

#[test]
fn a_pod_past_the_quota_is_refused_and_each_admitted_one_is_charged_at_once() {
    let mut w = with_quota_plugin();
    synced_quota(&mut w, "pods", json!({"hard": {"pods": "2"}}), json!({"pods": "0"}));
    let pods = builtin("", "pods");
    w.create(&pods, Some("default"), pod("a", json!({})));
    assert_eq!(used(&mut w, "pods"), json!({"pods": "1"}));
    w.create(&pods, Some("default"), pod("b", json!({})));
    assert_eq!(used(&mut w, "pods"), json!({"pods": "2"}));
    let refused = forbidden_message(w.try_create(&pods, Some("default"), pod("c", json!({}))));
    assert_eq!(
        refused,
        r#"pods "c" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"#
    );
    assert!(w.try_get(&pods, Some("default"), "c").is_err(), "nothing stored");
    // Another namespace has no quota.
    w.create(&pods, Some("kube-system"), pod("c", json!({})));
    // Admission never gives back: a deleted Pod frees its slot only when the quota controller
    // recalculates `used`.
    w.try_delete(&pods, Some("default"), "a").unwrap();
    assert_eq!(used(&mut w, "pods"), json!({"pods": "2"}));
}

#[test]
fn the_charge_is_a_status_write_of_the_quota_before_the_object_is_stored() {
    let mut w = with_quota_plugin();
    synced_quota(
        &mut w,
        "objects",
        json!({"hard": {"configmaps": "5", "count/configmaps": "5"}}),
        json!({"configmaps": "0", "count/configmaps": "0"}),
    );
    let before = rv(&w.get(&quotas(), Some("default"), "objects"));
    let created = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let quota = w.get(&quotas(), Some("default"), "objects");
    assert_eq!(quota.data["status"]["used"], json!({"configmaps": "1", "count/configmaps": "1"}));
    assert!(before < rv(&quota) && rv(&quota) < rv(&created), "{before} {} {}", rv(&quota), rv(&created));
    // A dry run is checked but charges nothing.
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    w.handle(Request::create(&cm(), Some("default"), obj(config_map("b", json!({}))), dry)).unwrap();
    assert_eq!(used(&mut w, "objects")["configmaps"], json!("1"));
}

#[test]
fn a_quota_the_controller_has_not_synced_limits_nothing() {
    let mut w = with_quota_plugin();
    w.create(&quotas(), Some("default"), json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}}}));
    w.create(&builtin("", "pods"), Some("default"), pod("a", json!({})));
    assert_eq!(w.get(&quotas(), Some("default"), "q").data["status"], json!({}));
}

#[test]
fn the_plugin_is_off_by_default() {
    let mut w = World::new();
    synced_quota(&mut w, "pods", json!({"hard": {"pods": "0"}}), json!({"pods": "0"}));
    w.create(&builtin("", "pods"), Some("default"), pod("a", json!({})));
    assert_eq!(used(&mut w, "pods"), json!({"pods": "0"}));
}

#[test]
fn a_quota_of_cpu_or_memory_needs_every_container_to_state_it() {
    let mut w = with_quota_plugin();
    synced_quota(
        &mut w,
        "compute",
        json!({"hard": {"requests.cpu": "1", "limits.memory": "1Gi"}}),
        json!({"requests.cpu": "0", "limits.memory": "0"}),
    );
    let pods = builtin("", "pods");
    let refused = forbidden_message(w.try_create(
        &pods,
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "init", "image": "init:1"}],
            "containers": [{"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}],
        }}),
    ));
    assert_eq!(
        refused,
        r#"pods "p" is forbidden: failed quota: compute: must specify limits.memory for: app,init; requests.cpu for: init"#
    );
    let resources = json!({"requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}});
    w.create(&pods, Some("default"), pod("a", resources.clone()));
    assert_eq!(used(&mut w, "compute"), json!({"limits.memory": "512Mi", "requests.cpu": "600m"}));
    let refused = forbidden_message(w.try_create(&pods, Some("default"), pod("b", resources)));
    assert_eq!(
        refused,
        r#"pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"#
    );
}

#[test]
fn a_scoped_quota_counts_only_the_pods_in_its_scopes() {
    let mut w = with_quota_plugin();
    synced_quota(
        &mut w,
        "best-effort",
        json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}),
        json!({"pods": "0"}),
    );
    synced_quota(
        &mut w,
        "critical",
        json!({"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["critical"]},
        ]}}),
        json!({"pods": "0"}),
    );
    let pods = builtin("", "pods");
    w.create(&pods, Some("default"), pod("a", json!({})));
    let refused = forbidden_message(w.try_create(&pods, Some("default"), pod("b", json!({}))));
    assert!(refused.contains("exceeded quota: best-effort"), "{refused}");
    // Not best effort: the quota does not count it.
    w.create(&pods, Some("default"), pod("c", json!({"requests": {"memory": "64Mi"}})));
    assert_eq!(used(&mut w, "best-effort"), json!({"pods": "1"}));
    let mut critical = pod("d", json!({"requests": {"memory": "64Mi"}}));
    critical["spec"]["priorityClassName"] = json!("critical");
    let refused = forbidden_message(w.try_create(&pods, Some("default"), critical));
    assert!(
        refused.contains("exceeded quota: critical, requested: pods=1, used: pods=0, limited: pods=0"),
        "{refused}"
    );
}

#[test]
fn a_service_update_is_charged_what_it_adds() {
    let mut w = with_quota_plugin();
    synced_quota(
        &mut w,
        "services",
        json!({"hard": {"services": "5", "services.nodeports": "1"}}),
        json!({"services": "0", "services.nodeports": "0"}),
    );
    let services = builtin("", "services");
    let ports = json!([{"name": "a", "port": 80}, {"name": "b", "port": 81}]);
    w.create(&services, Some("default"), json!({"metadata": {"name": "s"}, "spec": {"ports": ports}}));
    assert_eq!(used(&mut w, "services"), json!({"services": "1", "services.nodeports": "0"}));
    let to_node_port = json!({"spec": {"type": "NodePort"}});
    let request = Request::patch(
        &services,
        Some("default"),
        "s",
        kube_core::params::Patch::Merge(to_node_port),
        PatchParams::default(),
    );
    let refused = w.handle(request).expect_err("two node ports against one");
    assert_eq!(
        refused.message,
        r#"services "s" is forbidden: exceeded quota: services, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"#
    );
    // A label change adds nothing, and is not refused.
    w.try_merge(&services, Some("default"), "s", json!({"metadata": {"labels": {"a": "b"}}})).unwrap();
    assert_eq!(used(&mut w, "services"), json!({"services": "1", "services.nodeports": "0"}));
}

#[test]
fn a_claim_counts_its_storage_per_class_and_a_growing_claim_is_charged_the_growth() {
    let mut w = with_quota_plugin();
    synced_quota(
        &mut w,
        "storage",
        json!({"hard": {"requests.storage": "10Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1"}}),
        json!({"requests.storage": "0", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "0"}),
    );
    let claims = builtin("", "persistentvolumeclaims");
    let claim = |name: &str, class: &str, size: &str| {
        json!({"metadata": {"name": name}, "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}})
    };
    w.create(&claims, Some("default"), claim("a", "gold", "4Gi"));
    let refused = forbidden_message(w.try_create(&claims, Some("default"), claim("b", "gold", "1Gi")));
    assert!(refused.ends_with("requested: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, used: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, limited: gold.storageclass.storage.k8s.io/persistentvolumeclaims=1"), "{refused}");
    w.create(&claims, Some("default"), claim("c", "silver", "5Gi"));
    assert_eq!(used(&mut w, "storage")["requests.storage"], json!("9Gi"));
    let refused = forbidden_message(w.try_create(&claims, Some("default"), claim("d", "silver", "2Gi")));
    assert!(
        refused.contains(
            "requested: requests.storage=2Gi, used: requests.storage=9Gi, limited: requests.storage=10Gi"
        ),
        "{refused}"
    );
}

#[test]
fn the_sums_of_a_quota_controller_start_from_zero_for_every_limited_resource() {
    let q: kube_core::DynamicObject = obj(
        json!({"metadata": {"name": "q", "namespace": "default"}, "spec": {"hard": {"pods": "3", "requests.memory": "1Gi"}}}),
    );
    let pods: Vec<kube_core::DynamicObject> = ["64Mi", "192Mi"]
        .iter()
        .map(|m| obj(json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": m}}}]}})))
        .collect();
    let resources = vec!["pods".to_owned(), "requests.memory".to_owned()];
    let used = Evaluator::Pods.usage_stats(&q, &resources, &pods, jiff::Timestamp::UNIX_EPOCH);
    assert_eq!(quota::list_to_value(&used), json!({"pods": "2", "requests.memory": "256Mi"}));
    let none = Evaluator::Pods.usage_stats(&q, &resources, &[], jiff::Timestamp::UNIX_EPOCH);
    assert_eq!(quota::list_to_value(&none), json!({"pods": "0", "requests.memory": "0"}));
}

#[test]
fn a_quota_naming_an_unknown_resource_or_a_negative_amount_is_invalid() {
    let mut w = World::new();
    let body = json!({"metadata": {"name": "q"}, "spec": {"hard": {
        "bananas": "3", "pods": "-1", "count/deployments.apps": "2", "requests.nvidia.com/gpu": "1", "hugepages-2Mi": "1Gi",
    }}});
    let status = w.try_create(&quotas(), Some("default"), body).expect_err("invalid");
    assert_eq!(code_reason(&status), (422, "Invalid"));
    assert_eq!(
        status.message,
        r#"ResourceQuota "q" is invalid: [spec.hard[bananas]: Invalid value: "bananas": must be a standard resource for quota, spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0]"#
    );
}
