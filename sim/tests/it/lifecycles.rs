//! The end view's per-object creation and deletion counts (`EndView::lifecycles`): they cover the
//! whole run even when the server's history is far shorter, and they key objects by stored name.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use model_apiserver::{ObjectKey, ServerConfig};
use sim::api::Api;
use sim::{FnProperty, Sim, Verdict};

use common::*;

/// How many times the workload deletes and recreates `a`.
const RECREATES: u64 = 5;

fn key(name: &str) -> ObjectKey {
    ObjectKey { resource: Arc::from("configmaps"), namespace: Arc::from("default"), name: Arc::from(name) }
}

/// (created, deleted) of `name` in the default cluster's end view, or `None` if never created;
/// and the default cluster's missed revisions.
type Seen = (Option<(u64, u64)>, u64);

#[test]
fn a_configmap_deleted_and_recreated_under_one_name_is_counted_over_the_whole_run_despite_a_short_history() {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let sink = seen.clone();
    let world = Sim::builder()
        // Far fewer revisions than the run writes: the counts must not depend on the history.
        .server_config(ServerConfig { history_revisions_max: 3, ..ServerConfig::default() })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.apply(&api, &config_map("a", "0")).await?;
            for i in 1..=RECREATES {
                w.delete(&api, "a").await?;
                w.apply(&api, &config_map("a", &i.to_string())).await?;
            }
            w.apply(&api, &config_map("b", "x")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("record lifecycles", move |view| {
            let lifecycles = view.lifecycles("default").ok_or("no cluster default")?;
            let mut sink = sink.lock().unwrap();
            for name in ["a", "b", "never"] {
                let counts = lifecycles.get(&key(name)).map(|l| (l.created, l.deleted));
                sink.push((counts, lifecycles.missed_revisions()));
            }
            Ok(())
        }));
    assert_eq!(world.run(7).verdict, Verdict::Pass);
    assert_eq!(*seen.lock().unwrap(), [(Some((RECREATES + 1, RECREATES)), 0), (Some((1, 0)), 0), (None, 0)]);
}

#[test]
fn the_last_creation_of_an_object_is_stamped_with_its_revision_and_virtual_time() {
    let seen: Arc<Mutex<Option<(u64, u64, String)>>> = Arc::default();
    let sink = seen.clone();
    let world = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.sleep(std::time::Duration::from_secs(2)).await;
            w.apply(&api, &config_map("a", "0")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("record lifecycles", move |view| {
            let snapshot = view.cluster("default").ok_or("no cluster default")?;
            let a = view.lifecycles("default").and_then(|l| l.get(&key("a"))).ok_or("a never created")?;
            let stored = snapshot.get(&key("a")).ok_or("a is gone")?;
            let version = stored.metadata.resource_version.clone().unwrap_or_default();
            *sink.lock().unwrap() = Some((a.last_revision, a.last_at.as_secs(), version));
            Ok(())
        }));
    assert_eq!(world.run(3).verdict, Verdict::Pass);
    let (revision, seconds, version) = seen.lock().unwrap().clone().expect("the end check ran");
    // The creation is the object's only write: its resourceVersion is the stamped revision.
    assert_eq!(revision.to_string(), version);
    assert_eq!(seconds, 2);
}
