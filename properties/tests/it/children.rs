//! The built-in controllers' children in the differential oracle (issue 15): compared by what
//! their parent asked for (template, image, live count), never by their history (old
//! ReplicaSets, revision numbers, counts) or their hash names.

#[path = "common/mod.rs"]
mod common;

use common::{key, snapshot};
use properties::{Counts, EndState, Mask, ObjectCount, matches_reference};
use serde_json::{Value, json};

/// Deployment `web` of 2 replicas running `image`, at `revision`, whose current ReplicaSet is
/// `current` (named in its Progressing condition).
fn deployment(image: &str, revision: u32, collisions: Option<u32>, current: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": revision,
                     "annotations": {"deployment.kubernetes.io/revision": revision.to_string()}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": image}]}}},
        "status": {"replicas": 2, "availableReplicas": 2, "updatedReplicas": 2, "collisionCount": collisions,
                   "observedGeneration": revision,
                   "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                                   "message": format!("ReplicaSet \"{current}\" has successfully progressed.")}]}
    })
}

/// ReplicaSet `web-<hash>` of Deployment `web`, at `revision`, scaled to `replicas`.
fn replica_set(hash: &str, image: &str, replicas: u32, revision: u32) -> Value {
    let labels = json!({"app": "web", "pod-template-hash": hash});
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": format!("web-{hash}"), "namespace": "default", "uid": format!("rs-{hash}"),
                     "labels": labels,
                     "annotations": {"deployment.kubernetes.io/revision": revision.to_string(),
                                     "deployment.kubernetes.io/desired-replicas": "2"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "uid": "d-uid", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "web", "image": image}]}}},
        "status": {"replicas": replicas, "readyReplicas": replicas}
    })
}

/// Pod `web-<hash>-<suffix>` of ReplicaSet `web-<hash>`, running and ready.
fn pod(hash: &str, suffix: &str, image: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-{hash}-{suffix}"), "generateName": format!("web-{hash}-"),
                     "namespace": "default", "uid": format!("pod-{suffix}"),
                     "labels": {"app": "web", "pod-template-hash": hash},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": format!("web-{hash}"), "uid": format!("rs-{hash}"),
                                          "controller": true}]},
        "spec": {"containers": [{"name": "web", "image": image}], "nodeName": "node-1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// Counts: the Deployment created once, and `created` ReplicaSets and Pods.
fn counts(replica_sets: &[&str], pods: &[(&str, u64)]) -> Vec<ObjectCount> {
    let count = |resource, name: String, created| ObjectCount {
        key: key(resource, "default", &name),
        counts: Counts { created, deleted: 0 },
        last: None,
        child: resource != "apps/deployments",
    };
    let mut all = vec![count("apps/deployments", "web".to_owned(), 1)];
    all.extend(replica_sets.iter().map(|hash| count("apps/replicasets", format!("web-{hash}"), 1)));
    all.extend(pods.iter().map(|(hash, n)| count("pods", format!("web-{hash}-*"), *n)));
    all
}

/// The fault-free rollout: nginx:1, then :2, then :3, each a ReplicaSet and a revision.
fn reference() -> EndState {
    EndState {
        snapshot: snapshot(&[
            deployment("nginx:3", 3, None, "web-7c8d9f6b5"),
            replica_set("5b6c7d8f9", "nginx:1", 0, 1),
            replica_set("6f7b8c9d4", "nginx:2", 0, 2),
            replica_set("7c8d9f6b5", "nginx:3", 2, 3),
            pod("7c8d9f6b5", "bcdfg", "nginx:3"),
            pod("7c8d9f6b5", "hjklm", "nginx:3"),
        ]),
        counts: counts(
            &["5b6c7d8f9", "6f7b8c9d4", "7c8d9f6b5"],
            &[("5b6c7d8f9", 2), ("6f7b8c9d4", 2), ("7c8d9f6b5", 2)],
        ),
    }
}

fn violations(run: &EndState) -> Vec<String> {
    matches_reference(&reference(), run, &Mask::builtin()).iter().map(ToString::to_string).collect()
}

#[test]
fn a_rollout_that_skipped_an_intermediate_image_matches_the_one_that_went_through_it() {
    // Relisted after a missed update, the controller went from nginx:1 straight to nginx:3: one
    // old ReplicaSet fewer, revision 2 instead of 3, other pod names and counts.
    let run = EndState {
        snapshot: snapshot(&[
            deployment("nginx:3", 2, None, "web-7c8d9f6b5"),
            replica_set("5b6c7d8f9", "nginx:1", 0, 1),
            replica_set("7c8d9f6b5", "nginx:3", 2, 2),
            pod("7c8d9f6b5", "qrstv", "nginx:3"),
            pod("7c8d9f6b5", "wxz24", "nginx:3"),
        ]),
        counts: counts(&["5b6c7d8f9", "7c8d9f6b5"], &[("5b6c7d8f9", 2), ("7c8d9f6b5", 3)]),
    };
    assert_eq!(violations(&run), Vec::<String>::new());
}

#[test]
fn a_replica_set_recreated_under_a_collision_count_hash_matches_the_reference() {
    // The ReplicaSet of nginx:3 was recreated after a name collision: another hash everywhere
    // (its name, labels, selector, its Pods' names and owner, the Deployment's condition).
    let run = EndState {
        snapshot: snapshot(&[
            deployment("nginx:3", 3, Some(1), "web-8d9f6b5c7"),
            replica_set("5b6c7d8f9", "nginx:1", 0, 1),
            replica_set("6f7b8c9d4", "nginx:2", 0, 2),
            replica_set("8d9f6b5c7", "nginx:3", 2, 3),
            pod("8d9f6b5c7", "bcdfg", "nginx:3"),
            pod("8d9f6b5c7", "hjklm", "nginx:3"),
        ]),
        counts: counts(
            &["5b6c7d8f9", "6f7b8c9d4", "8d9f6b5c7"],
            &[("5b6c7d8f9", 2), ("6f7b8c9d4", 2), ("8d9f6b5c7", 2)],
        ),
    };
    assert_eq!(violations(&run), Vec::<String>::new());
}

#[test]
fn live_children_still_differ_by_image_and_number_and_the_parent_by_its_spec_and_counts() {
    // The Deployment asks for nginx:3 but its live ReplicaSet and Pods run nginx:2, with a Pod
    // too many; and the Deployment was created twice.
    let mut run_counts = counts(&["5b6c7d8f9", "6f7b8c9d4"], &[("6f7b8c9d4", 3)]);
    run_counts[0].counts = Counts { created: 2, deleted: 1 };
    let run = EndState {
        snapshot: snapshot(&[
            deployment("nginx:3", 3, None, "web-6f7b8c9d4"),
            replica_set("5b6c7d8f9", "nginx:1", 0, 1),
            replica_set("6f7b8c9d4", "nginx:2", 2, 2),
            pod("6f7b8c9d4", "bcdfg", "nginx:2"),
            pod("6f7b8c9d4", "hjklm", "nginx:2"),
            pod("6f7b8c9d4", "qrstv", "nginx:2"),
        ]),
        counts: run_counts,
    };
    assert_eq!(
        violations(&run),
        vec![
            r#"matches_reference: apps/replicasets default/web-6f7b8c9d4: /spec/template/spec/containers/0/image: expected "nginx:3", found "nginx:2""#,
            r#"matches_reference: pods default/web-6f7b8c9d4-bcdfg: /spec/containers/0/image: expected "nginx:3", found "nginx:2""#,
            r#"matches_reference: pods default/web-6f7b8c9d4-hjklm: /spec/containers/0/image: expected "nginx:3", found "nginx:2""#,
            "matches_reference: pods default/web-6f7b8c9d4-qrstv: expected absent (the reference run ends without it), found present",
            "matches_reference: apps/deployments default/web: created 2 times, the fault-free reference created it 1 time; deleted 1 time, the fault-free reference deleted it 0 times",
        ]
    );
}

#[test]
fn a_second_live_replica_set_is_a_difference() {
    // A rollout left stuck half-way: the old ReplicaSet still runs a Pod.
    let mut objects = vec![
        deployment("nginx:3", 3, None, "web-7c8d9f6b5"),
        replica_set("5b6c7d8f9", "nginx:1", 0, 1),
        replica_set("6f7b8c9d4", "nginx:2", 1, 2),
        replica_set("7c8d9f6b5", "nginx:3", 2, 3),
        pod("6f7b8c9d4", "qrstv", "nginx:2"),
    ];
    objects.push(pod("7c8d9f6b5", "bcdfg", "nginx:3"));
    objects.push(pod("7c8d9f6b5", "hjklm", "nginx:3"));
    let run = EndState { snapshot: snapshot(&objects), counts: reference().counts };
    assert_eq!(
        violations(&run),
        vec![
            "matches_reference: apps/replicasets default/web-6f7b8c9d4: expected absent (the reference run ends without it), found present",
            "matches_reference: pods default/web-6f7b8c9d4-qrstv: expected absent (the reference run ends without it), found present",
        ]
    );
}

#[test]
fn without_the_builtin_mask_children_are_compared_by_name_and_history() {
    let run = EndState {
        snapshot: snapshot(&[
            deployment("nginx:3", 2, None, "web-7c8d9f6b5"),
            replica_set("5b6c7d8f9", "nginx:1", 0, 1),
            replica_set("7c8d9f6b5", "nginx:3", 2, 2),
        ]),
        counts: counts(&["5b6c7d8f9", "7c8d9f6b5"], &[]),
    };
    let strict = matches_reference(&reference(), &run, &Mask::none());
    assert!(
        strict
            .iter()
            .any(|v| v.to_string().contains("apps/replicasets default/web-6f7b8c9d4: expected to exist"))
    );
    assert!(
        strict
            .iter()
            .any(|v| v.to_string().contains("apps/replicasets default/web-6f7b8c9d4: created 0 times"))
    );
}

/// Claim `name` (uid `uid`) bound to the volume provisioned for it, and that volume:
/// `pvc-<uid>`, pre-bound to the claim (with its resourceVersion `rv` then), as a provisioner
/// makes it.
fn claim_and_volume(name: &str, uid: &str, rv: &str, size: &str) -> [Value; 2] {
    let volume = format!("pvc-{uid}");
    [
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "uid": uid,
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"volumeName": volume, "storageClassName": "standard",
                     "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Bound", "capacity": {"storage": size}}
        }),
        json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": volume, "uid": format!("v-{uid}"),
                         "annotations": {"pv.kubernetes.io/provisioned-by": "kube-sim.io/local"}},
            "spec": {"capacity": {"storage": size}, "storageClassName": "standard",
                     "hostPath": {"path": format!("/var/local-path-provisioner/{volume}_default_{name}")},
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": name,
                                  "uid": uid, "resourceVersion": rv}},
            "status": {"phase": "Bound"}
        }),
    ]
}

fn claims_and_volumes(claims: &[(&str, &str, &str, &str)]) -> EndState {
    let objects: Vec<Value> =
        claims.iter().flat_map(|(name, uid, rv, size)| claim_and_volume(name, uid, rv, size)).collect();
    let counts = claims
        .iter()
        .flat_map(|(name, uid, _, _)| {
            [
                ObjectCount {
                    key: key("persistentvolumeclaims", "default", name),
                    counts: Counts { created: 1, deleted: 0 },
                    last: None,
                    child: false,
                },
                ObjectCount {
                    key: key("persistentvolumes", "", &format!("pvc-{uid}")),
                    counts: Counts { created: 1, deleted: 0 },
                    last: None,
                    child: true,
                },
            ]
        })
        .collect();
    EndState { snapshot: snapshot(&objects), counts }
}

const A: &str = "0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b";
const B: &str = "9a8b7c6d-5e4f-4321-8fed-cba987654321";
const C: &str = "11111111-2222-4333-8444-555555555555";
const D: &str = "66666666-7777-4888-9999-aaaaaaaaaaaa";

#[test]
fn provisioned_volumes_named_after_other_claim_uids_match_the_reference() {
    // Two runs draw other uids, so the provisioner names the volumes differently, and the claims'
    // resourceVersions at binding differ.
    let reference = claims_and_volumes(&[("data-0", A, "10", "1Gi"), ("data-1", B, "12", "2Gi")]);
    let run = claims_and_volumes(&[("data-0", C, "31", "1Gi"), ("data-1", D, "17", "2Gi")]);
    let found: Vec<String> =
        matches_reference(&reference, &run, &Mask::builtin()).iter().map(ToString::to_string).collect();
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_provisioned_volume_of_the_wrong_size_or_claim_is_still_a_difference() {
    let reference = claims_and_volumes(&[("data-0", A, "10", "1Gi"), ("data-1", B, "12", "2Gi")]);
    let run = claims_and_volumes(&[("data-0", C, "31", "1Gi"), ("data-1", D, "17", "3Gi")]);
    let found = matches_reference(&reference, &run, &Mask::builtin());
    assert!(
        found.iter().any(|v| v.to_string().contains("persistentvolumes") && v.to_string().contains("3Gi")),
        "{found:?}"
    );
    let missing = claims_and_volumes(&[("data-0", C, "31", "1Gi")]);
    let found = matches_reference(&reference, &missing, &Mask::builtin());
    assert!(found.iter().any(|v| v.to_string().contains("persistentvolumes")), "{found:?}");
}
