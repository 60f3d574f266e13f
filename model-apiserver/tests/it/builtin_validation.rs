//! Spec validation of the built-in kinds controllers write, as `pkg/apis/*/validation` does it:
//! 422 Invalid with the real causes (reason and field path) and the aggregated message, on
//! create, update and patch.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use kube_core::{
    DynamicObject, Status,
    params::{Patch, PatchParams},
};
use model_apiserver::{Request, Subresource};
use serde_json::{Value, json};

/// The (reason, field) pairs of a 422.
fn causes(err: &kube_core::Status) -> BTreeSet<(String, String)> {
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    err.details.as_ref().unwrap().causes.iter().map(|c| (c.reason.clone(), c.field.clone())).collect()
}

fn set(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs.iter().map(|(r, f)| ((*r).to_owned(), (*f).to_owned())).collect()
}

fn with(mut base: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    base.pointer_mut(parent).unwrap()[key] = value;
    base
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
        }
    })
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn job(restart: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"restartPolicy": restart,
                                           "containers": [{"name": "c", "image": "busybox"}]}}}})
}

#[test]
fn a_deployment_whose_template_labels_miss_its_selector_gets_422_with_the_real_message() {
    let mut w = World::new();
    let d = with(deployment(), "/spec/template/metadata/labels", json!({"app": "other"}));
    let err = w.try_create(&builtin("apps", "deployments"), Some("default"), d).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.template.metadata.labels")]));
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"
    );
}

#[test]
fn negative_replicas_get_422_on_every_workload_kind() {
    let mut w = World::new();
    let d = with(deployment(), "/spec/replicas", json!(-1));
    let err = w.try_create(&builtin("apps", "deployments"), Some("default"), d.clone()).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.replicas")]));
    assert!(err.message.ends_with("spec.replicas: Invalid value: -1: must be greater than or equal to 0"));
    for (plural, kind) in [("replicasets", "ReplicaSet"), ("statefulsets", "StatefulSet")] {
        let o = with(with(d.clone(), "/kind", json!(kind)), "/metadata/name", json!("x"));
        let err = w.try_create(&builtin("apps", plural), Some("default"), o).unwrap_err();
        assert!(
            causes(&err).contains(&("FieldValueInvalid".to_owned(), "spec.replicas".to_owned())),
            "{kind}"
        );
    }
}

#[test]
fn a_pod_without_containers_or_with_nameless_imageless_containers_gets_422() {
    let mut w = World::new();
    let pods = builtin("", "pods");
    let err = w.try_create(&pods, Some("default"), with(pod(), "/spec/containers", json!([]))).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueRequired", "spec.containers")]));
    let err = w.try_create(&pods, Some("default"), with(pod(), "/spec/containers", json!([{}]))).unwrap_err();
    assert_eq!(
        causes(&err),
        set(&[
            ("FieldValueRequired", "spec.containers[0].name"),
            ("FieldValueRequired", "spec.containers[0].image")
        ])
    );
}

#[test]
fn container_names_ports_and_their_names_are_checked_in_workload_templates_too() {
    let mut w = World::new();
    let containers = json!([
        {"name": "Web_1", "image": "nginx", "ports": [{"containerPort": 70000, "name": "http--x"},
                                                       {"containerPort": 80, "name": "http--x"}]},
        {"name": "Web_1", "image": "nginx"}
    ]);
    let d = with(deployment(), "/spec/template/spec/containers", containers);
    let err = w.try_create(&builtin("apps", "deployments"), Some("default"), d).unwrap_err();
    let c = causes(&err);
    let p = "spec.template.spec.containers";
    for expected in [
        ("FieldValueInvalid", format!("{p}[0].name")),
        ("FieldValueInvalid", format!("{p}[0].ports[0].containerPort")),
        ("FieldValueInvalid", format!("{p}[0].ports[0].name")),
        ("FieldValueDuplicate", format!("{p}[0].ports[1].name")),
        ("FieldValueDuplicate", format!("{p}[1].name")),
    ] {
        assert!(c.contains(&(expected.0.to_owned(), expected.1.clone())), "{expected:?} missing from {c:?}");
    }
}

// ValidatePodTemplateSpecForStatefulSet checks the template's labels and annotations only (under
// `spec.template.labels`, upstream's path), not its Pod spec: a container mounts a claim
// template's volume by name with no such volume in the template, as every StatefulSet with
// volumeClaimTemplates does. A bad Pod spec is the Pods' to meet at their create.
#[test]
fn a_statefulsets_template_is_checked_for_labels_and_annotations_not_as_a_pod_spec() {
    let mut w = World::new();
    let statefulsets = builtin("apps", "statefulsets");
    let sts = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                         "spec": {"containers": [{"name": "db", "image": "db:1",
                                                  "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    });
    w.create(&statefulsets, Some("default"), sts.clone());
    let nameless = with(
        with(sts.clone(), "/metadata/name", json!("db2")),
        "/spec/template/spec/containers",
        json!([{}]),
    );
    w.create(&statefulsets, Some("default"), nameless);
    let labelled = with(
        with(sts, "/metadata/name", json!("db3")),
        "/spec/template/metadata/labels",
        json!({"app": "db", "bad key!": "x"}),
    );
    let err = w.try_create(&statefulsets, Some("default"), labelled).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.template.labels")]));
}

#[test]
fn a_jobs_restart_policy_must_be_on_failure_or_never() {
    let mut w = World::new();
    let err = w.try_create(&builtin("batch", "jobs"), Some("default"), job("Always")).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueRequired", "spec.template.spec.restartPolicy")]));
    assert!(err.message.starts_with("Job.batch \"j\" is invalid: "));
    w.create(&builtin("batch", "jobs"), Some("default"), job("Never"));
}

#[test]
fn a_suspended_job_never_started_may_change_its_templates_scheduling_directives_only() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    w.create(&jobs, Some("default"), with(job("Never"), "/spec/suspend", json!(true)));
    // What a queueing controller (Kueue) writes before it lets the Job start.
    let placed = json!({"spec": {"template": {
        "metadata": {"labels": {"kueue.x-k8s.io/queue": "q"}, "annotations": {"a": "b"}},
        "spec": {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}}}});
    w.try_merge(&jobs, Some("default"), "j", placed).unwrap();
    // Not the rest of the template.
    let image =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}});
    let err = w.try_merge(&jobs, Some("default"), "j", image.clone()).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.template")]));
    // Resumed (and so started), the directives are fixed too.
    w.try_merge(&jobs, Some("default"), "j", json!({"spec": {"suspend": false}})).unwrap();
    let status = json!({"status": {"startTime": "2026-01-01T00:00:00Z"}});
    let request = Request::patch(&jobs, Some("default"), "j", Patch::Merge(status), PatchParams::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
    let moved = json!({"spec": {"template": {"spec": {"nodeSelector": {"pool": "cpu"}}}}});
    let err = w.try_merge(&jobs, Some("default"), "j", moved).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.template")]));
}

#[test]
fn a_jobs_completions_change_only_for_an_indexed_job_with_its_parallelism() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let two = with(with(job("Never"), "/spec/completions", json!(2)), "/spec/parallelism", json!(2));
    w.create(&jobs, Some("default"), two.clone());
    let err = w.try_merge(&jobs, Some("default"), "j", json!({"spec": {"completions": 3}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.completions")]));
    assert_eq!(err.details.as_ref().unwrap().causes[0].message, "Invalid value: 3: field is immutable");
    // Elastic Indexed Jobs (1.31): with parallelism, in tandem.
    let indexed = with(with(two, "/metadata/name", json!("i")), "/spec/completionMode", json!("Indexed"));
    w.create(&jobs, Some("default"), indexed);
    let err = w.try_merge(&jobs, Some("default"), "i", json!({"spec": {"completions": 4}})).unwrap_err();
    assert_eq!(
        err.details.as_ref().unwrap().causes[0].message,
        "Invalid value: 4: can only be modified in tandem with spec.parallelism"
    );
    w.try_merge(&jobs, Some("default"), "i", json!({"spec": {"completions": 4, "parallelism": 4}})).unwrap();
    // A pod failure policy cannot be added later.
    let policy = json!({"spec": {"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}});
    let err = w.try_merge(&jobs, Some("default"), "j", policy).unwrap_err();
    assert!(
        causes(&err).contains(&("FieldValueInvalid".to_owned(), "spec.podFailurePolicy".to_owned())),
        "{err:?}"
    );
}

#[test]
fn a_jobs_pod_failure_policy_is_validated_in_upstreams_words() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let policy =
        |restart: &str, rules: Value| with(job(restart), "/spec/podFailurePolicy", json!({"rules": rules}));
    // Only `Never` with a policy; the replacement policy may only be `Failed`.
    let on_failure =
        policy("OnFailure", json!([{"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}]));
    let on_failure = with(on_failure, "/spec/podReplacementPolicy", json!("TerminatingOrFailed"));
    let err = w.try_create(&jobs, Some("default"), on_failure).unwrap_err();
    let messages: Vec<(String, String)> =
        err.details.as_ref().unwrap().causes.iter().map(|c| (c.field.clone(), c.message.clone())).collect();
    assert_eq!(
        messages,
        [
            ("spec.podReplacementPolicy".to_owned(), "Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"".to_owned()),
            ("spec.template.spec.restartPolicy".to_owned(), "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified".to_owned()),
        ]
    );
    // Each rule's checks.
    let rules = json!([
        {"action": "Retry", "onExitCodes": {"containerName": "other", "operator": "In", "values": [0, 5, 5, 2]}},
        {"action": "Ignore"},
        {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}, "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]);
    let err = w.try_create(&jobs, Some("default"), policy("Never", rules)).unwrap_err();
    let messages: Vec<(String, String)> =
        err.details.as_ref().unwrap().causes.iter().map(|c| (c.field.clone(), c.message.clone())).collect();
    let want = [
        (
            "spec.podFailurePolicy.rules[0].action",
            "Unsupported value: \"Retry\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
        ),
        (
            "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
            "Invalid value: \"other\": must be one of the container or initContainer names in the pod template",
        ),
        (
            "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
            "Invalid value: 0: must not be 0 for the In operator",
        ),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]", "Duplicate value: 5"),
        (
            "spec.podFailurePolicy.rules[0].onExitCodes.values",
            "Invalid value: []int32{0, 5, 5, 2}: must be ordered",
        ),
        (
            "spec.podFailurePolicy.rules[1]",
            "Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
        ),
        (
            "spec.podFailurePolicy.rules[2]",
            "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
        ),
    ];
    assert_eq!(messages, want.map(|(f, m)| (f.to_owned(), m.to_owned())));
    // A valid one is accepted, its patterns' status defaulted to True.
    let rules = json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]);
    let created = w.create(&jobs, Some("default"), policy("Never", rules));
    assert_eq!(created.data["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"], "True");
    assert_eq!(created.data["spec"]["podReplacementPolicy"], "Failed");
}

#[test]
fn a_deployments_restart_policy_must_be_always() {
    let mut w = World::new();
    let d = with(deployment(), "/spec/template/spec/restartPolicy", json!("Never"));
    let err = w.try_create(&builtin("apps", "deployments"), Some("default"), d).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueNotSupported", "spec.template.spec.restartPolicy")]));
}

#[test]
fn a_pods_unknown_restart_policy_is_not_supported() {
    let mut w = World::new();
    let p = with(pod(), "/spec/restartPolicy", json!("Sometimes"));
    let err = w.try_create(&builtin("", "pods"), Some("default"), p).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueNotSupported", "spec.restartPolicy")]));
}

#[test]
fn a_service_port_out_of_range_is_reported_on_port_and_defaulted_target_port() {
    let mut w = World::new();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"ports": [{"port": 70000}], "selector": {"app": "x"}}});
    let err = w.try_create(&builtin("", "services"), Some("default"), svc).unwrap_err();
    assert_eq!(
        causes(&err),
        set(&[
            ("FieldValueInvalid", "spec.ports[0].port"),
            ("FieldValueInvalid", "spec.ports[0].targetPort")
        ])
    );
    assert!(err.message.starts_with("Service \"s\" is invalid: ["), "{}", err.message);
}

#[test]
fn service_ports_need_names_when_several_and_may_not_repeat() {
    let mut w = World::new();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                     "spec": {"ports": [{"port": 80}, {"port": 80}], "type": "Bogus"}});
    let err = w.try_create(&builtin("", "services"), Some("default"), svc).unwrap_err();
    let c = causes(&err);
    for expected in [
        ("FieldValueRequired", "spec.ports[0].name"),
        ("FieldValueRequired", "spec.ports[1].name"),
        ("FieldValueDuplicate", "spec.ports[1]"),
        ("FieldValueNotSupported", "spec.type"),
    ] {
        assert!(
            c.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} missing from {c:?}"
        );
    }
    let no_ports = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "t"}, "spec": {}});
    let err = w.try_create(&builtin("", "services"), Some("default"), no_ports).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueRequired", "spec.ports")]));
}

#[test]
fn a_configmap_key_must_be_a_config_key_and_the_data_at_most_one_mebibyte() {
    let mut w = World::new();
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data});
    let err =
        w.try_create(&builtin("", "configmaps"), Some("default"), cm(json!({"bad key": "v"}))).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "data[bad key]")]));
    let big = "x".repeat(1024 * 1024 + 1);
    let err = w.try_create(&builtin("", "configmaps"), Some("default"), cm(json!({"k": big}))).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueTooLong", "")]));
}

#[test]
fn a_secret_key_must_be_a_config_key() {
    let mut w = World::new();
    let s =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a/b": "x"}});
    let err = w.try_create(&builtin("", "secrets"), Some("default"), s).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "data[a/b]")]));
}

#[test]
fn a_cron_jobs_schedule_must_parse() {
    let mut w = World::new();
    let cj = |schedule: &str| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
               "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                   "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    };
    let err = w.try_create(&builtin("batch", "cronjobs"), Some("default"), cj("every minute")).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.schedule")]));
    w.create(&builtin("batch", "cronjobs"), Some("default"), cj("*/5 * * * *"));
}

#[test]
fn cron_schedules_parse_as_robfig_cron_standard_parser_does() {
    let mut w = World::new();
    let cj = |name: &str, schedule: &str| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
               "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                   "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    };
    let oks = ["*/5 * * * *", "0 0 * * 0", "15 3 1-15/2 JAN-MAR mon,fri", "@hourly", "@every 1h30m"];
    for (i, ok) in oks.into_iter().enumerate() {
        w.create(&builtin("batch", "cronjobs"), Some("default"), cj(&format!("ok-{i}"), ok));
    }
    let bad = [
        ("bad", "expected exactly 5 fields, found 1: [bad]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("@often", "unrecognized descriptor: @often"),
        ("*/0 * * * *", "step of range"),
    ];
    for (schedule, why) in bad {
        let err =
            w.try_create(&builtin("batch", "cronjobs"), Some("default"), cj("bad", schedule)).unwrap_err();
        assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.schedule")]), "{schedule}");
        let cause = &err.details.as_ref().unwrap().causes[0].message;
        assert!(cause.contains(why), "{schedule}: {cause}");
    }
}

#[test]
fn a_claim_needs_access_modes_and_a_storage_request() {
    let mut w = World::new();
    let pvc =
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}});
    let err = w.try_create(&builtin("", "persistentvolumeclaims"), Some("default"), pvc).unwrap_err();
    assert_eq!(
        causes(&err),
        set(&[("FieldValueRequired", "spec.accessModes"), ("FieldValueRequired", "spec.resources[storage]")])
    );
}

/// A claim `c` of 1Gi in `default`, unbound.
fn one_gibibyte_claim(w: &mut World, class: Option<&str>) {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    if let Some(class) = class {
        spec["storageClassName"] = json!(class);
    }
    w.create(
        &builtin("", "persistentvolumeclaims"),
        Some("default"),
        json!({"metadata": {"name": "c"}, "spec": spec}),
    );
}

/// What the binder writes to claim `c` once bound: `Bound` with `capacity`.
fn bind_claim(w: &mut World, capacity: &str) {
    let status = json!({"status": {"phase": "Bound", "capacity": {"storage": capacity}}});
    let request = Request::patch(
        &builtin("", "persistentvolumeclaims"),
        Some("default"),
        "c",
        Patch::Merge(status),
        PatchParams::default(),
    )
    .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
}

// The helper answers what ApiServer::handle answers: a Status error.
#[allow(clippy::result_large_err)]
fn resize(w: &mut World, storage: &str) -> Result<Arc<DynamicObject>, Status> {
    let patch = json!({"spec": {"resources": {"requests": {"storage": storage}}}});
    w.try_merge(&builtin("", "persistentvolumeclaims"), Some("default"), "c", patch)
}

#[test]
fn an_unbound_claims_spec_is_immutable_even_its_storage_request() {
    let mut w = World::new();
    let pvcs = builtin("", "persistentvolumeclaims");
    one_gibibyte_claim(&mut w, None);
    // kube-apiserver lets only a bound claim resize: growing a Pending claim is a 422.
    let err = resize(&mut w, "2Gi").unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
    let message = &err.details.as_ref().unwrap().causes[0].message;
    assert_eq!(
        message,
        "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
    );
    let err = w
        .try_merge(&pvcs, Some("default"), "c", json!({"spec": {"accessModes": ["ReadWriteMany"]}}))
        .unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
    // The binder's one write of the volume name passes.
    w.try_merge(&pvcs, Some("default"), "c", json!({"spec": {"volumeName": "pv-1"}})).unwrap();
    let err = w.try_merge(&pvcs, Some("default"), "c", json!({"spec": {"volumeName": "pv-2"}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
    // volumeMode is reported twice, as upstream: the spec and its own immutable field.
    let err = w.try_merge(&pvcs, Some("default"), "c", json!({"spec": {"volumeMode": "Block"}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec"), ("FieldValueInvalid", "volumeMode")]));
}

#[test]
fn a_bound_claim_may_grow_and_shrink_back_only_above_its_capacity() {
    let mut w = World::new();
    w.create(
        &builtin("storage.k8s.io", "storageclasses"),
        None,
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "allowVolumeExpansion": true}),
    );
    one_gibibyte_claim(&mut w, Some("fast"));
    bind_claim(&mut w, "1Gi");
    let grown = resize(&mut w, "5Gi").unwrap();
    assert_eq!(grown.data["spec"]["resources"]["requests"]["storage"], "5Gi");
    // RecoverVolumeExpansionFailure: back down to above the capacity, not to it.
    resize(&mut w, "2Gi").unwrap();
    let err = resize(&mut w, "1Gi").unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec.resources.requests.storage")]));
    assert_eq!(
        err.details.as_ref().unwrap().causes[0].message,
        "Forbidden: field can not be less than status.capacity"
    );
    // Only the storage request: other requests and the limits stay.
    let patch = json!({"spec": {"resources": {"limits": {"storage": "9Gi"}}}});
    let err = w.try_merge(&builtin("", "persistentvolumeclaims"), Some("default"), "c", patch).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
}

#[test]
fn a_bound_claim_grows_only_if_its_class_allows_expansion() {
    let mut w = World::new();
    let classes = builtin("storage.k8s.io", "storageclasses");
    w.create(&classes, None, json!({"metadata": {"name": "fixed"}, "provisioner": "example.com/fixed"}));
    one_gibibyte_claim(&mut w, Some("fixed"));
    bind_claim(&mut w, "1Gi");
    // The PersistentVolumeClaimResize admission plugin.
    let err = resize(&mut w, "2Gi").unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "persistentvolumeclaims \"c\" is forbidden: only dynamically provisioned pvc can be resized and \
         the storageclass that provisions the pvc must support resize"
    );
    w.try_merge(&classes, None, "fixed", json!({"allowVolumeExpansion": true})).unwrap();
    resize(&mut w, "2Gi").unwrap();
    // A claim of no class never grows.
    let mut w = World::new();
    one_gibibyte_claim(&mut w, Some(""));
    bind_claim(&mut w, "1Gi");
    assert_eq!(code_reason(&resize(&mut w, "2Gi").unwrap_err()), (403, "Forbidden"));
}

#[test]
fn a_claims_unset_class_may_be_set_once_as_the_binder_assigns_the_default_class() {
    let mut w = World::new();
    let pvcs = builtin("", "persistentvolumeclaims");
    let spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    w.create(&pvcs, Some("default"), json!({"metadata": {"name": "c"}, "spec": spec.clone()}));
    w.try_merge(&pvcs, Some("default"), "c", json!({"spec": {"storageClassName": "standard"}})).unwrap();
    // Once set, it stays.
    let err =
        w.try_merge(&pvcs, Some("default"), "c", json!({"spec": {"storageClassName": "fast"}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
    // A class given at creation, even an empty one, is kept too.
    let empty = with(spec, "/storageClassName", json!(""));
    w.create(&pvcs, Some("default"), json!({"metadata": {"name": "e"}, "spec": empty}));
    let err = w
        .try_merge(&pvcs, Some("default"), "e", json!({"spec": {"storageClassName": "standard"}}))
        .unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec")]));
}

#[test]
fn an_ingress_path_and_backend_are_checked() {
    let mut w = World::new();
    let ing = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
    "spec": {"rules": [{"host": "example.com", "http": {"paths": [
        {"path": "relative", "pathType": "Prefix", "backend": {"service": {"name": "web"}}},
        {"path": "/x", "pathType": "Sometimes", "backend": {}}
    ]}}]}});
    let err = w.try_create(&builtin("networking.k8s.io", "ingresses"), Some("default"), ing).unwrap_err();
    let p = "spec.rules[0].http.paths";
    assert_eq!(
        causes(&err),
        set(&[
            ("FieldValueInvalid", &format!("{p}[0].path")),
            ("FieldValueRequired", &format!("{p}[0].backend")),
            ("FieldValueNotSupported", &format!("{p}[1].pathType")),
            ("FieldValueInvalid", &format!("{p}[1].backend")),
        ])
    );
}

#[test]
fn a_pdb_may_not_set_both_min_available_and_max_unavailable() {
    let mut w = World::new();
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
        "spec": {"minAvailable": 1, "maxUnavailable": "150%", "selector": {"matchLabels": {"app": "x"}}}});
    let err = w.try_create(&builtin("policy", "poddisruptionbudgets"), Some("default"), pdb).unwrap_err();
    assert_eq!(
        causes(&err),
        set(&[("FieldValueInvalid", "spec"), ("FieldValueInvalid", "spec.maxUnavailable")])
    );
}

#[test]
fn a_lease_duration_must_be_positive() {
    let mut w = World::new();
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
    let err = w.try_create(&builtin("coordination.k8s.io", "leases"), Some("default"), lease).unwrap_err();
    assert_eq!(
        causes(&err),
        set(&[
            ("FieldValueInvalid", "spec.leaseDurationSeconds"),
            ("FieldValueInvalid", "spec.leaseTransitions")
        ])
    );
}

#[test]
fn a_daemon_set_needs_a_matching_selector() {
    let mut w = World::new();
    let ds = with(
        with(deployment(), "/kind", json!("DaemonSet")),
        "/spec/selector",
        json!({"matchLabels": {"app": "x"}}),
    );
    let mut ds = ds;
    ds["spec"].as_object_mut().unwrap().remove("replicas");
    let err = w.try_create(&builtin("apps", "daemonsets"), Some("default"), ds).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.template.metadata.labels")]));
}

#[test]
fn validation_applies_to_patches_too() {
    let mut w = World::new();
    w.create(&builtin("apps", "deployments"), Some("default"), deployment());
    let err = w
        .try_merge(&builtin("apps", "deployments"), Some("default"), "web", json!({"spec": {"replicas": -3}}))
        .unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.replicas")]));
}

#[test]
fn a_changed_selector_is_shown_as_go_prints_a_label_selector() {
    let mut w = World::new();
    let deployments = builtin("apps", "deployments");
    w.create(&deployments, Some("default"), deployment());
    let err = w
        .try_merge(
            &deployments,
            Some("default"),
            "web",
            json!({"spec": {"selector": {"matchLabels": {"x": "y"},
                   "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                   "template": {"metadata": {"labels": {"app": "web", "x": "y", "tier": "a"}}}}}),
        )
        .unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "spec.selector")]));
    // The merge keeps matchLabels.app: the map prints sorted, as Go's fmt prints a map.
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"x\":\"y\"}, MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"tier\", Operator:\"In\", Values:[]string{\"a\", \"b\"}}}}: field is immutable"
    );
}

// validateServiceExternalTrafficPolicy (pkg/apis/core/validation/validation.go): the policy
// only on `service.ExternallyAccessible` Services (a ClusterIP with external IPs is one), and a
// health check node port only on a LoadBalancer with the Local policy.
#[test]
fn a_traffic_policy_or_health_check_port_off_an_externally_accessible_service_gets_422() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                      "spec": {"ports": [{"port": 80}], "externalTrafficPolicy": "Local"}});
    let err = w.try_create(&svcs, Some("default"), body.clone()).unwrap_err();
    assert_eq!(
        err.message,
        "Service \"s\" is invalid: spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services"
    );
    let err = w
        .try_create(
            &svcs,
            Some("default"),
            with(
                with(body.clone(), "/spec/type", json!("NodePort")),
                "/spec/healthCheckNodePort",
                json!(30001),
            ),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        "Service \"s\" is invalid: spec.healthCheckNodePort: Invalid value: 30001: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
    );
    let external = with(body, "/spec/externalIPs", json!(["192.0.2.1"]));
    assert!(w.try_create(&svcs, Some("default"), external).is_ok());
}

// core ValidateSecret (pkg/apis/core/validation/validation.go): a TLS Secret names tls.crt
// before tls.key; an ssh-auth Secret needs a non-empty private key; a dockercfg or
// dockerconfigjson Secret's config must json.Unmarshal into a map (the contents redacted in the
// error, Go's encoding/json words as its message).
#[test]
fn secret_types_require_their_keys_in_the_real_order_and_docker_configs_to_be_json_objects() {
    let mut w = World::new();
    let secrets = builtin("", "secrets");
    let secret = |name: &str, ty: &str, data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": ty, "data": data});
    let message =
        |w: &mut World, body: Value| w.try_create(&secrets, Some("default"), body).unwrap_err().message;
    assert_eq!(
        message(&mut w, secret("tls", "kubernetes.io/tls", json!({}))),
        "Secret \"tls\" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]"
    );
    assert_eq!(
        message(&mut w, secret("ssh", "kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""}))),
        "Secret \"ssh\" is invalid: data[ssh-privatekey]: Required value"
    );
    // "not json", base64.
    assert_eq!(
        message(
            &mut w,
            secret("d1", "kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": "bm90IGpzb24="}))
        ),
        "Secret \"d1\" is invalid: data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'o' in literal null (expecting 'u')"
    );
    // "[]", base64.
    assert_eq!(
        message(&mut w, secret("d2", "kubernetes.io/dockercfg", json!({".dockercfg": "W10="}))),
        "Secret \"d2\" is invalid: data[.dockercfg]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    // "{}", base64.
    assert!(
        w.try_create(
            &secrets,
            Some("default"),
            secret("d3", "kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": "e30="}))
        )
        .is_ok()
    );
}

// ValidateCronJobCreate (pkg/apis/batch/validation/validation.go): a CronJob's name is at
// most 52 characters (its Jobs append an 11-character suffix), checked after the spec.
#[test]
fn a_cron_job_name_longer_than_52_characters_gets_422_on_create() {
    let mut w = World::new();
    let cron_jobs = builtin("batch", "cronjobs");
    let cron_job = |name: &str| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
               "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {
                   "restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}}}}})
    };
    let long = "c".repeat(53);
    let err = w.try_create(&cron_jobs, Some("default"), cron_job(&long)).unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "CronJob.batch \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
        )
    );
    assert!(w.try_create(&cron_jobs, Some("default"), cron_job(&"c".repeat(52))).is_ok());
}

// ValidateSecretUpdate (pkg/apis/core/validation/validation.go): a Secret's type is immutable
// (ValidateImmutableField); an update without one is defaulted to Opaque (SetDefaults_Secret),
// so it changes a TLS Secret's type too.
#[test]
fn a_secrets_type_cannot_change() {
    let mut w = World::new();
    let secrets = builtin("", "secrets");
    w.create(
        &secrets,
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"}),
    );
    let err = w
        .try_merge(
            &secrets,
            Some("default"),
            "s",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "YQ==", "tls.key": "YQ=="}}),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        "Secret \"s\" is invalid: type: Invalid value: \"kubernetes.io/tls\": field is immutable"
    );
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "type": "kubernetes.io/tls",
                     "data": {"tls.crt": "YQ==", "tls.key": "YQ=="}});
    let stored = w.create(&secrets, Some("default"), tls);
    let mut untyped = (*stored).clone();
    untyped.data.as_object_mut().unwrap().remove("type");
    let err = w.try_update(&secrets, Some("default"), untyped).unwrap_err();
    assert_eq!(err.message, "Secret \"t\" is invalid: type: Invalid value: \"Opaque\": field is immutable");
}

// The Service REST's node port allocator (pkg/registry/core/service/portallocator) refuses a
// node port outside --service-node-port-range (30000-32767 by default) with 422 on the port.
#[test]
fn a_node_port_outside_the_range_gets_422() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let body = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
                      "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]}});
    let err = w.try_create(&svcs, Some("default"), body).unwrap_err();
    assert_eq!(
        err.message,
        "Service \"np\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
}

#[test]
fn a_storage_class_keeps_its_parameters_provisioner_reclaim_policy_and_binding_mode() {
    let mut w = World::new();
    let classes = builtin("storage.k8s.io", "storageclasses");
    w.create(
        &classes,
        None,
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "parameters": {"type": "ssd"}}),
    );
    // What may change: labels, annotations, allowVolumeExpansion, mountOptions.
    w.try_merge(
        &classes,
        None,
        "fast",
        json!({"allowVolumeExpansion": true, "metadata": {"labels": {"a": "b"}}}),
    )
    .unwrap();
    let err = w
        .try_merge(
            &classes,
            None,
            "fast",
            json!({"parameters": {"type": "nvme"}, "provisioner": "example.com/other",
                   "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"}),
        )
        .unwrap_err();
    let messages: Vec<(String, String)> =
        err.details.as_ref().unwrap().causes.iter().map(|c| (c.field.clone(), c.message.clone())).collect();
    assert_eq!(
        messages,
        [
            ("parameters".to_owned(), "Forbidden: updates to parameters are forbidden.".to_owned()),
            ("provisioner".to_owned(), "Forbidden: updates to provisioner are forbidden.".to_owned()),
            ("reclaimPolicy".to_owned(), "Forbidden: updates to reclaimPolicy are forbidden.".to_owned()),
            (
                "volumeBindingMode".to_owned(),
                "Invalid value: \"WaitForFirstConsumer\": field is immutable".to_owned()
            ),
        ]
    );
}

#[test]
fn a_persistent_volumes_source_is_fixed_once_made() {
    let mut w = World::new();
    let volumes = builtin("", "persistentvolumes");
    w.create(
        &volumes,
        None,
        json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
               "csi": {"driver": "example.com", "volumeHandle": "v1"}}}),
    );
    // Capacity (a resize), the reclaim policy and a new controllerExpandSecretRef may change.
    let ok = json!({"spec": {"capacity": {"storage": "2Gi"}, "persistentVolumeReclaimPolicy": "Delete",
                    "csi": {"controllerExpandSecretRef": {"name": "s", "namespace": "default"}}}});
    w.try_merge(&volumes, None, "pv", ok).unwrap();
    let err =
        w.try_merge(&volumes, None, "pv", json!({"spec": {"csi": {"volumeHandle": "v2"}}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueForbidden", "spec.persistentvolumesource")]));
    let err = w.try_merge(&volumes, None, "pv", json!({"spec": {"volumeMode": "Block"}})).unwrap_err();
    assert_eq!(causes(&err), set(&[("FieldValueInvalid", "volumeMode")]));
}
