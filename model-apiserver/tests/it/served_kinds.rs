//! The built-in kinds that clusters serve and operators and charts create besides workloads:
//! HorizontalPodAutoscaler, NetworkPolicy, IngressClass, StorageClass, EndpointSlice,
//! PodTemplate and the admission webhook configurations. Each is stored with its Go type's
//! defaults, decoded through its type (unknown fields named), and patched with its merge keys.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams, PostParams};
use model_apiserver::{FieldValidation, Request, Subresource};
use serde_json::json;

fn hpas() -> kube_core::ApiResource {
    builtin("autoscaling", "horizontalpodautoscalers")
}

fn hpa(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5},
    })
}

#[test]
fn a_horizontal_pod_autoscaler_gets_its_defaults_and_its_zero_status() {
    let mut w = World::new();
    let created = w.create(&hpas(), Some("default"), hpa("web"));
    assert_eq!(created.data["spec"]["minReplicas"], json!(1));
    assert_eq!(
        created.data["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(created.data["spec"].get("behavior"), None, "no behavior is given, none is made");
    // `currentMetrics` has no `omitempty` in autoscaling/v2: a nil list is `null`.
    assert_eq!(created.data["status"], json!({"desiredReplicas": 0, "currentMetrics": null}));

    let mut with_behavior = hpa("tuned");
    with_behavior["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
    let tuned = w.create(&hpas(), Some("default"), with_behavior);
    assert_eq!(
        tuned.data["spec"]["behavior"],
        json!({
            "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                          "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                     {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        })
    );
}

#[test]
fn a_horizontal_pod_autoscalers_status_is_written_through_its_subresource_only() {
    let mut w = World::new();
    w.create(&hpas(), Some("default"), hpa("web"));
    let ignored =
        w.try_merge(&hpas(), Some("default"), "web", json!({"status": {"desiredReplicas": 3}})).unwrap();
    assert_eq!(ignored.data["status"], json!({"desiredReplicas": 0, "currentMetrics": null}));
    let patch = Patch::Merge(json!({"status": {"currentReplicas": 2, "desiredReplicas": 3}}));
    let written = object(
        w.handle(
            Request::patch(&hpas(), Some("default"), "web", patch, PatchParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap(),
    );
    assert_eq!(
        written.data["status"],
        json!({"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": null})
    );
}

#[test]
fn a_network_policy_is_an_ingress_policy_unless_it_says_otherwise() {
    let mut w = World::new();
    let policies = builtin("networking.k8s.io", "networkpolicies");
    let ingress_only = w.create(
        &policies,
        Some("default"),
        json!({"metadata": {"name": "a"}, "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}}),
    );
    assert_eq!(ingress_only.data["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(ingress_only.data["spec"]["ingress"][0]["ports"][0], json!({"port": 80, "protocol": "TCP"}));
    assert_eq!(ingress_only.metadata.generation, Some(1));
    let with_egress = w.create(
        &policies,
        Some("default"),
        json!({"metadata": {"name": "b"}, "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}}),
    );
    assert_eq!(with_egress.data["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(with_egress.data["spec"]["egress"][0]["ports"][0]["protocol"], json!("UDP"));
    let explicit = w.create(
        &policies,
        Some("default"),
        json!({"metadata": {"name": "c"}, "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    );
    assert_eq!(explicit.data["spec"]["policyTypes"], json!(["Egress"]));
    let changed = w
        .try_merge(
            &policies,
            Some("default"),
            "a",
            json!({"spec": {"podSelector": {"matchLabels": {"app": "x"}}}}),
        )
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2), "a spec change bumps the generation");
}

#[test]
fn a_storage_class_and_an_endpoint_slice_get_their_defaults() {
    let mut w = World::new();
    let class = w.create(
        &builtin("storage.k8s.io", "storageclasses"),
        None,
        json!({"metadata": {"name": "standard"}, "provisioner": "rancher.io/local-path"}),
    );
    assert_eq!(class.data["reclaimPolicy"], json!("Delete"));
    assert_eq!(class.data["volumeBindingMode"], json!("Immediate"));
    let slice = w.create(
        &builtin("discovery.k8s.io", "endpointslices"),
        Some("default"),
        json!({"metadata": {"name": "web-1"}, "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
    );
    assert_eq!(slice.data["ports"], json!([{"name": "", "port": 80, "protocol": "TCP"}]));
}

#[test]
fn an_endpoint_slices_generation_moves_with_its_endpoints_not_its_metadata() {
    let mut w = World::new();
    let slices = builtin("discovery.k8s.io", "endpointslices");
    let slice = w.create(
        &slices,
        Some("default"),
        json!({"metadata": {"name": "web-1"}, "addressType": "IPv4", "endpoints": []}),
    );
    assert_eq!(slice.metadata.generation, Some(1));
    let annotated = w
        .try_merge(&slices, Some("default"), "web-1", json!({"metadata": {"annotations": {"a": "b"}}}))
        .unwrap();
    assert_eq!(annotated.metadata.generation, Some(1), "metadata alone keeps the generation");
    let changed = w
        .try_merge(&slices, Some("default"), "web-1", json!({"endpoints": [{"addresses": ["10.0.0.1"]}]}))
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2), "new endpoints bump the generation");
}

fn webhook_configuration() -> serde_json::Value {
    json!({
        "metadata": {"name": "policy"},
        "webhooks": [
            {"name": "a.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"service": {"namespace": "default", "name": "hook"}},
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            {"name": "b.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"url": "https://hook.example.com/b"}, "timeoutSeconds": 5},
        ],
    })
}

#[test]
fn admission_webhook_configurations_get_their_defaults_and_merge_webhooks_by_name() {
    let mut w = World::new();
    let validating = builtin("admissionregistration.k8s.io", "validatingwebhookconfigurations");
    let created = w.create(&validating, None, webhook_configuration());
    let a = &created.data["webhooks"][0];
    assert_eq!(a["failurePolicy"], json!("Fail"));
    assert_eq!(a["matchPolicy"], json!("Equivalent"));
    assert_eq!(a["namespaceSelector"], json!({}));
    assert_eq!(a["objectSelector"], json!({}));
    assert_eq!(a["timeoutSeconds"], json!(10));
    assert_eq!(a["rules"][0]["scope"], json!("*"));
    assert_eq!(a["clientConfig"]["service"]["port"], json!(443));
    assert_eq!(a.get("reinvocationPolicy"), None, "only a mutating webhook has one");
    assert_eq!(created.data["webhooks"][1]["timeoutSeconds"], json!(5));

    let patch = Patch::Strategic(json!({"webhooks": [{"name": "b.example.com", "failurePolicy": "Ignore"}]}));
    let patched =
        object(w.handle(Request::patch(&validating, None, "policy", patch, PatchParams::default())).unwrap());
    let names: Vec<_> =
        patched.data["webhooks"].as_array().unwrap().iter().map(|h| h["name"].clone()).collect();
    assert_eq!(names, vec![json!("a.example.com"), json!("b.example.com")], "merged by name, none lost");
    assert_eq!(patched.data["webhooks"][1]["failurePolicy"], json!("Ignore"));

    let mutating = builtin("admissionregistration.k8s.io", "mutatingwebhookconfigurations");
    let created = w.create(&mutating, None, webhook_configuration());
    assert_eq!(created.data["webhooks"][0]["reinvocationPolicy"], json!("Never"));
}

#[test]
fn a_pod_template_gets_the_pod_spec_defaults_and_an_ingress_class_is_stored() {
    let mut w = World::new();
    let template = w.create(
        &builtin("", "podtemplates"),
        Some("default"),
        json!({"metadata": {"name": "t"}, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}),
    );
    assert_eq!(template.data["template"]["spec"]["restartPolicy"], json!("Always"));
    assert_eq!(template.data["template"]["spec"]["containers"][0]["imagePullPolicy"], json!("IfNotPresent"));
    let class = w.create(
        &builtin("networking.k8s.io", "ingressclasses"),
        None,
        json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
    );
    assert_eq!(class.data["spec"]["controller"], json!("k8s.io/ingress-nginx"));
    assert_eq!(class.metadata.generation, Some(1));
}

#[test]
fn an_unknown_field_of_a_new_kind_is_named_as_for_every_built_in() {
    let mut w = World::new();
    let mut body = hpa("web");
    body["spec"]["maxReplica"] = json!(3);
    let request = Request::create(&hpas(), Some("default"), obj(body), PostParams::default())
        .with_field_validation(FieldValidation::Strict);
    let err = w.handle(request).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert!(
        err.message.ends_with("strict decoding error: unknown field \"spec.maxReplica\""),
        "{}",
        err.message
    );
}

/// `validateHorizontalPodAutoscalerSpec`: replica bounds and the scale target, in its words.
#[test]
fn an_autoscaler_with_bad_bounds_or_no_target_gets_422_in_kube_apiservers_words() {
    let mut w = World::new();
    let mut body = hpa("web");
    body["spec"]["maxReplicas"] = json!(0);
    body["spec"]["minReplicas"] = json!(3);
    body["spec"]["scaleTargetRef"] = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
    let err = w.try_create(&hpas(), Some("default"), body).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "HorizontalPodAutoscaler.autoscaling \"web\" is invalid: [spec.maxReplicas: Invalid value: 0: must be \
         greater than 0, spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`, \
         spec.scaleTargetRef.name: Required value]"
    );
    let mut zero = hpa("zero");
    zero["spec"]["minReplicas"] = json!(0);
    zero["spec"]["scaleTargetRef"]["name"] = json!("a/b");
    let err = w.try_create(&hpas(), Some("default"), zero).unwrap_err();
    assert_eq!(
        err.message,
        "HorizontalPodAutoscaler.autoscaling \"zero\" is invalid: [spec.minReplicas: Invalid value: 0: must be \
         greater than or equal to 1, spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/']"
    );
    w.create(&hpas(), Some("default"), hpa("fine"));
}
