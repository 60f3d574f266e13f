//! The endpoints controller: for each Service with a selector, an Endpoints of the same name
//! listing the Pods it selects.
//!
//! As kube-controller-manager's endpoints controller (`pkg/controller/endpoint`):
//! - a sync is keyed by the Service's namespace and name and reads the Service, its Pods and the
//!   Endpoints from informer caches (upstream's listers);
//! - a Service that is gone gets its Endpoints deleted (a 404 is no error); an `ExternalName`
//!   Service or one without a selector is left alone: its Endpoints, if any, are the user's;
//! - a selected Pod is published once it has an IP of the Service's IP family, is not terminal and
//!   (unless `publishNotReadyAddresses`) not being deleted ([`endpoint_pods`]): with its IP,
//!   `nodeName`, `targetRef` (kind Pod, namespace, name, uid) and `hostname` when the Pod names
//!   the Service as its subdomain; in `addresses` if it is Ready or the Service publishes not-ready
//!   addresses, in `notReadyAddresses` otherwise;
//! - each Service port becomes an Endpoints port (its name, protocol and appProtocol) whose number
//!   is the `targetPort`, a number or the Pod's container port of that name ([`endpoint_pods::find_port`]);
//!   a Pod without the named port is left out of that port; a headless Service without ports
//!   lists its addresses without ports;
//! - the subsets are repacked ([`repack_subsets`], `endpoints.RepackSubsets`): one subset per set of
//!   addresses sharing the same ports, an address not ready on a port if any of its entries there
//!   is not, addresses sorted by IP then Pod uid;
//! - the labels are the Service's, plus `service.kubernetes.io/headless: ""` for a Service without
//!   a cluster IP; more than [`MAX_CAPACITY`] addresses are truncated ([`truncate`], ready ones
//!   kept first) and marked `endpoints.kubernetes.io/over-capacity: truncated`;
//! - nothing is written when the subsets (ignoring the Pods' resourceVersions), the labels and the
//!   capacity annotation already agree; an update carries the resourceVersion read, so a stale
//!   cache gets 409 and the sync is retried; after an update, the cache's copy of the replaced
//!   version is known stale (upstream's `staleEndpointsTracker`) and a sync that reads it fails
//!   and is retried;
//! - a Pod change syncs the Services selecting it before or after ([`endpoint_pods::services_to_sync`]),
//!   a deleted Endpoints syncs its Service (which recreates it), and at start every Endpoints
//!   without a Service is deleted (`checkLeftoverEndpoints`, leader-election records excepted);
//! - events: `FailedToCreateEndpoint` and `FailedToUpdateEndpoint` (Warning) when a write fails,
//!   from component `endpoint-controller`; a create refused because the namespace is terminating
//!   is dropped.
//!
//! Where it differs:
//! - the `endpoints.kubernetes.io/last-change-trigger-time` annotation is not set (it is removed
//!   when the Endpoints is written, as upstream does when it has no trigger time): it would be a
//!   timestamp of the Pods' changes, which no sync here needs;
//! - subsets are ordered by their addresses and ports by name, number and protocol, where upstream
//!   orders both by a hash of their printed form: the same sets, in another fixed order;
//! - a Service's deletion is kept as a key in the controller's queue cache (kube-runtime's
//!   `Controller` reconciles only cached objects, where upstream's queue holds bare keys); a key
//!   stays until the node restarts, bounded by the Services ever deleted;
//! - no `endpointUpdatesBatchPeriod` (0 by default upstream).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Pod, Service};
use sim::api::{Api, DeleteParams, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::Controller;
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::watcher::{self, Event};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::changes::{self, Change};
use super::endpoint_pods::{self, LABEL_HEADLESS};
use super::error::{Error, has_code, is_namespace_terminating, status_message};
use super::rate_limit::{MAX_RETRIES, RateLimiter, RunRateLimited};
use super::{events, pod_state};

/// The endpoints controller's node.
pub const NODE: &str = "endpoints-controller";
/// The component its Events come from (upstream's recorder).
pub const COMPONENT: &str = "endpoint-controller";
/// At most this many addresses are stored in one Endpoints (upstream's `maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// The annotation marking a truncated Endpoints (core/v1 `EndpointsOverCapacity`).
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// Its value.
pub const TRUNCATED: &str = "truncated";
/// The annotation upstream stamps with the time of the change behind a write (core/v1
/// `EndpointsLastChangeTriggerTime`); not set here.
pub const LAST_CHANGE_TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The annotation of a leader-election record kept in an Endpoints, which the start-up cleanup
/// leaves alone (`resourcelock.LeaderElectionRecordAnnotationKey`).
pub const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// Add the endpoints controller to a world, on node [`NODE`].
pub fn endpoints_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    /// The Service lister.
    services: Store<Service>,
    pods: Store<Pod>,
    endpoints: Store<Endpoints>,
    /// Per Service (namespace, name): the resourceVersion of the Endpoints this controller last
    /// replaced, which the cache must have moved past (`staleEndpointsTracker`).
    stale: Mutex<BTreeMap<(String, String), String>>,
    recorder: events::Recorder,
}

/// A queue key: a Service's namespace and name alone (it outlives the Service).
fn key(namespace: Option<String>, name: Option<String>) -> Service {
    Service { metadata: ObjectMeta { name, namespace, ..ObjectMeta::default() }, ..Service::default() }
}

/// The endpoints controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    // The queue's keys: one per Service seen, kept after its deletion so that the deletion is
    // synced. It becomes ready with the Service informer's first list.
    let (keys, key_writer) = reflector::store::<Service>();
    let key_writer = Rc::new(RefCell::new(key_writer));
    let keys_trigger = keys.subscribe();
    let (requests, requested) = futures::channel::mpsc::unbounded::<ObjectRef<Service>>();

    let services = {
        let key_writer = key_writer.clone();
        let mut listed = false;
        changes::informer(Api::<Service>::all(client.clone()), watcher::Config::default(), move |change| {
            let mut writer = key_writer.borrow_mut();
            match change {
                Change::Added(s) | Change::Updated { new: s, .. } | Change::Deleted(s) => {
                    let key = key(s.metadata.namespace.clone(), s.metadata.name.clone());
                    // Until the first list is complete, keys are buffered as the list's.
                    writer.apply_watcher_event(&if listed {
                        Event::Apply(key)
                    } else {
                        Event::InitApply(key)
                    });
                }
                Change::Synced if !listed => {
                    listed = true;
                    writer.apply_watcher_event(&Event::InitDone);
                }
                Change::Synced => {}
            }
        })
    };
    let pods = {
        let (services, requests) = (services.clone(), requests.clone());
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            for service in endpoint_pods::services_to_sync(&services, &change) {
                let _ = requests.unbounded_send(service);
            }
        })
    };
    let endpoints = changes::informer(Api::<Endpoints>::all(client.clone()), watcher::Config::default(), {
        let requests = requests.clone();
        move |change| {
            // A deleted Endpoints is recreated if its Service still wants one (`onEndpointsDelete`).
            if let Change::Deleted(endpoints) = change {
                let _ = requests.unbounded_send(ObjectRef::from_obj(&*endpoints).erase());
            }
        }
    });
    madsim::task::spawn_local(check_leftover_endpoints(keys.clone(), endpoints.clone(), key_writer));

    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, COMPONENT),
        client,
        services,
        pods,
        endpoints,
        stale: Mutex::default(),
    });
    // Every change of the key cache (a Service added, changed or deleted) syncs that key.
    Controller::for_shared_stream(futures::stream::empty(), keys)
        .watches_shared_stream(keys_trigger, |key: Arc<Service>| [ObjectRef::from_obj(&*key)])
        .reconcile_on(requested)
        .run_limited_by(RateLimiter::default().dropping_after(MAX_RETRIES), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// `checkLeftoverEndpoints`: once both caches are listed, queue every Endpoints whose Service is
/// unknown, so that the sync deletes it (an Endpoints left behind by a Service deleted while the
/// controller was down). Leader-election records are left alone.
async fn check_leftover_endpoints(
    keys: Store<Service>,
    endpoints: Store<Endpoints>,
    key_writer: Rc<RefCell<sim::reflector::Writer<Service>>>,
) {
    if keys.wait_until_ready().await.is_err() || endpoints.wait_until_ready().await.is_err() {
        return;
    }
    for leftover in endpoints.state() {
        if leftover.annotations().contains_key(LEADER_ANNOTATION) {
            continue;
        }
        if keys.get(&ObjectRef::from_obj(&*leftover).erase()).is_none() {
            let key = key(leftover.metadata.namespace.clone(), leftover.metadata.name.clone());
            key_writer.borrow_mut().apply_watcher_event(&Event::Apply(key));
        }
    }
}

/// Sync one Service's Endpoints (upstream's `syncService`).
pub async fn reconcile(key: Arc<Service>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Upstream's workers start once every informer has listed.
    if ctx.pods.wait_until_ready().await.is_err() || ctx.endpoints.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let name = key.name_any();
    let namespace =
        key.namespace().ok_or_else(|| Error::MissingNamespace { kind: "Service", name: name.clone() })?;
    let object_ref = ObjectRef::new(&name).within(&namespace);
    let api: Api<Endpoints> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(service) = ctx.services.get(&object_ref) else {
        // The Service is gone: so is its Endpoints.
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if has_code(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
        lock(&ctx.stale).remove(&(namespace, name));
        return Ok(Action::await_change());
    };
    if endpoint_pods::service_type(&service) == "ExternalName" {
        return Ok(Action::await_change());
    }
    let Some(selector) = endpoint_pods::selector(&service) else { return Ok(Action::await_change()) };
    let pods = ctx.pods.state_filter(|pod| {
        pod.metadata.namespace.as_deref() == Some(namespace.as_str())
            && endpoint_pods::selector_matches(selector, pod.labels())
    });
    let subsets = repack_subsets(&desired_subsets(&service, &pods));
    let current = ctx.endpoints.get(&object_ref.clone().erase());
    if let Some(current) = &current {
        let stale = lock(&ctx.stale).get(&(namespace.clone(), name.clone())).cloned();
        if stale.is_some() && stale == current.metadata.resource_version {
            return Err(Error::StaleCache { kind: "Endpoints", name: format!("{namespace}/{name}") });
        }
    }
    let Some(desired) = desired_endpoints(&service, current.as_deref(), subsets) else {
        return Ok(Action::await_change());
    };
    boxed(|| write(&ctx, &api, &service, current.as_deref(), desired)).await?;
    Ok(Action::await_change())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Create or update the Endpoints; on failure a Warning event, and the error.
async fn write(
    ctx: &Context,
    api: &Api<Endpoints>,
    service: &Service,
    current: Option<&Endpoints>,
    desired: Endpoints,
) -> Result<(), Error> {
    let namespace = service.namespace().unwrap_or_default();
    let name = service.name_any();
    let result = match current {
        None => api.create(&PostParams::default(), &desired).await,
        Some(_) => api.replace(&name, &PostParams::default(), &desired).await,
    };
    let error = match result {
        Ok(written) => {
            // The cache's copy of what was replaced is stale from now on.
            let replaced = current.and_then(|c| c.metadata.resource_version.clone());
            if replaced.is_some() && replaced != written.metadata.resource_version {
                lock(&ctx.stale).insert((namespace, name), replaced.unwrap_or_default());
            }
            return Ok(());
        }
        Err(error) => error,
    };
    if current.is_none() && is_namespace_terminating(&error) {
        // Creates keep failing in a terminating namespace: drop the sync.
        return Ok(());
    }
    let (reason, message) = match current {
        None => (
            "FailedToCreateEndpoint",
            format!("Failed to create endpoint for service {namespace}/{name}: {}", status_message(&error)),
        ),
        Some(_) => (
            "FailedToUpdateEndpoint",
            format!("Failed to update endpoint {namespace}/{name}: {}", status_message(&error)),
        ),
    };
    events::warning(&ctx.recorder, &events::reference(&desired), reason, message).await;
    Err(error.into())
}

/// The Endpoints to write for `service`, or `None` if `current` is up to date: the subsets (not
/// comparing the Pods' resourceVersions), the labels (the headless label aside) and the capacity
/// annotation agree.
pub fn desired_endpoints(
    service: &Service,
    current: Option<&Endpoints>,
    subsets: Vec<EndpointSubset>,
) -> Option<Endpoints> {
    let service_labels = service.metadata.labels.clone().unwrap_or_default();
    if let Some(current) = current {
        let mut compared_labels = current.metadata.labels.clone().unwrap_or_default();
        compared_labels.remove(LABEL_HEADLESS);
        if normalized(current.subsets.as_deref().unwrap_or_default()) == subsets
            && compared_labels == service_labels
            && capacity_annotation_set_correctly(current)
        {
            return None;
        }
    }
    let mut new = current.cloned().unwrap_or_else(|| Endpoints {
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        subsets: None,
    });
    let mut labels = service_labels;
    if endpoint_pods::is_service_ip_set(service) {
        labels.remove(LABEL_HEADLESS);
    } else {
        labels.insert(LABEL_HEADLESS.to_owned(), String::new());
    }
    let mut annotations = new.metadata.annotations.take().unwrap_or_default();
    annotations.remove(LAST_CHANGE_TRIGGER_TIME_ANNOTATION);
    let mut subsets = subsets;
    if truncate(&mut subsets, MAX_CAPACITY) {
        annotations.insert(OVER_CAPACITY_ANNOTATION.to_owned(), TRUNCATED.to_owned());
    } else {
        annotations.remove(OVER_CAPACITY_ANNOTATION);
    }
    new.metadata.labels = (!labels.is_empty()).then_some(labels);
    new.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    new.subsets = (!subsets.is_empty()).then_some(subsets);
    Some(new)
}

/// `capacityAnnotationSetCorrectly`: within capacity and not marked over it.
fn capacity_annotation_set_correctly(endpoints: &Endpoints) -> bool {
    let count: usize = endpoints.subsets.iter().flatten().map(address_count).sum();
    count <= MAX_CAPACITY && !endpoints.annotations().contains_key(OVER_CAPACITY_ANNOTATION)
}

fn address_count(subset: &EndpointSubset) -> usize {
    subset.addresses.as_ref().map_or(0, Vec::len) + subset.not_ready_addresses.as_ref().map_or(0, Vec::len)
}

/// Subsets as compared: empty lists as absent, and the Pods' resourceVersions left out.
fn normalized(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let addresses = |list: &Option<Vec<EndpointAddress>>| {
        let list: Vec<EndpointAddress> = list
            .iter()
            .flatten()
            .map(|a| {
                let mut a = a.clone();
                if let Some(target) = a.target_ref.as_mut() {
                    target.resource_version = None;
                }
                a
            })
            .collect();
        (!list.is_empty()).then_some(list)
    };
    subsets
        .iter()
        .map(|s| EndpointSubset {
            addresses: addresses(&s.addresses),
            not_ready_addresses: addresses(&s.not_ready_addresses),
            ports: s.ports.clone().filter(|p| !p.is_empty()),
        })
        .collect()
}

/// One subset per published Pod and Service port (upstream's `addEndpointSubset` loop), before
/// repacking.
pub fn desired_subsets(service: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let publish_not_ready = endpoint_pods::publishes_not_ready(service);
    let ports = endpoint_pods::service_ports(service);
    let mut subsets = Vec::new();
    for pod in pods {
        if !endpoint_pods::should_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let Some(address) = address_for(service, pod) else { continue };
        let ready = publish_not_ready || pod_state::is_ready(pod);
        let subset = |port: Option<EndpointPort>| {
            let addresses = Some(vec![address.clone()]);
            let (addresses, not_ready_addresses) = if ready { (addresses, None) } else { (None, addresses) };
            EndpointSubset { addresses, not_ready_addresses, ports: port.map(|p| vec![p]) }
        };
        if ports.is_empty() {
            // A headless Service may have no ports: its addresses are listed alone.
            if endpoint_pods::is_headless(service) {
                subsets.push(subset(None));
            }
            continue;
        }
        for port in ports {
            let Some(number) = endpoint_pods::find_port(pod, port) else { continue };
            subsets.push(subset(Some(EndpointPort {
                name: port.name.clone().filter(|n| !n.is_empty()),
                port: number,
                protocol: port.protocol.clone(),
                app_protocol: port.app_protocol.clone(),
            })));
        }
    }
    subsets
}

/// `podToEndpointAddressForService`: the Pod's IP of the Service's family (its first
/// `ipFamilies` entry, else its cluster IP's, else for a headless Service the Pod's own), its
/// node, a reference to it and, if it names the Service as its subdomain, its hostname.
fn address_for(service: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = service.spec.as_ref();
    let ips = endpoint_pods::pod_ips(pod);
    let ipv6 = match spec.and_then(|s| s.ip_families.as_ref()).and_then(|f| f.first()) {
        Some(family) => family == "IPv6",
        None if endpoint_pods::is_service_ip_set(service) => {
            endpoint_pods::is_ipv6(spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or_default())
        }
        None => ips.first().is_some_and(|ip| endpoint_pods::is_ipv6(ip)),
    };
    let ip = ips.into_iter().find(|ip| endpoint_pods::is_ipv6(ip) == ipv6)?;
    Some(EndpointAddress {
        ip: ip.to_owned(),
        node_name: endpoint_pods::node_name(pod).map(str::to_owned),
        target_ref: Some(endpoint_pods::target_ref(pod)),
        hostname: endpoint_pods::should_set_hostname(pod, service)
            .then(|| endpoint_pods::hostname(pod))
            .flatten(),
    })
}

/// A port as the repacking keys it: name, number, protocol and appProtocol; `None` is the
/// sentinel of addresses listed without ports.
type PortKey = Option<(Option<String>, i32, Option<String>, Option<String>)>;
/// An address as the repacking dedupes it: IP and Pod uid (`addressKey`).
type AddressKey = (String, String);

fn port_key(port: &EndpointPort) -> PortKey {
    Some((port.name.clone(), port.port, port.protocol.clone(), port.app_protocol.clone()))
}

fn address_key(address: &EndpointAddress) -> AddressKey {
    let uid = address.target_ref.as_ref().and_then(|t| t.uid.clone()).unwrap_or_default();
    (address.ip.clone(), uid)
}

/// `endpoints.RepackSubsets`: the canonical layout of `subsets`. Every (address, port) pair is
/// taken apart, an address counting as not ready on a port if any of its entries there is not;
/// then the ports offered by the very same addresses (with the same readiness) share one subset.
/// Addresses are deduplicated by IP and Pod uid and sorted by IP, then uid (as
/// `LessEndpointAddress`); ports within a subset by name, number and protocol; subsets by their
/// addresses. Addresses listed without ports keep a subset without ports.
pub fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let mut addresses: BTreeMap<AddressKey, EndpointAddress> = BTreeMap::new();
    let mut by_port: BTreeMap<PortKey, BTreeMap<AddressKey, bool>> = BTreeMap::new();
    for subset in subsets {
        let ports: Vec<PortKey> = match subset.ports.as_deref() {
            Some(ports) if !ports.is_empty() => ports.iter().map(port_key).collect(),
            _ => vec![None],
        };
        let entries = subset.addresses.iter().flatten().map(|a| (a, true));
        let entries = entries.chain(subset.not_ready_addresses.iter().flatten().map(|a| (a, false)));
        for (address, ready) in entries {
            let key = address_key(address);
            addresses.entry(key.clone()).or_insert_with(|| address.clone());
            for port in &ports {
                // Not ready wins over ready.
                let was_ready = by_port.entry(port.clone()).or_default().entry(key.clone()).or_insert(ready);
                *was_ready &= ready;
            }
        }
    }
    let mut by_addresses: BTreeMap<Vec<(AddressKey, bool)>, Vec<PortKey>> = BTreeMap::new();
    for (port, set) in by_port {
        by_addresses.entry(set.into_iter().collect()).or_default().push(port);
    }
    by_addresses
        .into_iter()
        .map(|(set, ports)| {
            let pick = |want: bool| {
                let list: Vec<EndpointAddress> = set
                    .iter()
                    .filter(|(_, ready)| *ready == want)
                    .map(|(key, _)| addresses[key].clone())
                    .collect();
                (!list.is_empty()).then_some(list)
            };
            let ports: Vec<EndpointPort> = ports
                .into_iter()
                .flatten()
                .map(|(name, port, protocol, app_protocol)| EndpointPort {
                    name,
                    port,
                    protocol,
                    app_protocol,
                })
                .collect();
            EndpointSubset {
                addresses: pick(true),
                not_ready_addresses: pick(false),
                ports: (!ports.is_empty()).then_some(ports),
            }
        })
        .collect()
}

/// `truncateEndpoints`: keep at most `max` addresses, ready ones first, each subset keeping its
/// share (rounded up, the last ones taking what is left); whether anything was truncated.
pub fn truncate(subsets: &mut [EndpointSubset], max: usize) -> bool {
    let total_ready: usize = subsets.iter().map(|s| s.addresses.as_ref().map_or(0, Vec::len)).sum();
    let total_not_ready: usize =
        subsets.iter().map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len)).sum();
    if total_ready + total_not_ready <= max {
        return false;
    }
    let truncate_ready = total_ready > max;
    let (budget, total) =
        if truncate_ready { (max, total_ready) } else { (max - total_ready, total_not_ready) };
    let mut left = budget;
    for subset in subsets.iter_mut() {
        let list = if truncate_ready { &mut subset.addresses } else { &mut subset.not_ready_addresses };
        let len = list.as_ref().map_or(0, Vec::len);
        // ceil(len / total * budget), in integers.
        let share = (len * budget).div_ceil(total.max(1)).min(left);
        if let Some(kept) = list.as_mut() {
            kept.truncate(share);
        }
        left -= list.as_ref().map_or(0, Vec::len);
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
        if truncate_ready {
            subset.not_ready_addresses = None;
        }
    }
    true
}
