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
//! revision (no-op patches do not); writes made by tasks a reconcile spawns are not seen. A
//! requeue asked with [`Action::requeue_idle`] is idle whatever its reconcile wrote: for a
//! component that plays the world's own clock (the kubelet-lite's crash-loop back-off).
//!
//! Everything runs on the node that built the controller (informers and reconciles as its tasks,
//! the queue inside the stream `run` returns, which the node's main future polls), so killing the
//! node loses it all.

pub mod work_queue;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{Either, select};
use futures::{FutureExt, Stream, StreamExt, TryFuture, TryFutureExt, TryStream, TryStreamExt};
use kube_core::{DynamicObject, Resource};
// The driver's channels: one node's tasks only, so a single-threaded channel (no per-message
// node allocation nor atomic waker, which futures' mpsc has for threads): the driver polls its
// inbox several times per message.
use local_channel::mpsc;
use serde::{Serialize, de::DeserializeOwned};

use crate::client::Api;
use crate::informer::{self, ObjectRef, Store};
use crate::quiescence::Progress;
use crate::recorder::RunClock;
use crate::trace::{EventRef, TraceEvent};
use crate::utils::{Backoff, StreamBackoff, backoff::DefaultBackoff};
use crate::watcher;
use crate::world::{Registration, World};
use work_queue::{Scheduled, WorkQueue};

/// What to do after a reconcile, as kube-runtime's `Action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
    idle: bool,
}

impl Action {
    /// Reconcile the object again `duration` after this reconcile finishes (unless a change
    /// triggers it earlier).
    #[must_use]
    pub const fn requeue(duration: Duration) -> Self {
        Action { requeue_after: Some(duration), idle: false }
    }
    /// [`Action::requeue`], as a requeue the liveness phase does not wait for (an idle one, see
    /// the module doc), whatever this reconcile wrote. Not in kube-runtime: it is for a component
    /// that plays the world outside the controllers, whose next step comes on its own schedule and
    /// is not work a controller still owes (the kubelet-lite restarting a crashed container when
    /// its back-off ends: a crash-looping Pod never settles, yet the world is quiet between its
    /// restarts). A controller that means to finish something later wants [`Action::requeue`].
    #[must_use]
    pub const fn requeue_idle(duration: Duration) -> Self {
        Action { requeue_after: Some(duration), idle: true }
    }
    /// Reconcile again only when something changes.
    #[must_use]
    pub const fn await_change() -> Self {
        Action { requeue_after: None, idle: false }
    }
    /// The requeue delay, if any.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
    /// Whether this is an [`Action::requeue_idle`].
    pub const fn is_idle_requeue(&self) -> bool {
        self.idle && self.requeue_after.is_some()
    }

    /// The text [`fmt::Display`] writes (`requeue 300000ms`, `await change`), built directly: every
    /// reconcile's end is traced with it, and the formatting machinery over a `u128` of
    /// milliseconds cost about a percent of a small seed.
    fn text(self) -> String {
        match self.requeue_after.map(|d| (d, u64::try_from(d.as_millis()))) {
            Some((_, Ok(millis))) => ["requeue ", &millis.to_string(), "ms"].concat(),
            // Beyond u64::MAX milliseconds (585 million years): the exact figure, the slow way.
            Some((d, Err(_))) => format!("requeue {}ms", d.as_millis()),
            None => "await change".to_owned(),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// A request to reconcile an object, with why it was made, as kube-runtime's
/// `controller::ReconcileRequest`. Requests compare (and deduplicate) by object only: the reason
/// is ignored, so an object takes one place in a queue whatever the reasons it was asked for.
pub struct ReconcileRequest<K> {
    /// The object to reconcile.
    pub obj_ref: ObjectRef<K>,
    /// Why the reconcile was asked for.
    pub reason: ReconcileReason,
}

impl<K> From<ObjectRef<K>> for ReconcileRequest<K> {
    fn from(obj_ref: ObjectRef<K>) -> Self {
        ReconcileRequest { obj_ref, reason: ReconcileReason::Unknown }
    }
}

impl<K> Clone for ReconcileRequest<K> {
    fn clone(&self) -> Self {
        ReconcileRequest { obj_ref: self.obj_ref.clone(), reason: self.reason.clone() }
    }
}
impl<K> fmt::Debug for ReconcileRequest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileRequest")
            .field("obj_ref", &self.obj_ref)
            .field("reason", &self.reason)
            .finish()
    }
}
impl<K> PartialEq for ReconcileRequest<K> {
    fn eq(&self, other: &Self) -> bool {
        self.obj_ref == other.obj_ref
    }
}
impl<K> Eq for ReconcileRequest<K> {}
impl<K> PartialOrd for ReconcileRequest<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
/// By object only, as equality: what [`scheduler`](crate::scheduler::scheduler) orders by (kube
/// hashes instead).
impl<K> Ord for ReconcileRequest<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.obj_ref.cmp(&other.obj_ref)
    }
}
impl<K> std::hash::Hash for ReconcileRequest<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.obj_ref.hash(state);
    }
}

/// Why a reconcile was asked for, as kube-runtime's `controller::ReconcileReason`. As in kube, the
/// reconciler does not see it.
#[derive(Clone, Debug)]
pub enum ReconcileReason {
    /// A request from [`Controller::reconcile_on`], or one made from a bare `ObjectRef`.
    Unknown,
    /// The object itself changed.
    ObjectUpdated,
    /// A related object changed and a mapper (`owns`, `watches`) led to this one.
    RelatedObjectUpdated {
        /// The related object.
        obj_ref: Box<ObjectRef<DynamicObject>>,
    },
    /// The reconciler's `Action` asked for a requeue.
    ReconcilerRequestedRetry,
    /// The error policy's `Action` asked for a requeue.
    ErrorPolicyRequestedRetry,
    /// [`Controller::reconcile_all_on`] asked for every object.
    BulkReconcile,
    /// A reason of the caller's own, for requests put into the queue stream directly.
    Custom {
        /// The reason.
        reason: String,
    },
}

impl fmt::Display for ReconcileReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReconcileReason::Unknown => f.write_str("unknown"),
            ReconcileReason::ObjectUpdated => f.write_str("object updated"),
            ReconcileReason::RelatedObjectUpdated { obj_ref } => {
                write!(f, "related object updated: {obj_ref}")
            }
            ReconcileReason::BulkReconcile => f.write_str("bulk reconcile requested"),
            ReconcileReason::ReconcilerRequestedRetry => f.write_str("reconciler requested retry"),
            ReconcileReason::ErrorPolicyRequestedRetry => f.write_str("error policy requested retry"),
            ReconcileReason::Custom { reason } => f.write_str(reason),
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
pub enum Error<E: std::error::Error + 'static, Q: std::error::Error + 'static = watcher::Error> {
    /// The object was queued but is no longer in the cache (deleted meanwhile): not reconciled.
    #[error("object {0} not found in the cache")]
    ObjectNotFound(ObjectRef<DynamicObject>),
    /// The reconciler returned an error; the error policy decided what happens next.
    #[error("reconciler for object {1} failed")]
    ReconcilerFailed(#[source] E, ObjectRef<DynamicObject>),
    /// The queue was full (`queue_len_max`): the request was dropped.
    #[error("queue full ({0} objects): request for {1} dropped")]
    QueueFull(usize, ObjectRef<DynamicObject>),
    /// A trigger stream given to `for_stream`, `owns_stream` or `watches_stream` yielded an error
    /// (a failed list or watch, an expiry); the stream backs off and goes on.
    #[error("event queue error: {0}")]
    QueueError(#[source] Q),
}

/// A finished reconcile.
struct Done<K, E> {
    /// The queue's own reference (see [`WorkQueue::pop_due_shared`]).
    object_ref: Arc<ObjectRef<K>>,
    object: Arc<K>,
    result: Result<Action, E>,
    /// The reconcile was started by a requeue (no trigger merged with it).
    by_requeue: bool,
    /// It changed something in some cluster.
    wrote: bool,
    /// `Kind namespace/name`, as the start was traced (see `Driver::describe`).
    described: String,
}

/// What reaches the controller's driver.
enum Msg<K, E, Q> {
    /// An informer touched an object that maps to this request.
    Trigger(ObjectRef<K>),
    /// A trigger stream yielded an error.
    QueueError(Q),
    /// The queue stream of an [`applier`] ended: shut down gracefully, as kube's applier does.
    QueueEnded,
    /// A reconcile finished.
    Done(Done<K, E>),
}

/// What a trigger task sends the driver.
enum Trigger<K> {
    Request(ObjectRef<K>),
    Error(watcher::Error),
}

/// The user's reconcile, with the context captured. The closure may borrow what outlives the
/// run stream (`'a`); the futures it returns are `'static`, as kube-runtime's.
type ReconcileFn<'a, K, E> =
    Box<dyn FnMut(Arc<K>) -> futures::future::LocalBoxFuture<'static, Result<Action, E>> + 'a>;
/// The user's error policy, with the context captured.
type ErrorPolicyFn<'a, K, E> = Box<dyn Fn(Arc<K>, &E) -> Action + 'a>;
/// What the controller stream yields.
type Outcome<K, E, Q> = Result<(ObjectRef<K>, Action), Error<E, Q>>;
/// A future that starts a graceful shutdown.
type ShutdownFn = futures::future::LocalBoxFuture<'static, ()>;

/// The future `make` returns, boxed: the box is allocated first and the future written into it,
/// rather than built on the stack and copied. A reconcile's future is as large as its largest
/// state (kilobytes, most of it not yet written when it starts), and `Box::new` copied all of it
/// on every reconcile.
fn boxed_in_place<'a, F: Future + 'a>(
    make: impl FnOnce() -> F,
) -> futures::future::LocalBoxFuture<'a, F::Output> {
    let boxed: Box<F> = Box::write(Box::new_uninit(), make());
    Box::into_pin(boxed)
}

/// The user's reconcile and error policy, with the context captured.
struct Handlers<'a, K, E> {
    reconcile: ReconcileFn<'a, K, E>,
    error_policy: ErrorPolicyFn<'a, K, E>,
}

/// Where a controller runs and what it reconciles: its world, its node and its main kind.
struct Origin {
    world: World,
    node: Arc<str>,
    kind: String,
    api_version: String,
}

/// A controller for `K`, as kube-runtime's `Controller`.
pub struct Controller<K: Resource> {
    origin: Origin,
    store: Store<K>,
    triggers: mpsc::Sender<Trigger<K>>,
    trigger_rx: mpsc::Receiver<Trigger<K>>,
    config: Config,
    /// Futures that start a graceful shutdown (any of them).
    shutdown: Vec<futures::future::LocalBoxFuture<'static, ()>>,
    /// The backoff set by [`Controller::trigger_backoff`], shared by every trigger stream.
    trigger_backoff: SharedBackoff,
}

/// A backoff that [`Controller::trigger_backoff`] may set after trigger streams started.
type SharedBackoff = Arc<Mutex<Option<Box<dyn Backoff>>>>;

/// The backoff of one trigger stream: kube's default ([`DefaultBackoff`]), its own, until
/// [`Controller::trigger_backoff`] sets one that every trigger stream then shares (kube applies
/// one backoff to the merged trigger streams).
struct TriggerBackoff {
    own: DefaultBackoff,
    chosen: SharedBackoff,
}

impl TriggerBackoff {
    fn chosen(&self) -> std::sync::MutexGuard<'_, Option<Box<dyn Backoff>>> {
        self.chosen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Iterator for TriggerBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let chosen = self.chosen().as_mut().map(|backoff| backoff.next());
        match chosen {
            Some(delay) => delay,
            None => self.own.next(),
        }
    }
}

impl Backoff for TriggerBackoff {
    fn reset(&mut self) {
        if let Some(backoff) = self.chosen().as_mut() {
            backoff.reset();
        }
        self.own.reset();
    }
}

impl<K> Controller<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// A controller for the objects of `api` matching `config`; starts its main informer.
    pub fn new(api: Api<K>, config: informer::Config) -> Self {
        let (triggers, trigger_rx) = mpsc::channel();
        let tx = triggers.clone();
        let store = informer::spawn(api.clone(), config, move |object: &Arc<K>| {
            let _ = tx.send(Trigger::Request(ObjectRef::from_obj(&**object)));
        });
        let origin = Origin {
            world: api.client.world.clone(),
            node: api.client.node.clone(),
            kind: api.resource.kind.clone(),
            api_version: api.resource.api_version.clone(),
        };
        Controller {
            origin,
            store,
            triggers,
            trigger_rx,
            config: Config::default(),
            shutdown: Vec::new(),
            trigger_backoff: SharedBackoff::default(),
        }
    }

    /// A controller for the objects `trigger` yields, reading them from `reader`, as
    /// kube-runtime's `for_stream`: the stream is typically a
    /// [`watcher`](crate::watcher::watcher) reflected into `reader`'s writer.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// use sim::runtime::{Controller, WatchStreamExt, predicates, reflector, watcher};
    /// # fn f(api: sim::Api<ConfigMap>) {
    /// let (reader, writer) = reflector::store();
    /// let stream = watcher(api, watcher::Config::default())
    ///     .default_backoff()
    ///     .reflect(writer)
    ///     .applied_objects()
    ///     .predicate_filter(predicates::generation, Default::default());
    /// let controller = Controller::for_stream(stream, reader);
    /// # let _ = controller;
    /// # }
    /// ```
    ///
    /// The stream is polled by a task of the calling node (the node's name comes from madsim,
    /// as a Pod's hostname is its name), so call it inside a simulated controller, as every
    /// `Controller` constructor.
    ///
    /// # Panics
    /// Outside a simulated run (no world to trace into).
    pub fn for_stream(
        trigger: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        reader: Store<K>,
    ) -> Self
    where
        K::DynamicType: Default,
    {
        Self::for_stream_with(trigger, reader, Default::default())
    }

    /// [`Controller::for_stream`] for a type known at run time, as kube-runtime's.
    pub fn for_stream_with(
        trigger: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        reader: Store<K>,
        dyntype: K::DynamicType,
    ) -> Self {
        let controller = Self::over(reader, &dyntype);
        controller.trigger_from(trigger, |object: K| [ObjectRef::from_obj(&object)])
    }

    /// A controller for the objects a shared stream yields (a [`ReflectHandle`] of
    /// [`reflector::store_shared`](crate::reflector::store_shared)), reading them from `reader`,
    /// as kube-runtime's `for_shared_stream`.
    ///
    /// [`ReflectHandle`]: crate::reflector::ReflectHandle
    pub fn for_shared_stream(trigger: impl Stream<Item = Arc<K>> + Send + 'static, reader: Store<K>) -> Self
    where
        K::DynamicType: Default,
    {
        Self::for_shared_stream_with(trigger, reader, Default::default())
    }

    /// [`Controller::for_shared_stream`] for a type known at run time, as kube-runtime's.
    pub fn for_shared_stream_with(
        trigger: impl Stream<Item = Arc<K>> + Send + 'static,
        reader: Store<K>,
        dyntype: K::DynamicType,
    ) -> Self {
        let controller = Self::over(reader, &dyntype);
        controller.trigger_from_shared(trigger, |object: Arc<K>| [ObjectRef::from_obj(&*object)])
    }

    /// A controller with no informer of its own, over `reader`, on the calling node.
    fn over(reader: Store<K>, dyntype: &K::DynamicType) -> Self {
        let (world, node) = crate::ambient::current_node()
            .expect("Controller::for_stream runs inside a simulated controller (a node of a Sim run)");
        let origin = Origin {
            world,
            node,
            kind: K::kind(dyntype).into_owned(),
            api_version: K::api_version(dyntype).into_owned(),
        };
        let (triggers, trigger_rx) = mpsc::channel();
        Controller {
            origin,
            store: reader,
            triggers,
            trigger_rx,
            config: Config::default(),
            shutdown: Vec::new(),
            trigger_backoff: SharedBackoff::default(),
        }
    }

    /// Start a graceful shutdown when `trigger` resolves, as kube-runtime's: no new reconcile
    /// starts, the running ones finish, and then [`Controller::run`]'s stream ends. Additive:
    /// the first of several triggers starts it.
    #[must_use]
    pub fn graceful_shutdown_on(mut self, trigger: impl Future<Output = ()> + 'static) -> Self {
        self.shutdown.push(trigger.boxed_local());
        self
    }

    /// Shut down on SIGINT or SIGTERM, as kube-runtime's. No signal reaches a simulated node,
    /// so in a simulation this never fires (a crash is the fault engine's job); accepted so that
    /// a production `main` ports unchanged.
    #[must_use]
    pub fn shutdown_on_signal(self) -> Self {
        self
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

    /// Back off the trigger streams with `backoff` after an error, as kube-runtime's
    /// `trigger_backoff` (instead of [`DefaultBackoff`]). One backoff for all of them, as kube's
    /// over its merged trigger streams: the streams of [`Controller::for_stream`],
    /// [`Controller::owns_stream`] and [`Controller::watches_stream`], made before or after this
    /// call. The informers that [`Controller::new`], [`Controller::owns`] and
    /// [`Controller::watches`] start retry after the engine's informer pause instead.
    #[must_use]
    pub fn trigger_backoff(self, backoff: impl Backoff + 'static) -> Self {
        *self.trigger_backoff.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(backoff));
        self
    }

    /// Reconcile object `object_ref` whenever `trigger` yields it, as kube-runtime's
    /// `reconcile_on` (for objects whose changes come from outside the cluster). Additive; a
    /// stream that ends just stops being polled.
    #[must_use]
    pub fn reconcile_on(self, trigger: impl Stream<Item = ObjectRef<K>> + Send + 'static) -> Self {
        self.trigger_from_shared(trigger, |object_ref| [object_ref])
    }

    /// Reconcile every object of the main cache whenever `trigger` yields, as kube-runtime's
    /// `reconcile_all_on` (a configuration reload, say). Additive; a stream that ends just stops
    /// being polled.
    #[must_use]
    pub fn reconcile_all_on(self, trigger: impl Stream<Item = ()> + Send + 'static) -> Self {
        let store = self.store();
        self.trigger_from_shared(trigger, move |()| {
            store.state().iter().map(|object| ObjectRef::from_obj(&**object)).collect::<Vec<_>>()
        })
    }

    /// Reconcile the owner of every `Child` that changes: every owner reference whose kind and
    /// apiVersion are the main kind's. The informer is the controller's own; to read its cache
    /// too, start it with [`informer::informer`] and use [`Controller::owns_shared_stream`], or
    /// reflect a [`watcher`](crate::watcher::watcher) and use [`Controller::owns_stream`].
    pub fn owns<Child>(self, api: Api<Child>, config: informer::Config) -> Self
    where
        Child: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let owners = self.owner_mapper();
        let tx = self.triggers.clone();
        informer::spawn(api, config, move |child: &Arc<Child>| {
            for owner_ref in owners(&**child) {
                let _ = tx.send(Trigger::Request(owner_ref));
            }
        });
        self
    }

    /// As [`Controller::owns`], from a stream of children (errors included), as kube-runtime's
    /// `owns_stream`: typically `watcher(api, config).touched_objects()`, possibly reflected.
    #[must_use]
    pub fn owns_stream<Child>(
        self,
        trigger: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    ) -> Self
    where
        Child: Resource + Send + 'static,
    {
        let owners = self.owner_mapper();
        self.trigger_from(trigger, move |child: Child| owners(&child))
    }

    /// As [`Controller::owns`], from a shared stream of children (a [`Store::subscribe`] or a
    /// [`ReflectHandle`](crate::reflector::ReflectHandle)), as kube-runtime's
    /// `owns_shared_stream`: the caller keeps the children's [`Store`] to read the owned kind.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # use sim::runtime::{Controller, reflector, watcher};
    /// # fn f(parents: sim::Api<ConfigMap>, children: sim::Api<Secret>) {
    /// let secrets = reflector::informer(children, watcher::Config::default());
    /// let controller =
    ///     Controller::new(parents, watcher::Config::default()).owns_shared_stream(secrets.subscribe());
    /// // `secrets.get(..)`, `secrets.state()` read the owned cache, e.g. from the reconcile's context.
    /// # }
    /// ```
    #[must_use]
    pub fn owns_shared_stream<Child>(self, children: impl Stream<Item = Arc<Child>> + 'static) -> Self
    where
        Child: Resource + 'static,
    {
        let owners = self.owner_mapper();
        self.trigger_from_shared(children, move |child: Arc<Child>| owners(&*child))
    }

    /// As [`Controller::watches`], from a stream of objects (errors included), as kube-runtime's
    /// `watches_stream`.
    #[must_use]
    pub fn watches_stream<Other, I>(
        self,
        trigger: impl Stream<Item = Result<Other, watcher::Error>> + Send + 'static,
        mapper: impl Fn(Other) -> I + 'static,
    ) -> Self
    where
        Other: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.trigger_from(trigger, mapper)
    }

    /// As [`Controller::watches`], from a shared stream (a [`Store::subscribe`] or a
    /// [`ReflectHandle`](crate::reflector::ReflectHandle)), as kube-runtime's
    /// `watches_shared_stream`: the caller keeps that kind's [`Store`] to read it.
    #[must_use]
    pub fn watches_shared_stream<Other, I>(
        self,
        others: impl Stream<Item = Arc<Other>> + 'static,
        mapper: impl Fn(Arc<Other>) -> I + 'static,
    ) -> Self
    where
        Other: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.trigger_from_shared(others, mapper)
    }

    /// Map every item of a shared `stream` to triggers, in a task of the current node that ends
    /// with the stream or with the controller.
    fn trigger_from_shared<T, I>(
        self,
        stream: impl Stream<Item = T> + 'static,
        mapper: impl Fn(T) -> I + 'static,
    ) -> Self
    where
        T: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let tx = self.triggers.clone();
        madsim::task::spawn_local(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(item) = stream.next().await {
                for target in mapper(item) {
                    if tx.send(Trigger::Request(target)).is_err() {
                        return;
                    }
                }
            }
        });
        self
    }

    /// Map every `Ok` item of a trigger stream to triggers and pass its errors on to
    /// [`Controller::run`]'s stream, pausing the stream after each error with kube-runtime's
    /// default trigger backoff ([`DefaultBackoff`]), in a task of the current node.
    fn trigger_from<T, I>(
        self,
        stream: impl Stream<Item = Result<T, watcher::Error>> + 'static,
        mapper: impl Fn(T) -> I + 'static,
    ) -> Self
    where
        T: 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let tx = self.triggers.clone();
        let backoff = TriggerBackoff { own: DefaultBackoff::default(), chosen: self.trigger_backoff.clone() };
        madsim::task::spawn_local(async move {
            let mut stream = std::pin::pin!(StreamBackoff::new(stream, backoff));
            while let Some(item) = stream.next().await {
                let sent = match item {
                    Ok(object) => {
                        mapper(object).into_iter().all(|target| tx.send(Trigger::Request(target)).is_ok())
                    }
                    Err(error) => tx.send(Trigger::Error(error)).is_ok(),
                };
                if !sent {
                    return;
                }
            }
        });
        self
    }

    /// Maps a child to its owners of the main kind (by kind and apiVersion).
    fn owner_mapper<Child: Resource>(&self) -> impl Fn(&Child) -> Vec<ObjectRef<K>> + 'static {
        let kind = self.origin.kind.clone();
        let api_version = self.origin.api_version.clone();
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
                let _ = tx.send(Trigger::Request(target));
            }
        });
        self
    }

    /// Run the controller: a stream of reconcile outcomes, as kube-runtime's. As there, the
    /// scheduler runs inside the returned stream, so poll it (`for_each`) for anything to be
    /// reconciled; the closures may therefore borrow what outlives the stream (kube's `run`
    /// needs no `'static` closures either), while each reconcile future is `'static` and runs
    /// as a task of the current node.
    pub fn run<'a, Ctx, E, Fut>(
        self,
        mut reconcile: impl FnMut(Arc<K>, Arc<Ctx>) -> Fut + 'a,
        error_policy: impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action + 'a,
        ctx: Arc<Ctx>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), Error<E>>> + 'a
    where
        Ctx: 'a,
        E: std::error::Error + 'static,
        Fut: Future<Output = Result<Action, E>> + 'static,
    {
        let shutdown = (!self.shutdown.is_empty())
            .then(|| futures::future::select_all(self.shutdown).map(|_| ()).boxed_local());
        let reconcile_ctx = ctx.clone();
        let handlers = Handlers {
            reconcile: Box::new(move |object| boxed_in_place(|| reconcile(object, reconcile_ctx.clone()))),
            error_policy: Box::new(move |object, error| error_policy(object, error, ctx.clone())),
        };
        drop(self.triggers);
        let triggers = self.trigger_rx.map(|trigger| match trigger {
            Trigger::Request(object) => Msg::Trigger(object),
            Trigger::Error(error) => Msg::QueueError(error),
        });
        drive(self.origin, self.store, self.config, triggers, handlers, shutdown)
    }
}

/// The stream of a controller's outcomes, with its driver inside: what [`Controller::run`] and
/// [`applier`] return.
fn drive<'a, K, E, Q>(
    origin: Origin,
    store: Store<K>,
    config: Config,
    triggers: impl Stream<Item = Msg<K, E, Q>> + Unpin + 'a,
    handlers: Handlers<'a, K, E>,
    shutdown: Option<ShutdownFn>,
) -> impl Stream<Item = Outcome<K, E, Q>> + 'a
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    E: std::error::Error + 'static,
    Q: std::error::Error + 'static,
{
    let (out_tx, out_rx) = mpsc::channel();
    let driver = Driver {
        world: origin.world,
        node: origin.node,
        kind: Arc::from(origin.kind.as_str()),
        store,
        queue: WorkQueue::new(config.queue_len_max),
        config,
        out: out_tx,
        shutting_down: false,
        clock: RunClock::current(),
    };
    // The driver yields nothing itself: what it decides goes out through `out_tx`, which it
    // owns, so the outcomes end once the driver has ended and they are all taken.
    let driver = futures::stream::once(driver.run(triggers, handlers, shutdown))
        .filter_map(|()| futures::future::ready(None));
    futures::stream::select(out_rx, driver)
}

/// Apply a reconciler to the objects a queue stream asks for, as kube-runtime's `applier`: the
/// "hard-mode" [`Controller`], with kube's rules (see [`work_queue`]). `store` is the cache the
/// objects are read from (typically a [`reflector`](crate::reflector::reflector)'s), `queue` a
/// stream of requests (anything `Into<ReconcileRequest<K>>`, such as an `ObjectRef<K>`) and of
/// errors, which come out as [`Error::QueueError`]. Nothing is reconciled before `store` is
/// ready. When `queue` ends, the applier shuts down gracefully: requeues are dropped, running
/// reconciles finish, then the stream ends.
///
/// As [`Controller::run`], the scheduler runs inside the returned stream, on the calling node
/// (call it inside a simulated controller), and each reconcile future is a task of that node.
/// `config.debounce` and `config.concurrency` apply as in kube.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use futures::StreamExt;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// use sim::runtime::controller::{Action, Config, applier};
/// use sim::runtime::{WatchStreamExt, reflector, watcher};
/// # #[derive(Debug, thiserror::Error)] #[error("e")] struct E;
/// # async fn f(api: sim::Api<ConfigMap>) {
/// let (reader, writer) = reflector::store();
/// let queue = watcher(api, watcher::Config::default())
///     .default_backoff()
///     .reflect(writer)
///     .touched_objects()
///     .map(|object| object.map(|cm| reflector::ObjectRef::from_obj(&cm)));
/// applier(
///     |_cm: Arc<ConfigMap>, _ctx: Arc<()>| async { Ok::<_, E>(Action::await_change()) },
///     |_cm, _error, _ctx| Action::await_change(),
///     Arc::new(()),
///     reader,
///     queue,
///     Config::default(),
/// )
/// .for_each(|_| async {})
/// .await;
/// # }
/// ```
///
/// # Panics
/// Outside a simulated run (no node to run on).
pub fn applier<'a, K, QueueStream, ReconcilerFut, Ctx>(
    mut reconciler: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut + 'a,
    error_policy: impl Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action + 'a,
    context: Arc<Ctx>,
    store: Store<K>,
    queue: QueueStream,
    config: Config,
) -> impl Stream<Item = Outcome<K, ReconcilerFut::Error, QueueStream::Error>> + 'a
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    Ctx: 'a,
    ReconcilerFut: TryFuture<Ok = Action> + 'static,
    ReconcilerFut::Error: std::error::Error + 'static,
    QueueStream: TryStream + 'a,
    QueueStream::Ok: Into<ReconcileRequest<K>>,
    QueueStream::Error: std::error::Error + 'static,
{
    let (world, node) = crate::ambient::current_node()
        .expect("applier runs inside a simulated controller (a node of a Sim run)");
    let dyntype = K::DynamicType::default();
    let origin = Origin {
        world,
        node,
        kind: K::kind(&dyntype).into_owned(),
        api_version: K::api_version(&dyntype).into_owned(),
    };
    let reconcile_ctx = context.clone();
    let handlers = Handlers {
        reconcile: Box::new(move |object| {
            boxed_in_place(|| TryFutureExt::into_future(reconciler(object, reconcile_ctx.clone())))
        }),
        error_policy: Box::new(move |object, error| error_policy(object, error, context.clone())),
    };
    let triggers = queue
        .into_stream()
        .map(|item| match item {
            Ok(request) => Msg::Trigger(request.into().obj_ref),
            Err(error) => Msg::QueueError(error),
        })
        .chain(futures::stream::once(futures::future::ready(Msg::QueueEnded)));
    drive(origin, store, config, Box::pin(triggers), handlers, None)
}

/// The controller's scheduler loop, on the controller's node.
struct Driver<K: Resource, E: std::error::Error + 'static, Q: std::error::Error + 'static> {
    world: World,
    node: Arc<str>,
    kind: Arc<str>,
    store: Store<K>,
    queue: WorkQueue<ObjectRef<K>, Instant>,
    config: Config,
    out: mpsc::Sender<Outcome<K, E, Q>>,
    /// A graceful shutdown started: no reconcile starts; the driver ends when none runs.
    shutting_down: bool,
    /// The run's clock (about forty reads a seed), read without `Instant::now()`'s detour.
    clock: RunClock,
}

/// What wakes the driver.
enum Wake<M> {
    /// A message, or `None` once the inbox ended.
    Message(Option<M>),
    /// The next due request fell due.
    Due,
    /// A graceful shutdown was asked for.
    Shutdown,
}

/// Wait for the next message, or until `next_due` (on `timer`, kept across rounds).
async fn next_wake<M>(
    inbox: &mut (impl Stream<Item = M> + Unpin),
    next_due: Option<Instant>,
    timer: &mut DueTimer,
) -> Wake<M> {
    match next_due {
        Some(at) => match select(inbox.next(), timer.until(at)).await {
            Either::Left((message, _)) => Wake::Message(message),
            Either::Right(_) => Wake::Due,
        },
        None => Wake::Message(inbox.next().await),
    }
}

/// The driver's wait for its next due time, one timer per deadline.
///
/// madsim's `Sleep` adds a timer to the runtime's heap on every pending poll, and a dropped
/// `Sleep` leaves its timer there until the deadline. The driver waits in rounds (every trigger
/// or finished reconcile is one), mostly for the same deadline (a requeue minutes away): a fresh
/// `Sleep` per round left one timer per round behind. This keeps one `Sleep` while the deadline
/// holds and polls it again only when the waker changes, so one timer wakes the driver at the
/// deadline; the other rounds only look at the clock.
#[derive(Default)]
struct DueTimer {
    /// madsim's `Sleep` is `Unpin`: kept by value.
    sleep: Option<madsim::time::Sleep>,
    /// The waker the `Sleep`'s timer holds, once polled.
    armed: Option<std::task::Waker>,
}

impl DueTimer {
    /// A future that is ready once `at` is reached.
    fn until(&mut self, at: Instant) -> impl Future<Output = ()> + Unpin + '_ {
        let sleep = match self.sleep.take() {
            Some(sleep) if sleep.deadline() == at => self.sleep.insert(sleep),
            _ => {
                self.armed = None;
                self.sleep.insert(madsim::time::sleep_until(at))
            }
        };
        let armed = &mut self.armed;
        std::future::poll_fn(move |cx| {
            if sleep.is_elapsed() {
                return std::task::Poll::Ready(());
            }
            if !armed.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
                // Pending (the deadline is ahead): a timer now holds this waker.
                let _ = std::pin::Pin::new(&mut *sleep).poll(cx);
                *armed = Some(cx.waker().clone());
            }
            std::task::Poll::Pending
        })
    }
}

impl<K, E, Q> Driver<K, E, Q>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    E: std::error::Error + 'static,
    Q: std::error::Error + 'static,
{
    /// `Kind namespace/name`, as traces and verdicts name a reconciled object.
    fn describe(&self, object: &ObjectRef<K>) -> String {
        let mut described = String::with_capacity(self.kind.len() + 1 + object.name.len() + 16);
        described.push_str(&self.kind);
        described.push(' ');
        let _ = object.write_key(&mut described);
        described
    }

    fn may_start(&self) -> bool {
        !self.shutting_down
            && (self.config.concurrency == 0 || self.queue.running() < usize::from(self.config.concurrency))
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
    async fn run(
        mut self,
        triggers: impl Stream<Item = Msg<K, E, Q>> + Unpin,
        mut handlers: Handlers<'_, K, E>,
        mut shutdown: Option<ShutdownFn>,
    ) {
        let registration = Registration::new(&self.world, self.progress());
        if self.store.wait_until_ready().await.is_err() {
            return;
        }
        let (done_tx, done_rx) = mpsc::channel::<Done<K, E>>();
        // Both halves stay open (the driver holds `done_tx`), so the inbox never ends.
        let mut inbox = futures::stream::select(triggers, done_rx.map(Msg::Done));
        let mut timer = DueTimer::default();
        loop {
            // A PauseReconciles fault holds every start while the caches keep advancing.
            crate::faults::pause_reconciles::reconcile_gate(&self.world, &self.node).await;
            let now = self.clock.now();
            while self.may_start() {
                let Some((object, origin)) = self.queue.pop_due_shared(now) else { break };
                let by_requeue = matches!(origin, work_queue::Origin::Requeue { .. });
                self.start(object, by_requeue, &mut handlers, &done_tx);
            }
            registration.update(self.progress());
            if self.shutting_down && self.queue.running() == 0 {
                return;
            }
            let next_due = self.queue.next_due().filter(|_| self.may_start());
            // Without a shutdown trigger the driver waits as it always did (one select fewer).
            let wake = match shutdown.as_mut() {
                Some(trigger) => {
                    match select(Box::pin(next_wake(&mut inbox, next_due, &mut timer)), trigger).await {
                        Either::Left((wake, _)) => wake,
                        Either::Right(_) => Wake::Shutdown,
                    }
                }
                None => next_wake(&mut inbox, next_due, &mut timer).await,
            };
            let message = match wake {
                Wake::Message(message) => message,
                Wake::Due => continue,
                Wake::Shutdown => {
                    shutdown = None;
                    self.shutting_down = true;
                    continue;
                }
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

    fn receive(&mut self, message: Msg<K, E, Q>, handlers: &Handlers<'_, K, E>) {
        match message {
            // Once shutting down, new triggers are not taken.
            Msg::Trigger(_) if self.shutting_down => {}
            Msg::Trigger(object) => {
                let now = self.clock.now();
                self.enqueue(object, now, None);
            }
            Msg::QueueError(error) => {
                let _ = self.out.send(Err(Error::QueueError(error)));
            }
            Msg::QueueEnded => self.shutting_down = true,
            Msg::Done(done) => self.finish(done, handlers),
        }
    }

    /// Queue a trigger (`requeue: None`) or a requeue (`Some(idle)`) made at `at` (plus the
    /// debounce, which applies to every request, as in kube-runtime's scheduler). The queue takes
    /// the object as it is: it is copied only into the report of a full queue.
    fn enqueue<R>(&mut self, object: R, at: Instant, requeue: Option<bool>)
    where
        R: Into<Arc<ObjectRef<K>>> + std::borrow::Borrow<ObjectRef<K>>,
    {
        let object_ref: &ObjectRef<K> = object.borrow();
        if self.queue.refuses(object_ref) {
            let text = format!(
                "queue full ({} objects): request for {} dropped",
                self.queue.len(),
                self.describe(object_ref)
            );
            self.world.with(|w| w.trace(&self.node, TraceEvent::Note { text }));
            let _ = self.out.send(Err(Error::QueueFull(self.queue.len(), object_ref.erase())));
            return;
        }
        let due = at + self.config.debounce;
        let scheduled = self.queue.schedule_shared(object.into(), at, due, requeue);
        debug_assert!(scheduled != Scheduled::Full, "a request the queue does not refuse is queued");
    }

    fn start(
        &mut self,
        object_ref: Arc<ObjectRef<K>>,
        by_requeue: bool,
        handlers: &mut Handlers<'_, K, E>,
        done: &mpsc::Sender<Done<K, E>>,
    ) {
        let Some(object) = self.store.get(&object_ref) else {
            // Deleted since it was queued: kube-runtime reports it and does not reconcile.
            self.queue.finish(&object_ref);
            let _ = self.out.send(Err(Error::ObjectNotFound(object_ref.erase())));
            return;
        };
        let described = self.describe(&object_ref);
        self.world.with(|w| {
            w.recorder().stats.reconciles += 1;
            w.profile().note_reconcile(&self.node);
            w.trace_ref(&self.node, EventRef::ReconcileStart { controller: &self.node, object: &described });
        });
        let future = Writes::watch(self.world.clone(), (handlers.reconcile)(object.clone()));
        let done = done.clone();
        let world = self.world.clone();
        let node = self.node.clone();
        madsim::task::spawn_local(async move {
            match std::panic::AssertUnwindSafe(future).catch_unwind().await {
                Ok((result, wrote)) => {
                    let done_message = Done { object_ref, object, result, by_requeue, wrote, described };
                    let _ = done.send(done_message);
                }
                Err(payload) => {
                    let crash = crate::process_exit::verdict_for_unwind(&*payload, &node, Some(described));
                    world.with(|w| w.fail(crash));
                }
            }
        });
    }

    fn finish(&mut self, done: Done<K, E>, handlers: &Handlers<'_, K, E>) {
        let Done { object_ref, object, result, by_requeue, wrote, described } = done;
        self.queue.finish(&object_ref);
        // A requeue that found nothing to do and asks to be run again is a periodic no-op.
        let no_op = by_requeue && result.is_ok() && !wrote;
        let (action, outcome, summary) = match result {
            Ok(action) => (action, Ok(action), action.text()),
            Err(error) => {
                let action = (handlers.error_policy)(object, &error);
                let summary = format!("error: {error}; {action}");
                (action, Err(Error::ReconcilerFailed(error, object_ref.erase())), summary)
            }
        };
        let idle = no_op || action.is_idle_requeue();
        let failed = outcome.is_err();
        self.world.with(|w| {
            w.quiescence().note_reconcile(&self.node, &described, failed.then_some(summary.as_str()));
            let event =
                EventRef::ReconcileEnd { controller: &self.node, object: &described, result: &summary };
            w.trace_ref(&self.node, event);
        });
        // Due at finish time plus requeue_after, as kube-runtime's runner schedules it.
        let requeue = action.requeue_after().map(|after| (self.clock.now() + after, object_ref.clone()));
        // The queue let go of its reference above: the output takes the reference as it is,
        // unless a requeue shares it.
        let _ = self.out.send(outcome.map(|action| (Arc::unwrap_or_clone(object_ref), action)));
        if let Some((at, object_ref)) = requeue {
            self.enqueue(object_ref, at, Some(idle));
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
