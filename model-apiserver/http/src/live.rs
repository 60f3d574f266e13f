//! The live model: one [`ApiServer`] behind a mutex, driven by wall-clock time, plus the
//! notification that wakes watch streams after a write.
//!
//! `serve` is not simulated: the time is the real clock and ids come from a counter seeded once
//! at start (from `--seed` or the wall clock), so two runs do not hand out the same uids.

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

/// What every connection shares.
#[derive(Clone)]
pub struct Live {
    model: Arc<Mutex<Model>>,
    /// Woken after every write, so watch streams poll at once rather than at their next tick.
    pub(crate) written: Arc<tokio::sync::Notify>,
    /// Set when serving a replay: every write gets 405 MethodNotAllowed with this message.
    read_only: Option<Arc<str>>,
}

impl Live {
    /// A live model around `server`.
    pub fn new(server: ApiServer, seed: u64) -> Self {
        Live {
            model: Arc::new(Mutex::new(Model { server, ids: SeededIds::new(seed) })),
            written: Arc::new(tokio::sync::Notify::new()),
            read_only: None,
        }
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

    /// Handle one request at the current wall-clock time; a panic in the model becomes a 500.
    pub fn handle(&self, request: Request) -> Result<Response, Status> {
        let is_write = request.is_write();
        let answer = {
            let mut model = self.lock();
            model.handle(request)
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
        let answer = self.lock().handle_with_warnings(request, jiff::Timestamp::now());
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
