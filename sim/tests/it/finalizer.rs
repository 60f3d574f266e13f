//! The finalizer helper (`sim::runtime::finalizer`) keeps kube-runtime's contract: the finalizer
//! is added before Apply, Cleanup runs on deletion and then the object goes, and a concurrent
//! change to the finalizers makes the add fail on its `test` op (422 Invalid) and the controller
//! retry.

#[path = "common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use sim::runtime::controller::{Action, Config};
use sim::runtime::finalizer::{self, Event, finalizer};
use sim::runtime::{Controller, watcher};
use sim::{Clients, FnProperty, Sim, SimBuilder, Verdict};

use common::config_map;

const FINALIZER: &str = "kube-sim.test/cleanup";

/// The one failure a test injects into its reconciler.
#[derive(Debug, thiserror::Error)]
#[error("injected cleanup failure")]
struct Injected;

/// A misfortune the controller meets once per object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trick {
    /// None.
    None,
    /// Before the helper adds its finalizer, another finalizer is added behind its back (so the
    /// helper's view is stale).
    InterfereWithAdd,
    /// The first Cleanup fails.
    FailFirstCleanup,
}

/// What the controller saw, in order: `apply a [finalizers]`, `cleanup a`, `error: ...`.
type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

/// A ConfigMap controller over `default` that reconciles every object but `cleaned-*` through
/// `finalizer`: Apply logs the finalizers it saw, Cleanup creates `cleaned-<name>` as evidence.
/// `trick` happens once. Errors are logged and retried after 1s.
fn world(log: Log, trick: Trick) -> SimBuilder {
    Sim::builder().controller("finalizing", move |clients: Clients| {
        let log = log.clone();
        async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            let tricked = Arc::new(AtomicBool::new(false));
            let error_log = log.clone();
            Controller::new(api.clone(), watcher::Config::default())
                .with_config(Config::default())
                .run(
                    move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                        let (api, log, tricked) = (api.clone(), log.clone(), tricked.clone());
                        async move { reconcile(api, log, trick, tricked, cm).await }
                    },
                    move |_, error: &finalizer::Error<Injected>, _| {
                        push(&error_log, format!("error: {error}: {:?}", std::error::Error::source(error)));
                        Action::requeue(Duration::from_secs(1))
                    },
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        }
    })
}

async fn reconcile(
    api: Api<ConfigMap>,
    log: Log,
    trick: Trick,
    tricked: Arc<AtomicBool>,
    cm: Arc<ConfigMap>,
) -> Result<Action, finalizer::Error<Injected>> {
    if cm.name_any().starts_with("cleaned-") {
        return Ok(Action::await_change());
    }
    if trick == Trick::InterfereWithAdd && cm.finalizers().is_empty() && !tricked.swap(true, Ordering::SeqCst)
    {
        let patch = Patch::Merge(serde_json::json!({"metadata": {"finalizers": ["other.example/keep"]}}));
        api.patch(&cm.name_any(), &PatchParams::default(), &patch).await.unwrap();
    }
    finalizer(&api, FINALIZER, cm, |event| async {
        match event {
            Event::Apply(cm) => {
                push(&log, format!("apply {} {:?}", cm.name_any(), cm.finalizers()));
            }
            Event::Cleanup(cm) => {
                push(&log, format!("cleanup {}", cm.name_any()));
                if trick == Trick::FailFirstCleanup && !tricked.swap(true, Ordering::SeqCst) {
                    return Err(Injected);
                }
                let evidence = config_map(&format!("cleaned-{}", cm.name_any()), "done");
                match api.create(&PostParams::default(), &evidence).await {
                    Ok(_) => {}
                    // Cleanup must be idempotent: a retry finds its evidence already there.
                    Err(sim::Error::Api(status)) if status.code == 409 => {}
                    Err(e) => panic!("creating the evidence: {e}"),
                }
            }
        }
        Ok(Action::await_change())
    })
    .await
}

/// The names and finalizers of every ConfigMap in `default` at the end, in name order.
fn end_state(view: &sim::EndView<'_>) -> Vec<(String, Vec<String>)> {
    let cluster = view.cluster("default").expect("the default cluster exists");
    cluster
        .iter_resource("configmaps", Some("default"))
        .map(|(key, cm)| (key.name.to_string(), cm.metadata.finalizers.clone().unwrap_or_default()))
        .collect()
}

type Ends = Arc<Mutex<Vec<Vec<(String, Vec<String>)>>>>;

fn record_end(ends: &Ends) -> FnProperty {
    let ends = ends.clone();
    FnProperty::at_end("record the end state", move |view| {
        ends.lock().unwrap().push(end_state(view));
        Ok(())
    })
}

#[test]
fn the_finalizer_is_added_before_apply_runs() {
    for seed in 0..4 {
        let log = Log::default();
        let ends = Ends::default();
        let report = world(log.clone(), Trick::None)
            .workload(|w| async move {
                w.apply(&Api::namespaced(w.client(), "default"), &config_map("a", "1")).await?;
                Ok(())
            })
            .property(record_end(&ends))
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        // The first reconcile only adds the finalizer; the one its patch causes applies.
        assert_eq!(*log.lock().unwrap(), ["apply a [\"kube-sim.test/cleanup\"]"], "seed {seed}");
        assert_eq!(
            *ends.lock().unwrap(),
            [vec![("a".to_owned(), vec![FINALIZER.to_owned()])]],
            "seed {seed}"
        );
    }
}

#[test]
fn cleanup_runs_on_deletion_and_then_the_object_disappears() {
    for seed in 0..4 {
        let log = Log::default();
        let ends = Ends::default();
        let report = world(log.clone(), Trick::None)
            .workload(|w| async move {
                let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
                w.apply(&api, &config_map("a", "1")).await?;
                let has_finalizer = |cm: Option<&ConfigMap>| cm.is_some_and(|cm| !cm.finalizers().is_empty());
                w.wait_for(&api, "a", has_finalizer, Duration::from_secs(10)).await?;
                w.delete(&api, "a").await?;
                w.wait_for(&api, "a", |cm| cm.is_none(), Duration::from_secs(10)).await?;
                Ok(())
            })
            .property(record_end(&ends))
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let log = log.lock().unwrap().clone();
        assert_eq!(log.last().map(String::as_str), Some("cleanup a"), "seed {seed}: {log:?}");
        assert_eq!(log.iter().filter(|l| l.starts_with("cleanup")).count(), 1, "seed {seed}: {log:?}");
        assert_eq!(*ends.lock().unwrap(), [vec![("cleaned-a".to_owned(), vec![])]], "seed {seed}");
    }
}

#[test]
fn a_concurrent_finalizer_change_fails_the_add_with_422_and_the_retry_adds_it_after_the_other() {
    for seed in 0..4 {
        let log = Log::default();
        let ends = Ends::default();
        let report = world(log.clone(), Trick::InterfereWithAdd)
            .workload(|w| async move {
                w.apply(&Api::namespaced(w.client(), "default"), &config_map("a", "1")).await?;
                Ok(())
            })
            .property(record_end(&ends))
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let log = log.lock().unwrap().clone();
        // The helper tested `/metadata/finalizers` for null, but the list had become
        // ["other.example/keep"]: the server answered 422 Invalid (in apimachinery's generic words,
        // as kube-apiserver answers a JSON patch that does not apply), and nothing was added.
        assert_eq!(
            log.first().map(String::as_str),
            Some(
                "error: failed to add finalizer: ApiError: Invalid (422): the server rejected our request \
                 due to an error in our request: Some(Api(Status { status: Some(Failure), code: 422, \
                 message: \"the server rejected our request due to an error in our request\", metadata: \
                 None, reason: \"Invalid\", details: Some(StatusDetails { name: \"\", group: \"\", kind: \
                 \"\", uid: \"\", causes: [], retry_after_seconds: 0 }) }))"
            ),
            "seed {seed}: {log:?}"
        );
        // The retry saw the other finalizer, tested for exactly that list and appended its own.
        assert_eq!(
            log.last().map(String::as_str),
            Some("apply a [\"other.example/keep\", \"kube-sim.test/cleanup\"]"),
            "seed {seed}: {log:?}"
        );
        assert_eq!(
            *ends.lock().unwrap(),
            [vec![("a".to_owned(), vec!["other.example/keep".to_owned(), FINALIZER.to_owned()])]],
            "seed {seed}"
        );
    }
}

#[test]
fn a_failed_cleanup_keeps_the_finalizer_and_the_retry_cleans_up_and_removes_it() {
    for seed in 0..4 {
        let log = Log::default();
        let ends = Ends::default();
        let report = world(log.clone(), Trick::FailFirstCleanup)
            .workload(|w| async move {
                let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
                w.apply(&api, &config_map("a", "1")).await?;
                let has_finalizer = |cm: Option<&ConfigMap>| cm.is_some_and(|cm| !cm.finalizers().is_empty());
                w.wait_for(&api, "a", has_finalizer, Duration::from_secs(10)).await?;
                w.delete(&api, "a").await?;
                w.wait_for(&api, "a", |cm| cm.is_none(), Duration::from_secs(10)).await?;
                Ok(())
            })
            .property(record_end(&ends))
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let log = log.lock().unwrap().clone();
        // Cleanup runs again only because the finalizer stayed after the failure.
        assert_eq!(
            log[log.len() - 3..],
            [
                "cleanup a",
                "error: failed to clean up object: injected cleanup failure: Some(Injected)",
                "cleanup a"
            ],
            "seed {seed}: {log:?}"
        );
        assert_eq!(*ends.lock().unwrap(), [vec![("cleaned-a".to_owned(), vec![])]], "seed {seed}");
    }
}
