//! The tests of `controllers::builtins::rate_limit`: client-go's default controller rate
//! limiter, per object and over the queue.

use std::time::Duration;

use controllers::builtins::rate_limit::{MAX_DELAY, NAMESPACE_MAX_DELAY, RateLimiter};

const MS: Duration = Duration::from_millis(1);

fn at(millis: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(1_767_225_600_000 + millis).expect("a valid time")
}

#[test]
fn an_object_waits_5ms_doubled_at_each_failure_up_to_the_cap_and_a_success_forgets() {
    let limiter = RateLimiter::new(MAX_DELAY);
    // One failure a second: the bucket refills faster than it drains.
    let delays: Vec<Duration> = (0..6).map(|i| limiter.when("default/a", at(i * 1000))).collect();
    assert_eq!(delays, [5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS, 160 * MS]);
    assert_eq!(limiter.when("default/b", at(6_000)), 5 * MS, "another object has its own count");
    assert_eq!(limiter.failures("default/a"), 6);
    limiter.forget("default/a");
    assert_eq!(limiter.failures("default/a"), 0);
    assert_eq!(limiter.when("default/a", at(7_000)), 5 * MS, "a success starts it over");
    for i in 0..40 {
        limiter.when("default/c", at(8_000 + i * 1000));
    }
    assert_eq!(limiter.when("default/c", at(100_000)), MAX_DELAY);
    let namespaces = RateLimiter::new(NAMESPACE_MAX_DELAY);
    for i in 0..20 {
        namespaces.when("gone", at(i * 1000));
    }
    assert_eq!(namespaces.when("gone", at(30_000)), Duration::from_secs(60));
}

#[test]
fn the_queue_retries_at_most_100_at_once_then_10_a_second() {
    let limiter = RateLimiter::new(MAX_DELAY);
    // 100 objects fail at the same instant: the burst takes them at their own 5 ms.
    for i in 0..100 {
        assert_eq!(limiter.when(&format!("default/o{i}"), at(0)), 5 * MS, "object {i}");
    }
    // The next ones wait for the bucket: 100 ms a token.
    assert_eq!(limiter.when("default/x", at(0)), 100 * MS);
    assert_eq!(limiter.when("default/y", at(0)), 200 * MS);
    // A second later ten tokens came back, two of them already promised.
    assert_eq!(limiter.when("default/z", at(1_000)), 5 * MS);
}

#[test]
fn a_limiter_with_max_retries_drops_an_object_after_them_and_forgets_its_failures() {
    let limiter = RateLimiter::new(MAX_DELAY).dropping_after(2);
    let retries: Vec<Option<Duration>> = (0..4).map(|i| limiter.retry("default/a", at(i * 1000))).collect();
    assert_eq!(retries, [Some(5 * MS), Some(10 * MS), None, Some(5 * MS)], "dropped, then a fresh start");
    assert_eq!(RateLimiter::new(MAX_DELAY).retry("default/a", at(0)), Some(5 * MS), "no cap by default");
}
