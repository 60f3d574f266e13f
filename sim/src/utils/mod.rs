//! Stream helpers, as kube-runtime's `utils`: [`WatchStreamExt`] on every watcher stream (backoff,
//! decoding events into objects, predicates, reflecting into a store) and the types it returns,
//! and [`CancelableJoinHandle`]. A raw [`Api::watch`](crate::Api::watch) stream takes what kube
//! gives any `TryStream`: `default_backoff` and `backoff`.
//!
//! ```no_run
//! use k8s_openapi::api::apps::v1::Deployment;
//! use sim::runtime::{WatchStreamExt, predicates, reflector, watcher};
//! # fn f(api: sim::Api<Deployment>) {
//! let (reader, writer) = reflector::store::<Deployment>();
//! let changed = watcher(api, watcher::Config::default())
//!     .default_backoff()
//!     .reflect(writer)
//!     .applied_objects()
//!     .predicate_filter(predicates::generation, Default::default());
//! # let _ = (reader, changed);
//! # }
//! ```

pub mod backoff;
mod predicate;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, TryStream};
use kube_core::Resource;
use pin_project_lite::pin_project;

use crate::reflector::Writer;
use crate::watcher::{self, Error, Event};

use backoff::DefaultBackoff;

pub use backoff::{Backoff, ResetTimerBackoff, StreamBackoff};
pub use predicate::{Combine, Config as PredicateConfig, Fallback, Predicate, PredicateFilter, predicates};

pin_project! {
    /// A watcher stream decoded into its objects (see [`WatchStreamExt::applied_objects`] and
    /// [`WatchStreamExt::touched_objects`]), as kube-runtime's `EventDecode`.
    #[must_use = "streams do nothing unless polled"]
    pub struct EventDecode<St> {
        #[pin]
        stream: St,
        emit_deleted: bool,
    }
}

impl<St, K> Stream for EventDecode<St>
where
    St: Stream<Item = Result<Event<K>, Error>>,
{
    type Item = Result<K, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        // Bounded by the inner stream: each round takes one event off it.
        loop {
            let item = match futures::ready!(this.stream.as_mut().poll_next(cx)) {
                Some(Ok(Event::Apply(object) | Event::InitApply(object))) => Ok(object),
                Some(Ok(Event::Delete(object))) if *this.emit_deleted => Ok(object),
                Some(Ok(Event::Delete(_) | Event::Init | Event::InitDone)) => continue,
                Some(Err(error)) => Err(error),
                None => return Poll::Ready(None),
            };
            return Poll::Ready(Some(item));
        }
    }
}

pin_project! {
    /// A watcher stream whose objects pass through a function (see [`WatchStreamExt::modify`]),
    /// as kube-runtime's `EventModify`.
    #[must_use = "streams do nothing unless polled"]
    pub struct EventModify<St, F> {
        #[pin]
        stream: St,
        f: F,
    }
}

impl<St, F, K> Stream for EventModify<St, F>
where
    St: Stream<Item = Result<Event<K>, Error>>,
    F: FnMut(&mut K),
{
    type Item = Result<Event<K>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let f = this.f;
        this.stream.poll_next(cx).map(|item| item.map(|result| result.map(|event| event.modify(&mut *f))))
    }
}

pin_project! {
    /// A watcher stream reflected into a store (see [`WatchStreamExt::reflect`]), as
    /// kube-runtime's `Reflect`.
    #[must_use = "streams do nothing unless polled"]
    pub struct Reflect<St, K> {
        #[pin]
        stream: St,
        writer: Writer<K>,
    }
}

impl<St, K> Stream for Reflect<St, K>
where
    K: Resource + Clone,
    St: Stream<Item = watcher::Result<Event<K>>>,
{
    type Item = watcher::Result<Event<K>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = futures::ready!(this.stream.poll_next(cx));
        if let Some(Ok(event)) = &item {
            this.writer.apply_watcher_event(event);
        }
        Poll::Ready(item)
    }
}

/// What every watcher stream can do, as kube-runtime's `WatchStreamExt`.
pub trait WatchStreamExt: Stream {
    /// Apply [`DefaultBackoff`] (800 ms doubling to 30 s, jittered, in virtual time).
    fn default_backoff(self) -> StreamBackoff<Self, DefaultBackoff>
    where
        Self: TryStream + Sized,
    {
        StreamBackoff::new(self, DefaultBackoff::default())
    }

    /// Apply a [`Backoff`] policy.
    fn backoff<B>(self, b: B) -> StreamBackoff<Self, B>
    where
        B: Backoff,
        Self: TryStream + Sized,
    {
        StreamBackoff::new(self, b)
    }

    /// The objects of `Apply` and `InitApply` events (errors pass through).
    fn applied_objects<K>(self) -> EventDecode<Self>
    where
        Self: Stream<Item = Result<Event<K>, Error>> + Sized,
    {
        EventDecode { stream: self, emit_deleted: false }
    }

    /// The objects of `Apply`, `InitApply` and `Delete` events (errors pass through).
    fn touched_objects<K>(self) -> EventDecode<Self>
    where
        Self: Stream<Item = Result<Event<K>, Error>> + Sized,
    {
        EventDecode { stream: self, emit_deleted: true }
    }

    /// Change every object of every event with `f` ([`Event::modify`]).
    fn modify<F, K>(self, f: F) -> EventModify<Self, F>
    where
        Self: Stream<Item = Result<Event<K>, Error>> + Sized,
        F: FnMut(&mut K),
    {
        EventModify { stream: self, f }
    }

    /// Pass an object only when `predicate`'s value for it changed (or it is new, or its hash
    /// outlived `config`'s TTL). After [`touched_objects`](WatchStreamExt::touched_objects), a
    /// generation predicate hides deletions (a deletion need not change the generation).
    fn predicate_filter<K, P>(self, predicate: P, config: PredicateConfig) -> PredicateFilter<Self, K, P>
    where
        Self: Stream<Item = Result<K, Error>> + Sized,
        K: Resource + 'static,
        P: Predicate<K> + 'static,
    {
        PredicateFilter::new(self, predicate, config)
    }

    /// Apply every event to `writer`'s store as it passes.
    fn reflect<K>(self, writer: Writer<K>) -> Reflect<Self, K>
    where
        Self: Stream<Item = watcher::Result<Event<K>>> + Sized,
        K: Resource + Clone + 'static,
    {
        Reflect { stream: self, writer }
    }

    /// Apply every event to a shared `writer` ([`reflector::store_shared`]); its subscribers
    /// ([`Writer::subscribe`]) get every applied object while this stream is polled.
    ///
    /// [`reflector::store_shared`]: crate::reflector::store_shared
    fn reflect_shared<K>(self, writer: Writer<K>) -> impl Stream<Item = Self::Item>
    where
        Self: Stream<Item = watcher::Result<Event<K>>> + Sized,
        K: Resource + Clone + 'static,
    {
        crate::reflector::reflector(writer, self)
    }
}

impl<St: ?Sized> WatchStreamExt for St where St: Stream {}

/// A task handle that aborts its task when dropped, rather than detaching it, as kube-runtime's
/// `CancelableJoinHandle`: awaiting it yields the task's output.
///
/// `runtime` is tokio's `Handle` as kube-sim's tokio shim has it (`tokio::runtime::Handle::current()`
/// in a controller crate that renames `kube-sim-tokio` as `tokio`): under `--cfg madsim` it spawns
/// on the simulation's scheduler, on the current node, so a crash of the node kills the task.
///
/// ```no_run
/// use sim::runtime::utils::CancelableJoinHandle;
/// # async fn f() {
/// let handle = tokio::runtime::Handle::current();
/// let task = CancelableJoinHandle::spawn(async { 40 + 2 }, &handle);
/// assert_eq!(task.await, 42);
/// # }
/// ```
#[must_use = "a dropped handle aborts its task"]
pub struct CancelableJoinHandle<T> {
    inner: madsim_tokio::task::JoinHandle<T>,
}

impl<T> CancelableJoinHandle<T>
where
    T: Send + 'static,
{
    /// Spawn `future` through `runtime`, and hold it in a handle that aborts it when dropped.
    pub fn spawn(
        future: impl Future<Output = T> + Send + 'static,
        runtime: &madsim_tokio::runtime::Handle,
    ) -> Self {
        CancelableJoinHandle { inner: runtime.spawn(future) }
    }
}

impl<T> Drop for CancelableJoinHandle<T> {
    fn drop(&mut self) {
        self.inner.abort();
    }
}

impl<T> Future for CancelableJoinHandle<T> {
    type Output = T;

    /// The task's output.
    ///
    /// # Panics
    ///
    /// If the task was aborted (which only dropping this handle does, or killing its node, which
    /// also ends whoever awaits it there) or panicked, as kube's.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        Pin::new(&mut self.inner).poll(cx).map(|joined| match joined {
            Ok(output) => output,
            Err(error) => panic!("CancelableJoinHandle: {error}"),
        })
    }
}
