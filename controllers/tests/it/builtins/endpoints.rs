//! The pure parts of `controllers::builtins::endpoints`: what a Service's Endpoints holds for its
//! Pods, repacked and truncated as upstream's `RepackSubsets` and `truncateEndpoints` do.

use std::collections::BTreeMap;
use std::sync::Arc;

use controllers::builtins::endpoints::{
    OVER_CAPACITY_ANNOTATION, desired_endpoints, desired_subsets, repack_subsets, truncate,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Pod,
    PodCondition, PodIP, PodSpec, PodStatus, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sim::api::ObjectMeta;

fn address(ip: &str, uid: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.to_owned(),
        target_ref: Some(ObjectReference { uid: Some(uid.to_owned()), ..ObjectReference::default() }),
        ..EndpointAddress::default()
    }
}

fn port(name: &str, number: i32) -> EndpointPort {
    EndpointPort {
        name: Some(name.to_owned()),
        port: number,
        protocol: Some("TCP".to_owned()),
        app_protocol: None,
    }
}

fn subset(
    ready: Vec<EndpointAddress>,
    not_ready: Vec<EndpointAddress>,
    ports: &[EndpointPort],
) -> EndpointSubset {
    let list = |a: Vec<EndpointAddress>| (!a.is_empty()).then_some(a);
    EndpointSubset { addresses: list(ready), not_ready_addresses: list(not_ready), ports: list_ports(ports) }
}

fn list_ports(ports: &[EndpointPort]) -> Option<Vec<EndpointPort>> {
    (!ports.is_empty()).then(|| ports.to_vec())
}

#[test]
fn repacking_merges_the_ports_of_the_same_addresses_and_sorts_addresses_by_ip_then_uid() {
    let (a, b, c) = (address("10.0.0.2", "u2"), address("10.0.0.1", "u1"), address("10.0.0.1", "u0"));
    let subsets = [
        subset(vec![a.clone()], vec![], &[port("http", 80)]),
        subset(vec![b.clone()], vec![], &[port("http", 80)]),
        subset(vec![c.clone()], vec![], &[port("http", 80)]),
        subset(vec![a.clone(), b.clone(), c.clone()], vec![], &[port("admin", 9000)]),
    ];
    let want = vec![subset(vec![c, b, a], vec![], &[port("admin", 9000), port("http", 80)])];
    assert_eq!(repack_subsets(&subsets), want);
}

#[test]
fn repacking_makes_an_address_not_ready_on_a_port_where_any_entry_is_not_ready() {
    let (a, b) = (address("10.0.0.1", "u1"), address("10.0.0.2", "u2"));
    let subsets = [
        subset(vec![a.clone(), b.clone()], vec![], &[port("http", 80)]),
        subset(vec![], vec![a.clone()], &[port("http", 80)]),
        subset(vec![a.clone()], vec![], &[port("admin", 9000)]),
    ];
    let repacked = repack_subsets(&subsets);
    // Subsets are ordered by their addresses (IP, uid, then not ready before ready).
    let want = vec![
        subset(vec![b], vec![a.clone()], &[port("http", 80)]),
        subset(vec![a], vec![], &[port("admin", 9000)]),
    ];
    assert_eq!(repacked, want);
    assert_eq!(repack_subsets(&repacked), repacked, "a repacked layout is a fixed point");
}

#[test]
fn repacking_keeps_addresses_listed_without_ports() {
    let a = address("10.0.0.1", "u1");
    let subsets = [subset(vec![a.clone()], vec![], &[]), subset(vec![a.clone()], vec![], &[])];
    assert_eq!(repack_subsets(&subsets), vec![subset(vec![a], vec![], &[])]);
}

fn addresses(count: usize, prefix: &str) -> Vec<EndpointAddress> {
    (0..count)
        .map(|i| address(&format!("{prefix}.{}.{}", i / 250, i % 250), &format!("{prefix}{i}")))
        .collect()
}

#[test]
fn truncating_keeps_the_ready_addresses_first_in_proportion_to_each_subset() {
    let mut under = vec![subset(addresses(10, "10.0"), addresses(5, "10.1"), &[port("http", 80)])];
    assert!(!truncate(&mut under, 15), "at capacity nothing is truncated");
    // 600 + 300 ready (over a capacity of 600), 100 not ready: the ready ones keep 2/3 and 1/3.
    let mut over = vec![
        subset(addresses(600, "10.0"), addresses(100, "10.1"), &[port("http", 80)]),
        subset(addresses(300, "10.2"), vec![], &[port("admin", 9000)]),
    ];
    assert!(truncate(&mut over, 600));
    let kept: Vec<(usize, usize)> = over
        .iter()
        .map(|s| {
            (s.addresses.as_ref().map_or(0, Vec::len), s.not_ready_addresses.as_ref().map_or(0, Vec::len))
        })
        .collect();
    assert_eq!(kept, vec![(400, 0), (200, 0)]);
    // 500 ready fit; the 200 not ready share the 100 left.
    let mut some = vec![subset(addresses(500, "10.0"), addresses(200, "10.1"), &[port("http", 80)])];
    assert!(truncate(&mut some, 600));
    assert_eq!(some[0].not_ready_addresses.as_ref().map_or(0, Vec::len), 100);
    assert_eq!(some[0].addresses.as_ref().map_or(0, Vec::len), 500);
}

fn pod(name: &str, ip: &str, ready: bool, port_name: &str, number: i32) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            uid: Some(format!("uid-{name}")),
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-1".to_owned()),
            containers: vec![Container {
                name: "web".to_owned(),
                ports: Some(vec![ContainerPort {
                    name: Some(port_name.to_owned()),
                    container_port: number,
                    protocol: Some("TCP".to_owned()),
                    ..ContainerPort::default()
                }]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".to_owned()),
            pod_ip: Some(ip.to_owned()),
            pod_ips: Some(vec![PodIP { ip: ip.to_owned() }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".to_owned(),
                status: if ready { "True" } else { "False" }.to_owned(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    })
}

fn service(labels: &[(&str, &str)], cluster_ip: &str) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some(cluster_ip.to_owned()),
            ip_families: Some(vec!["IPv4".to_owned()]),
            selector: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ports: Some(vec![ServicePort {
                name: Some("web".to_owned()),
                port: 80,
                protocol: Some("TCP".to_owned()),
                target_port: Some(IntOrString::String("http".to_owned())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

#[test]
fn pods_resolve_the_named_target_port_each_their_own_way_and_terminal_or_ipless_pods_are_left_out() {
    let mut failed = (*pod("failed", "10.0.0.4", false, "http", 8080)).clone();
    failed.status.as_mut().unwrap().phase = Some("Failed".to_owned());
    let mut pending = (*pod("pending", "", false, "http", 8080)).clone();
    pending.status = Some(PodStatus::default());
    let mut deleting = (*pod("deleting", "10.0.0.5", true, "http", 8080)).clone();
    deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let pods = vec![
        pod("a", "10.0.0.1", true, "http", 8080),
        pod("b", "10.0.0.2", false, "http", 8081),
        pod("c", "10.0.0.3", true, "other", 9090),
        Arc::new(failed),
        Arc::new(pending),
        Arc::new(deleting),
    ];
    let svc = service(&[], "10.96.0.10");
    let repacked = repack_subsets(&desired_subsets(&svc, &pods));
    let at = |ip: &str, name: &str| EndpointAddress {
        ip: ip.to_owned(),
        node_name: Some("node-1".to_owned()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".to_owned()),
            namespace: Some("default".to_owned()),
            name: Some(name.to_owned()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }),
        hostname: None,
    };
    let want = vec![
        subset(vec![at("10.0.0.1", "a")], vec![], &[port("web", 8080)]),
        subset(vec![], vec![at("10.0.0.2", "b")], &[port("web", 8081)]),
    ];
    assert_eq!(repacked, want);
}

#[test]
fn nothing_is_written_when_subsets_labels_and_capacity_already_agree() {
    let svc = service(&[("tier", "front")], "None");
    let subsets = vec![subset(vec![address("10.0.0.1", "u1")], vec![], &[port("web", 8080)])];
    let written = desired_endpoints(&svc, None, subsets.clone()).expect("a first write");
    let labels = written.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("tier").map(String::as_str), Some("front"));
    assert_eq!(labels.get("service.kubernetes.io/headless").map(String::as_str), Some(""));
    assert_eq!(desired_endpoints(&svc, Some(&written), subsets.clone()), None);
    // The Pod's resourceVersion in a targetRef is not a change.
    let mut with_version = written.clone();
    if let Some(target) = with_version
        .subsets
        .as_mut()
        .and_then(|s| s[0].addresses.as_mut())
        .and_then(|a| a[0].target_ref.as_mut())
    {
        target.resource_version = Some("42".to_owned());
    }
    assert_eq!(desired_endpoints(&svc, Some(&with_version), subsets.clone()), None);
    // A stale over-capacity mark is removed.
    let mut marked: Endpoints = written.clone();
    marked.metadata.annotations =
        Some(BTreeMap::from([(OVER_CAPACITY_ANNOTATION.to_owned(), "truncated".to_owned())]));
    let fixed = desired_endpoints(&svc, Some(&marked), subsets).expect("the mark is wrong");
    assert_eq!(fixed.metadata.annotations, None);
}
