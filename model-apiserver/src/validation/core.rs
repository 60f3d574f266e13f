//! core/v1 spec validation, after `pkg/apis/core/validation/validation.go`: pod specs (also
//! inside every workload template), Services, ConfigMaps and Secrets, PersistentVolumeClaims and
//! ServiceAccounts. What is checked is what a controller can get wrong when it builds these
//! objects: required fields, names, enumerations, ranges, duplicates and cross-references.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec,
    PodTemplateSpec, Secret, Service, ServiceAccount, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube_core::response::StatusCause;
use serde_json::Value;

use crate::{
    node_ports::{NODE_PORT_MAX, NODE_PORT_MIN},
    quantity,
};

use super::field::{
    Path, dns1123_label, dns1123_subdomain, duplicate, forbidden, invalid, labels, non_negative, not_found,
    not_supported, one_of, one_of_if_set, port_name, port_num_or_name, port_number, q, required, too_long,
};

/// The total size of a ConfigMap's or Secret's data (`MaxSecretSize`, 1 MiB).
pub(crate) const DATA_BYTES_MAX: usize = 1024 * 1024;

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const TERMINATION_MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// A pod spec at `path` (`spec`, or `spec.template.spec` in a workload).
pub(crate) fn pod_spec(spec: &PodSpec, path: &Path, out: &mut Vec<StatusCause>) {
    let volumes = volumes(spec.volumes.as_deref().unwrap_or_default(), &path.child("volumes"), out);
    let mut names = BTreeSet::new();
    let containers_path = path.child("containers");
    if spec.containers.is_empty() {
        out.push(required(&containers_path, ""));
    }
    let restart_policy = spec.restart_policy.as_deref();
    for (i, c) in spec.containers.iter().enumerate() {
        let at = containers_path.index(i);
        container(c, &volumes, &at, out);
        resize_policy(c, restart_policy, &at.child("resizePolicy"), out);
        if !c.name.is_empty() && !names.insert(c.name.clone()) {
            out.push(duplicate(&at.child("name"), q(&c.name)));
        }
        if c.restart_policy.is_some() {
            out.push(forbidden(&at.child("restartPolicy"), "may not be set for non-init containers"));
        }
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let at = path.child("initContainers").index(i);
        container(c, &volumes, &at, out);
        resize_policy(c, restart_policy, &at.child("resizePolicy"), out);
        if !c.name.is_empty() && !names.insert(c.name.clone()) {
            out.push(duplicate(&at.child("name"), q(&c.name)));
        }
        one_of_if_set(c.restart_policy.as_deref(), &at.child("restartPolicy"), &["Always"], out);
    }
    ephemeral_containers(spec, &volumes, &mut names, &path.child("ephemeralContainers"), out);
    host_port_conflicts(spec, &containers_path, out);
    // Defaulting fills these; without defaults (ServerConfig::builtin_defaults off) an absent one
    // is not an error of the client's.
    one_of_if_set(spec.restart_policy.as_deref(), &path.child("restartPolicy"), RESTART_POLICIES, out);
    one_of_if_set(spec.dns_policy.as_deref(), &path.child("dnsPolicy"), DNS_POLICIES, out);
    labels(spec.node_selector.as_ref(), &path.child("nodeSelector"), out);
    if let Some(sa) = spec.service_account_name.as_deref().filter(|s| !s.is_empty()) {
        dns1123_subdomain(sa, &path.child("serviceAccountName"), out);
    }
    if let Some(node) = spec.node_name.as_deref().filter(|s| !s.is_empty()) {
        dns1123_subdomain(node, &path.child("nodeName"), out);
    }
    if let Some(host) = spec.hostname.as_deref().filter(|s| !s.is_empty()) {
        dns1123_label(host, &path.child("hostname"), out);
    }
    if let Some(sub) = spec.subdomain.as_deref().filter(|s| !s.is_empty()) {
        dns1123_label(sub, &path.child("subdomain"), out);
    }
    if let Some(s) = spec.scheduler_name.as_deref().filter(|s| !s.is_empty()) {
        dns1123_subdomain(s, &path.child("schedulerName"), out);
    }
    if let Some(p) = spec.priority_class_name.as_deref().filter(|s| !s.is_empty()) {
        dns1123_subdomain(p, &path.child("priorityClassName"), out);
    }
    non_negative(spec.termination_grace_period_seconds, &path.child("terminationGracePeriodSeconds"), out);
    if let Some(d) = spec.active_deadline_seconds.filter(|d| *d < 1) {
        out.push(invalid(
            &path.child("activeDeadlineSeconds"),
            d,
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for (i, secret) in spec.image_pull_secrets.iter().flatten().enumerate() {
        if secret.name.is_empty() {
            out.push(required(&path.child("imagePullSecrets").index(i).child("name"), ""));
        }
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        let at = path.child("tolerations").index(i);
        one_of_if_set(t.operator.as_deref(), &at.child("operator"), &["Equal", "Exists"], out);
        if t.operator.as_deref() == Some("Exists") && t.value.as_deref().is_some_and(|v| !v.is_empty()) {
            out.push(invalid(
                &at.child("operator"),
                q("Exists"),
                "value must be empty when `operator` is 'Exists'",
            ));
        }
        one_of_if_set(
            t.effect.as_deref().filter(|e| !e.is_empty()),
            &at.child("effect"),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            out,
        );
    }
}

/// `validateEphemeralContainers`: each is a container (a name, an image, its mounts...), named
/// uniquely among all the Pod's containers (`names` holds the others'), targeting one of the
/// regular or init containers if it names one, and without the fields a Pod's own services
/// rely on (ports, resources, probes, lifecycle, restart policy) or subpath mounts.
fn ephemeral_containers(
    spec: &PodSpec,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    path: &Path,
    out: &mut Vec<StatusCause>,
) {
    const NOT_FOR_EPHEMERAL: &str = "cannot be set for an Ephemeral Container";
    let targets: BTreeSet<&str> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .map(|c| c.name.as_str())
        .collect();
    for (i, ec) in spec.ephemeral_containers.iter().flatten().enumerate() {
        let at = path.index(i);
        let as_container = Container {
            name: ec.name.clone(),
            image: ec.image.clone(),
            image_pull_policy: ec.image_pull_policy.clone(),
            termination_message_policy: ec.termination_message_policy.clone(),
            env: ec.env.clone(),
            volume_mounts: ec.volume_mounts.clone(),
            ..Container::default()
        };
        container(&as_container, volumes, &at, out);
        if !ec.name.is_empty() && !names.insert(ec.name.clone()) {
            out.push(duplicate(&at.child("name"), q(&ec.name)));
        }
        if let Some(target) = ec.target_container_name.as_deref().filter(|t| !t.is_empty())
            && !targets.contains(target)
        {
            out.push(not_found(&at.child("targetContainerName"), q(target)));
        }
        // `validateFieldAllowList`, in the struct's field order.
        let set = [
            ("ports", ec.ports.as_ref().is_some_and(|p| !p.is_empty())),
            ("resources", ec.resources.as_ref().is_some_and(|r| r != &Default::default())),
            ("resizePolicy", ec.resize_policy.as_ref().is_some_and(|p| !p.is_empty())),
            ("restartPolicy", ec.restart_policy.as_deref().is_some_and(|p| !p.is_empty())),
            ("livenessProbe", ec.liveness_probe.is_some()),
            ("readinessProbe", ec.readiness_probe.is_some()),
            ("startupProbe", ec.startup_probe.is_some()),
            ("lifecycle", ec.lifecycle.is_some()),
        ];
        for (field, _) in set.iter().filter(|(_, set)| *set) {
            out.push(forbidden(&at.child(field), NOT_FOR_EPHEMERAL));
        }
        for (k, m) in ec.volume_mounts.iter().flatten().enumerate() {
            let mount = at.child("volumeMounts").index(k);
            if m.sub_path.as_deref().is_some_and(|s| !s.is_empty()) {
                out.push(forbidden(&mount.child("subPath"), NOT_FOR_EPHEMERAL));
            }
            if m.sub_path_expr.as_deref().is_some_and(|s| !s.is_empty()) {
                out.push(forbidden(&mount.child("subPathExpr"), NOT_FOR_EPHEMERAL));
            }
        }
    }
}

/// A pod template at `path` (`spec.template`): its labels and annotations, then its spec.
pub(crate) fn pod_template(template: Option<&PodTemplateSpec>, path: &Path, out: &mut Vec<StatusCause>) {
    let Some(template) = template else {
        out.push(required(path, ""));
        return;
    };
    if let Some(meta) = &template.metadata {
        for cause in super::validate_labels_and_annotations(meta) {
            let field = cause.field.replacen("metadata", path.child("metadata").as_str(), 1);
            out.push(StatusCause { field, ..cause });
        }
    }
    match &template.spec {
        Some(spec) => pod_spec(spec, &path.child("spec"), out),
        None => out.push(required(&path.child("spec").child("containers"), "")),
    }
}

/// The volume names (DNS labels, unique); returns them for volumeMount references.
fn volumes(volumes: &[Volume], path: &Path, out: &mut Vec<StatusCause>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let at = path.index(i).child("name");
        if v.name.is_empty() {
            out.push(required(&at, ""));
        } else {
            dns1123_label(&v.name, &at, out);
        }
        if !names.insert(v.name.clone()) {
            out.push(duplicate(&at, q(&v.name)));
        }
    }
    names
}

/// One container (regular or init).
fn container(c: &Container, volumes: &BTreeSet<String>, path: &Path, out: &mut Vec<StatusCause>) {
    let name_path = path.child("name");
    if c.name.is_empty() {
        out.push(required(&name_path, ""));
    } else {
        dns1123_label(&c.name, &name_path, out);
    }
    if c.image.as_deref().is_none_or(str::is_empty) {
        out.push(required(&path.child("image"), ""));
    }
    one_of_if_set(c.image_pull_policy.as_deref(), &path.child("imagePullPolicy"), PULL_POLICIES, out);
    one_of_if_set(
        c.termination_message_policy.as_deref(),
        &path.child("terminationMessagePolicy"),
        TERMINATION_MESSAGE_POLICIES,
        out,
    );
    container_ports(c.ports.as_deref().unwrap_or_default(), &path.child("ports"), out);
    for (i, env) in c.env.iter().flatten().enumerate() {
        if env.name.is_empty() {
            out.push(required(&path.child("env").index(i).child("name"), ""));
        }
    }
    let mut mount_paths = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let at = path.child("volumeMounts").index(i);
        if m.name.is_empty() {
            out.push(required(&at.child("name"), ""));
        } else if !volumes.contains(&m.name) {
            out.push(not_found(&at.child("name"), q(&m.name)));
        }
        if m.mount_path.is_empty() {
            out.push(required(&at.child("mountPath"), ""));
        } else if !mount_paths.insert(m.mount_path.clone()) {
            out.push(invalid(&at.child("mountPath"), q(&m.mount_path), "must be unique"));
        }
    }
    resources(c, &path.child("resources"), out);
}

/// `validateResizePolicy`: each of a container's resize policies names `cpu` or `memory` once,
/// with `NotRequired` or `RestartContainer` (only `NotRequired` in a Pod that never restarts).
fn resize_policy(c: &Container, pod_restart_policy: Option<&str>, path: &Path, out: &mut Vec<StatusCause>) {
    let mut seen = BTreeSet::new();
    for (i, p) in c.resize_policy.iter().flatten().enumerate() {
        if !seen.insert(p.resource_name.as_str()) {
            out.push(duplicate(&path.index(i), q(&p.resource_name)));
        }
        match p.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => out.push(required(path, "")),
            other => out.push(not_supported(path, other, &["cpu", "memory"])),
        }
        match p.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => out.push(required(path, "")),
            other => out.push(not_supported(path, other, &["NotRequired", "RestartContainer"])),
        }
        if pod_restart_policy == Some("Never") && p.restart_policy != "NotRequired" {
            out.push(invalid(
                path,
                q(&p.restart_policy),
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
}

/// Container ports: numbers in range, valid unique names, known protocols.
fn container_ports(ports: &[ContainerPort], path: &Path, out: &mut Vec<StatusCause>) {
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = path.index(i);
        if let Some(name) = p.name.as_deref().filter(|n| !n.is_empty()) {
            port_name(name, &at.child("name"), out);
            if !names.insert(name.to_owned()) {
                out.push(duplicate(&at.child("name"), q(name)));
            }
        }
        if p.container_port == 0 {
            out.push(required(&at.child("containerPort"), ""));
        } else {
            port_number(p.container_port, &at.child("containerPort"), out);
        }
        if let Some(host) = p.host_port.filter(|h| *h != 0) {
            port_number(host, &at.child("hostPort"), out);
        }
        one_of_if_set(p.protocol.as_deref(), &at.child("protocol"), PROTOCOLS, out);
    }
}

/// Two containers may not take the same host port and protocol.
fn host_port_conflicts(spec: &PodSpec, path: &Path, out: &mut Vec<StatusCause>) {
    let mut taken = BTreeSet::new();
    for (i, c) in spec.containers.iter().enumerate() {
        for p in c.ports.iter().flatten() {
            let Some(host) = p.host_port.filter(|h| *h != 0) else { continue };
            let key = format!("{host}/{}", p.protocol.as_deref().unwrap_or("TCP"));
            if !taken.insert(key.clone()) {
                out.push(duplicate(&path.index(i).child("ports"), q(&key)));
            }
        }
    }
}

/// Requests may not exceed limits (for the quantities the model can compare).
fn resources(c: &Container, path: &Path, out: &mut Vec<StatusCause>) {
    let Some(r) = &c.resources else { return };
    for (name, request) in r.requests.iter().flatten() {
        let limit = r.limits.as_ref().and_then(|l| l.get(name));
        let (Some(req), Some(lim)) = (quantity::value(&request.0), limit.and_then(|l| quantity::value(&l.0)))
        else {
            continue;
        };
        if req > lim {
            out.push(invalid(
                &path.child("requests").key(name),
                q(&request.0),
                &format!(
                    "must be less than or equal to {name} limit of {}",
                    limit.map_or("", |l| l.0.as_str())
                ),
            ));
        }
    }
}

/// ConfigMap keys and total size.
pub(crate) fn config_map(cm: &ConfigMap, out: &mut Vec<StatusCause>) {
    let mut total = 0usize;
    for (key, value) in cm.data.iter().flatten() {
        config_key(key, &Path::new("data").key(key), out);
        total = total.saturating_add(value.len());
    }
    for (key, value) in cm.binary_data.iter().flatten() {
        let at = Path::new("binaryData").key(key);
        config_key(key, &at, out);
        if cm.data.as_ref().is_some_and(|d| d.contains_key(key)) {
            out.push(invalid(&at, q(key), "duplicate of key present in data"));
        }
        total = total.saturating_add(value.0.len());
    }
    if total > DATA_BYTES_MAX {
        out.push(too_long(&Path::new(""), DATA_BYTES_MAX));
    }
}

/// Secret keys, total size, and the fields each type requires.
pub(crate) fn secret(s: &Secret, out: &mut Vec<StatusCause>) {
    let data = Path::new("data");
    let mut total = 0usize;
    for (key, value) in s.data.iter().flatten() {
        config_key(key, &data.key(key), out);
        total = total.saturating_add(value.0.len());
    }
    if total > DATA_BYTES_MAX {
        out.push(too_long(&data, DATA_BYTES_MAX));
    }
    let has = |k: &str| s.data.as_ref().is_some_and(|d| d.contains_key(k));
    match s.type_.as_deref().unwrap_or("Opaque") {
        "kubernetes.io/service-account-token" => {
            let annotations = s.metadata.annotations.as_ref();
            if annotations
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .is_none_or(String::is_empty)
            {
                out.push(required(
                    &Path::new("metadata.annotations[kubernetes.io/service-account.name]"),
                    "",
                ));
            }
        }
        ty @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if ty == "kubernetes.io/dockercfg" { ".dockercfg" } else { ".dockerconfigjson" };
            match s.data.as_ref().and_then(|d| d.get(key)) {
                None => out.push(required(&data.key(key), "")),
                Some(config) => {
                    if let Some(err) = docker_config_error(&config.0) {
                        out.push(invalid(&data.key(key), q("<secret contents redacted>"), &err));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            out.push(required(&data.key("username"), ""));
            out.push(required(&data.key("password"), ""));
        }
        "kubernetes.io/ssh-auth"
            if s.data.as_ref().and_then(|d| d.get("ssh-privatekey")).is_none_or(|k| k.0.is_empty()) =>
        {
            out.push(required(&data.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    out.push(required(&data.key(k), ""));
                }
            }
        }
        _ => {}
    }
}

/// Why a docker config does not `json.Unmarshal` into a `map[string]interface{}`, in Go's words.
fn docker_config_error(config: &[u8]) -> Option<String> {
    if let Some(syntax) = crate::go_json::syntax_error(config) {
        return Some(syntax);
    }
    match serde_json::from_slice::<Value>(config).ok()? {
        Value::Null | Value::Object(_) => None,
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::go_json::go_kind(&other)
        )),
    }
}

/// IsConfigMapKey: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or `..` or `..`-prefixed.
fn config_key(key: &str, path: &Path, out: &mut Vec<StatusCause>) {
    if key.len() > 253 {
        out.push(invalid(path, q(key), "must be no more than 253 characters"));
    }
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')) {
        out.push(invalid(path, q(key), CONFIG_KEY_ERR));
    }
    if key == "." {
        out.push(invalid(path, q(key), "must not be '.'"));
    } else if key == ".." {
        out.push(invalid(path, q(key), "must not be '..'"));
    } else if key.starts_with("..") {
        out.push(invalid(path, q(key), "must not start with '..'"));
    }
}

/// A Service's spec.
pub(crate) fn service(svc: &Service, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let Some(spec) = &svc.spec else {
        out.push(required(&path.child("ports"), ""));
        return;
    };
    let ty = spec.type_.as_deref().unwrap_or("ClusterIP");
    one_of_if_set(
        Some(ty),
        &path.child("type"),
        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        out,
    );
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let ports = spec.ports.as_deref().unwrap_or_default();
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(required(&path.child("ports"), ""));
    }
    if ty == "ExternalName" {
        match spec.external_name.as_deref() {
            None | Some("") => out.push(required(&path.child("externalName"), "")),
            Some(name) => dns1123_subdomain(name.trim_end_matches('.'), &path.child("externalName"), out),
        }
        if spec.cluster_ip.as_deref().is_some_and(|ip| !ip.is_empty()) {
            out.push(forbidden(&path.child("clusterIPs"), "may not be set for ExternalName services"));
        }
    }
    if let Some(ip) = spec.cluster_ip.as_deref().filter(|ip| !ip.is_empty() && *ip != "None")
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        out.push(invalid(
            &path.child("clusterIPs").index(0),
            q(ip),
            "must be empty, 'None', or a valid IP address",
        ));
    }
    let mut names = BTreeSet::new();
    let mut keys = BTreeSet::new();
    let ports_path = path.child("ports");
    for (i, p) in ports.iter().enumerate() {
        let at = ports_path.index(i);
        match p.name.as_deref().filter(|n| !n.is_empty()) {
            None if ports.len() > 1 => out.push(required(&at.child("name"), "")),
            None => {}
            Some(name) => {
                dns1123_label(name, &at.child("name"), out);
                if !names.insert(name.to_owned()) {
                    out.push(duplicate(&at.child("name"), q(name)));
                }
            }
        }
        port_number(p.port, &at.child("port"), out);
        let protocol = p.protocol.as_deref().unwrap_or("TCP");
        one_of(Some(protocol), &at.child("protocol"), PROTOCOLS, out);
        if let Some(target) = &p.target_port {
            port_num_or_name(target, &at.child("targetPort"), out);
        }
        if let Some(node_port) = p.node_port.filter(|n| *n != 0) {
            if ty == "ClusterIP" || ty == "ExternalName" {
                let why = format!("may not be used when `type` is '{ty}'");
                out.push(forbidden(&at.child("nodePort"), &why));
            } else if (1..=65535).contains(&node_port)
                && !(NODE_PORT_MIN..=NODE_PORT_MAX).contains(&node_port)
            {
                // The Service REST's node port allocator (portallocator.ErrNotInRange), after
                // validation in the real server, refuses a port outside the node port range.
                let why = format!(
                    "provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"
                );
                out.push(invalid(&at.child("nodePort"), node_port.to_string(), &why));
            } else {
                port_number(node_port, &at.child("nodePort"), out);
            }
        }
        if !keys.insert((p.port, protocol.to_owned())) {
            out.push(duplicate(
                &at,
                format!("core.ServicePort{{Port:{}, Protocol:{}}}", p.port, q(protocol)),
            ));
        }
    }
    labels(spec.selector.as_ref(), &path.child("selector"), out);
    one_of_if_set(
        spec.session_affinity.as_deref(),
        &path.child("sessionAffinity"),
        &["ClientIP", "None"],
        out,
    );
    one_of_if_set(
        spec.ip_family_policy.as_deref(),
        &path.child("ipFamilyPolicy"),
        &["SingleStack", "PreferDualStack", "RequireDualStack"],
        out,
    );
    // validateServiceExternalTrafficPolicy, with `service.ExternallyAccessible`.
    let externally_accessible = matches!(ty, "NodePort" | "LoadBalancer")
        || (ty == "ClusterIP" && spec.external_ips.as_ref().is_some_and(|ips| !ips.is_empty()));
    let policy = spec.external_traffic_policy.as_deref().filter(|p| !p.is_empty());
    if let Some(policy) = policy {
        if !externally_accessible {
            let why = "may only be set for externally-accessible services";
            out.push(invalid(&path.child("externalTrafficPolicy"), q(policy), why));
        } else {
            one_of_if_set(Some(policy), &path.child("externalTrafficPolicy"), &["Cluster", "Local"], out);
        }
    }
    let needs_health_check = ty == "LoadBalancer" && policy == Some("Local");
    if let Some(port) = spec.health_check_node_port.filter(|p| *p != 0 && !needs_health_check) {
        let why = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'";
        out.push(invalid(&path.child("healthCheckNodePort"), port.to_string(), why));
    }
    one_of_if_set(
        spec.internal_traffic_policy.as_deref(),
        &path.child("internalTrafficPolicy"),
        &["Cluster", "Local"],
        out,
    );
}

/// A PersistentVolumeClaim's spec: access modes and a storage request.
pub(crate) fn persistent_volume_claim(pvc: &PersistentVolumeClaim, out: &mut Vec<StatusCause>) {
    match &pvc.spec {
        Some(spec) => claim_spec(spec, &Path::new("spec"), out),
        None => {
            out.push(required(&Path::new("spec.accessModes"), "at least 1 access mode is required"));
            out.push(required(&Path::new("spec.resources[storage]"), ""));
        }
    }
}

/// A claim spec at `path` (`spec`, or `spec.volumeClaimTemplates[i].spec` in a StatefulSet).
pub(crate) fn claim_spec(spec: &PersistentVolumeClaimSpec, path: &Path, out: &mut Vec<StatusCause>) {
    const ACCESS_MODES: &[&str] = &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
    let modes = spec.access_modes.as_deref().unwrap_or_default();
    if modes.is_empty() {
        out.push(required(&path.child("accessModes"), "at least 1 access mode is required"));
    }
    for mode in modes {
        if !ACCESS_MODES.contains(&mode.as_str()) {
            out.push(not_supported(&path.child("accessModes"), mode, ACCESS_MODES));
        }
    }
    if modes.iter().any(|m| m == "ReadWriteOncePod") && modes.len() > 1 {
        out.push(forbidden(
            &path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let storage = spec.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get("storage"));
    match storage {
        None if spec.data_source.is_none() && spec.data_source_ref.is_none() => {
            out.push(required(&path.child("resources").key("storage"), ""))
        }
        None => out.push(required(&path.child("resources").key("storage"), "")),
        Some(q_) => match quantity::value(&q_.0) {
            Some(v) if v <= 0.0 => out.push(invalid(
                &path.child("resources").child("requests").key("storage"),
                q(&q_.0),
                "must be greater than zero",
            )),
            _ => {}
        },
    }
    one_of_if_set(spec.volume_mode.as_deref(), &path.child("volumeMode"), &["Block", "Filesystem"], out);
    if let Some(class) = spec.storage_class_name.as_deref().filter(|c| !c.is_empty()) {
        dns1123_subdomain(class, &path.child("storageClassName"), out);
    }
}

/// The beta annotation naming a claim's StorageClass (`core.BetaStorageClassAnnotation`), which
/// wins over `spec.storageClassName`.
pub(crate) const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// `ValidatePersistentVolumeClaimUpdate`: a claim's spec is immutable but for what the binder
/// sets once and what a bound claim may resize.
/// - `volumeName` may be set once (the binder binds the claim);
/// - `storageClassName` may go from unset to a class (the retroactive default class,
///   `validateStorageClassUpgradeFromNil`, or the class the beta annotation names,
///   `validateStorageClassUpgradeFromAnnotation`); the beta annotation itself is immutable;
/// - only a **bound** claim may change its storage request and `volumeAttributesClassName`
///   (the check reads the new object's phase, which a spec write carries over from the stored
///   one): an unbound claim's request is as immutable as the rest;
/// - the request may shrink only while it stays above the claim's `status.capacity`
///   (`RecoverVolumeExpansionFailure`, on since 1.32);
/// - `volumeMode` is immutable, reported at upstream's path `volumeMode`.
///
/// Upstream appends a `cmp.Diff` of the two specs to the immutability message; go-cmp randomizes
/// that text's spacing on purpose, so it is left out here.
pub(crate) fn persistent_volume_claim_update(
    old: &PersistentVolumeClaim,
    new: &PersistentVolumeClaim,
    out: &mut Vec<StatusCause>,
) {
    fn beta(pvc: &PersistentVolumeClaim) -> Option<&str> {
        pvc.metadata.annotations.as_ref().and_then(|a| a.get(BETA_CLASS)).map(String::as_str)
    }
    fn class(pvc: &PersistentVolumeClaim) -> Option<&str> {
        pvc.spec.as_ref().and_then(|s| s.storage_class_name.as_deref())
    }
    let (old_beta, new_beta) = (beta(old), beta(new));
    let (old_class, new_class) = (class(old), class(new));
    // validateStorageClassUpgradeFromAnnotation: the class the annotation named, now in the spec.
    let from_annotation =
        old_beta.is_some() && new_beta == old_beta && old_class.is_none() && new_class == old_beta;
    if !from_annotation && old_beta != new_beta {
        out.push(invalid(
            &Path::new("metadata").child("annotations").child(BETA_CLASS),
            q(new_beta.unwrap_or_default()),
            "field is immutable",
        ));
    }
    // validateStorageClassUpgradeFromNil (the retroactive default StorageClass, on since 1.28).
    let from_nil = !from_annotation
        && old_class.is_none()
        && new_class.is_some_and(|c| !c.is_empty() && old_beta.is_none_or(|b| b == c));
    let bound = new.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    let old_spec = old.spec.clone().unwrap_or_default();
    let mut new_spec = new.spec.clone().unwrap_or_default();
    let mut old_compared = old_spec.clone();
    if old_spec.volume_name.as_deref().is_none_or(str::is_empty) {
        old_compared.volume_name = new_spec.volume_name.clone();
    }
    if from_annotation || from_nil {
        new_spec.storage_class_name = None;
    }
    let old_storage = storage_request(&old_spec).cloned();
    if bound {
        if let Some(requests) = new_spec.resources.as_mut().and_then(|r| r.requests.as_mut()) {
            match &old_storage {
                Some(storage) => requests.insert("storage".to_owned(), storage.clone()),
                None => requests.remove("storage"),
            };
        }
        if new_spec.volume_attributes_class_name.is_some() {
            new_spec.volume_attributes_class_name = old_spec.volume_attributes_class_name.clone();
        }
    }
    if new_spec != old_compared {
        out.push(forbidden(
            &Path::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |q_: Option<&Quantity>| q_.and_then(|q_| quantity::value(&q_.0)).unwrap_or(0.0);
    let new_size = size(new.spec.as_ref().and_then(storage_request));
    if new_size < size(old_storage.as_ref()) {
        let capacity = old.status.as_ref().and_then(|s| s.capacity.as_ref()).and_then(|c| c.get("storage"));
        if new_size <= size(capacity) {
            out.push(forbidden(
                &Path::new("spec").child("resources").child("requests").child("storage"),
                "field can not be less than status.capacity",
            ));
        }
    }
    let mode = |pvc: &PersistentVolumeClaim| pvc.spec.as_ref().and_then(|s| s.volume_mode.clone());
    if mode(old) != mode(new) {
        let shown = mode(new).map_or_else(|| "null".to_owned(), |m| q(&m));
        out.push(invalid(&Path::new("volumeMode"), shown, "field is immutable"));
    }
}

/// A claim spec's storage request, if it states one.
fn storage_request(spec: &PersistentVolumeClaimSpec) -> Option<&Quantity> {
    spec.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get("storage"))
}

/// A ServiceAccount's secret and image pull secret references.
pub(crate) fn service_account(sa: &ServiceAccount, out: &mut Vec<StatusCause>) {
    for (i, s) in sa.image_pull_secrets.iter().flatten().enumerate() {
        if s.name.is_empty() {
            out.push(required(&Path::new("imagePullSecrets").index(i).child("name"), ""));
        }
    }
    for (i, s) in sa.secrets.iter().flatten().enumerate() {
        if s.name.as_deref().is_none_or(str::is_empty) {
            out.push(required(&Path::new("secrets").index(i).child("name"), ""));
        }
    }
}

/// The resources a quota may name without a domain (`standardQuotaResources`), besides the
/// hugepages ones.
const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `ValidateResourceQuotaSpec` and `ValidateResourceQuotaStatus`, for their resource lists: a
/// name without a domain (`count/` names and extended resources have one) must be a standard
/// quota resource, and no amount may be negative. Not checked: the scopes against the resources
/// they may limit, and integer amounts of object counts.
pub(crate) fn resource_quota(data: &Value, out: &mut Vec<StatusCause>) {
    for (at, field) in [
        ("/spec/hard", ["spec", "hard"]),
        ("/status/hard", ["status", "hard"]),
        ("/status/used", ["status", "used"]),
    ] {
        let list = data.pointer(at).and_then(Value::as_object);
        for (name, value) in list.into_iter().flatten() {
            let path = Path::new(field[0]).child(field[1]).key(name);
            let standard = STANDARD_QUOTA_RESOURCES.contains(&name.as_str())
                || name.starts_with("hugepages-")
                || name.starts_with("requests.hugepages-");
            if !name.contains('/') && !standard {
                out.push(invalid(&path, q(name), "must be a standard resource for quota"));
            }
            let amount = value.as_str().and_then(crate::quantity::Amount::parse);
            if let Some(amount) = amount.filter(crate::quantity::Amount::is_negative) {
                out.push(invalid(&path, q(&amount.to_string()), super::field::NEGATIVE));
            }
        }
    }
}
