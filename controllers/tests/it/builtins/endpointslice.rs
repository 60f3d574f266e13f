//! The pure parts of `controllers::builtins::endpointslice_reconciler` and
//! `endpointslice_tracker`: the plan of slice writes for a Service's Pods, and which writes the
//! cache has caught up with.

use std::collections::BTreeMap;
use std::sync::Arc;

use controllers::builtins::endpointslice_reconciler::{
    MAX_ENDPOINTS_PER_SLICE, Plan, address_types, new_slice, reconcile,
};
use controllers::builtins::endpointslice_tracker::Tracker;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Node, Pod, PodCondition, PodIP, PodSpec, PodStatus, Service, ServicePort,
    ServiceSpec,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::versions::Required;
use sim::api::ObjectMeta;
use sim::runtime::reflector;

fn service() -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            namespace: Some("default".to_owned()),
            uid: Some("svc-uid".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("10.96.0.10".to_owned()),
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

fn pod(i: usize, ready: bool) -> Arc<Pod> {
    let name = format!("web-{i:03}");
    let ip = format!("10.244.{}.{}", i / 250, i % 250 + 1);
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
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
                    name: Some("http".to_owned()),
                    container_port: 8080,
                    protocol: Some("TCP".to_owned()),
                    ..ContainerPort::default()
                }]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".to_owned()),
            pod_ip: Some(ip.clone()),
            pod_ips: Some(vec![PodIP { ip }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".to_owned(),
                status: if ready { "True" } else { "False" }.to_owned(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    })
}

/// A slice as the server returns a created one: named, with a uid and generation 1.
fn stored(mut slice: EndpointSlice, name: &str) -> Arc<EndpointSlice> {
    slice.metadata.name = Some(name.to_owned());
    slice.metadata.uid = Some(format!("uid-{name}"));
    slice.metadata.generation = Some(1);
    Arc::new(slice)
}

fn endpoint_counts(slices: &[EndpointSlice]) -> Vec<usize> {
    slices.iter().map(|s| s.endpoints.value().len()).collect()
}

#[test]
fn a_service_with_more_pods_than_fit_one_slice_gets_full_slices_and_one_for_the_rest() {
    let nodes = reflector::store::<Node>().0;
    let pods: Vec<Arc<Pod>> = (0..150).map(|i| pod(i, true)).collect();
    let plan = reconcile(&service(), &pods, &[], &nodes);
    assert_eq!(endpoint_counts(&plan.create), vec![MAX_ENDPOINTS_PER_SLICE, 50]);
    assert!(plan.update.is_empty() && plan.delete.is_empty(), "{plan:?}");
    let first = &plan.create[0];
    assert_eq!(first.address_type, "IPv4");
    assert_eq!(first.metadata.generate_name.as_deref(), Some("web-"));
    let ports = first.ports.clone().unwrap_or_default();
    assert_eq!((ports.len(), ports[0].port, ports[0].name.as_deref()), (1, Some(8080), Some("web")));
}

#[test]
fn a_pod_whose_readiness_changed_is_updated_in_place_and_a_gone_one_removed() {
    let nodes = reflector::store::<Node>().0;
    let svc = service();
    let pods: Vec<Arc<Pod>> = (0..3).map(|i| pod(i, true)).collect();
    let created = reconcile(&svc, &pods, &[], &nodes).create;
    assert_eq!(endpoint_counts(&created), vec![3]);
    let existing = vec![stored(created[0].clone(), "web-abcde")];
    assert_eq!(
        reconcile(&svc, &pods, &existing, &nodes),
        Plan::default(),
        "nothing changed, nothing written"
    );
    // web-001 turns unready; web-002 is gone.
    let now = vec![pod(0, true), pod(1, false)];
    let plan = reconcile(&svc, &now, &existing, &nodes);
    assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
    let updated = &plan.update[0];
    assert_eq!(updated.metadata.name.as_deref(), Some("web-abcde"));
    let ready: Vec<Option<bool>> =
        updated.endpoints.value().iter().map(|e| e.conditions.as_ref().and_then(|c| c.ready)).collect();
    assert_eq!(ready, vec![Some(true), Some(false)]);
}

#[test]
fn a_service_without_endpoints_keeps_exactly_one_placeholder_slice() {
    let nodes = reflector::store::<Node>().0;
    let svc = service();
    let plan = reconcile(&svc, &[], &[], &nodes);
    assert_eq!(endpoint_counts(&plan.create), vec![0]);
    let placeholder = stored(plan.create[0].clone(), "web-ph");
    assert_eq!(reconcile(&svc, &[], std::slice::from_ref(&placeholder), &nodes), Plan::default());
    // Once Pods come, the placeholder is deleted and a slice created (which finalize turns into
    // an update of the placeholder).
    let plan = reconcile(&svc, &[pod(0, true)], &[placeholder], &nodes);
    assert_eq!((endpoint_counts(&plan.create), plan.delete.len()), (vec![1], 1));
}

#[test]
fn a_slice_of_another_service_of_the_same_name_is_deleted() {
    let nodes = reflector::store::<Node>().0;
    let mut old = service();
    old.metadata.uid = Some("old-uid".to_owned());
    let stale = stored(new_slice(&old, Vec::new(), "IPv4"), "web-old");
    let plan = reconcile(&service(), &[pod(0, true)], &[stale], &nodes);
    assert_eq!((endpoint_counts(&plan.create), plan.delete.len()), (vec![1], 1));
}

#[test]
fn address_types_follow_the_ip_families_else_the_cluster_ip_else_both() {
    let mut svc = service();
    assert_eq!(address_types(&svc).into_iter().collect::<Vec<_>>(), vec!["IPv4"]);
    let spec = svc.spec.as_mut().unwrap();
    spec.ip_families = None;
    spec.cluster_ip = Some("fd00::1".to_owned());
    assert_eq!(address_types(&svc).into_iter().collect::<Vec<_>>(), vec!["IPv6"]);
    svc.spec.as_mut().unwrap().cluster_ip = Some("None".to_owned());
    assert_eq!(address_types(&svc).into_iter().collect::<Vec<_>>(), vec!["IPv4", "IPv6"]);
}

#[test]
fn the_tracker_ignores_its_own_writes_and_calls_a_cache_without_them_stale() {
    let svc = service();
    let mut tracker = Tracker::default();
    let slice = stored(new_slice(&svc, Vec::new(), "IPv4"), "web-a");
    assert!(tracker.should_sync(&slice), "an unknown slice needs a sync");
    tracker.update(&slice);
    assert!(!tracker.should_sync(&slice), "its own write coming back does not");
    assert!(tracker.stale_slices(&svc, &[]), "a cache without the slice written is stale");
    assert!(!tracker.stale_slices(&svc, std::slice::from_ref(&slice)));
    let mut newer = (*slice).clone();
    newer.metadata.generation = Some(2);
    tracker.update(&newer);
    assert!(tracker.stale_slices(&svc, std::slice::from_ref(&slice)), "an older generation is stale");
    tracker.expect_deletion(&newer);
    assert!(tracker.stale_slices(&svc, std::slice::from_ref(&slice)), "a slice expected gone is stale");
    assert!(tracker.handle_deletion(&newer), "an expected deletion needs no sync");
    assert!(!tracker.stale_slices(&svc, &[]));
    tracker.update(&slice);
    assert!(!tracker.handle_deletion(&slice), "someone else deleting a slice written here does");
}
