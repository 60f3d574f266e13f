//! Which Pods back a Service, and what of each the endpoints controllers publish: the parts of
//! upstream's `k8s.io/endpointslice/util` and `podutil` that the Endpoints and the EndpointSlice
//! controllers share.
//!
//! - A Service selects the Pods of its namespace whose labels carry every pair of
//!   `spec.selector`; a Service without a selector (or with an empty one, which the real API
//!   server stores as none) selects nothing, and its endpoints are the user's.
//! - A Pod is published ([`should_be_in_endpoints`]) once it has an IP and while it is not
//!   terminal (Succeeded or Failed); a Pod being deleted only where terminating endpoints are
//!   published.
//! - A Pod change concerns the Services selecting it before or after ([`services_to_sync`]):
//!   upstream's `GetPodUpdateProjectionKey` and `GetServicesToUpdate`.
//! - A Service port's `targetPort` is its number, or the `containerPort` of the Pod's container
//!   port of that name and protocol ([`find_port`]).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sim::api::ResourceExt;
use sim::runtime::reflector::{ObjectRef, Store};

use super::changes::Change;
use super::pod_state;

/// The label every node's zone is read from (core/v1 `LabelTopologyZone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// The label an Endpoints or EndpointSlice of a headless Service carries, with an empty value
/// (core/v1 `IsHeadlessService`).
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// `clusterIP: None`, a headless Service.
pub const CLUSTER_IP_NONE: &str = "None";
/// The protocol a port has when it names none (the API server defaults it).
const PROTOCOL_DEFAULT: &str = "TCP";

/// The Service's selector, `None` when it selects nothing (no selector, or an empty one).
pub fn selector(service: &Service) -> Option<&BTreeMap<String, String>> {
    service.spec.as_ref()?.selector.as_ref().filter(|s| !s.is_empty())
}

/// Whether `selector` selects a Pod with `labels` (`labels.SelectorFromSet(..).Matches`).
pub fn selector_matches(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(key, value)| labels.get(key) == Some(value))
}

/// Whether the Service selects the Pod: same namespace, and its selector matches the labels.
pub fn selects(service: &Service, pod: &Pod) -> bool {
    service.metadata.namespace == pod.metadata.namespace
        && selector(service).is_some_and(|s| selector_matches(s, pod.labels()))
}

/// The Service's type (`ClusterIP` when unset, as the API server defaults it).
pub fn service_type(service: &Service) -> &str {
    service.spec.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("ClusterIP")
}

/// Whether the Service has a cluster IP (`helper.IsServiceIPSet`): neither headless nor unset.
pub fn is_service_ip_set(service: &Service) -> bool {
    let ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()).unwrap_or_default();
    !ip.is_empty() && ip != CLUSTER_IP_NONE
}

/// Whether the Service is headless (`clusterIP: None`).
pub fn is_headless(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some(CLUSTER_IP_NONE)
}

/// Whether the Service publishes not-ready (and terminating) Pods as ready.
pub fn publishes_not_ready(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false)
}

/// The Service's ports.
pub fn service_ports(service: &Service) -> &[ServicePort] {
    service.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default()
}

/// The Pod's IPs: `status.podIPs`, or `status.podIP` alone where a status has only that (the
/// kubelet-lite writes `podIP` only; the real API server keeps both in step).
pub fn pod_ips(pod: &Pod) -> Vec<&str> {
    let Some(status) = pod.status.as_ref() else { return Vec::new() };
    let ips: Vec<&str> =
        status.pod_ips.iter().flatten().map(|ip| ip.ip.as_str()).filter(|ip| !ip.is_empty()).collect();
    if !ips.is_empty() {
        return ips;
    }
    status.pod_ip.as_deref().filter(|ip| !ip.is_empty()).into_iter().collect()
}

/// Whether an address is IPv6 (`utilnet.IsIPv6String`, for the well-formed IPs a status holds).
pub fn is_ipv6(ip: &str) -> bool {
    ip.contains(':')
}

/// `ShouldPodBeInEndpoints`: not terminal, has an IP, and not being deleted unless
/// `include_terminating`.
pub fn should_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    !pod_state::is_finished(pod)
        && !pod_ips(pod).is_empty()
        && (include_terminating || !pod_state::is_terminating(pod))
}

/// `ShouldSetHostname`: the Pod names a hostname and the Service as its subdomain.
pub fn should_set_hostname(pod: &Pod, service: &Service) -> bool {
    let spec = pod.spec.as_ref();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).unwrap_or_default();
    let subdomain = spec.and_then(|s| s.subdomain.as_deref()).unwrap_or_default();
    !hostname.is_empty()
        && subdomain == service.name_any()
        && service.metadata.namespace == pod.metadata.namespace
}

/// The Pod's `spec.hostname`, if any.
pub fn hostname(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.hostname.clone())
}

/// The node the Pod is bound to, if any.
pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}

/// The reference an endpoint holds to its Pod: kind, namespace, name and uid.
pub fn target_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".to_owned()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

fn protocol(protocol: Option<&String>) -> &str {
    protocol.map_or(PROTOCOL_DEFAULT, String::as_str)
}

/// `FindPort`: the port a Service port reaches on the Pod: its `targetPort` number, or the
/// `containerPort` of the container port with that name and the Service port's protocol (in the
/// containers, then the sidecars: init containers that restart `Always`). `None` if it names a
/// port the Pod does not have. A `targetPort` left unset is the port itself, as defaulted.
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(number)) => Some(*number),
        Some(IntOrString::String(name)) => {
            let spec = pod.spec.as_ref()?;
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            let wanted = protocol(port.protocol.as_ref());
            spec.containers
                .iter()
                .chain(sidecars)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| p.name.as_deref() == Some(name.as_str()) && protocol(p.protocol.as_ref()) == wanted)
                .map(|p| p.container_port)
        }
    }
}

/// The Services of `namespace` whose selector selects Pods labelled `labels`
/// (`getServicesForPod`).
pub fn services_selecting(
    services: &Store<Service>,
    namespace: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> BTreeSet<ObjectRef<Service>> {
    services
        .state()
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == namespace)
        .filter(|s| selector(s).is_some_and(|selector| selector_matches(selector, labels)))
        .map(|s| ObjectRef::from_obj(&**s))
        .collect()
}

/// The Services to sync after a Pod change (`GetPodUpdateProjectionKey`, then
/// `GetServicesToUpdate`): those selecting an added or deleted Pod; for an update, none if its
/// resourceVersion did not move or nothing endpoint-related changed, those selecting it now if
/// only that changed, and, if its labels (or hostname or subdomain) changed, those that select it
/// before or after (all of them if its endpoint changed too, else only those that gained or lost
/// it).
pub fn services_to_sync(services: &Store<Service>, change: &Change<Pod>) -> BTreeSet<ObjectRef<Service>> {
    let selecting = |pod: &Pod| services_selecting(services, pod.metadata.namespace.as_deref(), pod.labels());
    match change {
        Change::Added(pod) | Change::Deleted(pod) => selecting(pod),
        Change::Updated { old, new } => {
            if old.metadata.resource_version == new.metadata.resource_version {
                return BTreeSet::new();
            }
            let (pod_changed, labels_changed) = pod_endpoints_changed(old, new);
            match (pod_changed, labels_changed) {
                (false, false) => BTreeSet::new(),
                (true, false) => selecting(new),
                (true, true) => &selecting(new) | &selecting(old),
                (false, true) => &selecting(new) ^ &selecting(old),
            }
        }
        Change::Synced => BTreeSet::new(),
    }
}

/// `podEndpointsChanged`: whether the Pod's endpoint changed (being deleted, readiness, IPs),
/// and whether its Service membership may have (labels, hostname or subdomain).
fn pod_endpoints_changed(old: &Pod, new: &Pod) -> (bool, bool) {
    let spec_part = |p: &Pod| {
        let spec = p.spec.as_ref();
        (spec.and_then(|s| s.hostname.clone()), spec.and_then(|s| s.subdomain.clone()))
    };
    let labels_changed = old.labels() != new.labels() || spec_part(old) != spec_part(new);
    let pod_changed = old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || pod_state::is_ready(old) != pod_state::is_ready(new)
        || pod_ips(old) != pod_ips(new);
    (pod_changed, labels_changed)
}
