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
