//! kube-client's raw watch (`Api::watch`), the metadata-only API (`get_metadata`,
//! `list_metadata`, `watch_metadata`, `Api<PartialObjectMeta<K>>`), kube-runtime's
//! `metadata_watcher` and `utils::CancelableJoinHandle`, over the simulation (issue 14).

#[path = "common/mod.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_core::ObjectMeta;
use model_apiserver::ServerConfig;
use sim::api::{
    Api, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams, TypeMeta, WatchEvent, WatchParams,
};
use sim::faults::{Fault, FaultKind, FaultPlan, PlannedFault, SwarmConfig, Trigger};
use sim::runtime::utils::CancelableJoinHandle;
use sim::runtime::{WatchStreamExt, reflector, watcher};
use sim::{Clients, ResourceExt, RunReport, Sim, SimBuilder, SweepConfig, TraceEvent, Verdict, sweep};

use common::*;

/// What a test's watch saw, one line per item.
type Seen = Arc<Mutex<Vec<String>>>;

fn cms(client: sim::Client) -> Api<ConfigMap> {
    Api::namespaced(client, "default")
}

/// A ConfigMap `name` in `default` labelled `app=<app>`.
fn labelled(name: &str, app: &str) -> ConfigMap {
    let mut cm = config_map(name, "1");
    cm.metadata.labels = Some(BTreeMap::from([("app".to_owned(), app.to_owned())]));
    cm
}

fn set_app(app: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "metadata": { "labels": { "app": app } } }))
}

fn set_v(value: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "data": { "v": value } }))
}

/// One watch item as a line: `ADDED a`, `ERROR 410 Expired`, `BOOKMARK`.
fn line<K: ResourceExt>(item: &sim::Result<WatchEvent<K>>) -> String {
    match item {
        Ok(WatchEvent::Added(o)) => format!("ADDED {}", o.name_any()),
        Ok(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.name_any()),
        Ok(WatchEvent::Deleted(o)) => format!("DELETED {}", o.name_any()),
        Ok(WatchEvent::Bookmark(_)) => "BOOKMARK".to_owned(),
        Ok(WatchEvent::Error(status)) => format!("ERROR {} {}", status.code, status.reason),
        Err(error) => format!("error: {error}"),
    }
}

fn without_bookmarks(seen: &Seen) -> Vec<String> {
    seen.lock().unwrap().iter().filter(|l| *l != "BOOKMARK").cloned().collect()
}

fn partial_type() -> TypeMeta {
    TypeMeta { api_version: "meta.k8s.io/v1".to_owned(), kind: "PartialObjectMetadata".to_owned() }
}

/// Wait forever: a controller's main future that returned would be restarted, as a process that
/// exits is (a crash loop).
async fn idle() {
    std::future::pending::<()>().await;
}

/// The resourceVersion of a fresh list of the ConfigMaps of `default`.
async fn list_version(api: &Api<ConfigMap>) -> String {
    let list = api.list(&ListParams::default()).await.expect("list");
    list.metadata.resource_version.expect("a list carries its resourceVersion")
}

/// `builder` with node `name`, which runs `body` over the ConfigMaps of `default`, the
/// resourceVersion of a list of them and `seen`, then idles.
fn with_node<F, Fut>(builder: SimBuilder, name: &str, seen: &Seen, body: F) -> SimBuilder
where
    F: Fn(Api<ConfigMap>, String, Seen) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let (seen, body) = (seen.clone(), Arc::new(body));
    builder.controller(name.to_owned(), move |clients: Clients| {
        let (seen, body) = (seen.clone(), body.clone());
        async move {
            let api = cms(clients.default_cluster());
            let version = list_version(&api).await;
            body(api, version, seen).await;
            idle().await;
        }
    })
}

/// Every item of `stream` into `seen`, then `end`.
async fn record<K: ResourceExt>(stream: impl Stream<Item = sim::Result<WatchEvent<K>>>, seen: &Seen) {
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        seen.lock().unwrap().push(line(&item));
    }
    seen.lock().unwrap().push("end".to_owned());
}

/// A node that watches the ConfigMaps of `default` with `wp` from a list's resourceVersion, once,
/// recording every item and the stream's end.
fn watching_once(seen: &Seen, wp: WatchParams) -> SimBuilder {
    with_node(Sim::builder(), "watching", seen, move |api, version, seen| {
        let wp = wp.clone();
        async move { record(api.watch(&wp, &version).await.expect("watch"), &seen).await }
    })
}

#[test]
fn a_raw_watch_from_a_list_resource_version_sees_added_modified_deleted_in_order() {
    for seed in 0..5 {
        let (seen, versions): (Seen, Seen) = (Arc::default(), Arc::default());
        let report = with_node(
            watching_once(&seen, WatchParams::default()),
            "versions",
            &versions,
            |api, version, versions| async move {
                let stream = api.watch(&WatchParams::default().disable_bookmarks(), &version).await;
                let mut stream = std::pin::pin!(stream.expect("watch"));
                while let Some(Ok(event)) = stream.next().await {
                    let (WatchEvent::Added(cm) | WatchEvent::Modified(cm) | WatchEvent::Deleted(cm)) = event
                    else {
                        panic!("without bookmarks, only object events: {event:?}");
                    };
                    versions
                        .lock()
                        .unwrap()
                        .push(cm.resource_version().expect("an event's object has its version"));
                }
            },
        )
        .workload(|w| async move {
            // After both watches started (a list and a watch call take milliseconds).
            w.sleep(Duration::from_secs(1)).await;
            w.apply(&cms(w.client()), &config_map("a", "0")).await?;
            w.sleep(Duration::from_millis(200)).await;
            w.patch(&cms(w.client()), "a", &set_v("1")).await?;
            w.sleep(Duration::from_millis(200)).await;
            w.delete(&cms(w.client()), "a").await?;
            Ok(())
        })
        .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(without_bookmarks(&seen), ["ADDED a", "MODIFIED a", "DELETED a"], "seed {seed}");
        // Bookmarks are on by default (kube's `WatchParams::default()`), and arrive.
        assert!(seen.lock().unwrap().iter().any(|l| l == "BOOKMARK"), "seed {seed}");
        let versions: Vec<u64> =
            versions.lock().unwrap().iter().map(|v| v.parse().expect("a number")).collect();
        assert_eq!(versions.len(), 3, "seed {seed}: {versions:?}");
        assert!(versions.is_sorted() && versions[0] < versions[2], "seed {seed}: {versions:?}");
    }
}

#[test]
fn a_raw_watch_with_a_label_selector_sees_an_object_leaving_it_as_deleted_and_entering_it_as_added() {
    for seed in 0..3 {
        let seen: Seen = Arc::default();
        let report = watching_once(&seen, WatchParams::default().labels("app=web"))
            .workload(|w| async move {
                w.sleep(Duration::from_secs(1)).await;
                let api = cms(w.client());
                w.apply(&api, &labelled("a", "web")).await?;
                w.apply(&api, &labelled("b", "db")).await?;
                w.patch(&api, "a", &set_app("db")).await?;
                w.patch(&api, "b", &set_v("2")).await?;
                w.patch(&api, "a", &set_app("web")).await?;
                w.patch(&api, "b", &set_app("web")).await?;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(
            without_bookmarks(&seen),
            ["ADDED a", "DELETED a", "ADDED a", "ADDED b"],
            "seed {seed}: b's changes while it is outside the selection are not seen"
        );
    }
}

#[test]
fn a_raw_watch_from_a_compacted_resource_version_gets_an_error_event_410_and_ends() {
    let seen: Seen = Arc::default();
    let world =
        Sim::builder().server_config(ServerConfig { history_revisions_max: 3, ..ServerConfig::default() });
    let report = with_node(world, "watching", &seen, |api, version, seen| async move {
        // Meanwhile the workload writes 20 times: the listed revision is compacted.
        madsim::time::sleep(Duration::from_secs(5)).await;
        record(api.watch(&WatchParams::default(), &version).await.expect("watch"), &seen).await;
        // As kube-runtime's watcher does, start again from the current state. The stream is
        // dropped after its 20 objects: one held but no longer polled would keep the liveness
        // phase waiting for it, as a watcher's would.
        let added = {
            let mut stream = std::pin::pin!(api.watch(&WatchParams::default(), "0").await.expect("watch"));
            let mut added = 0;
            while added < 20 {
                match stream.next().await {
                    Some(Ok(WatchEvent::Added(_))) => added += 1,
                    Some(Ok(WatchEvent::Bookmark(_))) => {}
                    other => panic!("from \"0\", ADDED for each object: {other:?}"),
                }
            }
            added
        };
        seen.lock().unwrap().push(format!("{added} ADDED from \"0\""));
    })
    .workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        for i in 0..20 {
            w.apply(&cms(w.client()), &config_map(&format!("cm-{i:02}"), "x")).await?;
        }
        // The run lasts while the controller sleeps (a sleeping controller is quiet).
        w.sleep(Duration::from_secs(10)).await;
        Ok(())
    })
    .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(*seen.lock().unwrap(), ["ERROR 410 Expired", "end", "20 ADDED from \"0\""]);
}

/// A node raw-watching the ConfigMaps of `default`, while the workload writes `own` of them and
/// `secrets` Secrets, interleaved.
fn waking(own: usize, secrets: usize) -> RunReport {
    watching_once(&Seen::default(), WatchParams::default())
        .workload(move |w| async move {
            w.sleep(Duration::from_secs(1)).await;
            let secrets_api: Api<Secret> = Api::namespaced(w.client(), "default");
            for i in 0..own.max(secrets) {
                if i < own {
                    w.apply(&cms(w.client()), &config_map(&format!("own-{i}"), "x")).await?;
                }
                for j in 0..secrets.div_ceil(own.max(1)) {
                    let n = i * secrets.div_ceil(own.max(1)) + j;
                    if n < secrets {
                        let metadata = ObjectMeta { name: Some(format!("s-{n}")), ..ObjectMeta::default() };
                        w.apply(&secrets_api, &Secret { metadata, ..Secret::default() }).await?;
                    }
                }
            }
            Ok(())
        })
        .run(3)
}

#[test]
fn a_raw_watch_of_config_maps_is_not_woken_by_secret_writes() {
    let few = waking(2, 2);
    let many = waking(2, 40);
    assert_eq!(few.verdict, Verdict::Pass);
    assert_eq!(many.verdict, Verdict::Pass);
    assert!(many.stats.api_calls >= few.stats.api_calls + 38, "{:?} {:?}", few.stats, many.stats);
    // Its two ConfigMaps arrive either way, and the 38 more Secret writes cost no pull.
    assert_eq!(few.stats.watch_deliveries, 2, "{:?}", few.stats);
    assert_eq!(few.stats.watch_deliveries, many.stats.watch_deliveries);
    assert_eq!(few.stats.watch_pulls, many.stats.watch_pulls, "{:?} {:?}", few.stats, many.stats);
}

/// Watch the ConfigMaps of `default` from `version` as a user of `Api::watch` does: whenever the
/// stream ends, again from the last resourceVersion seen (from `"0"`, the current state, after a
/// 410); a failed call is retried after a pause. Records each item and each end in `seen`.
async fn rewatching(api: Api<ConfigMap>, mut version: String, seen: Seen) {
    // The run bounds it: every round waits on the server.
    loop {
        let stream = match api.watch(&WatchParams::default(), &version).await {
            Ok(stream) => stream,
            Err(error) => {
                seen.lock().unwrap().push(format!("watch failed: {error}"));
                madsim::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            match &item {
                Ok(WatchEvent::Added(cm) | WatchEvent::Modified(cm) | WatchEvent::Deleted(cm)) => {
                    version = cm.resource_version().expect("an event's object has its version");
                }
                Ok(WatchEvent::Error(status)) if status.code == 410 => version = "0".to_owned(),
                _ => {}
            }
            seen.lock().unwrap().push(line(&item));
        }
        seen.lock().unwrap().push("end".to_owned());
    }
}

/// `rewatching` on node `watching` under `plan`, while the workload creates `a` at 1 s, `b` at
/// 1.8 s and `c` at 3 s.
fn rewatching_world(seen: &Seen, plan: FaultPlan) -> SimBuilder {
    with_node(Sim::builder().keep_trace(true).faults(plan), "watching", seen, rewatching).workload(
        |w| async move {
            w.sleep(Duration::from_secs(1)).await;
            w.apply(&cms(w.client()), &config_map("a", "x")).await?;
            w.sleep(Duration::from_millis(800)).await;
            w.apply(&cms(w.client()), &config_map("b", "x")).await?;
            w.sleep(Duration::from_millis(1_200)).await;
            w.apply(&cms(w.client()), &config_map("c", "x")).await?;
            Ok(())
        },
    )
}

fn notes(report: &RunReport) -> Vec<String> {
    entries(report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_cut_watch_ends_the_raw_stream_and_a_rewatch_from_the_last_version_misses_nothing() {
    // The node's watches are cut at 1.5 s: the stream ends at its next pull (b's write), as kube's
    // ends with its HTTP response, and the re-watch from a's resourceVersion starts with b.
    let plan = FaultPlan {
        faults: vec![PlannedFault {
            trigger: Trigger::AtTime { at_ms: 1_500 },
            fault: Fault::WatchDisconnect { controller: "watching".into() },
        }],
    };
    for seed in 0..3 {
        let seen: Seen = Arc::default();
        let report = rewatching_world(&seen, plan.clone()).run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert!(report.unfired.is_empty(), "seed {seed}: {:?}", report.unfired);
        assert_eq!(without_bookmarks(&seen), ["ADDED a", "end", "ADDED b", "ADDED c"], "seed {seed}");
        let cut = notes(&report).into_iter().filter(|n| n.ends_with("cut: the stream ends")).count();
        assert_eq!(cut, 1, "seed {seed}");
    }
}

#[test]
fn a_forced_relist_expires_the_raw_stream_with_an_error_event_410_after_the_hold() {
    // From 1.5 s the node's watches are held for 500 ms, then expire (skipByRelist): b's write
    // reaches the stream as an ERROR event 410, and the re-watch from "0" starts with a and b.
    let plan = FaultPlan {
        faults: vec![PlannedFault {
            trigger: Trigger::AtTime { at_ms: 1_500 },
            fault: Fault::SkipByRelist { controller: "watching".into(), duration_ms: 500 },
        }],
    };
    for seed in 0..3 {
        let seen: Seen = Arc::default();
        let report = rewatching_world(&seen, plan.clone()).run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(
            without_bookmarks(&seen),
            ["ADDED a", "ERROR 410 Expired", "end", "ADDED a", "ADDED b", "ADDED c"],
            "seed {seed}"
        );
    }
}

#[test]
fn a_raw_watch_times_out_as_its_watch_params_say_and_the_rewatch_goes_on() {
    let seen: Seen = Arc::default();
    let report = with_node(Sim::builder(), "watching", &seen, |api, version, seen| async move {
        let wp = WatchParams::default().timeout(2);
        let stream = api.watch(&wp, &version).await.expect("watch");
        let started = madsim::time::Instant::now();
        record(stream, &seen).await;
        seen.lock().unwrap().push(format!("after {}s", started.elapsed().as_secs()));
        let a = api.get("a").await.expect("a exists").resource_version().expect("a version");
        record(api.watch(&wp, &a).await.expect("watch"), &seen).await;
    })
    .workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        w.apply(&cms(w.client()), &config_map("a", "x")).await?;
        w.sleep(Duration::from_secs(2)).await;
        w.apply(&cms(w.client()), &config_map("b", "x")).await?;
        Ok(())
    })
    .run(2);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(without_bookmarks(&seen), ["ADDED a", "end", "after 2s", "ADDED b", "end"]);
}

#[test]
fn send_initial_events_needs_bookmarks_and_ends_the_initial_events_with_an_annotated_bookmark() {
    let verdict = Sim::builder()
        .workload(|w| async move {
            let api = cms(w.client());
            w.apply(&api, &config_map("a", "x")).await?;
            let refused = api.watch(&WatchParams::default().disable_bookmarks().initial_events(), "").await;
            assert!(matches!(refused, Err(sim::Error::BuildRequest(_))), "{:?}", refused.err());
            let stream = api.watch(&WatchParams::default().initial_events(), "").await.expect("watch");
            let mut stream = std::pin::pin!(stream);
            assert_eq!(line(&stream.next().await.expect("an item")), "ADDED a");
            let Some(Ok(WatchEvent::Bookmark(bookmark))) = stream.next().await else {
                panic!("the initial events end with a bookmark");
            };
            let end = bookmark.metadata.annotations.get("k8s.io/initial-events-end");
            assert_eq!(end.map(String::as_str), Some("true"));
            Ok(())
        })
        .run(1)
        .verdict;
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_raw_watch_takes_kubes_stream_backoff_as_any_try_stream_does() {
    let seen: Seen = Arc::default();
    let report = with_node(Sim::builder(), "backing-off", &seen, |api, version, seen| async move {
        let stream = api.watch(&WatchParams::default(), &version).await.expect("watch");
        record(stream.default_backoff(), &seen).await;
    })
    .workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        w.apply(&cms(w.client()), &config_map("a", "x")).await?;
        Ok(())
    })
    .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(without_bookmarks(&seen), ["ADDED a"]);
}

#[test]
fn metadata_reads_return_only_metadata_typed_partial_object_metadata_as_kube_apiserver_does() {
    let verdict = Sim::builder()
        .workload(|w| async move {
            let api = cms(w.client());
            api.create(&PostParams::default(), &labelled("a", "web")).await.expect("create");
            let meta: PartialObjectMeta<ConfigMap> = api.get_metadata("a").await.expect("get_metadata");
            assert_eq!(meta.types, Some(partial_type()));
            assert_eq!(meta.name_any(), "a");
            assert_eq!(meta.labels().get("app").map(String::as_str), Some("web"));
            assert!(meta.metadata.uid.is_some() && meta.metadata.resource_version.is_some());
            // Metadata only: no `data`.
            let json = serde_json::to_value(&meta).expect("serializes");
            let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
            assert_eq!(keys, ["apiVersion", "kind", "metadata"]);

            assert!(api.get_metadata_opt("missing").await.expect("get_metadata_opt").is_none());
            let found = api.get_metadata_opt("a").await.expect("get_metadata_opt").expect("found");
            assert_eq!(found.metadata, meta.metadata);

            let list = api.list_metadata(&ListParams::default()).await.expect("list_metadata");
            assert_eq!(
                (list.types.api_version.as_str(), list.types.kind.as_str()),
                ("meta.k8s.io/v1", "PartialObjectMetadataList")
            );
            assert!(list.metadata.resource_version.is_some());
            assert_eq!(list.items.len(), 1);
            assert_eq!(list.items[0].types, Some(partial_type()));
            assert_eq!(list.items[0].metadata, meta.metadata);

            // kube's own form: an `Api<PartialObjectMeta<K>>` reads metadata only.
            let partial: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(w.client(), "default");
            assert_eq!(partial.get("a").await.expect("get").metadata, meta.metadata);

            let tier = Patch::Merge(serde_json::json!({ "metadata": { "labels": { "tier": "front" } } }));
            let patched =
                api.patch_metadata("a", &PatchParams::default(), &tier).await.expect("patch_metadata");
            assert_eq!(patched.types, Some(partial_type()));
            assert_eq!(patched.labels().get("tier").map(String::as_str), Some("front"));

            // The full read still has the data and the object's own type.
            let full = api.get("a").await.expect("get");
            assert_eq!(full.data, Some(BTreeMap::from([("v".to_owned(), "1".to_owned())])));
            assert_eq!(full.labels().get("tier").map(String::as_str), Some("front"));
            Ok(())
        })
        .run(1)
        .verdict;
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_metadata_watch_yields_partial_object_metadata_events_and_bookmarks() {
    let seen: Seen = Arc::default();
    let report = with_node(Sim::builder(), "watching", &seen, |api, version, seen| async move {
        let stream = api.watch_metadata(&WatchParams::default(), &version).await.expect("watch");
        let checked = stream.inspect(|item| {
            let types = match item {
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                    let json = serde_json::to_value(o).expect("serializes");
                    assert!(json.get("data").is_none(), "metadata only: {json}");
                    o.types.clone()
                }
                Ok(WatchEvent::Bookmark(bookmark)) => Some(bookmark.types.clone()),
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(types, Some(partial_type()));
        });
        record(checked, &seen).await;
    })
    .workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        w.apply(&cms(w.client()), &config_map("a", "0")).await?;
        w.patch(&cms(w.client()), "a", &set_v("1")).await?;
        w.delete(&cms(w.client()), "a").await?;
        Ok(())
    })
    .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(without_bookmarks(&seen), ["ADDED a", "MODIFIED a", "DELETED a"]);
    assert!(seen.lock().unwrap().iter().any(|l| l == "BOOKMARK"));
}

#[test]
fn metadata_watcher_drives_a_reflector_of_partial_object_metadata() {
    let states: Seen = Arc::default();
    let report = with_node(Sim::builder(), "reflecting", &states, |api, _, states| async move {
        let (reader, writer) = reflector::store::<PartialObjectMeta<ConfigMap>>();
        #[allow(deprecated)]
        let stream = sim::runtime::metadata_watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .touched_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(object)) = stream.next().await {
            assert_eq!(object.types, Some(partial_type()));
            let state = reader.state();
            assert!(state.iter().all(|o| o.types == Some(partial_type())));
            let names: Vec<String> = state.iter().map(|o| o.name_any()).collect();
            states.lock().unwrap().push(names.join(","));
        }
    })
    .workload(|w| async move {
        w.apply(&cms(w.client()), &config_map("a", "x")).await?;
        w.sleep(Duration::from_secs(1)).await;
        w.apply(&cms(w.client()), &config_map("b", "x")).await?;
        w.delete(&cms(w.client()), "a").await?;
        Ok(())
    })
    .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    let states = states.lock().unwrap().clone();
    assert_eq!(states.last().map(String::as_str), Some("b"), "{states:?}");
    assert!(states.iter().any(|s| s == "a,b"), "{states:?}");
}

#[test]
fn a_cancelable_join_handle_yields_its_output_and_dropping_it_aborts_its_task() {
    let verdict = Sim::builder()
        .workload(|_w| async move {
            let handle = tokio::runtime::Handle::current();
            let task = CancelableJoinHandle::spawn(
                async {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    42
                },
                &handle,
            );
            assert_eq!(task.await, 42);

            let (detached_ran, cancelled_ran) =
                (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
            let flag = detached_ran.clone();
            // A plain join handle detaches its task when dropped...
            drop(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                flag.store(true, Ordering::SeqCst);
            }));
            // ...a cancelable one aborts it.
            let flag = cancelled_ran.clone();
            drop(CancelableJoinHandle::spawn(
                async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    flag.store(true, Ordering::SeqCst);
                },
                &handle,
            ));
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert!(detached_ran.load(Ordering::SeqCst));
            assert!(!cancelled_ran.load(Ordering::SeqCst));
            Ok(())
        })
        .run(1)
        .verdict;
    assert_eq!(verdict, Verdict::Pass);
}

/// A world whose controller is `rewatching`, under every fault kind the swarm draws, while the
/// workload creates, relabels and deletes ConfigMaps.
fn rewatching_swarm() -> SimBuilder {
    let swarm =
        Sim::builder().swarm(SwarmConfig { kinds: FaultKind::ALL.to_vec(), ..SwarmConfig::default() });
    with_node(swarm, "watching", &Seen::default(), rewatching).workload(|w| async move {
        let api = cms(w.client());
        // Spread over 8 s, so that faults drawn at any time of the safety phase meet writes.
        for i in 0..6 {
            w.apply(&api, &labelled(&format!("cm-{i}"), "web")).await?;
            w.sleep(Duration::from_millis(700)).await;
        }
        for i in 0..6 {
            w.patch(&api, &format!("cm-{i}"), &set_app("db")).await?;
            if i % 2 == 0 {
                w.delete(&api, &format!("cm-{i}")).await?;
            }
            w.sleep(Duration::from_millis(600)).await;
        }
        Ok(())
    })
}

#[test]
fn a_seed_with_raw_watches_under_swarm_faults_replays_to_the_same_trace_digest() {
    let world = rewatching_swarm();
    // The self-check runs every seed a second time on another fresh thread and compares digests.
    let config = SweepConfig::new("raw-watch-determinism").seeds(20).self_check_every(1);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
    if std::env::var_os("SIM_SEED").is_none() {
        assert_eq!(report.self_checks, report.seeds_run);
    }
    // And the same seed run twice, each on a fresh thread, gives the same digest.
    let run = |seed| std::thread::scope(|s| s.spawn(|| world.run(seed)).join()).expect("the run finishes");
    let (first, second) = (run(7), run(7));
    assert_eq!(first.digest, second.digest);
    assert_eq!(first.verdict, second.verdict);
    // The raw watch did deliver (it is the world's only watch), and the swarm drew watch faults
    // that fired on it (a node whose only watches are raw ones is a node with watches).
    assert!(first.stats.watch_deliveries >= 6, "{:?}", first.stats);
    let fired: BTreeSet<FaultKind> = (0..20)
        .flat_map(|seed| {
            let report = run(seed);
            let fired = report.plan.faults.iter().filter(|f| !report.unfired.contains(f));
            fired.map(|f| f.fault.kind()).collect::<Vec<_>>()
        })
        .collect();
    for kind in [FaultKind::WatchDisconnect, FaultKind::SkipByRelist, FaultKind::Compact] {
        assert!(fired.contains(&kind), "{kind:?} never fired: {fired:?}");
    }
}
