//! The status subresource and metadata.generation.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{GetParams, Patch, PatchParams, PostParams};
use model_apiserver::{Request, Subresource};
use serde_json::json;

fn deployment(name: &str, replicas: i64) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    })
}

#[test]
fn create_drops_the_status_of_a_type_with_a_status_subresource() {
    let mut w = World::new();
    let mut body = deployment("d", 1);
    body["status"] = json!({"replicas": 5});
    let d = w.create(&deployments(), Some("default"), body);
    // What is left is the empty Go struct kube-apiserver answers.
    assert_eq!(d.data.get("status"), Some(&json!({})));
    assert_eq!(d.metadata.generation, Some(1));
}

#[test]
fn a_new_pod_is_pending() {
    let mut w = World::new();
    let p = w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    assert_eq!(p.data["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    assert_eq!(p.metadata.generation, Some(1));
}

// A status write that leaves the QoS class out drops it, as the kube-apiserver the conformance
// answers were recorded on does (`pod_status_update`: no `qosClass` after a PUT of a status
// without it); newer servers backfill it (`podStatusStrategy.PrepareForUpdate`). A writer keeps
// it by sending it back, as the kubelet-lite does.
#[test]
fn a_pod_status_write_without_the_qos_class_drops_it_and_one_with_it_keeps_it() {
    let mut w = World::new();
    let spec = json!({"containers": [{"name": "c", "image": "i:1",
        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]});
    w.create(&pods(), Some("default"), json!({"metadata": {"name": "p"}, "spec": spec}));
    let mut body = (*w.get(&pods(), Some("default"), "p")).clone();
    body.data["status"] = json!({"phase": "Running", "qosClass": "Guaranteed"});
    let put = Request::update(&pods(), Some("default"), "p", body, PostParams::default())
        .with_subresource(Subresource::Status);
    let p = object(w.handle(put).unwrap());
    assert_eq!(p.data["status"], json!({"phase": "Running", "qosClass": "Guaranteed"}));
    let patch = Patch::Merge(json!({"status": {"qosClass": null, "phase": "Succeeded"}}));
    let merge = Request::patch(&pods(), Some("default"), "p", patch, PatchParams::default())
        .with_subresource(Subresource::Status);
    let p = object(w.handle(merge).unwrap());
    assert_eq!(p.data["status"], json!({"phase": "Succeeded"}));
}

#[test]
fn an_update_of_the_main_resource_ignores_status_changes() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let mut body = deployment("d", 1);
    body["status"] = json!({"replicas": 5});
    let r = w.try_update(&deployments(), Some("default"), obj(body)).unwrap();
    assert_eq!(r.data.get("status"), Some(&json!({})));
    assert_eq!(w.server.revision(), 5, "nothing else changed: a no-op");
}

#[test]
fn a_spec_change_bumps_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let r = w.try_merge(&deployments(), Some("default"), "d", json!({"spec": {"replicas": 3}})).unwrap();
    assert_eq!(r.metadata.generation, Some(2));
}

#[test]
fn a_label_change_does_not_bump_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let r = w
        .try_merge(&deployments(), Some("default"), "d", json!({"metadata": {"labels": {"a": "b"}}}))
        .unwrap();
    assert_eq!(r.metadata.generation, Some(1));
    assert_eq!(rv(&r), 6);
}

#[test]
fn a_status_update_takes_only_the_status() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let mut body = deployment("d", 7);
    body["metadata"]["labels"] = json!({"sneaky": "yes"});
    body["status"] = json!({"replicas": 1});
    let r = w
        .handle(
            Request::update(&deployments(), Some("default"), "d", obj(body), PostParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap();
    let d = object(r);
    assert_eq!(d.data["status"], json!({"replicas": 1}));
    assert_eq!(d.data["spec"]["replicas"], json!(1));
    assert_eq!(d.metadata.labels, None);
    assert_eq!(d.metadata.generation, Some(1));
    assert_eq!(rv(&d), 6);
}

#[test]
fn a_status_patch_changes_the_status_without_bumping_the_generation() {
    let mut w = World::new();
    w.create(&deployments(), Some("default"), deployment("d", 1));
    let patch = Patch::Merge(json!({"status": {"readyReplicas": 1}}));
    let r = w
        .handle(
            Request::patch(&deployments(), Some("default"), "d", patch, PatchParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap();
    let d = object(r);
    assert_eq!(d.data["status"], json!({"readyReplicas": 1}));
    assert_eq!(d.metadata.generation, Some(1));
}

#[test]
fn a_status_update_with_a_stale_resource_version_gets_409_conflict() {
    let mut w = World::new();
    let d = w.create(&deployments(), Some("default"), deployment("d", 1));
    w.try_merge(&deployments(), Some("default"), "d", json!({"spec": {"replicas": 2}})).unwrap();
    let mut body = (*d).clone();
    body.data["status"] = json!({"replicas": 1});
    let err = w
        .handle(
            Request::update(&deployments(), Some("default"), "d", body, PostParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
}

#[test]
fn status_of_a_type_without_a_status_subresource_gets_404_not_found() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let r =
        Request::get(&cm(), Some("default"), "a", GetParams::default()).with_subresource(Subresource::Status);
    let err = w.handle(r).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "the server could not find the requested resource");
}

#[test]
fn kinds_without_generation_tracking_have_no_generation() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    assert_eq!(a.metadata.generation, None);
    let b = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap();
    assert_eq!(b.metadata.generation, None);
}

/// A `/status` write of `kind`'s object `name` in `default`: the stored object with `edit`
/// applied to it, sent as a PUT.
fn put_status(
    w: &mut World,
    ar: &kube_core::ApiResource,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> std::sync::Arc<kube_core::DynamicObject> {
    let stored = object(w.handle(Request::get(ar, Some("default"), name, GetParams::default())).unwrap());
    let mut body = serde_json::to_value(&*stored).unwrap();
    edit(&mut body);
    object(
        w.handle(
            Request::update(ar, Some("default"), name, obj(body), PostParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap(),
    )
}

fn replica_set(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    })
}

/// A status write's body is only read for its status: a spec it leaves out, changes or sends back
/// unchanged is the stored one afterwards, whole.
#[test]
fn a_status_write_keeps_the_stored_spec_whether_the_body_omits_changes_or_repeats_it() {
    let mut w = World::new();
    let rs = builtin("apps", "replicasets");
    let created = w.create(&rs, Some("default"), replica_set("rs"));
    let omitted = put_status(&mut w, &rs, "rs", |body| {
        body.as_object_mut().unwrap().remove("spec");
        body["status"] = json!({"replicas": 1});
    });
    assert_eq!(omitted.data["spec"], created.data["spec"]);
    assert_eq!(omitted.data["status"]["replicas"], json!(1));
    let changed = put_status(&mut w, &rs, "rs", |body| {
        body["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i:2");
        body["spec"]["minReadySeconds"] = json!(5);
        body["status"] = json!({"replicas": 2});
    });
    assert_eq!(changed.data["spec"], created.data["spec"]);
    assert_eq!(changed.data["status"]["replicas"], json!(2));
    let repeated = put_status(&mut w, &rs, "rs", |body| body["status"] = json!({"replicas": 3}));
    assert_eq!(repeated.data["spec"], created.data["spec"]);
    assert_eq!(repeated.data["status"]["replicas"], json!(3));
    let stored = object(w.handle(Request::get(&rs, Some("default"), "rs", GetParams::default())).unwrap());
    assert_eq!(stored.data, repeated.data);
}

/// kube-apiserver's status strategies of the built-in kinds reset the spec and (but for a
/// Deployment's labels and a Pod's owner references) no metadata: what a status write sends in
/// `metadata` persists, as in an update of the main resource.
#[test]
fn a_status_write_of_a_replica_set_persists_the_metadata_it_sends_but_not_the_spec() {
    let mut w = World::new();
    w.create(&builtin("apps", "replicasets"), Some("default"), replica_set("rs"));
    let rs = put_status(&mut w, &builtin("apps", "replicasets"), "rs", |body| {
        body["metadata"]["labels"] = json!({"tier": "web"});
        body["metadata"]["annotations"] = json!({"note": "from the status writer"});
        body["metadata"]["finalizers"] = json!(["example.com/hold"]);
        body["spec"]["replicas"] = json!(9);
        body["status"] = json!({"replicas": 1});
    });
    assert_eq!(rs.data["status"], json!({"replicas": 1}));
    assert_eq!(rs.data["spec"]["replicas"], json!(1), "the spec stays the stored one");
    assert_eq!(rs.metadata.labels.as_ref().unwrap()["tier"], "web");
    assert_eq!(rs.metadata.annotations.as_ref().unwrap()["note"], "from the status writer");
    assert_eq!(rs.metadata.finalizers, Some(vec!["example.com/hold".to_owned()]));
    assert_eq!(rs.metadata.generation, Some(1), "a status write bumps no generation");
}

#[test]
fn a_deployment_status_write_keeps_the_stored_labels_and_takes_the_annotations() {
    let mut w = World::new();
    let mut body = deployment("d", 1);
    body["metadata"]["labels"] = json!({"app": "d"});
    w.create(&deployments(), Some("default"), body);
    let d = put_status(&mut w, &deployments(), "d", |body| {
        body["metadata"]["labels"] = json!({"app": "other"});
        body["metadata"]["annotations"] = json!({"note": "n"});
        body["status"] = json!({"replicas": 1});
    });
    assert_eq!(d.metadata.labels.as_ref().unwrap()["app"], "d");
    assert_eq!(d.metadata.annotations.as_ref().unwrap()["note"], "n");
    assert_eq!(
        d.metadata.generation,
        Some(1),
        "annotations bump a Deployment's generation only through the main resource"
    );
}

#[test]
fn a_pod_status_write_keeps_the_stored_owner_references_and_takes_the_labels() {
    let mut w = World::new();
    w.create(
        &pods(),
        Some("default"),
        json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-1"}]},
               "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    );
    let p = put_status(&mut w, &pods(), "p", |body| {
        body["metadata"]["ownerReferences"] = json!([]);
        body["metadata"]["labels"] = json!({"ready": "yes"});
        body["status"]["phase"] = json!("Running");
    });
    assert_eq!(p.metadata.owner_references.as_ref().map(Vec::len), Some(1));
    assert_eq!(p.metadata.labels.as_ref().unwrap()["ready"], "yes");
    assert_eq!(p.data["status"]["phase"], json!("Running"));
}

/// What a status write sends in `metadata` is validated as in any update.
#[test]
fn a_status_write_with_an_invalid_label_gets_422_invalid() {
    let mut w = World::new();
    w.create(&builtin("apps", "replicasets"), Some("default"), replica_set("rs"));
    let stored = object(
        w.handle(Request::get(&builtin("apps", "replicasets"), Some("default"), "rs", GetParams::default()))
            .unwrap(),
    );
    let mut body = (*stored).clone();
    body.metadata.labels = Some([("not a key!".to_owned(), "x".to_owned())].into());
    let err = w
        .handle(
            Request::update(
                &builtin("apps", "replicasets"),
                Some("default"),
                "rs",
                body,
                PostParams::default(),
            )
            .with_subresource(Subresource::Status),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert!(err.message.contains("metadata.labels"), "{}", err.message);
}

/// kube-apiserver answers a built-in object through its Go type: the status struct is there
/// even when empty, with its fields that have no `omitempty` at zero. A typed client reads
/// `Some(status)`, as against a cluster.
#[test]
fn a_new_built_in_object_answers_the_status_its_go_type_always_encodes() {
    let mut w = World::new();
    let sts = json!({
        "metadata": {"name": "s"},
        "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}},
                 "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    });
    let ds = json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
    });
    let job = json!({
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}},
    });
    let pdb = json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "s"}}}});
    let service = json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}});
    let ingress = json!({"metadata": {"name": "i"}, "spec": {"defaultBackend": {"service": {"name": "svc", "port": {"number": 80}}}}});
    let cases = [
        (builtin("apps", "deployments"), deployment("web", 1), json!({})),
        (builtin("apps", "replicasets"), replica_set("rs"), json!({"replicas": 0})),
        (builtin("apps", "statefulsets"), sts, json!({"replicas": 0, "availableReplicas": 0})),
        (
            builtin("apps", "daemonsets"),
            ds,
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
        ),
        (builtin("batch", "jobs"), job, json!({})),
        (
            builtin("policy", "poddisruptionbudgets"),
            pdb,
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        ),
        (builtin("", "services"), service, json!({"loadBalancer": {}})),
        (builtin("networking.k8s.io", "ingresses"), ingress, json!({"loadBalancer": {}})),
    ];
    for (ar, body, status) in cases {
        let created = w.create(&ar, Some("default"), body);
        assert_eq!(created.data["status"], status, "{} on create", ar.kind);
        let name = created.metadata.name.clone().unwrap();
        let read = w.get(&ar, Some("default"), &name);
        assert_eq!(read.data["status"], status, "{} on a read", ar.kind);
    }
}

#[test]
fn a_status_write_that_leaves_out_the_zero_fields_still_answers_them() {
    let mut w = World::new();
    let rs = builtin("apps", "replicasets");
    w.create(&rs, Some("default"), replica_set("rs"));
    let written = put_status(&mut w, &rs, "rs", |body| body["status"] = json!({"readyReplicas": 1}));
    assert_eq!(written.data["status"], json!({"replicas": 0, "readyReplicas": 1}));
    let cleared = put_status(&mut w, &rs, "rs", |body| {
        body.as_object_mut().unwrap().remove("status");
    });
    assert_eq!(cleared.data["status"], json!({"replicas": 0}));
    let patch = Patch::Merge(json!({"status": {"replicas": null, "readyReplicas": 2}}));
    let patched = object(
        w.handle(
            Request::patch(&rs, Some("default"), "rs", patch, PatchParams::default())
                .with_subresource(Subresource::Status),
        )
        .unwrap(),
    );
    assert_eq!(patched.data["status"], json!({"replicas": 0, "readyReplicas": 2}));
}

/// `nodeStrategy.PrepareForCreate` keeps everything, status included (a kubelet registers its
/// node with its status), and `SetDefaults_NodeStatus` copies the capacity into an absent
/// allocatable.
#[test]
fn a_node_keeps_the_status_it_is_created_with() {
    let mut w = World::new();
    let nodes = builtin("", "nodes");
    let node = w.create(
        &nodes,
        None,
        json!({"metadata": {"name": "n1"}, "status": {
            "capacity": {"cpu": "4", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        }}),
    );
    let status = &node.data["status"];
    // A condition's times are `metav1.Time` structs: `null` when not set.
    assert_eq!(
        status["conditions"],
        json!([{"type": "Ready", "status": "True", "lastHeartbeatTime": null, "lastTransitionTime": null}])
    );
    assert_eq!(status["capacity"], json!({"cpu": "4", "pods": "110"}));
    assert_eq!(status["allocatable"], json!({"cpu": "4", "pods": "110"}));
    assert_eq!(status["daemonEndpoints"], json!({"kubeletEndpoint": {"Port": 0}}));
    assert_eq!(status["nodeInfo"]["kubeletVersion"], json!(""));
    assert_eq!(status["nodeInfo"]["machineID"], json!(""));
}

/// `persistentvolumeStrategy`: a new volume is Pending since now, and a status write that
/// changes the phase moves `lastPhaseTransitionTime` to now.
#[test]
fn a_persistent_volume_records_when_its_phase_changes() {
    let mut w = World::new();
    let pvs = builtin("", "persistentvolumes");
    let pv = w.create(
        &pvs,
        None,
        json!({"metadata": {"name": "pv1"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"},
        }}),
    );
    let created_at = pv.metadata.creation_timestamp.clone().unwrap();
    assert_eq!(pv.data["status"]["phase"], json!("Pending"));
    assert_eq!(pv.data["status"]["lastPhaseTransitionTime"], json!(created_at));
    w.advance_seconds(30);
    let available = object(
        w.handle(
            Request::patch(
                &pvs,
                None,
                "pv1",
                Patch::Merge(json!({"status": {"phase": "Available"}})),
                PatchParams::default(),
            )
            .with_subresource(Subresource::Status),
        )
        .unwrap(),
    );
    assert_eq!(available.data["status"]["phase"], json!("Available"));
    let moved = available.data["status"]["lastPhaseTransitionTime"].as_str().unwrap().to_owned();
    assert_ne!(json!(moved), json!(created_at), "the phase changed 30 s later");
    let labelled = object(
        w.handle(
            Request::patch(
                &pvs,
                None,
                "pv1",
                Patch::Merge(json!({"status": {"message": "ok"}})),
                PatchParams::default(),
            )
            .with_subresource(Subresource::Status),
        )
        .unwrap(),
    );
    assert_eq!(labelled.data["status"]["lastPhaseTransitionTime"], json!(moved), "same phase, same time");
}
