//! Metadata rules: names, generateName, owner references and server-owned fields.

#[path = "common/mod.rs"]
mod common;

use common::*;
use serde_json::json;

fn generated(prefix: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": prefix}})
}

#[test]
fn a_create_without_name_or_generate_name_gets_422_required() {
    let mut w = World::new();
    let err = w.try_create(&cm(), Some("default"), json!({"metadata": {}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldValueRequired", "metadata.name"));
}

#[test]
fn generate_name_appends_five_characters_of_the_kubernetes_alphabet() {
    let mut w = World::new();
    let o = w.create(&cm(), Some("default"), generated("web-"));
    let name = o.metadata.name.clone().unwrap();
    assert_eq!(name.len(), "web-".len() + 5);
    assert!(name.starts_with("web-"));
    assert!(name[4..].chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)), "{name}");
    assert_eq!(o.metadata.generate_name.as_deref(), Some("web-"));
}

#[test]
fn generate_name_is_deterministic_for_the_same_id_source() {
    let mut a = World::new();
    let mut b = World::new();
    let x = a.create(&cm(), Some("default"), generated("web-"));
    let y = b.create(&cm(), Some("default"), generated("web-"));
    assert_eq!(x.metadata.name, y.metadata.name);
    assert_eq!(x.metadata.uid, y.metadata.uid);
}

/// An id source that always draws 0: every generated suffix is `bbbbb`.
struct Stuck;

impl model_apiserver::IdSource for Stuck {
    fn next_u64(&mut self) -> u64 {
        0
    }
}

#[test]
fn generate_name_gets_409_already_exists_after_eight_colliding_tries() {
    let mut w = World::new();
    let mut stuck = Stuck;
    let mut ctx = model_apiserver::Context::new(w.now, &mut stuck);
    let create =
        || model_apiserver::Request::create(&cm(), Some("default"), obj(generated("s-")), Default::default());
    let first = w.server.handle(create(), &mut ctx).unwrap();
    assert_eq!(first.object().unwrap().metadata.name.as_deref(), Some("s-bbbbb"));
    let err = w.server.handle(create(), &mut ctx).unwrap_err();
    assert_eq!(code_reason(&err), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"s-bbbbb\" already exists");
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn an_invalid_subdomain_name_gets_422_with_the_real_message() {
    let mut w = World::new();
    let err = w.try_create(&cm(), Some("default"), config_map("Bad_Name", json!({}))).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
}

#[test]
fn a_dotted_name_is_a_valid_subdomain_but_not_a_valid_namespace_label() {
    let mut w = World::new();
    assert!(w.try_create(&cm(), Some("default"), config_map("a.b", json!({}))).is_ok());
    let err = w.try_create(&namespaces(), None, json!({"metadata": {"name": "a.b"}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    );
}

#[test]
fn a_name_longer_than_a_label_allows_gets_422_too_long() {
    let mut w = World::new();
    let name = "a".repeat(64);
    let err = w.try_create(&namespaces(), None, json!({"metadata": {"name": name}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.message, format!("Invalid value: \"{name}\": must be no more than 63 characters"));
}

#[test]
fn two_controller_owner_references_get_422_invalid() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "y", "uid": "2", "controller": true},
    ]);
    let err = w.try_create(&cm(), Some("default"), body).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.field, "metadata.ownerReferences");
    assert!(
        cause.message.contains("Only one reference can have Controller set to true"),
        "{}",
        cause.message
    );
}

#[test]
fn one_controller_owner_reference_is_accepted() {
    let mut w = World::new();
    let mut body = config_map("a", json!({}));
    body["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "y", "uid": "2"},
    ]);
    assert!(w.try_create(&cm(), Some("default"), body).is_ok());
}

#[test]
fn an_update_carrying_the_uid_of_a_deleted_incarnation_gets_409_precondition_failed() {
    let mut w = World::new();
    let first = w.create(&cm(), Some("default"), config_map("a", json!({})));
    w.try_delete(&cm(), Some("default"), "a").unwrap();
    let second = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let mut stale = (*first).clone();
    stale.metadata.resource_version = None;
    stale.data["data"] = json!({"k": "v"});
    let err = w.try_update(&cm(), Some("default"), stale).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: invalid object, Code: 4, Key: \
             /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID \
             in precondition: {}, UID in object meta: {}",
            first.metadata.uid.as_deref().unwrap(),
            second.metadata.uid.as_deref().unwrap()
        )
    );
}

#[test]
fn a_uid_precondition_error_names_the_etcd_key_kube_apiserver_uses() {
    // Services are kept under `services/specs`, cluster-scoped kinds without a namespace.
    let cases = [
        (builtin("", "services"), Some("default"), "Service", "v1", "/registry/services/specs/default/a"),
        (namespaces(), None, "Namespace", "v1", "/registry/namespaces/a"),
        (deployments(), Some("default"), "Deployment", "apps/v1", "/registry/deployments/default/a"),
    ];
    for (resource, ns, kind, api_version, key) in cases {
        let mut w = World::new();
        let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"}});
        if kind == "Service" {
            body["spec"] = json!({"ports": [{"port": 80}]});
        }
        if kind == "Deployment" {
            body["spec"] = json!({"selector": {"matchLabels": {"app": "a"}}, "template": {
                "metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}});
        }
        let created = w.create(&resource, ns, body);
        let mut stale = (*created).clone();
        stale.metadata.uid = Some("other".to_owned());
        stale.metadata.resource_version = None;
        let err = w.try_update(&resource, ns, stale).unwrap_err();
        assert_eq!(code_reason(&err), (409, "Conflict"), "{kind}");
        assert!(err.message.contains(&format!("Key: {key}, ResourceVersion: 0,")), "{kind}: {}", err.message);
    }
}

#[test]
fn a_patch_that_changes_the_uid_gets_422_immutable() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let err = w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"uid": "other"}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "ConfigMap \"a\" is invalid: metadata.uid: Invalid value: \"other\": field is immutable"
    );
}

#[test]
fn an_update_keeps_uid_creation_timestamp_and_generation() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    w.advance_seconds(60);
    let mut body = obj(config_map("a", json!({"k": "2"})));
    body.metadata.generation = Some(42);
    let b = w.try_update(&cm(), Some("default"), body).unwrap();
    assert_eq!(b.metadata.uid, a.metadata.uid);
    assert_eq!(b.metadata.creation_timestamp, a.metadata.creation_timestamp);
    assert_eq!(b.metadata.generation, None);
}

#[test]
fn uids_are_distinct_version_4_uuids() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({})));
    let b = w.create(&cm(), Some("default"), config_map("b", json!({})));
    assert_ne!(a.metadata.uid, b.metadata.uid);
    for uid in [a.metadata.uid.clone().unwrap(), b.metadata.uid.clone().unwrap()] {
        let parts: Vec<_> = uid.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert!(matches!(&uid[19..20], "8" | "9" | "a" | "b"), "{uid}");
    }
}

// Each kind's name function, as its ValidateObjectMeta call names it: Services are DNS-1035
// labels (ValidateServiceName = NameIsDNS1035Label, pkg/apis/core/validation), so a name must
// start with a letter; RBAC kinds are path segments (ValidateRBACName =
// path.IsValidPathSegmentName, pkg/apis/rbac/validation), so uppercase and dots are fine and
// only '.', '..', '/' and '%' are refused.
#[test]
fn services_are_dns_1035_labels_and_rbac_names_path_segments() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let service = |name: &str| serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
    let err = w.try_create(&svcs, Some("default"), service("1abc")).unwrap_err();
    assert_eq!(
        err.message,
        "Service \"1abc\" is invalid: metadata.name: Invalid value: \"1abc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    );
    assert!(w.try_create(&svcs, Some("default"), service("abc-1")).is_ok());
    let roles = builtin("rbac.authorization.k8s.io", "roles");
    let role = |name: &str| serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}, "rules": []});
    assert!(w.try_create(&roles, Some("default"), role("System:Controller.v1")).is_ok());
    let err = w.try_create(&roles, Some("default"), role("a/b%c")).unwrap_err();
    assert_eq!(
        err.message,
        "Role.rbac.authorization.k8s.io \"a/b%c\" is invalid: [metadata.name: Invalid value: \"a/b%c\": may not contain '/', metadata.name: Invalid value: \"a/b%c\": may not contain '%']"
    );
    let err = w.try_create(&roles, Some("default"), role("..")).unwrap_err();
    assert_eq!(
        err.message,
        "Role.rbac.authorization.k8s.io \"..\" is invalid: metadata.name: Invalid value: \"..\": may not be '..'"
    );
}

// The etcd3 storage's Create (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go) refuses
// an object whose resourceVersion parses to a version other than 0 with
// ErrResourceVersionSetOnCreate, which InterpretCreateError passes on as no API status: 500,
// no reason. One that does not parse is ignored; a dry run never reaches the storage.
#[test]
fn a_create_with_a_resource_version_gets_500_from_the_storage() {
    let mut w = World::new();
    let with_rv = |name: &str, rv: &str| {
        let mut body = config_map(name, json!({}));
        body["metadata"]["resourceVersion"] = json!(rv);
        body
    };
    let err = w.try_create(&cm(), Some("default"), with_rv("a", "5")).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (500, ""));
    assert_eq!(err.message, "resourceVersion should not be set on objects to be created");
    for (name, ignored) in [("b", "0"), ("c", "-1"), ("d", "abc")] {
        assert!(w.try_create(&cm(), Some("default"), with_rv(name, ignored)).is_ok(), "{ignored}");
    }
}
