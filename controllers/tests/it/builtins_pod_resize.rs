//! In-place Pod resize with the kubelet-lite: a patch of `pods/<name>/resize` is allocated
//! (`PodResizeInProgress`, `allocatedResources`), then made (the containers' `resources`),
//! restarting a container only where its `resizePolicy` asks; a resize the Node cannot hold is
//! `PodResizePending` (`Infeasible`, or `Deferred` until room is made).

use std::time::Duration;

use controllers::builtins::{self, kubelet_resize, pod_state, quantity, snapshot};
use k8s_openapi::api::core::v1::{
    Container, ContainerResizePolicy, ContainerStatus, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::json;
use sim::api::{Api, ObjectMeta, Patch, PatchParams};
use sim::{FnProperty, Sim, SweepConfig, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(30);

fn list(items: &[(&str, &str)]) -> Option<std::collections::BTreeMap<String, Quantity>> {
    (!items.is_empty())
        .then(|| items.iter().map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned()))).collect())
}

fn pod(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)], memory_restarts: bool) -> Pod {
    let resize_policy = memory_restarts.then(|| {
        vec![ContainerResizePolicy {
            resource_name: "memory".to_owned(),
            restart_policy: "RestartContainer".to_owned(),
        }]
    });
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("app:1".to_owned()),
                resources: Some(ResourceRequirements {
                    requests: list(requests),
                    limits: list(limits),
                    ..ResourceRequirements::default()
                }),
                resize_policy,
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn app_status(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|s| s.name == "app")
}

/// The amount of `resource` in the status's `resources` (`limits` when `limit`), as a number.
fn reported(pod: &Pod, limit: bool, resource: &str) -> Option<f64> {
    let resources = app_status(pod)?.resources.as_ref()?;
    let list = if limit { resources.limits.as_ref() } else { resources.requests.as_ref() };
    quantity::value(list?.get(resource)?)
}

fn allocated(pod: &Pod, resource: &str) -> Option<f64> {
    quantity::value(app_status(pod)?.allocated_resources.as_ref()?.get(resource)?)
}

fn condition<'p>(pod: &'p Pod, type_: &str) -> Option<&'p k8s_openapi::api::core::v1::PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

fn resize(patch: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Strategic(json!({"spec": {"containers": [{"name": "app", "resources": patch}]}}))
}

#[test]
fn a_resize_is_allocated_then_made_and_restarts_only_where_the_policy_asks() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-pod-resize"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let limits = [("cpu", "200m"), ("memory", "128Mi")];
            w.apply(&pods, &pod("web", &[("cpu", "100m"), ("memory", "64Mi")], &limits, true)).await?;
            w.wait_for(
                &pods,
                "web",
                |p| {
                    p.is_some_and(|p| {
                        pod_state::is_running_and_ready(p)
                            && reported(p, false, "cpu") == Some(0.1)
                            && allocated(p, "memory") == Some(64.0 * 1024.0 * 1024.0)
                    })
                },
                WAIT,
            )
            .await?;
            // cpu up: no restart.
            let params = PatchParams::default();
            pods.patch_subresource(
                "resize",
                "web",
                &params,
                &resize(json!({"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}})),
            )
            .await
            .map_err(|e| crate::builtins_deployment::failed_step("resize cpu", e.to_string()))?;
            // Allocated first, while the runtime makes it.
            w.wait_for(
                &pods,
                "web",
                |p| {
                    p.is_some_and(|p| {
                        condition(p, kubelet_resize::RESIZE_IN_PROGRESS).is_some()
                            && allocated(p, "cpu") == Some(0.15)
                    })
                },
                WAIT,
            )
            .await?;
            w.wait_for(
                &pods,
                "web",
                |p| {
                    p.is_some_and(|p| {
                        condition(p, kubelet_resize::RESIZE_IN_PROGRESS).is_none()
                            && reported(p, false, "cpu") == Some(0.15)
                            && reported(p, true, "cpu") == Some(0.3)
                    })
                },
                WAIT,
            )
            .await?;
            // A memory limit up, with RestartContainer for memory: the container restarts.
            pods.patch_subresource("resize", "web", &params, &resize(json!({"limits": {"memory": "256Mi"}})))
                .await
                .map_err(|e| crate::builtins_deployment::failed_step("resize memory", e.to_string()))?;
            w.wait_for(
                &pods,
                "web",
                |p| {
                    p.is_some_and(|p| {
                        reported(p, true, "memory") == Some(256.0 * 1024.0 * 1024.0)
                            && pod_state::is_running_and_ready(p)
                    })
                },
                WAIT,
            )
            .await
        })
        .property(FnProperty::always("ready, restarted once, only for the memory limit", |view| {
            let Some(snap) = view.cluster("default") else { return Ok(()) };
            let Some(p) = snapshot::object::<Pod>(snap, Some("default"), "web") else { return Ok(()) };
            let Some(s) = app_status(&p) else { return Ok(()) };
            let memory_limit = reported(&p, true, "memory");
            let want = if memory_limit == Some(256.0 * 1024.0 * 1024.0) { 1 } else { 0 };
            if s.restart_count != want {
                return Err(format!(
                    "restart count {} with the memory limit at {memory_limit:?}",
                    s.restart_count
                ));
            }
            Ok(())
        }))
        .property(FnProperty::at_end("the killed run kept, Killing published", |view| {
            use k8s_openapi::api::events::v1::Event;
            let snap = view.cluster("default").ok_or("no cluster")?;
            let p = snapshot::object::<Pod>(snap, Some("default"), "web").ok_or("gone")?;
            let last =
                app_status(&p).and_then(|s| s.last_state.as_ref()?.terminated.as_ref()).map(|t| t.exit_code);
            if last != Some(kubelet_resize::KILLED_EXIT_CODE) {
                return Err(format!("last state exit code {last:?}"));
            }
            let killing: Vec<Option<String>> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("Killing"))
                .map(|e| e.note)
                .collect();
            if killing != [Some("Container app resize requires restart".to_owned())] {
                return Err(format!("Killing events {killing:?}"));
            }
            Ok(())
        }));
    let report = sweep(&SweepConfig::new("builtins-pod-resize").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_resize_the_node_cannot_hold_is_pending_and_a_deferred_one_is_made_once_there_is_room() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-pod-resize-pending"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let params = PatchParams::default();
            w.apply(&pods, &pod("big", &[("cpu", "1")], &[], false)).await?;
            w.apply(&pods, &pod("other", &[("cpu", "6")], &[], false)).await?;
            for name in ["big", "other"] {
                w.wait_for(&pods, name, |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            }
            // More than the Node has.
            pods.patch_subresource("resize", "big", &params, &resize(json!({"requests": {"cpu": "16"}})))
                .await
                .map_err(|e| crate::builtins_deployment::failed_step("resize to 16", e.to_string()))?;
            let pending = |reason: &'static str, message: &'static str| {
                move |p: Option<&Pod>| {
                    p.and_then(|p| condition(p, kubelet_resize::RESIZE_PENDING)).is_some_and(|c| {
                        c.reason.as_deref() == Some(reason) && c.message.as_deref() == Some(message)
                    })
                }
            };
            w.wait_for(
                &pods,
                "big",
                pending(
                    kubelet_resize::INFEASIBLE,
                    "Node didn't have enough capacity: cpu, requested: 16000, capacity: 8000",
                ),
                WAIT,
            )
            .await?;
            // More than is left beside `other`.
            pods.patch_subresource("resize", "big", &params, &resize(json!({"requests": {"cpu": "3"}})))
                .await
                .map_err(|e| crate::builtins_deployment::failed_step("resize to 3", e.to_string()))?;
            w.wait_for(
                &pods,
                "big",
                pending(
                    kubelet_resize::DEFERRED,
                    "Node didn't have enough resource: cpu, requested: 3000, used: 6000, capacity: 8000",
                ),
                WAIT,
            )
            .await?;
            w.delete(&pods, "other").await?;
            w.wait_for(
                &pods,
                "big",
                |p| {
                    p.is_some_and(|p| {
                        reported(p, false, "cpu") == Some(3.0)
                            && condition(p, kubelet_resize::RESIZE_PENDING).is_none()
                            && condition(p, kubelet_resize::RESIZE_IN_PROGRESS).is_none()
                    })
                },
                Duration::from_secs(120),
            )
            .await
        })
        .property(FnProperty::always("what runs never exceeds the Node", |view| {
            let Some(snap) = view.cluster("default") else { return Ok(()) };
            let running: f64 = snapshot::objects::<Pod>(snap, Some("default"))
                .iter()
                .filter(|p| !pod_state::is_finished(p))
                .filter_map(|p| reported(p, false, "cpu"))
                .sum();
            if running > 8.0 { Err(format!("{running} cpus running on a Node of 8")) } else { Ok(()) }
        }));
    let report = sweep(&SweepConfig::new("builtins-pod-resize-pending").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
