//! A multi-cluster syncer: one controller holds clients to two clusters and copies the labelled
//! ConfigMaps of cluster "super" into cluster "tenant", as a virtual-cluster syncer does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, ObjectMeta, Patch, PostParams, ResourceExt};
use sim::property::{EndView, FnProperty};
use sim::runtime::{Controller, controller::Action, watcher};
use sim::{Client, Clients, Sim, SimBuilder, SweepConfig, Verdict, Workload, WorkloadError, sweep};

const SUPER: &str = "super";
const TENANT: &str = "tenant";
/// The label that marks a ConfigMap of the super cluster for syncing.
const SYNC_SELECTOR: &str = "sync=true";
/// ConfigMaps the workload creates in the super cluster.
const CONFIGMAPS: usize = 3;

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("API call failed: {0}")]
    Api(#[from] sim::Error),
}

struct Context {
    tenant: Client,
}

/// Copy one super-cluster ConfigMap into the tenant cluster: create it, or replace it when its
/// data differs.
async fn sync(source: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, SyncError> {
    let name = source.name_any();
    let namespace = source.namespace().unwrap_or_else(|| "default".to_owned());
    let copies: Api<ConfigMap> = Api::namespaced(ctx.tenant.clone(), &namespace);
    let desired = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(BTreeMap::from([("synced-from".to_owned(), SUPER.to_owned())])),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        ..ConfigMap::default()
    };
    match copies.get_opt(&name).await? {
        None => {
            copies.create(&PostParams::default(), &desired).await?;
        }
        Some(current) if current.data != desired.data => {
            let mut replacement = desired;
            replacement.metadata.resource_version = current.resource_version();
            copies.replace(&name, &PostParams::default(), &replacement).await?;
        }
        Some(_) => {}
    }
    Ok(Action::await_change())
}

fn retry_soon(_source: Arc<ConfigMap>, _error: &SyncError, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

async fn run_syncer(clients: Clients) {
    let sources: Api<ConfigMap> = Api::all(clients.cluster(SUPER));
    let ctx = Arc::new(Context { tenant: clients.cluster(TENANT) });
    Controller::new(sources, watcher::Config::default().labels(SYNC_SELECTOR))
        .run(sync, retry_soon, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

fn configmap(name: &str, value: &str, synced: bool) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some(BTreeMap::from([("sync".to_owned(), synced.to_string())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Create labelled ConfigMaps and one unlabelled one in the super cluster, then edit one.
async fn workload(w: Workload) -> Result<(), WorkloadError> {
    let sources: Api<ConfigMap> = Api::namespaced(w.clients().cluster(SUPER), "default");
    for i in 0..CONFIGMAPS {
        w.apply(&sources, &configmap(&format!("cm-{i}"), &format!("v{i}"), true)).await?;
    }
    w.apply(&sources, &configmap("private", "secret", false)).await?;
    let patch = serde_json::json!({ "data": { "value": "edited" } });
    w.patch(&sources, "cm-1", &Patch::Merge(&patch)).await?;
    Ok(())
}

/// The tenant cluster holds a copy of exactly the labelled super ConfigMaps, with their data.
fn tenant_mirrors_super(view: &EndView<'_>) -> Result<(), String> {
    let source = view.cluster(SUPER).ok_or("no super cluster")?;
    let tenant = view.cluster(TENANT).ok_or("no tenant cluster")?;
    let selected = |cm: &sim::api::DynamicObject| cm.labels().get("sync").is_some_and(|v| v == "true");
    let wanted: BTreeMap<String, &serde_json::Value> = source
        .iter_resource("configmaps", Some("default"))
        .filter(|(_, cm)| selected(cm))
        .map(|(key, cm)| (key.name.to_string(), &cm.data["data"]))
        .collect();
    let copied: BTreeMap<String, &serde_json::Value> = tenant
        .iter_resource("configmaps", Some("default"))
        .filter(|(_, cm)| cm.labels().get("synced-from").is_some_and(|v| v == SUPER))
        .map(|(key, cm)| (key.name.to_string(), &cm.data["data"]))
        .collect();
    if wanted == copied { Ok(()) } else { Err(format!("super has {wanted:?}, tenant has {copied:?}")) }
}

fn world() -> SimBuilder {
    Sim::builder()
        .scenario("multicluster-syncer")
        .cluster(SUPER)
        .cluster(TENANT)
        .controller("syncer", run_syncer)
        .workload(workload)
        .property(FnProperty::at_end("tenant mirrors super", tenant_mirrors_super))
}

#[test]
fn a_syncer_copies_labelled_configmaps_from_super_to_tenant_and_converges() {
    let report = world().keep_trace(true).run(1);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let lines = report.trace.render();
    for i in 0..CONFIGMAPS {
        assert!(lines.contains(&format!("create configmaps/default/cm-{i}")), "{lines}");
    }
    // The syncer updated cm-1's copy after the edit; the property checked that the unlabelled
    // ConfigMap was not copied.
    assert!(lines.contains("update configmaps/default/cm-1"), "{lines}");
}

#[test]
fn the_multicluster_syncer_converges_on_100_seeds() {
    let world = world();
    let report = sweep(&SweepConfig::new("multicluster-syncer").seeds(100), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
    if std::env::var_os("SIM_SEED").is_none() && std::env::var_os("SIM_SEEDS").is_none() {
        assert_eq!((report.seeds_run, report.self_checks), (100, 10));
    }
}

#[test]
fn the_end_check_catches_a_tenant_that_lacks_a_copy() {
    // The same world without the syncer: the property must name what is missing.
    let world = Sim::builder()
        .scenario("multicluster-no-syncer")
        .cluster(SUPER)
        .cluster(TENANT)
        .workload(workload)
        .property(FnProperty::at_end("tenant mirrors super", tenant_mirrors_super));
    let report = world.run(1);
    let Verdict::Correctness { property, message, .. } = report.verdict else {
        panic!("expected a correctness verdict, got {}", report.verdict);
    };
    assert_eq!(property, "tenant mirrors super");
    assert_eq!(
        message,
        "super has {\"cm-0\": Object {\"value\": String(\"v0\")}, \"cm-1\": Object {\"value\": \
         String(\"edited\")}, \"cm-2\": Object {\"value\": String(\"v2\")}}, tenant has {}"
    );
}
