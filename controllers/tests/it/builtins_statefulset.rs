//! The StatefulSet controller with the kubelet-lite: ordered creation, a PVC per ordinal from
//! the claim templates, reverse-order deletion on scale-down, and PVCs kept after it.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, pod_state, snapshot, statefulset};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use model_apiserver::Snapshot;
use sim::api::{Api, ObjectMeta, Patch};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(60);

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "db".to_owned())])
}

fn db(replicas: i32) -> StatefulSet {
    StatefulSet {
        metadata: ObjectMeta {
            name: Some("db".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            service_name: Some("db".to_owned()),
            selector: LabelSelector { match_labels: Some(labels()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels()), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "db".to_owned(),
                        image: Some("pg:16".to_owned()),
                        ..Container::default()
                    }],
                    termination_grace_period_seconds: Some(1),
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: Some(vec![PersistentVolumeClaim {
                metadata: ObjectMeta { name: Some("data".to_owned()), ..ObjectMeta::default() },
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                    ..Default::default()
                }),
                status: None,
            }]),
            ..StatefulSetSpec::default()
        },
        status: None,
    }
}

fn ready(set: Option<&StatefulSet>, want: i32) -> bool {
    set.and_then(|s| s.status.as_ref()).is_some_and(|s| s.ready_replicas == Some(want) && s.replicas == want)
}

/// (ordinal, pod) of every `db` pod.
fn pods(snap: &Snapshot) -> Vec<(i32, Pod)> {
    snapshot::objects::<Pod>(snap, Some("default"))
        .into_iter()
        .filter_map(|p| Some((statefulset::ordinal_of("db", p.metadata.name.as_deref()?)?, p)))
        .collect()
}

fn world() -> SimBuilder {
    let world =
        builtins::kubelet(builtins::statefulset_controller(Sim::builder().scenario("builtins-statefulset")));
    world
        .workload(|w| async move {
            let sets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            w.apply(&sets, &db(3)).await?;
            w.wait_for(&sets, "db", |s| ready(s, 3), WAIT).await?;
            w.patch(&sets, "db", &Patch::Merge(serde_json::json!({ "spec": { "replicas": 1 } }))).await?;
            w.wait_for(&sets, "db", |s| ready(s, 1), WAIT).await
        })
        .property(FnProperty::always(
            "a pod exists only when every lower ordinal is running and ready",
            |view| {
                let pods = pods(view.cluster("default").ok_or("no cluster")?);
                let ordinals: Vec<i32> = pods.iter().map(|(o, _)| *o).collect();
                for (ordinal, _) in &pods {
                    for lower in 0..*ordinal {
                        let healthy =
                            pods.iter().any(|(o, p)| *o == lower && pod_state::is_running_and_ready(p));
                        if !healthy {
                            return Err(format!(
                                "db-{ordinal} exists but db-{lower} is not running and ready: {ordinals:?}"
                            ));
                        }
                    }
                }
                Ok(())
            },
        ))
        .property(FnProperty::always("a pod is deleted only after every higher ordinal is gone", |view| {
            let pods = pods(view.cluster("default").ok_or("no cluster")?);
            for (ordinal, pod) in &pods {
                if pod_state::is_terminating(pod) && pods.iter().any(|(o, _)| o > ordinal) {
                    let ordinals: Vec<i32> = pods.iter().map(|(o, _)| *o).collect();
                    return Err(format!("db-{ordinal} terminating while {ordinals:?} exist"));
                }
            }
            Ok(())
        }))
}

#[test]
fn statefulset_creates_pods_in_order_and_deletes_them_in_reverse_keeping_pvcs() {
    let world = world().property(FnProperty::at_end("db-0 remains with all three PVCs", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let names: Vec<String> = pods(snap).into_iter().filter_map(|(_, p)| p.metadata.name).collect();
        let claims: Vec<String> = snapshot::objects::<PersistentVolumeClaim>(snap, Some("default"))
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        if names == ["db-0"] && claims == ["data-db-0", "data-db-1", "data-db-2"] {
            Ok(())
        } else {
            Err(format!("pods {names:?}, claims {claims:?}"))
        }
    }));
    let report = sweep(&SweepConfig::new("builtins-statefulset").seeds(SEEDS), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}

#[test]
fn statefulset_pods_mount_their_own_pvc_and_carry_their_identity() {
    let world = world().property(FnProperty::at_end("db-0's identity", |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        let pod = snapshot::object::<Pod>(snap, Some("default"), "db-0").ok_or("no db-0")?;
        let spec = pod.spec.clone().unwrap_or_default();
        let claim = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "data")
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone());
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let found = (
            claim.as_deref(),
            spec.hostname.as_deref(),
            spec.subdomain.as_deref(),
            labels.get(statefulset::POD_NAME_LABEL).map(String::as_str),
            labels.get(statefulset::POD_INDEX_LABEL).map(String::as_str),
        );
        let want = (Some("data-db-0"), Some("db-0"), Some("db"), Some("db-0"), Some("0"));
        if found == want { Ok(()) } else { Err(format!("{found:?}, want {want:?}")) }
    }));
    let report = world.run(5);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
}
