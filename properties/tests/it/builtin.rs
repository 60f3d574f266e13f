//! The built-in end-state checks: no_orphans, no_stuck_deletions, no_error_loop.

#[path = "common/mod.rs"]
mod common;

use common::snapshot;
use properties::{Violation, no_error_loop, no_orphans, no_stuck_deletions};
use serde_json::{Value, json};

fn deployment(namespace: &str, uid: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": namespace, "uid": uid}})
}

/// A ReplicaSet in `namespace` owned by Deployment `web` with `owner_uid`.
fn replica_set(namespace: &str, owner_uid: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": "web-5d9f", "namespace": namespace, "uid": "rs-1",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                             "uid": owner_uid, "controller": true}]}})
}

fn messages(violations: &[Violation]) -> Vec<String> {
    violations.iter().map(ToString::to_string).collect()
}

#[test]
fn an_object_whose_owner_exists_with_the_same_uid_is_not_an_orphan() {
    assert_eq!(no_orphans(&snapshot(&[deployment("default", "d-1"), replica_set("default", "d-1")])), vec![]);
}

#[test]
fn an_object_whose_owner_was_recreated_under_the_same_name_is_an_orphan() {
    let state = snapshot(&[deployment("default", "d-2"), replica_set("default", "d-1")]);
    assert_eq!(
        messages(&no_orphans(&state)),
        vec![
            "no_orphans: apps/replicasets default/web-5d9f: owner Deployment web (uid d-1) is gone: expected uid d-1 at apps/deployments default/web, found uid d-2 (a new object with the owner's name)"
        ]
    );
}

#[test]
fn an_object_whose_owner_is_deleted_is_an_orphan() {
    let state = snapshot(&[replica_set("default", "d-1")]);
    assert_eq!(
        no_orphans(&state),
        vec![Violation {
            property: "no_orphans".to_owned(),
            message:
                "owner Deployment web (uid d-1) is gone: expected apps/deployments default/web, found nothing"
                    .to_owned(),
            object: Some("apps/replicasets default/web-5d9f".to_owned()),
        }]
    );
}

#[test]
fn an_owner_in_another_namespace_is_reported_as_a_cross_namespace_reference() {
    let state = snapshot(&[deployment("team-a", "d-1"), replica_set("team-b", "d-1")]);
    assert_eq!(
        messages(&no_orphans(&state)),
        vec![
            "no_orphans: apps/replicasets team-b/web-5d9f: owner Deployment web (uid d-1) is in namespace team-a, not team-b: a namespaced owner must be in its dependent's namespace"
        ]
    );
}

#[test]
fn a_cluster_scoped_object_with_a_namespaced_owner_is_reported_as_unresolvable() {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "uid": "ns-1",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1"}]}});
    let state = snapshot(&[deployment("team-a", "d-1"), namespace]);
    assert_eq!(
        messages(&no_orphans(&state)),
        vec![
            "no_orphans: namespaces team-a: owner Deployment web (uid d-1) is namespaced but this object is cluster-scoped: the garbage collector cannot resolve such a reference"
        ]
    );
}

#[test]
fn a_namespaced_object_may_have_a_cluster_scoped_owner() {
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "uid": "ns-1"}});
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "team-a",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "team-a", "uid": "ns-1"}]}});
    assert_eq!(no_orphans(&snapshot(&[namespace, config])), vec![]);
}

#[test]
fn custom_resource_owners_resolve_through_the_objects_present_and_any_version() {
    let database = |uid: &str| {
        json!({"apiVersion": "db.example.com/v2", "kind": "Database",
               "metadata": {"name": "main", "namespace": "default", "uid": uid}})
    };
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "main-creds", "namespace": "default",
                     "ownerReferences": [{"apiVersion": "db.example.com/v1", "kind": "Database", "name": "main", "uid": "db-1"}]}});
    assert_eq!(no_orphans(&snapshot(&[database("db-1"), secret.clone()])), vec![]);
    assert_eq!(
        messages(&no_orphans(&snapshot(&[secret]))),
        vec![
            "no_orphans: secrets default/main-creds: owner Database main (uid db-1) is gone: expected an object of kind Database in apiVersion db.example.com/v1, found none of that kind"
        ]
    );
}

#[test]
fn an_object_being_deleted_is_left_to_no_stuck_deletions() {
    let mut rs = replica_set("default", "d-1");
    rs["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:10Z");
    rs["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
    assert_eq!(no_orphans(&snapshot(&[rs])), vec![]);
}

#[test]
fn a_stuck_deletion_is_reported_with_its_finalizers() {
    let stuck = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "deletionTimestamp": "2026-01-01T00:00:10Z",
                     "finalizers": ["example.com/cleanup", "example.com/backup"]}});
    let live =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "default"}});
    assert_eq!(
        messages(&no_stuck_deletions(&snapshot(&[stuck, live]))),
        vec![
            "no_stuck_deletions: configmaps default/c: deletion requested at 2026-01-01T00:00:10Z: expected gone, found present with finalizers [example.com/cleanup, example.com/backup]"
        ]
    );
}

#[test]
fn a_deleting_object_without_finalizers_is_reported_as_stuck() {
    let stuck = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "deletionTimestamp": "2026-01-01T00:00:10Z"}});
    assert_eq!(
        messages(&no_stuck_deletions(&snapshot(&[stuck]))),
        vec![
            "no_stuck_deletions: namespaces team-a: deletion requested at 2026-01-01T00:00:10Z: expected gone, found present with no finalizers left"
        ]
    );
}

#[test]
fn reconcile_errors_above_the_bound_after_convergence_are_an_error_loop() {
    let results = [
        ("default/web", true),
        ("default/db", true),
        ("default/web", true),
        ("default/web", false),
        ("default/web", true),
    ];
    assert_eq!(
        messages(&no_error_loop(&results, 2)),
        vec![
            "no_error_loop: default/web: reconcile failed 3 of 4 times after convergence: expected at most 2 failures"
        ]
    );
    assert_eq!(no_error_loop(&results, 3), vec![]);
}
