//! What the EndpointSlice controller writes for one Service: upstream's `Reconciler`
//! (`staging/src/k8s.io/endpointslice/reconciler.go`), as a pure function from the Service, its
//! Pods, the Nodes and the slices it manages to a [`Plan`] of creates, updates and deletes.
//!
//! - Slices are kept per address type (from the Service's `ipFamilies`; its cluster IP's family
//!   without them; both for a headless Service without them); a slice of a type the Service no
//!   longer has is deleted.
//! - Within a type, Pods are grouped by the ports they resolve (a named `targetPort` may resolve
//!   to different numbers on different Pods); each group fills slices of at most
//!   [`MAX_ENDPOINTS_PER_SLICE`] endpoints. An endpoint is identified by its addresses, hostname
//!   and Pod (namespace, name): one whose conditions, node, zone or Pod uid changed is updated in
//!   place in its slice. Endpoints no longer wanted are dropped from their slices (a slice left
//!   empty is deleted); new ones go first into slices being updated anyway (the fullest first),
//!   then into the unchanged slice they fill most closely, then into new slices.
//! - A slice whose labels differ from the Service's (the reserved ones aside) is updated.
//! - A Service with no endpoints keeps one placeholder slice: no ports, no endpoints.
//! - A new slice that a deleted one can stand for becomes an update of it instead (same address
//!   type, owned by the Service): fewer writes, and names that stay.
//!
//! Where it differs: upstream's sets are hash maps and it takes "any" endpoint or slice where
//! several qualify; here every choice is the first in a fixed order (endpoints by addresses,
//! hostname and Pod; slices by name), so a seed replays. Ports are ordered by name, number and
//! protocol, where upstream orders them by a hash. Topology hints and `trafficDistribution` are
//! not modelled (no hints are written). A Pod whose Node is not in the cache is published without
//! a zone, where upstream leaves it out and retries: a world without the kubelet-lite (which
//! registers [`super::kubelet::NODE_NAME`]) has no Node object unless its workload creates one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use model_apiserver::versions::{Required, present};
use sim::api::{ObjectMeta, ResourceExt};
use sim::runtime::reflector::{ObjectRef, Store};

use super::endpoint_pods::{self, LABEL_HEADLESS, LABEL_TOPOLOGY_ZONE};
use super::{owners, pod_state};

/// The label naming a slice's Service (discovery/v1 `LabelServiceName`).
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages a slice (discovery/v1 `LabelManagedBy`).
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// This controller's value of [`LABEL_MANAGED_BY`].
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// At most this many endpoints in one slice (kube-controller-manager's default
/// `--max-endpoints-per-slice`).
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// `addressType: IPv4`.
pub const ADDRESS_TYPE_IPV4: &str = "IPv4";
/// `addressType: IPv6`.
pub const ADDRESS_TYPE_IPV6: &str = "IPv6";

/// The writes one sync makes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// New slices (named by `generateName`).
    pub create: Vec<EndpointSlice>,
    /// Slices replaced whole (each carries the name, and the resourceVersion read unless it was
    /// a create turned into an update).
    pub update: Vec<EndpointSlice>,
    /// Slices deleted.
    pub delete: Vec<EndpointSlice>,
}

impl Plan {
    fn extend(&mut self, other: Plan) {
        self.create.extend(other.create);
        self.update.extend(other.update);
        self.delete.extend(other.delete);
    }
}

/// The address types the Service's slices have (`getAddressTypesForService`).
pub fn address_types(service: &Service) -> BTreeSet<&'static str> {
    let spec = service.spec.as_ref();
    let mut types: BTreeSet<&'static str> = spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|family| match family.as_str() {
            "IPv4" => Some(ADDRESS_TYPE_IPV4),
            "IPv6" => Some(ADDRESS_TYPE_IPV6),
            _ => None,
        })
        .collect();
    if types.is_empty() {
        if endpoint_pods::is_service_ip_set(service) {
            let ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or_default();
            types.insert(if endpoint_pods::is_ipv6(ip) { ADDRESS_TYPE_IPV6 } else { ADDRESS_TYPE_IPV4 });
        } else {
            types.extend([ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6]);
        }
    }
    types
}

/// The plan for `service` (upstream's `Reconcile`): `pods` are those it selects, `existing` the
/// slices labelled as its and managed here, not being deleted.
pub fn reconcile(
    service: &Service,
    pods: &[Arc<Pod>],
    existing: &[Arc<EndpointSlice>],
    nodes: &Store<Node>,
) -> Plan {
    let supported = address_types(service);
    let mut plan = Plan::default();
    let mut by_type: BTreeMap<&str, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        match supported.get(slice.address_type.as_str()) {
            Some(address_type) => by_type.entry(*address_type).or_default().push(&**slice),
            None => plan.delete.push((**slice).clone()),
        }
    }
    let mut typed = Plan::default();
    for address_type in &supported {
        let slices = by_type.remove(*address_type).unwrap_or_default();
        typed.extend(reconcile_by_address_type(service, pods, &slices, address_type, nodes));
    }
    // Slices of types the Service dropped go last, as upstream deletes them after the others.
    typed.delete.append(&mut plan.delete);
    typed
}

/// A slice's ports as grouping keys them, in order: name, number, protocol, appProtocol.
type PortsKey = Vec<(String, i32, String, Option<String>)>;

/// `NewPortMapKey`: the ports, in a fixed order.
fn ports_key(ports: &[EndpointPort]) -> PortsKey {
    let mut key: PortsKey = ports
        .iter()
        .map(|p| {
            let name = p.name.clone().unwrap_or_default();
            (name, p.port.unwrap_or_default(), p.protocol.clone().unwrap_or_default(), p.app_protocol.clone())
        })
        .collect();
    key.sort();
    key
}

fn ports_of(key: &PortsKey) -> Vec<EndpointPort> {
    key.iter()
        .map(|(name, port, protocol, app_protocol)| EndpointPort {
            name: Some(name.clone()),
            port: Some(*port),
            protocol: Some(protocol.clone()),
            app_protocol: app_protocol.clone(),
        })
        .collect()
}

/// An endpoint as slices identify it (`hashEndpoint`): its addresses (sorted), hostname, and
/// the namespace and name of its Pod.
type EndpointKey = (Vec<String>, String, String, String);

fn endpoint_key(endpoint: &Endpoint) -> EndpointKey {
    let mut addresses = endpoint.addresses.clone();
    addresses.sort();
    let target = endpoint.target_ref.as_ref();
    (
        addresses,
        endpoint.hostname.clone().unwrap_or_default(),
        target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
        target.and_then(|t| t.name.clone()).unwrap_or_default(),
    )
}

/// The endpoints wanted for one group of ports, by identity.
type EndpointSet = BTreeMap<EndpointKey, Endpoint>;

fn reconcile_by_address_type(
    service: &Service,
    pods: &[Arc<Pod>],
    existing: &[&EndpointSlice],
    address_type: &str,
    nodes: &Store<Node>,
) -> Plan {
    let mut plan = Plan::default();
    let mut existing_by_ports: BTreeMap<PortsKey, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        if owned_by(slice, service) {
            existing_by_ports
                .entry(ports_key(slice.ports.as_deref().unwrap_or_default()))
                .or_default()
                .push(*slice);
        } else {
            // A slice of an earlier Service of the same name.
            plan.delete.push((*slice).clone());
        }
    }
    let mut desired: BTreeMap<PortsKey, EndpointSet> = BTreeMap::new();
    for pod in pods {
        // Terminating Pods are published too, with their conditions.
        if !endpoint_pods::should_be_in_endpoints(pod, true) {
            continue;
        }
        let ports = desired.entry(ports_key(&endpoint_ports(service, pod))).or_default();
        let node = endpoint_pods::node_name(pod).and_then(|name| nodes.get(&ObjectRef::new(name)));
        let endpoint = pod_to_endpoint(pod, node.as_deref(), service, address_type);
        if !endpoint.addresses.is_empty() {
            ports.insert(endpoint_key(&endpoint), endpoint);
        }
    }
    for (key, wanted) in desired.iter_mut() {
        let slices = existing_by_ports.get(key).map(Vec::as_slice).unwrap_or_default();
        let wanted = std::mem::take(wanted);
        plan.extend(reconcile_by_port_mapping(service, slices, wanted, &ports_of(key), address_type));
    }
    for (key, slices) in &existing_by_ports {
        if !desired.contains_key(key) {
            plan.delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    // A Service without endpoints keeps one placeholder slice.
    if existing.len() == plan.delete.len() && plan.create.is_empty() {
        let placeholder = new_slice(service, Vec::new(), address_type);
        if plan.delete.len() == 1 && is_placeholder_like(&plan.delete[0], &placeholder) {
            plan.delete.clear();
        } else {
            plan.create.push(placeholder);
        }
    }
    plan
}

/// `placeholderSliceCompare`: the same namespace, labels and address type, with neither ports
/// nor endpoints.
fn is_placeholder_like(slice: &EndpointSlice, placeholder: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    slice.metadata.namespace == placeholder.metadata.namespace
        && labels(slice) == labels(placeholder)
        && slice.address_type == placeholder.address_type
        && slice.endpoints.value().is_empty()
        && slice.ports.as_ref().is_none_or(Vec::is_empty)
}

/// `reconcileByPortMapping`: the slices of one group of ports against the endpoints it wants.
fn reconcile_by_port_mapping(
    service: &Service,
    existing: &[&EndpointSlice],
    mut wanted: EndpointSet,
    ports: &[EndpointPort],
    address_type: &str,
) -> Plan {
    let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged: BTreeSet<String> = BTreeSet::new();
    let mut to_update: BTreeSet<String> = BTreeSet::new();
    let mut to_delete: BTreeSet<String> = BTreeSet::new();
    // 1. Drop the endpoints no longer wanted and refresh those that changed.
    for slice in existing {
        let name = slice.name_any();
        let mut kept = Vec::new();
        let mut changed = false;
        for endpoint in slice.endpoints.value() {
            if let Some(got) = wanted.remove(&endpoint_key(endpoint)) {
                changed |= !equal_beyond_hash(&got, endpoint);
                kept.push(got);
            }
        }
        let (labels, labels_changed) = slice_labels(slice, service);
        if changed || kept.len() != slice.endpoints.value().len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
                by_name.insert(name, (*slice).clone());
            } else {
                let mut copy = (*slice).clone();
                *copy.endpoints.value_mut() = kept;
                copy.metadata.labels = Some(labels);
                by_name.insert(name.clone(), copy);
                to_update.insert(name);
            }
        } else if labels_changed {
            let mut copy = (*slice).clone();
            copy.metadata.labels = Some(labels);
            by_name.insert(name.clone(), copy);
            to_update.insert(name);
        } else {
            by_name.insert(name.clone(), (*slice).clone());
            unchanged.insert(name);
        }
    }
    // 2. Fill the slices being updated anyway, the fullest first.
    if !wanted.is_empty() && !to_update.is_empty() {
        let mut order: Vec<&String> = to_update.iter().collect();
        order.sort_by_key(|name| {
            std::cmp::Reverse(by_name.get(*name).map_or(0, |s| s.endpoints.value().len()))
        });
        for name in order {
            if let Some(slice) = by_name.get_mut(name) {
                fill(slice, &mut wanted);
            }
        }
    }
    // 3. Put the rest into the unchanged slice they fill most closely, or into new slices.
    let mut create = Vec::new();
    while !wanted.is_empty() {
        let closest = (wanted.len() < MAX_ENDPOINTS_PER_SLICE)
            .then(|| slice_to_fill(unchanged.iter().filter_map(|n| by_name.get(n)), wanted.len()))
            .flatten();
        match closest {
            Some(name) => {
                if let Some(slice) = by_name.get_mut(&name) {
                    fill(slice, &mut wanted);
                }
                unchanged.remove(&name);
                to_update.insert(name);
            }
            None => {
                let mut slice = new_slice(service, ports.to_vec(), address_type);
                fill(&mut slice, &mut wanted);
                create.push(slice);
            }
        }
    }
    let pick = |names: &BTreeSet<String>| names.iter().filter_map(|n| by_name.get(n).cloned()).collect();
    Plan { create, update: pick(&to_update), delete: pick(&to_delete) }
}

/// Move wanted endpoints into `slice` until it is full (`PopAny`, in key order here).
fn fill(slice: &mut EndpointSlice, wanted: &mut EndpointSet) {
    let endpoints = slice.endpoints.value_mut();
    while endpoints.len() < MAX_ENDPOINTS_PER_SLICE {
        let Some((_, endpoint)) = wanted.pop_first() else { break };
        endpoints.push(endpoint);
    }
}

/// `getSliceToFill`: the slice that `count` more endpoints fill most closely without overflowing
/// it (the first such, in name order).
fn slice_to_fill<'a>(slices: impl Iterator<Item = &'a EndpointSlice>, count: usize) -> Option<String> {
    let mut closest: Option<(usize, String)> = None;
    for slice in slices {
        let Some(room) = MAX_ENDPOINTS_PER_SLICE.checked_sub(count + slice.endpoints.value().len()) else {
            continue;
        };
        if closest.as_ref().is_none_or(|(best, _)| room < *best) {
            closest = Some((room, slice.name_any()));
            if room == 0 {
                break;
            }
        }
    }
    closest.map(|(_, name)| name)
}

/// `EndpointsEqualBeyondHash`: the same node, zone, conditions and Pod (its resourceVersion
/// aside).
fn equal_beyond_hash(a: &Endpoint, b: &Endpoint) -> bool {
    let target = |e: &Endpoint| e.target_ref.clone().map(|t| ObjectReference { resource_version: None, ..t });
    let conditions = |e: &Endpoint| {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    };
    a.node_name == b.node_name && a.zone == b.zone && conditions(a) == conditions(b) && target(a) == target(b)
}

/// `getEndpointPorts`: each Service port the Pod has (a headless Service may have none).
pub fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = endpoint_pods::service_ports(service);
    ports
        .iter()
        .filter_map(|port| {
            let number = endpoint_pods::find_port(pod, port)?;
            Some(EndpointPort {
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                app_protocol: port.app_protocol.clone(),
            })
        })
        .collect()
}

/// `podToEndpoint`: the Pod's addresses of `address_type`, its conditions (`serving`: Ready;
/// `terminating`: being deleted; `ready`: serving and not terminating, or always when the Service
/// publishes not-ready addresses), a reference to it, its node, the node's zone and, if it names
/// the Service as its subdomain, its hostname.
pub fn pod_to_endpoint(pod: &Pod, node: Option<&Node>, service: &Service, address_type: &str) -> Endpoint {
    let serving = pod_state::is_ready(pod);
    let terminating = pod_state::is_terminating(pod);
    let ready = endpoint_pods::publishes_not_ready(service) || (serving && !terminating);
    let ipv6 = address_type == ADDRESS_TYPE_IPV6;
    let addresses = endpoint_pods::pod_ips(pod)
        .into_iter()
        .filter(|ip| endpoint_pods::is_ipv6(ip) == ipv6)
        .map(str::to_owned)
        .collect();
    let zone = node.and_then(|n| n.labels().get(LABEL_TOPOLOGY_ZONE)).filter(|z| !z.is_empty()).cloned();
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(endpoint_pods::target_ref(pod)),
        node_name: endpoint_pods::node_name(pod).map(str::to_owned),
        zone,
        hostname: endpoint_pods::should_set_hostname(pod, service)
            .then(|| endpoint_pods::hostname(pod))
            .flatten(),
        ..Endpoint::default()
    }
}

/// `newEndpointSlice`: an empty slice for the Service, named by `generateName: <service>-`,
/// owned by it (a controller reference), labelled as its and managed here.
pub fn new_slice(service: &Service, ports: Vec<EndpointPort>, address_type: &str) -> EndpointSlice {
    let mut slice = EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", service.name_any())),
            namespace: service.metadata.namespace.clone(),
            owner_references: Some(vec![owners::controller_ref(service)]),
            ..ObjectMeta::default()
        },
        address_type: address_type.to_owned(),
        endpoints: present(Vec::new()),
        ports: (!ports.is_empty()).then_some(ports),
    };
    slice.metadata.labels = Some(slice_labels(&slice, service).0);
    slice
}

/// `ownedBy`: whether a controller reference (or any owner reference) names the Service's uid.
pub fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    let uid = service.metadata.uid.as_deref();
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| Some(o.uid.as_str()) == uid && o.kind == "Service" && o.api_version == "v1")
}

fn is_reserved_label(key: &str) -> bool {
    key == LABEL_SERVICE_NAME || key == LABEL_MANAGED_BY || key == LABEL_HEADLESS
}

/// `setEndpointSliceLabels`: the Service's labels (the reserved ones aside), the headless label
/// for a Service without a cluster IP, the Service's name and this controller's; and whether the
/// slice's own non-reserved labels differ from the Service's.
pub fn slice_labels(slice: &EndpointSlice, service: &Service) -> (BTreeMap<String, String>, bool) {
    let unreserved = |labels: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        labels.iter().filter(|(k, _)| !is_reserved_label(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let mut labels = unreserved(service.labels());
    let changed = unreserved(slice.labels()) != labels;
    if !endpoint_pods::is_service_ip_set(service) {
        labels.insert(LABEL_HEADLESS.to_owned(), String::new());
    }
    labels.insert(LABEL_SERVICE_NAME.to_owned(), service.name_any());
    labels.insert(LABEL_MANAGED_BY.to_owned(), CONTROLLER_NAME.to_owned());
    (labels, changed)
}
