//! One test per runtime rule of the engine: the work queue, informers, clusters, the workload and
//! verdicts. Each uses a small purpose-built controller and asserts the rule on the run's trace.

#[path = "common/mod.rs"]
mod common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::ObjectMeta;
use model_apiserver::ServerConfig;
use sim::api::{Api, Patch, PatchParams, PostParams};
use sim::runtime::controller::{Action, Config};
use sim::runtime::reflector::ObjectRef;
use sim::runtime::{Controller, watcher};
use sim::{Clients, FnProperty, Sim, Verdict};

use common::*;

/// The error type of controllers that never fail.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// What a test controller's reconcile gets: the ConfigMaps of `default`, and a reconcile counter.
struct Ctx {
    api: Api<ConfigMap>,
    reconciles: AtomicU32,
}

/// Run a ConfigMap controller over `default` with `reconcile`, until the node dies.
async fn run_cm_controller<F, Fut>(clients: Clients, config: Config, reconcile: F)
where
    F: FnMut(Arc<ConfigMap>, Arc<Ctx>) -> Fut + 'static,
    Fut: Future<Output = Result<Action, Never>> + 'static,
{
    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
    let ctx = Arc::new(Ctx { api: api.clone(), reconciles: AtomicU32::new(0) });
    Controller::new(api, watcher::Config::default())
        .with_config(config)
        .run(reconcile, |_, _: &Never, _| Action::await_change(), ctx)
        .for_each(|_| async {})
        .await;
}

fn set_v(value: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "data": { "v": value } }))
}

fn cms(w: &sim::Workload) -> Api<ConfigMap> {
    Api::namespaced(w.client(), "default")
}

#[test]
fn a_copying_controller_converges_and_passes() {
    let report = Sim::builder()
        .controller("copier", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |cm, ctx| async move {
                let name = cm.metadata.name.clone().unwrap_or_default();
                if !name.starts_with("copy-")
                    && ctx.api.get_opt(&format!("copy-{name}")).await.unwrap().is_none()
                {
                    let copy = config_map(&format!("copy-{name}"), "copied");
                    ctx.api.create(&PostParams::default(), &copy).await.unwrap();
                }
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("copy exists", |view| {
            let cluster = view.cluster("default").expect("default cluster");
            let found =
                cluster.iter_resource("configmaps", Some("default")).any(|(key, _)| &*key.name == "copy-a");
            if found { Ok(()) } else { Err("no copy-a".to_owned()) }
        }))
        .keep_trace(true)
        .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    let objects: Vec<String> = reconcile_starts(&report).into_iter().map(|(_, o)| o).collect();
    assert_eq!(objects, ["ConfigMap default/a", "ConfigMap default/copy-a"]);
}

#[test]
fn an_earlier_request_replaces_a_later_queued_one() {
    // The first reconcile asks for a requeue in 60s; a change at 1s queues an earlier request for
    // the same object, which replaces the queued one: no third reconcile at 60s.
    let world = Sim::builder()
        .controller("dedupe", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |cm, _| async move {
                let first = cm.data.as_ref().and_then(|d| d.get("v")).is_some_and(|v| v == "1");
                Ok(if first { Action::requeue(Duration::from_secs(60)) } else { Action::await_change() })
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            w.sleep(Duration::from_secs(1)).await;
            w.patch(&cms(&w), "a", &set_v("2")).await?;
            w.sleep(Duration::from_secs(70)).await;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let starts = reconcile_starts(&report);
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert!(
            starts[1].0 > Duration::from_secs(1) && starts[1].0 < Duration::from_millis(1100),
            "{starts:?}"
        );
    }
}

#[test]
fn a_request_that_falls_due_during_a_reconcile_waits_for_it_to_finish() {
    let world = Sim::builder()
        .controller("slow", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, _| async move {
                madsim::time::sleep(Duration::from_secs(1)).await;
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            w.sleep(Duration::from_millis(200)).await;
            for v in ["2", "3", "4"] {
                w.patch(&cms(&w), "a", &set_v(v)).await?;
            }
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let starts = reconcile_starts(&report);
        let ends = reconcile_ends(&report);
        // Three changes during the first reconcile merge into one request, which runs after it.
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!(ends.len(), 2, "{ends:?}");
        assert_eq!(starts[1].0, ends[0].0, "the held request runs the moment the first reconcile ends");
    }
}

#[test]
fn a_requeue_is_due_at_finish_time_plus_requeue_after() {
    let world = Sim::builder()
        .controller("requeue", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, ctx| async move {
                madsim::time::sleep(Duration::from_millis(300)).await;
                Ok(if ctx.reconciles.fetch_add(1, Ordering::Relaxed) == 0 {
                    Action::requeue(Duration::from_secs(2))
                } else {
                    Action::await_change()
                })
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let starts = reconcile_starts(&report);
        let ends = reconcile_ends(&report);
        assert_eq!(starts.len(), 2, "{starts:?}");
        let gap = starts[1].0 - ends[0].0;
        assert!(gap >= Duration::from_secs(2) && gap < Duration::from_millis(2001), "gap {gap:?}");
    }
}

/// `(start, end)` times of the reconciles of `name`, in order.
fn reconciles_of(report: &sim::RunReport, name: &str) -> (Vec<Duration>, Vec<Duration>) {
    let of = |list: Vec<(Duration, String)>| {
        list.into_iter()
            .filter(|(_, object)| object.ends_with(&format!("/{name}")))
            .map(|(at, _)| at)
            .collect()
    };
    (of(reconcile_starts(report)), of(reconcile_ends(report)))
}

/// Whether the second reconcile started `after` the end of the first, to the millisecond.
fn second_ran_after(starts: &[Duration], ends: &[Duration], after: Duration) -> bool {
    let gap = starts[1] - ends[0];
    gap >= after && gap < after + Duration::from_millis(1)
}

/// The first reconcile of each ConfigMap named in `requeues` asks to run again after its
/// duration; every other reconcile waits for a change.
fn first_reconcile_requeues(
    requeues: &'static [(&'static str, Duration)],
) -> impl FnMut(Arc<ConfigMap>, Arc<Ctx>) -> std::future::Ready<Result<Action, Never>> {
    move |cm, ctx| {
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let action = match requeues.iter().position(|(n, _)| *n == name) {
            Some(i) if ctx.reconciles.fetch_or(1 << i, Ordering::Relaxed) & (1 << i) == 0 => {
                Action::requeue(requeues[i].1)
            }
            _ => Action::await_change(),
        };
        std::future::ready(Ok(action))
    }
}

#[test]
fn a_requeue_keeps_its_time_while_other_triggers_keep_the_controller_busy() {
    // `a` asks for a run 2 s later; meanwhile `b` changes every 150 ms, and each change is a round
    // of the controller's loop waiting for the same deadline.
    const REQUEUES: &[(&str, Duration)] = &[("a", Duration::from_secs(2))];
    let world = Sim::builder()
        .controller("busy", |clients: Clients| {
            run_cm_controller(clients, Config::default(), first_reconcile_requeues(REQUEUES))
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            for i in 0..20 {
                w.apply(&cms(&w), &config_map("b", &i.to_string())).await?;
                madsim::time::sleep(Duration::from_millis(150)).await;
            }
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let (starts, ends) = reconciles_of(&report, "a");
        assert_eq!(starts.len(), 2, "seed {seed}: {starts:?}");
        assert!(second_ran_after(&starts, &ends, Duration::from_secs(2)), "seed {seed}: {starts:?} {ends:?}");
        let (b_starts, _) = reconciles_of(&report, "b");
        let busy = b_starts.iter().filter(|at| **at > ends[0] && **at < starts[1]).count();
        assert!(busy >= 5, "seed {seed}: b ran {busy} times while a's requeue was pending");
    }
}

#[test]
fn an_earlier_requeue_runs_first_and_the_later_one_still_runs_on_time() {
    // `a` asks for 10 s, then `b`, created a second later, for 1 s: the controller's next due time
    // moves earlier, then back to `a`'s.
    const REQUEUES: &[(&str, Duration)] = &[("a", Duration::from_secs(10)), ("b", Duration::from_secs(1))];
    let world = Sim::builder()
        .controller("two", |clients: Clients| {
            run_cm_controller(clients, Config::default(), first_reconcile_requeues(REQUEUES))
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            madsim::time::sleep(Duration::from_secs(1)).await;
            w.apply(&cms(&w), &config_map("b", "1")).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let (a_starts, a_ends) = reconciles_of(&report, "a");
        let (b_starts, b_ends) = reconciles_of(&report, "b");
        assert_eq!((a_starts.len(), b_starts.len()), (2, 2), "seed {seed}: {a_starts:?} {b_starts:?}");
        let b_on_time = second_ran_after(&b_starts, &b_ends, Duration::from_secs(1));
        assert!(b_on_time, "seed {seed}: b {b_starts:?} {b_ends:?}");
        let a_on_time = second_ran_after(&a_starts, &a_ends, Duration::from_secs(10));
        assert!(a_on_time, "seed {seed}: a {a_starts:?} {a_ends:?}");
        assert!(b_starts[1] < a_starts[1], "seed {seed}");
    }
}

#[test]
fn a_periodic_requeue_that_changes_nothing_runs_once_then_lets_the_world_quiesce() {
    // Every reconcile reads and asks to run again in five minutes, as controller-rs does. The
    // liveness phase runs the first requeue (it might write); that one changes nothing, so its
    // own requeue is a periodic no-op and the world is quiet.
    let world = Sim::builder()
        .controller("periodic", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, ctx| async move {
                ctx.api.get_opt("a").await.unwrap();
                Ok(Action::requeue(Duration::from_secs(300)))
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let starts = reconcile_starts(&report);
        let ends = reconcile_ends(&report);
        assert_eq!(starts.len(), 2, "seed {seed}: {starts:?}");
        let gap = starts[1].0 - ends[0].0;
        assert!(gap >= Duration::from_secs(300) && gap < Duration::from_millis(300_001), "gap {gap:?}");
        // The run ends in the quiet period after the second reconcile, not at the third.
        let end = Duration::from_millis(report.stats.virtual_millis);
        assert!(end < ends[1].0 + Duration::from_secs(10), "seed {seed}: ended at {end:?}");
    }
}

/// A TTL controller: a ConfigMap is marked expired once it is [`TTL`] old. The reconcile that sees
/// a younger one writes nothing and requeues for the remaining time.
async fn expire_after_ttl(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Never> {
    const TTL: Duration = Duration::from_secs(120);
    if cm.data.as_ref().is_some_and(|d| d.contains_key("expired")) {
        return Ok(Action::await_change());
    }
    let created = cm.metadata.creation_timestamp.as_ref().expect("the server stamps it").0;
    let age = Duration::try_from(sim::time::now().duration_since(created)).unwrap_or_default();
    if age < TTL {
        return Ok(Action::requeue(TTL - age));
    }
    let name = cm.metadata.name.clone().unwrap_or_default();
    let patch = Patch::Merge(serde_json::json!({ "data": { "expired": "true" } }));
    ctx.api.patch(&name, &PatchParams::default(), &patch).await.unwrap();
    Ok(Action::await_change())
}

#[test]
fn a_write_on_a_delayed_requeue_happens_before_the_end_checks() {
    let world = Sim::builder()
        .controller("ttl", |clients: Clients| run_cm_controller(clients, Config::default(), expire_after_ttl))
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("expired", |view| {
            let cluster = view.cluster("default").expect("default cluster");
            let (_, a) = cluster
                .iter_resource("configmaps", Some("default"))
                .find(|(key, _)| &*key.name == "a")
                .ok_or_else(|| "a is gone".to_owned())?;
            let expired = a.data.get("data").and_then(|d| d.get("expired")).is_some();
            if expired { Ok(()) } else { Err("a is not expired".to_owned()) }
        }))
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        // The trigger, the requeue at 120 s that writes, and the trigger of that write.
        assert_eq!(reconcile_starts(&report).len(), 3, "seed {seed}");
        assert!(report.stats.virtual_millis >= 120_000, "seed {seed}: {}", report.stats.virtual_millis);
    }
}

#[test]
fn a_controller_that_writes_on_every_periodic_requeue_is_reported_after_the_bound() {
    let report = Sim::builder()
        .controller("ticker", |clients: Clients| {
            // Stamps the current ten-second tick: the trigger of its own write finds the same
            // tick (a no-op patch), each requeue ten seconds later writes a new one.
            run_cm_controller(clients, Config::default(), |_, ctx| async move {
                let tick = sim::time::elapsed().unwrap().as_secs() / 10;
                ctx.api.patch("a", &PatchParams::default(), &set_v(&tick.to_string())).await.unwrap();
                Ok(Action::requeue(Duration::from_secs(10)))
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "start")).await?;
            Ok(())
        })
        .time_limit(Duration::from_secs(100_000))
        .run(1);
    let Verdict::Liveness { reason } = &report.verdict else { panic!("{:?}", report.verdict) };
    assert!(reason.starts_with("did not quiesce: controller ticker has a requeue due at "), "{reason}");
    assert!(
        reason.ends_with(&format!(
            "ms that may still write (not a periodic no-op), after {} such requeues ran in the liveness phase",
            sim::world::LIVENESS_REQUEUES_MAX
        )),
        "{reason}"
    );
}

#[test]
fn an_idle_requeue_that_writes_keeps_running_but_lets_the_world_quiesce() {
    // The ticker above, with `Action::requeue_idle`: what the world does on its own schedule (a
    // container's restart back-off). Its writes go on while the workload waits, and the world is
    // quiet between them: the run passes, ending a quiet period after the workload, not at the
    // liveness bound.
    let report = Sim::builder()
        .controller("ticker", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, ctx| async move {
                let tick = sim::time::elapsed().unwrap().as_secs() / 10;
                ctx.api.patch("a", &PatchParams::default(), &set_v(&tick.to_string())).await.unwrap();
                Ok(Action::requeue_idle(Duration::from_secs(10)))
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "start")).await?;
            madsim::time::sleep(Duration::from_secs(35)).await;
            Ok(())
        })
        .time_limit(Duration::from_secs(100_000))
        .keep_trace(true)
        .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    let starts = reconcile_starts(&report);
    // The first trigger, then one requeue every ten seconds while the workload waits (and the
    // triggers of their own writes); none after the run's end.
    let requeues = starts.windows(2).filter(|w| w[1].0 - w[0].0 >= Duration::from_secs(9)).count();
    assert!(requeues >= 3, "{starts:?}");
    let end = Duration::from_millis(report.stats.virtual_millis);
    assert!(end < Duration::from_secs(60), "ended at {end:?}");
    assert!(Action::requeue_idle(Duration::from_secs(1)).is_idle_requeue());
    assert!(!Action::requeue(Duration::from_secs(1)).is_idle_requeue());
    assert_eq!(Action::requeue_idle(Duration::from_secs(1)).to_string(), "requeue 1000ms");
}

#[test]
fn a_write_on_a_requeue_due_past_the_time_limit_is_reported_as_such() {
    let report = Sim::builder()
        .controller("ttl", |clients: Clients| run_cm_controller(clients, Config::default(), expire_after_ttl))
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .time_limit(Duration::from_secs(60))
        .run(1);
    let Verdict::Liveness { reason } = &report.verdict else { panic!("{:?}", report.verdict) };
    assert!(reason.starts_with("did not quiesce: controller ttl has a requeue due at "), "{reason}");
    assert!(
        reason.ends_with(
            "ms that may still write (not a periodic no-op), beyond the time limit of 60s (SimBuilder::time_limit)"
        ),
        "{reason}"
    );
}

fn parent(name: &str) -> ConfigMap {
    let mut cm = config_map(name, "parent");
    cm.metadata.labels = Some([("role".to_owned(), "parent".to_owned())].into());
    cm
}

fn owner(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: format!("uid-{name}"),
        ..OwnerReference::default()
    }
}

fn child(name: &str, owners: Vec<OwnerReference>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

/// A controller of parent ConfigMaps owning Secrets, started after `delay`.
async fn run_parent_controller(clients: Clients, delay: Duration) {
    madsim::time::sleep(delay).await;
    let client = clients.default_cluster();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let children: Api<Secret> = Api::namespaced(client, "default");
    Controller::new(parents, watcher::Config::default().labels("role=parent"))
        .owns(children, watcher::Config::default())
        .run(
            |_, _| async { Ok::<_, Never>(Action::await_change()) },
            |_, _, _| Action::await_change(),
            Arc::new(()),
        )
        .for_each(|_| async {})
        .await;
}

#[test]
fn the_first_reconcile_waits_for_the_main_cache_initial_list() {
    let mut owned_listed_first = 0;
    for seed in 0..20 {
        let report = Sim::builder()
            .controller("parents", |clients: Clients| run_parent_controller(clients, Duration::from_secs(1)))
            .workload(|w| async move {
                w.apply(&cms(&w), &parent("p")).await?;
                let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
                w.apply(&secrets, &child("s", vec![owner("v1", "ConfigMap", "p")])).await?;
                Ok(())
            })
            .keep_trace(true)
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let lists = relists(&report);
        let main_list =
            lists.iter().find(|(_, watch, _)| watch == "default/configmaps/default").expect("main list");
        let owned_list =
            lists.iter().find(|(_, watch, _)| watch == "default/secrets/default").expect("owned list");
        let starts = reconcile_starts(&report);
        if owned_list.0 < main_list.0 {
            owned_listed_first += 1;
            // The owned list's trigger waited for the main list and merged with its trigger.
            assert_eq!(starts.len(), 1, "seed {seed}: {starts:?}");
        }
        assert!(!starts.is_empty(), "seed {seed}: no reconcile");
        assert_eq!(starts[0].1, "ConfigMap default/p");
        assert!(
            starts[0].0 >= main_list.0,
            "seed {seed}: reconcile at {:?} before the list at {:?}",
            starts[0].0,
            main_list.0
        );
    }
    assert!(owned_listed_first > 0, "no seed listed the owned kind first: the rule was not exercised");
}

#[test]
fn a_store_is_ready_once_its_initial_list_is_applied_without_anyone_waiting_for_it() {
    for seed in 0..5 {
        // (is_ready, len) just after the reflector starts, then after its list had time to land.
        let seen: Arc<std::sync::Mutex<Vec<(bool, usize)>>> = Arc::default();
        let probe = seen.clone();
        let report = Sim::builder()
            .controller("reader", move |clients: Clients| {
                let probe = probe.clone();
                async move {
                    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                    let store = sim::runtime::reflector::informer(api, watcher::Config::default());
                    probe.lock().unwrap().push((store.is_ready(), store.len()));
                    // Nobody awaits `wait_until_ready`: readiness must not depend on a poll.
                    madsim::time::sleep(Duration::from_secs(1)).await;
                    probe.lock().unwrap().push((store.is_ready(), store.len()));
                    // Stay up: a main future that returns is restarted like a Pod (after 10 s),
                    // and the restarted one would probe again.
                    std::future::pending::<()>().await;
                }
            })
            .workload(|w| async move {
                w.apply(&cms(&w), &config_map("a", "1")).await?;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(*seen.lock().unwrap(), vec![(false, 0), (true, 1)], "seed {seed}");
    }
}

#[test]
fn owns_maps_every_owner_reference_of_the_main_kind_and_no_other() {
    let world = Sim::builder()
        .controller("parents", |clients: Clients| run_parent_controller(clients, Duration::ZERO))
        .workload(|w| async move {
            for name in ["p1", "p2", "p3"] {
                w.apply(&cms(&w), &parent(name)).await?;
            }
            w.sleep(Duration::from_secs(3)).await;
            w.note("children");
            let owners = vec![
                owner("v1", "ConfigMap", "p1"),
                owner("v1", "Secret", "p2"),
                owner("v1", "ConfigMap", "p3"),
                owner("apps/v1", "Deployment", "p2"),
            ];
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            w.apply(&secrets, &child("s", owners)).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let mut after: Vec<String> = reconcile_starts(&report)
            .into_iter()
            .filter(|(at, _)| *at > Duration::from_secs(3))
            .map(|(_, object)| object)
            .collect();
        after.sort();
        assert_eq!(after, ["ConfigMap default/p1", "ConfigMap default/p3"]);
    }
}

#[test]
fn owns_shared_stream_maps_a_shared_informers_children_to_owners_whose_reconciles_read_its_cache() {
    // What each reconcile of a parent saw in the shared Secret cache: "parent: child names".
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let probe = seen.clone();
    let world = Sim::builder()
        .controller("parents", move |clients: Clients| {
            let probe = probe.clone();
            async move {
                let client = clients.default_cluster();
                let parents: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
                let children: Api<Secret> = Api::namespaced(client, "default");
                let secrets = sim::runtime::reflector::informer(children, watcher::Config::default());
                let ctx = Arc::new((secrets.clone(), probe));
                Controller::new(parents, watcher::Config::default().labels("role=parent"))
                    .owns_shared_stream(secrets.subscribe())
                    .run(
                        |cm: Arc<ConfigMap>, ctx: Arc<(sim::runtime::reflector::Store<Secret>, Seen)>| async move {
                            let name = cm.metadata.name.clone().unwrap_or_default();
                            let mut owned: Vec<String> = ctx
                                .0
                                .state()
                                .iter()
                                .filter(|s| s.metadata.owner_references.iter().flatten().any(|o| o.name == name))
                                .map(|s| s.metadata.name.clone().unwrap_or_default())
                                .collect();
                            owned.sort();
                            ctx.1.lock().unwrap().push(format!("{name}: {}", owned.join(",")));
                            Ok::<_, Never>(Action::await_change())
                        },
                        |_, _, _| Action::await_change(),
                        ctx,
                    )
                    .for_each(|_| async {})
                    .await;
            }
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &parent("p1")).await?;
            w.apply(&cms(&w), &parent("p2")).await?;
            w.sleep(Duration::from_secs(3)).await;
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            w.apply(&secrets, &child("s", vec![owner("v1", "ConfigMap", "p1"), owner("v1", "Secret", "p2")]))
                .await?;
            Ok(())
        });
    for seed in 0..5 {
        seen.lock().unwrap().clear();
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let mut lines = seen.lock().unwrap().clone();
        lines.sort();
        // Each parent once at the start; then only p1, which owns the child, and sees it cached.
        assert_eq!(lines, ["p1: ", "p1: s", "p2: "], "seed {seed}");
    }
}

/// What a test controller saw, one line per reconcile.
type Seen = Arc<std::sync::Mutex<Vec<String>>>;

/// A world whose server keeps 3 revisions, and a workload that creates 20 ConfigMaps at once,
/// so that the informer's watch falls behind the compaction.
fn compacting_world() -> sim::SimBuilder {
    Sim::builder()
        .server_config(ServerConfig { history_revisions_max: 3, ..ServerConfig::default() })
        .controller("noop", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, _| async { Ok(Action::await_change()) })
        })
        .workload(|w| async move {
            // After the informer's initial list, so that its watch has to keep up.
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
        .keep_trace(true)
}

#[test]
fn a_watch_from_a_compacted_revision_gets_410_and_relists() {
    let world = compacting_world();
    for seed in 0..10 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let errors: Vec<_> = deliveries(&report).into_iter().filter(|d| d.1 == "ERROR").collect();
        assert!(!errors.is_empty(), "seed {seed}: no 410 was delivered");
        assert!(errors.iter().all(|d| d.3 == 410), "seed {seed}: {errors:?}");
        let entries = entries(&report);
        let error_at = entries
            .iter()
            .position(|e| matches!(&e.event, sim::TraceEvent::WatchDelivery { kind: "ERROR", .. }))
            .expect("error entry");
        let relisted = entries[error_at..].iter().any(|e| matches!(&e.event, sim::TraceEvent::Relist { .. }));
        assert!(relisted, "seed {seed}: no relist after the 410");
    }
}

#[test]
fn a_relist_re_triggers_every_object() {
    let world = compacting_world();
    for seed in 0..10 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let lists = relists(&report);
        assert!(lists.len() >= 2, "seed {seed}: {lists:?}");
        let (last_at, _, items) = lists.last().cloned().expect("a relist");
        let mut after: Vec<String> = reconcile_starts(&report)
            .into_iter()
            .filter(|(at, _)| *at >= last_at)
            .map(|(_, object)| object)
            .collect();
        after.sort();
        after.dedup();
        // The relisted objects are reconciled again after the relist, and those created after it
        // when their ADDED arrives: all 20.
        assert!(items > 0, "seed {seed}: the last relist was empty");
        assert_eq!(after.len(), 20, "seed {seed}: {after:?}");
    }
}

#[test]
fn events_of_one_watch_arrive_in_resource_version_order() {
    for seed in 0..10 {
        let report = Sim::builder()
            .controller("noop", |clients: Clients| {
                run_cm_controller(clients, Config::default(), |_, _| async { Ok(Action::await_change()) })
            })
            .workload(|w| async move {
                w.apply(&cms(&w), &config_map("a", "0")).await?;
                for v in 1..10 {
                    w.patch(&cms(&w), "a", &set_v(&v.to_string())).await?;
                }
                w.apply(&cms(&w), &config_map("b", "0")).await?;
                w.delete(&cms(&w), "a").await?;
                Ok(())
            })
            .keep_trace(true)
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let rvs: Vec<u64> = deliveries(&report).into_iter().map(|d| d.3).collect();
        assert!(!rvs.is_empty(), "seed {seed}: no deliveries");
        assert!(rvs.windows(2).all(|w| w[0] < w[1]), "seed {seed}: {rvs:?}");
    }
}

#[test]
fn deliveries_across_two_watches_interleave_differently_between_seeds() {
    let mut orders = std::collections::BTreeSet::new();
    let mut reordered_seeds = 0;
    for seed in 0..20 {
        let report = Sim::builder()
            .controller("parents", |clients: Clients| run_parent_controller(clients, Duration::ZERO))
            .workload(|w| async move {
                w.sleep(Duration::from_millis(100)).await;
                let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
                let (parents, pp) = (cms(&w), PostParams::default());
                for i in 0..5 {
                    let (p, s) = (parent(&format!("p{i}")), child(&format!("s{i}"), vec![]));
                    let (a, b) = futures::join!(parents.create(&pp, &p), secrets.create(&pp, &s));
                    a.expect("create parent");
                    b.expect("create child");
                }
                Ok(())
            })
            .keep_trace(true)
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let delivered = deliveries(&report);
        assert_eq!(delivered.len(), 10, "seed {seed}: {delivered:?}");
        if delivered.windows(2).any(|w| w[0].3 > w[1].3) {
            reordered_seeds += 1;
        }
        orders.insert(delivered.into_iter().map(|d| d.2).collect::<Vec<_>>());
    }
    assert!(orders.len() > 1, "every seed delivered in the same order");
    assert!(reordered_seeds > 0, "no seed delivered across watches out of revision order");
}

#[test]
fn a_syncer_copies_config_maps_from_one_cluster_to_another() {
    let report = Sim::builder()
        .cluster("super")
        .cluster("tenant")
        .controller("syncer", |clients: Clients| async move {
            let source: Api<ConfigMap> = Api::namespaced(clients.cluster("super"), "default");
            let target: Api<ConfigMap> = Api::namespaced(clients.cluster("tenant"), "default");
            Controller::new(source, watcher::Config::default())
                .run(
                    |cm: Arc<ConfigMap>, target: Arc<Api<ConfigMap>>| async move {
                        let name = cm.metadata.name.clone().unwrap_or_default();
                        let mut copy = config_map(&name, "");
                        copy.data = cm.data.clone();
                        match target.get_opt(&name).await? {
                            None => target.create(&PostParams::default(), &copy).await.map(|_| ())?,
                            Some(existing) if existing.data == copy.data => {}
                            Some(existing) => {
                                copy.metadata.resource_version = existing.metadata.resource_version;
                                target.replace(&name, &PostParams::default(), &copy).await.map(|_| ())?;
                            }
                        }
                        Ok::<_, sim::Error>(Action::await_change())
                    },
                    |_, _, _| Action::requeue(Duration::from_secs(1)),
                    Arc::new(target),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.clients().cluster("super"), "default");
            for i in 0..3 {
                w.apply(&api, &config_map(&format!("cm-{i}"), "1")).await?;
            }
            w.patch(&api, "cm-1", &set_v("2")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("tenant mirrors super", |view| {
            let data = |cluster: &str| -> Vec<(String, serde_json::Value)> {
                view.cluster(cluster)
                    .expect("cluster")
                    .iter_resource("configmaps", Some("default"))
                    .filter(|(key, _)| key.name.starts_with("cm-"))
                    .map(|(key, o)| (key.name.to_string(), o.data["data"].clone()))
                    .collect()
            };
            let (source, target) = (data("super"), data("tenant"));
            if source.len() == 3 && source == target {
                Ok(())
            } else {
                Err(format!("{source:?} != {target:?}"))
            }
        }))
        .run(4);
    assert_eq!(report.verdict, Verdict::Pass);
}

#[test]
fn a_failed_workload_step_fails_the_run_naming_the_step() {
    let report = Sim::builder()
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("good", "1")).await?;
            w.apply(&cms(&w), &config_map("Bad_Name", "1")).await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(property, "workload");
    assert_eq!(
        message,
        "step 2: apply ConfigMap default/Bad_Name: 422 Invalid: ConfigMap \"Bad_Name\" is invalid: metadata.name: \
         Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
         characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
         used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
}

#[test]
fn a_panicking_reconcile_gets_a_crash_verdict_naming_node_and_object() {
    let report = Sim::builder()
        .controller("crasher", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |cm, _| async move {
                if cm.metadata.name.as_deref() == Some("explode") {
                    panic!("boom");
                }
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("fine", "1")).await?;
            w.apply(&cms(&w), &config_map("explode", "1")).await?;
            Ok(())
        })
        .run(9);
    assert_eq!(
        report.verdict,
        Verdict::Crash {
            node: "crasher".to_owned(),
            object: Some("ConfigMap default/explode".to_owned()),
            message: "boom".to_owned(),
        }
    );
    assert_eq!(report.seed, 9);
}

#[test]
fn a_world_where_every_task_waits_forever_gets_a_deadlock_verdict() {
    let report = Sim::builder()
        .controller("stuck", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_, ctx| async move {
                // Waits for a reconcile count that only this reconcile could raise.
                futures::future::poll_fn(|_| {
                    if ctx.reconciles.load(Ordering::Relaxed) > 0 {
                        std::task::Poll::Ready(())
                    } else {
                        std::task::Poll::Pending
                    }
                })
                .await;
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            // Waits for the controller, without a timeout.
            futures::future::pending::<()>().await;
            Ok(())
        })
        .run(13);
    assert_eq!(
        report.verdict,
        Verdict::Liveness { reason: "deadlock: no events, all tasks will block forever".to_owned() }
    );
    assert_eq!(report.seed, 13);
}

#[test]
fn a_controller_that_writes_on_every_reconcile_gets_a_liveness_verdict() {
    let report = Sim::builder()
        .liveness_wait(Duration::from_secs(5))
        .controller("churn", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |cm, ctx| async move {
                let name = cm.metadata.name.clone().unwrap_or_default();
                let next = cm.metadata.resource_version.clone().unwrap_or_default();
                ctx.api.patch(&name, &PatchParams::default(), &set_v(&next)).await.unwrap();
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .run(21);
    let Verdict::Liveness { reason } = &report.verdict else {
        panic!("expected a liveness verdict, got {:?}", report.verdict);
    };
    assert!(reason.starts_with("did not quiesce within 5s: last write at "), "{reason}");
    assert_eq!(report.seed, 21);
}

#[test]
fn a_reconcile_that_never_ends_is_named_in_the_liveness_verdict() {
    let report = Sim::builder()
        .liveness_wait(Duration::from_secs(5))
        .controller("stuck", |clients: Clients| {
            run_cm_controller(clients, Config::default(), |_cm, _ctx| async move {
                madsim::time::sleep(Duration::from_secs(3_600)).await;
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .run(22);
    assert_eq!(
        report.verdict,
        Verdict::Liveness { reason: "did not quiesce within 5s: controller stuck reconciling".to_owned() }
    );
}

#[test]
fn a_run_past_its_time_limit_gets_a_liveness_verdict() {
    let report = Sim::builder()
        .time_limit(Duration::from_secs(10))
        .workload(|w| async move {
            w.sleep(Duration::from_secs(100)).await;
            Ok(())
        })
        .run(3);
    assert_eq!(report.verdict, Verdict::Liveness { reason: "time limit of 10s exceeded".to_owned() });
}

#[test]
fn a_safety_property_fails_the_run_at_the_write_that_breaks_it() {
    let report = Sim::builder()
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("allowed", "1")).await?;
            w.apply(&cms(&w), &config_map("forbidden", "1")).await?;
            w.apply(&cms(&w), &config_map("after", "1")).await?;
            Ok(())
        })
        .property(FnProperty::always("no forbidden ConfigMap", |view| {
            let cluster = view.cluster("default").expect("default cluster");
            match cluster
                .iter_resource("configmaps", Some("default"))
                .find(|(key, _)| &*key.name == "forbidden")
            {
                Some(_) => Err("ConfigMap default/forbidden exists".to_owned()),
                None => Ok(()),
            }
        }))
        .keep_trace(true)
        .run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(property, "no forbidden ConfigMap");
    assert_eq!(message, "ConfigMap default/forbidden exists");
    let creates = entries(&report)
        .iter()
        .filter(|e| matches!(&e.event, sim::TraceEvent::ApiRequest { verb: "create", .. }))
        .count();
    assert_eq!(creates, 2, "the run stops at the breaking write");
}

#[test]
fn watches_maps_each_changed_object_through_the_mapper() {
    // Secrets named `for-<parent>` map to the parent ConfigMap of that name.
    let world = Sim::builder()
        .controller("mapper", |clients: Clients| async move {
            let client = clients.default_cluster();
            let parents: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
            let secrets: Api<Secret> = Api::namespaced(client, "default");
            Controller::new(parents, watcher::Config::default().labels("role=parent"))
                .watches(secrets, watcher::Config::default(), |secret: Secret| {
                    let name = secret.metadata.name.unwrap_or_default();
                    name.strip_prefix("for-").map(|parent| ObjectRef::new(parent).within("default"))
                })
                .run(
                    |_, _| async { Ok::<_, Never>(Action::await_change()) },
                    |_, _, _| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            for name in ["p1", "p2"] {
                w.apply(&cms(&w), &parent(name)).await?;
            }
            w.sleep(Duration::from_secs(3)).await;
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            w.apply(&secrets, &child("for-p2", vec![])).await?;
            w.apply(&secrets, &child("unrelated", vec![])).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let after: Vec<String> = reconcile_starts(&report)
            .into_iter()
            .filter(|(at, _)| *at > Duration::from_secs(3))
            .map(|(_, object)| object)
            .collect();
        assert_eq!(after, ["ConfigMap default/p2"]);
    }
}

#[test]
fn a_concurrency_limit_of_one_runs_reconciles_one_after_another() {
    let world = Sim::builder()
        .controller("serial", |clients: Clients| {
            run_cm_controller(clients, Config::default().concurrency(1), |_, _| async move {
                madsim::time::sleep(Duration::from_millis(100)).await;
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            for name in ["a", "b", "c"] {
                w.apply(&cms(&w), &config_map(name, "1")).await?;
            }
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let starts = reconcile_starts(&report);
        let ends = reconcile_ends(&report);
        assert_eq!(starts.len(), 3, "{starts:?}");
        for i in 1..3 {
            assert!(starts[i].0 >= ends[i - 1].0, "reconcile {i} started before the previous one ended");
        }
    }
}

#[test]
fn a_field_selector_limits_what_the_controller_sees() {
    let world = Sim::builder()
        .controller("one", |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            Controller::new(api, watcher::Config::default().fields("metadata.name=chosen"))
                .run(
                    |_, _| async { Ok::<_, Never>(Action::await_change()) },
                    |_, _, _| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            for name in ["other", "chosen", "another"] {
                w.apply(&cms(&w), &config_map(name, "1")).await?;
            }
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let objects: Vec<String> = reconcile_starts(&report).into_iter().map(|(_, o)| o).collect();
        assert_eq!(objects, ["ConfigMap default/chosen"]);
    }
}

#[test]
fn a_field_selector_on_a_pod_field_limits_the_controller_to_the_pods_of_one_node() {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    let pod = |name: &str, node: Option<&str>| Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(Into::into),
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    let world = Sim::builder()
        .controller("node-1", |clients: Clients| async move {
            let api: Api<Pod> = Api::namespaced(clients.default_cluster(), "default");
            Controller::new(api, watcher::Config::default().fields("spec.nodeName=node-1"))
                .run(
                    |_, _| async { Ok::<_, Never>(Action::await_change()) },
                    |_, _, _| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(move |w| async move {
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&pods, &pod("elsewhere", Some("node-2"))).await?;
            w.apply(&pods, &pod("here", Some("node-1"))).await?;
            w.apply(&pods, &pod("unscheduled", None)).await?;
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let objects: Vec<String> = reconcile_starts(&report).into_iter().map(|(_, o)| o).collect();
        assert_eq!(objects, ["Pod default/here"], "seed {seed}");
    }
}

#[test]
fn a_full_queue_drops_the_request_and_says_so_in_the_trace() {
    let config = Config { queue_len_max: 1, ..Config::default().concurrency(1) };
    let world = Sim::builder()
        .controller("small", move |clients: Clients| {
            run_cm_controller(clients, config.clone(), |_, _| async move {
                madsim::time::sleep(Duration::from_secs(1)).await;
                Ok(Action::await_change())
            })
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            w.sleep(Duration::from_millis(100)).await;
            for name in ["b", "c"] {
                w.apply(&cms(&w), &config_map(name, "1")).await?;
            }
            Ok(())
        })
        .keep_trace(true);
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let notes: Vec<&str> = entries(&report)
            .iter()
            .filter_map(|e| match &e.event {
                sim::TraceEvent::Note { text } if text.starts_with("queue full") => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(notes, ["queue full (1 objects): request for ConfigMap default/c dropped"]);
        let objects: Vec<String> = reconcile_starts(&report).into_iter().map(|(_, o)| o).collect();
        assert_eq!(objects, ["ConfigMap default/a", "ConfigMap default/b"]);
    }
}

#[test]
fn a_controller_that_panics_outside_a_reconcile_gets_a_crash_verdict_without_object() {
    let report = Sim::builder()
        .controller("broken", |_clients: Clients| async move {
            madsim::time::sleep(Duration::from_millis(5)).await;
            panic!("bad configuration");
        })
        .workload(|w| async move {
            w.sleep(Duration::from_secs(1)).await;
            Ok(())
        })
        .run(12);
    assert_eq!(
        report.verdict,
        Verdict::Crash { node: "broken".to_owned(), object: None, message: "bad configuration".to_owned() }
    );
}

#[test]
fn a_panicking_workload_gets_a_crash_verdict_naming_the_workload_node() {
    let report = Sim::builder()
        .workload(|_w| async move {
            let parsed: Result<u32, _> = "not a number".parse();
            parsed.expect("a number");
            Ok(())
        })
        .run(12);
    assert_eq!(
        report.verdict,
        Verdict::Crash {
            node: "workload".to_owned(),
            object: None,
            message: "a number: ParseIntError { kind: InvalidDigit }".to_owned(),
        }
    );
}

/// A reconcile error with a message worth repeating.
#[derive(Debug, thiserror::Error)]
#[error("the upstream database refused the connection")]
struct Refused;

#[test]
fn a_liveness_verdict_of_a_controller_in_an_error_loop_names_the_error_it_keeps_hitting() {
    let report = Sim::builder()
        .liveness_wait(Duration::from_secs(5))
        .controller("flaky", |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            Controller::new(api, watcher::Config::default())
                .run(
                    |_cm, _ctx: Arc<()>| async { Err::<Action, _>(Refused) },
                    |_, _: &Refused, _| Action::requeue(Duration::from_millis(500)),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a", "1")).await?;
            Ok(())
        })
        .run(1);
    let Verdict::Liveness { reason } = &report.verdict else {
        panic!("expected a liveness verdict, got {:?}", report.verdict);
    };
    assert!(reason.contains("controller flaky"), "{reason}");
    assert!(
        reason.contains("reconciles failed; the last, of ConfigMap default/a: error: the upstream database refused the connection"),
        "{reason}"
    );
}

/// A reconcile's outcome reads as the trace shows it: the requeue delay in whole milliseconds,
/// exact even beyond what a u64 of milliseconds holds.
#[test]
fn an_action_reads_as_its_requeue_delay_in_whole_milliseconds() {
    assert_eq!(Action::requeue(Duration::from_secs(300)).to_string(), "requeue 300000ms");
    assert_eq!(Action::requeue(Duration::from_micros(1_500)).to_string(), "requeue 1ms");
    assert_eq!(Action::await_change().to_string(), "await change");
    assert_eq!(Action::requeue(Duration::MAX).to_string(), "requeue 18446744073709551615999ms");
}
