//! The tests of `model_apiserver_http::table` (its former unit tests: the library has no test harness).

use model_apiserver_http::table::{Include, Options, jsonpath, typed_cell};
use serde_json::json;

fn now() -> jiff::Timestamp {
    "2026-01-01T00:10:00Z".parse().unwrap()
}

#[test]
fn jsonpath_reads_fields_quoted_keys_indices_and_wildcards() {
    let o = json!({"spec": {"a.b": 1, "ports": [{"port": 80}, {"port": 443}]}});
    assert_eq!(jsonpath::find(&o, ".spec['a.b']"), [&json!(1)]);
    assert_eq!(jsonpath::find(&o, "{.spec.ports[1].port}"), [&json!(443)]);
    assert_eq!(jsonpath::find(&o, ".spec.ports[*].port"), [&json!(80), &json!(443)]);
    assert!(jsonpath::find(&o, ".spec.missing").is_empty());
}

#[test]
fn a_malformed_jsonpath_finds_nothing_instead_of_panicking() {
    let o = json!({"spec": {"ports": [1]}});
    for path in ["spec", ".spec.ports[", ".spec.ports[x]", "..spec", ".spec.ports[99999999999999999999]"] {
        assert!(jsonpath::find(&o, path).is_empty(), "{path}");
    }
}

#[test]
fn cells_follow_the_column_type_and_a_date_prints_as_an_age() {
    assert_eq!(typed_cell("integer", &[&json!(3)], now()), json!(3));
    assert_eq!(typed_cell("integer", &[&json!("3")], now()), json!(null));
    assert_eq!(typed_cell("string", &[&json!(true)], now()), json!("true"));
    assert_eq!(typed_cell("date", &[&json!("2026-01-01T00:05:00Z")], now()), json!("5m"));
    assert_eq!(typed_cell("date", &[&json!("yesterday")], now()), json!("<invalid>"));
    assert_eq!(typed_cell("string", &[&json!("a"), &json!(2)], now()), json!("a,2"));
    assert_eq!(typed_cell("string", &[], now()), json!(null));
}

/// The built-in printers' Table for one object: its column names (with priorities) and cells.
fn printed(
    api_version: &str,
    kind: &str,
    object: serde_json::Value,
) -> (Vec<(String, i64)>, Vec<serde_json::Value>) {
    let types = model_apiserver::ResourceTypes::builtin();
    let ty = types.by_kind(api_version, kind).unwrap_or_else(|| panic!("{api_version} {kind} is served"));
    let mut object = object;
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    if object.pointer("/metadata/creationTimestamp").is_none() {
        object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:05:00Z");
    }
    let object: kube_core::DynamicObject = serde_json::from_value(object).unwrap();
    let options = Options { ty, crd: None, include: Include::Metadata, headers: true };
    let table =
        model_apiserver_http::table::table(&options, &[std::sync::Arc::new(object)], json!({}), now());
    let columns = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["priority"].as_i64().unwrap()))
        .collect();
    (columns, table["rows"][0]["cells"].as_array().unwrap().clone())
}

/// The column names, each with its priority (1 is `-o wide`).
fn names(columns: &[(&str, i64)]) -> Vec<(String, i64)> {
    columns.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
}

#[test]
fn a_pdb_prints_min_available_max_unavailable_as_n_a_when_unset_and_allowed_disruptions() {
    let pdb = json!({"metadata": {"name": "db"}, "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 2}});
    let (columns, cells) = printed("policy/v1", "PodDisruptionBudget", pdb);
    let expected =
        [("Name", 0), ("Min Available", 0), ("Max Unavailable", 0), ("Allowed Disruptions", 0), ("Age", 0)];
    assert_eq!(columns, names(&expected));
    assert_eq!(cells, [json!("db"), json!("50%"), json!("N/A"), json!(2), json!("5m")]);
    let pdb = json!({"metadata": {"name": "db"}, "spec": {"maxUnavailable": 1}});
    let (_, cells) = printed("policy/v1", "PodDisruptionBudget", pdb);
    assert_eq!(cells[1..4], [json!("N/A"), json!("1"), json!(0)]);
}

#[test]
fn an_hpa_prints_its_reference_targets_with_resource_names_and_unset_min_pods() {
    let hpa = json!({
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
            ],
        },
        "status": {
            "currentReplicas": 3,
            "desiredReplicas": 3,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}],
        },
    });
    let (columns, cells) = printed("autoscaling/v2", "HorizontalPodAutoscaler", hpa);
    let expected = [
        ("Name", 0),
        ("Reference", 0),
        ("Targets", 0),
        ("MinPods", 0),
        ("MaxPods", 0),
        ("Replicas", 0),
        ("Age", 0),
    ];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells,
        [
            json!("web"),
            json!("Deployment/web"),
            json!("cpu: 42%/80%, memory: <unknown>/100Mi + 1 more..."),
            json!("<unset>"),
            json!(5),
            json!(3),
            json!("5m"),
        ]
    );
}

#[test]
fn an_hpa_without_metrics_prints_none_and_an_external_average_target_says_avg() {
    let hpa = json!({"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 4}});
    let (_, cells) = printed("autoscaling/v2", "HorizontalPodAutoscaler", hpa);
    assert_eq!(cells[2..4], [json!("<none>"), json!("2")]);
    let hpa = json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 4, "metrics": [
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
    ]}});
    let (_, cells) = printed("autoscaling/v2", "HorizontalPodAutoscaler", hpa);
    assert_eq!(cells[2], json!("<unknown>/30 (avg)"));
    // A status without the current value prints Go's nil quantity.
    let hpa = json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 4, "metrics": [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
    ]}, "status": {"currentMetrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {}}}]}});
    let (_, cells) = printed("autoscaling/v2", "HorizontalPodAutoscaler", hpa);
    assert_eq!(cells[2], json!("<nil>/10"));
}

#[test]
fn an_ingress_prints_class_hosts_address_and_the_tls_ports() {
    let ingress = json!({
        "metadata": {"name": "web"},
        "spec": {
            "ingressClassName": "nginx",
            "tls": [{"hosts": ["a.example.com"]}],
            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {}, {"host": "c.example.com"}, {"host": "d.example.com"}],
        },
        "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}]}},
    });
    let (columns, cells) = printed("networking.k8s.io/v1", "Ingress", ingress);
    let expected = [("Name", 0), ("Class", 0), ("Hosts", 0), ("Address", 0), ("Ports", 0), ("Age", 0)];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells[1..5],
        [
            json!("nginx"),
            json!("a.example.com,b.example.com,c.example.com + 2 more..."),
            json!("10.0.0.1,lb.example.com"),
            json!("80, 443"),
        ]
    );
    let (_, cells) =
        printed("networking.k8s.io/v1", "Ingress", json!({"metadata": {"name": "web"}, "spec": {}}));
    assert_eq!(cells[1..5], [json!("<none>"), json!("*"), json!(""), json!("80")]);
}

#[test]
fn a_node_prints_status_roles_version_and_wide_addresses_and_system_info() {
    let node = json!({
        "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"}},
        "spec": {"unschedulable": true},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "Debian", "kernelVersion": "", "containerRuntimeVersion": "containerd://2.0"},
        },
    });
    let (columns, cells) = printed("v1", "Node", node);
    let expected = [
        ("Name", 0),
        ("Status", 0),
        ("Roles", 0),
        ("Age", 0),
        ("Version", 0),
        ("Internal-IP", 1),
        ("External-IP", 1),
        ("OS-Image", 1),
        ("Kernel-Version", 1),
        ("Container-Runtime", 1),
    ];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells[1..],
        [
            json!("NotReady,SchedulingDisabled"),
            json!("control-plane,infra"),
            json!("5m"),
            json!("v1.31.0"),
            json!("10.0.0.5"),
            json!("<none>"),
            json!("Debian"),
            json!("<unknown>"),
            json!("containerd://2.0"),
        ]
    );
    let (_, cells) = printed("v1", "Node", json!({"metadata": {"name": "n2"}}));
    assert_eq!(cells[1..3], [json!("Unknown"), json!("<none>")]);
}

#[test]
fn a_persistent_volume_prints_capacity_modes_claim_and_unset_attribute_class() {
    let pv = json!({
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "data"},
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound"},
    });
    let (columns, cells) = printed("v1", "PersistentVolume", pv);
    let expected = [
        ("Name", 0),
        ("Capacity", 0),
        ("Access Modes", 0),
        ("Reclaim Policy", 0),
        ("Status", 0),
        ("Claim", 0),
        ("StorageClass", 0),
        ("VolumeAttributesClass", 0),
        ("Reason", 0),
        ("Age", 0),
        ("VolumeMode", 1),
    ];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells[1..],
        [
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("default/data"),
            json!("standard"),
            json!("<unset>"),
            json!(""),
            json!("5m"),
            json!("Filesystem"),
        ]
    );
}

#[test]
fn a_network_policy_prints_its_pod_selector_sorted_by_key_or_none_for_all_pods() {
    let policy = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {
        "matchLabels": {"tier": "db"},
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["b", "a"]}, {"key": "canary", "operator": "DoesNotExist"}],
    }}});
    let (columns, cells) = printed("networking.k8s.io/v1", "NetworkPolicy", policy);
    assert_eq!(columns, names(&[("Name", 0), ("Pod-Selector", 0), ("Age", 0)]));
    assert_eq!(cells[1], json!("app in (a,b),!canary,tier=db"));
    let (_, cells) = printed(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        json!({"metadata": {"name": "all"}, "spec": {"podSelector": {}}}),
    );
    assert_eq!(cells[1], json!("<none>"));
}

#[test]
fn a_default_storage_class_is_marked_on_its_name_and_unset_fields_print_their_defaults() {
    let class = json!({
        "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path",
    });
    let (columns, cells) = printed("storage.k8s.io/v1", "StorageClass", class);
    let expected = [
        ("Name", 0),
        ("Provisioner", 0),
        ("ReclaimPolicy", 0),
        ("VolumeBindingMode", 0),
        ("AllowVolumeExpansion", 0),
        ("Age", 0),
    ];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells,
        [
            json!("standard (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("Immediate"),
            json!(false),
            json!("5m")
        ]
    );
}

#[test]
fn an_ingress_class_prints_its_controller_and_parameters_reference() {
    let class = json!({"metadata": {"name": "nginx"}, "spec": {
        "controller": "k8s.io/ingress-nginx",
        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"},
    }});
    let (columns, cells) = printed("networking.k8s.io/v1", "IngressClass", class);
    assert_eq!(columns, names(&[("Name", 0), ("Controller", 0), ("Parameters", 0), ("Age", 0)]));
    assert_eq!(
        cells[1..3],
        [json!("k8s.io/ingress-nginx"), json!("IngressParameters.k8s.example.com/external-lb")]
    );
}

#[test]
fn endpoints_print_ready_addresses_with_ports_at_most_three() {
    let endpoints = json!({"metadata": {"name": "web"}, "subsets": [{
        "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
        "notReadyAddresses": [{"ip": "10.0.0.9"}],
        "ports": [{"port": 80}, {"port": 443}],
    }]});
    let (columns, cells) = printed("v1", "Endpoints", endpoints);
    assert_eq!(columns, names(&[("Name", 0), ("Endpoints", 0), ("Age", 0)]));
    assert_eq!(cells[1], json!("10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more..."));
    let (_, cells) = printed("v1", "Endpoints", json!({"metadata": {"name": "none"}}));
    assert_eq!(cells[1], json!("<none>"));
}

#[test]
fn an_endpoint_slice_prints_address_type_ports_and_endpoints_or_unset() {
    let slice = json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
    let (columns, cells) = printed("discovery.k8s.io/v1", "EndpointSlice", slice);
    assert_eq!(
        columns,
        names(&[("Name", 0), ("AddressType", 0), ("Ports", 0), ("Endpoints", 0), ("Age", 0)])
    );
    assert_eq!(cells[1..4], [json!("IPv4"), json!("80,x,*"), json!("10.0.0.1,10.0.0.2")]);
    let (_, cells) = printed(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": []}),
    );
    assert_eq!(cells[2..4], [json!("<unset>"), json!("<unset>")]);
}

#[test]
fn service_accounts_leases_priority_classes_and_webhooks_print_their_one_field() {
    let (columns, cells) =
        printed("v1", "ServiceAccount", json!({"metadata": {"name": "robot"}, "secrets": [{"name": "t"}]}));
    assert_eq!((columns, cells[1].clone()), (names(&[("Name", 0), ("Secrets", 0), ("Age", 0)]), json!(1)));
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "pod-1"}});
    let (columns, cells) = printed("coordination.k8s.io/v1", "Lease", lease);
    assert_eq!(
        (columns, cells[1].clone()),
        (names(&[("Name", 0), ("Holder", 0), ("Age", 0)]), json!("pod-1"))
    );
    let class = json!({"metadata": {"name": "high"}, "value": 1000, "globalDefault": true, "preemptionPolicy": "Never"});
    let (columns, cells) = printed("scheduling.k8s.io/v1", "PriorityClass", class);
    assert_eq!(
        columns,
        names(&[("Name", 0), ("Value", 0), ("Global-Default", 0), ("Age", 0), ("PreemptionPolicy", 0)])
    );
    assert_eq!(cells[1..], [json!(1000), json!(true), json!("5m"), json!("Never")]);
    let hooks = json!({"metadata": {"name": "check"}, "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]});
    let (columns, cells) =
        printed("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", hooks);
    assert_eq!((columns, cells[1].clone()), (names(&[("Name", 0), ("Webhooks", 0), ("Age", 0)]), json!(2)));
}

#[test]
fn a_controller_revision_names_its_controller_with_kind_and_group() {
    let revision = json!({"metadata": {"name": "web-7d9", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true},
    ]}, "revision": 3});
    let (columns, cells) = printed("apps/v1", "ControllerRevision", revision);
    assert_eq!(columns, names(&[("Name", 0), ("Controller", 0), ("Revision", 0), ("Age", 0)]));
    assert_eq!(cells[1..3], [json!("statefulset.apps/web"), json!(3)]);
}

#[test]
fn roles_print_created_at_and_bindings_print_role_and_wide_subjects() {
    let (columns, cells) =
        printed("rbac.authorization.k8s.io/v1", "ClusterRole", json!({"metadata": {"name": "view"}}));
    assert_eq!(
        (columns, cells[1].clone()),
        (names(&[("Name", 0), ("Created At", 0)]), json!("2026-01-01T00:05:00Z"))
    );
    let binding = json!({"metadata": {"name": "b", "namespace": "default"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}, "subjects": [
        {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
        {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "robot", "namespace": "ci"},
    ]});
    let (columns, cells) = printed("rbac.authorization.k8s.io/v1", "RoleBinding", binding);
    let expected =
        [("Name", 0), ("Role", 0), ("Age", 0), ("Users", 1), ("Groups", 1), ("ServiceAccounts", 1)];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells[1..],
        [json!("ClusterRole/view"), json!("5m"), json!("alice, bob"), json!("devs"), json!("ci/robot")]
    );
}

#[test]
fn a_resource_quota_splits_requests_from_limits_and_a_pod_template_lists_its_containers() {
    let quota = json!({"metadata": {"name": "q"}, "status": {
        "hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1"},
        "used": {"pods": "3", "requests.cpu": "500m"},
    }});
    let (columns, cells) = printed("v1", "ResourceQuota", quota);
    assert_eq!(columns, names(&[("Name", 0), ("Request", 0), ("Limit", 0), ("Age", 0)]));
    assert_eq!(cells[1..3], [json!("pods: 3/10, requests.cpu: 500m/1"), json!("limits.cpu: 0/2")]);
    let template = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}}, "spec": {
        "containers": [{"name": "app", "image": "nginx"}, {"name": "log", "image": "busybox"}],
    }}});
    let (columns, cells) = printed("v1", "PodTemplate", template);
    assert_eq!(columns, names(&[("Name", 0), ("Containers", 0), ("Images", 0), ("Pod Labels", 0)]));
    assert_eq!(cells[1..], [json!("app,log"), json!("nginx,busybox"), json!("a=1,b=2")]);
}

#[test]
fn a_pvc_prints_capacity_and_modes_only_once_bound_and_its_unset_attribute_class() {
    let pending = json!({"metadata": {"name": "data"}, "spec": {"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}});
    let (columns, cells) = printed("v1", "PersistentVolumeClaim", pending);
    let expected = [
        ("Name", 0),
        ("Status", 0),
        ("Volume", 0),
        ("Capacity", 0),
        ("Access Modes", 0),
        ("StorageClass", 0),
        ("VolumeAttributesClass", 0),
        ("Age", 0),
        ("VolumeMode", 1),
    ];
    assert_eq!(columns, names(&expected));
    assert_eq!(
        cells[1..],
        [
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!("standard"),
            json!("<unset>"),
            json!("5m"),
            json!("<unset>")
        ]
    );
    let bound = json!({"metadata": {"name": "data"}, "spec": {"volumeName": "pv1", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
    let (_, cells) = printed("v1", "PersistentVolumeClaim", bound);
    assert_eq!(cells[1..5], [json!("Bound"), json!("pv1"), json!("1Gi"), json!("RWO")]);
    assert_eq!(cells[8], json!("Filesystem"));
}

#[test]
fn ages_print_as_apimachinerys_human_duration() {
    let at = |seconds: i64| {
        model_apiserver_http::table::age(
            now(),
            jiff::Timestamp::from_second(now().as_second() - seconds).unwrap(),
        )
    };
    let cases = [
        (-5, "<invalid>"),
        (-1, "0s"),
        (90, "90s"),
        (300, "5m"),
        (330, "5m30s"),
        (42 * 60, "42m"),
        (179 * 60, "179m"),
        (190 * 60, "3h10m"),
        (5 * 3600, "5h"),
        (20 * 3600 + 59 * 60, "20h"),
        (3 * 86_400 + 4 * 3600, "3d4h"),
        (30 * 86_400, "30d"),
        (800 * 86_400, "2y70d"),
        (3650 * 86_400, "10y"),
    ];
    for (seconds, want) in cases {
        assert_eq!(at(seconds), want, "{seconds} s");
    }
}

/// A Pod's Ready, Status and Restarts cells, and its wide Readiness Gates cell.
fn pod_cells(pod: serde_json::Value) -> (String, String, String, String) {
    let (columns, cells) = printed("v1", "Pod", pod);
    let want = names(&[
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]);
    assert_eq!(columns, want);
    let cell = |i: usize| cells[i].as_str().unwrap().to_owned();
    (cell(1), cell(2), cell(3), cell(8))
}

fn container_status(name: &str, state: serde_json::Value, ready: bool) -> serde_json::Value {
    json!({"name": name, "image": "i", "imageID": "", "restartCount": 0, "ready": ready, "started": state.get("running").is_some(), "state": state})
}

#[test]
fn a_pod_prints_its_init_progress_sidecars_and_failures_as_printpod() {
    let spec = json!({
        "initContainers": [
            {"name": "setup", "image": "i"},
            {"name": "proxy", "image": "i", "restartPolicy": "Always"},
            {"name": "migrate", "image": "i"},
        ],
        "containers": [{"name": "app", "image": "i"}],
        "readinessGates": [{"conditionType": "lb"}, {"conditionType": "mesh"}],
    });
    let done = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let running = json!({"running": {"startedAt": "2026-01-01T00:06:00Z"}});
    let initializing = json!({"waiting": {"reason": "PodInitializing"}});
    let pod =
        |phase: &str, inits: serde_json::Value, app: serde_json::Value, conditions: serde_json::Value| {
            json!({"metadata": {"name": "p"}, "spec": spec, "status": {
                "phase": phase, "conditions": conditions, "initContainerStatuses": inits,
                "containerStatuses": [app],
            }})
        };
    let waiting_app = container_status("app", initializing.clone(), false);
    // The sidecar started: the first init container not done is `migrate`, index 2.
    let inits = json!([
        container_status("setup", done.clone(), true),
        container_status("proxy", running.clone(), true),
        container_status("migrate", running.clone(), false),
    ]);
    let gates = json!([{"type": "lb", "status": "True"}, {"type": "mesh", "status": "False"}]);
    assert_eq!(
        pod_cells(pod("Pending", inits, waiting_app.clone(), gates.clone())),
        ("1/2".to_owned(), "Init:2/3".to_owned(), "0".to_owned(), "1/2".to_owned())
    );
    // An init container that failed and backs off.
    let mut crashing = container_status("setup", json!({"waiting": {"reason": "CrashLoopBackOff"}}), false);
    crashing["restartCount"] = json!(3);
    crashing["lastState"] =
        json!({"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:05:00Z"}});
    let inits = json!([
        crashing,
        container_status("proxy", initializing.clone(), false),
        container_status("migrate", initializing.clone(), false)
    ]);
    assert_eq!(
        pod_cells(pod("Pending", inits, waiting_app.clone(), json!([]))),
        ("0/2".to_owned(), "Init:CrashLoopBackOff".to_owned(), "3 (5m ago)".to_owned(), "0/2".to_owned())
    );
    // Every init container done: the app's own state, the sidecar counted among the ready.
    let inits = json!([
        container_status("setup", done.clone(), true),
        container_status("proxy", running.clone(), true),
        container_status("migrate", done.clone(), true),
    ]);
    let initialized = json!([{"type": "Initialized", "status": "True"}]);
    assert_eq!(
        pod_cells(pod("Pending", inits.clone(), waiting_app, initialized.clone())).1,
        "PodInitializing"
    );
    assert_eq!(
        pod_cells(pod("Running", inits.clone(), container_status("app", running.clone(), true), initialized)),
        ("2/2".to_owned(), "Running".to_owned(), "0".to_owned(), "0/2".to_owned())
    );
}

#[test]
fn a_pod_with_one_container_done_and_one_running_is_not_ready_or_running_and_a_finished_one_is_not_terminating()
 {
    let done = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let running = json!({"running": {}});
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [container_status("a", done.clone(), false), container_status("b", running, true)],
    }});
    assert_eq!(pod_cells(pod.clone()).1, "NotReady");
    let mut ready = pod.clone();
    ready["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    assert_eq!(pod_cells(ready).1, "Running");
    let finished = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:09:00Z"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [container_status("a", done, false)]}});
    assert_eq!(pod_cells(finished).1, "Completed");
    let mut deleting = pod;
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:09:00Z");
    assert_eq!(pod_cells(deleting).1, "Terminating");
}
