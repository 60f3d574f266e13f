//! The garbage collector: background, foreground (blockOwnerDeletion) and orphan propagation,
//! owners matched by uid, and owner references resolved in the dependent's namespace.
//! ConfigMaps stand in for owners and dependents, so that no other controller is involved.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, checks, owners, snapshot};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, ResourceExt};
use sim::faults::{Fault, FaultPlan, InjectedError, PlannedFault, Trigger};
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, Workload, WorkloadError, sweep};

const SEEDS: u64 = 30;
const WAIT: Duration = Duration::from_secs(30);

fn config_map(
    name: &str,
    namespace: &str,
    owner: Option<OwnerReference>,
    finalizer: Option<&str>,
) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            owner_references: owner.map(|o| vec![o]),
            finalizers: finalizer.map(|f| vec![f.to_owned()]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    }
}

/// A reference to `owner`, blocking its foreground deletion or not.
fn reference(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference { block_owner_deletion: Some(block), controller: None, ..owners::controller_ref(owner) }
}

fn gc_world(scenario: &str) -> SimBuilder {
    builtins::garbage_collector(Sim::builder().scenario(scenario)).property(checks::garbage_collected())
}

fn config_maps(view: &sim::EndView<'_>, namespace: &str) -> Result<Vec<ConfigMap>, String> {
    Ok(snapshot::objects::<ConfigMap>(view.cluster("default").ok_or("no cluster")?, Some(namespace)))
}

fn names(maps: &[ConfigMap]) -> Vec<String> {
    maps.iter().map(ResourceExt::name_any).collect()
}

/// Create `owner` and two dependents of it in `default`; `dep-1` blocks foreground deletion
/// and carries `dep_1_finalizer`.
async fn owner_with_dependents(
    w: &Workload,
    dep_1_finalizer: Option<&str>,
) -> Result<ConfigMap, WorkloadError> {
    let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
    let owner = w.apply(&maps, &config_map("owner", "default", None, None)).await?;
    w.apply(&maps, &config_map("dep-1", "default", Some(reference(&owner, true)), dep_1_finalizer)).await?;
    w.apply(&maps, &config_map("dep-2", "default", Some(reference(&owner, false)), None)).await?;
    Ok(owner)
}

fn gone(map: Option<&ConfigMap>) -> bool {
    map.is_none()
}

fn run_sweep(world: &SimBuilder, scenario: &str) {
    let report =
        sweep(&SweepConfig::new(scenario).seeds(SEEDS), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

#[test]
fn background_deletion_of_an_owner_deletes_its_dependents() {
    let world = gc_world("builtins-gc-background")
        .workload(|w| async move {
            owner_with_dependents(&w, None).await?;
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.delete(&maps, "owner").await?;
            w.wait_for(&maps, "dep-1", gone, WAIT).await?;
            w.wait_for(&maps, "dep-2", gone, WAIT).await
        })
        .property(FnProperty::at_end("no config maps left", |view| {
            let left = names(&config_maps(view, "default")?);
            if left.is_empty() { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    run_sweep(&world, "builtins-gc-background");
}

/// An operator's HorizontalPodAutoscaler and NetworkPolicy owned by its object go with it, as
/// the real collector watches every served kind.
#[test]
fn an_owned_autoscaler_and_network_policy_are_collected_with_their_owner() {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    let world = gc_world("builtins-gc-more-kinds")
        .workload(|w| async move {
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let owner = w.apply(&maps, &config_map("owner", "default", None, None)).await?;
            let owned = serde_json::json!([reference(&owner, false)]);
            let hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default", "ownerReferences": owned},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3},
            }))
            .expect("an HPA");
            let policy: NetworkPolicy = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web", "namespace": "default", "ownerReferences": owned},
                "spec": {"podSelector": {}},
            }))
            .expect("a NetworkPolicy");
            let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(w.client(), "default");
            let policies: Api<NetworkPolicy> = Api::namespaced(w.client(), "default");
            w.apply(&hpas, &hpa).await?;
            w.apply(&policies, &policy).await?;
            w.delete(&maps, "owner").await?;
            w.wait_for(&hpas, "web", |o: Option<&HorizontalPodAutoscaler>| o.is_none(), WAIT).await?;
            w.wait_for(&policies, "web", |o: Option<&NetworkPolicy>| o.is_none(), WAIT).await
        });
    run_sweep(&world, "builtins-gc-more-kinds");
}

/// A collection that fails is retried by the next scan, though nothing in the collector's
/// caches changes meanwhile: scans of unchanged caches are skipped only after one that decided
/// everything from the caches.
#[test]
fn a_delete_of_the_collector_that_fails_is_retried_though_no_cache_changes() {
    // One dependent: its failed delete is the collector's only action, so no other collection
    // changes a cache after it.
    let world = gc_world("builtins-gc-retry").workload(|w| async move {
        let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
        let owner = w.apply(&maps, &config_map("owner", "default", None, None)).await?;
        w.apply(&maps, &config_map("dependent", "default", Some(reference(&owner, false)), None)).await?;
        w.delete(&maps, "owner").await?;
        w.wait_for(&maps, "dependent", gone, WAIT).await
    });
    let failing_delete = PlannedFault {
        trigger: Trigger::NthWrite {
            controller: builtins::garbage_collector::NODE.to_owned(),
            n: 1,
            kind: None,
            verb: Some("delete".to_owned()),
        },
        fault: Fault::ApiError {
            controller: builtins::garbage_collector::NODE.to_owned(),
            error: InjectedError::InternalError,
        },
    };
    let world = world.faults(FaultPlan { faults: vec![failing_delete] });
    for seed in 0..SEEDS {
        let report = world.run(seed);
        assert!(report.verdict.is_pass(), "seed {seed}: {}", report.verdict);
        assert!(report.unfired.is_empty(), "seed {seed}: the collector's first delete did not fail");
    }
}

#[test]
fn foreground_deletion_deletes_dependents_first_and_waits_for_blocking_ones() {
    const HOLD: &str = "example.com/hold";
    let world = gc_world("builtins-gc-foreground")
        .workload(|w| async move {
            owner_with_dependents(&w, Some(HOLD)).await?;
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            maps.delete("owner", &DeleteParams::foreground()).await.map_err(|e| WorkloadError {
                step: 0,
                action: "delete owner in the foreground".to_owned(),
                reason: e.to_string(),
            })?;
            // dep-2 does not block: it goes; dep-1 is held by its finalizer, and so is the owner.
            w.wait_for(&maps, "dep-2", gone, WAIT).await?;
            let deleting = |m: Option<&ConfigMap>| m.is_some_and(|m| m.metadata.deletion_timestamp.is_some());
            w.wait_for(&maps, "dep-1", deleting, WAIT).await?;
            w.sleep(Duration::from_secs(1)).await;
            w.wait_for(&maps, "owner", deleting, WAIT).await?;
            w.patch(&maps, "dep-1", &Patch::Merge(serde_json::json!({ "metadata": { "finalizers": null } })))
                .await?;
            w.wait_for(&maps, "owner", gone, WAIT).await
        })
        .property(FnProperty::always("the owner outlives every dependent that blocks it", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let maps = snapshot::objects::<ConfigMap>(snap, Some("default"));
            let uids: Vec<String> = maps.iter().filter_map(|m| m.metadata.uid.clone()).collect();
            for map in &maps {
                for r in map.metadata.owner_references.iter().flatten() {
                    if r.block_owner_deletion == Some(true) && !uids.contains(&r.uid) {
                        return Err(format!("{} blocks owner {} which is gone", map.name_any(), r.name));
                    }
                }
            }
            Ok(())
        }));
    run_sweep(&world, "builtins-gc-foreground");
}

#[test]
fn orphan_deletion_leaves_dependents_without_the_owner_reference() {
    let world = gc_world("builtins-gc-orphan")
        .workload(|w| async move {
            owner_with_dependents(&w, None).await?;
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            maps.delete("owner", &DeleteParams::orphan()).await.map_err(|e| WorkloadError {
                step: 0,
                action: "delete owner orphaning dependents".to_owned(),
                reason: e.to_string(),
            })?;
            w.wait_for(&maps, "owner", gone, WAIT).await
        })
        .property(FnProperty::at_end("both dependents remain without owner references", |view| {
            let maps = config_maps(view, "default")?;
            let found: Vec<(String, Option<Vec<OwnerReference>>)> = maps
                .iter()
                .map(|m| (m.name_any(), m.metadata.owner_references.clone().filter(|r| !r.is_empty())))
                .collect();
            let want = vec![("dep-1".to_owned(), None), ("dep-2".to_owned(), None)];
            if found == want { Ok(()) } else { Err(format!("{found:?}")) }
        }));
    run_sweep(&world, "builtins-gc-orphan");
}

#[test]
fn a_dependent_whose_owner_reference_uid_does_not_match_the_live_owner_is_collected() {
    let world = gc_world("builtins-gc-uid")
        .workload(|w| async move {
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let owner = w.apply(&maps, &config_map("owner", "default", None, None)).await?;
            let stale = OwnerReference {
                uid: "00000000-0000-0000-0000-00000000dead".to_owned(),
                ..reference(&owner, false)
            };
            w.apply(&maps, &config_map("stale", "default", Some(stale), None)).await?;
            w.apply(&maps, &config_map("current", "default", Some(reference(&owner, false)), None)).await?;
            w.wait_for(&maps, "stale", gone, WAIT).await
        })
        .property(FnProperty::at_end("the owner and its true dependent remain", |view| {
            let left = names(&config_maps(view, "default")?);
            if left == ["current", "owner"] { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    run_sweep(&world, "builtins-gc-uid");
}

#[test]
fn an_owner_recreated_with_the_same_name_does_not_keep_the_old_dependents() {
    let world = gc_world("builtins-gc-recreate")
        .workload(|w| async move {
            owner_with_dependents(&w, None).await?;
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.delete(&maps, "owner").await?;
            w.apply(&maps, &config_map("owner", "default", None, None)).await?;
            w.wait_for(&maps, "dep-1", gone, WAIT).await?;
            w.wait_for(&maps, "dep-2", gone, WAIT).await
        })
        .property(FnProperty::at_end("only the new owner remains", |view| {
            let left = names(&config_maps(view, "default")?);
            if left == ["owner"] { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    run_sweep(&world, "builtins-gc-recreate");
}

#[test]
fn an_owner_reference_resolves_only_in_the_dependents_own_namespace() {
    let world = gc_world("builtins-gc-namespaces")
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            let other = Namespace {
                metadata: ObjectMeta { name: Some("other".to_owned()), ..ObjectMeta::default() },
                ..Namespace::default()
            };
            w.apply(&namespaces, &other).await?;
            let in_other: Api<ConfigMap> = Api::namespaced(w.client(), "other");
            let owner = w.apply(&in_other, &config_map("owner", "other", None, None)).await?;
            w.apply(&in_other, &config_map("same-namespace", "other", Some(reference(&owner, false)), None))
                .await?;
            let in_default: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.apply(
                &in_default,
                &config_map("cross-namespace", "default", Some(reference(&owner, false)), None),
            )
            .await?;
            w.wait_for(&in_default, "cross-namespace", gone, WAIT).await
        })
        .property(FnProperty::at_end("the same-namespace dependent remains", |view| {
            let found = (names(&config_maps(view, "other")?), names(&config_maps(view, "default")?));
            let want = (vec!["owner".to_owned(), "same-namespace".to_owned()], Vec::<String>::new());
            if found == want { Ok(()) } else { Err(format!("{found:?}")) }
        }));
    run_sweep(&world, "builtins-gc-namespaces");
}

/// A custom resource, to own dependents through a kind the collector discovers from its CRD.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// Anything.
    pub size: i32,
}

#[test]
fn dependents_of_a_custom_resource_are_collected_after_it_is_deleted() {
    let crd = serde_json::to_string(&Widget::crd()).expect("the derived CRD serializes");
    let world = gc_world("builtins-gc-custom-owner")
        // JSON is YAML: the loader takes the CRD as serialized.
        .crds_yaml("default", &crd)
        .expect("the derived CRD installs")
        .workload(|w| async move {
            let widgets: Api<Widget> = Api::namespaced(w.client(), "default");
            let mut widget = Widget::new("w", WidgetSpec { size: 1 });
            widget.metadata.namespace = Some("default".to_owned());
            let widget = w.apply(&widgets, &widget).await?;
            let owner = OwnerReference {
                block_owner_deletion: Some(true),
                controller: Some(true),
                ..owners::controller_ref(&widget)
            };
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.apply(&maps, &config_map("part", "default", Some(owner), None)).await?;
            w.delete(&widgets, "w").await?;
            w.wait_for(&maps, "part", gone, WAIT).await
        })
        .property(FnProperty::at_end("no config maps left", |view| {
            let left = names(&config_maps(view, "default")?);
            if left.is_empty() { Ok(()) } else { Err(format!("left: {left:?}")) }
        }));
    run_sweep(&world, "builtins-gc-custom-owner");
}

#[test]
fn dependents_of_every_served_kind_are_collected_a_role_a_pdb_and_an_ingress_owned_by_a_config_map() {
    use k8s_openapi::api::networking::v1::{
        Ingress, IngressBackend, IngressServiceBackend, IngressSpec, ServiceBackendPort,
    };
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::Role;

    let world = gc_world("builtins-gc-every-kind").workload(|w| async move {
        let maps: Api<ConfigMap> = Api::namespaced(w.client(), "default");
        let owner = w.apply(&maps, &config_map("owner", "default", None, None)).await?;
        let meta = |name: &str| ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            owner_references: Some(vec![reference(&owner, false)]),
            ..ObjectMeta::default()
        };
        let roles: Api<Role> = Api::namespaced(w.client(), "default");
        w.apply(&roles, &Role { metadata: meta("reader"), ..Role::default() }).await?;
        let pdbs: Api<PodDisruptionBudget> = Api::namespaced(w.client(), "default");
        w.apply(&pdbs, &PodDisruptionBudget { metadata: meta("budget"), ..PodDisruptionBudget::default() })
            .await?;
        let ingresses: Api<Ingress> = Api::namespaced(w.client(), "default");
        // An Ingress needs rules or a default backend to be valid.
        let backend = IngressBackend {
            service: Some(IngressServiceBackend {
                name: "web".to_owned(),
                port: Some(ServiceBackendPort { number: Some(80), ..ServiceBackendPort::default() }),
            }),
            ..IngressBackend::default()
        };
        let spec = IngressSpec { default_backend: Some(backend), ..IngressSpec::default() };
        w.apply(&ingresses, &Ingress { metadata: meta("entry"), spec: Some(spec), ..Ingress::default() })
            .await?;
        w.delete(&maps, "owner").await?;
        w.wait_for(&roles, "reader", |r: Option<&Role>| r.is_none(), WAIT).await?;
        w.wait_for(&pdbs, "budget", |p: Option<&PodDisruptionBudget>| p.is_none(), WAIT).await?;
        w.wait_for(&ingresses, "entry", |i: Option<&Ingress>| i.is_none(), WAIT).await
    });
    run_sweep(&world, "builtins-gc-every-kind");
}
