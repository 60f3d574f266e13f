//! Live runs: the declared controllers on a madsim runtime whose virtual time is paced to the wall
//! clock, against a model API server that other writers share (`kube-sim serve`'s HTTP front end).
//!
//! A live run is not a simulation. Nothing is replayable, no fault acts, no property is checked,
//! there is no workload and no liveness phase, and it runs until told to stop. It exists so that
//! controllers written against this crate's kube-rs-shaped API (the built-ins) run unchanged
//! behind a served model:
//!
//! - [`SharedCluster`] is the model: every call takes the model's own lock, so the controllers'
//!   calls interleave with other writers' as they would on a real API server;
//! - [`SimBuilder::run_live`] starts every declared controller on its own node, as
//!   [`SimBuilder::run`] does, then paces: each round blocks the runtime's thread for [`TICK`] of
//!   wall time, then lets pass the virtual time the wall clock is ahead by (that tick and the
//!   controllers' own compute time), so that requeues, resyncs and the kubelet-lite's delays
//!   take about as long as they say. (madsim jumps virtual time forward
//!   whenever every task waits; blocking its thread is what holds it back. A simulated run must
//!   never do this: it is allowed here only, where nothing is deterministic anyway);
//! - informers learn of other writers' changes at the next round: the pacer wakes every informer
//!   parked on a cluster whose revision moved since it last woke them.
//!
//! The API calls of a live run still pass through the transport (its latency is drawn from a seed
//! taken from the clock). The run's clock (what the server stamps objects with, and what
//! `sim::time` answers) is the cluster's time ([`SharedCluster::now`]) read when the run started
//! plus the virtual time elapsed since, which the pacing keeps close to the cluster's clock (the
//! wall clock, or a multiple of it: [`SharedCluster::time_scale`]); `sim::random` draws from the run's
//! decision source, seeded from the clock.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # fn shared() -> Arc<dyn sim::live::SharedCluster> { unimplemented!() }
//! let stop = sim::live::StopHandle::new();
//! let builder = sim::Sim::builder().controller("noop", |_clients| async {});
//! let thread_stop = stop.clone();
//! let thread = std::thread::spawn(move || builder.run_live(shared(), &thread_stop));
//! // ... later:
//! stop.stop();
//! let verdict = thread.join().unwrap();
//! assert!(verdict.is_pass());
//! ```

// The answers keep the model server's own `Result<Response, Status>` shape, as the transport does.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use kube_core::Status;
use model_apiserver::{Request, Response, Revision};

use super::{SimBuilder, WorldState};
use crate::verdict::Verdict;

/// One pacing round: wall time the runtime's thread sleeps, then virtual time let pass. Short
/// enough that a write over HTTP reaches the informers promptly, long enough that an idle live
/// run costs next to nothing.
pub const TICK: Duration = Duration::from_millis(10);

/// A model API server shared with writers outside the run.
pub trait SharedCluster: Send + Sync {
    /// Apply `request` at wall-clock time `now`. Answers with the server's revision right after
    /// it, read under the same lock, so that a watch answer and its revision agree.
    fn handle(&self, request: Request, now: jiff::Timestamp) -> (Result<Response, Status>, Revision);
    /// The server's current revision.
    fn revision(&self) -> Revision;
    /// The cluster's time now, as the other writers stamp with (read outside the runtime, where
    /// the clock is the real one): the wall clock by default.
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
    /// How many times as fast as the wall clock the cluster's time runs (1 by default): the
    /// run's virtual time is paced to it, so that the controllers' delays, requeues and
    /// schedules keep to the cluster's clock.
    fn time_scale(&self) -> u32 {
        1
    }
}

/// Tells a live run to stop, from any thread. The run notices within one [`TICK`].
#[derive(Clone, Debug, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// A handle not yet stopped.
    pub fn new() -> Self {
        StopHandle::default()
    }
    /// Ask the run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A cluster of a live run: the shared server, and the informers parked until its revision moves.
pub(crate) struct LiveCluster {
    shared: Arc<dyn SharedCluster>,
    /// Woken when the revision moves. Bounded: drained at every move, and a task registers at
    /// most once between moves.
    watchers: Vec<Waker>,
    /// The revision at which the watchers were last woken.
    woken_at: Revision,
}

impl LiveCluster {
    /// Wake every parked informer if `revision` differs from when they were last woken.
    fn wake_if_moved(&mut self, revision: Revision) {
        if revision == self.woken_at {
            return;
        }
        self.woken_at = revision;
        for waker in self.watchers.drain(..) {
            waker.wake();
        }
    }
}

/// Whether `cluster` is a live one (the transport asks before each call).
pub(crate) fn is_live(w: &WorldState, cluster: &str) -> bool {
    !w.live.is_empty() && w.live.contains_key(cluster)
}

/// Hand a request to a live cluster; wake its informers if the revision moved.
pub(crate) fn handle(w: &mut WorldState, cluster: &str, request: Request) -> Result<Response, Status> {
    let (result, revision) = poll_watch(w, cluster, request);
    if let Some(live) = w.live.get_mut(cluster) {
        live.wake_if_moved(revision);
    }
    result
}

/// Ask a live cluster, without waking anyone: the answer and the revision right after it.
pub(crate) fn poll_watch(
    w: &mut WorldState,
    cluster: &str,
    request: Request,
) -> (Result<Response, Status>, Revision) {
    let now = w.now();
    let Some(live) = w.live.get(cluster) else {
        let status = model_apiserver::errors::internal_error(&format!("no cluster named {cluster}"));
        return (Err(status), 0);
    };
    live.shared.handle(request, now)
}

/// `Ready` once a live cluster's revision is above `revision`; parks the task otherwise.
pub(crate) fn poll_revision_above(
    w: &mut WorldState,
    cluster: &str,
    revision: Revision,
    cx: &mut TaskContext<'_>,
) -> Poll<()> {
    let Some(live) = w.live.get_mut(cluster) else { return Poll::Ready(()) };
    if live.shared.revision() > revision {
        return Poll::Ready(());
    }
    if !live.watchers.iter().any(|waker| waker.will_wake(cx.waker())) {
        live.watchers.push(cx.waker().clone());
    }
    Poll::Pending
}

impl SimBuilder {
    /// Run the declared controllers live against `cluster` until `stop` is stopped or a
    /// controller panics, on a fresh madsim runtime on the calling thread (give it a thread of its
    /// own: it blocks). The first declared cluster is `cluster`; calls to any other get 500.
    ///
    /// Answers [`Verdict::Pass`] when stopped, or the [`Verdict::Crash`] of the controller that
    /// panicked. The workload, properties, faults and time limits of the builder do not apply.
    ///
    /// # Panics
    ///
    /// If the crate was built without `--cfg madsim` (see [`crate::ensure_simulated`]).
    pub fn run_live(&self, cluster: Arc<dyn SharedCluster>, stop: &StopHandle) -> Verdict {
        crate::runner::ensure_simulated();
        #[cfg(madsim)]
        {
            run(self, cluster, stop)
        }
        #[cfg(not(madsim))]
        {
            let _ = (cluster, stop);
            unreachable!("ensure_simulated panics in a build without --cfg madsim")
        }
    }
}

#[cfg(madsim)]
fn run(builder: &SimBuilder, cluster: Arc<dyn SharedCluster>, stop: &StopHandle) -> Verdict {
    use std::panic::AssertUnwindSafe;
    use std::sync::Mutex;

    use super::World;

    // Read outside the runtime, where the clock is still the real one.
    let wall_start = cluster.now();
    let scale = cluster.time_scale().max(1);
    let seed = u64::try_from(wall_start.as_nanosecond().rem_euclid(1 << 63)).unwrap_or_default();
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let world = World::new(crate::decision::DecisionSource::new(seed), false, Arc::from(Vec::new()));
    let specs = builder.cluster_specs();
    let woken_at = cluster.revision();
    let live = LiveCluster { shared: cluster, watchers: Vec::new(), woken_at };
    world.with(|w| {
        w.epoch = wall_start;
        w.live.insert(specs[0].name.clone(), live)
    });
    // Controller code finds the run through this (`sim::random`, `sim::time`), as in a simulated run.
    let _ambient = crate::ambient::Enter::new(&world);
    let names: Arc<[Arc<str>]> = specs.iter().map(|s| s.name.clone()).collect();
    let nodes: Arc<Mutex<Vec<madsim::task::NodeId>>> = Arc::default();
    let wall = WallClock::start();
    let pacing = Pacing { stop: stop.clone(), wall_elapsed: wall.elapsed.clone(), scale };
    let main = pace(builder.clone(), world.clone(), names, nodes.clone(), pacing);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(main)));
    wall.stop();
    super::shut_down(runtime, &nodes);
    let failure = world.with(|w| {
        w.live.clear();
        w.failure.take()
    });
    failure.unwrap_or_else(|| match outcome {
        Ok(()) => Verdict::Pass,
        Err(payload) => Verdict::Crash {
            node: "engine".to_owned(),
            object: None,
            message: super::panic_message(&*payload),
        },
    })
}

/// The wall time elapsed since a live run started, for its pacer: madsim answers the clock calls
/// of the runtime's own thread with virtual time, so a thread of its own, outside the runtime,
/// reads the real clock every millisecond. Live runs only: a simulated run has no real clock.
#[cfg(madsim)]
struct WallClock {
    /// Microseconds since the start.
    elapsed: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[cfg(madsim)]
impl WallClock {
    fn start() -> WallClock {
        let elapsed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (e, s) = (elapsed.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("live-wall-clock".to_owned())
            .spawn(move || {
                let start = std::time::Instant::now();
                while !s.load(Ordering::Acquire) {
                    e.store(
                        u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX),
                        Ordering::Release,
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .ok();
        WallClock { elapsed, stop, thread }
    }
    fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the pacer reads each round.
#[cfg(madsim)]
struct Pacing {
    stop: StopHandle,
    /// The wall time elapsed since the start ([`WallClock`]).
    wall_elapsed: Arc<std::sync::atomic::AtomicU64>,
    /// Virtual time runs this many times as fast as the wall clock.
    scale: u32,
}

/// The main task: start the controllers, then pace virtual time to the wall clock (times the
/// cluster's time scale) until stopped.
#[cfg(madsim)]
async fn pace(
    builder: SimBuilder,
    world: super::World,
    names: Arc<[Arc<str>]>,
    nodes: Arc<std::sync::Mutex<Vec<madsim::task::NodeId>>>,
    pacing: Pacing,
) {
    let Pacing { stop, wall_elapsed, scale } = pacing;
    let virtual_start = madsim::time::Instant::now();
    world.with(|w| w.start = std::time::Instant::now());
    let handle = madsim::runtime::Handle::current();
    for spec in &builder.controllers {
        let id = super::start_controller_node(&handle, spec, &world, &names);
        nodes.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    }
    // Unbounded by design: a live run lasts until `stop` (checked every round) or a crash.
    while !stop.is_stopped() && world.with(|w| w.failure.is_none()) {
        std::thread::sleep(TICK);
        // Let pass the virtual time the wall clock is ahead by: the round's sleep, and the
        // controllers' compute time, which a fixed step would lose, so that the run's clock
        // drifted behind the wall clock the other writers stamp with.
        // (A wall clock that could not start leaves the fixed step.)
        let wall = Duration::from_micros(wall_elapsed.load(Ordering::Acquire)).saturating_mul(scale);
        let behind = if wall.is_zero() { TICK } else { wall.saturating_sub(virtual_start.elapsed()) };
        madsim::time::sleep(behind.max(Duration::from_millis(1))).await;
        world.with(|w| {
            for live in w.live.values_mut() {
                let revision = live.shared.revision();
                live.wake_if_moved(revision);
            }
        });
    }
}
