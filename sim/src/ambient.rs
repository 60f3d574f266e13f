//! What controller code may ask of the run it is in without being handed anything: a deterministic
//! draw ([`random`]) and a virtual wall clock ([`time`]).
//!
//! A reconcile that picks a jittered backoff or stamps `lastTransitionTime` would otherwise reach
//! for `rand` or `SystemTime`, whose values differ between runs of one seed. Inside a run these
//! read the run's [`DecisionSource`](crate::DecisionSource) (so each value is a recorded choice a
//! replay repeats) and the run's virtual clock (a fixed epoch plus the virtual time elapsed, the
//! clock that stamps `creationTimestamp`).
//!
//! Outside a run (production code sharing the controller, a unit test calling a reconcile
//! directly) nothing panics: the draw comes from a generator seeded from OS entropy and the clock
//! is the real one, as the production code these stand in for would use. [`random::is_simulated`]
//! says which one a caller gets.
//!
//! The run is found through a thread-local that [`SimBuilder::run`](crate::SimBuilder::run) sets
//! for exactly the duration of one seed on its thread (madsim runs every task of a seed on that
//! thread) and clears after it, so nothing of a run outlives it.

use std::cell::RefCell;

use crate::world::World;

thread_local! {
    /// The run this thread is executing, if any.
    static CURRENT: RefCell<Option<World>> = const { RefCell::new(None) };
}

/// Makes `world` the current run of this thread until dropped (then restores what was there).
pub(crate) struct Enter {
    previous: Option<World>,
}

impl Enter {
    /// Enter `world` on this thread.
    pub(crate) fn new(world: &World) -> Self {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(world.clone()));
        Enter { previous }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Whether this thread is executing a run.
pub(crate) fn in_run() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// The current run of this thread, if any.
fn current() -> Option<World> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The current run and the name of the node the calling task runs on, for code handed no
/// `Client` (`Controller::for_stream`). madsim answers `gethostname` with the node's name inside
/// a task, as a Pod's hostname is its name; outside a run this is `None`.
pub(crate) fn current_node() -> Option<(World, std::sync::Arc<str>)> {
    let world = current()?;
    let name = hostname::get().ok()?.into_string().ok()?;
    Some((world, std::sync::Arc::from(name)))
}

/// Deterministic draws for controller code, from the run's decision source.
///
/// ```no_run
/// use std::time::Duration;
/// // A jittered requeue: the same seed draws the same jitter, and a replay repeats it.
/// let after = sim::random::duration_between(Duration::from_secs(4), Duration::from_secs(6));
/// let replica = sim::random::in_stream("my-operator.replica").below(3);
/// # let _ = (after, replica);
/// ```
///
/// Every draw is a choice of a named stream (by default [`STREAM`]): a controller that wants its
/// draws not to shift when another controller draws more or less uses a stream of its own
/// ([`in_stream`]). Call these from controller and workload code, not from a property (the engine
/// holds the run's state while it checks properties).
pub mod random {
    use std::cell::RefCell;
    use std::time::Duration;

    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// The stream the free functions draw from.
    pub const STREAM: &str = "controllers.random";

    thread_local! {
        /// Outside a run: a generator seeded from OS entropy on first use.
        static FALLBACK: RefCell<Option<ChaCha8Rng>> = const { RefCell::new(None) };
    }

    /// Draws from one named stream of the run's decision source.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Draw {
        stream: &'static str,
    }

    /// Draws from the stream `name` (a controller's own, so that its draws do not depend on how
    /// much other code draws).
    pub fn in_stream(name: &'static str) -> Draw {
        Draw { stream: name }
    }

    /// Whether draws come from a run's decision source (`true`) or from OS entropy (`false`:
    /// outside a run).
    pub fn is_simulated() -> bool {
        super::current().is_some()
    }

    /// 64 random bits (stream [`STREAM`]).
    pub fn u64() -> u64 {
        in_stream(STREAM).u64()
    }

    /// Uniform in `0..n` (stream [`STREAM`]); `below(0)` is 0.
    pub fn below(n: u64) -> u64 {
        in_stream(STREAM).below(n)
    }

    /// True with probability `p` (clamped to `0.0..=1.0`; NaN counts as 0) (stream [`STREAM`]).
    pub fn chance(p: f64) -> bool {
        in_stream(STREAM).chance(p)
    }

    /// A duration uniform in `[lo, hi]`, to the nanosecond (stream [`STREAM`]); the bounds may
    /// come in either order.
    pub fn duration_between(lo: Duration, hi: Duration) -> Duration {
        in_stream(STREAM).duration_between(lo, hi)
    }

    impl Draw {
        /// The stream's name.
        pub fn stream(&self) -> &'static str {
            self.stream
        }

        /// 64 random bits.
        pub fn u64(&self) -> u64 {
            match super::current() {
                Some(world) => world.with(|w| w.decisions().stream(self.stream).next_u64()),
                None => fallback(|rng| rng.next_u64()),
            }
        }

        /// Uniform in `0..n`; `below(0)` is 0 (an empty range has nothing to draw, and bad input
        /// must not panic a controller).
        pub fn below(&self, n: u64) -> u64 {
            if n == 0 {
                return 0;
            }
            match super::current() {
                Some(world) => world.with(|w| w.decisions().stream(self.stream).below(n)),
                // Outside a run the tiny modulo bias of a 64-bit draw does not matter.
                None => fallback(|rng| rng.next_u64() % n),
            }
        }

        /// True with probability `p` (clamped to `0.0..=1.0`; NaN counts as 0).
        pub fn chance(&self, p: f64) -> bool {
            match super::current() {
                Some(world) => world.with(|w| w.decisions().stream(self.stream).chance(p)),
                None => fallback(|rng| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p),
            }
        }

        /// A duration uniform in `[lo, hi]`, to the nanosecond; the bounds may come in either
        /// order. A range wider than `u64` nanoseconds (584 years) is drawn to the millisecond.
        pub fn duration_between(&self, lo: Duration, hi: Duration) -> Duration {
            let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
            let width = hi - lo;
            match u64::try_from(width.as_nanos()).ok().and_then(|n| n.checked_add(1)) {
                Some(choices) => lo + Duration::from_nanos(self.below(choices)),
                None => {
                    let ms = u64::try_from(width.as_millis()).unwrap_or(u64::MAX);
                    lo + Duration::from_millis(self.below(ms.saturating_add(1).max(1)))
                }
            }
        }
    }

    fn fallback<R>(f: impl FnOnce(&mut ChaCha8Rng) -> R) -> R {
        FALLBACK.with(|cell| {
            let mut cell = cell.borrow_mut();
            let rng = cell.get_or_insert_with(|| ChaCha8Rng::seed_from_u64(entropy()));
            f(rng)
        })
    }

    /// 64 bits of OS entropy, without a dependency: std seeds each `RandomState` from the OS.
    fn entropy() -> u64 {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0x6b75_6265_2d73_696d_u64)
    }
}

/// The virtual wall clock for controller code.
///
/// ```no_run
/// // Stamp a condition the same way on every replay of the seed.
/// let now = sim::time::now_k8s();
/// # let _ = now;
/// ```
///
/// Inside a run it is [`EPOCH_UNIX_SECONDS`](crate::world::EPOCH_UNIX_SECONDS) (2026-01-01T00:00:00Z)
/// plus the virtual time elapsed: the clock the model API server stamps `creationTimestamp` and
/// `deletionTimestamp` with, identical across runs of one seed. Outside a run it is the real
/// clock ([`is_simulated`] says which).
pub mod time {
    use std::time::Duration;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// Whether [`now`] is the run's virtual clock (`true`) or the real one (`false`: outside a
    /// run).
    pub fn is_simulated() -> bool {
        super::current().is_some()
    }

    /// The current time: virtual inside a run, real outside.
    pub fn now() -> jiff::Timestamp {
        match super::current() {
            Some(world) => world.with(|w| w.now()),
            None => jiff::Timestamp::now(),
        }
    }

    /// [`now`] as a Kubernetes `Time` (for `lastTransitionTime`, `startTime` and the like).
    pub fn now_k8s() -> Time {
        Time(now())
    }

    /// Virtual time since the start of the run; `None` outside a run.
    pub fn elapsed() -> Option<Duration> {
        super::current().map(|world| world.elapsed())
    }
}
