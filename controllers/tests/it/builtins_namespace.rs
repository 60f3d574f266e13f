//! The namespace controller with the kubelet-lite: deleting a namespace deletes everything in it
//! (Pods gracefully, through the kubelet), then the namespace itself goes away.

use std::time::Duration;

use controllers::builtins::{self, checks, snapshot};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Pod, PodSpec};
use sim::api::{Api, ObjectMeta};
use sim::{FnProperty, Sim, SweepConfig, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(30);

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

#[test]
fn deleting_a_namespace_empties_it_and_then_it_disappears() {
    let world =
        builtins::kubelet(builtins::namespace_controller(Sim::builder().scenario("builtins-namespace")))
            .workload(|w| async move {
                let namespaces: Api<Namespace> = Api::all(w.client());
                w.apply(&namespaces, &Namespace { metadata: meta("team", None), ..Namespace::default() })
                    .await?;
                let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
                w.apply(
                    &maps,
                    &ConfigMap { metadata: meta("settings", Some("team")), ..ConfigMap::default() },
                )
                .await?;
                let pods: Api<Pod> = Api::namespaced(w.client(), "team");
                let pod = Pod {
                    metadata: meta("app", Some("team")),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "app".to_owned(),
                            image: Some("app:1".to_owned()),
                            ..Container::default()
                        }],
                        termination_grace_period_seconds: Some(2),
                        ..PodSpec::default()
                    }),
                    status: None,
                };
                w.apply(&pods, &pod).await?;
                w.wait_for(
                    &pods,
                    "app",
                    |p| p.is_some_and(controllers::builtins::pod_state::is_running_and_ready),
                    WAIT,
                )
                .await?;
                w.delete(&namespaces, "team").await?;
                w.wait_for(&pods, "app", |p| p.is_none(), WAIT).await?;
                w.wait_for(&maps, "settings", |m| m.is_none(), WAIT).await?;
                w.wait_for(&namespaces, "team", |n| n.is_none(), WAIT).await
            })
            .property(FnProperty::at_end("the namespace and its content are gone", |view| {
                let snap = view.cluster("default").ok_or("no cluster")?;
                let left = (
                    snapshot::objects::<Pod>(snap, Some("team")).len(),
                    snapshot::objects::<ConfigMap>(snap, Some("team")).len(),
                );
                let namespace = snapshot::object::<Namespace>(snap, None, "team");
                if left == (0, 0) && namespace.is_none() {
                    Ok(())
                } else {
                    Err(format!("left (pods, config maps) {left:?}, namespace {namespace:?}"))
                }
            }))
            .property(checks::garbage_collected());
    let report = sweep(&SweepConfig::new("builtins-namespace").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
