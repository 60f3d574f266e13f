//! Server-side apply subset: field ownership in managedFields, conflicts, force, removal of
//! fields a manager stops applying, and the Update bookkeeping of ordinary writes.

use kube_core::ApiResource;
use model_apiserver::apply::{FieldSet, Manager, apply, update_managed_fields};
use serde_json::{Value, json};

fn deployment() -> ApiResource {
    ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
    }
}

fn configmap() -> ApiResource {
    ApiResource {
        group: "".into(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

fn at(seconds: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(seconds).unwrap()
}

fn manager<'a>(name: &'a str, api_version: &'a str) -> Manager<'a> {
    Manager { name, api_version, subresource: None, now: at(1_000) }
}

fn deploy_config(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}
    })
}

fn managed(obj: &Value) -> &Vec<Value> {
    obj["metadata"]["managedFields"].as_array().expect("managedFields")
}

#[test]
fn apply_to_an_absent_object_creates_it_with_one_apply_entry_in_fields_v1_format() {
    let created =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("kubectl", "apps/v1"), false, true)
            .unwrap();
    assert_eq!(created["spec"]["replicas"], json!(2));
    assert_eq!(
        managed(&created),
        &vec![json!({
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}
                    }}}
                }
            },
            "manager": "kubectl",
            "operation": "Apply",
            "time": "1970-01-01T00:16:40Z"
        })]
    );
}

#[test]
fn changing_a_field_another_manager_applied_gets_409_with_field_manager_conflict_causes() {
    let live =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("alice", "apps/v1"), false, true)
            .unwrap();
    let err = apply(
        Some(&live),
        &deploy_config(3, "nginx:1"),
        &deployment(),
        &manager("bob", "apps/v1"),
        false,
        true,
    )
    .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(err.message, "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
    let causes = err.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(
        (causes[0].reason.as_str(), causes[0].message.as_str(), causes[0].field.as_str()),
        ("FieldManagerConflict", "conflict with \"alice\"", ".spec.replicas")
    );
}

#[test]
fn applying_the_same_value_as_another_manager_shares_ownership_without_conflict() {
    let live =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("alice", "apps/v1"), false, true)
            .unwrap();
    let shared = apply(
        Some(&live),
        &deploy_config(2, "nginx:1"),
        &deployment(),
        &manager("bob", "apps/v1"),
        false,
        true,
    )
    .unwrap();
    let managers: Vec<&str> = managed(&shared).iter().map(|e| e["manager"].as_str().unwrap()).collect();
    assert_eq!(managers, ["alice", "bob"]);
}

#[test]
fn force_takes_ownership_of_the_conflicting_field_from_the_other_manager() {
    let live =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("alice", "apps/v1"), false, true)
            .unwrap();
    let forced = apply(
        Some(&live),
        &deploy_config(3, "nginx:1"),
        &deployment(),
        &manager("bob", "apps/v1"),
        true,
        true,
    )
    .unwrap();
    assert_eq!(forced["spec"]["replicas"], json!(3));
    let alice = &managed(&forced)[0];
    assert_eq!(alice["manager"], json!("alice"));
    assert_eq!(alice["fieldsV1"]["f:spec"].get("f:replicas"), None);
    let bob = &managed(&forced)[1];
    assert_eq!(bob["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
}

#[test]
fn a_field_the_manager_stops_applying_is_removed_when_nobody_else_owns_it() {
    let mut config = deploy_config(2, "nginx:1");
    config["metadata"]["labels"]["tier"] = json!("front");
    let live = apply(None, &config, &deployment(), &manager("alice", "apps/v1"), false, true).unwrap();
    let reapplied = apply(
        Some(&live),
        &deploy_config(2, "nginx:1"),
        &deployment(),
        &manager("alice", "apps/v1"),
        false,
        true,
    )
    .unwrap();
    assert_eq!(reapplied["metadata"]["labels"], json!({"app": "web"}));
}

#[test]
fn a_field_the_manager_stops_applying_stays_when_another_manager_owns_it() {
    let mut config = deploy_config(2, "nginx:1");
    config["metadata"]["labels"]["tier"] = json!("front");
    let live = apply(None, &config, &deployment(), &manager("alice", "apps/v1"), false, true).unwrap();
    let both = apply(Some(&live), &config, &deployment(), &manager("bob", "apps/v1"), false, true).unwrap();
    let reapplied = apply(
        Some(&both),
        &deploy_config(2, "nginx:1"),
        &deployment(),
        &manager("alice", "apps/v1"),
        false,
        true,
    )
    .unwrap();
    assert_eq!(reapplied["metadata"]["labels"], json!({"app": "web", "tier": "front"}));
}

#[test]
fn containers_are_associative_so_two_managers_can_each_own_one_container() {
    let live =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("alice", "apps/v1"), false, true)
            .unwrap();
    let sidecar = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy"}]}}}
    });
    let merged =
        apply(Some(&live), &sidecar, &deployment(), &manager("mesh", "apps/v1"), false, true).unwrap();
    assert_eq!(
        merged["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "nginx:1"}, {"name": "sidecar", "image": "envoy"}])
    );
}

#[test]
fn status_is_ignored_by_an_apply_to_the_main_resource_of_a_kind_with_a_status_subresource() {
    let mut config = deploy_config(2, "nginx:1");
    config["status"] = json!({"replicas": 5});
    let created = apply(None, &config, &deployment(), &manager("alice", "apps/v1"), false, true).unwrap();
    assert_eq!(created.get("status"), None);
    assert_eq!(managed(&created)[0]["fieldsV1"].get("f:status"), None);
}

#[test]
fn an_update_that_changes_an_applied_field_takes_it_and_a_later_apply_conflicts_with_the_updater() {
    let live =
        apply(None, &deploy_config(2, "nginx:1"), &deployment(), &manager("alice", "apps/v1"), false, true)
            .unwrap();
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(7);
    let hpa = Manager { name: "hpa", api_version: "apps/v1", subresource: None, now: at(2_000) };
    update_managed_fields(Some(&live), &mut scaled, &deployment(), &hpa, true);
    let entries = managed(&scaled);
    assert_eq!(entries[0]["fieldsV1"]["f:spec"].get("f:replicas"), None);
    assert_eq!(
        (&entries[1]["manager"], &entries[1]["operation"], &entries[1]["fieldsV1"]),
        (&json!("hpa"), &json!("Update"), &json!({"f:spec": {"f:replicas": {}}}))
    );
    let err = apply(
        Some(&scaled),
        &deploy_config(2, "nginx:1"),
        &deployment(),
        &manager("alice", "apps/v1"),
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        // The manager is named by its identifier, which never holds the entry's time.
        "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
    );
    // `NewApplyConflict`'s details hold the causes alone.
    let details = err.details.expect("details");
    assert_eq!((details.name.as_str(), details.kind.as_str(), details.group.as_str()), ("", "", ""));
    assert_eq!(details.causes[0].message, "conflict with \"hpa\" using apps/v1");
}

#[test]
fn managed_fields_are_kept_in_the_real_field_managers_order() {
    // Written in the order: zed's update at 3000, bob's at 2000, then alice's apply at 4000.
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}});
    let mut write = |key: &str, who: &'static str, second: i64| {
        let old = obj.clone();
        obj["data"][key] = json!("v");
        let m = Manager { name: who, api_version: "v1", subresource: None, now: at(second) };
        update_managed_fields(Some(&old), &mut obj, &configmap(), &m, false);
    };
    write("z", "zed", 3_000);
    write("b", "bob", 2_000);
    write("c", "carl", 2_000);
    let config =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}});
    let alice = Manager { name: "alice", api_version: "v1", subresource: None, now: at(4_000) };
    let applied = apply(Some(&obj), &config, &configmap(), &alice, false, false).unwrap();
    let order: Vec<(&str, &str)> = managed(&applied)
        .iter()
        .map(|e| (e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()))
        .collect();
    // Apply before Update; then by time; at the same second by manager.
    assert_eq!(order, [("alice", "Apply"), ("bob", "Update"), ("carl", "Update"), ("zed", "Update")]);
}

#[test]
fn a_create_records_every_field_under_the_creating_manager() {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "uid": "u"}, "data": {"a": "1"}});
    update_managed_fields(None, &mut cm, &configmap(), &manager("kubectl-create", "v1"), false);
    assert_eq!(
        managed(&cm),
        &vec![
            json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
            "manager": "kubectl-create", "operation": "Update", "time": "1970-01-01T00:16:40Z"})
        ]
    );
}

#[test]
fn a_write_that_changes_nothing_leaves_managed_fields_untouched() {
    let mut cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
    update_managed_fields(None, &mut cm, &configmap(), &manager("first", "v1"), false);
    let mut same = cm.clone();
    let later = Manager { name: "second", api_version: "v1", subresource: None, now: at(9_999) };
    update_managed_fields(Some(&cm), &mut same, &configmap(), &later, false);
    assert_eq!(same, cm);
}

#[test]
fn finalizers_are_a_set_owned_value_by_value() {
    let cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a", "b"]}});
    let set = FieldSet::of_object(&cm, &configmap());
    assert_eq!(set.to_fields_v1(), json!({"f:metadata": {"f:finalizers": {"v:\"a\"": {}, "v:\"b\"": {}}}}));
    assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), set);
}

#[test]
fn an_apply_body_without_kind_gets_400_bad_request() {
    let err = apply(
        None,
        &json!({"apiVersion": "v1", "metadata": {"name": "c"}}),
        &configmap(),
        &manager("m", "v1"),
        false,
        false,
    )
    .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "error decoding patch: Object 'Kind' is missing in '{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\"}}'"
    );
}

#[test]
fn hostile_managed_fields_are_ignored_rather_than_crashing() {
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "managedFields": [{"manager": 5}, "junk"]}, "data": {"a": "1"}});
    let config =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}});
    let applied = apply(Some(&live), &config, &configmap(), &manager("m", "v1"), false, false).unwrap();
    assert_eq!(applied["data"], json!({"a": "2"}));
    assert_eq!(managed(&applied).len(), 1);
}

fn pods() -> ApiResource {
    ApiResource {
        group: "".into(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Pod".into(),
        plural: "pods".into(),
    }
}

fn fields_of(obj: &Value, manager: &str) -> Value {
    managed(obj)
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or_else(|| panic!("no entry of {manager} in {obj}"))
}

#[test]
fn a_create_owns_the_maps_and_lists_it_adds_but_not_those_of_the_kinds_go_zero_value() {
    // As kube-apiserver records a Deployment's create: `spec`, `template` and `strategy` are
    // structs the zero value has (no "."), the labels map, the containers' items and the
    // rollingUpdate pointer are added with what they hold (".").
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    update_managed_fields(None, &mut d, &deployment(), &manager("kubectl-create", "apps/v1"), true);
    assert_eq!(
        fields_of(&d, "kubectl-create"),
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}
                }
            }
        })
    );
    // A custom resource starts from an empty object: every map it adds is its creator's.
    let widgets = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let mut w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 2, "nested": {"level": "info"}}});
    update_managed_fields(None, &mut w, &widgets, &manager("me", "example.com/v1"), true);
    assert_eq!(
        fields_of(&w, "me"),
        json!({"f:spec": {".": {}, "f:nested": {".": {}, "f:level": {}}, "f:size": {}}})
    );
}

#[test]
fn a_force_apply_of_every_field_inside_a_map_leaves_the_creator_owning_the_map() {
    // Recorded: ConfigMap created with data.k by one manager, force-applied by another; the
    // creator keeps an entry owning `data` itself.
    let mut cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}});
    update_managed_fields(None, &mut cm, &configmap(), &manager("creator", "v1"), false);
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "2"}});
    assert!(apply(Some(&cm), &body, &configmap(), &manager("alice", "v1"), false, false).is_err());
    let forced = apply(Some(&cm), &body, &configmap(), &manager("alice", "v1"), true, false).unwrap();
    assert_eq!(fields_of(&forced, "alice"), json!({"f:data": {"f:k": {}}}));
    assert_eq!(fields_of(&forced, "creator"), json!({"f:data": {}}));
    // The same for a map of another kind: a Deployment's labels.
    let mut d = deploy_config(1, "nginx");
    update_managed_fields(None, &mut d, &deployment(), &manager("creator", "apps/v1"), true);
    let mut relabel = deploy_config(1, "nginx");
    relabel["metadata"]["labels"]["app"] = json!("other");
    let forced = apply(Some(&d), &relabel, &deployment(), &manager("alice", "apps/v1"), true, true).unwrap();
    assert_eq!(fields_of(&forced, "creator")["f:metadata"], json!({"f:labels": {}}));
}

#[test]
fn a_condition_written_without_timestamps_owns_them_as_go_encodes_them_null() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": [
            {"manager": "creator", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}});
    let mut written = pod.clone();
    written["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    let kubelet = Manager { name: "kubelet", api_version: "v1", subresource: Some("status"), now: at(5) };
    update_managed_fields(Some(&pod), &mut written, &pods(), &kubelet, true);
    assert_eq!(
        fields_of(&written, "kubelet"),
        json!({"f:status": {"f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {
            ".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}}})
    );
    // A Deployment's conditions carry lastUpdateTime instead of lastProbeTime.
    let d = deploy_config(1, "nginx");
    let mut with_status = d.clone();
    with_status["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
    let controller = Manager {
        name: "deployment-controller",
        api_version: "apps/v1",
        subresource: Some("status"),
        now: at(5),
    };
    update_managed_fields(Some(&d), &mut with_status, &deployment(), &controller, true);
    let condition = &fields_of(&with_status, "deployment-controller")["f:status"]["f:conditions"]["k:{\"type\":\"Available\"}"];
    assert_eq!(condition.get("f:lastUpdateTime"), Some(&json!({})));
    assert_eq!(condition.get("f:lastProbeTime"), None);
}
