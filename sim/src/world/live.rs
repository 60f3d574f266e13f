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
//! - [`SimBuilder::run_live`](crate::SimBuilder::run_live) starts every declared controller on its own node, as
//!   [`SimBuilder::run`](crate::SimBuilder::run) does, then paces: each round blocks the runtime's thread for [`TICK`] of
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

use super::WorldState;

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
    /// The types the server serves now, CRDs' included, as discovery reads them (the built-in
    /// kinds by default).
    fn types(&self) -> model_apiserver::ResourceTypes {
        model_apiserver::ResourceTypes::builtin()
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
    /// A live cluster served by `shared`.
    pub(crate) fn new(shared: Arc<dyn SharedCluster>) -> Self {
        let woken_at = shared.revision();
        LiveCluster { shared, watchers: Vec::new(), woken_at }
    }

    /// Wake every parked informer if `revision` differs from when they were last woken.
    pub(crate) fn wake_if_moved(&mut self, revision: Revision) {
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

/// The types a live cluster serves now; `None` if `cluster` is not a live one.
pub(crate) fn served_types(w: &WorldState, cluster: &str) -> Option<model_apiserver::ResourceTypes> {
    w.live.get(cluster).map(|live| live.shared.types())
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

impl WorldState {
    /// Serve cluster `name` from a live, shared model.
    pub(crate) fn add_live(&mut self, name: Arc<str>, live: LiveCluster) {
        self.live.insert(name, live);
    }

    /// Drop the live clusters (the live run ended).
    pub(crate) fn clear_live(&mut self) {
        self.live.clear();
    }

    /// Wake the informers of every live cluster whose revision moved since they were last woken.
    pub(crate) fn wake_live_if_moved(&mut self) {
        for live in self.live.values_mut() {
            let revision = live.shared.revision();
            live.wake_if_moved(revision);
        }
    }
}
