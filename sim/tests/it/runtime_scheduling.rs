//! kube-runtime's `scheduler` on virtual time (kube-runtime's own scheduler tests, by their
//! rules): due messages come out at their time, duplicates keep the earlier request, a debounce
//! merges bursts, `hold_unless` keeps refused messages pending; and the controller's
//! `ReconcileRequest` and `ReconcileReason`.

use std::cmp::Ordering;
use std::future::Future;
use std::pin::pin;
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt, poll};
use k8s_openapi::api::core::v1::ConfigMap;
use sim::runtime::controller::{ReconcileReason, ReconcileRequest};
use sim::runtime::reflector::ObjectRef;
use sim::runtime::scheduler::{ScheduleRequest, debounced_scheduler, scheduler};

/// Run `test` on a fresh madsim runtime (virtual time: sleeps pass at once, in order).
fn run(test: impl Future<Output = ()> + 'static) {
    madsim::runtime::Runtime::new().block_on(test);
}

fn at(message: u8, after: Duration) -> ScheduleRequest<u8> {
    ScheduleRequest { message, run_at: Instant::now() + after }
}

const S: Duration = Duration::from_secs(1);

/// Virtual time is `start + after`, give or take the clock's step per poll.
fn assert_at(start: Instant, after: Duration) {
    let elapsed = Instant::now() - start;
    assert!(elapsed >= after && elapsed < after + Duration::from_millis(1), "at {elapsed:?}, want {after:?}");
}

/// A message equal to every other: the payload is what `Ord` ignores (as a request's reason).
#[derive(Clone, Debug)]
struct Singleton(u8);
impl PartialEq for Singleton {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Singleton {}
impl PartialOrd for Singleton {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Singleton {
    fn cmp(&self, _: &Self) -> Ordering {
        Ordering::Equal
    }
}

#[test]
fn scheduler_should_emit_items_as_requested() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(1, S)).unwrap();
        tx.unbounded_send(at(2, 3 * S)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(1)));
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(2)));
        drop(tx);
        assert_eq!(scheduler.next().await, None);
    });
}

#[test]
fn scheduler_wakes_its_task_when_the_next_message_falls_due() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(7, 5 * S)).unwrap();
        let start = Instant::now();
        let mut scheduler = pin!(scheduler(rx));
        assert_eq!(scheduler.next().await, Some(7));
        assert_at(start, 5 * S);
        drop(tx);
    });
}

#[test]
fn scheduler_dedupe_should_keep_earlier_item() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(0, S)).unwrap();
        tx.unbounded_send(at(0, 3 * S)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(0)));
        // The later duplicate was dropped: nothing more, even after its time.
        madsim::time::sleep(2 * S).await;
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
    });
}

#[test]
fn scheduler_dedupe_should_replace_later_item() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(0, 3 * S)).unwrap();
        tx.unbounded_send(at(0, S)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(0)));
        madsim::time::sleep(2 * S).await;
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
    });
}

#[test]
fn scheduler_dedupe_should_allow_rescheduling_emitted_item() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        let mut scheduler = pin!(scheduler(rx));
        tx.unbounded_send(at(0, S)).unwrap();
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(0)));
        tx.unbounded_send(at(0, S)).unwrap();
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert_eq!(scheduler.next().now_or_never(), Some(Some(0)));
        drop(tx);
    });
}

#[test]
fn scheduler_should_overwrite_message_with_soonest_version() {
    run(async {
        let now = Instant::now();
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(ScheduleRequest { message: Singleton(1), run_at: now + 2 * S }).unwrap();
        tx.unbounded_send(ScheduleRequest { message: Singleton(2), run_at: now + S }).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert_eq!(scheduler.next().await.map(|m| m.0), Some(2));
        drop(tx);
        assert!(scheduler.next().await.is_none());
    });
}

#[test]
fn scheduler_should_not_overwrite_message_with_later_version() {
    run(async {
        let now = Instant::now();
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(ScheduleRequest { message: Singleton(1), run_at: now + S }).unwrap();
        tx.unbounded_send(ScheduleRequest { message: Singleton(2), run_at: now + 2 * S }).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert_eq!(scheduler.next().await.map(|m| m.0), Some(1));
        madsim::time::sleep(5 * S).await;
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
    });
}

#[test]
fn scheduler_should_hold_and_release_items() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(1, Duration::ZERO)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(!scheduler.contains_pending(&1));
        assert!(poll!(scheduler.as_mut().hold_unless(|_| false).next()).is_pending());
        assert!(scheduler.contains_pending(&1));
        assert_eq!(poll!(scheduler.as_mut().hold_unless(|_| true).next()), std::task::Poll::Ready(Some(1)));
        assert!(!scheduler.contains_pending(&1));
        drop(tx);
        assert!(scheduler.as_mut().hold_unless(|_| true).next().await.is_none());
    });
}

#[test]
fn hold_keeps_every_due_message_pending_until_a_consumer_takes_it() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(1, S)).unwrap();
        tx.unbounded_send(at(2, S)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(poll!(scheduler.as_mut().hold().next()).is_pending());
        madsim::time::sleep(2 * S).await;
        assert!(poll!(scheduler.as_mut().hold().next()).is_pending());
        assert!(scheduler.contains_pending(&1) && scheduler.contains_pending(&2));
        // Pending messages come out in message order.
        assert_eq!(scheduler.next().now_or_never(), Some(Some(1)));
        assert_eq!(scheduler.next().now_or_never(), Some(Some(2)));
        drop(tx);
    });
}

#[test]
fn scheduler_should_not_reschedule_pending_items() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(1, Duration::ZERO)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert!(poll!(scheduler.as_mut().hold_unless(|_| false).next()).is_pending());
        // A request for a pending message is dropped: it runs once, as soon as it may.
        tx.unbounded_send(at(1, Duration::ZERO)).unwrap();
        assert_eq!(scheduler.next().await, Some(1));
        madsim::time::sleep(2 * S).await;
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
        assert_eq!(scheduler.next().await, None);
    });
}

#[test]
fn scheduler_pending_message_should_not_block_head_of_line() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(at(1, Duration::ZERO)).unwrap();
        tx.unbounded_send(at(2, Duration::ZERO)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        assert_eq!(scheduler.as_mut().hold_unless(|x| *x != 1).next().await, Some(2));
        assert!(scheduler.contains_pending(&1));
        drop(tx);
    });
}

#[test]
fn scheduler_should_add_debounce_to_a_request() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        let mut scheduler = pin!(debounced_scheduler(rx, 2 * S));
        tx.unbounded_send(ScheduleRequest { message: Singleton(1), run_at: Instant::now() }).unwrap();
        madsim::time::sleep(S).await;
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(3 * S).await;
        assert_eq!(scheduler.next().now_or_never().flatten().map(|m| m.0), Some(1));
        drop(tx);
    });
}

#[test]
fn scheduler_should_dedup_message_within_debounce_period() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        let mut scheduler = pin!(debounced_scheduler(rx, 3 * S));
        tx.unbounded_send(ScheduleRequest { message: Singleton(1), run_at: Instant::now() }).unwrap();
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(S).await;
        // A second request within the debounce resets it: 3 s from now, with the new message.
        tx.unbounded_send(ScheduleRequest { message: Singleton(2), run_at: Instant::now() }).unwrap();
        madsim::time::sleep(Duration::from_millis(2500)).await;
        assert!(poll!(scheduler.next()).is_pending());
        madsim::time::sleep(3 * S).await;
        assert_eq!(scheduler.next().now_or_never().flatten().map(|m| m.0), Some(2));
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
    });
}

#[test]
fn scheduler_ends_as_soon_as_its_requests_end_even_with_messages_queued() {
    run(async {
        let requests = futures::stream::iter([at(1, S)]);
        let scheduler = scheduler(requests);
        assert_eq!(scheduler.collect::<Vec<_>>().await, Vec::<u8>::new());
    });
}

#[test]
fn simultaneous_due_messages_come_out_in_message_order_on_every_run() {
    run(async {
        let (tx, rx) = mpsc::unbounded();
        for message in [3, 1, 2] {
            tx.unbounded_send(at(message, S)).unwrap();
        }
        drop(tx);
        let mut scheduler = pin!(scheduler(rx.chain(futures::stream::pending())));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(scheduler.next().await.unwrap());
        }
        assert_eq!(got, [1, 2, 3]);
    });
}

#[test]
fn reconcile_requests_compare_by_object_and_ignore_the_reason() {
    let a: ObjectRef<ConfigMap> = ObjectRef::new("a").within("default");
    let updated = ReconcileRequest { obj_ref: a.clone(), reason: ReconcileReason::ObjectUpdated };
    let bulk = ReconcileRequest { obj_ref: a.clone(), reason: ReconcileReason::BulkReconcile };
    assert_eq!(updated, bulk);
    let unknown: ReconcileRequest<ConfigMap> = a.into();
    assert!(matches!(unknown.reason, ReconcileReason::Unknown));
    assert_eq!(unknown, updated);
    assert_eq!(ReconcileReason::BulkReconcile.to_string(), "bulk reconcile requested");
    assert_eq!(ReconcileReason::Custom { reason: "ext".into() }.to_string(), "ext");
}

#[test]
fn a_scheduler_of_reconcile_requests_keeps_the_first_queued_reason_of_the_earlier_request() {
    run(async {
        let a: ObjectRef<ConfigMap> = ObjectRef::new("a").within("default");
        let now = Instant::now();
        let request = |reason, after| ScheduleRequest {
            message: ReconcileRequest { obj_ref: a.clone(), reason },
            run_at: now + after,
        };
        let (tx, rx) = mpsc::unbounded();
        tx.unbounded_send(request(ReconcileReason::ReconcilerRequestedRetry, 5 * S)).unwrap();
        tx.unbounded_send(request(ReconcileReason::ObjectUpdated, S)).unwrap();
        tx.unbounded_send(request(ReconcileReason::BulkReconcile, 2 * S)).unwrap();
        let mut scheduler = pin!(scheduler(rx));
        let first = scheduler.next().await.unwrap();
        assert_at(now, S);
        assert!(matches!(first.reason, ReconcileReason::ObjectUpdated), "{}", first.reason);
        madsim::time::sleep(10 * S).await;
        assert!(poll!(scheduler.next()).is_pending());
        drop(tx);
    });
}

// The controller's scheduling entry points: `applier`, `reconcile_on`, `reconcile_all_on` and
// `trigger_backoff`, in simulated worlds.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use sim::api::Api;
use sim::runtime::controller::{Action, Config, Error as ControllerError, applier};
use sim::runtime::utils::Backoff;
use sim::runtime::{Controller, reflector, watcher};
use sim::{Clients, Sim, Verdict};

/// The error type of controllers that never fail.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// A queue stream's error.
#[derive(Debug, thiserror::Error)]
#[error("queue broke")]
struct QueueBroke;

/// What a test's controller saw, one line per item, with its virtual time since the start.
type Seen = Arc<Mutex<Vec<(Duration, String)>>>;

fn note(seen: &Seen, start: Instant, line: String) {
    seen.lock().unwrap().push((Instant::now() - start, line));
}

fn lines(seen: &Seen) -> Vec<String> {
    seen.lock().unwrap().iter().map(|(_, line)| line.clone()).collect()
}

fn cms(w: &sim::Workload) -> Api<ConfigMap> {
    Api::namespaced(w.client(), "default")
}

fn cm_ref(name: &str) -> ObjectRef<ConfigMap> {
    ObjectRef::new(name).within("default")
}

#[test]
fn an_applier_reconciles_what_its_queue_asks_for_and_ends_gracefully_when_the_queue_ends() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let probe = seen.clone();
        let report = Sim::builder()
            .controller("applier", move |clients: Clients| {
                let seen = probe.clone();
                async move {
                    let start = Instant::now();
                    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                    let store = reflector::informer(api, watcher::Config::default());
                    let (tx, rx) = mpsc::unbounded::<Result<ObjectRef<ConfigMap>, QueueBroke>>();
                    madsim::task::spawn_local(async move {
                        madsim::time::sleep(Duration::from_secs(1)).await;
                        tx.unbounded_send(Ok(cm_ref("a"))).unwrap();
                        tx.unbounded_send(Err(QueueBroke)).unwrap();
                        tx.unbounded_send(Ok(cm_ref("missing"))).unwrap();
                        madsim::time::sleep(Duration::from_secs(1)).await;
                        // The queue ends: the applier shuts down once nothing runs.
                    });
                    let log = seen.clone();
                    let reconcile = move |cm: Arc<ConfigMap>, _: Arc<()>| {
                        let log = log.clone();
                        async move {
                            note(
                                &log,
                                start,
                                format!("reconcile {}", cm.metadata.name.clone().unwrap_or_default()),
                            );
                            // A requeue the shutdown drops.
                            Ok::<_, Never>(Action::requeue(Duration::from_secs(5)))
                        }
                    };
                    let outcomes = applier(
                        reconcile,
                        |_, _: &Never, _| Action::await_change(),
                        Arc::new(()),
                        store,
                        rx,
                        Config::default(),
                    );
                    let mut outcomes = std::pin::pin!(outcomes);
                    while let Some(outcome) = outcomes.next().await {
                        let line = match outcome {
                            Ok((object, action)) => format!("ok {object}: {action}"),
                            Err(ControllerError::QueueError(error)) => format!("queue error: {error}"),
                            Err(ControllerError::ObjectNotFound(object)) => format!("not found {object}"),
                            Err(error) => format!("error: {error}"),
                        };
                        note(&seen, start, line);
                    }
                    note(&seen, start, "ended".to_owned());
                    std::future::pending::<()>().await;
                }
            })
            .workload(|w| async move {
                w.apply(&cms(&w), &common::config_map("a", "1")).await?;
                w.sleep(Duration::from_secs(10)).await;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(
            lines(&seen),
            [
                "queue error: queue broke",
                "not found default/missing",
                "reconcile a",
                "ok default/a: requeue 5000ms",
                "ended"
            ],
            "seed {seed}"
        );
        let ended_at = seen.lock().unwrap().last().unwrap().0;
        assert!(
            ended_at >= Duration::from_secs(2) && ended_at < Duration::from_secs(5),
            "seed {seed}: {ended_at:?}"
        );
    }
}

/// A ConfigMap controller over `default` on the calling node whose reconciles are logged; `add`
/// adds triggers to it before it runs.
async fn logging_controller(
    clients: Clients,
    seen: Seen,
    add: impl FnOnce(Controller<ConfigMap>) -> Controller<ConfigMap>,
) {
    let start = Instant::now();
    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
    let log = seen.clone();
    add(Controller::new(api, watcher::Config::default()))
        .run(
            move |cm: Arc<ConfigMap>, _: Arc<()>| {
                let log = log.clone();
                async move {
                    note(&log, start, format!("reconcile {}", cm.metadata.name.clone().unwrap_or_default()));
                    Ok::<_, Never>(Action::await_change())
                }
            },
            |_, _: &Never, _| Action::await_change(),
            Arc::new(()),
        )
        .for_each(|outcome| {
            if let Err(error) = outcome {
                note(&seen, start, format!("error: {error}"));
            }
            async {}
        })
        .await;
}

#[test]
fn reconcile_on_reconciles_the_objects_an_external_stream_names() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let probe = seen.clone();
        let report = Sim::builder()
            .controller("external", move |clients: Clients| {
                let seen = probe.clone();
                let (tx, rx) = mpsc::unbounded();
                madsim::task::spawn_local(async move {
                    madsim::time::sleep(Duration::from_secs(3)).await;
                    tx.unbounded_send(cm_ref("b")).unwrap();
                });
                logging_controller(clients, seen, |c| c.reconcile_on(rx))
            })
            .workload(|w| async move {
                w.apply(&cms(&w), &common::config_map("a", "1")).await?;
                w.apply(&cms(&w), &common::config_map("b", "1")).await?;
                w.sleep(Duration::from_secs(5)).await;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let seen = seen.lock().unwrap().clone();
        let late: Vec<&str> =
            seen.iter().filter(|(at, _)| *at >= Duration::from_secs(3)).map(|(_, l)| l.as_str()).collect();
        assert_eq!(late, ["reconcile b"], "seed {seed}: {seen:?}");
    }
}

#[test]
fn reconcile_all_on_reconciles_every_cached_object_each_time_its_stream_yields() {
    for seed in 0..5 {
        let seen: Seen = Arc::default();
        let probe = seen.clone();
        let report = Sim::builder()
            .controller("reload", move |clients: Clients| {
                let seen = probe.clone();
                let (tx, rx) = mpsc::unbounded();
                madsim::task::spawn_local(async move {
                    for _ in 0..2 {
                        madsim::time::sleep(Duration::from_secs(3)).await;
                        tx.unbounded_send(()).unwrap();
                    }
                });
                logging_controller(clients, seen, |c| c.reconcile_all_on(rx))
            })
            .workload(|w| async move {
                for name in ["a", "b", "c"] {
                    w.apply(&cms(&w), &common::config_map(name, "1")).await?;
                }
                w.sleep(Duration::from_secs(8)).await;
                Ok(())
            })
            .run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let seen = seen.lock().unwrap().clone();
        // Each round's reconciles start at the same instant, in the order madsim runs them.
        let after = |from: u64, to: u64| -> Vec<&str> {
            let range = Duration::from_secs(from)..Duration::from_secs(to);
            let mut round: Vec<&str> =
                seen.iter().filter(|(at, _)| range.contains(at)).map(|(_, l)| l.as_str()).collect();
            round.sort_unstable();
            round
        };
        assert_eq!(after(3, 6), ["reconcile a", "reconcile b", "reconcile c"], "seed {seed}: {seen:?}");
        assert_eq!(after(6, 9), ["reconcile a", "reconcile b", "reconcile c"], "seed {seed}: {seen:?}");
    }
}

/// A backoff that always waits `delay_secs` and counts its uses.
struct Counting {
    delay_secs: u64,
    used: Arc<Mutex<u32>>,
}

impl Iterator for Counting {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        *self.used.lock().unwrap() += 1;
        Some(Duration::from_secs(self.delay_secs))
    }
}

impl Backoff for Counting {
    fn reset(&mut self) {}
}

#[test]
fn trigger_backoff_spaces_a_failing_trigger_stream_by_the_chosen_backoff() {
    let seen: Seen = Arc::default();
    let used: Arc<Mutex<u32>> = Arc::default();
    let (probe, counter) = (seen.clone(), used.clone());
    let report = Sim::builder()
        .controller("backoff", move |_clients: Clients| {
            let (seen, used) = (probe.clone(), counter.clone());
            async move {
                let start = Instant::now();
                let (reader, mut writer) = reflector::store::<ConfigMap>();
                writer.apply_watcher_event(&watcher::Event::Init);
                writer.apply_watcher_event(&watcher::Event::InitDone);
                let errors = futures::stream::iter((0..3).map(|_| Err(watcher::Error::NoResourceVersion)))
                    .chain(futures::stream::pending());
                let controller = Controller::for_stream(errors, reader)
                    .trigger_backoff(Counting { delay_secs: 3, used: used.clone() });
                controller
                    .run(
                        |_: Arc<ConfigMap>, _: Arc<()>| async { Ok::<_, Never>(Action::await_change()) },
                        |_, _: &Never, _| Action::await_change(),
                        Arc::new(()),
                    )
                    .for_each(|outcome| {
                        if let Err(error) = outcome {
                            note(&seen, start, format!("error: {error}"));
                        }
                        async {}
                    })
                    .await;
            }
        })
        .workload(|w| async move {
            w.sleep(Duration::from_secs(10)).await;
            Ok(())
        })
        .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for pair in seen.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        // Give or take the clock's step per poll.
        assert!(gap > Duration::from_millis(2_999) && gap < Duration::from_secs(4), "{seen:?}");
    }
    assert_eq!(*used.lock().unwrap(), 3, "every error asked the chosen backoff for its delay");
}
