//! Defaulting of built-in kinds, as the real server fills fields in on create and update.

#[path = "common/mod.rs"]
mod common;

use common::*;
use model_apiserver::ServerConfig;
use serde_json::{Value, json};

fn pod(containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
}

#[test]
fn a_pod_gets_the_real_servers_spec_and_container_defaults() {
    let mut w = World::new();
    let p = w.create(
        &pods(),
        Some("default"),
        pod(json!([{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}])),
    );
    assert_eq!(
        p.data["spec"],
        json!({
            "containers": [{
                "name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30,
        })
    );
}

#[test]
fn image_pull_policy_is_always_for_latest_or_untagged_images_and_if_not_present_otherwise() {
    let mut w = World::new();
    let images = [
        "nginx",
        "nginx:latest",
        "registry:5000/nginx",
        "nginx:1.0",
        "registry:5000/nginx:1.0",
        "nginx@sha256:abc",
    ];
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    let p = w.create(&pods(), Some("default"), pod(json!(containers)));
    let policies: Vec<&str> = p.data["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["imagePullPolicy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, ["Always", "Always", "Always", "IfNotPresent", "IfNotPresent", "IfNotPresent"]);
}

#[test]
fn a_pods_qos_class_follows_its_requests_and_limits() {
    let mut w = World::new();
    let cases = [
        (json!({}), "BestEffort"),
        (json!({"requests": {"cpu": "100m"}}), "Burstable"),
        (json!({"limits": {"cpu": "1", "memory": "1Gi"}}), "Guaranteed"),
        (json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}), "Burstable"),
    ];
    for (i, (resources, want)) in cases.into_iter().enumerate() {
        let mut body = pod(json!([{"name": "c", "image": "i:1", "resources": resources}]));
        body["metadata"]["name"] = json!(format!("p{i}"));
        let p = w.create(&pods(), Some("default"), body);
        assert_eq!(p.data["status"]["qosClass"], json!(want), "case {i}");
    }
}

#[test]
fn a_deployment_gets_strategy_limits_and_template_defaults() {
    let mut w = World::new();
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let d = w.create(&deployments(), Some("default"), body);
    let spec = &d.data["spec"];
    assert_eq!(spec["replicas"], json!(1));
    assert_eq!(spec["revisionHistoryLimit"], json!(10));
    assert_eq!(spec["progressDeadlineSeconds"], json!(600));
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["template"]["spec"]["restartPolicy"], json!("Always"));
    assert_eq!(spec["template"]["spec"]["containers"][0]["imagePullPolicy"], json!("Always"));
    // enableServiceLinks is a Pod default, not a PodSpec one: templates do not get it.
    assert_eq!(spec["template"]["spec"].get("enableServiceLinks"), None);
}

#[test]
fn an_update_that_drops_a_defaulted_field_gets_it_back_and_changes_nothing() {
    let mut w = World::new();
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    let d = w.create(&deployments(), Some("default"), body);
    let same = w
        .try_merge(&deployments(), Some("default"), "d", json!({"spec": {"revisionHistoryLimit": null}}))
        .unwrap();
    assert_eq!(same.data["spec"]["revisionHistoryLimit"], json!(10));
    assert_eq!(rv(&same), rv(&d));
}

/// A StatefulSet `s` with one volume claim template `data`, leaving every defaulted field out.
fn statefulset_with_a_claim_template() -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}}, "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}]}})
}

#[test]
fn a_statefulset_and_a_job_get_their_defaults() {
    let mut w = World::new();
    let sts = builtin("apps", "statefulsets");
    let s = w.create(&sts, Some("default"), statefulset_with_a_claim_template());
    let spec = &s.data["spec"];
    assert_eq!(spec["podManagementPolicy"], json!("OrderedReady"));
    assert_eq!(spec["updateStrategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(spec["volumeClaimTemplates"][0]["spec"]["volumeMode"], json!("Filesystem"));
    let jobs = builtin("batch", "jobs");
    let body = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}}});
    let j = w.create(&jobs, Some("default"), body);
    let spec = &j.data["spec"];
    assert_eq!(
        (
            &spec["completions"],
            &spec["parallelism"],
            &spec["backoffLimit"],
            &spec["completionMode"],
            &spec["suspend"]
        ),
        (&json!(1), &json!(1), &json!(6), &json!("NonIndexed"), &json!(false))
    );
    assert_eq!(spec["template"]["spec"]["restartPolicy"], json!("Never"));
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn a_service_gets_defaults_and_a_cluster_ip_it_keeps() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let s = w.create(
        &svcs,
        Some("default"),
        service("s", json!({"selector": {"app": "a"}, "ports": [{"port": 80}]})),
    );
    let spec = &s.data["spec"];
    assert_eq!(spec["type"], json!("ClusterIP"));
    assert_eq!(spec["sessionAffinity"], json!("None"));
    assert_eq!(spec["ports"], json!([{"port": 80, "protocol": "TCP", "targetPort": 80}]));
    let ip = spec["clusterIP"].as_str().unwrap().to_owned();
    assert!(ip.starts_with("10.96."), "{ip}");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    // A controller that replaces the spec without the IP keeps it.
    let mut body = (*s).clone();
    body.data["spec"] = json!({"selector": {"app": "b"}, "ports": [{"port": 80}]});
    let updated = w.try_update(&svcs, Some("default"), body).unwrap();
    assert_eq!(updated.data["spec"]["clusterIP"], json!(ip));
    let err =
        w.try_merge(&svcs, Some("default"), "s", json!({"spec": {"clusterIP": "10.96.0.1"}})).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: \"10.96.0.1\": may not change once set"
    );
}

#[test]
fn a_headless_service_keeps_cluster_ip_none() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let s = w.create(&svcs, Some("default"), service("h", json!({"clusterIP": "None"})));
    assert_eq!(
        (&s.data["spec"]["clusterIP"], &s.data["spec"]["clusterIPs"]),
        (&json!("None"), &json!(["None"]))
    );
}

#[test]
fn claims_secrets_and_namespaces_get_their_defaults() {
    let mut w = World::new();
    let pvcs = builtin("", "persistentvolumeclaims");
    let c = w.create(
        &pvcs,
        Some("default"),
        json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
               "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(
        (&c.data["spec"]["volumeMode"], &c.data["status"]),
        (&json!("Filesystem"), &json!({"phase": "Pending"}))
    );
    let secrets = builtin("", "secrets");
    let s = w.create(&secrets, Some("default"), json!({"metadata": {"name": "s"}}));
    assert_eq!(s.data["type"], json!("Opaque"));
    let ns = w.create(&namespaces(), None, json!({"metadata": {"name": "team"}}));
    assert_eq!(
        ns.metadata.labels.clone().unwrap().get("kubernetes.io/metadata.name").map(String::as_str),
        Some("team")
    );
}

#[test]
fn a_persistent_volume_is_retained_and_a_filesystem_by_default() {
    let mut w = World::new();
    let pvs = builtin("", "persistentvolumes");
    let v = w.create(
        &pvs,
        None,
        json!({"metadata": {"name": "v"}, "spec": {"accessModes": ["ReadWriteOnce"],
               "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data/v"}}}),
    );
    assert_eq!(
        (
            &v.data["spec"]["persistentVolumeReclaimPolicy"],
            &v.data["spec"]["volumeMode"],
            &v.data["status"]["phase"]
        ),
        (&json!("Retain"), &json!("Filesystem"), &json!("Pending"))
    );
}

#[test]
fn builtin_defaults_can_be_turned_off() {
    let mut w = World::with_config(ServerConfig { builtin_defaults: false, ..Default::default() });
    let p = w.create(&pods(), Some("default"), pod(json!([{"name": "c", "image": "i"}])));
    // Encoding is not defaulting: a container's resources are a struct, never a pointer, so
    // they are there (`{}`) whatever the defaults.
    assert_eq!(p.data["spec"], json!({"containers": [{"name": "c", "image": "i", "resources": {}}]}));
}

#[test]
fn a_job_selects_its_pods_by_a_generated_controller_uid_selector() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let body = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}}});
    let j = w.create(&jobs, Some("default"), body);
    let uid = j.metadata.uid.clone().unwrap();
    assert_eq!(
        j.data["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(
        j.data["spec"]["template"]["metadata"]["labels"],
        json!({"job-name": "j", "batch.kubernetes.io/job-name": "j", "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid})
    );
}

// core/v1 SetObjectDefaults_Pod (zz_generated.defaults.go): SetDefaults_Probe, SetDefaults_HTTPGetAction,
// the gRPC action's `+default=""` service, SetDefaults_ObjectFieldSelector on env and downward API
// items, SetDefaults_Volume (no source is an emptyDir), the volume sources' defaultMode 0644 (420),
// SetDefaults_HostPathVolumeSource, SetDefaults_ServiceAccountTokenProjection (one hour) and
// SetDefaults_PersistentVolumeClaimSpec inside an ephemeral volume's claim template.
#[test]
fn a_pod_gets_probe_lifecycle_env_and_volume_defaults() {
    let mut w = World::new();
    let mut body = pod(json!([{
        "name": "c", "image": "i:1",
        "livenessProbe": {"httpGet": {"port": 80}},
        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
        "startupProbe": {"grpc": {"port": 9000}},
        "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/quit"}}, "postStart": {"exec": {"command": ["x"]}}},
        "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, {"name": "B", "value": "b"}],
    }]));
    body["spec"]["volumes"] = json!([
        {"name": "empty"},
        {"name": "s", "secret": {"secretName": "x"}},
        {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
        {"name": "d", "downwardAPI": {"items": [{"path": "a", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "pr", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
            {"downwardAPI": {"items": [{"path": "b", "fieldRef": {"fieldPath": "metadata.uid"}}]}}]}},
        {"name": "h", "hostPath": {"path": "/x"}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}}},
    ]);
    let p = w.create(&pods(), Some("default"), body);
    let c = &p.data["spec"]["containers"][0];
    let probe = |handler: Value| {
        let mut p =
            json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        p.as_object_mut().unwrap().extend(handler.as_object().unwrap().clone());
        p
    };
    assert_eq!(c["livenessProbe"], probe(json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}})));
    assert_eq!(c["readinessProbe"], probe(json!({"exec": {"command": ["true"]}, "periodSeconds": 5})));
    assert_eq!(c["startupProbe"], probe(json!({"grpc": {"port": 9000, "service": ""}})));
    assert_eq!(
        c["lifecycle"],
        json!({"preStop": {"httpGet": {"port": 8080, "path": "/quit", "scheme": "HTTP"}},
               "postStart": {"exec": {"command": ["x"]}}})
    );
    assert_eq!(
        c["env"],
        json!([{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
               {"name": "B", "value": "b"}])
    );
    assert_eq!(
        p.data["spec"]["volumes"],
        json!([
            {"name": "empty", "emptyDir": {}},
            {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
            {"name": "cm", "configMap": {"name": "x", "defaultMode": 256}},
            {"name": "d", "downwardAPI": {"defaultMode": 420,
                "items": [{"path": "a", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}},
            {"name": "pr", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}},
                {"downwardAPI": {"items": [{"path": "b", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}]}}]}},
            {"name": "h", "hostPath": {"path": "/x", "type": ""}},
            {"name": "e", "ephemeral": {"volumeClaimTemplate": {"metadata": {},
                "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"}}}},
        ])
    );
}

// core/v1 SetDefaults_Pod: limits without requests become the requests, on Pods only ("we only
// want this defaulting semantic to take place on a v1.Pod and not a v1.PodTemplate"), and with
// hostNetwork a container port's hostPort defaults to its containerPort (defaultHostNetworkPorts).
#[test]
fn a_pods_limits_default_its_requests_and_host_network_its_host_ports() {
    let mut w = World::new();
    let mut body = pod(json!([{"name": "c", "image": "i:1",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 9081}]}]));
    body["spec"]["initContainers"] =
        json!([{"name": "i", "image": "i:1", "resources": {"limits": {"cpu": "2"}}}]);
    body["spec"]["hostNetwork"] = json!(true);
    let p = w.create(&pods(), Some("default"), body);
    let spec = &p.data["spec"];
    assert_eq!(spec["containers"][0]["resources"]["requests"], json!({"cpu": "500m", "memory": "1Gi"}));
    assert_eq!(spec["initContainers"][0]["resources"]["requests"], json!({"cpu": "2"}));
    assert_eq!(
        spec["containers"][0]["ports"],
        json!([{"containerPort": 80, "hostPort": 80, "protocol": "TCP"},
               {"containerPort": 81, "hostPort": 9081, "protocol": "TCP"}])
    );
    // A template's limits stay alone.
    let rs = builtin("apps", "replicasets");
    let r = w.create(
        &rs,
        Some("default"),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                   "spec": {"containers": [{"name": "c", "image": "i:1", "resources": {"limits": {"cpu": "1"}}}]}}}}),
    );
    assert_eq!(
        r.data["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1"}})
    );
}

// apps/v1 SetObjectDefaults_StatefulSet calls SetDefaults_PersistentVolumeClaim on every volume
// claim template, so each starts with `status.phase: Pending` as a created claim does.
#[test]
fn a_statefulsets_volume_claim_templates_get_the_pending_phase() {
    let mut w = World::new();
    let sts = builtin("apps", "statefulsets");
    let s = w.create(&sts, Some("default"), statefulset_with_a_claim_template());
    assert_eq!(s.data["spec"]["volumeClaimTemplates"][0]["status"], json!({"phase": "Pending"}));
}

fn node_ports(s: &kube_core::DynamicObject) -> Vec<i64> {
    s.data["spec"]["ports"].as_array().unwrap().iter().map(|p| p["nodePort"].as_i64().unwrap_or(0)).collect()
}

// core/v1 SetDefaults_Service: ClientIP affinity gets a 10800 s timeout and None drops the
// config; externally accessible Services (NodePort, LoadBalancer, or ClusterIP with external IPs,
// `service.ExternallyAccessible`) get the Cluster external traffic policy; a LoadBalancer
// allocates node ports unless told not to.
#[test]
fn a_service_gets_session_affinity_traffic_policy_and_load_balancer_defaults() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let lb = w.create(
        &svcs,
        Some("default"),
        service(
            "lb",
            json!({"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}),
        ),
    );
    let spec = &lb.data["spec"];
    assert_eq!(spec["sessionAffinityConfig"], json!({"clientIP": {"timeoutSeconds": 10800}}));
    assert_eq!(spec["allocateLoadBalancerNodePorts"], json!(true));
    assert_eq!(spec["externalTrafficPolicy"], json!("Cluster"));
    let ext = w.create(
        &svcs,
        Some("default"),
        service(
            "ext",
            json!({"externalIPs": ["192.0.2.1"], "ports": [{"port": 80}],
                              "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
        ),
    );
    let spec = &ext.data["spec"];
    assert_eq!(spec["externalTrafficPolicy"], json!("Cluster"));
    assert_eq!(spec.get("sessionAffinityConfig"), None);
    assert_eq!(spec.get("allocateLoadBalancerNodePorts"), None);
}

// The Service REST allocates a node port (30000-32767) to every port of a NodePort or
// LoadBalancer Service that names none, and a health check node port to a LoadBalancer with the
// Local policy; an update keeps them by port name (`patchAllocatedValues`,
// pkg/registry/core/service/storage/storage.go), and a switch to ClusterIP that leaves them as
// they were drops them (`dropTypeDependentFields`, pkg/registry/core/service/strategy.go).
#[test]
fn node_ports_are_allocated_kept_across_updates_and_dropped_with_the_type() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let spec = json!({"type": "NodePort", "selector": {"a": "b"},
                      "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30443}]});
    let s = w.create(&svcs, Some("default"), service("np", spec.clone()));
    let ports = node_ports(&s);
    assert!((30000..=32767).contains(&ports[0]), "{ports:?}");
    assert_eq!(ports[1], 30443);
    // Resubmitting the manifest without node ports keeps the allocated ones: nothing changes.
    let mut body = (*s).clone();
    body.data["spec"] = spec;
    let same = w.try_update(&svcs, Some("default"), body).unwrap();
    assert_eq!(node_ports(&same), ports);
    assert_eq!(rv(&same), rv(&s));
    // Switching to ClusterIP with the node ports as stored drops them.
    let mut body = (*same).clone();
    body.data["spec"]["type"] = json!("ClusterIP");
    let cluster = w.try_update(&svcs, Some("default"), body).unwrap();
    assert_eq!(node_ports(&cluster), vec![0, 0]);
    assert_eq!(cluster.data["spec"].get("externalTrafficPolicy"), None);
    let local = w.create(
        &svcs,
        Some("default"),
        service(
            "local",
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}),
        ),
    );
    let hc = local.data["spec"]["healthCheckNodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&hc), "{hc}");
    let none = w.create(
        &svcs,
        Some("default"),
        service(
            "none",
            json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}),
        ),
    );
    assert_eq!(node_ports(&none), vec![0]);
}

// batch/v1 SetDefaults_Job (pkg/apis/batch/v1/defaults.go): backoffLimit MaxInt32 when
// backoffLimitPerIndex is set, podReplacementPolicy Failed when a podFailurePolicy is set, and a
// pod-condition pattern's status True.
#[test]
fn a_job_gets_its_backoff_and_replacement_defaults() {
    let mut w = World::new();
    let jobs = builtin("batch", "jobs");
    let job = |name: &str, extra: Value| {
        let mut spec = json!({"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}});
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})
    };
    let plain = w.create(&jobs, Some("default"), job("plain", json!({})));
    assert_eq!(plain.data["spec"]["podReplacementPolicy"], json!("TerminatingOrFailed"));
    let per_index = w.create(
        &jobs,
        Some("default"),
        job("per-index", json!({"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1})),
    );
    assert_eq!(per_index.data["spec"]["backoffLimit"], json!(2147483647));
    let policy = w.create(
        &jobs,
        Some("default"),
        job("policy", json!({"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}})),
    );
    assert_eq!(policy.data["spec"]["podReplacementPolicy"], json!("Failed"));
    assert_eq!(
        policy.data["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"],
        json!([{"type": "DisruptionTarget", "status": "True"}])
    );
}

// The allocators hold every Service's cluster IP and node ports: another Service asking for one
// of them is refused in the Service REST's words, and a Service keeps its own across updates.
#[test]
fn a_cluster_ip_or_node_port_another_service_holds_is_refused() {
    let mut w = World::new();
    let svcs = builtin("", "services");
    let first = w.create(
        &svcs,
        Some("default"),
        service(
            "a",
            json!({"type": "NodePort", "selector": {"app": "a"}, "ports": [{"port": 80, "nodePort": 30080}]}),
        ),
    );
    let ip = first.data["spec"]["clusterIP"].as_str().unwrap().to_owned();
    let err = w
        .try_create(
            &svcs,
            Some("kube-public"),
            service("b", json!({"type": "NodePort", "ports": [{"name": "x", "port": 81, "nodePort": 31000}, {"name": "y", "port": 80, "nodePort": 30080}]})),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Service \"b\" is invalid: spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated"
    );
    let err = w
        .try_create(
            &svcs,
            Some("default"),
            service("c", json!({"clusterIP": ip.clone(), "ports": [{"port": 80}]})),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "Service \"c\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: \
             provided IP is already allocated"
        )
    );
    // Its own values are no collision: an update that keeps them, and one that moves its port.
    let mut body = (*first).clone();
    body.data["spec"]["ports"] =
        json!([{"name": "x", "port": 80, "nodePort": 30080}, {"name": "y", "port": 81, "nodePort": 30081}]);
    let updated = w.try_update(&svcs, Some("default"), body).unwrap();
    assert_eq!(node_ports(&updated), [30080, 30081]);
    // Once `a` lets 30080 go, another Service may take it.
    let mut body = (*updated).clone();
    body.data["spec"]["ports"] = json!([{"port": 80, "nodePort": 30090}]);
    w.try_update(&svcs, Some("default"), body).unwrap();
    w.create(
        &svcs,
        Some("kube-public"),
        service("e", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]})),
    );
}

#[test]
fn a_limit_ranges_container_items_get_their_default_limits_and_requests() {
    // SetDefaults_LimitRangeItem: max fills a missing default limit, the default limit a missing
    // default request, then min a request still missing; other item types and the given values
    // are kept, and nothing empty is added.
    let mut w = World::new();
    let range = w.create(
        &builtin("", "limitranges"),
        Some("default"),
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"ephemeral-storage": "1Gi"},
             "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "250m"}},
            {"type": "Container", "min": {"cpu": "100m"}},
            {"type": "Container"},
            {"type": "Pod", "max": {"cpu": "4"}},
        ]}}),
    );
    assert_eq!(
        range.data["spec"]["limits"],
        json!([
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"ephemeral-storage": "1Gi"},
             "default": {"cpu": "500m", "memory": "1Gi"},
             "defaultRequest": {"cpu": "250m", "ephemeral-storage": "1Gi", "memory": "1Gi"}},
            {"type": "Container", "min": {"cpu": "100m"}, "defaultRequest": {"cpu": "100m"}},
            {"type": "Container"},
            {"type": "Pod", "max": {"cpu": "4"}},
        ])
    );
}
