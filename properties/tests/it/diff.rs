//! The differential oracle: matching, built-in, learned and user masks, counts.

#[path = "common/mod.rs"]
mod common;

use common::{key, snapshot};
use model_apiserver::{ObjectKey, StoredEvent, StoredEventType};
use properties::{
    Counts, Difference, EndState, Error, LastChange, Mask, MaskRule, ObjectCount, Origin, Path, PathPattern,
    Segment, Step, Target, counts_from_events, diff, diff_counts, matches_reference,
};
use serde_json::{Value, json};

/// A Deployment as a run might leave it; everything that differs between runs is a parameter.
fn deployment(replicas: i64, uid: &str, rv: &str, at: &str, generation: i64, observed: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": uid, "resourceVersion": rv,
            "creationTimestamp": at, "generation": generation,
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "time": at}]
        },
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "conditions": [{"type": "Available", "status": "True", "lastTransitionTime": at, "lastUpdateTime": at}]
        }
    })
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
           "data": {"k": value}})
}

fn path(steps: &[&str]) -> Path {
    Path(steps.iter().map(|s| s.parse::<usize>().map_or(Step::Key((*s).to_owned()), Step::Index)).collect())
}

#[test]
fn identical_snapshots_match_under_every_mask() {
    let state = snapshot(&[deployment(3, "u1", "5", "2026-01-01T00:00:00Z", 1, 1), configmap("a", "x")]);
    assert_eq!(diff(&state, &state.clone(), &Mask::builtin()), vec![]);
    assert_eq!(diff(&state, &state.clone(), &Mask::none()), vec![]);
}

#[test]
fn uid_resource_version_timestamps_managed_fields_and_generation_are_masked() {
    let reference = snapshot(&[deployment(3, "uid-a", "10", "2026-01-01T00:00:00Z", 1, 1)]);
    let run = snapshot(&[deployment(3, "uid-b", "37", "2026-01-01T00:05:00.5Z", 4, 4)]);
    assert_eq!(diff(&reference, &run, &Mask::builtin()), vec![]);

    // Without masks, exactly those fields differ.
    let paths: Vec<String> = diff(&reference, &run, &Mask::none())
        .iter()
        .map(|d| match d {
            Difference::Field { path, .. } => path.to_string(),
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(
        paths,
        vec![
            "/metadata/creationTimestamp",
            "/metadata/generation",
            "/metadata/managedFields/0/time",
            "/metadata/resourceVersion",
            "/metadata/uid",
            "/status/conditions/0/lastTransitionTime",
            "/status/conditions/0/lastUpdateTime",
            "/status/observedGeneration",
        ]
    );
}

/// A Pod as the kubelet leaves it: a running container and the exit of the one before.
fn running_pod(started: &str, id: &str, previous_id: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "app", "image": "nginx:1", "ready": true, "restartCount": 1, "containerID": id,
            "state": {"running": {"startedAt": started}},
            "lastState": {"terminated": {"exitCode": 1, "containerID": previous_id,
                                         "startedAt": started, "finishedAt": started}}
        }]}
    })
}

#[test]
fn container_start_and_finish_times_and_runtime_ids_are_masked_but_the_state_is_compared() {
    let reference = snapshot(&[running_pod("2026-01-01T00:00:00Z", "containerd://a1", "containerd://a0")]);
    let run = snapshot(&[running_pod("2026-01-01T00:00:31Z", "containerd://b1", "containerd://b0")]);
    assert_eq!(diff(&reference, &run, &Mask::builtin()), vec![]);
    let unmasked: Vec<String> =
        diff(&reference, &run, &Mask::none()).iter().map(ToString::to_string).collect();
    assert!(unmasked.iter().any(|d| d.contains("/containerID")), "{unmasked:?}");
    assert!(unmasked.iter().any(|d| d.contains("/startedAt")), "{unmasked:?}");
    let mut waiting = running_pod("2026-01-01T00:00:31Z", "containerd://b1", "containerd://b0");
    waiting["status"]["containerStatuses"][0]["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
    assert!(
        !diff(&reference, &snapshot(&[waiting]), &Mask::builtin()).is_empty(),
        "a container that is not running differs"
    );
}

#[test]
fn a_spec_field_difference_is_reported_with_path_expected_and_found() {
    let reference = snapshot(&[deployment(3, "uid-a", "10", "2026-01-01T00:00:00Z", 1, 1)]);
    let run = snapshot(&[deployment(2, "uid-b", "11", "2026-01-01T00:00:00Z", 1, 1)]);
    let differences = diff(&reference, &run, &Mask::builtin());
    assert_eq!(
        differences,
        vec![Difference::Field {
            key: key("apps/deployments", "default", "web"),
            path: path(&["spec", "replicas"]),
            expected: Some(json!(3)),
            found: Some(json!(2)),
        }]
    );
    assert_eq!(
        differences[0].to_string(),
        "apps/deployments default/web: /spec/replicas: expected 3, found 2"
    );
}

#[test]
fn a_field_present_on_one_side_only_is_reported_as_absent_and_null_counts_as_absent() {
    let reference = snapshot(&[json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v", "gone": null}})]);
    let run = snapshot(&[json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v", "new": "x"}})]);
    let differences = diff(&reference, &run, &Mask::builtin());
    assert_eq!(differences.len(), 1);
    assert_eq!(differences[0].to_string(), r#"configmaps default/a: /data/new: expected absent, found "x""#);
}

#[test]
fn missing_and_extra_objects_are_reported_in_key_order() {
    let reference = snapshot(&[configmap("a", "1"), configmap("b", "2")]);
    let run = snapshot(&[configmap("b", "2"), configmap("c", "3")]);
    let differences = diff(&reference, &run, &Mask::builtin());
    assert_eq!(
        differences,
        vec![
            Difference::Missing { key: key("configmaps", "default", "a") },
            Difference::Extra { key: key("configmaps", "default", "c") },
        ]
    );
    assert_eq!(
        differences[0].to_string(),
        "configmaps default/a: expected to exist (the reference run ends with it), found absent"
    );
    assert_eq!(
        differences[1].to_string(),
        "configmaps default/c: expected absent (the reference run ends without it), found present"
    );
}

/// A ReplicaSet and the pods it generated, with every run-dependent value a parameter.
fn replica_set_with_pods(rs_uid: &str, pods: &[(&str, &str, &str)]) -> Vec<Value> {
    let mut objects = vec![json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-rs", "namespace": "default", "uid": rs_uid},
        "spec": {"replicas": pods.len()}
    })];
    for (name, uid, image) in pods {
        objects.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "generateName": "web-", "namespace": "default", "uid": uid,
                "labels": {"controller-uid": rs_uid},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                                     "uid": rs_uid, "controller": true}]
            },
            "spec": {"containers": [{"name": "app", "image": image}]}
        }));
    }
    objects
}

#[test]
fn generated_names_are_matched_by_generate_name_and_owner() {
    let reference =
        snapshot(&replica_set_with_pods("rs-1", &[("web-aaaaa", "p1", "v1"), ("web-bbbbb", "p2", "v2")]));
    let run =
        snapshot(&replica_set_with_pods("rs-9", &[("web-zzzzz", "p8", "v1"), ("web-qqqqq", "p9", "v2")]));
    assert_eq!(diff(&reference, &run, &Mask::builtin()), vec![]);
}

#[test]
fn generated_objects_that_differ_pair_up_and_surplus_ones_are_extra() {
    let reference = snapshot(&replica_set_with_pods("rs-1", &[("web-aaaaa", "p1", "v1")]));
    let run =
        snapshot(&replica_set_with_pods("rs-9", &[("web-zzzzz", "p8", "v2"), ("web-qqqqq", "p9", "v2")]));
    let differences: Vec<String> =
        diff(&reference, &run, &Mask::builtin()).iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences,
        vec![
            "apps/replicasets default/web-rs: /spec/replicas: expected 1, found 2",
            r#"pods default/web-qqqqq: /spec/containers/0/image: expected "v1", found "v2""#,
            "pods default/web-zzzzz: expected absent (the reference run ends without it), found present",
        ]
    );
}

#[test]
fn learned_masks_generalise_array_indices() {
    let widget = |message: &str, color: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "default"},
               "spec": {"color": color},
               "status": {"conditions": [{"type": "A", "message": "ok"}, {"type": "B", "message": message}]}})
    };
    let learned =
        Mask::learn(&snapshot(&[widget("took 3ms", "red")]), &snapshot(&[widget("took 5ms", "red")]));
    assert_eq!(
        learned.rules().cloned().collect::<Vec<_>>(),
        vec![MaskRule {
            origin: Origin::Learned,
            target: Target::Named("example.com/widgets".to_owned()),
            path: PathPattern(vec![
                Segment::Key("status".to_owned()),
                Segment::Key("conditions".to_owned()),
                Segment::Any,
                Segment::Key("message".to_owned()),
            ]),
        }]
    );
    assert_eq!(
        learned.rules().next().map(ToString::to_string).as_deref(),
        Some("learned: example.com/widgets /status/conditions/*/message")
    );

    // Condition 0's message now differs too, and is masked; the spec is still compared.
    let mask = Mask::builtin().merge(&learned);
    let reference = snapshot(&[widget("took 3ms", "red")]);
    let run = snapshot(&[json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"color": "blue"},
        "status": {"conditions": [{"type": "A", "message": "retried"}, {"type": "B", "message": "took 9ms"}]}})]);
    let differences: Vec<String> = diff(&reference, &run, &mask).iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences,
        vec![r#"example.com/widgets default/w: /spec/color: expected "red", found "blue""#]
    );
}

fn widget_seen(seen: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
           "status": {"lastSeen": seen, "phase": "Ready"}})
}

#[test]
fn user_masks_by_kind_or_resource_and_dotted_path_or_pointer_hide_only_their_field() {
    let reference = snapshot(&[widget_seen("node-1")]);
    let run = snapshot(&[widget_seen("node-2")]);
    let by_kind = Mask::builtin().user("Widget", ".status.lastSeen").unwrap();
    let by_resource = Mask::builtin().user("example.com/widgets", "/status/lastSeen").unwrap();
    let everywhere = Mask::builtin().user("*", "/status/lastSeen").unwrap();
    assert_eq!(diff(&reference, &run, &by_kind), vec![]);
    assert_eq!(diff(&reference, &run, &by_resource), vec![]);
    assert_eq!(diff(&reference, &run, &everywhere), vec![]);

    let other_kind = Mask::builtin().user("Gadget", ".status.lastSeen").unwrap();
    let differences: Vec<String> =
        diff(&reference, &run, &other_kind).iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences,
        vec![r#"example.com/widgets default/w: /status/lastSeen: expected "node-1", found "node-2""#]
    );
}

#[test]
fn a_malformed_user_path_is_an_invalid_path_error() {
    assert_eq!(
        Mask::builtin().user("Widget", "status.lastSeen"),
        Err(Error::InvalidPath {
            path: "status.lastSeen".to_owned(),
            reason: "must start with '/' (JSON pointer) or '.' (dotted path)".to_owned(),
        })
    );
    assert_eq!(
        Mask::builtin().user("Widget", "/status/a~2b").unwrap_err().to_string(),
        r#"invalid path "/status/a~2b": '~' must be followed by '0' or '1' (RFC 6901)"#
    );
}

#[test]
fn observed_generation_is_compared_by_whether_it_caught_up_with_generation() {
    let reference = snapshot(&[deployment(3, "u", "1", "2026-01-01T00:00:00Z", 2, 2)]);
    let run = snapshot(&[deployment(3, "u", "1", "2026-01-01T00:00:00Z", 3, 2)]);
    let differences: Vec<String> =
        diff(&reference, &run, &Mask::builtin()).iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences,
        vec![
            r#"apps/deployments default/web: /status/observedGeneration: expected "<equal to metadata.generation>", found "<2 while metadata.generation is 3>""#
        ]
    );
}

/// A Deployment whose conditions are listed as `conditions` (type, status) say.
fn deployment_with_conditions(conditions: &[(&str, &str)]) -> Value {
    let mut deployment = deployment(3, "u", "1", "2026-01-01T00:00:00Z", 1, 1);
    deployment["status"]["conditions"] =
        conditions.iter().map(|(type_, status)| json!({"type": type_, "status": status})).collect();
    deployment
}

// A Deployment whose `Available` went `False` and back lists it after `Progressing` (upstream
// moves a condition it sets to the end): the built-in mask compares the conditions by type, in
// any order; what a condition says is still compared, and without the built-in mask so is the
// order.
#[test]
fn conditions_are_compared_by_type_whatever_their_order() {
    let reference =
        snapshot(&[deployment_with_conditions(&[("Available", "True"), ("Progressing", "True")])]);
    let reordered =
        snapshot(&[deployment_with_conditions(&[("Progressing", "True"), ("Available", "True")])]);
    assert_eq!(diff(&reference, &reordered, &Mask::builtin()), vec![]);
    assert_eq!(
        diff(&reference, &reordered, &Mask::none()).len(),
        2,
        "without the built-in mask, order counts"
    );
    let unavailable =
        snapshot(&[deployment_with_conditions(&[("Progressing", "True"), ("Available", "False")])]);
    let differences: Vec<String> =
        diff(&reference, &unavailable, &Mask::builtin()).iter().map(|d| d.to_string()).collect();
    assert_eq!(
        differences,
        vec![r#"apps/deployments default/web: /status/conditions/0/status: expected "True", found "False""#]
    );
}

#[test]
fn events_are_masked_whole_by_the_builtin_mask() {
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                       "metadata": {"name": "web.1", "namespace": "default"}, "reason": "Retried"});
    let reference = snapshot(&[configmap("a", "1")]);
    let run = snapshot(&[configmap("a", "1"), event]);
    assert_eq!(diff(&reference, &run, &Mask::builtin()), vec![]);
    assert_eq!(
        diff(&reference, &run, &Mask::none()),
        vec![Difference::Extra { key: key("events", "default", "web.1") }]
    );
}

#[test]
fn a_string_holding_an_uid_compares_by_the_identity_of_its_object() {
    let with_label = |uid: &str, label: &str| {
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default", "uid": uid}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "child", "namespace": "default", "labels": {"owner-uid": label}}}),
        ]
    };
    let reference = snapshot(&with_label("u-1", "u-1"));
    assert_eq!(diff(&reference, &snapshot(&with_label("u-2", "u-2")), &Mask::builtin()), vec![]);
    // A label holding a uid nothing has is compared as it is.
    let differences: Vec<String> =
        diff(&reference, &snapshot(&with_label("u-2", "u-stale")), &Mask::builtin())
            .iter()
            .map(|d| d.to_string())
            .collect();
    assert_eq!(
        differences,
        vec![
            r#"configmaps default/child: /metadata/labels/owner-uid: expected "<uid of configmaps default/owner>", found "u-stale""#
        ]
    );
}

#[test]
fn matches_reference_reports_count_mismatches_after_state_differences() {
    let counts = |created, deleted| {
        vec![ObjectCount {
            key: key("configmaps", "default", "a"),
            counts: Counts { created, deleted },
            last: None,
            child: false,
        }]
    };
    let reference = EndState { snapshot: snapshot(&[configmap("a", "1")]), counts: counts(1, 0) };
    let run = EndState { snapshot: snapshot(&[configmap("a", "2")]), counts: counts(2, 1) };
    let violations: Vec<String> =
        matches_reference(&reference, &run, &Mask::builtin()).iter().map(|v| v.to_string()).collect();
    assert_eq!(
        violations,
        vec![
            r#"matches_reference: configmaps default/a: /data/k: expected "1", found "2""#,
            "matches_reference: configmaps default/a: created 2 times, the fault-free reference created it 1 time; deleted 1 time, the fault-free reference deleted it 0 times",
        ]
    );
    assert_eq!(matches_reference(&reference, &reference.clone(), &Mask::builtin()), vec![]);
}

#[test]
fn counts_from_events_count_generated_names_under_their_generate_name() {
    let pod = |name: &str| {
        std::sync::Arc::new(
            serde_json::from_value::<kube_core::DynamicObject>(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "generateName": "web-", "namespace": "default"}}))
            .unwrap(),
        )
    };
    let event = |revision, kind, name: &str| StoredEvent {
        revision,
        kind,
        key: key("pods", "default", name),
        object: pod(name),
        previous: None,
    };
    let events = [
        event(2, StoredEventType::Added, "web-aaaaa"),
        event(3, StoredEventType::Modified, "web-aaaaa"),
        event(4, StoredEventType::Deleted, "web-aaaaa"),
        event(5, StoredEventType::Added, "web-bbbbb"),
    ];
    assert_eq!(
        counts_from_events(&events),
        vec![ObjectCount {
            key: key("pods", "default", "web-*"),
            counts: Counts { created: 2, deleted: 1 },
            last: Some(LastChange { step: 5, at_millis: None }),
            child: false,
        }]
    );
}

fn count(name: &str, created: u64, deleted: u64, last: Option<LastChange>) -> ObjectCount {
    ObjectCount { key: key("pods", "default", name), counts: Counts { created, deleted }, last, child: false }
}

#[test]
fn a_count_difference_names_only_what_differs_and_where_the_run_last_changed_the_object() {
    let last = Some(LastChange { step: 42, at_millis: Some(1500) });
    let found = [count("web-0", 3, 0, last)];
    let messages: Vec<String> = diff_counts(&[count("web-0", 2, 0, None)], &found, &Mask::builtin())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "pods default/web-0: created 3 times, the fault-free reference created it 2 times (last created or deleted at step 42, 1500 ms)"
        ]
    );
}

#[test]
fn counts_learned_from_two_fault_free_runs_mask_only_the_objects_they_disagree_on() {
    let reference_a = [count("web-0", 1, 0, None), count("web-1", 1, 0, None)];
    let reference_b = [count("web-0", 2, 1, None), count("web-1", 1, 0, None)];
    let learned = Mask::learn_counts(&reference_a, &reference_b);
    assert_eq!(learned.masked_counts().collect::<Vec<_>>(), [&key("pods", "default", "web-0")]);
    let mask = Mask::builtin().merge(&learned);
    let run = [count("web-0", 5, 4, None), count("web-1", 2, 1, None)];
    let differences: Vec<ObjectKey> =
        diff_counts(&reference_a, &run, &mask).iter().map(|d| d.key().clone()).collect();
    assert_eq!(differences, [key("pods", "default", "web-1")]);
}

#[test]
fn an_object_only_one_side_counts_is_counted_zero_times_on_the_other() {
    let messages: Vec<String> = diff_counts(&[], &[count("web-0", 1, 1, None)], &Mask::builtin())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "pods default/web-0: created 1 time, the fault-free reference created it 0 times; deleted 1 time, the fault-free reference deleted it 0 times"
        ]
    );
}

#[test]
fn user_count_masks_name_everything_a_resource_or_one_object() {
    let run = [count("web-0", 2, 1, None), count("web-1", 2, 1, None)];
    let reference = [count("web-0", 1, 0, None), count("web-1", 1, 0, None)];
    let differing = |mask: Mask| -> Vec<String> {
        diff_counts(&reference, &run, &mask).iter().map(|d| d.key().name.to_string()).collect()
    };
    assert_eq!(differing(Mask::builtin()), ["web-0", "web-1"]);
    assert_eq!(differing(Mask::builtin().user_counts("pods default/web-0").unwrap()), ["web-1"]);
    assert_eq!(differing(Mask::builtin().user_counts("pods").unwrap()), Vec::<String>::new());
    assert_eq!(differing(Mask::builtin().user_counts("configmaps").unwrap()), ["web-0", "web-1"]);
    assert_eq!(differing(Mask::builtin().user_counts("*").unwrap()), Vec::<String>::new());
    assert_eq!(
        Mask::builtin().user_counts("pods default/").unwrap_err(),
        Error::InvalidCountTarget {
            target: "pods default/".to_owned(),
            reason: "expected `resource`, `resource namespace/name` or `resource name`".to_owned()
        }
    );
    assert_eq!(
        Mask::builtin().user_counts(" ").unwrap_err().to_string(),
        "invalid count mask target \" \": it is empty"
    );
}
