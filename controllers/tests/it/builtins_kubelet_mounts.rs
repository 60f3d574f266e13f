//! The kubelet-lite mounts a Pod's ConfigMap and Secret volumes before it starts it: a missing
//! object, or a key its `items` name that the object lacks, keeps the Pod `ContainerCreating`
//! with the kubelet's `FailedMount` events until the object is made or fixed; an `optional`
//! volume does not wait. A container whose environment reads a missing ConfigMap or key waits in
//! `CreateContainerConfigError` until it is there, the Pod's other containers running.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::builtins_deployment::failed_step;
use controllers::builtins::{self, pod_state};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, ConfigMapVolumeSource, Container, EnvFromSource, EnvVar, EnvVarSource,
    Event, KeyToPath, Pod, PodSpec, Secret, SecretEnvSource, SecretKeySelector, SecretVolumeSource, Volume,
};
use sim::api::{Api, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{Sim, SweepConfig, WorkloadError, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(60);

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: Some("default".to_owned()), ..ObjectMeta::default() }
}

/// `app`, mounting ConfigMap `app-config` (volume `config`), key `tls.key` of Secret `tls`
/// (volume `tls`) and the optional ConfigMap `extras` (volume `extras`).
fn pod() -> Pod {
    let volumes = vec![
        Volume {
            name: "config".to_owned(),
            config_map: Some(ConfigMapVolumeSource { name: "app-config".to_owned(), ..Default::default() }),
            ..Volume::default()
        },
        Volume {
            name: "tls".to_owned(),
            secret: Some(SecretVolumeSource {
                secret_name: Some("tls".to_owned()),
                items: Some(vec![KeyToPath {
                    key: "tls.key".to_owned(),
                    path: "key.pem".to_owned(),
                    ..KeyToPath::default()
                }]),
                ..Default::default()
            }),
            ..Volume::default()
        },
        Volume {
            name: "extras".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: "extras".to_owned(),
                optional: Some(true),
                ..Default::default()
            }),
            ..Volume::default()
        },
    ];
    Pod {
        metadata: meta("app"),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("app:1".to_owned()),
                ..Container::default()
            }],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn secret(keys: &[&str]) -> Secret {
    let data: BTreeMap<String, ByteString> =
        keys.iter().map(|k| ((*k).to_owned(), ByteString(b"x".to_vec()))).collect();
    Secret { metadata: meta("tls"), data: Some(data), ..Secret::default() }
}

/// The messages of the kubelet's `FailedMount` events, sorted.
async fn failed_mounts(events: &Api<Event>) -> Result<Vec<String>, WorkloadError> {
    let list =
        events.list(&Default::default()).await.map_err(|e| failed_step("list events", e.to_string()))?;
    let mut messages: Vec<String> = list
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedMount"))
        .filter_map(|e| e.message)
        .collect();
    messages.sort();
    Ok(messages)
}

/// Still `ContainerCreating`: Pending, its container waiting for it, no sandbox, no IP.
fn container_creating(pod: &Pod) -> bool {
    let status = pod.status.clone().unwrap_or_default();
    let waiting = status.container_statuses.unwrap_or_default().iter().all(|c| {
        c.state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.as_deref())
            == Some("ContainerCreating")
    });
    pod_state::phase(pod) == pod_state::PHASE_PENDING && waiting && status.pod_ip.is_none()
}

#[test]
fn a_pod_waits_in_container_creating_until_the_config_map_and_secret_key_it_mounts_exist() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-mounts"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let config_maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            let events: Api<Event> = Api::namespaced(w.client(), "default");
            // The Secret lacks the key the Pod names; the ConfigMap is not made yet.
            w.apply(&secrets, &secret(&["tls.crt"])).await?;
            w.apply(&pods, &pod()).await?;
            w.sleep(Duration::from_secs(10)).await;
            let stuck = pods.get("app").await.map_err(|e| failed_step("get app", e.to_string()))?;
            let found = (container_creating(&stuck), failed_mounts(&events).await?);
            let want = (
                true,
                vec![
                    "MountVolume.SetUp failed for volume \"config\" : configmap \"app-config\" not found".to_owned(),
                    "MountVolume.SetUp failed for volume \"tls\" : secret references non-existent secret key: tls.key"
                        .to_owned(),
                ],
            );
            if found != want {
                return Err(failed_step("check the waiting pod", format!("{found:?}, want {want:?}")));
            }
            // The ConfigMap alone is not enough: the Secret still lacks its key.
            w.apply(&config_maps, &ConfigMap { metadata: meta("app-config"), ..ConfigMap::default() }).await?;
            w.sleep(Duration::from_secs(10)).await;
            let stuck = pods.get("app").await.map_err(|e| failed_step("get app", e.to_string()))?;
            if !container_creating(&stuck) {
                return Err(failed_step("check the pod still waits", format!("{:?}", stuck.status)));
            }
            let patch = Patch::Merge(serde_json::json!({ "data": { "tls.key": "eA==" } }));
            secrets.patch("tls", &PatchParams::default(), &patch).await.map_err(|e| failed_step("patch tls", e.to_string()))?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        });
    let report = sweep(&SweepConfig::new("builtins-kubelet-mounts").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_pod_applied_before_its_config_map_starts_once_the_config_map_is_made_even_under_faults() {
    // The order a controller may write them in (the Deployment first): the Pod starts when the
    // ConfigMap comes, through the kubelet's ConfigMap watch, whatever the faults on it.
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-mounts-late"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world.swarm(swarm).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        let config_maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
        let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
        w.apply(&pods, &pod()).await?;
        w.apply(&secrets, &secret(&["tls.key"])).await?;
        w.apply(&config_maps, &ConfigMap { metadata: meta("app-config"), ..ConfigMap::default() }).await?;
        w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), Duration::from_secs(400))
            .await
    });
    let report = sweep(&SweepConfig::new("builtins-kubelet-mounts-late").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// A container reading `LEVEL` from ConfigMap `app-config`, and everything from the optional
/// Secret `extras`.
fn configured(name: &str) -> Container {
    Container {
        name: name.to_owned(),
        image: Some(format!("{name}:1")),
        env: Some(vec![EnvVar {
            name: "LEVEL".to_owned(),
            value_from: Some(EnvVarSource {
                config_map_key_ref: Some(ConfigMapKeySelector {
                    name: "app-config".to_owned(),
                    key: "LEVEL".to_owned(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..EnvVar::default()
        }]),
        env_from: Some(vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource { name: "extras".to_owned(), optional: Some(true) }),
            ..EnvFromSource::default()
        }]),
        ..Container::default()
    }
}

/// (phase, each container's waiting reason and message) of `pod`.
type Waiting = (String, Vec<(String, Option<String>, Option<String>)>);

fn waiting(pod: &Pod) -> Waiting {
    let statuses = pod.status.clone().unwrap_or_default().container_statuses.unwrap_or_default();
    let waiting = statuses
        .into_iter()
        .map(|c| {
            let w = c.state.and_then(|s| s.waiting);
            (c.name, w.as_ref().and_then(|w| w.reason.clone()), w.and_then(|w| w.message))
        })
        .collect();
    (pod_state::phase(pod).to_owned(), waiting)
}

#[test]
fn a_container_whose_environment_reads_a_missing_config_map_key_waits_in_create_container_config_error() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-config-error")).workload(
        |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let config_maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let events: Api<Event> = Api::namespaced(w.client(), "default");
            let two = Pod {
                metadata: meta("two"),
                spec: Some(PodSpec {
                    containers: vec![
                        configured("app"),
                        Container {
                            name: "proxy".to_owned(),
                            image: Some("proxy:1".to_owned()),
                            ..Container::default()
                        },
                    ],
                    ..PodSpec::default()
                }),
                status: None,
            };
            let solo = Pod {
                metadata: meta("solo"),
                spec: Some(PodSpec { containers: vec![configured("app")], ..PodSpec::default() }),
                status: None,
            };
            w.apply(&pods, &two).await?;
            w.apply(&pods, &solo).await?;
            w.sleep(Duration::from_secs(10)).await;
            let get = |name: &'static str| {
                let pods = pods.clone();
                async move { pods.get(name).await.map_err(|e| failed_step("get", e.to_string())) }
            };
            let missing = Some("configmap \"app-config\" not found".to_owned());
            let refused = Some("CreateContainerConfigError".to_owned());
            let found = (waiting(&get("two").await?), waiting(&get("solo").await?));
            let want = (
                (
                    "Running".to_owned(),
                    vec![
                        ("app".to_owned(), refused.clone(), missing.clone()),
                        ("proxy".to_owned(), None, None),
                    ],
                ),
                ("Pending".to_owned(), vec![("app".to_owned(), refused.clone(), missing.clone())]),
            );
            if found != want {
                return Err(failed_step("check the refused containers", format!("{found:?}, want {want:?}")));
            }
            let list = events
                .list(&Default::default())
                .await
                .map_err(|e| failed_step("list events", e.to_string()))?;
            let failed = list
                .items
                .iter()
                .filter(|e| e.reason.as_deref() == Some("Failed"))
                .filter_map(|e| e.message.clone())
                .collect::<Vec<_>>();
            if failed != ["Error: configmap \"app-config\" not found"; 2] {
                return Err(failed_step("check the Failed events", format!("{failed:?}")));
            }
            // The ConfigMap without the key: the error says which key.
            w.apply(&config_maps, &ConfigMap { metadata: meta("app-config"), ..ConfigMap::default() })
                .await?;
            w.sleep(Duration::from_secs(5)).await;
            let no_key = Some("couldn't find key LEVEL in ConfigMap default/app-config".to_owned());
            let found = waiting(&get("solo").await?);
            let want = ("Pending".to_owned(), vec![("app".to_owned(), refused, no_key)]);
            if found != want {
                return Err(failed_step("check the missing key", format!("{found:?}, want {want:?}")));
            }
            let patch = Patch::Merge(serde_json::json!({ "data": { "LEVEL": "debug" } }));
            config_maps
                .patch("app-config", &PatchParams::default(), &patch)
                .await
                .map_err(|e| failed_step("patch app-config", e.to_string()))?;
            w.wait_for(&pods, "solo", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.wait_for(&pods, "two", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        },
    );
    let report = sweep(&SweepConfig::new("builtins-kubelet-config-error").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn an_init_container_whose_environment_reads_a_missing_secret_waits_and_holds_the_pod_back() {
    let world = builtins::kubelet(Sim::builder().scenario("builtins-kubelet-init-config-error")).workload(
        |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            let mut migrate = Container {
                name: "migrate".to_owned(),
                image: Some("migrate:1".to_owned()),
                ..Container::default()
            };
            migrate.env = Some(vec![EnvVar {
                name: "PASSWORD".to_owned(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: "db".to_owned(),
                        key: "password".to_owned(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..EnvVar::default()
            }]);
            let pod = Pod {
                metadata: meta("app"),
                spec: Some(PodSpec {
                    init_containers: Some(vec![migrate]),
                    containers: vec![Container {
                        name: "app".to_owned(),
                        image: Some("app:1".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
                status: None,
            };
            w.apply(&pods, &pod).await?;
            w.sleep(Duration::from_secs(10)).await;
            let p = pods.get("app").await.map_err(|e| failed_step("get app", e.to_string()))?;
            let status = p.status.clone().unwrap_or_default();
            let reason = |s: &k8s_openapi::api::core::v1::ContainerStatus| {
                let w = s.state.as_ref().and_then(|s| s.waiting.as_ref());
                (w.and_then(|w| w.reason.clone()), w.and_then(|w| w.message.clone()))
            };
            let found = (
                pod_state::phase(&p).to_owned(),
                status.init_container_statuses.unwrap_or_default().iter().map(reason).collect::<Vec<_>>(),
                status.container_statuses.unwrap_or_default().iter().map(reason).collect::<Vec<_>>(),
                status.pod_ip.is_some(),
            );
            let want = (
                "Pending".to_owned(),
                vec![(
                    Some("CreateContainerConfigError".to_owned()),
                    Some("secret \"db\" not found".to_owned()),
                )],
                vec![(Some("PodInitializing".to_owned()), None)],
                true,
            );
            if found != want {
                return Err(failed_step(
                    "check the refused init container",
                    format!("{found:?}, want {want:?}"),
                ));
            }
            let data = BTreeMap::from([("password".to_owned(), ByteString(b"x".to_vec()))]);
            w.apply(&secrets, &Secret { metadata: meta("db"), data: Some(data), ..Secret::default() })
                .await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        },
    );
    let report =
        sweep(&SweepConfig::new("builtins-kubelet-init-config-error").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}
