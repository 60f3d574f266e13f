//! Issue 15: one bug is one failure. A controller that creates a backup with `generateName`
//! whenever its cache shows none makes a second one when its cache lags (a held watch, a relist,
//! a restart onto a stale replica). Every such seed names another random backup, and exploration
//! must still report it as one distinct failure of the differential oracle.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::{ObjectMeta, ResourceExt};
use properties::hooks::{self, Reference};
use sim::api::{Api, PostParams};
use sim::explore::{self, Options, Quiet, random::RandomSwarm, shard::Shard};
use sim::faults::SwarmConfig;
use sim::runtime::controller::Action;
use sim::runtime::reflector::Store;
use sim::runtime::{Controller, watcher};
use sim::scenario::Scenario;
use sim::{Clients, Sim, SimBuilder};

const NODE: &str = "backup-operator";
/// The label tying a backup to the request it was made for.
const BACKUP_OF: &str = "backup-of";

#[derive(Debug, thiserror::Error)]
#[error("API call failed: {0}")]
struct Error(#[from] sim::Error);

fn request() -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("nightly".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("backup".to_owned(), "wanted".to_owned())])),
        ..ConfigMap::default()
    }
}

struct Ctx {
    api: Api<ConfigMap>,
    cache: Store<ConfigMap>,
}

/// The planted bug: whether a backup exists is read from the cache, which can lag behind the
/// controller's own create; the backup's name is generated, so a second create succeeds.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cm.name_any();
    if cm.labels().contains_key(BACKUP_OF) {
        return Ok(Action::await_change());
    }
    let made = ctx.cache.state().iter().any(|c| c.labels().get(BACKUP_OF) == Some(&name));
    if made {
        return Ok(Action::await_change());
    }
    let backup = ConfigMap {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-backup-")),
            namespace: Some("default".to_owned()),
            labels: Some(BTreeMap::from([(BACKUP_OF.to_owned(), name.clone())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("of".to_owned(), name)])),
        ..ConfigMap::default()
    };
    ctx.api.create(&PostParams::default(), &backup).await?;
    // Look again soon: by then the cache normally shows the backup.
    Ok(Action::requeue(Duration::from_secs(2)))
}

fn world() -> SimBuilder {
    Sim::builder()
        .controller(NODE, |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            let controller = Controller::new(api.clone(), watcher::Config::default());
            let ctx = Arc::new(Ctx { api, cache: controller.store() });
            controller
                .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(500)), ctx)
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.apply(&api, &request()).await?;
            let backed_up = |all: &[ConfigMap]| all.iter().any(|c| c.labels().contains_key(BACKUP_OF));
            w.wait_for_all(&api, backed_up, Duration::from_secs(60)).await?;
            // The user goes on for a while; faults stay on meanwhile.
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
}

fn scenario() -> Scenario {
    let base = world();
    let reference = Arc::new(Reference::compute(&base, [0, 1]).expect("the world passes without faults"));
    let swarm = SwarmConfig { controllers: vec![NODE.to_owned()], writes_max: 4, ..SwarmConfig::default() };
    Scenario::new(
        "backups:duplicate",
        "a backup made with generateName is made again when the cache lags",
        base.property(hooks::matches_reference(reference)).swarm(swarm),
    )
}

#[test]
fn a_generate_name_duplicate_create_is_one_distinct_failure_in_500_seeds() {
    let scenario = scenario();
    let chosen = [&scenario];
    let swarm = RandomSwarm::new(chosen.len(), 0, Some(500), Shard::ALL);
    let explored = explore::explore(&chosen, &swarm, &[], &Options::default(), &Quiet);
    assert_eq!(explored.seeds_run, vec![500]);
    let failing = explored.failing[0];
    assert!(failing >= 2, "the duplicate backup was found in {failing} of 500 seeds");
    let shapes: Vec<String> = explored
        .groups
        .iter()
        .map(|(failure, count)| format!("{count} x seed {}: {}", failure.seed, failure.verdict))
        .collect();
    assert_eq!(
        shapes.len(),
        1,
        "{failing} failing seeds gave {} distinct failures: {shapes:#?}",
        shapes.len()
    );
    println!("the duplicate backup: {failing} of 500 seeds failed, {} distinct failure", shapes.len());
    let (failure, count) = &explored.groups[0];
    assert_eq!(*count, failing);
    let sim::Verdict::Correctness { property, message, .. } = &failure.verdict else {
        panic!("expected the differential oracle's verdict, found {}", failure.verdict);
    };
    assert_eq!(property, "matches_reference");
    assert!(message.contains("configmaps default/nightly-backup-"), "{message}");
}
