//! The EndpointSlice controller: a Service's Pods appear in an EndpointSlice it owns, with their
//! conditions, node, zone and the port a named `targetPort` resolves to; the slice is updated in
//! place as Pods come and go, is garbage collected with the Service, none is made for a Service
//! without a selector, and the slices end matching the Pods under faults.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use controllers::builtins::endpointslice_reconciler::{
    CONTROLLER_NAME, LABEL_MANAGED_BY, LABEL_SERVICE_NAME,
};
use controllers::builtins::{self, checks, endpoint_pods, kubelet, pod_state, snapshot};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod, Service, ServiceSpec};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use model_apiserver::Snapshot;
use model_apiserver::versions::Required;
use sim::api::{Api, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, Workload, WorkloadError, sweep};

use crate::web_pods::{
    controller_written, in_default, pod_spec, selected, web, web_labels, web_service_port,
};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(120);
const ZONE: &str = "zone-a";

/// Service `web` over `app=web` (or over nothing), port 80 to the Pods' port named `http`.
fn service(selector: bool) -> Service {
    Service {
        metadata: in_default("web"),
        spec: Some(ServiceSpec {
            selector: selector.then(web_labels),
            ports: Some(vec![web_service_port()]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The simulated cluster's one node, in zone [`ZONE`].
fn node() -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(kubelet::NODE_NAME.to_owned()),
            labels: Some(BTreeMap::from([(endpoint_pods::LABEL_TOPOLOGY_ZONE.to_owned(), ZONE.to_owned())])),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// An endpoint as the tests compare it: address, Pod name and uid, (ready, serving, terminating),
/// node and zone.
type Published =
    (Vec<String>, Option<String>, Option<String>, (bool, bool, bool), Option<String>, Option<String>);

/// What the slices should hold for `pods`: every Pod `app=web` selects that has an IP and is not
/// terminal, with its conditions; on the node of the test, in `zone` if known.
fn expected(pods: &[Pod], zone: Option<&str>) -> BTreeSet<Published> {
    pods.iter()
        .filter(|p| selected(p) && endpoint_pods::should_be_in_endpoints(p, true))
        .map(|p| {
            let serving = pod_state::is_ready(p);
            let terminating = pod_state::is_terminating(p);
            let ips = endpoint_pods::pod_ips(p).into_iter().map(str::to_owned).collect();
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
            let conditions = (serving && !terminating, serving, terminating);
            (ips, p.metadata.name.clone(), p.metadata.uid.clone(), conditions, node, zone.map(str::to_owned))
        })
        .collect()
}

fn web_port() -> EndpointPort {
    EndpointPort {
        name: Some("web".to_owned()),
        port: Some(8080),
        protocol: Some("TCP".to_owned()),
        app_protocol: None,
    }
}

/// Every check a slice of Service `service` must pass, then its endpoints.
fn published(slice: &EndpointSlice, service: &Service) -> Result<Vec<Published>, String> {
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    let owner = slice.metadata.owner_references.as_deref().unwrap_or_default();
    let owned = owner.len() == 1
        && owner[0].kind == "Service"
        && owner[0].api_version == "v1"
        && Some(owner[0].uid.as_str()) == service.metadata.uid.as_deref()
        && owner[0].controller == Some(true)
        && owner[0].block_owner_deletion == Some(true);
    let checks = [
        (slice.address_type == "IPv4", "addressType IPv4"),
        (labels.get(LABEL_SERVICE_NAME).map(String::as_str) == Some("web"), "the service-name label"),
        (labels.get(LABEL_MANAGED_BY).map(String::as_str) == Some(CONTROLLER_NAME), "the managed-by label"),
        (slice.metadata.generate_name.as_deref() == Some("web-"), "generateName web-"),
        (owned, "a controller reference to the service"),
        (
            slice.endpoints.value().is_empty() || slice.ports.as_deref() == Some(&[web_port()][..]),
            "port 8080, named web",
        ),
    ];
    if let Some((_, what)) = checks.iter().find(|(ok, _)| !ok) {
        return Err(format!("slice {:?} lacks {what}: {slice:?}", slice.metadata.name));
    }
    Ok(slice
        .endpoints
        .value()
        .iter()
        .map(|e| {
            let target = e.target_ref.clone().unwrap_or_default();
            let c = e.conditions.clone().unwrap_or_default();
            let conditions = (c.ready == Some(true), c.serving == Some(true), c.terminating == Some(true));
            (e.addresses.clone(), target.name, target.uid, conditions, e.node_name.clone(), e.zone.clone())
        })
        .collect())
}

/// Whether `slice` is labelled as one of `service`'s (the API server's own `kubernetes` slice
/// is another Service's).
fn of_service(slice: &EndpointSlice, service: &Service) -> bool {
    slice.metadata.labels.as_ref().and_then(|l| l.get(LABEL_SERVICE_NAME)) == service.metadata.name.as_ref()
}

/// The slices of Service `web` publish exactly its Pods, each once.
fn slices_match(
    pods: &[Pod],
    slices: &[EndpointSlice],
    service: &Service,
    zone: Option<&str>,
) -> Result<(), String> {
    let ours: Vec<&EndpointSlice> = slices.iter().filter(|s| of_service(s, service)).collect();
    let mut got = Vec::new();
    for slice in &ours {
        got.extend(published(slice, service)?);
    }
    let want = expected(pods, zone);
    let unique: BTreeSet<Published> = got.iter().cloned().collect();
    if unique.len() != got.len() {
        return Err(format!("an endpoint is published twice: {got:?}"));
    }
    if unique != want {
        return Err(format!("the slices publish {unique:?}, the pods want {want:?}"));
    }
    if ours.len() != 1 {
        return Err(format!("{} slices, want one", ours.len()));
    }
    Ok(())
}

fn matches_the_pods(snap: &Snapshot, zone: Option<&str>) -> Result<(), String> {
    let service = snapshot::object::<Service>(snap, Some("default"), "web").ok_or("no service")?;
    let pods = snapshot::objects::<Pod>(snap, Some("default"));
    let slices = controller_written::<EndpointSlice>(snap);
    slices_match(&pods, &slices, &service, zone)
}

fn workload_error(action: &str, reason: impl std::fmt::Display) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason: reason.to_string() }
}

/// Wait until the slices of Service `web` publish exactly its Pods, `ready` of them ready and
/// `count` in all; returns the slice's name.
async fn wait_until_published(
    w: &Workload,
    ready: usize,
    count: usize,
    zone: Option<&str>,
) -> Result<String, WorkloadError> {
    let pods: Api<Pod> = Api::namespaced(w.client(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(w.client(), "default");
    let services: Api<Service> = Api::namespaced(w.client(), "default");
    let deadline = sim::time::now() + k8s_openapi::jiff::SignedDuration::try_from(WAIT).unwrap_or_default();
    loop {
        let list = |e| workload_error("list", e);
        let service = services.get("web").await.map_err(list)?;
        let current_pods = pods.list(&Default::default()).await.map_err(list)?.items;
        let current = slices.list(&Default::default()).await.map_err(list)?.items;
        let want = expected(&current_pods, zone);
        let ready_now = want.iter().filter(|e| e.3.0).count();
        let matched = slices_match(&current_pods, &current, &service, zone);
        if matched.is_ok() && ready_now == ready && want.len() == count {
            let name = current.iter().find(|s| of_service(s, &service)).and_then(|s| s.metadata.name.clone());
            return Ok(name.unwrap_or_default());
        }
        if sim::time::now() > deadline {
            return Err(workload_error(
                "wait for the slices",
                format!("{matched:?}; {} endpoints wanted", want.len()),
            ));
        }
        w.sleep(Duration::from_secs(1)).await;
    }
}

/// The garbage collector, Deployments, ReplicaSets, the kubelet-lite and the EndpointSlice
/// controller.
fn world(scenario: &str) -> SimBuilder {
    let world = builtins::garbage_collector(Sim::builder().scenario(scenario));
    let world = builtins::replicaset_controller(builtins::deployment_controller(world));
    builtins::endpointslice_controller(builtins::kubelet(world))
}

fn sweep_passes(name: &str, world: &SimBuilder) {
    let report = sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn a_deployments_ready_pods_appear_in_a_slice_the_service_owns_with_their_zone_and_the_resolved_port() {
    let world = world("builtins-endpointslice-ready")
        .workload(|w| async move {
            let nodes: Api<Node> = Api::all(w.client());
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            w.apply(&nodes, &node()).await?;
            w.apply(&services, &service(true)).await?;
            w.apply(&deployments, &web(3)).await?;
            wait_until_published(&w, 3, 3, Some(ZONE)).await.map(|_| ())
        })
        .property(FnProperty::at_end("one slice publishes the three ready pods", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            matches_the_pods(snap, Some(ZONE))?;
            let slices = controller_written::<EndpointSlice>(snap);
            let ready = slices.iter().flat_map(|s| s.endpoints.value()).filter(|e| {
                e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
                    && e.node_name.as_deref() == Some(kubelet::NODE_NAME)
            });
            if ready.count() == 3 { Ok(()) } else { Err(format!("slices {slices:?}")) }
        }));
    sweep_passes("builtins-endpointslice-ready", &world);
}

/// A Pod `app=web` created bare.
fn bare_pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta { labels: Some(web_labels()), ..in_default(name) },
        spec: Some(pod_spec()),
        status: None,
    }
}

#[test]
fn a_pod_that_is_not_ready_is_published_not_ready_and_not_serving() {
    // Bare Pods: a Deployment with an unready Pod waits for its progress deadline, beyond the
    // run's time limit.
    let world = world("builtins-endpointslice-unready")
        .workload(|w| async move {
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service(true)).await?;
            w.apply(&pods, &bare_pod("a")).await?;
            w.apply(&pods, &bare_pod("b")).await?;
            wait_until_published(&w, 2, 2, None).await?;
            let unready =
                serde_json::json!({ "metadata": { "annotations": { kubelet::UNREADY_ANNOTATION: "true" } } });
            pods.patch("a", &PatchParams::default(), &Patch::Merge(&unready))
                .await
                .map_err(|e| workload_error("make a pod unready", e))?;
            wait_until_published(&w, 1, 2, None).await.map(|_| ())
        })
        .property(FnProperty::at_end("one endpoint ready and serving, one neither", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            matches_the_pods(snap, None)?;
            let slices = controller_written::<EndpointSlice>(snap);
            let conditions: BTreeSet<(Option<bool>, Option<bool>, Option<bool>)> = slices
                .iter()
                .flat_map(|s| s.endpoints.value())
                .map(|e| e.conditions.clone().unwrap_or_default())
                .map(|c| (c.ready, c.serving, c.terminating))
                .collect();
            let want = BTreeSet::from([
                (Some(true), Some(true), Some(false)),
                (Some(false), Some(false), Some(false)),
            ]);
            if conditions == want { Ok(()) } else { Err(format!("conditions {conditions:?}")) }
        }));
    sweep_passes("builtins-endpointslice-unready", &world);
}

#[test]
fn scaling_a_deployment_down_removes_endpoints_from_the_same_slice() {
    let world = world("builtins-endpointslice-scale").workload(|w| async move {
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        let services: Api<Service> = Api::namespaced(w.client(), "default");
        w.apply(&services, &service(true)).await?;
        w.apply(&deployments, &web(3)).await?;
        let before = wait_until_published(&w, 3, 3, None).await?;
        w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 1 } }))).await?;
        let after = wait_until_published(&w, 1, 1, None).await?;
        if before == after {
            Ok(())
        } else {
            Err(workload_error("scale down", format!("slice {before} replaced by {after}")))
        }
    });
    let world = world.property(FnProperty::at_end("the slice publishes the remaining pod", |view| {
        matches_the_pods(view.cluster("default").ok_or("no cluster")?, None)
    }));
    sweep_passes("builtins-endpointslice-scale", &world);
}

#[test]
fn deleting_the_service_garbage_collects_its_slices() {
    let world = world("builtins-endpointslice-delete")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            let slices: Api<EndpointSlice> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service(true)).await?;
            w.apply(&deployments, &web(2)).await?;
            wait_until_published(&w, 2, 2, None).await?;
            w.delete(&services, "web").await?;
            w.wait_for_all(
                &slices,
                |s| s.iter().all(|slice| slice.metadata.name.as_deref() == Some("kubernetes")),
                WAIT,
            )
            .await
        })
        .property(checks::garbage_collected())
        .property(FnProperty::at_end("no slices left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = controller_written::<EndpointSlice>(snap);
            if left.is_empty() { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    sweep_passes("builtins-endpointslice-delete", &world);
}

#[test]
fn a_service_without_pods_has_a_placeholder_slice_and_one_without_a_selector_none() {
    let world = world("builtins-endpointslice-placeholder")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            let slices: Api<EndpointSlice> = Api::namespaced(w.client(), "default");
            let mut empty = service(true);
            empty.metadata.name = Some("empty".to_owned());
            if let Some(spec) = empty.spec.as_mut() {
                spec.selector = Some(BTreeMap::from([("app".to_owned(), "nothing".to_owned())]));
            }
            w.apply(&services, &empty).await?;
            w.apply(&services, &service(false)).await?;
            w.apply(&deployments, &web(2)).await?;
            let available = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(2))
            };
            w.wait_for(&deployments, "web", available, WAIT).await?;
            w.wait_for_all(&slices, |s| s.len() == 2, WAIT).await?; // the placeholder and the API server's `kubernetes`
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
        .property(FnProperty::at_end("one empty slice, for the service without pods", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let slices = controller_written::<EndpointSlice>(snap);
            let placeholder = |s: &EndpointSlice| {
                s.endpoints.value().is_empty()
                    && s.ports.as_ref().is_none_or(Vec::is_empty)
                    && s.metadata.labels.as_ref().and_then(|l| l.get(LABEL_SERVICE_NAME)).map(String::as_str)
                        == Some("empty")
            };
            if slices.len() == 1 && placeholder(&slices[0]) {
                Ok(())
            } else {
                Err(format!("slices {slices:?}"))
            }
        }));
    sweep_passes("builtins-endpointslice-placeholder", &world);
}

#[test]
fn under_swarm_faults_the_slices_of_a_scaling_deployment_end_matching_its_pods() {
    let world = builtins::all(Sim::builder().scenario("builtins-endpointslice-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service(true)).await?;
            w.apply(&deployments, &web(3)).await?;
            let available = |n: i32| {
                move |d: Option<&Deployment>| {
                    d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(n))
                }
            };
            w.wait_for(&deployments, "web", available(3), Duration::from_secs(400)).await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 2 } })))
                .await?;
            w.wait_for(&deployments, "web", available(2), Duration::from_secs(400)).await
        })
        .property(FnProperty::at_end("the slices match the pods", |view| {
            matches_the_pods(view.cluster("default").ok_or("no cluster")?, None)
        }));
    let report = sweep(&SweepConfig::new("builtins-endpointslice-faults").seeds(40), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
