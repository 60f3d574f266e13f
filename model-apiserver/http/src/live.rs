//! The live model: one [`ApiServer`] behind a mutex, driven by wall-clock time, plus the
//! notification that wakes watch streams after a write.
//!
//! `serve` is not simulated: the time is the [`Clock`] (the real clock, or the real clock sped up
//! by `--time-scale`) and ids come from a counter seeded once at start (from `--seed` or the wall
//! clock), so two runs do not hand out the same uids.

use std::sync::{Arc, Mutex, MutexGuard};

use kube_core::Status;
use model_apiserver::{ApiServer, Context, Request, Response, Revision, SeqIds, errors};

/// The model and its id source, locked together so that one request sees one consistent state.
pub struct Model {
    /// The API server state machine.
    pub server: ApiServer,
    /// uids and generated names.
    pub ids: SeededIds,
}

/// A [`SeqIds`] started at a seed, so that restarts of `serve` do not repeat uids.
pub struct SeededIds {
    seed: u64,
    inner: SeqIds,
}

impl SeededIds {
    /// Ids derived from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededIds { seed, inner: SeqIds::default() }
    }
}

impl model_apiserver::IdSource for SeededIds {
    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64() ^ self.seed
    }
}

/// The served cluster's clock: the wall clock at start, then the wall time elapsed since, times
/// `scale` (1 by default). Everything the server stamps (creation and deletion times, the Tables'
/// ages) and everything the built-in controllers time (`kube-sim serve --with-builtins` paces
/// their virtual time to it) reads this one clock, so a cluster sped up 60 times stays consistent:
/// a CronJob due every minute fires every wall-clock second, and its Jobs' times agree with the
/// objects kubectl creates.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    started: std::time::Instant,
    epoch: jiff::Timestamp,
    scale: u32,
}

impl Clock {
    /// A clock starting now, running `scale` times as fast as the wall clock (0 counts as 1).
    pub fn new(scale: u32) -> Self {
        Clock { started: std::time::Instant::now(), epoch: jiff::Timestamp::now(), scale: scale.max(1) }
    }

    /// The cluster's time now.
    pub fn now(&self) -> jiff::Timestamp {
        let elapsed = self.started.elapsed().saturating_mul(self.scale);
        let elapsed = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
        self.epoch.checked_add(elapsed).unwrap_or(jiff::Timestamp::MAX)
    }

    /// How many times as fast as the wall clock it runs.
    pub fn scale(&self) -> u32 {
        self.scale
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new(1)
    }
}

/// What every connection shares.
#[derive(Clone)]
pub struct Live {
    model: Arc<Mutex<Model>>,
    /// Woken after every write, so watch streams poll at once rather than at their next tick.
    pub(crate) written: Arc<tokio::sync::Notify>,
    /// Set when serving a replay: every write gets 405 MethodNotAllowed with this message.
    read_only: Option<Arc<str>>,
    /// What the server stamps objects with.
    clock: Clock,
}

impl Live {
    /// A live model around `server`.
    pub fn new(server: ApiServer, seed: u64) -> Self {
        Live {
            model: Arc::new(Mutex::new(Model { server, ids: SeededIds::new(seed) })),
            written: Arc::new(tokio::sync::Notify::new()),
            read_only: None,
            clock: Clock::default(),
        }
    }

    /// The same model on `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The cluster's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The cluster's time now ([`Clock::now`]).
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// The same model, refusing every write with 405 MethodNotAllowed and `message`.
    pub fn read_only(mut self, message: impl Into<Arc<str>>) -> Self {
        self.read_only = Some(message.into());
        self
    }

    /// Why writes are refused, when they are.
    pub fn read_only_message(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Lock the model. A panic inside the model (a bug of ours) must not wedge the server, so a
    /// poisoned lock is taken over rather than propagated.
    pub fn lock(&self) -> MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Handle one request at the cluster's time; a panic in the model becomes a 500.
    pub fn handle(&self, request: Request) -> Result<Response, Status> {
        let is_write = request.is_write();
        let now = self.now();
        let answer = {
            let mut model = self.lock();
            model.handle_at(request, now)
        };
        if is_write {
            self.written.notify_waiters();
        }
        answer
    }

    /// Handle one request at `now` (a clock other than the wall clock: the built-in controllers'
    /// runtime), answering with the model's revision after it; a write wakes watch streams.
    pub fn handle_at(&self, request: Request, now: jiff::Timestamp) -> (Result<Response, Status>, Revision) {
        let is_write = request.is_write();
        let answer = {
            let mut model = self.lock();
            let result = model.handle_at(request, now);
            (result, model.server.revision())
        };
        if is_write {
            self.written.notify_waiters();
        }
        answer
    }

    /// [`Live::handle`], with the warnings the request earned (`Warning` headers).
    pub fn handle_with_warnings(&self, request: Request) -> (Result<Response, Status>, Vec<String>) {
        let is_write = request.is_write();
        let now = self.now();
        let answer = self.lock().handle_with_warnings(request, now);
        if is_write {
            self.written.notify_waiters();
        }
        answer
    }

    /// The model's current revision.
    pub fn revision(&self) -> Revision {
        self.lock().server.revision()
    }

    /// Run `f` on the locked model (several requests as one step), then wake watchers.
    pub fn with_model<T>(&self, f: impl FnOnce(&mut Model) -> T) -> T {
        let answer = f(&mut self.lock());
        self.written.notify_waiters();
        answer
    }
}

impl Model {
    /// Handle one request at the current wall-clock time; a panic in the model becomes a 500.
    pub fn handle(&mut self, request: Request) -> Result<Response, Status> {
        self.handle_at(request, jiff::Timestamp::now())
    }

    /// Handle one request at `now`; for callers whose own clock is not the wall clock (the
    /// built-in controllers' runtime, see [`Live::handle_at`]).
    pub fn handle_at(&mut self, request: Request, now: jiff::Timestamp) -> Result<Response, Status> {
        self.handle_with_warnings(request, now).0
    }

    /// Handle one request at `now`, with the warnings it earned.
    pub fn handle_with_warnings(
        &mut self,
        request: Request,
        now: jiff::Timestamp,
    ) -> (Result<Response, Status>, Vec<String>) {
        let Model { server, ids } = self;
        let mut ctx = Context::new(now, ids);
        let answer =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.handle(request, &mut ctx)))
                .unwrap_or_else(|_| {
                    Err(errors::internal_error("the model API server panicked on this request"))
                });
        (answer, ctx.take_warnings())
    }
}
