//! Printers for policy, autoscaling, networking, storage, nodes, RBAC and admission kinds, as
//! kube-apiserver's `pkg/printers/internalversion/printers.go` defines them. Each function gives
//! the columns after Name (StorageClass's includes its own Name). PersistentVolumeClaims live
//! here too, beside PersistentVolumes, as they share the access-mode and class helpers.

use serde_json::{Value, json};

use super::{AGE_DESCRIPTION, Column, NAME_DESCRIPTION, age_column, at, column, count, text};

/// The most hosts, endpoints or ports a cell lists before `+ N more...`.
const LISTED_MAX: usize = 3;

/// The most HPA metrics a Targets cell lists before `+ N more...`.
const METRICS_MAX: usize = 2;

/// The elements of the array at `path` (none when unset).
fn items<'a>(o: &'a Value, path: &[&str]) -> impl Iterator<Item = &'a Value> {
    at(o, path).and_then(Value::as_array).into_iter().flatten()
}

/// A set value as Go's `String()` prints it: strings bare, numbers as digits, unset as "".
fn plain(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// `a,b,c + N more...` once `total` passes the listed ones.
fn with_more(list: &[String], total: usize, max: usize) -> String {
    let joined = list.join(",");
    if total > max { format!("{joined} + {} more...", total - max) } else { joined }
}

/// The first three of `list` and `+ N more...`, or `<unset>` when empty (listWithMoreString).
fn listed_or_unset(list: &[String]) -> String {
    if list.is_empty() {
        return "<unset>".to_owned();
    }
    with_more(&list[..list.len().min(LISTED_MAX)], list.len(), LISTED_MAX)
}

/// PodDisruptionBudgets: Min Available, Max Unavailable (`N/A` when unset), Allowed
/// Disruptions, Age.
pub(super) fn pod_disruption_budget() -> Vec<Column> {
    fn or_na(o: &Value, field: &str) -> Value {
        match at(o, &["spec", field]).filter(|v| !v.is_null()) {
            Some(v) => json!(plain(Some(v))),
            None => json!("N/A"),
        }
    }
    vec![
        column("Min Available", "string", 0, "The minimum number of pods that must be available.", |o, _| {
            or_na(o, "minAvailable")
        }),
        column(
            "Max Unavailable",
            "string",
            0,
            "The maximum number of pods that may be unavailable.",
            |o, _| or_na(o, "maxUnavailable"),
        ),
        column(
            "Allowed Disruptions",
            "integer",
            0,
            "Calculated number of pods that may be disrupted at this time.",
            |o, _| json!(count(o, &["status", "disruptionsAllowed"])),
        ),
        age_column(),
    ]
}

/// HorizontalPodAutoscalers (autoscaling/v2): Reference, Targets, MinPods (`<unset>`), MaxPods,
/// Replicas, Age.
pub(super) fn horizontal_pod_autoscaler() -> Vec<Column> {
    vec![
        column(
            "Reference",
            "string",
            0,
            "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
            |o, _| {
                json!(format!(
                    "{}/{}",
                    text(o, &["spec", "scaleTargetRef", "kind"]),
                    text(o, &["spec", "scaleTargetRef", "name"])
                ))
            },
        ),
        column(
            "Targets",
            "string",
            0,
            "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
            |o, _| json!(hpa_metrics(o)),
        ),
        column(
            "MinPods",
            "string",
            0,
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
            |o, _| match at(o, &["spec", "minReplicas"]).and_then(Value::as_i64) {
                Some(n) => json!(n.to_string()),
                None => json!("<unset>"),
            },
        ),
        column(
            "MaxPods",
            "string",
            0,
            "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
            |o, _| json!(count(o, &["spec", "maxReplicas"])),
        ),
        column(
            "Replicas",
            "string",
            0,
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
            |o, _| json!(count(o, &["status", "currentReplicas"])),
        ),
        age_column(),
    ]
}

/// The Targets cell: `current/target` per metric (the status at the same index as the spec),
/// `<unknown>` before a status, at most two then `+ N more...`; `<none>` without metrics.
fn hpa_metrics(o: &Value) -> String {
    let specs: Vec<&Value> = items(o, &["spec", "metrics"]).collect();
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let statuses: Vec<&Value> = items(o, &["status", "currentMetrics"]).collect();
    let mut list: Vec<String> =
        specs.iter().enumerate().map(|(i, spec)| hpa_metric(spec, statuses.get(i).copied())).collect();
    let total = list.len();
    list.truncate(METRICS_MAX);
    let joined = list.join(", ");
    if total > METRICS_MAX { format!("{joined} + {} more...", total - METRICS_MAX) } else { joined }
}

/// A quantity as Go prints a `*resource.Quantity`: `<nil>` when unset.
fn quantity(v: Option<&Value>) -> String {
    match v.filter(|v| !v.is_null()) {
        Some(v) => plain(Some(v)),
        None => "<nil>".to_owned(),
    }
}

/// One metric of the Targets cell.
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_owned();
    // The status's current value when it has a source of the spec's kind.
    let current = |source: &str, field: &str| -> Option<String> {
        status
            .and_then(|s| s.get(source))
            .filter(|v| !v.is_null())
            .map(|v| quantity(v.pointer(&format!("/current/{field}"))))
    };
    let set = |source: &str, field: &str| {
        spec.get(source).and_then(|s| s.pointer(&format!("/target/{field}"))).filter(|v| !v.is_null())
    };
    match spec["type"].as_str().unwrap_or("") {
        kind @ ("External" | "Object") => {
            let source = if kind == "External" { "external" } else { "object" };
            match set(source, "averageValue") {
                Some(target) => {
                    let now = status
                        .and_then(|s| s.get(source))
                        .and_then(|v| v.pointer("/current/averageValue"))
                        .filter(|v| !v.is_null());
                    format!("{}/{} (avg)", now.map_or_else(unknown, |v| plain(Some(v))), plain(Some(target)))
                }
                None => format!(
                    "{}/{}",
                    current(source, "value").unwrap_or_else(unknown),
                    quantity(set(source, "value"))
                ),
            }
        }
        "Pods" => format!(
            "{}/{}",
            current("pods", "averageValue").unwrap_or_else(unknown),
            quantity(set("pods", "averageValue"))
        ),
        kind @ ("Resource" | "ContainerResource") => {
            let source = if kind == "Resource" { "resource" } else { "containerResource" };
            let name = spec.get(source).map(|s| plain(s.get("name"))).unwrap_or_default();
            match set(source, "averageValue") {
                Some(target) => format!(
                    "{name}: {}/{}",
                    current(source, "averageValue").unwrap_or_else(unknown),
                    plain(Some(target))
                ),
                None => {
                    let utilization = status
                        .and_then(|s| s.get(source))
                        .and_then(|v| v.pointer("/current/averageUtilization"))
                        .and_then(Value::as_i64);
                    let target = set(source, "averageUtilization").and_then(Value::as_i64);
                    format!(
                        "{name}: {}/{}",
                        utilization.map_or_else(unknown, |u| format!("{u}%")),
                        target.map_or_else(|| "<auto>".to_owned(), |t| format!("{t}%"))
                    )
                }
            }
        }
        _ => "<unknown type>".to_owned(),
    }
}

/// Ingresses: Class (`<none>`), Hosts (`*` when no rule names one), Address, Ports, Age.
pub(super) fn ingress() -> Vec<Column> {
    vec![
        column(
            "Class",
            "string",
            0,
            "The name of the IngressClass resource that should be used for additional configuration",
            |o, _| match at(o, &["spec", "ingressClassName"]).and_then(Value::as_str) {
                // A set class prints as is, even empty; only an unset one is <none>.
                Some(class) => json!(class),
                None => json!("<none>"),
            },
        ),
        column(
            "Hosts",
            "string",
            0,
            "Hosts that incoming requests are matched against before the ingress rule",
            |o, _| {
                // As formatHosts: the first three named hosts, and "more" counts every rule
                // after them, named or not.
                let rules: Vec<&Value> = items(o, &["spec", "rules"]).collect();
                let mut hosts: Vec<String> = Vec::new();
                let mut more = false;
                for rule in &rules {
                    if hosts.len() == LISTED_MAX {
                        more = true;
                        break;
                    }
                    let host = plain(rule.get("host"));
                    if !host.is_empty() {
                        hosts.push(host);
                    }
                }
                if hosts.is_empty() {
                    return json!("*");
                }
                let joined = hosts.join(",");
                json!(if more { format!("{joined} + {} more...", rules.len() - LISTED_MAX) } else { joined })
            },
        ),
        column(
            "Address",
            "string",
            0,
            "Address is a list containing ingress points for the load-balancer",
            |o, _| {
                // A sorted set, as the printer's sets.String; never clipped, since
                // kube-apiserver renders tables wide.
                let mut addresses: Vec<String> = items(o, &["status", "loadBalancer", "ingress"])
                    .map(|i| {
                        let ip = plain(i.get("ip"));
                        if ip.is_empty() { plain(i.get("hostname")) } else { ip }
                    })
                    .filter(|a| !a.is_empty())
                    .collect();
                addresses.sort();
                addresses.dedup();
                json!(addresses.join(","))
            },
        ),
        column("Ports", "string", 0, "Ports of TLS configurations that open", |o, _| {
            json!(if items(o, &["spec", "tls"]).next().is_some() { "80, 443" } else { "80" })
        }),
        age_column(),
    ]
}

/// IngressClasses: Controller, Parameters (`Kind[.group]/name` or `<none>`), Age.
pub(super) fn ingress_class() -> Vec<Column> {
    vec![
        column(
            "Controller",
            "string",
            0,
            "Controller that is responsible for handling this class",
            |o, _| json!(text(o, &["spec", "controller"])),
        ),
        column("Parameters", "string", 0, "A reference to a resource with additional parameters", |o, _| {
            let Some(p) = at(o, &["spec", "parameters"]).filter(|p| p.is_object()) else {
                return json!("<none>");
            };
            let group = plain(p.get("apiGroup"));
            let kind = plain(p.get("kind"));
            let kind = if p.get("apiGroup").is_some_and(Value::is_string) {
                format!("{kind}.{group}")
            } else {
                kind
            };
            json!(format!("{kind}/{}", plain(p.get("name"))))
        }),
        age_column(),
    ]
}

/// NetworkPolicies: Pod-Selector, Age.
pub(super) fn network_policy() -> Vec<Column> {
    vec![
        column(
            "Pod-Selector",
            "string",
            0,
            "Selects the pods to which this NetworkPolicy object applies.",
            |o, _| json!(label_selector(at(o, &["spec", "podSelector"]))),
        ),
        age_column(),
    ]
}

/// A label selector as `metav1.FormatLabelSelector` prints it: requirements sorted by key
/// (`k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`), `<none>` when it selects everything.
fn label_selector(selector: Option<&Value>) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.and_then(|s| s.get("matchLabels")).and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((key.clone(), format!("{key}={}", plain(Some(value)))));
        }
    }
    for e in selector.and_then(|s| s.get("matchExpressions")).and_then(Value::as_array).into_iter().flatten()
    {
        let key = plain(e.get("key"));
        let mut values: Vec<String> =
            e["values"].as_array().into_iter().flatten().map(|v| plain(Some(v))).collect();
        values.sort();
        values.dedup();
        let text = match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<error>".to_owned(),
        };
        requirements.push((key, text));
    }
    requirements.sort();
    if requirements.is_empty() {
        return "<none>".to_owned();
    }
    requirements.into_iter().map(|(_, text)| text).collect::<Vec<_>>().join(",")
}

/// Nodes: Status (Ready, NotReady or Unknown, then SchedulingDisabled), Roles, Age, Version;
/// wide: Internal-IP, External-IP, OS-Image, Kernel-Version, Container-Runtime.
pub(super) fn node() -> Vec<Column> {
    fn address(o: &Value, kind: &str) -> Value {
        let found =
            items(o, &["status", "addresses"]).find(|a| a["type"] == kind).map(|a| plain(a.get("address")));
        json!(found.unwrap_or_else(|| "<none>".to_owned()))
    }
    fn info(o: &Value, field: &str) -> Value {
        let value = text(o, &["status", "nodeInfo", field]);
        json!(if value.is_empty() { "<unknown>".to_owned() } else { value })
    }
    vec![
        column("Status", "string", 0, "The status of the node", |o, _| {
            let ready = items(o, &["status", "conditions"]).find(|c| c["type"] == "Ready");
            let mut status = vec![match ready {
                Some(c) if c["status"] == "True" => "Ready",
                Some(_) => "NotReady",
                None => "Unknown",
            }];
            if at(o, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
                status.push("SchedulingDisabled");
            }
            json!(status.join(","))
        }),
        column("Roles", "string", 0, "The roles of the node", |o, _| {
            let mut roles: Vec<String> = at(o, &["metadata", "labels"])
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
                    Some(role) if !role.is_empty() => Some(role.to_owned()),
                    Some(_) => None,
                    None if key == "kubernetes.io/role" => Some(plain(Some(value))).filter(|v| !v.is_empty()),
                    None => None,
                })
                .collect();
            roles.sort();
            roles.dedup();
            json!(if roles.is_empty() { "<none>".to_owned() } else { roles.join(",") })
        }),
        age_column(),
        column("Version", "string", 0, "Kubelet Version reported by the node.", |o, _| {
            json!(text(o, &["status", "nodeInfo", "kubeletVersion"]))
        }),
        column("Internal-IP", "string", 1, "List of addresses reachable to the node.", |o, _| {
            address(o, "InternalIP")
        }),
        column("External-IP", "string", 1, "List of addresses reachable to the node.", |o, _| {
            address(o, "ExternalIP")
        }),
        column(
            "OS-Image",
            "string",
            1,
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            |o, _| info(o, "osImage"),
        ),
        column(
            "Kernel-Version",
            "string",
            1,
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            |o, _| info(o, "kernelVersion"),
        ),
        column(
            "Container-Runtime",
            "string",
            1,
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            |o, _| info(o, "containerRuntimeVersion"),
        ),
    ]
}

/// Access modes as `RWO,ROX,RWX,RWOP`, in that order, each once.
fn access_modes(o: &Value, path: &[&str]) -> String {
    let set: Vec<&str> = items(o, path).filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| set.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The string at `path`, or `<unset>`.
fn or_unset(o: &Value, path: &[&str]) -> Value {
    match at(o, path).and_then(Value::as_str) {
        Some(s) => json!(s),
        None => json!("<unset>"),
    }
}

/// PersistentVolumes: Capacity, Access Modes, Reclaim Policy, Status, Claim, StorageClass,
/// VolumeAttributesClass, Reason, Age; wide: VolumeMode.
pub(super) fn persistent_volume() -> Vec<Column> {
    vec![
        column(
            "Capacity",
            "string",
            0,
            "capacity is the description of the persistent volume's resources and capacity.",
            |o, _| {
                let size = plain(at(o, &["spec", "capacity", "storage"]));
                json!(if size.is_empty() { "0".to_owned() } else { size })
            },
        ),
        column(
            "Access Modes",
            "string",
            0,
            "accessModes contains all ways the volume can be mounted.",
            |o, _| json!(access_modes(o, &["spec", "accessModes"])),
        ),
        column(
            "Reclaim Policy",
            "string",
            0,
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
            |o, _| json!(text(o, &["spec", "persistentVolumeReclaimPolicy"])),
        ),
        column(
            "Status",
            "string",
            0,
            "phase indicates if a volume is available, bound to a claim, or released by a claim.",
            |o, _| {
                if at(o, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
                    json!("Terminating")
                } else {
                    json!(text(o, &["status", "phase"]))
                }
            },
        ),
        column(
            "Claim",
            "string",
            0,
            "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
            |o, _| match at(o, &["spec", "claimRef"]).filter(|c| c.is_object()) {
                Some(c) => json!(format!("{}/{}", plain(c.get("namespace")), plain(c.get("name")))),
                None => json!(""),
            },
        ),
        column(
            "StorageClass",
            "string",
            0,
            "storageClassName is the name of StorageClass to which this persistent volume belongs.",
            |o, _| storage_class_name(o),
        ),
        column("VolumeAttributesClass", "string", 0, "VolumeAttributesClass of the pv", |o, _| {
            or_unset(o, &["spec", "volumeAttributesClassName"])
        }),
        column(
            "Reason",
            "string",
            0,
            "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            |o, _| json!(text(o, &["status", "reason"])),
        ),
        age_column(),
        column(
            "VolumeMode",
            "string",
            1,
            "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
            |o, _| or_unset(o, &["spec", "volumeMode"]),
        ),
    ]
}

/// The storage class of a volume or claim: the beta annotation still wins over the field, as
/// helper.GetPersistentVolumeClass and GetPersistentVolumeClaimClass read it.
fn storage_class_name(o: &Value) -> Value {
    match at(o, &["metadata", "annotations", "volume.beta.kubernetes.io/storage-class"])
        .and_then(Value::as_str)
    {
        Some(class) => json!(class),
        None => json!(text(o, &["spec", "storageClassName"])),
    }
}

/// PersistentVolumeClaims: Status, Volume, Capacity and Access Modes (blank until bound to a
/// volume), StorageClass, VolumeAttributesClass, Age; wide: VolumeMode.
pub(super) fn persistent_volume_claim() -> Vec<Column> {
    fn bound(o: &Value) -> bool {
        !text(o, &["spec", "volumeName"]).is_empty()
    }
    vec![
        column(
            "Status",
            "string",
            0,
            "phase represents the current phase of PersistentVolumeClaim.",
            |o, _| {
                if at(o, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
                    json!("Terminating")
                } else {
                    json!(text(o, &["status", "phase"]))
                }
            },
        ),
        column(
            "Volume",
            "string",
            0,
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
            |o, _| json!(text(o, &["spec", "volumeName"])),
        ),
        column(
            "Capacity",
            "string",
            0,
            "capacity represents the actual resources of the underlying volume.",
            |o, _| {
                if !bound(o) {
                    return json!("");
                }
                let size = plain(at(o, &["status", "capacity", "storage"]));
                json!(if size.is_empty() { "0".to_owned() } else { size })
            },
        ),
        column(
            "Access Modes",
            "string",
            0,
            "accessModes contains the actual access modes the volume backing the PVC has.",
            |o, _| json!(if bound(o) { access_modes(o, &["status", "accessModes"]) } else { String::new() }),
        ),
        column("StorageClass", "string", 0, "StorageClass of the pvc", |o, _| storage_class_name(o)),
        column("VolumeAttributesClass", "string", 0, "VolumeAttributesClass of the pvc", |o, _| {
            or_unset(o, &["spec", "volumeAttributesClassName"])
        }),
        age_column(),
        column(
            "VolumeMode",
            "string",
            1,
            "volumeMode defines what type of volume is required by the claim.",
            |o, _| or_unset(o, &["spec", "volumeMode"]),
        ),
    ]
}

/// StorageClasses: Name (with ` (default)` for the default class), Provisioner, ReclaimPolicy,
/// VolumeBindingMode, AllowVolumeExpansion, Age; unset fields print their defaults.
pub(super) fn storage_class() -> Vec<Column> {
    vec![
        column("Name", "string", 0, NAME_DESCRIPTION, |o, _| {
            let name = text(o, &["metadata", "name"]);
            let is_default = [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|a| at(o, &["metadata", "annotations", a]).and_then(Value::as_str) == Some("true"));
            json!(if is_default { format!("{name} (default)") } else { name })
        }),
        column("Provisioner", "string", 0, "Indicates the type of the provisioner.", |o, _| {
            json!(text(o, &["provisioner"]))
        }),
        column("ReclaimPolicy", "string", 0, "Indicates the type of the reclaim policy.", |o, _| {
            json!(at(o, &["reclaimPolicy"]).and_then(Value::as_str).unwrap_or("Delete"))
        }),
        column(
            "VolumeBindingMode",
            "string",
            0,
            "indicates how PersistentVolumeClaims should be provisioned and bound",
            |o, _| json!(at(o, &["volumeBindingMode"]).and_then(Value::as_str).unwrap_or("Immediate")),
        ),
        column(
            "AllowVolumeExpansion",
            "string",
            0,
            "Indicates whether the storage class allow volume expand",
            |o, _| json!(at(o, &["allowVolumeExpansion"]).and_then(Value::as_bool).unwrap_or(false)),
        ),
        age_column(),
    ]
}

/// ServiceAccounts: Secrets (how many are listed), Age.
pub(super) fn service_account() -> Vec<Column> {
    vec![
        column(
            "Secrets",
            "string",
            0,
            "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            |o, _| json!(items(o, &["secrets"]).count()),
        ),
        age_column(),
    ]
}

/// An address and port as Go's `net.JoinHostPort` writes them (IPv6 in brackets).
fn host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') { format!("[{ip}]:{port}") } else { format!("{ip}:{port}") }
}

/// Endpoints: Endpoints (ready `ip:port`s, at most three then `+ N more...`; `<none>` without
/// subsets), Age.
pub(super) fn endpoints() -> Vec<Column> {
    vec![
        column("Endpoints", "string", 0, "The set of all endpoints is the union of all subsets.", |o, _| {
            if items(o, &["subsets"]).next().is_none() {
                return json!("<none>");
            }
            let mut all: Vec<String> = Vec::new();
            for subset in items(o, &["subsets"]) {
                let ips: Vec<String> = items(subset, &["addresses"]).map(|a| plain(a.get("ip"))).collect();
                let ports: Vec<i64> =
                    items(subset, &["ports"]).map(|p| p["port"].as_i64().unwrap_or(0)).collect();
                if ports.is_empty() {
                    all.extend(ips);
                } else {
                    for port in ports {
                        all.extend(ips.iter().map(|ip| host_port(ip, port)));
                    }
                }
            }
            json!(with_more(&all[..all.len().min(LISTED_MAX)], all.len(), LISTED_MAX))
        }),
        age_column(),
    ]
}

/// EndpointSlices: AddressType, Ports, Endpoints (at most three then `+ N more...`; `<unset>`
/// when empty), Age.
pub(super) fn endpoint_slice() -> Vec<Column> {
    vec![
        column(
            "AddressType",
            "string",
            0,
            "addressType specifies the type of address carried by this EndpointSlice.",
            |o, _| json!(text(o, &["addressType"])),
        ),
        column(
            "Ports",
            "string",
            0,
            "ports specifies the list of network ports exposed by each endpoint in this slice.",
            |o, _| {
                // A port without a number prints its name, or `*` without one.
                let ports: Vec<String> = items(o, &["ports"])
                    .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
                        (Some(n), _) => n.to_string(),
                        (None, Some(name)) => name.to_owned(),
                        (None, None) => "*".to_owned(),
                    })
                    .collect();
                json!(listed_or_unset(&ports))
            },
        ),
        column("Endpoints", "string", 0, "endpoints is a list of unique endpoints in this slice.", |o, _| {
            let addresses: Vec<String> = items(o, &["endpoints"])
                .flat_map(|e| items(e, &["addresses"]))
                .map(|a| plain(Some(a)))
                .collect();
            json!(listed_or_unset(&addresses))
        }),
        age_column(),
    ]
}

/// Leases: Holder, Age.
pub(super) fn lease() -> Vec<Column> {
    vec![
        column(
            "Holder",
            "string",
            0,
            "holderIdentity contains the identity of the holder of a current lease.",
            |o, _| json!(text(o, &["spec", "holderIdentity"])),
        ),
        age_column(),
    ]
}

/// PriorityClasses: Value, Global-Default, Age, PreemptionPolicy.
pub(super) fn priority_class() -> Vec<Column> {
    vec![
        column(
            "Value",
            "integer",
            0,
            "value represents the integer value of this priority class.",
            |o, _| json!(count(o, &["value"])),
        ),
        column(
            "Global-Default",
            "boolean",
            0,
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
            |o, _| json!(at(o, &["globalDefault"]).and_then(Value::as_bool).unwrap_or(false)),
        ),
        age_column(),
        column(
            "PreemptionPolicy",
            "string",
            0,
            "preemptionPolicy is the Policy for preempting pods with lower priority.",
            |o, _| json!(text(o, &["preemptionPolicy"])),
        ),
    ]
}

/// ControllerRevisions: Controller (`kind.group/name` of the controlling owner, or `<none>`),
/// Revision, Age.
pub(super) fn controller_revision() -> Vec<Column> {
    vec![
        column("Controller", "string", 0, "Controller of the object", |o, _| {
            let owner =
                items(o, &["metadata", "ownerReferences"]).find(|r| r["controller"].as_bool() == Some(true));
            let Some(owner) = owner else { return json!("<none>") };
            let api_version = plain(owner.get("apiVersion"));
            let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
            let kind = plain(owner.get("kind")).to_lowercase();
            let name = plain(owner.get("name"));
            json!(if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") })
        }),
        column(
            "Revision",
            "string",
            0,
            "Revision indicates the revision of the state represented by Data.",
            |o, _| json!(count(o, &["revision"])),
        ),
        age_column(),
    ]
}

/// The default table convertor's Created At, an RFC 3339 time in UTC: what kube-apiserver prints
/// for a kind printers.go has no printer for (Roles, ClusterRoles, LimitRanges, CRDs).
pub(super) fn created_at() -> Vec<Column> {
    vec![column("Created At", "date", 0, AGE_DESCRIPTION, |o, _| {
        let created = at(o, &["metadata", "creationTimestamp"]).and_then(Value::as_str);
        match created.and_then(|s| s.parse::<jiff::Timestamp>().ok()) {
            Some(t) => json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
            None => json!("0001-01-01T00:00:00Z"),
        }
    })]
}

/// The names of the subjects of `kind`, joined with `, ` (service accounts as `namespace/name`).
fn subjects(o: &Value, kind: &str) -> Value {
    let names: Vec<String> = items(o, &["subjects"])
        .filter(|s| s["kind"] == kind)
        .map(|s| {
            if kind == "ServiceAccount" {
                format!("{}/{}", plain(s.get("namespace")), plain(s.get("name")))
            } else {
                plain(s.get("name"))
            }
        })
        .collect();
    json!(names.join(", "))
}

/// RoleBindings and ClusterRoleBindings: Role (`Kind/name`), Age; wide: Users, Groups,
/// ServiceAccounts.
pub(super) fn role_binding() -> Vec<Column> {
    vec![
        column(
            "Role",
            "string",
            0,
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
            |o, _| json!(format!("{}/{}", text(o, &["roleRef", "kind"]), text(o, &["roleRef", "name"]))),
        ),
        age_column(),
        column("Users", "string", 1, "Users in the roleBinding", |o, _| subjects(o, "User")),
        column("Groups", "string", 1, "Groups in the roleBinding", |o, _| subjects(o, "Group")),
        column("ServiceAccounts", "string", 1, "ServiceAccounts in the roleBinding", |o, _| {
            subjects(o, "ServiceAccount")
        }),
    ]
}

/// Validating and mutating webhook configurations: Webhooks (how many), Age.
pub(super) fn webhook_configuration() -> Vec<Column> {
    vec![
        column(
            "Webhooks",
            "integer",
            0,
            "Webhooks indicates the number of webhooks registered in this configuration",
            |o, _| json!(items(o, &["webhooks"]).count()),
        ),
        age_column(),
    ]
}

/// ResourceQuotas: Request and Limit (`resource: used/hard` for each hard limit, sorted,
/// the `limits.*` ones under Limit).
pub(super) fn resource_quota() -> Vec<Column> {
    fn usage(o: &Value, limits: bool) -> Value {
        let hard = at(o, &["status", "hard"]).and_then(Value::as_object);
        let cells: Vec<String> = hard
            .into_iter()
            .flatten()
            .filter(|(name, _)| name.starts_with("limits.") == limits)
            .map(|(name, hard)| {
                let used = plain(at(o, &["status", "used", name]));
                let used = if used.is_empty() { "0".to_owned() } else { used };
                format!("{name}: {used}/{}", plain(Some(hard)))
            })
            .collect();
        // Sorted by resource name whatever order the map keeps (each cell starts with it).
        let mut cells = cells;
        cells.sort();
        json!(cells.join(", "))
    }
    vec![
        column(
            "Request",
            "string",
            0,
            "Request represents a minimum amount of cpu/memory that a container may consume.",
            |o, _| usage(o, false),
        ),
        column(
            "Limit",
            "string",
            0,
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            |o, _| usage(o, true),
        ),
        age_column(),
    ]
}

/// PodTemplates: Containers, Images, Pod Labels (`<none>` without labels).
pub(super) fn pod_template() -> Vec<Column> {
    fn containers(o: &Value, field: &str) -> Value {
        let names: Vec<String> =
            items(o, &["template", "spec", "containers"]).map(|c| plain(c.get(field))).collect();
        json!(names.join(","))
    }
    vec![
        column("Containers", "string", 0, "Names of each container in the template.", |o, _| {
            containers(o, "name")
        }),
        column("Images", "string", 0, "Images referenced by each container in the template.", |o, _| {
            containers(o, "image")
        }),
        column("Pod Labels", "string", 0, "The labels for the pod template.", |o, _| {
            let mut labels: Vec<(&String, String)> = at(o, &["template", "metadata", "labels"])
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k, format!("{k}={}", plain(Some(v)))))
                .collect();
            labels.sort();
            let labels: Vec<String> = labels.into_iter().map(|(_, label)| label).collect();
            json!(if labels.is_empty() { "<none>".to_owned() } else { labels.join(",") })
        }),
    ]
}
