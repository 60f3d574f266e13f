//! The tests of `sim::controller::work_queue` (its former unit tests: the library has no test harness).

use sim::controller::work_queue::*;

#[test]
fn scheduling_an_object_twice_keeps_the_earlier_due_time() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    assert_eq!(q.schedule("a", 50), Scheduled::Added);
    assert_eq!(q.schedule("a", 80), Scheduled::Kept);
    assert_eq!(q.due_at(&"a"), Some(50));
    assert_eq!(q.schedule("a", 20), Scheduled::Replaced);
    assert_eq!(q.due_at(&"a"), Some(20));
    assert_eq!(q.len(), 1);
}

#[test]
fn a_request_due_while_its_object_is_in_flight_waits_for_the_finish() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    q.schedule("a", 0);
    assert_eq!(q.pop_due(0), Some("a"));
    q.schedule("a", 1);
    assert_eq!(q.pop_due(5), None);
    assert_eq!(q.next_due(), None);
    q.finish(&"a");
    assert_eq!(q.next_due(), Some(1));
    assert_eq!(q.pop_due(5), Some("a"));
}

#[test]
fn a_full_queue_refuses_new_objects_but_accepts_known_ones() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(1);
    assert_eq!(q.schedule("a", 5), Scheduled::Added);
    assert_eq!(q.schedule("b", 5), Scheduled::Full);
    assert_eq!(q.schedule("a", 1), Scheduled::Replaced);
}

#[test]
fn a_debounced_request_before_the_queued_one_falls_due_postpones_it() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    assert_eq!(q.schedule_debounced("a", 0, 10), Scheduled::Added);
    assert_eq!(q.schedule_debounced("a", 4, 14), Scheduled::Replaced);
    assert_eq!(q.due_at(&"a"), Some(14));
    assert_eq!(q.schedule_debounced("a", 15, 25), Scheduled::Kept);
    assert_eq!(q.due_at(&"a"), Some(14));
}

#[test]
fn an_idle_requeue_is_not_awaited_until_a_trigger_merges_with_it() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    assert_eq!(q.schedule_requeue("a", 300, 300, true), Scheduled::Added);
    assert_eq!(q.schedule("b", 500), Scheduled::Added);
    assert_eq!(q.origin(&"a"), Some(Origin::Requeue { idle: true }));
    assert_eq!(q.next_due(), Some(300));
    assert_eq!(q.next_awaited_due(), Some(500));
    // A trigger later than the requeue keeps the earlier due time, but makes it awaited.
    assert_eq!(q.schedule("a", 400), Scheduled::Kept);
    assert_eq!(q.origin(&"a"), Some(Origin::Trigger));
    assert_eq!(q.next_awaited_due(), Some(300));
    assert_eq!(q.pop_due_request(300), Some(("a", Origin::Trigger)));
    assert_eq!(q.next_awaited_due(), Some(500));
}

#[test]
fn a_requeue_merged_into_a_queued_trigger_is_a_trigger_and_two_requeues_keep_only_shared_flags() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    assert_eq!(q.schedule("a", 50), Scheduled::Added);
    assert_eq!(q.schedule_requeue("a", 10, 10, true), Scheduled::Replaced);
    assert_eq!(q.origin(&"a"), Some(Origin::Trigger));
    assert_eq!(q.next_awaited_due(), Some(10));
    assert_eq!(q.schedule_requeue("b", 70, 70, true), Scheduled::Added);
    assert_eq!(q.schedule_requeue("b", 60, 60, false), Scheduled::Replaced);
    assert_eq!(q.origin(&"b"), Some(Origin::Requeue { idle: false }));
    assert_eq!(q.pop_due_request(100), Some(("a", Origin::Trigger)));
    assert_eq!(q.next_awaited_due(), Some(60));
    assert_eq!(q.pop_due_request(100), Some(("b", Origin::Requeue { idle: false })));
    assert_eq!(q.next_awaited_due(), None);
}

#[test]
fn due_requests_pop_in_due_time_order_then_by_object() {
    let mut q: WorkQueue<&str, u64> = WorkQueue::new(10);
    q.schedule("c", 2);
    q.schedule("b", 1);
    q.schedule("a", 2);
    assert_eq!(q.pop_due(10), Some("b"));
    assert_eq!(q.pop_due(10), Some("a"));
    assert_eq!(q.pop_due(10), Some("c"));
    assert_eq!(q.pop_due(10), None);
}
