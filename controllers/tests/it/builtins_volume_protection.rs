//! The PVC and PV protection controllers with the admission plugin that goes with them: a claim
//! deleted while a scheduled Pod mounts it stays `Terminating` until the Pod is gone, a bound
//! volume deleted stays until it is released, a claim's lagging Pod cache is checked against a
//! live list, and a StatefulSet does not re-create a Pod on a claim that is being deleted; with
//! the invariant, under faults too, that no claim goes while a scheduled Pod mounts it.

use std::time::Duration;

use controllers::builtins::{self, pod_state, snapshot, volume_protection as protection};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use sim::api::{Api, PostParams, ResourceExt};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, WorkloadError, sweep};

use crate::builtins_deployment::failed_step;
use crate::builtins_volumes::{claim, claim_is, db, pod_with_claim, storage, volume, volume_phase};
use crate::fault_plans::lagging_watch;

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(120);

/// The binder, the provisioner, the kubelet-lite and both protection controllers.
fn protected(name: &str) -> SimBuilder {
    builtins::volume_protection_controllers(builtins::kubelet(storage(name)))
}

fn finalizers(meta: &sim::api::ObjectMeta) -> Vec<&str> {
    meta.finalizers.iter().flatten().map(String::as_str).collect()
}

/// The claim `name` as it is now: there, being deleted, still held by its finalizer.
async fn expect_terminating(claims: &Api<PersistentVolumeClaim>, name: &str) -> Result<(), WorkloadError> {
    let action = format!("check claim {name} is terminating");
    let claim = claims.get_opt(name).await.map_err(|e| failed_step(&action, e.to_string()))?;
    let claim = claim.ok_or_else(|| failed_step(&action, "gone while a Pod mounts it".to_owned()))?;
    let found = (claim.metadata.deletion_timestamp.is_some(), finalizers(&claim.metadata));
    if found != (true, vec![protection::PVC_FINALIZER]) {
        return Err(failed_step(&action, format!("(deleting, finalizers) = {found:?}")));
    }
    Ok(())
}

/// Every claim that a scheduled Pod mounts exists: the protection controller keeps it while a
/// Pod holds it (upstream's `podUsesPVC`: any Pod object with a node, whatever its phase).
fn no_claim_gone_under_a_scheduled_pod() -> FnProperty {
    FnProperty::always("no claim goes while a scheduled Pod mounts it", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        for pod in snapshot::objects::<Pod>(snap, None) {
            let spec = pod.spec.clone().unwrap_or_default();
            if spec.node_name.as_deref().unwrap_or_default().is_empty() {
                continue;
            }
            for source in spec.volumes.iter().flatten().filter_map(|v| v.persistent_volume_claim.as_ref()) {
                let namespace = pod.namespace();
                if snapshot::object::<PersistentVolumeClaim>(snap, namespace.as_deref(), &source.claim_name)
                    .is_none()
                {
                    return Err(format!(
                        "{} is scheduled and its claim {} is gone",
                        pod.name_any(),
                        source.claim_name
                    ));
                }
            }
        }
        Ok(())
    })
}

fn nothing_left() -> FnProperty {
    FnProperty::at_end("no claim or volume left", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let left = (
            snapshot::objects::<PersistentVolumeClaim>(snap, None).len(),
            snapshot::objects::<PersistentVolume>(snap, None).len(),
        );
        if left == (0, 0) { Ok(()) } else { Err(format!("left (claims, volumes): {left:?}")) }
    })
}

#[test]
fn a_claim_deleted_while_a_pod_mounts_it_stays_terminating_until_the_pod_is_gone() {
    let world = protected("builtins-pvc-protection")
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let created = w.apply(&claims, &claim("data", None, "1Gi")).await?;
            // The admission plugin's finalizer, in the create's answer already.
            if finalizers(&created.metadata) != [protection::PVC_FINALIZER] {
                return Err(failed_step(
                    "create claim data",
                    format!("finalizers {:?}", created.metadata.finalizers),
                ));
            }
            w.apply(&pods, &pod_with_claim("app", "data")).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            w.delete(&claims, "data").await?;
            w.sleep(Duration::from_secs(60)).await;
            expect_terminating(&claims, "data").await?;
            // Its name is still taken: a create answers AlreadyExists, as in a cluster.
            match claims.create(&PostParams::default(), &claim("data", None, "1Gi")).await {
                Err(sim::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {}
                other => return Err(failed_step("create claim data again", format!("{other:?}"))),
            }
            w.delete(&pods, "app").await?;
            w.wait_for(&claims, "data", |c| c.is_none(), WAIT).await?;
            w.wait_for_all(&volumes, |all| all.is_empty(), WAIT).await
        })
        .property(no_claim_gone_under_a_scheduled_pod())
        .property(nothing_left());
    let report = sweep(&SweepConfig::new("builtins-pvc-protection").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_bound_volume_deleted_stays_until_its_claim_is_deleted_and_releases_it() {
    let world = protected("builtins-pv-protection")
        .workload(|w| async move {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let created = w.apply(&volumes, &volume("kept", "manual", "1Gi", "Retain")).await?;
            if finalizers(&created.metadata) != [protection::PV_FINALIZER] {
                return Err(failed_step(
                    "create volume kept",
                    format!("finalizers {:?}", created.metadata.finalizers),
                ));
            }
            w.apply(&claims, &claim("precious", Some("manual"), "1Gi")).await?;
            w.wait_for(&claims, "precious", claim_is("Bound"), WAIT).await?;
            w.delete(&volumes, "kept").await?;
            w.sleep(Duration::from_secs(60)).await;
            let kept =
                volumes.get_opt("kept").await.map_err(|e| failed_step("get volume kept", e.to_string()))?;
            let found = kept.as_ref().map(|v| {
                (
                    v.metadata.deletion_timestamp.is_some(),
                    volume_phase(v).map(str::to_owned),
                    finalizers(&v.metadata).len(),
                )
            });
            if found != Some((true, Some("Bound".to_owned()), 1)) {
                return Err(failed_step("check volume kept is terminating and bound", format!("{found:?}")));
            }
            // No Pod mounts the claim: it goes at once, the binder releases the volume, and the
            // released volume goes.
            w.delete(&claims, "precious").await?;
            w.wait_for(&volumes, "kept", |v| v.is_none(), WAIT).await?;
            w.wait_for_all(&claims, |all| all.is_empty(), WAIT).await
        })
        .property(nothing_left());
    let report = sweep(&SweepConfig::new("builtins-pv-protection").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_claim_deleted_as_its_pod_is_scheduled_is_kept_though_the_pod_cache_lags() {
    // The protection controller's Pod watch lags 3 s: the Pod scheduled just before the claim's
    // deletion is not in its cache yet, and only the live list it then makes shows the Pod.
    let world = protected("builtins-pvc-protection-lagging")
        .faults(lagging_watch(protection::PVC_NODE, "pods", 3_000, 30_000))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            // The default class waits for a first consumer: the Pod makes the claim bind.
            w.apply(&claims, &claim("data", None, "1Gi")).await?;
            w.apply(&pods, &pod_with_claim("app", "data")).await?;
            let scheduled =
                |p: Option<&Pod>| p.and_then(|p| p.spec.as_ref()).is_some_and(|s| s.node_name.is_some());
            w.wait_for(&pods, "app", scheduled, WAIT).await?;
            w.wait_for(&claims, "data", claim_is("Bound"), Duration::ZERO).await?;
            w.delete(&claims, "data").await?;
            w.sleep(Duration::from_secs(10)).await;
            expect_terminating(&claims, "data").await?;
            w.delete(&pods, "app").await?;
            w.wait_for(&claims, "data", |c| c.is_none(), WAIT).await
        })
        .property(no_claim_gone_under_a_scheduled_pod());
    let report = sweep(&SweepConfig::new("builtins-pvc-protection-lagging").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_statefulset_waits_for_a_terminating_claim_to_go_before_recreating_its_pod() {
    let world = builtins::statefulset_controller(protected("builtins-pvc-protection-statefulset"))
        .workload(|w| async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let running = |p: Option<&Pod>| p.is_some_and(pod_state::is_running_and_ready);
            w.apply(&sets, &db(1)).await?;
            w.wait_for(&pods, "db-0", running, WAIT).await?;
            // A second Pod mounts the replica's claim, so that the claim, once deleted, stays
            // terminating after the replica's Pod is gone.
            w.apply(&pods, &pod_with_claim("reader", "data-db-0")).await?;
            w.wait_for(&pods, "reader", running, WAIT).await?;
            let first = claims.get("data-db-0").await.map_err(|e| failed_step("get claim", e.to_string()))?;
            w.delete(&claims, "data-db-0").await?;
            w.delete(&pods, "db-0").await?;
            w.wait_for(&pods, "db-0", |p| p.is_none(), WAIT).await?;
            // The controller does not put the replica back on the claim that is going.
            w.sleep(Duration::from_secs(30)).await;
            expect_terminating(&claims, "data-db-0").await?;
            if let Some(pod) =
                pods.get_opt("db-0").await.map_err(|e| failed_step("get db-0", e.to_string()))?
            {
                return Err(failed_step(
                    "check db-0 waits",
                    format!("db-0 was re-created: {:?}", pod.metadata),
                ));
            }
            // Once the claim is gone the replica comes back, on a new claim.
            w.delete(&pods, "reader").await?;
            let renewed = move |c: Option<&PersistentVolumeClaim>| c.is_some_and(|c| c.uid() != first.uid());
            w.wait_for(&claims, "data-db-0", renewed, WAIT).await?;
            w.wait_for(&pods, "db-0", running, WAIT).await
        })
        .property(no_claim_gone_under_a_scheduled_pod())
        .property(FnProperty::at_end("the refused Pod was reported", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let events = snapshot::objects::<k8s_openapi::api::core::v1::Event>(snap, Some("default"));
            let want = "create Pod db-0 in StatefulSet db failed error: pvc data-db-0 is being deleted";
            let reported = events
                .iter()
                .any(|e| e.reason.as_deref() == Some("FailedCreate") && e.message.as_deref() == Some(want));
            if reported { Ok(()) } else { Err(format!("no FailedCreate event {want:?}")) }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-pvc-protection-statefulset").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

#[test]
fn a_pending_statefulset_pod_whose_claim_is_deleted_gets_it_again() {
    let world = builtins::statefulset_controller(protected("builtins-statefulset-missing-claim"))
        .workload(|w| async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            // The class `manual` has no provisioner: the claim waits for a volume, and its Pod,
            // unscheduled, does not hold it.
            let spec = claim("data", Some("manual"), "1Gi").spec.expect("a claim spec");
            w.apply(&sets, &crate::builtins_statefulset::db_claiming(1, spec)).await?;
            w.wait_for(&claims, "data-db-0", claim_is("Pending"), WAIT).await?;
            w.wait_for(&pods, "db-0", |p| p.is_some(), WAIT).await?;
            let first = claims.get("data-db-0").await.map_err(|e| failed_step("get claim", e.to_string()))?;
            w.delete(&claims, "data-db-0").await?;
            // The controller makes it again for the Pending Pod (upstream's
            // `createMissingPersistentVolumeClaims`), and it binds once a volume comes.
            let renewed = move |c: Option<&PersistentVolumeClaim>| c.is_some_and(|c| c.uid() != first.uid());
            w.wait_for(&claims, "data-db-0", renewed, WAIT).await?;
            w.apply(&volumes, &volume("disk", "manual", "1Gi", "Retain")).await?;
            w.wait_for(&pods, "db-0", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(no_claim_gone_under_a_scheduled_pod());
    let report =
        sweep(&SweepConfig::new("builtins-statefulset-missing-claim").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}

#[test]
fn under_swarm_faults_no_claim_goes_while_a_scheduled_pod_mounts_it() {
    let world = builtins::all(Sim::builder().scenario("builtins-pvc-protection-faults"));
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let wait = Duration::from_secs(400);
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            w.apply(&claims, &claim("data", None, "1Gi")).await?;
            w.apply(&pods, &pod_with_claim("app", "data")).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), wait).await?;
            w.delete(&claims, "data").await?;
            w.sleep(Duration::from_secs(5)).await;
            w.delete(&pods, "app").await?;
            w.wait_for(&claims, "data", |c| c.is_none(), wait).await?;
            w.wait_for_all(&volumes, |all| all.is_empty(), wait).await
        })
        .property(no_claim_gone_under_a_scheduled_pod())
        .property(nothing_left());
    let report = sweep(&SweepConfig::new("builtins-pvc-protection-faults").seeds(40), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn the_protection_controllers_come_with_the_other_builtins() {
    let names = builtins::all(Sim::builder()).controller_names();
    for node in [protection::PVC_NODE, protection::PV_NODE] {
        assert!(names.iter().any(|n| n == node), "{node} missing from {names:?}");
    }
}

/// A Pod with a generic ephemeral volume `scratch` of 1Gi (the default class).
fn pod_with_ephemeral_volume(name: &str) -> Pod {
    let mut pod = pod_with_claim(name, "unused");
    let template = claim("ignored", None, "1Gi");
    let volume = k8s_openapi::api::core::v1::Volume {
        name: "scratch".to_owned(),
        ephemeral: Some(k8s_openapi::api::core::v1::EphemeralVolumeSource {
            volume_claim_template: Some(k8s_openapi::api::core::v1::PersistentVolumeClaimTemplate {
                metadata: Some(sim::api::ObjectMeta {
                    labels: Some([("tier".to_owned(), "scratch".to_owned())].into()),
                    ..sim::api::ObjectMeta::default()
                }),
                spec: template.spec.expect("a claim spec"),
            }),
        }),
        ..k8s_openapi::api::core::v1::Volume::default()
    };
    pod.spec.as_mut().expect("a pod spec").volumes = Some(vec![volume]);
    pod
}

#[test]
fn a_pods_ephemeral_volume_gets_its_own_claim_which_goes_with_the_pod() {
    let world = builtins::all(Sim::builder().scenario("builtins-ephemeral-volume"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            let volumes: Api<PersistentVolume> = Api::all(w.client());
            let pod = w.apply(&pods, &pod_with_ephemeral_volume("app")).await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await?;
            let made =
                claims.get("app-scratch").await.map_err(|e| failed_step("get app-scratch", e.to_string()))?;
            let owned = made
                .owner_references()
                .iter()
                .any(|o| o.kind == "Pod" && Some(&o.uid) == pod.uid().as_ref() && o.controller == Some(true));
            let labelled = made.labels().get("tier").map(String::as_str) == Some("scratch");
            if !(owned && labelled && claim_is("Bound")(Some(&made))) {
                return Err(failed_step("check app-scratch", format!("{:?}", made.metadata)));
            }
            // The garbage collector deletes the claim with its Pod, and the protection
            // controller lets it go once the Pod is gone.
            w.delete(&pods, "app").await?;
            w.wait_for(&claims, "app-scratch", |c| c.is_none(), WAIT).await?;
            w.wait_for_all(&volumes, |all| all.is_empty(), WAIT).await
        })
        .property(nothing_left());
    let report = sweep(&SweepConfig::new("builtins-ephemeral-volume").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn a_claim_the_pod_does_not_own_is_not_used_for_its_ephemeral_volume() {
    let world = builtins::all(Sim::builder().scenario("builtins-ephemeral-foreign-claim"))
        .workload(|w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client(), "default");
            w.apply(&claims, &claim("app-scratch", None, "1Gi")).await?;
            w.apply(&pods, &pod_with_ephemeral_volume("app")).await?;
            let want = "PVC default/app-scratch was not created for pod default/app (pod is not owner)";
            let refused = move |p: Option<&Pod>| {
                p.and_then(|p| {
                    p.status
                        .as_ref()?
                        .conditions
                        .as_ref()?
                        .iter()
                        .find(|c| c.type_ == "PodScheduled")
                        .cloned()
                })
                .is_some_and(|c| c.status == "False" && c.message.is_some_and(|m| m.contains(want)))
            };
            w.wait_for(&pods, "app", refused, WAIT).await?;
            // Once the stranger's claim goes, the Pod gets its own and runs.
            w.delete(&claims, "app-scratch").await?;
            w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
        })
        .property(FnProperty::at_end("a FailedBinding warning names the claim", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let warned = snapshot::objects::<k8s_openapi::api::core::v1::Event>(snap, Some("default"))
                .into_iter()
                .any(|e| {
                    e.reason.as_deref() == Some("FailedBinding")
                        && e.message.as_deref().is_some_and(|m| m.contains("(pod is not owner)"))
                });
            if warned { Ok(()) } else { Err("no FailedBinding event".to_owned()) }
        }));
    let report =
        sweep(&SweepConfig::new("builtins-ephemeral-foreign-claim").seeds(SEEDS), |seed, options| {
            world.run_with(seed, options)
        });
    report.assert_all_passed();
}
