//! A Service's node ports and its type-dependent fields, as the Service REST
//! (`pkg/registry/core/service/storage/storage.go`) and strategy
//! (`pkg/registry/core/service/strategy.go`) treat them: allocation on create and update,
//! `patchAllocatedValues` (an update without node ports keeps the allocated ones) and
//! `dropTypeDependentFields` (a type switch drops what the new type does not use).

use kube_core::DynamicObject;
use serde_json::{Map, Value, json};

use crate::{context::IdSource, defaults};

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
/// tracks no collisions between Services, only within one).
pub(crate) fn allocate(object: &mut DynamicObject, ids: &mut dyn IdSource) {
    let Some(spec) = object.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let allocates = match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    };
    let mut used = node_ports_of(spec);
    used.push(health_check_node_port(spec));
    let mut draw = |used: &mut Vec<u64>| {
        let (min, max) = (NODE_PORT_MIN as u64, NODE_PORT_MAX as u64);
        let range = max - min + 1;
        // Bounded: a Service has far fewer ports than the range has numbers.
        let port = (0..range)
            .map(|_| ids.next_u64() % range + min)
            .find(|p| !used.contains(p))
            .expect("a Service has fewer ports than the node port range");
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
