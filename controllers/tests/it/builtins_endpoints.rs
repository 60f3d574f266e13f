//! The endpoints controller: a Service's Endpoints lists the Pods it selects, ready ones in
//! `addresses` and the others in `notReadyAddresses`, on the port its named `targetPort` resolves
//! to; it follows scaling, goes with the Service, leaves a selector-less Service's Endpoints to its
//! user, and ends matching the Pods under faults.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use controllers::builtins::{self, endpoint_pods, kubelet, pod_state, snapshot};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Pod, Service, ServiceSpec,
};
use model_apiserver::Snapshot;
use sim::api::{Api, ListParams, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, Workload, WorkloadError, sweep};

use crate::web_pods::{
    controller_written, in_default, pod_spec, selected, web, web_labels, web_service_port,
};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(120);

/// Service `name` over `app=web`, labelled `tier=front`, port 80 to the Pods' port named `http`.
fn service(name: &str, cluster_ip: Option<&str>, publish_not_ready: bool) -> Service {
    Service {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([("tier".to_owned(), "front".to_owned())])),
            ..in_default(name)
        },
        spec: Some(ServiceSpec {
            selector: Some(web_labels()),
            cluster_ip: cluster_ip.map(str::to_owned),
            publish_not_ready_addresses: publish_not_ready.then_some(true),
            ports: Some(vec![web_service_port()]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The port every address must be published on: the Service port's name, the container port.
fn web_port() -> EndpointPort {
    EndpointPort {
        name: Some("web".to_owned()),
        port: 8080,
        protocol: Some("TCP".to_owned()),
        app_protocol: None,
    }
}

/// An address as the tests compare it: IP, Pod name, Pod uid, node.
type Address = (String, Option<String>, Option<String>, Option<String>);

fn address(a: &EndpointAddress) -> Address {
    let target = a.target_ref.clone().unwrap_or_default();
    assert_eq!(target.kind.as_deref(), Some("Pod"), "an address refers to a Pod: {a:?}");
    assert_eq!(
        target.namespace.as_deref(),
        Some("default"),
        "an address refers to its Pod's namespace: {a:?}"
    );
    (a.ip.clone(), target.name, target.uid, a.node_name.clone())
}

/// What an Endpoints should hold for `pods` (the Pods `app=web` selects): the ready and the
/// not-ready addresses, each Pod's IP, name, uid and node.
fn expected(pods: &[Pod], publish_not_ready: bool) -> (BTreeSet<Address>, BTreeSet<Address>) {
    let mut ready = BTreeSet::new();
    let mut not_ready = BTreeSet::new();
    for pod in pods {
        if !selected(pod) || !endpoint_pods::should_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let ip = endpoint_pods::pod_ips(pod).first().map(|ip| (*ip).to_owned()).unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let entry = (ip, pod.metadata.name.clone(), pod.metadata.uid.clone(), node);
        if publish_not_ready || pod_state::is_ready(pod) {
            ready.insert(entry)
        } else {
            not_ready.insert(entry)
        };
    }
    (ready, not_ready)
}

/// The addresses an Endpoints publishes, ready and not ready; every subset must be on [`web_port`].
fn published(endpoints: &Endpoints) -> Result<(BTreeSet<Address>, BTreeSet<Address>), String> {
    let mut ready = BTreeSet::new();
    let mut not_ready = BTreeSet::new();
    for subset in endpoints.subsets.iter().flatten() {
        if subset.ports.as_deref() != Some(&[web_port()][..]) {
            return Err(format!("subset on ports {:?}, want {:?}", subset.ports, [web_port()]));
        }
        ready.extend(subset.addresses.iter().flatten().map(address));
        not_ready.extend(subset.not_ready_addresses.iter().flatten().map(address));
    }
    Ok((ready, not_ready))
}

/// Endpoints `name` publishes exactly the Pods `app=web` selects in `snap`.
fn matches_the_pods(snap: &Snapshot, name: &str, publish_not_ready: bool) -> Result<(), String> {
    let pods = snapshot::objects::<Pod>(snap, Some("default"));
    let endpoints =
        snapshot::object::<Endpoints>(snap, Some("default"), name).ok_or(format!("no endpoints {name}"))?;
    let want = expected(&pods, publish_not_ready);
    let got = published(&endpoints)?;
    if got == want {
        Ok(())
    } else {
        Err(format!("endpoints {name} publish {got:?}, the pods want {want:?}"))
    }
}

fn workload_error(action: &str, reason: impl std::fmt::Display) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason: reason.to_string() }
}

/// Wait until Endpoints `name` publishes exactly the Pods, with `ready` ready and `not_ready`
/// not-ready addresses.
async fn wait_until_published(
    w: &Workload,
    name: &str,
    publish_not_ready: bool,
    ready: usize,
    not_ready: usize,
) -> Result<(), WorkloadError> {
    let pods: Api<Pod> = Api::namespaced(w.client(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(w.client(), "default");
    let deadline = sim::time::now() + k8s_openapi::jiff::SignedDuration::try_from(WAIT).unwrap_or_default();
    loop {
        let current =
            pods.list(&ListParams::default()).await.map_err(|e| workload_error("list pods", e))?.items;
        let want = expected(&current, publish_not_ready);
        let got = endpoints.get_opt(name).await.map_err(|e| workload_error("get endpoints", e))?;
        let got = got.as_ref().map(published).transpose().map_err(|e| workload_error("read endpoints", e))?;
        if got.as_ref() == Some(&want) && want.0.len() == ready && want.1.len() == not_ready {
            return Ok(());
        }
        if sim::time::now() > deadline {
            return Err(workload_error(
                &format!("wait for endpoints {name}"),
                format!("got {got:?}, want {want:?}"),
            ));
        }
        w.sleep(Duration::from_secs(1)).await;
    }
}

/// Deployments, ReplicaSets, the kubelet-lite and the endpoints controller.
fn world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    let world = builtins::replicaset_controller(builtins::deployment_controller(world));
    builtins::endpoints_controller(builtins::kubelet(world))
}

fn sweep_passes(name: &str, world: &SimBuilder) {
    let report = sweep(&SweepConfig::new(name).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn a_deployments_ready_pods_appear_in_the_endpoints_of_the_service_on_the_port_its_named_target_port_names() {
    let world = world("builtins-endpoints-ready")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service("web", None, false)).await?;
            w.apply(&services, &service("web-headless", Some("None"), false)).await?;
            w.apply(&deployments, &web(3)).await?;
            wait_until_published(&w, "web", false, 3, 0).await?;
            wait_until_published(&w, "web-headless", false, 3, 0).await
        })
        .property(FnProperty::at_end("the endpoints publish every ready pod", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            matches_the_pods(snap, "web", false)?;
            matches_the_pods(snap, "web-headless", false)?;
            let (ready, _) =
                published(&snapshot::object::<Endpoints>(snap, Some("default"), "web").ok_or("gone")?)?;
            let on_the_node = ready.iter().all(|a| a.3.as_deref() == Some(kubelet::NODE_NAME));
            if ready.len() == 3 && on_the_node { Ok(()) } else { Err(format!("addresses {ready:?}")) }
        }))
        .property(FnProperty::at_end(
            "the service's labels, plus the headless label when headless",
            |view| {
                let snap = view.cluster("default").ok_or("no cluster")?;
                let labels = |name: &str| {
                    snapshot::object::<Endpoints>(snap, Some("default"), name).and_then(|e| e.metadata.labels)
                };
                let front = BTreeMap::from([("tier".to_owned(), "front".to_owned())]);
                let mut headless = front.clone();
                headless.insert(endpoint_pods::LABEL_HEADLESS.to_owned(), String::new());
                let got = (labels("web"), labels("web-headless"));
                if got == (Some(front.clone()), Some(headless.clone())) {
                    Ok(())
                } else {
                    Err(format!("labels {got:?}, want {front:?} and {headless:?}"))
                }
            },
        ));
    sweep_passes("builtins-endpoints-ready", &world);
}

/// A Pod `app=web` created bare; `fail` makes its container crash-loop (Running, not Ready).
fn bare_pod(name: &str, fail: bool) -> Pod {
    let annotations =
        fail.then(|| BTreeMap::from([(kubelet::FAIL_ANNOTATION.to_owned(), "true".to_owned())]));
    Pod {
        metadata: ObjectMeta { labels: Some(web_labels()), annotations, ..in_default(name) },
        spec: Some(pod_spec()),
        status: None,
    }
}

#[test]
fn a_pod_that_is_not_ready_is_a_not_ready_address_unless_the_service_publishes_not_ready_addresses() {
    let world = builtins::endpoints_controller(builtins::kubelet(
        Sim::builder().scenario("builtins-endpoints-unready"),
    ))
    .workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let services: Api<Service> = Api::namespaced(w.client(), "default");
        w.apply(&services, &service("web", None, false)).await?;
        w.apply(&services, &service("web-all", None, true)).await?;
        w.apply(&pods, &bare_pod("ok", false)).await?;
        w.apply(&pods, &bare_pod("crashing", true)).await?;
        wait_until_published(&w, "web", false, 1, 1).await?;
        wait_until_published(&w, "web-all", true, 2, 0).await?;
        // A readiness probe failing (the kubelet-lite reports the containers not ready).
        let unready =
            serde_json::json!({ "metadata": { "annotations": { kubelet::UNREADY_ANNOTATION: "true" } } });
        pods.patch("ok", &PatchParams::default(), &Patch::Merge(&unready))
            .await
            .map_err(|e| workload_error("make a pod unready", e))?;
        wait_until_published(&w, "web", false, 0, 2).await
    })
    .property(FnProperty::at_end("both pods are not-ready addresses", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        matches_the_pods(snap, "web", false)?;
        matches_the_pods(snap, "web-all", true)?;
        let endpoints = snapshot::object::<Endpoints>(snap, Some("default"), "web").ok_or("gone")?;
        let (ready, not_ready) = published(&endpoints)?;
        if ready.is_empty() && not_ready.len() == 2 {
            Ok(())
        } else {
            Err(format!("{ready:?} {not_ready:?}"))
        }
    }));
    sweep_passes("builtins-endpoints-unready", &world);
}

#[test]
fn scaling_a_deployment_down_removes_the_addresses_of_its_deleted_pods() {
    let world = world("builtins-endpoints-scale")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service("web", None, false)).await?;
            w.apply(&deployments, &web(3)).await?;
            wait_until_published(&w, "web", false, 3, 0).await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 1 } })))
                .await?;
            wait_until_published(&w, "web", false, 1, 0).await
        })
        .property(FnProperty::at_end("one address, the remaining pod's", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            matches_the_pods(snap, "web", false)?;
            let (ready, _) =
                published(&snapshot::object::<Endpoints>(snap, Some("default"), "web").ok_or("gone")?)?;
            if ready.len() == 1 { Ok(()) } else { Err(format!("addresses {ready:?}")) }
        }));
    sweep_passes("builtins-endpoints-scale", &world);
}

#[test]
fn deleting_the_service_deletes_its_endpoints() {
    let world = world("builtins-endpoints-delete")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            let endpoints: Api<Endpoints> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service("web", None, false)).await?;
            w.apply(&deployments, &web(2)).await?;
            wait_until_published(&w, "web", false, 2, 0).await?;
            w.delete(&services, "web").await?;
            w.wait_for(&endpoints, "web", |e| e.is_none(), WAIT).await
        })
        .property(FnProperty::at_end("no endpoints left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = controller_written::<Endpoints>(snap);
            if left.is_empty() { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    sweep_passes("builtins-endpoints-delete", &world);
}

/// Endpoints `web` as a user writes it for a Service without a selector.
fn user_endpoints() -> Endpoints {
    Endpoints {
        metadata: in_default("web"),
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress {
                ip: "192.0.2.10".to_owned(),
                ..EndpointAddress::default()
            }]),
            // With its protocol: kube-apiserver defaults a port's to TCP, so a user's Endpoints
            // reads back with it whoever writes.
            ports: Some(vec![EndpointPort {
                port: 9000,
                protocol: Some("TCP".to_owned()),
                ..EndpointPort::default()
            }]),
            ..EndpointSubset::default()
        }]),
    }
}

#[test]
fn a_service_without_a_selector_keeps_the_endpoints_its_user_wrote() {
    let world = world("builtins-endpoints-user")
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            let endpoints: Api<Endpoints> = Api::namespaced(w.client(), "default");
            let mut bare = service("web", None, false);
            if let Some(spec) = bare.spec.as_mut() {
                spec.selector = None;
            }
            w.apply(&services, &bare).await?;
            w.apply(&endpoints, &user_endpoints()).await?;
            // Pods the Service would select if it had a selector, ready and running.
            w.apply(&deployments, &web(2)).await?;
            let available = |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(2))
            };
            w.wait_for(&deployments, "web", available, WAIT).await?;
            // A change of the Service syncs it too.
            w.patch(
                &services,
                "web",
                &Patch::Merge(serde_json::json!({ "metadata": { "labels": { "tier": "back" } } })),
            )
            .await?;
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
        .property(FnProperty::at_end("the user's endpoints are untouched", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let endpoints = snapshot::object::<Endpoints>(snap, Some("default"), "web").ok_or("gone")?;
            let want = user_endpoints();
            let same = (endpoints.subsets == want.subsets, endpoints.metadata.labels.is_none());
            if same == (true, true) { Ok(()) } else { Err(format!("endpoints changed: {endpoints:?}")) }
        }));
    sweep_passes("builtins-endpoints-user", &world);
}

#[test]
fn under_swarm_faults_the_endpoints_of_a_scaling_deployment_end_matching_its_pods() {
    let world = builtins::all(Sim::builder().scenario("builtins-endpoints-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
            let services: Api<Service> = Api::namespaced(w.client(), "default");
            w.apply(&services, &service("web", None, false)).await?;
            w.apply(&services, &service("gone", None, false)).await?;
            w.apply(&deployments, &web(3)).await?;
            let available = |n: i32| {
                move |d: Option<&Deployment>| {
                    d.and_then(|d| d.status.as_ref()).is_some_and(|s| s.available_replicas == Some(n))
                }
            };
            w.wait_for(&deployments, "web", available(3), Duration::from_secs(400)).await?;
            w.delete(&services, "gone").await?;
            w.patch(&deployments, "web", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 2 } })))
                .await?;
            w.wait_for(&deployments, "web", available(2), Duration::from_secs(400)).await
        })
        .property(FnProperty::at_end("the endpoints match the pods, the deleted service has none", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            matches_the_pods(snap, "web", false)?;
            match snapshot::object::<Endpoints>(snap, Some("default"), "gone") {
                None => Ok(()),
                Some(left) => Err(format!("endpoints of the deleted service left: {left:?}")),
            }
        }));
    let report = sweep(&SweepConfig::new("builtins-endpoints-faults").seeds(40), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
