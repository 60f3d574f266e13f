//! The PersistentVolume binder and the local provisioner, with the kubelet-lite's scheduler:
//! a claim without a class gets the default class `standard` and a provisioned volume; a
//! pre-created volume binds to the claim it fits best; a deleted claim's volume is deleted or
//! released by its reclaim policy; a Pod waits, unschedulable, for its claims to bind; and all
//! of it under swarm faults on every built-in, with no volume ever bound to two claims.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, kubelet, local_provisioner, persistentvolume as pv, pod_state, snapshot};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    Container, Event, HostPathVolumeSource, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PersistentVolumeSpec, Pod, PodSpec, Volume,
    VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use model_apiserver::Snapshot;
use sim::api::{Api, ObjectMeta, Patch, PatchParams};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);

/// The binder and the provisioner, which every world here runs.
pub(crate) fn storage(name: &str) -> SimBuilder {
    builtins::local_provisioner(builtins::persistentvolume_binder(Sim::builder().scenario(name)))
}

pub(crate) fn claim(name: &str, class: Option<&str>, storage: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), Quantity(storage.to_owned()))])),
                ..VolumeResourceRequirements::default()
            }),
            storage_class_name: class.map(str::to_owned),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

pub(crate) fn volume(name: &str, class: &str, capacity: &str, reclaim: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        spec: Some(PersistentVolumeSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            capacity: Some(BTreeMap::from([("storage".to_owned(), Quantity(capacity.to_owned()))])),
            host_path: Some(HostPathVolumeSource { path: format!("/data/{name}"), type_: None }),
            persistent_volume_reclaim_policy: Some(reclaim.to_owned()),
            storage_class_name: Some(class.to_owned()),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    }
}

fn claim_phase(c: &PersistentVolumeClaim) -> Option<&str> {
    c.status.as_ref().and_then(|s| s.phase.as_deref())
}

pub(crate) fn volume_phase(v: &PersistentVolume) -> Option<&str> {
    v.status.as_ref().and_then(|s| s.phase.as_deref())
}

pub(crate) fn claim_is(phase: &'static str) -> impl Fn(Option<&PersistentVolumeClaim>) -> bool {
    move |c| c.is_some_and(|c| claim_phase(c) == Some(phase))
}

fn volume_is(phase: &'static str) -> impl Fn(Option<&PersistentVolume>) -> bool {
    move |v| v.is_some_and(|v| volume_phase(v) == Some(phase))
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

fn claim_in(snap: &Snapshot, name: &str) -> Result<PersistentVolumeClaim, String> {
    snapshot::object::<PersistentVolumeClaim>(snap, Some("default"), name).ok_or(format!("no claim {name}"))
}

fn volume_in(snap: &Snapshot, name: &str) -> Result<PersistentVolume, String> {
    snapshot::object::<PersistentVolume>(snap, None, name).ok_or(format!("no volume {name}"))
}

fn storage_of(capacity: Option<&BTreeMap<String, Quantity>>) -> Option<&str> {
    capacity.and_then(|c| c.get("storage")).map(|q| q.0.as_str())
}

/// A claim and the volume it names are bound to each other, as the binder leaves them.
fn bound_pair(
    snap: &Snapshot,
    claim_name: &str,
) -> Result<(PersistentVolumeClaim, PersistentVolume), String> {
    let claim = claim_in(snap, claim_name)?;
    let volume_name = pv::volume_name_of(&claim).ok_or(format!("{claim_name} names no volume"))?.to_owned();
    let volume = volume_in(snap, &volume_name)?;
    let reference = volume.spec.as_ref().and_then(|s| s.claim_ref.clone()).unwrap_or_default();
    let found = (
        claim_phase(&claim),
        volume_phase(&volume),
        reference.name.as_deref(),
        reference.uid == claim.metadata.uid,
        reference.resource_version.is_some(),
        annotation(&claim.metadata, pv::ANN_BIND_COMPLETED),
    );
    let want = (Some("Bound"), Some("Bound"), Some(claim_name), true, true, Some("yes"));
    if found != want {
        return Err(format!("{claim_name} and {volume_name}: {found:?}, want {want:?}"));
    }
    let status = claim.status.clone().unwrap_or_default();
    let spec = volume.spec.clone().unwrap_or_default();
    if status.access_modes != spec.access_modes
        || storage_of(status.capacity.as_ref()) != storage_of(spec.capacity.as_ref())
    {
        return Err(format!("{claim_name}'s status {status:?} does not show {volume_name}'s {spec:?}"));
    }
    Ok((claim, volume))
}

#[test]
fn a_claim_made_without_a_class_names_the_default_at_once_or_once_a_default_appears() {
    // With a default class, kube-apiserver's DefaultStorageClass admission writes it into the
    // created claim: the create's answer names it. A claim made while there was none gets it
    // from the binder once one appears (the retroactive assignment of 1.28+).
    let world = builtins::persistentvolume_binder(Sim::builder().scenario("builtins-volumes-default-class"))
        .workload(|w| async move {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let classes: Api<StorageClass> = Api::all(w.client());
            let class_of =
                |c: &PersistentVolumeClaim| c.spec.as_ref().and_then(|s| s.storage_class_name.clone());
            let early = w.apply(&claims, &claim("early", None, "1Gi")).await?;
            let mut fast = local_class("fast", false);
            fast.metadata.annotations = Some([(pv::ANN_DEFAULT_CLASS.to_owned(), "true".to_owned())].into());
            w.apply(&classes, &fast).await?;
            let late = w.apply(&claims, &claim("late", None, "1Gi")).await?;
            let answers = (class_of(&early), class_of(&late));
            if answers != (None, Some("fast".to_owned())) {
                return Err(crate::builtins_deployment::failed_step(
                    "check the answers",
                    format!("{answers:?}"),
                ));
            }
            let named = |c: Option<&PersistentVolumeClaim>| c.and_then(class_of).as_deref() == Some("fast");
            w.wait_for(&claims, "early", named, WAIT).await
        });
    let report = sweep(&SweepConfig::new("builtins-volumes-default-class").seeds(10), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

// `standard` waits for a first consumer, as kind's: a claim no Pod uses stays Pending (with the
// binder's `WaitForFirstConsumer` event) and gets no volume; one a Pod uses is given the Pod's
// node by the scheduler, provisioned there and bound, and the Pod then runs on that node.
#[test]
fn a_claim_without_a_class_gets_standard_and_a_provisioned_volume_and_both_are_bound() {
    let world = builtins::kubelet(storage("builtins-volumes-provision"))
        .workload(|w| async move {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&claims, &claim("idle", None, "1Gi")).await?;
            w.apply(&claims, &claim("data", None, "1Gi")).await?;
            w.sleep(Duration::from_secs(20)).await;
            w.wait_for(&claims, "data", claim_is("Pending"), Duration::ZERO).await?;
            w.apply(&pods, &pod_with_claim("app", "data")).await?;
            w.wait_for(&claims, "data", claim_is("Bound"), WAIT).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::always("no Pod runs before its claim is bound", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let Some(app) = snapshot::object::<Pod>(snap, Some("default"), "app") else { return Ok(()) };
            // Bound as the scheduler reads it: the volume named and the binding completed (the
            // claim's phase is written right after).
            let bound = claim_in(snap, "data").is_ok_and(|c| {
                pv::volume_name_of(&c).is_some() && annotation(&c.metadata, pv::ANN_BIND_COMPLETED).is_some()
            });
            let scheduled = app.spec.as_ref().is_some_and(|s| s.node_name.is_some());
            if !scheduled || bound { Ok(()) } else { Err("app bound to a node before its claim".to_owned()) }
        }))
        .property(FnProperty::at_end("idle waits for a consumer; data is on the Pod's node", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let idle = claim_in(snap, "idle")?;
            let waiting = snapshot::objects::<Event>(snap, Some("default")).into_iter().any(|e| {
                e.involved_object.name.as_deref() == Some("idle")
                    && e.reason.as_deref() == Some("WaitForFirstConsumer")
                    && e.message.as_deref() == Some("waiting for first consumer to be created before binding")
            });
            let volumes = snapshot::objects::<PersistentVolume>(snap, None).len();
            if (claim_phase(&idle), pv::volume_name_of(&idle), waiting, volumes)
                != (Some("Pending"), None, true, 1)
            {
                return Err(format!(
                    "idle {:?}, WaitForFirstConsumer event {waiting}, {volumes} volumes",
                    idle.status
                ));
            }
            let (claim, volume) = bound_pair(snap, "data")?;
            let affinity = serde_json::to_value(volume.spec.as_ref().and_then(|s| s.node_affinity.clone()))
                .map_err(|e| e.to_string())?;
            let want_affinity = serde_json::json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [kubelet::NODE_NAME]}]}]}});
            if (annotation(&claim.metadata, pv::ANN_SELECTED_NODE), &affinity)
                != (Some(kubelet::NODE_NAME), &want_affinity)
            {
                return Err(format!(
                    "data selected {:?}, volume affinity {affinity}",
                    claim.metadata.annotations
                ));
            }
            Ok(())
        }))
        .property(FnProperty::at_end("data got standard and its own provisioned volume", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let (claim, volume) = bound_pair(snap, "data")?;
            let class = snapshot::object::<StorageClass>(snap, None, local_provisioner::CLASS_NAME)
                .ok_or("no StorageClass standard")?;
            let spec = volume.spec.clone().unwrap_or_default();
            let found = (
                claim.spec.as_ref().and_then(|s| s.storage_class_name.as_deref()),
                annotation(&claim.metadata, pv::ANN_STORAGE_PROVISIONER),
                annotation(&claim.metadata, pv::ANN_BETA_STORAGE_PROVISIONER),
                annotation(&claim.metadata, pv::ANN_BOUND_BY_CONTROLLER),
                volume.metadata.name.clone(),
                annotation(&volume.metadata, pv::ANN_PROVISIONED_BY),
                storage_of(spec.capacity.as_ref()),
                spec.persistent_volume_reclaim_policy.as_deref(),
                spec.storage_class_name.as_deref(),
                pv::is_default_class(&class),
                class.provisioner.as_str(),
            );
            let want = (
                Some("standard"),
                Some(local_provisioner::PROVISIONER),
                Some(local_provisioner::PROVISIONER),
                Some("yes"),
                Some(format!("pvc-{}", claim.metadata.uid.clone().unwrap_or_default())),
                Some(local_provisioner::PROVISIONER),
                Some("1Gi"),
                Some("Delete"),
                Some("standard"),
                true,
                local_provisioner::PROVISIONER,
            );
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-provision").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// A class of the local provisioner, allowing expansion or not.
fn local_class(name: &str, expandable: bool) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        provisioner: local_provisioner::PROVISIONER.to_owned(),
        allow_volume_expansion: expandable.then_some(true),
        ..StorageClass::default()
    }
}

fn resize_patch(storage: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "spec": { "resources": { "requests": { "storage": storage } } } }))
}

#[test]
fn a_bound_claim_of_an_expandable_class_grows_and_its_volume_with_it() {
    let world = storage("builtins-volumes-expand")
        .workload(|w| async move {
            let classes: Api<StorageClass> = Api::all(w.client());
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            w.apply(&classes, &local_class("expandable", true)).await?;
            w.apply(&classes, &local_class("fixed", false)).await?;
            w.apply(&claims, &claim("data", Some("expandable"), "1Gi")).await?;
            w.apply(&claims, &claim("logs", Some("fixed"), "1Gi")).await?;
            w.wait_for(&claims, "data", claim_is("Bound"), WAIT).await?;
            w.wait_for(&claims, "logs", claim_is("Bound"), WAIT).await?;
            w.patch(&claims, "data", &resize_patch("3Gi")).await?;
            // kube-apiserver's PersistentVolumeClaimResize: the class does not allow it.
            match claims.patch("logs", &PatchParams::default(), &resize_patch("3Gi")).await {
                Err(sim::Error::Api(status))
                    if status.code == 403 && status.message.contains("must support resize") => {}
                other => {
                    return Err(crate::builtins_deployment::failed_step("resize logs", format!("{other:?}")));
                }
            }
            let grown = |c: Option<&PersistentVolumeClaim>| {
                c.and_then(|c| storage_of(c.status.as_ref()?.capacity.as_ref()).map(str::to_owned))
                    == Some("3Gi".to_owned())
            };
            w.wait_for(&claims, "data", grown, WAIT).await
        })
        .property(FnProperty::at_end("data and its volume have 3Gi, logs still 1Gi", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let (data, volume) = bound_pair(snap, "data")?;
            let (logs, _) = bound_pair(snap, "logs")?;
            let status = data.status.clone().unwrap_or_default();
            let reasons: Vec<String> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| e.involved_object.name.as_deref() == Some("data"))
                .filter_map(|e| e.reason)
                .filter(|r| r.contains("Resiz"))
                .collect();
            let found = (
                storage_of(volume.spec.as_ref().and_then(|s| s.capacity.as_ref())),
                storage_of(status.allocated_resources.as_ref()),
                status.allocated_resource_statuses.is_none(),
                status.conditions.is_none(),
                storage_of(logs.spec.as_ref().and_then(|s| s.resources.as_ref()?.requests.as_ref())),
                reasons,
            );
            let want = (
                Some("3Gi"),
                Some("3Gi"),
                true,
                true,
                Some("1Gi"),
                vec!["Resizing".to_owned(), "VolumeResizeSuccessful".to_owned()],
            );
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-expand").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_pre_created_volume_binds_the_claim_it_fits_best_and_a_too_small_one_stays_available() {
    let world = storage("builtins-volumes-static")
        .workload(|w| async move {
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            for (name, capacity) in [("small", "1Gi"), ("medium", "5Gi"), ("large", "10Gi"), ("named", "2Gi")]
            {
                w.apply(&volumes, &volume(name, "manual", capacity, "Retain")).await?;
            }
            for name in ["small", "medium", "large", "named"] {
                w.wait_for(&volumes, name, volume_is("Available"), WAIT).await?;
            }
            w.apply(&claims, &claim("fits", Some("manual"), "3Gi")).await?;
            let mut by_name = claim("by-name", Some("manual"), "1Gi");
            by_name.spec.as_mut().expect("a spec").volume_name = Some("named".to_owned());
            w.apply(&claims, &by_name).await?;
            w.apply(&claims, &claim("too-big", Some("manual"), "20Gi")).await?;
            w.wait_for(&claims, "fits", claim_is("Bound"), WAIT).await?;
            w.wait_for(&claims, "by-name", claim_is("Bound"), WAIT).await
        })
        .property(FnProperty::at_end("fits got medium, by-name got named, the rest waits", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let (fits, medium) = bound_pair(snap, "fits")?;
            let (by_name, _) = bound_pair(snap, "by-name")?;
            let too_big = claim_in(snap, "too-big")?;
            let small = volume_in(snap, "small")?;
            let large = volume_in(snap, "large")?;
            let found = (
                medium.metadata.name.as_deref(),
                annotation(&medium.metadata, pv::ANN_BOUND_BY_CONTROLLER),
                annotation(&fits.metadata, pv::ANN_BOUND_BY_CONTROLLER),
                // The user named the volume: not the binder's choice.
                annotation(&by_name.metadata, pv::ANN_BOUND_BY_CONTROLLER),
                claim_phase(&too_big),
                pv::volume_name_of(&too_big),
                volume_phase(&small),
                small.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).is_none(),
                volume_phase(&large),
            );
            let want = (
                Some("medium"),
                Some("yes"),
                Some("yes"),
                None,
                Some("Pending"),
                None,
                Some("Available"),
                true,
                Some("Available"),
            );
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-static").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn deleting_a_claim_deletes_its_provisioned_volume_and_releases_a_retained_one() {
    let world = storage("builtins-volumes-reclaim")
        .workload(|w| async move {
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            // An `Immediate` class of the local provisioner: its claim binds with no Pod.
            let classes: Api<StorageClass> = Api::all(w.client());
            w.apply(&classes, &local_class("instant", false)).await?;
            w.apply(&volumes, &volume("kept", "manual", "1Gi", "Retain")).await?;
            w.wait_for(&volumes, "kept", volume_is("Available"), WAIT).await?;
            w.apply(&claims, &claim("scratch", Some("instant"), "1Gi")).await?;
            w.apply(&claims, &claim("precious", Some("manual"), "1Gi")).await?;
            w.wait_for(&claims, "scratch", claim_is("Bound"), WAIT).await?;
            w.wait_for(&claims, "precious", claim_is("Bound"), WAIT).await?;
            w.delete(&claims, "scratch").await?;
            w.delete(&claims, "precious").await?;
            w.wait_for(&volumes, "kept", volume_is("Released"), WAIT).await?;
            w.wait_for_all(&volumes, |all| all.len() == 1, WAIT).await
        })
        .property(FnProperty::at_end("only kept is left, Released, still naming its claim", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let names: Vec<String> = snapshot::objects::<PersistentVolume>(snap, None)
                .into_iter()
                .filter_map(|v| v.metadata.name)
                .collect();
            let kept = volume_in(snap, "kept")?;
            let reference =
                kept.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).and_then(|r| r.name.clone());
            let found = (names, volume_phase(&kept), reference);
            let want = (vec!["kept".to_owned()], Some("Released"), Some("precious".to_owned()));
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-reclaim").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

pub(crate) fn pod_with_claim(name: &str, claim: &str) -> Pod {
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
                ..Container::default()
            }],
            volumes: Some(vec![Volume {
                name: "data".to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.to_owned(),
                    read_only: None,
                }),
                ..Volume::default()
            }]),
            termination_grace_period_seconds: Some(1),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn pod_scheduled(pod: &Pod) -> Option<(String, Option<String>, Option<String>)> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == "PodScheduled")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// A scheduled Pod's claims are all fully bound (what the scheduler waits for).
fn scheduled_only_with_bound_claims() -> FnProperty {
    FnProperty::always("a pod is scheduled only once its claims are bound", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        for pod in snapshot::objects::<Pod>(snap, Some("default")) {
            let spec = pod.spec.clone().unwrap_or_default();
            if spec.node_name.is_none() {
                continue;
            }
            for source in spec.volumes.iter().flatten().filter_map(|v| v.persistent_volume_claim.as_ref()) {
                let claim =
                    snapshot::object::<PersistentVolumeClaim>(snap, Some("default"), &source.claim_name);
                let bound = claim.as_ref().is_some_and(|c| {
                    pv::volume_name_of(c).is_some()
                        && annotation(&c.metadata, pv::ANN_BIND_COMPLETED).is_some()
                });
                if !bound {
                    return Err(format!(
                        "{} scheduled while {} is {claim:?}",
                        pod.metadata.name.clone().unwrap_or_default(),
                        source.claim_name
                    ));
                }
            }
        }
        Ok(())
    })
}

#[test]
fn a_pod_whose_claim_is_missing_stays_pending_unschedulable_until_the_claim_binds() {
    let missing =
        "0/1 nodes are available: persistentvolumeclaim \"data\" not found. preemption: 0/1 nodes are \
                   available: 1 Preemption is not helpful for scheduling."
            .to_owned();
    let want = missing.clone();
    let world = builtins::kubelet(storage("builtins-volumes-pod"))
        .workload(move |w| {
            let want = want.clone();
            async move {
                let pods: Api<Pod> = Api::namespaced(w.client(), "default");
                let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
                w.apply(&pods, &pod_with_claim("app", "data")).await?;
                let unschedulable = move |p: Option<&Pod>| {
                    p.and_then(pod_scheduled)
                        == Some((
                            "False".to_owned(),
                            Some(kubelet::UNSCHEDULABLE.to_owned()),
                            Some(want.clone()),
                        ))
                };
                w.wait_for(&pods, "app", unschedulable, WAIT).await?;
                // Still Pending and unbound a while later: nothing schedules it without its claim.
                w.sleep(Duration::from_secs(10)).await;
                w.wait_for(
                    &pods,
                    "app",
                    |p| {
                        p.is_some_and(|p| {
                            p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none()
                                && pod_state::phase(p) == "Pending"
                        })
                    },
                    WAIT,
                )
                .await?;
                w.apply(&claims, &claim("data", None, "1Gi")).await?;
                w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
            }
        })
        .property(scheduled_only_with_bound_claims())
        .property(FnProperty::at_end("the scheduler said why, then scheduled it", move |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            bound_pair(snap, "data")?;
            let pod = snapshot::object::<Pod>(snap, Some("default"), "app").ok_or("no pod")?;
            let failed: Vec<String> = snapshot::objects::<Event>(snap, Some("default"))
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
                .filter_map(|e| e.message)
                .collect();
            let found = (pod_scheduled(&pod).map(|c| c.0), failed.contains(&missing));
            let want = (Some("True".to_owned()), true);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-pod").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// The StatefulSet tests' `db`, its claim `data` asking 1Gi of the default class.
pub(crate) fn db(replicas: i32) -> StatefulSet {
    let claim = claim("data", None, "1Gi").spec.expect("a claim spec");
    crate::builtins_statefulset::db_claiming(replicas, claim)
}

#[test]
fn a_statefulset_gets_its_pods_running_only_after_their_claims_bind() {
    let world = builtins::kubelet(builtins::statefulset_controller(storage("builtins-volumes-statefulset")))
        .workload(|w| async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &db(3)).await?;
            let ready = |s: Option<&StatefulSet>| {
                s.and_then(|s| s.status.as_ref()).is_some_and(|s| s.ready_replicas == Some(3))
            };
            w.wait_for(&sets, "db", ready, WAIT).await
        })
        .property(scheduled_only_with_bound_claims())
        .property(FnProperty::at_end("every replica runs on its own bound claim", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let mut volumes = Vec::new();
            for ordinal in 0..3 {
                let pod = snapshot::object::<Pod>(snap, Some("default"), &format!("db-{ordinal}"))
                    .ok_or(format!("no db-{ordinal}"))?;
                if !pod_state::is_running_and_ready(&pod) {
                    return Err(format!("db-{ordinal} is not running and ready"));
                }
                let (_, volume) = bound_pair(snap, &format!("data-db-{ordinal}"))?;
                volumes.push(volume.metadata.name.unwrap_or_default());
            }
            volumes.sort();
            volumes.dedup();
            if volumes.len() == 3 { Ok(()) } else { Err(format!("volumes {volumes:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-statefulset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

/// No two claims name one volume, and no volume's `claimRef` names a claim (by uid) that names
/// another volume: the binder never double-binds, whatever its cache says.
fn one_claim_per_volume() -> FnProperty {
    FnProperty::always("a volume is bound to one claim at most", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let mut named: BTreeMap<String, String> = BTreeMap::new();
        for claim in snapshot::objects::<PersistentVolumeClaim>(snap, None) {
            let Some(volume) = pv::volume_name_of(&claim) else { continue };
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(other) = named.insert(volume.to_owned(), name.clone()) {
                return Err(format!("{volume} is named by claims {other} and {name}"));
            }
        }
        for volume in snapshot::objects::<PersistentVolume>(snap, None) {
            let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else { continue };
            let claim = reference.name.as_deref().and_then(|n| {
                snapshot::object::<PersistentVolumeClaim>(snap, reference.namespace.as_deref(), n)
            });
            let name = volume.metadata.name.clone().unwrap_or_default();
            let elsewhere = claim
                .as_ref()
                .filter(|c| c.metadata.uid == reference.uid)
                .and_then(|c| pv::volume_name_of(c).filter(|bound| *bound != name).map(str::to_owned));
            if let Some(other) = elsewhere {
                return Err(format!("{name} is bound to a claim bound to {other}"));
            }
        }
        Ok(())
    })
}

/// Generous: a delayed watch holds back every event behind it (as in `builtins_faults`).
const FAULTS_WAIT: Duration = Duration::from_secs(400);

#[test]
fn under_swarm_faults_claims_bind_pods_run_on_them_and_deleted_claims_leave_no_volume() {
    let world = builtins::all(Sim::builder().scenario("builtins-volumes-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let classes: Api<StorageClass> = Api::all(w.client());
            w.apply(&pods, &pod_with_claim("app", "data")).await?;
            w.apply(&claims, &claim("data", None, "1Gi")).await?;
            // Of an `Immediate` class: it binds with no Pod.
            w.apply(&classes, &local_class("instant", false)).await?;
            w.apply(&claims, &claim("spare", Some("instant"), "2Gi")).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), FAULTS_WAIT).await?;
            w.wait_for(&claims, "spare", claim_is("Bound"), FAULTS_WAIT).await?;
            w.delete(&pods, "app").await?;
            w.wait_for(&pods, "app", |p| p.is_none(), FAULTS_WAIT).await?;
            w.delete(&claims, "data").await?;
            w.delete(&claims, "spare").await?;
            w.wait_for_all(&volumes, |all| all.is_empty(), FAULTS_WAIT).await
        })
        .property(scheduled_only_with_bound_claims())
        .property(one_claim_per_volume())
        .property(FnProperty::at_end("no claim or volume left", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let left = (
                snapshot::objects::<PersistentVolumeClaim>(snap, None).len(),
                snapshot::objects::<PersistentVolume>(snap, None).len(),
            );
            if left == (0, 0) { Ok(()) } else { Err(format!("left (claims, volumes): {left:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-faults").seeds(40), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

// Local volumes made by hand (`kubernetes.io/no-provisioner`, `WaitForFirstConsumer`): the
// scheduler puts the Pod where a volume that fits its claim is, pre-binds that volume, and the
// binder completes the binding. A claim no volume fits leaves its Pod unschedulable, with the
// VolumeBinding plugin's reason on every node.
#[test]
fn a_claim_of_a_local_volume_class_takes_the_pod_to_the_volumes_node() {
    let local = StorageClass {
        metadata: ObjectMeta { name: Some("local".to_owned()), ..ObjectMeta::default() },
        provisioner: "kubernetes.io/no-provisioner".to_owned(),
        volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
        ..StorageClass::default()
    };
    let on_node_a = |name: &str, capacity: &str| {
        let mut volume = volume(name, "local", capacity, "Retain");
        volume.spec.as_mut().expect("a spec").node_affinity = serde_json::from_value(serde_json::json!({
            "required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a"]}]}]}
        }))
        .ok();
        volume
    };
    let (small, big) = (on_node_a("small", "1Gi"), on_node_a("big", "10Gi"));
    let world = builtins::kubelet(storage("builtins-volumes-local"))
        .workload(move |w| {
            let (local, small, big) = (local.clone(), small.clone(), big.clone());
            async move {
                let classes: Api<StorageClass> = Api::all(w.client());
                let volumes: Api<PersistentVolume> = Api::all(w.client());
                let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
                let pods: Api<Pod> = Api::namespaced(w.client(), "default");
                let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(w.client());
                w.wait_for(&nodes, kubelet::NODE_NAME, |n| n.is_some(), WAIT).await?;
                let node_a = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"}}
                }))
                .map_err(|e| crate::builtins_deployment::failed_step("node-a", e.to_string()))?;
                w.apply(&nodes, &node_a).await?;
                w.apply(&classes, &local).await?;
                w.apply(&volumes, &small).await?;
                w.apply(&volumes, &big).await?;
                w.apply(&claims, &claim("data", Some("local"), "2Gi")).await?;
                w.apply(&pods, &pod_with_claim("app", "data")).await?;
                w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
                w.apply(&claims, &claim("huge", Some("local"), "50Gi")).await?;
                w.apply(&pods, &pod_with_claim("greedy", "huge")).await?;
                let want = "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. \
                            preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
                let waiting = |p: Option<&Pod>| {
                    p.and_then(pod_scheduled).is_some_and(|(_, reason, message)| {
                        reason.as_deref() == Some("Unschedulable") && message.as_deref() == Some(want)
                    })
                };
                w.wait_for(&pods, "greedy", waiting, WAIT).await
            }
        })
        .property(FnProperty::at_end("app on node-a with big", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let (claim, volume) = bound_pair(snap, "data")?;
            let app = snapshot::object::<Pod>(snap, Some("default"), "app").ok_or("no app")?;
            let found = (
                app.spec.and_then(|s| s.node_name),
                volume.metadata.name.clone(),
                annotation(&volume.metadata, pv::ANN_BOUND_BY_CONTROLLER),
                annotation(&claim.metadata, pv::ANN_SELECTED_NODE),
            );
            let want = (Some("node-a".to_owned()), Some("big".to_owned()), Some("yes"), None);
            if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
        }));
    let report = sweep(&SweepConfig::new("builtins-volumes-local").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_claim_grown_before_the_provisioner_saw_its_volume_grows_at_the_resizers_resync() {
    // The provisioner's volume watch lags by seconds: the claim asks for more while the
    // provisioner's volume cache does not have the volume yet. The resizer's claim sync finds
    // no volume and waits for its informer's resync, as upstream's; the claim grows then.
    let lag = sim::faults::PlannedFault {
        trigger: sim::faults::Trigger::AtTime { at_ms: 0 },
        fault: sim::faults::Fault::DelayWatch {
            controller: local_provisioner::NODE.to_owned(),
            resource: "persistentvolumes".to_owned(),
            extra_ms: 5_000,
            duration_ms: 60_000,
        },
    };
    let world = storage("builtins-volumes-expand-lagging")
        .faults(sim::faults::FaultPlan { faults: vec![lag] })
        .workload(|w| async move {
            let classes: Api<StorageClass> = Api::all(w.client());
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            w.apply(&classes, &local_class("expandable", true)).await?;
            w.apply(&claims, &claim("data", Some("expandable"), "1Gi")).await?;
            w.wait_for(&claims, "data", claim_is("Bound"), WAIT).await?;
            w.patch(&claims, "data", &resize_patch("3Gi")).await?;
            let grown = |c: Option<&PersistentVolumeClaim>| {
                c.and_then(|c| storage_of(c.status.as_ref()?.capacity.as_ref()).map(str::to_owned))
                    == Some("3Gi".to_owned())
            };
            w.wait_for(&claims, "data", grown, local_provisioner::RESIZER_RESYNC + WAIT).await
        });
    let report = sweep(&SweepConfig::new("builtins-volumes-expand-lagging").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
