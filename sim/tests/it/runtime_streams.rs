//! kube-runtime's stream API over the simulation (issue 14): `watcher()` and its events,
//! `WatchStreamExt`, predicates, `reflector::store()` with `reflector(writer, stream)`, and a
//! controller written as with kube 5 (`Controller::for_stream`), under watch faults.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_core::ObjectMeta;
use model_apiserver::ServerConfig;
use sim::api::{Api, Patch, PatchParams, PostParams};
use sim::faults::{FaultKind, SwarmConfig};
use sim::runtime::controller::{Action, Error as ControllerError};
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::{Controller, Predicate, WatchStreamExt, predicates, watcher};
use sim::{Clients, Resource, ResourceExt, Sim, Verdict};

use common::*;

/// The error type of controllers that never fail.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// What a test's controller saw, one line per item.
type Seen = Arc<Mutex<Vec<String>>>;

fn cms(w: &sim::Workload) -> Api<ConfigMap> {
    Api::namespaced(w.client(), "default")
}

fn set_v(value: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "data": { "v": value } }))
}

/// A ConfigMap with `role=parent`, the kind the kube-style controller reconciles.
fn parent(name: &str) -> ConfigMap {
    let mut cm = config_map(name, "1");
    cm.metadata.labels = Some(BTreeMap::from([("role".to_owned(), "parent".to_owned())]));
    cm
}

#[test]
fn a_watcher_stream_yields_init_and_the_list_then_applies_and_deletes_in_order() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let probe = seen.clone();
        let report = Sim::builder()
            .controller("watching", move |clients: Clients| {
                let probe = probe.clone();
                async move {
                    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
                    while let Some(item) = stream.next().await {
                        let line = match item {
                            Ok(event) => event.to_string(),
                            Err(error) => format!("error: {error}"),
                        };
                        probe.lock().unwrap().push(line);
                    }
                }
            })
            .workload(|w| async move {
                w.apply(&cms(&w), &config_map("before", "0")).await?;
                // After the watcher's initial list (a list, then deliveries, take milliseconds).
                w.sleep(Duration::from_secs(1)).await;
                w.apply(&cms(&w), &config_map("a", "0")).await?;
                w.sleep(Duration::from_millis(200)).await;
                w.patch(&cms(&w), "a", &set_v("1")).await?;
                w.sleep(Duration::from_millis(200)).await;
                w.delete(&cms(&w), "before").await?;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let seen = seen.lock().unwrap().clone();
        // The list may or may not already hold `before` (the workload's first apply races the
        // controller's list); either way it arrives once, before everything else.
        let expected_listed =
            ["Init", "InitApply(before)", "InitDone", "Apply(a)", "Apply(a)", "Delete(before)"];
        let expected_watched =
            ["Init", "InitDone", "Apply(before)", "Apply(a)", "Apply(a)", "Delete(before)"];
        assert!(seen == expected_listed || seen == expected_watched, "seed {seed}: {seen:?}");
    }
}

/// A world whose server keeps 3 revisions, and a workload that creates 20 ConfigMaps at once,
/// so that a watch falls behind the compaction and gets 410; `record` runs on the controller.
fn compacting_world(seen: Seen, final_len: Arc<Mutex<usize>>) -> sim::SimBuilder {
    Sim::builder()
        .server_config(ServerConfig { history_revisions_max: 3, ..ServerConfig::default() })
        .controller("watching", move |clients: Clients| {
            let (seen, final_len) = (seen.clone(), final_len.clone());
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let (reader, writer) = reflector::store::<ConfigMap>();
                let stream = watcher(api, watcher::Config::default()).default_backoff().reflect(writer);
                let mut stream = std::pin::pin!(stream);
                while let Some(item) = stream.next().await {
                    let line = match item {
                        Ok(watcher::Event::InitApply(_)) => continue,
                        Ok(event) => event.to_string(),
                        Err(error) => format!("error: {error}"),
                    };
                    seen.lock().unwrap().push(line);
                    *final_len.lock().unwrap() = reader.len();
                }
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(100)).await;
            let api = cms(&w);
            let creates =
                (0..20).map(|i| {
                    let api = api.clone();
                    async move {
                        api.create(&PostParams::default(), &config_map(&format!("cm-{i:02}"), "x")).await
                    }
                });
            for created in futures::future::join_all(creates).await {
                created.expect("create");
            }
            Ok(())
        })
}

#[test]
fn a_compacted_watch_yields_410_then_the_stream_relists_and_its_store_converges() {
    let mut relisted = 0;
    for seed in 0..10 {
        let seen: Seen = Arc::default();
        let final_len: Arc<Mutex<usize>> = Arc::default();
        let report = compacting_world(seen.clone(), final_len.clone()).run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[..2], ["Init", "InitDone"], "seed {seed}: {seen:?}");
        if let Some(error_at) = seen.iter().position(|line| line.starts_with("error:")) {
            // A 410 is an error item, and the very next items are a relist.
            assert!(seen[error_at].contains("too old resource version"), "seed {seed}: {seen:?}");
            assert_eq!(seen[error_at + 1..error_at + 3], ["Init", "InitDone"], "seed {seed}: {seen:?}");
            relisted += 1;
        }
        assert_eq!(*final_len.lock().unwrap(), 20, "seed {seed}: the store missed objects: {seen:?}");
    }
    assert!(relisted > 0, "no seed compacted past the watch: the relist was not exercised");
}

/// The context of the kube-style controller: the API it writes Secrets through.
struct Ctx {
    secrets: Api<Secret>,
}

/// A reconcile as a kube 5 controller writes it: copy the parent's data into a Secret it owns.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, sim::Error> {
    let name = cm.name_any();
    let owner = cm.controller_owner_ref(&()).expect("a stored object has a uid");
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: cm.namespace(),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        string_data: cm.data.clone(),
        ..Secret::default()
    };
    ctx.secrets.patch(&name, &PatchParams::apply("copier").force(), &Patch::Apply(&secret)).await?;
    Ok(REQUEUE)
}

/// A `const` action, as kube 5 allows.
const REQUEUE: Action = Action::requeue(Duration::from_secs(300));

fn error_policy(_cm: Arc<ConfigMap>, _error: &sim::Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// The controller's main future, written as with kube 5 (only the `use` lines differ).
async fn kube_style_controller(clients: Clients, outcomes: Seen) {
    let client = clients.default_cluster();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    let (reader, writer) = reflector::store();
    let parents = watcher(cms, watcher::Config::default().labels("role=parent"))
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation.combine(predicates::resource_version), Default::default());
    let children = watcher(secrets.clone(), watcher::Config::default()).default_backoff().touched_objects();
    Controller::for_stream(parents, reader)
        .owns_stream(children)
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Ctx { secrets }))
        .for_each(|outcome| {
            let line = match outcome {
                Ok((object, _)) => format!("reconciled {object}"),
                Err(ControllerError::QueueError(error)) => format!("queue error: {error}"),
                Err(error) => format!("error: {error}"),
            };
            outcomes.lock().unwrap().push(line);
            async {}
        })
        .await;
}

fn kube_style_world(outcomes: Seen) -> sim::SimBuilder {
    Sim::builder()
        .controller("copier", move |clients: Clients| kube_style_controller(clients, outcomes.clone()))
        .workload(|w| async move {
            for name in ["p1", "p2"] {
                w.apply(&cms(&w), &parent(name)).await?;
            }
            w.apply(&cms(&w), &config_map("not-a-parent", "x")).await?;
            w.sleep(Duration::from_secs(2)).await;
            w.patch(&cms(&w), "p1", &set_v("2")).await?;
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            let copied = |s: Option<&Secret>| {
                s.and_then(|s| s.data.as_ref()).and_then(|d| d.get("v")).is_some_and(|v| v.0 == b"2")
            };
            w.wait_for(&secrets, "p1", copied, Duration::from_secs(30)).await?;
            w.wait_for(&secrets, "p2", |s: Option<&Secret>| s.is_some(), Duration::from_secs(30)).await?;
            Ok(())
        })
}

#[test]
fn a_controller_written_as_with_kube_5_over_for_stream_reconciles_its_parents() {
    for seed in 0..5 {
        let outcomes: Seen = Arc::default();
        let report = kube_style_world(outcomes.clone()).run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}: {:?}", outcomes.lock().unwrap());
        let outcomes = outcomes.lock().unwrap().clone();
        assert!(outcomes.iter().any(|o| o == "reconciled default/p1"), "seed {seed}: {outcomes:?}");
        assert!(outcomes.iter().any(|o| o == "reconciled default/p2"), "seed {seed}: {outcomes:?}");
        // The label selector of the stream keeps other ConfigMaps out.
        assert!(!outcomes.iter().any(|o| o.contains("not-a-parent")), "seed {seed}: {outcomes:?}");
    }
}

#[test]
fn a_kube_style_controller_under_swarm_faults_replays_to_the_same_digest() {
    let swarm = SwarmConfig { kinds: FaultKind::ALL.to_vec(), ..SwarmConfig::default() };
    for seed in 0..10 {
        let first = kube_style_world(Seen::default()).swarm(swarm.clone()).run(seed);
        let second = kube_style_world(Seen::default()).swarm(swarm.clone()).run(seed);
        assert_eq!(first.digest, second.digest, "seed {seed}");
        assert_eq!(first.verdict, second.verdict, "seed {seed}");
    }
}

#[test]
fn a_predicate_filter_passes_an_object_only_when_its_predicate_changes() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .controller("filtering", move |clients: Clients| {
            let probe = probe.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let stream = watcher(api, watcher::Config::default())
                    .applied_objects()
                    .predicate_filter(predicates::labels, Default::default());
                let mut stream = std::pin::pin!(stream);
                while let Some(Ok(cm)) = stream.next().await {
                    let labels: Vec<String> = cm.labels().iter().map(|(k, v)| format!("{k}={v}")).collect();
                    probe.lock().unwrap().push(format!("{} {}", cm.name_any(), labels.join(",")));
                }
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_secs(1)).await;
            w.apply(&cms(&w), &config_map("a", "0")).await?;
            w.sleep(Duration::from_millis(100)).await;
            // A data change keeps the labels: filtered out.
            w.patch(&cms(&w), "a", &set_v("1")).await?;
            w.sleep(Duration::from_millis(100)).await;
            let labelled = Patch::Merge(serde_json::json!({ "metadata": { "labels": { "x": "y" } } }));
            w.patch(&cms(&w), "a", &labelled).await?;
            Ok(())
        })
        .run(3);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(*seen.lock().unwrap(), ["a ", "a x=y"]);
}

#[test]
fn a_shared_writer_sends_every_applied_object_to_its_subscribers_and_a_store_waits_for_its_list() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .controller("sharing", move |clients: Clients| {
            let probe = probe.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let (reader, writer) = reflector::store_shared::<ConfigMap>(16);
                let subscriber = writer.subscribe().expect("a shared writer has subscribers");
                let waiter: Store<ConfigMap> = reader.clone();
                let ready_probe = probe.clone();
                madsim::task::spawn_local(async move {
                    waiter.wait_until_ready().await.expect("the writer lives");
                    ready_probe.lock().unwrap().push(format!("ready with {}", waiter.len()));
                });
                let sub_probe = probe.clone();
                madsim::task::spawn_local(subscriber.for_each(move |cm| {
                    sub_probe.lock().unwrap().push(format!("shared {}", cm.name_any()));
                    async {}
                }));
                let found = ObjectRef::<ConfigMap>::new("a").within("default");
                watcher(api, watcher::Config::default())
                    .reflect_shared(writer)
                    .for_each(|_| {
                        if let Some(cm) = reader.get(&found) {
                            let v = cm.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default();
                            let line = format!("store a={v}");
                            let mut seen = probe.lock().unwrap();
                            if seen.last() != Some(&line) {
                                seen.push(line);
                            }
                        }
                        async {}
                    })
                    .await;
            }
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "0")).await?;
            w.sleep(Duration::from_secs(1)).await;
            w.patch(&cms(&w), "a", &set_v("1")).await?;
            Ok(())
        })
        .run(0);
    assert_eq!(report.verdict, Verdict::Pass);
    let seen = seen.lock().unwrap().clone();
    for wanted in ["ready with", "shared a", "store a=1"] {
        assert!(seen.iter().any(|line| line.starts_with(wanted)), "{wanted}: {seen:?}");
    }
    // Every change of `a` reached the subscriber: once listed or added, once patched.
    assert_eq!(seen.iter().filter(|line| *line == "shared a").count(), 2, "{seen:?}");
}

#[test]
fn a_graceful_shutdown_stops_new_reconciles_and_ends_the_run_stream() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .controller("stopping", move |clients: Clients| {
            let probe = probe.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                Controller::new(api, watcher::Config::default())
                    .graceful_shutdown_on(madsim::time::sleep(Duration::from_millis(1500)))
                    .run(
                        |cm: Arc<ConfigMap>, _ctx: Arc<()>| async move {
                            let _ = cm;
                            Ok::<_, Never>(Action::await_change())
                        },
                        |_, _: &Never, _| Action::await_change(),
                        Arc::new(()),
                    )
                    .for_each(|outcome| {
                        if let Ok((object, _)) = outcome {
                            probe.lock().unwrap().push(format!("reconciled {object}"));
                        }
                        async {}
                    })
                    .await;
                probe.lock().unwrap().push("stream ended".to_owned());
                // Stay up: a main future that returns is restarted like a Pod, which is not what
                // this test is about.
                std::future::pending::<()>().await;
            }
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("early", "0")).await?;
            w.sleep(Duration::from_secs(3)).await;
            w.apply(&cms(&w), &config_map("late", "0")).await?;
            Ok(())
        })
        .run(0);
    assert_eq!(report.verdict, Verdict::Pass);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["reconciled default/early", "stream ended"]);
}

/// kube's secret_syncer example builds its APIs inside the reconcile closure from the `client`
/// that `main` holds: a closure that borrows. kube's `Controller::run` takes it (its closures
/// need not be `'static`, only the futures they return), and so must the simulated one.
async fn borrowing_controller(client: sim::Client, seen: Seen) {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    Controller::new(cms, watcher::Config::default())
        .run(
            |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                // Borrows `client` and `seen`, locals of this function.
                let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
                seen.lock().unwrap().push(format!("reconcile {}", cm.name_any()));
                async move {
                    let copy = Secret {
                        metadata: ObjectMeta { name: Some(cm.name_any()), ..ObjectMeta::default() },
                        string_data: cm.data.clone(),
                        ..Secret::default()
                    };
                    secrets
                        .patch(&cm.name_any(), &PatchParams::apply("borrower"), &Patch::Apply(&copy))
                        .await?;
                    Ok::<_, sim::Error>(Action::await_change())
                }
            },
            |_, _, _| {
                seen.lock().unwrap().push("error".to_owned());
                Action::requeue(Duration::from_secs(1))
            },
            Arc::new(()),
        )
        .for_each(|_| async {})
        .await;
}

#[test]
fn controller_run_takes_closures_that_borrow_from_the_function_that_runs_it() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .controller("borrowing", move |clients: Clients| {
            borrowing_controller(clients.default_cluster(), probe.clone())
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            let copied =
                |s: Option<&Secret>| s.is_some_and(|s| s.data.as_ref().is_some_and(|d| d.contains_key("v")));
            w.wait_for(&secrets, "a", copied, Duration::from_secs(30)).await
        })
        .run(0);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.verdict);
    assert_eq!(seen.lock().unwrap().first().map(String::as_str), Some("reconcile a"));
}

#[test]
fn a_cloned_reflect_handle_yields_what_its_original_had_not_taken_then_everything_after() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .controller("cloning", move |clients: Clients| {
            let probe = probe.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let (_reader, writer) = reflector::store_shared::<ConfigMap>(16);
                let mut original = writer.subscribe().expect("a shared writer has subscribers");
                let mut stream =
                    std::pin::pin!(watcher(api, watcher::Config::default()).reflect_shared(writer));
                // Reflect until `a` and `b` were both dispatched, none of them taken yet.
                while !probe.lock().unwrap().contains(&"listed".to_owned()) {
                    if let Some(Ok(event)) = stream.next().await {
                        let line = event.to_string();
                        if line.starts_with("Apply(b)")
                            || (line == "InitDone" && original.reader().len() == 2)
                        {
                            probe.lock().unwrap().push("listed".to_owned());
                        }
                    }
                }
                let first = original.next().await.map(|cm| cm.name_any());
                // The clone starts where the original is: after `first`.
                let clone = original.clone();
                let rest = |handle: sim::runtime::reflector::ReflectHandle<ConfigMap>, who: &'static str| {
                    let probe = probe.clone();
                    madsim::task::spawn_local(handle.for_each(move |cm| {
                        probe.lock().unwrap().push(format!("{who} {}", cm.name_any()));
                        async {}
                    }))
                };
                probe.lock().unwrap().push(format!("original took {}", first.unwrap_or_default()));
                let _tasks = (rest(original, "original then"), rest(clone, "clone then"));
                stream.for_each(|_| async {}).await;
            }
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "0")).await?;
            w.apply(&cms(&w), &config_map("b", "0")).await?;
            w.sleep(Duration::from_secs(1)).await;
            w.apply(&cms(&w), &config_map("c", "0")).await?;
            Ok(())
        })
        .run(0);
    assert_eq!(report.verdict, Verdict::Pass);
    let seen = seen.lock().unwrap().clone();
    let of = |who: &str| -> Vec<String> {
        seen.iter().filter_map(|l| l.strip_prefix(&format!("{who} ")).map(str::to_owned)).collect()
    };
    assert_eq!(of("original took"), ["a"], "{seen:?}");
    assert_eq!(of("original then"), ["b", "c"], "{seen:?}");
    assert_eq!(of("clone then"), ["b", "c"], "{seen:?}");
}
