//! Validation of built-in kinds: labels, annotations and immutable fields.

#[path = "common/mod.rs"]
mod common;

use common::*;
use serde_json::json;

fn cause_of(err: &kube_core::Status) -> (String, String, String) {
    let c = &err.details.as_ref().unwrap().causes[0];
    (c.reason.clone(), c.field.clone(), c.message.clone())
}

fn with_labels(labels: serde_json::Value) -> serde_json::Value {
    let mut body = config_map("a", json!({}));
    body["metadata"]["labels"] = labels;
    body
}

#[test]
fn an_invalid_label_value_gets_422_with_the_real_message() {
    let mut w = World::new();
    let err = w.try_create(&cm(), Some("default"), with_labels(json!({"app": "-bad"}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"a\" is invalid: metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
}

#[test]
fn a_label_value_longer_than_63_characters_gets_422() {
    let mut w = World::new();
    let long = "a".repeat(64);
    let err = w.try_create(&cm(), Some("default"), with_labels(json!({"app": long}))).unwrap_err();
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueInvalid".to_owned(),
            "metadata.labels".to_owned(),
            format!("Invalid value: \"{long}\": must be no more than 63 characters")
        )
    );
}

#[test]
fn a_label_key_with_an_invalid_prefix_gets_422() {
    let mut w = World::new();
    let err = w.try_create(&cm(), Some("default"), with_labels(json!({"Example.com/app": "x"}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let (_, field, message) = cause_of(&err);
    assert_eq!(field, "metadata.labels");
    assert!(
        message.starts_with("Invalid value: \"Example.com/app\": prefix part a lowercase RFC 1123 subdomain"),
        "{message}"
    );
}

#[test]
fn valid_labels_and_empty_values_are_accepted() {
    let mut w = World::new();
    let body = with_labels(json!({"app.kubernetes.io/name": "web", "empty": "", "A_b.c-9": "X_y.z-1"}));
    assert!(w.try_create(&cm(), Some("default"), body).is_ok());
}

#[test]
fn changing_a_deployments_selector_gets_422_immutable() {
    let mut w = World::new();
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                      "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    w.create(&deployments(), Some("default"), body);
    let err = w
        .try_merge(
            &deployments(),
            Some("default"),
            "d",
            json!({"spec": {"selector": {"matchLabels": {"app": "e"}},
                            "template": {"metadata": {"labels": {"app": "e"}}}}}),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueInvalid".to_owned(),
            "spec.selector".to_owned(),
            "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"e\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable".to_owned()
        )
    );
}

fn pod(node: Option<&str>) -> serde_json::Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "i:1"}], "restartPolicy": "Always"});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

#[test]
fn a_pod_spec_change_other_than_images_gets_422_forbidden() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod(Some("n1")));
    let err =
        w.try_merge(&pods(), Some("default"), "p", json!({"spec": {"restartPolicy": "Never"}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let (reason, field, message) = cause_of(&err);
    assert_eq!((reason.as_str(), field.as_str()), ("FieldValueForbidden", "spec"));
    assert!(
        message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        )
    );
    let moved = w.try_merge(&pods(), Some("default"), "p", json!({"spec": {"nodeName": "n2"}})).unwrap_err();
    assert_eq!(code_reason(&moved), (422, "Invalid"));
}

#[test]
fn a_pods_container_image_can_change() {
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod(Some("n1")));
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "i:2"}]}});
    let p = w.try_merge(&pods(), Some("default"), "p", patch).unwrap();
    assert_eq!(p.data["spec"]["containers"][0]["image"], json!("i:2"));
    assert_eq!(p.metadata.generation, Some(2));
}

#[test]
fn an_unscheduled_pod_is_not_bound_by_an_update_of_its_node_name() {
    // kube-apiserver takes `spec.nodeName` only through `pods/binding` (tests/it/binding.rs).
    let mut w = World::new();
    w.create(&pods(), Some("default"), pod(None));
    let err = w.try_merge(&pods(), Some("default"), "p", json!({"spec": {"nodeName": "n1"}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(cause_of(&err).1, "spec");
}

#[test]
fn a_gated_pod_may_gain_node_selector_entries_and_narrow_its_node_affinity() {
    let mut w = World::new();
    let mut gated = pod(None);
    gated["spec"]["schedulingGates"] = json!([{"name": "quota"}]);
    gated["spec"]["nodeSelector"] = json!({"pool": "gpu"});
    w.create(&pods(), Some("default"), gated);
    #[allow(clippy::result_large_err)] // what ApiServer::handle answers: a Status
    let merge = |w: &mut World, patch: serde_json::Value| w.try_merge(&pods(), Some("default"), "p", patch);
    // Additions pass (what a gating controller writes before it lifts its gate).
    merge(&mut w, json!({"spec": {"nodeSelector": {"zone": "a"}}})).unwrap();
    let term = |exprs: serde_json::Value| {
        json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}}}})
    };
    let rack = json!({"key": "rack", "operator": "In", "values": ["r1"]});
    let row = json!({"key": "row", "operator": "In", "values": ["x"]});
    merge(&mut w, term(json!([rack.clone()]))).unwrap();
    merge(&mut w, term(json!([rack.clone(), row.clone()]))).unwrap();
    // Changes and deletions do not.
    let err = merge(&mut w, json!({"spec": {"nodeSelector": {"pool": "cpu"}}})).unwrap_err();
    assert_eq!(cause_of(&err).1, "spec.nodeSelector");
    assert!(
        cause_of(&err)
            .2
            .ends_with("only additions to spec.nodeSelector are allowed (no mutations or deletions)")
    );
    let err = merge(&mut w, term(json!([row]))).unwrap_err();
    assert_eq!(
        cause_of(&err).1,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    );
    // Once scheduled-to-be (no gate), the selector is fixed like the rest of the spec.
    merge(&mut w, json!({"spec": {"schedulingGates": null}})).unwrap();
    let err = merge(&mut w, json!({"spec": {"nodeSelector": {"disk": "ssd"}}})).unwrap_err();
    assert_eq!(cause_of(&err).1, "spec");
}

#[test]
fn a_pods_deadline_only_drops_its_tolerations_only_grow_and_its_grace_period_stays() {
    let mut w = World::new();
    let mut p = pod(None);
    p["spec"]["activeDeadlineSeconds"] = json!(100);
    p["spec"]["tolerations"] =
        json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]);
    w.create(&pods(), Some("default"), p);
    #[allow(clippy::result_large_err)] // what ApiServer::handle answers: a Status
    let merge = |w: &mut World, patch: serde_json::Value| w.try_merge(&pods(), Some("default"), "p", patch);
    merge(&mut w, json!({"spec": {"activeDeadlineSeconds": 50}})).unwrap();
    let err = merge(&mut w, json!({"spec": {"activeDeadlineSeconds": 60}})).unwrap_err();
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueInvalid".to_owned(),
            "spec.activeDeadlineSeconds".to_owned(),
            "Invalid value: 60: must be less than or equal to previous value".to_owned()
        )
    );
    let err = merge(&mut w, json!({"spec": {"activeDeadlineSeconds": null}})).unwrap_err();
    assert_eq!(cause_of(&err).2, "Invalid value: null: must not update from a positive integer to nil value");
    // A toleration's seconds may change, and tolerations be added; not an existing one changed.
    let tolerations = json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
                             {"key": "other", "operator": "Exists"}]);
    merge(&mut w, json!({"spec": {"tolerations": tolerations}})).unwrap();
    let err = merge(&mut w, json!({"spec": {"tolerations": [{"key": "other", "operator": "Exists"}]}}))
        .unwrap_err();
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueForbidden".to_owned(),
            "spec.tolerations".to_owned(),
            "Forbidden: existing toleration can not be modified except its tolerationSeconds".to_owned()
        )
    );
    let err = merge(&mut w, json!({"spec": {"terminationGracePeriodSeconds": 5}})).unwrap_err();
    assert_eq!(cause_of(&err).1, "spec");
}

#[test]
fn scheduling_gates_may_be_removed_but_not_added() {
    let mut w = World::new();
    let mut gated = pod(None);
    gated["spec"]["schedulingGates"] = json!([{"name": "quota"}, {"name": "group"}]);
    let created = w.create(&pods(), Some("default"), gated);
    // `applySchedulingGatedCondition`: a gated pod says why it waits.
    let conditions = created.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    assert_eq!(
        (
            &conditions[0]["type"],
            &conditions[0]["status"],
            &conditions[0]["reason"],
            &conditions[0]["message"]
        ),
        (
            &json!("PodScheduled"),
            &json!("False"),
            &json!("SchedulingGated"),
            &json!("Scheduling is blocked due to non-empty scheduling gates")
        )
    );
    let p = w
        .try_merge(&pods(), Some("default"), "p", json!({"spec": {"schedulingGates": [{"name": "group"}]}}))
        .unwrap();
    assert_eq!(p.data["spec"]["schedulingGates"], json!([{"name": "group"}]));
    let err = w
        .try_merge(
            &pods(),
            Some("default"),
            "p",
            json!({"spec": {"schedulingGates": [{"name": "group"}, {"name": "new"}]}}),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueForbidden".to_owned(),
            "spec.schedulingGates[1].name".to_owned(),
            "Forbidden: only deletion is allowed, but found new scheduling gate 'new'".to_owned()
        )
    );
    let ungated =
        w.try_merge(&pods(), Some("default"), "p", json!({"spec": {"schedulingGates": null}})).unwrap();
    assert!(ungated.data["spec"].get("schedulingGates").is_none());
    // A pod created without gates has no condition until the scheduler writes one.
    w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    assert!(w.get(&pods(), Some("default"), "q").data["status"].get("conditions").is_none());
}

#[test]
fn a_statefulset_spec_change_outside_the_allowed_fields_gets_422_forbidden() {
    let mut w = World::new();
    let sts = builtin("apps", "statefulsets");
    let body = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                      "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}}, "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    w.create(&sts, Some("default"), body);
    assert!(w.try_merge(&sts, Some("default"), "s", json!({"spec": {"replicas": 3}})).is_ok());
    let err = w.try_merge(&sts, Some("default"), "s", json!({"spec": {"serviceName": "t"}})).unwrap_err();
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueForbidden".to_owned(),
            "spec".to_owned(),
            "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden".to_owned()
        )
    );
}

#[test]
fn a_jobs_template_is_immutable() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let body = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                      "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}}});
    w.create(&jobs, Some("default"), body);
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:2"}]}}}});
    let err = w.try_merge(&jobs, Some("default"), "j", patch).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(cause_of(&err).1, "spec.template");
}

#[test]
fn an_immutable_config_map_keeps_its_data_but_not_its_labels() {
    let mut w = World::new();
    let mut body = config_map("a", json!({"k": "1"}));
    body["immutable"] = json!(true);
    w.create(&cm(), Some("default"), body);
    let err = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap_err();
    assert_eq!(
        cause_of(&err),
        (
            "FieldValueForbidden".to_owned(),
            "data".to_owned(),
            "Forbidden: field is immutable when `immutable` is set".to_owned()
        )
    );
    assert!(w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"labels": {"x": "y"}}})).is_ok());
}

#[test]
fn a_secrets_string_data_is_stored_base64_encoded_in_data() {
    let mut w = World::new();
    let secrets = builtin("", "secrets");
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                      "data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "hello"}});
    let s = w.create(&secrets, Some("default"), body);
    assert_eq!(s.data["data"], json!({"a": "eA==", "b": "aGVsbG8="}));
    assert_eq!(s.data.get("stringData"), None);
    let patched = w.try_merge(&secrets, Some("default"), "s", json!({"stringData": {"c": "hi"}})).unwrap();
    assert_eq!(patched.data["data"]["c"], json!("aGk="));
    assert_eq!(patched.data.get("stringData"), None);
}

fn with_meta(key: &str, value: serde_json::Value) -> serde_json::Value {
    let mut body = config_map("a", json!({}));
    body["metadata"][key] = value;
    body
}

fn causes_of(err: &kube_core::Status) -> Vec<(String, String)> {
    err.details.as_ref().unwrap().causes.iter().map(|c| (c.field.clone(), c.message.clone())).collect()
}

// apimachinery ValidateFinalizers (pkg/api/validation/objectmeta.go): each name is a qualified
// name (errors at the unindexed `metadata.finalizers`), and orphan with foregroundDeletion
// conflict; then core's ValidateObjectMeta (pkg/apis/core/validation/validation.go) runs
// validateKubeFinalizerName on built-ins: a name without '/' must be a standard finalizer.
#[test]
fn finalizer_names_are_validated_as_the_real_server_does() {
    let mut w = World::new();
    let err = w
        .try_create(
            &cm(),
            Some("default"),
            with_meta("finalizers", json!(["bad name", "kubernetes", "example.com/ok", "foo"])),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        causes_of(&err),
        vec![
            ("metadata.finalizers".to_owned(), "Invalid value: \"bad name\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_owned()),
            ("metadata.finalizers[0]".to_owned(), "Invalid value: \"bad name\": name is neither a standard finalizer name nor is it fully qualified".to_owned()),
            ("metadata.finalizers[3]".to_owned(), "Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified".to_owned()),
        ]
    );
    let err = w
        .try_create(&cm(), Some("default"), with_meta("finalizers", json!(["orphan", "foregroundDeletion"])))
        .unwrap_err();
    assert_eq!(
        err.message,
        "ConfigMap \"a\" is invalid: metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
    );
    assert!(
        w.try_create(
            &cm(),
            Some("default"),
            with_meta("finalizers", json!(["kubernetes", "orphan", "a.io/b"]))
        )
        .is_ok()
    );
}

// apimachinery validateOwnerReference: apiVersion (its version), kind, name, then uid, each at
// the unindexed `metadata.ownerReferences.<field>`.
#[test]
fn an_owner_reference_without_version_or_kind_gets_422_in_the_real_order() {
    let mut w = World::new();
    let body =
        with_meta("ownerReferences", json!([{"apiVersion": "apps/", "kind": "", "name": "", "uid": ""}]));
    let err = w.try_create(&cm(), Some("default"), body).unwrap_err();
    let fields: Vec<String> = causes_of(&err).into_iter().map(|(f, m)| format!("{f}: {m}")).collect();
    assert_eq!(
        fields,
        vec![
            "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
            "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
            "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
            "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
        ]
    );
}

#[test]
fn pod_affinity_match_label_keys_are_merged_into_the_selector_on_create() {
    let mut w = World::new();
    let mut body = pod(None);
    body["metadata"]["labels"] = json!({"app": "db", "revision": "r1"});
    let term = |keys: serde_json::Value| {
        let mut term =
            json!({"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"});
        term.as_object_mut().unwrap().extend(keys.as_object().unwrap().clone());
        term
    };
    body["spec"]["affinity"] = json!({
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            term(json!({"matchLabelKeys": ["revision", "absent"]})),
            {"topologyKey": "zone", "matchLabelKeys": ["revision"]},
        ]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": term(json!({"mismatchLabelKeys": ["app"]}))},
        ]},
    });
    let created = w.create(&pods(), Some("default"), body);
    let affinity = &created.data["spec"]["affinity"];
    // A key the Pod has becomes a requirement; one it lacks does not.
    assert_eq!(
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"],
        json!({"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "revision", "operator": "In", "values": ["r1"]}]})
    );
    // A term without a selector selects nothing, and stays without one.
    assert_eq!(
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][1].get("labelSelector"),
        None
    );
    assert_eq!(
        affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            ["labelSelector"]["matchExpressions"],
        json!([{"key": "app", "operator": "NotIn", "values": ["db"]}])
    );
    // The keys themselves are kept.
    assert_eq!(
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["matchLabelKeys"],
        json!(["revision", "absent"])
    );
}
