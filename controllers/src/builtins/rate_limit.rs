//! The retries of kube-controller-manager's work queues: a failed sync is put back with
//! `AddRateLimited`, a successful one `Forget`s the object's failures. client-go's
//! `DefaultTypedControllerRateLimiter`, which the workload controllers use, waits the longer of
//! - per object, 5 ms doubled at each consecutive failure, at most 1000 s
//!   (`ItemExponentialFailureRateLimiter`; the namespace controller's at most 60 s, so that a
//!   namespace stuck terminating is retried at least every minute);
//! - over all of the queue's retries, a token bucket of 10 a second with a burst of 100
//!   (`BucketRateLimiter`).
//!
//! So a 409 from a lagging cache is retried within milliseconds, and a sync that keeps failing
//! backs off instead of costing the API server a call every half second. An event for the object
//! still syncs it at once, as `Add` does upstream; its failures are forgotten only when a sync
//! succeeds. Written here rather than taken from a crate: it is the two formulas above on the
//! virtual clock, and the rate-limiting crates read the real one.
//!
//! Two controllers tune theirs: the Job controller's is per object only, from 1 s up to 60 s
//! (`DefaultJobApiBackOff`, `MaxJobApiBackOff`), and the EndpointSlice controller's starts at 1 s.
//! The Deployment, endpoints and EndpointSlice controllers give an object up after
//! [`MAX_RETRIES`] retries (`maxRetries`): its failures are forgotten and it waits for its next
//! event (upstream's informers also resync every 12 to 24 hours, which no run lasts).
//!
//! The Job controller's Pod-failure backoff is not a queue's: it is in [`super::job`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use kube_core::{Resource, ResourceExt};
use sim::runtime::Controller;
use sim::runtime::controller::{self, Action};
use sim::runtime::reflector::ObjectRef;

use super::Error;

/// The first retry's delay; each consecutive failure doubles it.
pub const BASE_DELAY: Duration = Duration::from_millis(5);
/// The first retry's delay of the Job and EndpointSlice controllers.
pub const SLOW_BASE_DELAY: Duration = Duration::from_secs(1);
/// The Job controller's longest delay.
pub const JOB_MAX_DELAY: Duration = Duration::from_secs(60);
/// The longest per-object delay of the workload controllers' queues.
pub const MAX_DELAY: Duration = Duration::from_secs(1000);
/// The namespace controller's longest delay.
pub const NAMESPACE_MAX_DELAY: Duration = Duration::from_secs(60);
/// The retries after which the Deployment, endpoints and EndpointSlice controllers drop an object
/// that keeps failing (their `maxRetries`).
pub const MAX_RETRIES: u32 = 15;
/// Retries a second over the whole queue, once the burst is spent.
const BUCKET_RATE: f64 = 10.0;
/// Retries the bucket holds.
const BUCKET_BURST: f64 = 100.0;

/// One queue's rate limiter: per object its consecutive failures, and the token bucket.
#[derive(Debug)]
pub struct RateLimiter {
    base_delay: Duration,
    max_delay: Duration,
    /// Whether the queue-wide token bucket applies too.
    bucket: bool,
    /// Retries before an object is dropped (`None`: never).
    max_retries: Option<u32>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Consecutive failures by object key.
    failures: BTreeMap<String, u32>,
    /// Tokens left (negative: retries already promised to later refills).
    tokens: f64,
    /// When the bucket was last refilled (virtual time).
    refilled: Option<jiff::Timestamp>,
}

impl Default for RateLimiter {
    /// client-go's `DefaultControllerRateLimiter`: from [`BASE_DELAY`] to [`MAX_DELAY`] per
    /// object, within the token bucket.
    fn default() -> Self {
        RateLimiter::new(MAX_DELAY)
    }
}

impl RateLimiter {
    /// A limiter whose per-object delay grows to at most `max_delay`.
    pub fn new(max_delay: Duration) -> Self {
        let state = State { failures: BTreeMap::new(), tokens: BUCKET_BURST, refilled: None };
        RateLimiter {
            base_delay: BASE_DELAY,
            max_delay,
            bucket: true,
            max_retries: None,
            state: Mutex::new(state),
        }
    }

    /// The same, with `base` as the first retry's delay.
    pub fn starting_at(self, base: Duration) -> Self {
        RateLimiter { base_delay: base, ..self }
    }

    /// The same, per object only: no queue-wide token bucket.
    pub fn without_bucket(self) -> Self {
        RateLimiter { bucket: false, ..self }
    }

    /// The same, dropping an object after `retries` retries (its failures forgotten).
    pub fn dropping_after(self, retries: u32) -> Self {
        RateLimiter { max_retries: Some(retries), ..self }
    }

    /// What follows a failure of `key` at `now`: the delay before its retry, or `None` when it
    /// has been retried as often as allowed (it is dropped and its failures forgotten, as
    /// `handleErr` does past `maxRetries`).
    pub fn retry(&self, key: &str, now: jiff::Timestamp) -> Option<Duration> {
        if self.max_retries.is_some_and(|max| self.failures(key) >= max) {
            self.forget(key);
            return None;
        }
        Some(self.when(key, now))
    }

    /// The delay before `key`'s next attempt after a failure (`AddRateLimited`'s `When`), at
    /// `now` (the run's virtual clock, `sim::time::now`); counts the failure.
    pub fn when(&self, key: &str, now: jiff::Timestamp) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let failures = state.failures.entry(key.to_owned()).or_insert(0);
        let per_object = 2u32
            .checked_pow(*failures)
            .and_then(|factor| self.base_delay.checked_mul(factor))
            .map_or(self.max_delay, |delay| delay.min(self.max_delay));
        *failures = failures.saturating_add(1);
        if !self.bucket {
            return per_object;
        }
        if let Some(last) = state.refilled {
            let elapsed = now.duration_since(last).as_secs_f64().max(0.0);
            state.tokens = (state.tokens + elapsed * BUCKET_RATE).min(BUCKET_BURST);
        }
        state.refilled = Some(now);
        state.tokens -= 1.0;
        let bucket = if state.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-state.tokens / BUCKET_RATE)
        };
        per_object.max(bucket)
    }

    /// `key` synced: its failures are forgotten (`Forget`).
    pub fn forget(&self, key: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failures.remove(key);
    }

    /// How many consecutive failures `key` has had (`NumRequeues`).
    pub fn failures(&self, key: &str) -> u32 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failures.get(key).copied().unwrap_or(0)
    }
}

/// An object's key in the limiter: its uid (`namespace/name` for one without). Upstream keys by
/// `namespace/name` and forgets the failures when the sync after the object's deletion finds it
/// gone; no sync runs here for a deleted object, so keying by uid is what gives an object created
/// again under the same name no inherited backoff.
fn key_of<K: Resource>(object: &K) -> String {
    if let Some(uid) = &object.meta().uid {
        return uid.clone();
    }
    match object.namespace() {
        Some(namespace) => [namespace.as_str(), "/", object.name_any().as_str()].concat(),
        None => object.name_any(),
    }
}

/// A built-in controller's run with its work queue's retries: [`Controller::run`] with an error
/// policy that backs off per object and a reconcile that forgets an object's failures when it
/// syncs.
pub(crate) trait RunRateLimited<K>: Sized {
    /// Run with `limiter` (most controllers: [`RateLimiter::default`]).
    fn run_limited_by<'a, C, F, Fut>(
        self,
        limiter: RateLimiter,
        reconcile: F,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), controller::Error<Error>>> + 'a
    where
        K: 'a,
        C: 'a,
        F: FnMut(Arc<K>, Arc<C>) -> Fut + 'a,
        Fut: Future<Output = Result<Action, Error>> + 'static;
}

impl<K> RunRateLimited<K> for Controller<K>
where
    K: Resource
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    fn run_limited_by<'a, C, F, Fut>(
        self,
        limiter: RateLimiter,
        mut reconcile: F,
        ctx: Arc<C>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), controller::Error<Error>>> + 'a
    where
        K: 'a,
        C: 'a,
        F: FnMut(Arc<K>, Arc<C>) -> Fut + 'a,
        Fut: Future<Output = Result<Action, Error>> + 'static,
    {
        let limiter = Arc::new(limiter);
        let forgets = Arc::clone(&limiter);
        let sync = move |object: Arc<K>, ctx: Arc<C>| {
            let key = key_of(&*object);
            let attempt = reconcile(object, ctx);
            let forgets = Arc::clone(&forgets);
            async move {
                let result = attempt.await;
                if result.is_ok() {
                    forgets.forget(&key);
                }
                result
            }
        };
        let backoff = move |object: Arc<K>, error: &Error, _ctx: Arc<C>| {
            let key = key_of(&*object);
            match limiter.retry(&key, sim::time::now()) {
                Some(delay) => {
                    tracing::debug!(%error, %key, ?delay, "reconcile failed; retrying");
                    Action::requeue(delay)
                }
                None => {
                    tracing::debug!(%error, %key, "reconcile failed; dropped after its retries");
                    Action::await_change()
                }
            }
        };
        self.run(sync, backoff, ctx)
    }
}
