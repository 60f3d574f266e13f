//! The controller runtime, mirroring kube-runtime's `Controller`.
//!
//! ```text
//! Controller::new(api, watcher::Config::default())
//!     .owns(children, watcher::Config::default())
//!     .run(reconcile, error_policy, ctx)
//!     .for_each(|_| async {})
//!     .await;
//! ```
//!
//! The rules are kube-runtime's (see [`work_queue`]): requests are deduplicated by object and the
//! earlier wins; one reconcile per object at a time; a requeue is due at finish time plus
//! `requeue_after`; nothing is reconciled before the main cache's initial list; `owns` maps every
//! owner reference of the main kind; a relist touches, and so re-triggers, every object.
//!
//! Requeues and quiescence (see [`work_queue`]): the liveness phase advances virtual time until
//! every requeue has run, so that what a delayed requeue writes (a TTL, a timeout, a periodic
//! status update) is judged by the end checks. A requeue asked by a reconcile that was itself
//! started by a requeue and changed nothing in any cluster is idle: a periodic requeue that found
//! nothing to do, which the liveness phase does not wait for, so a controller that requeues every
//! five minutes lets the world quiesce after one such round. A write counts if it moved a
//! revision (no-op patches do not); writes made by tasks a reconcile spawns are not seen.
//!
//! Everything (informers, queue, reconciles) runs as tasks of the node that built the controller,
//! so killing the node loses it all.

pub mod work_queue;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::future::{Either, select};
use futures::{FutureExt, Stream, StreamExt};
use kube_core::{DynamicObject, Resource};
use serde::{Serialize, de::DeserializeOwned};

use crate::client::Api;
use crate::informer::{self, ObjectRef, Store};
use crate::quiescence::Progress;
use crate::runner::panic_message;
use crate::trace::TraceEvent;
use crate::verdict::Verdict;
use crate::world::{Registration, World};
use work_queue::{Scheduled, WorkQueue};

/// What to do after a reconcile, as kube-runtime's `Action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the object again `duration` after this reconcile finishes (unless a change
    /// triggers it earlier).
    #[must_use]
    pub const fn requeue(duration: Duration) -> Self {
        Action { requeue_after: Some(duration) }
    }
    /// Reconcile again only when something changes.
    #[must_use]
    pub const fn await_change() -> Self {
        Action { requeue_after: None }
    }
    /// The requeue delay, if any.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.requeue_after {
            Some(d) => write!(f, "requeue {}ms", d.as_millis()),
            None => f.write_str("await change"),
        }
    }
}

/// The default bound of a controller's queue.
pub const QUEUE_LEN_MAX_DEFAULT: usize = 10_000;

/// At most this many waiting messages are taken in at once before reconciles start again.
const INBOX_DRAIN_MAX: usize = 10_000;

/// Tuning, as kube-runtime's `controller::Config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// At most this many reconciles at once (0: no limit).
    pub concurrency: u16,
    /// A change triggers a reconcile this long after it is seen, so bursts merge.
    pub debounce: Duration,
    /// At most this many objects queued; more are dropped and reported.
    pub queue_len_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { concurrency: 0, debounce: Duration::ZERO, queue_len_max: QUEUE_LEN_MAX_DEFAULT }
    }
}

impl Config {
    /// Set the concurrency limit.
    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency;
        self
    }
    /// Set the debounce.
    pub fn debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }
}

/// What the controller stream yields on failure, as kube-runtime's `controller::Error`.
#[derive(Debug, thiserror::Error)]
pub enum Error<E: std::error::Error + 'static> {
    /// The object was queued but is no longer in the cache (deleted meanwhile): not reconciled.
    #[error("object {0} not found in the cache")]
    ObjectNotFound(ObjectRef<DynamicObject>),
    /// The reconciler returned an error; the error policy decided what happens next.
    #[error("reconciler for object {1} failed")]
    ReconcilerFailed(#[source] E, ObjectRef<DynamicObject>),
    /// The queue was full (`queue_len_max`): the request was dropped.
    #[error("queue full ({0} objects): request for {1} dropped")]
    QueueFull(usize, ObjectRef<DynamicObject>),
}

/// A finished reconcile.
struct Done<K, E> {
    object_ref: ObjectRef<K>,
    object: Arc<K>,
    result: Result<Action, E>,
    /// The reconcile was started by a requeue (no trigger merged with it).
    by_requeue: bool,
    /// It changed something in some cluster.
    wrote: bool,
}

/// What reaches the controller's driver.
enum Msg<K, E> {
    /// An informer touched an object that maps to this request.
    Trigger(ObjectRef<K>),
    /// A reconcile finished.
    Done(Done<K, E>),
}

/// The user's reconcile, with the context captured.
type ReconcileFn<K, E> =
    Box<dyn FnMut(Arc<K>) -> futures::future::LocalBoxFuture<'static, Result<Action, E>>>;
/// The user's error policy, with the context captured.
type ErrorPolicyFn<K, E> = Box<dyn Fn(Arc<K>, &E) -> Action>;
/// What the controller stream yields.
type Outcome<K, E> = Result<(ObjectRef<K>, Action), Error<E>>;

/// The user's reconcile and error policy, with the context captured.
struct Handlers<K, E> {
    reconcile: ReconcileFn<K, E>,
    error_policy: ErrorPolicyFn<K, E>,
}

/// A controller for `K`, as kube-runtime's `Controller`.
pub struct Controller<K: Resource> {
    api: Api<K>,
    store: Store<K>,
    triggers: mpsc::UnboundedSender<ObjectRef<K>>,
    trigger_rx: mpsc::UnboundedReceiver<ObjectRef<K>>,
    config: Config,
}

impl<K> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// A controller for the objects of `api` matching `config`; starts its main informer.
    pub fn new(api: Api<K>, config: informer::Config) -> Self {
        let (triggers, trigger_rx) = mpsc::unbounded();
        let tx = triggers.clone();
        let store = informer::spawn(api.clone(), config, move |object: &Arc<K>| {
            let _ = tx.unbounded_send(ObjectRef::from_obj(&**object));
        });
        Controller { api, store, triggers, trigger_rx, config: Config::default() }
    }

    /// The main cache.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Tune concurrency, debounce and the queue bound.
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Reconcile the owner of every `Child` that changes: every owner reference whose kind and
    /// apiVersion are the main kind's. The informer is the controller's own; to read its cache
    /// too, start it with [`informer::reflector`] and use [`Controller::owns_stream`].
    pub fn owns<Child>(self, api: Api<Child>, config: informer::Config) -> Self
    where
        Child: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let owners = self.owner_mapper();
        let tx = self.triggers.clone();
        informer::spawn(api, config, move |child: &Arc<Child>| {
            for owner_ref in owners(&**child) {
                let _ = tx.unbounded_send(owner_ref);
            }
        });
        self
    }

    /// As [`Controller::owns`], from the objects a shared informer touches (kube-runtime's
    /// `owns_shared_stream`): the caller keeps the informer's [`Store`] to read the owned kind.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # use sim::runtime::{Controller, reflector, watcher};
    /// # fn f(parents: sim::Api<ConfigMap>, children: sim::Api<Secret>) {
    /// let secrets = reflector::reflector(children, watcher::Config::default());
    /// let controller = Controller::new(parents, watcher::Config::default()).owns_stream(secrets.subscribe());
    /// // `secrets.get(..)`, `secrets.state()` read the owned cache, e.g. from the reconcile's context.
    /// # }
    /// ```
    pub fn owns_stream<Child>(self, children: impl Stream<Item = Arc<Child>> + Unpin + 'static) -> Self
    where
        Child: Resource + 'static,
    {
        let owners = self.owner_mapper();
        self.trigger_from(children, move |child: Arc<Child>| owners(&*child))
    }

    /// As [`Controller::watches`], from the objects a shared informer touches (kube-runtime's
    /// `watches_shared_stream`): the caller keeps the informer's [`Store`] to read that kind.
    pub fn watches_stream<Other, I>(
        self,
        others: impl Stream<Item = Arc<Other>> + Unpin + 'static,
        mapper: impl Fn(Arc<Other>) -> I + 'static,
    ) -> Self
    where
        Other: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.trigger_from(others, mapper)
    }

    /// Map every item of `stream` to triggers, in a task of the current node that ends with the
    /// stream or with the controller.
    fn trigger_from<T, I>(
        self,
        mut stream: impl Stream<Item = T> + Unpin + 'static,
        mapper: impl Fn(T) -> I + 'static,
    ) -> Self
    where
        T: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let tx = self.triggers.clone();
        madsim::task::spawn_local(async move {
            while let Some(item) = stream.next().await {
                for target in mapper(item) {
                    if tx.unbounded_send(target).is_err() {
                        return;
                    }
                }
            }
        });
        self
    }

    /// Maps a child to its owners of the main kind (by kind and apiVersion).
    fn owner_mapper<Child: Resource>(&self) -> impl Fn(&Child) -> Vec<ObjectRef<K>> + 'static {
        let kind = self.api.resource.kind.clone();
        let api_version = self.api.resource.api_version.clone();
        move |child: &Child| {
            let meta = child.meta();
            meta.owner_references
                .iter()
                .flatten()
                .filter(|owner| owner.kind == kind && owner.api_version == api_version)
                .map(|owner| {
                    let owner_ref = ObjectRef::new(&owner.name);
                    match &meta.namespace {
                        Some(ns) => owner_ref.within(ns),
                        None => owner_ref,
                    }
                })
                .collect()
        }
    }

    /// Reconcile whatever `mapper` maps a changed `Other` to.
    pub fn watches<Other, I>(
        self,
        api: Api<Other>,
        config: informer::Config,
        mapper: impl Fn(Other) -> I + 'static,
    ) -> Self
    where
        Other: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let tx = self.triggers.clone();
        informer::spawn(api, config, move |other: &Arc<Other>| {
            for target in mapper((**other).clone()) {
                let _ = tx.unbounded_send(target);
            }
        });
        self
    }

    /// Run the controller: a stream of reconcile outcomes, as kube-runtime's. The work happens in
    /// tasks of the current node whether or not the stream is polled; poll it (`for_each`) to keep
    /// the node's main future alive.
    pub fn run<Ctx, E, Fut>(
        self,
        mut reconcile: impl FnMut(Arc<K>, Arc<Ctx>) -> Fut + 'static,
        error_policy: impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action + 'static,
        ctx: Arc<Ctx>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), Error<E>>>
    where
        Ctx: 'static,
        E: std::error::Error + 'static,
        Fut: Future<Output = Result<Action, E>> + 'static,
    {
        let (out_tx, out_rx) = mpsc::unbounded();
        let driver = Driver {
            world: self.api.client.world.clone(),
            node: self.api.client.node.clone(),
            kind: Arc::from(self.api.resource.kind.as_str()),
            store: self.store,
            queue: WorkQueue::new(self.config.queue_len_max),
            config: self.config,
            out: out_tx,
        };
        let reconcile_ctx = ctx.clone();
        let handlers = Handlers {
            reconcile: Box::new(move |object| reconcile(object, reconcile_ctx.clone()).boxed_local()),
            error_policy: Box::new(move |object, error| error_policy(object, error, ctx.clone())),
        };
        drop(self.triggers);
        madsim::task::spawn_local(driver.run(self.trigger_rx, handlers));
        out_rx
    }
}

/// The controller's scheduler loop, on the controller's node.
struct Driver<K: Resource, E: std::error::Error + 'static> {
    world: World,
    node: Arc<str>,
    kind: Arc<str>,
    store: Store<K>,
    queue: WorkQueue<ObjectRef<K>, Instant>,
    config: Config,
    out: mpsc::UnboundedSender<Outcome<K, E>>,
}

impl<K, E> Driver<K, E>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    E: std::error::Error + 'static,
{
    /// `Kind namespace/name`, as traces and verdicts name a reconciled object.
    fn describe(&self, object: &ObjectRef<K>) -> String {
        format!("{} {}", self.kind, object.key())
    }

    fn may_start(&self) -> bool {
        self.config.concurrency == 0 || self.queue.running() < usize::from(self.config.concurrency)
    }

    fn progress(&self) -> Progress {
        let start = self.world.with(|w| w.recorder().start());
        let since_start = |at: Instant| at.saturating_duration_since(start);
        let next_due = self.queue.next_due().map(since_start);
        let next_awaited_due = self.queue.next_awaited_due().map(since_start);
        Progress::Controller {
            name: self.node.clone(),
            running: self.queue.running(),
            next_due,
            next_awaited_due,
        }
    }

    /// Runs for the node's lifetime: each round waits for a trigger, a finished reconcile or the
    /// next due time.
    async fn run(mut self, triggers: mpsc::UnboundedReceiver<ObjectRef<K>>, mut handlers: Handlers<K, E>) {
        let registration = Registration::new(&self.world, self.progress());
        if self.store.wait_until_ready().await.is_err() {
            return;
        }
        let (done_tx, done_rx) = mpsc::unbounded::<Done<K, E>>();
        // Both halves stay open (the driver holds `done_tx`), so the inbox never ends.
        let mut inbox = futures::stream::select(triggers.map(Msg::Trigger), done_rx.map(Msg::Done));
        loop {
            // A PauseReconciles fault holds every start while the caches keep advancing.
            crate::faults::pause_reconciles::reconcile_gate(&self.world, &self.node).await;
            let now = Instant::now();
            while self.may_start() {
                let Some((object, origin)) = self.queue.pop_due_request(now) else { break };
                let by_requeue = matches!(origin, work_queue::Origin::Requeue { .. });
                self.start(object, by_requeue, &mut handlers, &done_tx);
            }
            registration.update(self.progress());
            let next_due = self.queue.next_due().filter(|_| self.may_start());
            let message = match next_due {
                Some(at) => match select(inbox.next(), Box::pin(madsim::time::sleep_until(at))).await {
                    Either::Left((message, _)) => message,
                    Either::Right(_) => continue,
                },
                None => inbox.next().await,
            };
            let Some(message) = message else { return };
            self.receive(message, &handlers);
            // Take in everything already waiting before starting reconciles, as kube-runtime's
            // scheduler drains its request stream first: simultaneous triggers merge.
            for _ in 0..INBOX_DRAIN_MAX {
                match inbox.next().now_or_never() {
                    Some(Some(message)) => self.receive(message, &handlers),
                    _ => break,
                }
            }
        }
    }

    fn receive(&mut self, message: Msg<K, E>, handlers: &Handlers<K, E>) {
        match message {
            Msg::Trigger(object) => self.schedule(object, Instant::now()),
            Msg::Done(done) => self.finish(done, handlers),
        }
    }

    /// Queue a request made now for `at` (plus the debounce, which applies to every request, as
    /// in kube-runtime's scheduler).
    fn schedule(&mut self, object: ObjectRef<K>, at: Instant) {
        self.enqueue(object, at, None);
    }

    /// Queue a trigger (`requeue: None`) or a requeue (`Some(idle)`).
    fn enqueue(&mut self, object: ObjectRef<K>, at: Instant, requeue: Option<bool>) {
        let due = at + self.config.debounce;
        let scheduled = match requeue {
            Some(idle) => self.queue.schedule_requeue(object.clone(), at, due, idle),
            None => self.queue.schedule_debounced(object.clone(), at, due),
        };
        if scheduled == Scheduled::Full {
            let text = format!(
                "queue full ({} objects): request for {} dropped",
                self.queue.len(),
                self.describe(&object)
            );
            self.world.with(|w| {
                w.recorder().queue_overflows += 1;
                w.trace(&self.node, TraceEvent::Note { text });
            });
            let _ = self.out.unbounded_send(Err(Error::QueueFull(self.queue.len(), object.erase())));
        }
    }

    fn start(
        &mut self,
        object_ref: ObjectRef<K>,
        by_requeue: bool,
        handlers: &mut Handlers<K, E>,
        done: &mpsc::UnboundedSender<Done<K, E>>,
    ) {
        let Some(object) = self.store.get(&object_ref) else {
            // Deleted since it was queued: kube-runtime reports it and does not reconcile.
            self.queue.finish(&object_ref);
            let _ = self.out.unbounded_send(Err(Error::ObjectNotFound(object_ref.erase())));
            return;
        };
        let described = self.describe(&object_ref);
        self.world.with(|w| {
            w.recorder().stats.reconciles += 1;
            w.profile().note_reconcile(&self.node);
            let event =
                TraceEvent::ReconcileStart { controller: self.node.to_string(), object: described.clone() };
            w.trace(&self.node, event);
        });
        let future = Writes::watch(self.world.clone(), (handlers.reconcile)(object.clone()));
        let done = done.clone();
        let world = self.world.clone();
        let node = self.node.clone();
        madsim::task::spawn_local(async move {
            match std::panic::AssertUnwindSafe(future).catch_unwind().await {
                Ok((result, wrote)) => {
                    let _ = done.unbounded_send(Done { object_ref, object, result, by_requeue, wrote });
                }
                Err(payload) => {
                    let message = panic_message(&*payload);
                    let crash = Verdict::Crash { node: node.to_string(), object: Some(described), message };
                    world.with(|w| w.fail(crash));
                }
            }
        });
    }

    fn finish(&mut self, done: Done<K, E>, handlers: &Handlers<K, E>) {
        let Done { object_ref, object, result, by_requeue, wrote } = done;
        self.queue.finish(&object_ref);
        // A requeue that found nothing to do and asks to be run again is a periodic no-op.
        let idle = by_requeue && result.is_ok() && !wrote;
        let (action, outcome, summary) = match result {
            Ok(action) => (action, Ok((object_ref.clone(), action)), action.to_string()),
            Err(error) => {
                let action = (handlers.error_policy)(object, &error);
                let summary = format!("error: {error}; {action}");
                (action, Err(Error::ReconcilerFailed(error, object_ref.erase())), summary)
            }
        };
        let described = self.describe(&object_ref);
        let failed = outcome.is_err();
        self.world.with(|w| {
            w.quiescence().note_reconcile(&self.node, &described, failed.then_some(summary.as_str()));
            let event = TraceEvent::ReconcileEnd {
                controller: self.node.to_string(),
                object: described,
                result: summary,
            };
            w.trace(&self.node, event);
        });
        let _ = self.out.unbounded_send(outcome);
        if let Some(after) = action.requeue_after() {
            // Due at finish time plus requeue_after, as kube-runtime's runner schedules it.
            self.enqueue(object_ref, Instant::now() + after, Some(idle));
        }
    }
}

/// A reconcile's future, watched for writes: single-threaded, so whatever moves a cluster's
/// revision while this future is being polled was written by this reconcile. A write that
/// changes nothing (a no-op patch) moves no revision and does not count.
struct Writes<F> {
    world: World,
    inner: F,
    wrote: bool,
}

impl<F: Future + Unpin> Writes<F> {
    fn watch(world: World, inner: F) -> Self {
        Writes { world, inner, wrote: false }
    }
}

impl<F: Future + Unpin> Future for Writes<F> {
    type Output = (F::Output, bool);

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let before = self.world.with(|w| w.clusters().revisions());
        let poll = std::pin::Pin::new(&mut self.inner).poll(cx);
        if self.world.with(|w| w.clusters().revisions()) != before {
            self.wrote = true;
        }
        poll.map(|output| (output, self.wrote))
    }
}
