//! The ServiceAccount controller and the root CA publisher: every active namespace, those a
//! cluster starts with and new ones, gets a `default` ServiceAccount and a `kube-root-ca.crt`
//! ConfigMap; a deleted one comes back, an edited ConfigMap is restored, a terminating namespace
//! gets nothing new, and all of it holds under faults.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::builtins::{self, root_ca_publisher, snapshot};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use model_apiserver::Snapshot;
use sim::api::{Api, ObjectMeta, Patch};
use sim::faults::SwarmConfig;
use sim::{FnProperty, Sim, SimBuilder, SweepConfig, Workload, WorkloadError, sweep};

const SEEDS: u64 = 20;
const WAIT: Duration = Duration::from_secs(60);
/// The namespaces every simulated cluster starts with.
const STARTING: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];
/// Upstream's description, on one line (the constant is split over several).
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The two controllers alone: nothing else writes ServiceAccounts or ConfigMaps.
fn world(scenario: &str) -> SimBuilder {
    let world = Sim::builder().scenario(scenario);
    builtins::root_ca_cert_publisher(builtins::serviceaccounts_controller(world))
}

/// Namespace `name`, nothing else set.
pub(crate) fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    }
}

/// The ConfigMap holds the bundle, and only it, with upstream's description.
fn published(cm: Option<&ConfigMap>) -> bool {
    cm.is_some_and(|cm| {
        let data = BTreeMap::from([("ca.crt".to_owned(), root_ca_publisher::ROOT_CA_BUNDLE.to_owned())]);
        let description = cm.metadata.annotations.as_ref().and_then(|a| a.get("kubernetes.io/description"));
        cm.data.as_ref() == Some(&data) && description.map(String::as_str) == Some(DESCRIPTION)
    })
}

/// Whether `namespace` has both objects, the ConfigMap as published.
fn has_both(snap: &Snapshot, namespace: &str) -> Result<(), String> {
    let account = snapshot::object::<ServiceAccount>(snap, Some(namespace), "default");
    let cm = snapshot::object::<ConfigMap>(snap, Some(namespace), "kube-root-ca.crt");
    if account.is_some() && published(cm.as_ref()) {
        Ok(())
    } else {
        Err(format!("namespace {namespace}: service account {account:?}, config map {cm:?}"))
    }
}

/// Every namespace in `namespaces` has both objects at the end.
fn all_have_both(namespaces: &'static [&'static str]) -> FnProperty {
    FnProperty::at_end(format!("{namespaces:?} have the default service account and the root CA"), |view| {
        let snap = view.cluster("default").ok_or("no cluster")?;
        namespaces.iter().try_for_each(|ns| has_both(snap, ns))
    })
}

fn sweep_passes(name: &str, world: &SimBuilder, seeds: u64) {
    let report = sweep(&SweepConfig::new(name).seeds(seeds), |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

async fn wait_for_both(w: &Workload, namespace: &str) -> Result<(), WorkloadError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(w.client(), namespace);
    let maps: Api<ConfigMap> = Api::namespaced(w.client(), namespace);
    w.wait_for(&accounts, "default", |a| a.is_some(), WAIT).await?;
    w.wait_for(&maps, "kube-root-ca.crt", published, WAIT).await
}

#[test]
fn every_namespace_the_cluster_starts_with_and_a_new_one_get_a_default_service_account_and_the_root_ca() {
    let world = world("builtins-namespace-defaults")
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            wait_for_both(&w, "team").await
        })
        .property(all_have_both(&["default", "kube-node-lease", "kube-public", "kube-system", "team"]))
        .property(FnProperty::at_end("the controllers create nothing else", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let accounts = snapshot::objects::<ServiceAccount>(snap, None).len();
            let maps = snapshot::objects::<ConfigMap>(snap, None).len();
            let want = STARTING.len() + 1;
            if (accounts, maps) == (want, want) {
                Ok(())
            } else {
                Err(format!("{accounts} service accounts and {maps} config maps, want {want} of each"))
            }
        }));
    sweep_passes("builtins-namespace-defaults", &world, SEEDS);
}

#[test]
fn without_the_controllers_a_namespace_gets_neither() {
    // What a bare kube-apiserver (and bare `kube-sim serve`) shows: the objects come from
    // kube-controller-manager, not from the API server.
    let world = builtins::namespace_controller(Sim::builder().scenario("builtins-namespace-defaults-off"))
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
        .property(FnProperty::at_end("no service account or config map exists", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let accounts = snapshot::objects::<ServiceAccount>(snap, None).len();
            let maps = snapshot::objects::<ConfigMap>(snap, None).len();
            if (accounts, maps) == (0, 0) { Ok(()) } else { Err(format!("{accounts} accounts, {maps} maps")) }
        }));
    sweep_passes("builtins-namespace-defaults-off", &world, 3);
}

/// Delete both objects of `team` and wait until both are back, as new objects.
async fn delete_and_wait_for_both(w: &Workload) -> Result<(), WorkloadError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(w.client(), "team");
    let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
    let account = accounts.get("default").await.map_err(|e| failed("get the service account", e))?;
    let cm = maps.get("kube-root-ca.crt").await.map_err(|e| failed("get the config map", e))?;
    let (account_uid, cm_uid) =
        (account.metadata.uid.unwrap_or_default(), cm.metadata.uid.unwrap_or_default());
    w.delete(&accounts, "default").await?;
    w.delete(&maps, "kube-root-ca.crt").await?;
    let renewed =
        |uid: String| move |meta: Option<&ObjectMeta>| meta.is_some_and(|m| m.uid.as_ref() != Some(&uid));
    let account_renewed = renewed(account_uid);
    w.wait_for(&accounts, "default", |a| account_renewed(a.map(|a| &a.metadata)), WAIT).await?;
    let cm_renewed = renewed(cm_uid);
    w.wait_for(&maps, "kube-root-ca.crt", |cm| cm_renewed(cm.map(|c| &c.metadata)) && published(cm), WAIT)
        .await
}

fn failed(action: &str, reason: impl std::fmt::Display) -> WorkloadError {
    WorkloadError { step: 0, action: action.to_owned(), reason: reason.to_string() }
}

#[test]
fn a_deleted_default_service_account_and_root_ca_config_map_are_created_again() {
    let world = world("builtins-namespace-defaults-recreate")
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            wait_for_both(&w, "team").await?;
            delete_and_wait_for_both(&w).await
        })
        .property(all_have_both(&["default", "team"]));
    sweep_passes("builtins-namespace-defaults-recreate", &world, SEEDS);
}

/// Edit `team`'s ConfigMap: change the bundle, add a key and a label, drop the description.
async fn edit_config_map(w: &Workload) -> Result<(), WorkloadError> {
    let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
    let edit = serde_json::json!({
        "metadata": { "labels": { "team": "blue" }, "annotations": { "kubernetes.io/description": null } },
        "data": { "ca.crt": "not the bundle", "extra": "x" },
    });
    w.patch(&maps, "kube-root-ca.crt", &Patch::Merge(edit)).await?;
    Ok(())
}

/// The ConfigMap of `team` is published and kept the label the edit added.
fn restored_keeping_the_label(cm: Option<&ConfigMap>) -> bool {
    let label = cm.and_then(|cm| cm.metadata.labels.as_ref()?.get("team").cloned());
    published(cm) && label.as_deref() == Some("blue")
}

#[test]
fn an_edited_root_ca_config_map_is_restored_keeping_what_else_was_added_to_its_metadata() {
    let world = world("builtins-namespace-defaults-restore")
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            wait_for_both(&w, "team").await?;
            edit_config_map(&w).await?;
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
            w.wait_for(&maps, "kube-root-ca.crt", restored_keeping_the_label, WAIT).await?;
            // Only the description's absence: restored too.
            let undescribed =
                serde_json::json!({ "metadata": { "annotations": { "kubernetes.io/description": "" } } });
            w.patch(&maps, "kube-root-ca.crt", &Patch::Merge(undescribed)).await?;
            w.wait_for(&maps, "kube-root-ca.crt", published, WAIT).await
        })
        .property(all_have_both(&["default", "team"]))
        .property(FnProperty::at_end("the added label stays", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let cm = snapshot::object::<ConfigMap>(snap, Some("team"), "kube-root-ca.crt");
            if restored_keeping_the_label(cm.as_ref()) { Ok(()) } else { Err(format!("{cm:?}")) }
        }));
    sweep_passes("builtins-namespace-defaults-restore", &world, SEEDS);
}

#[test]
fn a_terminating_namespace_gets_nothing_new() {
    // No namespace controller: a deleted namespace stays Terminating, with what is left in it.
    let world = world("builtins-namespace-defaults-terminating")
        .workload(|w| async move {
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            wait_for_both(&w, "team").await?;
            w.delete(&namespaces, "team").await?;
            let terminating = |ns: Option<&Namespace>| {
                ns.and_then(|ns| ns.status.as_ref()?.phase.clone()).as_deref() == Some("Terminating")
            };
            w.wait_for(&namespaces, "team", terminating, WAIT).await?;
            let accounts: Api<ServiceAccount> = Api::namespaced(w.client(), "team");
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
            w.delete(&accounts, "default").await?;
            w.delete(&maps, "kube-root-ca.crt").await?;
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
        .property(all_have_both(&["default"]))
        .property(FnProperty::at_end("the terminating namespace stays empty", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let accounts = snapshot::objects::<ServiceAccount>(snap, Some("team")).len();
            let maps = snapshot::objects::<ConfigMap>(snap, Some("team")).len();
            let terminating = snapshot::object::<Namespace>(snap, None, "team")
                .is_some_and(|ns| ns.metadata.deletion_timestamp.is_some());
            if (accounts, maps, terminating) == (0, 0, true) {
                Ok(())
            } else {
                Err(format!("{accounts} accounts, {maps} maps, terminating {terminating}"))
            }
        }));
    sweep_passes("builtins-namespace-defaults-terminating", &world, SEEDS);
}

#[test]
fn under_swarm_faults_every_namespace_ends_with_both_objects_as_published() {
    let world = world("builtins-namespace-defaults-faults");
    let swarm = SwarmConfig { controllers: world.controller_names(), ..SwarmConfig::default() };
    let world = world
        .swarm(swarm)
        .workload(|w| async move {
            let wait = Duration::from_secs(400);
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.apply(&namespaces, &namespace("team")).await?;
            let accounts: Api<ServiceAccount> = Api::namespaced(w.client(), "team");
            let maps: Api<ConfigMap> = Api::namespaced(w.client(), "team");
            w.wait_for(&accounts, "default", |a| a.is_some(), wait).await?;
            w.wait_for(&maps, "kube-root-ca.crt", published, wait).await?;
            edit_config_map(&w).await?;
            w.wait_for(&maps, "kube-root-ca.crt", restored_keeping_the_label, wait).await?;
            w.delete(&accounts, "default").await?;
            w.delete(&maps, "kube-root-ca.crt").await?;
            w.wait_for(&accounts, "default", |a| a.is_some(), wait).await?;
            w.wait_for(&maps, "kube-root-ca.crt", published, wait).await
        })
        .property(all_have_both(&["default", "kube-node-lease", "kube-public", "kube-system", "team"]));
    sweep_passes("builtins-namespace-defaults-faults", &world, 40);
}
