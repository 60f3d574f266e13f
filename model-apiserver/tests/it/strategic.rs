//! Strategic merge patch: merge keys of the built-in kinds, directives, and bad input.

use kube_core::ApiResource;
use model_apiserver::strategic::strategic_merge;
use serde_json::{Value, json};

fn ar(group: &str, kind: &str) -> ApiResource {
    let api_version = if group.is_empty() { "v1".to_owned() } else { format!("{group}/v1") };
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        api_version,
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

fn pod() -> ApiResource {
    ar("", "Pod")
}

fn deployment() -> ApiResource {
    ar("apps", "Deployment")
}

fn merge(original: Value, patch: Value, resource: &ApiResource) -> Value {
    strategic_merge(&original, &patch, resource).expect("the patch applies")
}

#[test]
fn containers_merge_by_name_and_keep_unpatched_containers() {
    let original = json!({"spec": {"containers": [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:1"}
    ]}});
    let patch = json!({"spec": {"containers": [{"name": "b", "image": "b:2"}]}});
    assert_eq!(
        merge(original, patch, &pod()),
        json!({"spec": {"containers": [
            {"name": "a", "image": "a:1"},
            {"name": "b", "image": "b:2"}
        ]}})
    );
}

#[test]
fn env_in_a_deployment_template_merges_by_name() {
    let original = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    ]}}}});
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}
    ]}}}});
    assert_eq!(
        merge(original, patch, &deployment()),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "env": [
                {"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}
            ]}
        ]}}}})
    );
}

#[test]
fn volume_mounts_merge_by_mount_path_and_ports_by_container_port() {
    let original = json!({"spec": {"containers": [{"name": "a",
        "volumeMounts": [{"mountPath": "/x", "name": "v1"}],
        "ports": [{"containerPort": 80, "name": "http"}]}]}});
    let patch = json!({"spec": {"containers": [{"name": "a",
        "volumeMounts": [{"mountPath": "/x", "readOnly": true}],
        "ports": [{"containerPort": 443, "name": "https"}]}]}});
    assert_eq!(
        merge(original, patch, &pod()),
        json!({"spec": {"containers": [{"name": "a",
            "volumeMounts": [{"mountPath": "/x", "name": "v1", "readOnly": true}],
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443, "name": "https"}]}]}})
    );
}

#[test]
fn service_ports_merge_by_port() {
    let original = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}});
    assert_eq!(
        merge(original, patch, &ar("", "Service")),
        json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}})
    );
}

#[test]
fn status_conditions_merge_by_type() {
    let original = json!({"status": {"conditions": [
        {"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}
    ]}});
    let patch = json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}});
    assert_eq!(
        merge(original, patch, &deployment()),
        json!({"status": {"conditions": [
            {"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}
        ]}})
    );
}

#[test]
fn owner_references_merge_by_uid_and_finalizers_are_a_set() {
    let original = json!({"metadata": {
        "ownerReferences": [{"uid": "u1", "name": "a"}],
        "finalizers": ["x"]
    }});
    let patch = json!({"metadata": {
        "ownerReferences": [{"uid": "u2", "name": "b"}],
        "finalizers": ["x", "y"]
    }});
    assert_eq!(
        merge(original, patch, &ar("", "ConfigMap")),
        json!({"metadata": {
            "ownerReferences": [{"uid": "u1", "name": "a"}, {"uid": "u2", "name": "b"}],
            "finalizers": ["x", "y"]
        }})
    );
}

#[test]
fn lists_without_a_merge_key_are_replaced_whole() {
    let original = json!({"spec": {"tolerations": [{"key": "a"}], "containers": [
        {"name": "c", "args": ["1", "2"]}
    ]}});
    let patch =
        json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["3"]}]}});
    assert_eq!(
        merge(original, patch, &pod()),
        json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["3"]}]}})
    );
}

#[test]
fn null_deletes_a_key_and_maps_merge() {
    let original = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "data": {"k": "v"}});
    let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": null});
    assert_eq!(
        merge(original, patch, &ar("", "ConfigMap")),
        json!({"metadata": {"labels": {"b": "2", "c": "3"}}})
    );
}

#[test]
fn patch_delete_directive_removes_a_list_element_by_merge_key() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}});
    assert_eq!(merge(original, patch, &pod()), json!({"spec": {"containers": [{"name": "b"}]}}));
}

#[test]
fn patch_replace_directive_in_a_list_replaces_the_whole_list() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c"}]}});
    assert_eq!(merge(original, patch, &pod()), json!({"spec": {"containers": [{"name": "c"}]}}));
}

#[test]
fn patch_replace_directive_on_a_map_replaces_the_map() {
    let original = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
    assert_eq!(merge(original, patch, &pod()), json!({"metadata": {"labels": {"c": "3"}}}));
}

#[test]
fn patch_delete_directive_on_a_map_empties_it() {
    let original = json!({"metadata": {"labels": {"a": "1"}}, "data": {"k": "v"}});
    let patch = json!({"data": {"$patch": "delete"}});
    assert_eq!(
        merge(original, patch, &ar("", "ConfigMap")),
        json!({"metadata": {"labels": {"a": "1"}}, "data": {}})
    );
}

#[test]
fn retain_keys_clears_the_other_members_of_a_union() {
    let original = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    assert_eq!(merge(original, patch, &deployment()), json!({"spec": {"strategy": {"type": "Recreate"}}}));
}

#[test]
fn set_element_order_reorders_the_merged_list() {
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
        "containers": [{"name": "c"}]
    }});
    assert_eq!(
        merge(original, patch, &pod()),
        json!({"spec": {"containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}]}})
    );
}

#[test]
fn delete_from_primitive_list_removes_finalizers() {
    let original = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}});
    assert_eq!(merge(original, patch, &ar("", "ConfigMap")), json!({"metadata": {"finalizers": ["a", "c"]}}));
}

#[test]
fn custom_resources_have_no_merge_keys_so_their_lists_are_replaced() {
    let original = json!({"spec": {"containers": [{"name": "a"}]}, "metadata": {"finalizers": ["x"]}});
    let patch = json!({"spec": {"containers": [{"name": "b"}]}, "metadata": {"finalizers": ["y"]}});
    assert_eq!(
        merge(original, patch, &ar("example.com", "Pod")),
        json!({"spec": {"containers": [{"name": "b"}]}, "metadata": {"finalizers": ["x", "y"]}})
    );
}

#[test]
fn a_patch_that_is_not_an_object_gets_400_bad_request() {
    let err = strategic_merge(&json!({}), &json!([1]), &pod()).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(err.message, "json: cannot unmarshal array into Go value of type map[string]interface {}");
}

#[test]
fn a_list_element_without_its_merge_key_gets_400_bad_request() {
    let patch = json!({"spec": {"containers": [{"image": "x"}]}});
    let err = strategic_merge(&json!({"spec": {}}), &patch, &pod()).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(err.message, "map: map[image:x] does not contain declared merge key: name");
}

#[test]
fn an_unknown_patch_directive_gets_400_bad_request() {
    let err = strategic_merge(&json!({}), &json!({"metadata": {"$patch": "explode"}}), &pod()).unwrap_err();
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (400, "BadRequest", "Unknown patch type: explode")
    );
}

#[test]
fn a_new_list_with_a_merge_key_drops_directives() {
    let patch = json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}});
    assert_eq!(merge(json!({"spec": {}}), patch.clone(), &pod()), patch);
}
