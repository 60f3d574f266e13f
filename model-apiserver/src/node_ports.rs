//! A Service's node ports and its type-dependent fields, as the Service REST
//! (`pkg/registry/core/service/storage/storage.go`) and strategy
//! (`pkg/registry/core/service/strategy.go`) treat them: allocation on create and update,
//! `patchAllocatedValues` (an update without node ports keeps the allocated ones) and
//! `dropTypeDependentFields` (a type switch drops what the new type does not use).

use std::collections::BTreeSet;

use kube_core::{DynamicObject, Status};
use serde_json::{Map, Value, json};

use crate::{context::IdSource, defaults, errors};

/// What the other Services of the cluster hold: the cluster IP and node port allocators' state
/// (kube-apiserver keeps it as bitmaps; here it is read off the stored Services).
#[derive(Clone, Debug, Default)]
pub(crate) struct Taken {
    /// Their cluster IPs.
    pub(crate) ips: BTreeSet<String>,
    /// Their node ports and health check node ports.
    pub(crate) ports: BTreeSet<u64>,
}

impl Taken {
    /// What `services` hold.
    pub(crate) fn of<'a>(services: impl Iterator<Item = &'a DynamicObject>) -> Taken {
        let mut taken = Taken::default();
        for service in services {
            let Some(spec) = service.data.get("spec").and_then(Value::as_object) else { continue };
            taken.ips.extend(cluster_ips(spec));
            taken.ports.extend(node_ports_of(spec).into_iter().filter(|p| *p != 0));
            taken.ports.extend(Some(health_check_node_port(spec)).filter(|p| *p != 0));
        }
        taken
    }
}

/// A Service's cluster IPs (`clusterIPs`, else `clusterIP`), without `None` (headless).
fn cluster_ips(spec: &Map<String, Value>) -> Vec<String> {
    let listed: Vec<String> = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let ips = if listed.is_empty() {
        spec.get("clusterIP").and_then(Value::as_str).map(str::to_owned).into_iter().collect()
    } else {
        listed
    };
    ips.into_iter().filter(|ip| !ip.is_empty() && ip != "None").collect()
}

/// The allocators' refusal of a cluster IP or node port another Service holds (422, as the
/// Service REST's `allocClusterIPs` and `initNodePorts` word it): `spec.clusterIPs: Invalid value:
/// []string{"10.96.0.50"}: failed to allocate IP 10.96.0.50: provided IP is already allocated`,
/// `spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`. `old` is
/// the stored Service of an update: what it held stays its own.
pub(crate) fn check_taken(
    name: &str,
    object: &DynamicObject,
    old: Option<&DynamicObject>,
    taken: &Taken,
) -> Result<(), Status> {
    let Some(spec) = object.data.get("spec").and_then(Value::as_object) else { return Ok(()) };
    let old_spec = old.and_then(|o| o.data.get("spec")).and_then(Value::as_object);
    let invalid = |field: String, value: String, why: &str| {
        let cause = errors::cause("FieldValueInvalid", &field, format!("Invalid value: {value}: {why}"));
        Err(errors::invalid("", "Service", name, vec![cause]))
    };
    let old_ips = old_spec.map(cluster_ips).unwrap_or_default();
    let ips = cluster_ips(spec);
    if let Some(ip) = ips.iter().find(|ip| taken.ips.contains(*ip) && !old_ips.contains(ip)) {
        let shown =
            format!("[]string{{{}}}", ips.iter().map(|ip| format!("{ip:?}")).collect::<Vec<_>>().join(", "));
        return invalid(
            "spec.clusterIPs".to_owned(),
            shown,
            &format!("failed to allocate IP {ip}: provided IP is already allocated"),
        );
    }
    let old_ports: Vec<u64> = old_spec.map(node_ports_of).unwrap_or_default();
    for (i, port) in node_ports_of(spec).into_iter().enumerate() {
        if port != 0 && taken.ports.contains(&port) && !old_ports.contains(&port) {
            return invalid(format!("spec.ports[{i}].nodePort"), port.to_string(), PORT_ALLOCATED);
        }
    }
    let health = health_check_node_port(spec);
    let old_health = old_spec.map(health_check_node_port).unwrap_or(0);
    if health != 0 && health != old_health && taken.ports.contains(&health) {
        return invalid("spec.healthCheckNodePort".to_owned(), health.to_string(), PORT_ALLOCATED);
    }
    Ok(())
}

/// The node port allocator's `ErrAllocated`.
const PORT_ALLOCATED: &str = "provided port is already allocated";

/// The range node ports are allocated from (kube-apiserver's `--service-node-port-range`
/// default).
pub(crate) const NODE_PORT_MIN: i32 = 30000;
pub(crate) const NODE_PORT_MAX: i32 = 32767;

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

/// `needsNodePort`: NodePort and LoadBalancer Services.
fn needs_node_port(spec: &Map<String, Value>) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// `needsHCNodePort`: a LoadBalancer whose external traffic policy is Local.
fn needs_health_check_node_port(spec: &Map<String, Value>) -> bool {
    service_type(spec) == "LoadBalancer" && spec.get("externalTrafficPolicy") == Some(&json!("Local"))
}

/// A port's node port, 0 when it has none.
fn node_port_of(port: &Value) -> u64 {
    port.get("nodePort").and_then(Value::as_u64).unwrap_or(0)
}

fn node_ports_of(spec: &Map<String, Value>) -> Vec<u64> {
    spec.get("ports").and_then(Value::as_array).into_iter().flatten().map(node_port_of).collect()
}

fn health_check_node_port(spec: &Map<String, Value>) -> u64 {
    spec.get("healthCheckNodePort").and_then(Value::as_u64).unwrap_or(0)
}

/// The node port allocation of create and update: each port of a NodePort Service (or of a
/// LoadBalancer that allocates node ports) without one gets one, and a LoadBalancer with the
/// Local policy a health check node port, drawn from the id source in 30000-32767 (the model
/// skips the ports another Service holds, in `taken`).
pub(crate) fn allocate(object: &mut DynamicObject, ids: &mut dyn IdSource, taken: &Taken) {
    let Some(spec) = object.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let allocates = match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    };
    let mut used = node_ports_of(spec);
    used.push(health_check_node_port(spec));
    used.extend(taken.ports.iter().copied());
    let mut draw = |used: &mut Vec<u64>| {
        let (min, max) = (NODE_PORT_MIN as u64, NODE_PORT_MAX as u64);
        let range = max - min + 1;
        // Bounded: the cluster's Services hold far fewer ports than the range has numbers.
        let port = (0..range)
            .map(|_| ids.next_u64() % range + min)
            .find(|p| !used.contains(p))
            .expect("the Services hold fewer ports than the node port range");
        used.push(port);
        json!(port)
    };
    if allocates && let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| node_port_of(p) == 0).filter_map(Value::as_object_mut) {
            port.insert("nodePort".to_owned(), draw(&mut used));
        }
    }
    if needs_health_check_node_port(spec) && health_check_node_port(spec) == 0 {
        let port = draw(&mut used);
        spec.insert("healthCheckNodePort".to_owned(), port);
    }
}

/// `patchAllocatedValues` for node ports: when old and new both need them, a port of the
/// update without a node port takes the one the stored port of its name had, unless a port
/// of both already uses it; the health check node port is kept the same way.
pub(crate) fn keep(old: &DynamicObject, new: &mut DynamicObject) {
    let Some(old_spec) = old.data.get("spec").and_then(Value::as_object) else { return };
    let Some(spec) = new.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if needs_node_port(old_spec) && needs_node_port(spec) {
        let old_ports =
            old_spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let (old_used, new_used) = (node_ports_of(old_spec), node_ports_of(spec));
        let used = |p: u64| new_used.contains(&p) && old_used.contains(&p);
        let name_of = |p: &Value| p.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter(|p| node_port_of(p) == 0) {
                let name = name_of(port);
                // The map by name keeps the last port of a name, as Go's map assignment does.
                let was = old_ports.iter().rev().find(|o| name_of(o) == name).map_or(0, node_port_of);
                if was != 0
                    && !used(was)
                    && let Some(port) = port.as_object_mut()
                {
                    port.insert("nodePort".to_owned(), json!(was));
                }
            }
        }
    }
    if needs_health_check_node_port(old_spec)
        && needs_health_check_node_port(spec)
        && health_check_node_port(spec) == 0
        && let Some(hc) = old_spec.get("healthCheckNodePort")
    {
        spec.insert("healthCheckNodePort".to_owned(), hc.clone());
    }
}

/// `dropTypeDependentFields`: an update that switches a Service to a type that no longer uses
/// a field, and leaves that field as stored, drops it (cluster IPs and families for
/// ExternalName, node ports, the health check node port, allocateLoadBalancerNodePorts,
/// loadBalancerClass, the external traffic policy); a Service that is no longer a
/// LoadBalancer loses its load balancer status.
pub(crate) fn drop_type_dependent_fields(old: &DynamicObject, new: &mut DynamicObject) {
    let Some(old_spec) = old.data.get("spec").and_then(Value::as_object) else { return };
    let Some(spec) = new.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let same = |spec: &Map<String, Value>, key: &str| spec.get(key) == old_spec.get(key);
    let drop_if_same = |spec: &mut Map<String, Value>, keys: &[&str]| {
        if keys.iter().all(|k| same(spec, k)) {
            for key in keys {
                spec.remove(*key);
            }
        }
    };
    if service_type(old_spec) != "ExternalName" && service_type(spec) == "ExternalName" {
        drop_if_same(spec, &["clusterIP", "clusterIPs"]);
        drop_if_same(spec, &["ipFamilies"]);
        drop_if_same(spec, &["ipFamilyPolicy"]);
    }
    // `sameNodePorts`: no node port the stored Service did not have.
    let old_ports = node_ports_of(old_spec);
    if needs_node_port(old_spec)
        && !needs_node_port(spec)
        && node_ports_of(spec).iter().all(|p| *p == 0 || old_ports.contains(p))
        && let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut)
    {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.remove("nodePort");
        }
    }
    if needs_health_check_node_port(old_spec) && !needs_health_check_node_port(spec) {
        drop_if_same(spec, &["healthCheckNodePort"]);
    }
    if service_type(old_spec) == "LoadBalancer" && service_type(spec) != "LoadBalancer" {
        drop_if_same(spec, &["allocateLoadBalancerNodePorts"]);
        drop_if_same(spec, &["loadBalancerClass"]);
    }
    if defaults::externally_accessible(old_spec) && !defaults::externally_accessible(spec) {
        drop_if_same(spec, &["externalTrafficPolicy"]);
    }
    if service_type(spec) != "LoadBalancer"
        && let Some(status) = new.data.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("loadBalancer".to_owned(), json!({}));
    }
}
