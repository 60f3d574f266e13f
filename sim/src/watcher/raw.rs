//! `Api::watch` and `Api::watch_metadata`: kube-client's raw stream of `kube_core::WatchEvent`s,
//! on the watcher's own watch path ([`WatchLink`]).
//!
//! `watch(&wp, version)` sends one watch request through the transport (latency, call faults,
//! the trace), as kube sends its HTTP request: a refused request (a bad selector, a type the
//! server does not serve, an injected error, a partition) is the `Err` of the call. Its answer
//! starts the stream: from `"0"` or `""` the current objects as ADDED events, from a revision
//! every change after it, from a compacted revision one ERROR event with 410 Expired. Then, as a
//! watcher does, the stream waits for a write into its type and namespace, passes its node's
//! watch gate (holds, delays), pulls, and yields each event after its drawn delivery delay.
//! Selectors apply as on the server: an object that leaves the selection is DELETED, one that
//! enters it ADDED.
//!
//! It ends as kube-apiserver ends a watch: after an ERROR event (a 410, from the server or an
//! injected expiry), when its node's watches are cut (`watchDisconnect`; the caller re-watches from
//! the last resourceVersion it saw), and at its timeout (`WatchParams::timeout`, kube-rs's 290
//! seconds when unset, in virtual time).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use futures::future::Either as Race;
use kube_core::{DynamicObject, PartialObjectMeta, Resource, WatchEvent, params::WatchParams};
use model_apiserver::{Request, Response, Revision};
use serde::{Serialize, de::DeserializeOwned};

use super::{Batch, Error as WatcherError, WatchLink, unexpected};
use crate::client::{Api, Error, Result, partial_type, typed_view};
use crate::faults::injector::OnCut;
use crate::transport;

/// The watch timeout kube-rs sends when `WatchParams::timeout` is unset (`timeoutSeconds=290`);
/// the server ends the watch then.
pub const WATCH_TIMEOUT_SECONDS_DEFAULT: u32 = 290;

/// The raw watch's state.
enum State {
    /// Watching from `revision` (everything up to it is yielded); `batch` is what the last pull
    /// returned and is still being yielded.
    Watching { revision: Revision, batch: Option<Batch> },
    /// The watch ended: the stream yields nothing more.
    Done,
}

/// One raw watch and what it owns.
struct RawWatch<K: Resource> {
    link: WatchLink<K>,
    /// The caller's parameters, sent with every pull.
    params: WatchParams,
    /// When the server ends the watch (its timeout).
    deadline: madsim::time::Instant,
    state: State,
}

/// kube-client's raw watches, over the simulated transport (see the [module](self) docs).
impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// WATCH the objects from resourceVersion `version`, as kube's `Api::watch`: a stream of
    /// ADDED, MODIFIED, DELETED, BOOKMARK (with `wp.bookmarks`) and ERROR events that ends with
    /// the watch (after an ERROR event, a cut, or the timeout). Re-watch from the last
    /// resourceVersion seen, or use [`watcher`](crate::watcher::watcher), which does it for you.
    ///
    /// ```no_run
    /// use futures::TryStreamExt;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use sim::api::{Api, WatchEvent, WatchParams};
    /// # async fn f(cms: Api<ConfigMap>) -> sim::Result<()> {
    /// let mut stream = std::pin::pin!(cms.watch(&WatchParams::default(), "0").await?);
    /// while let Some(event) = stream.try_next().await? {
    ///     match event {
    ///         WatchEvent::Added(cm) | WatchEvent::Modified(cm) => println!("{:?}", cm.metadata.name),
    ///         WatchEvent::Deleted(cm) => println!("gone: {:?}", cm.metadata.name),
    ///         WatchEvent::Bookmark(_) => {}
    ///         WatchEvent::Error(status) => println!("{status}"),
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn watch(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>>> + Send + use<K>> {
        // kube-core's own checks of the request (`send_initial_events` needs `bookmarks`), on the
        // URL kube would request.
        let url = DynamicObject::url_path(&self.resource, self.namespace.as_deref());
        kube_core::Request::new(url).watch(wp, version).map_err(Error::BuildRequest)?;
        let link = WatchLink::new(self.clone(), OnCut::End);
        let batch = first_batch(&link, wp, version).await?;
        // kube-apiserver takes 0 as unset and picks its own timeout; the model picks kube-rs's.
        let timeout_seconds = wp.timeout.filter(|t| *t > 0).unwrap_or(WATCH_TIMEOUT_SECONDS_DEFAULT);
        let timeout = Duration::from_secs(u64::from(timeout_seconds));
        let raw = RawWatch {
            link,
            params: wp.clone(),
            deadline: madsim::time::Instant::now() + timeout,
            state: State::Watching { revision: batch.polled_at, batch: Some(batch) },
        };
        Ok(futures::stream::unfold(raw, |mut raw| async move {
            let item = raw.next().await?;
            Some((item, raw))
        }))
    }

    /// WATCH the objects' metadata, as kube's `Api::watch_metadata`: [`Api::watch`] with each
    /// object as its metadata alone, typed `meta.k8s.io/v1` `PartialObjectMetadata`.
    pub async fn watch_metadata(
        &self,
        wp: &WatchParams,
        version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<PartialObjectMeta<K>>>> + Send + use<K>> {
        self.metadata().watch(wp, version).await
    }
}

/// Send the watch request through the transport, as kube sends its HTTP request: the answer is
/// the stream's first batch. The request always asks for the closing bookmark, which tells, in
/// the same answer, the revision its events reach; the bookmark is handed on only if the caller
/// asked for bookmarks.
async fn first_batch<K: Resource>(link: &WatchLink<K>, wp: &WatchParams, version: &str) -> Result<Batch> {
    let (api, client) = (&link.api, &link.api.client);
    let params = WatchParams { bookmarks: true, ..wp.clone() };
    let request = Request::watch(&api.resource, api.namespace.as_deref(), version, params);
    let mut events = match transport::call(&client.world, &client.cluster, &client.node, request).await {
        Ok(Response::Watch(events)) => events,
        Ok(_) => return Err(unexpected("watch")),
        Err(status) => return Err(status.into()),
    };
    client.world.with(|w| w.profile().note_watch(&client.node, &link.name));
    let reached = match events.last() {
        Some(WatchEvent::Bookmark(bookmark)) => bookmark.metadata.resource_version.parse::<Revision>().ok(),
        _ => None,
    };
    let polled_at = match reached {
        Some(revision) => {
            if !wp.bookmarks {
                events.pop();
            }
            revision
        }
        None => {
            // Only an ERROR event (a compacted revision) comes without the bookmark: the stream
            // ends after it, and watches from nowhere.
            assert!(
                events.iter().any(|e| matches!(e, WatchEvent::Error(_))),
                "watch {}: an answer without its closing bookmark and without an error",
                link.name
            );
            0
        }
    };
    // A revision not reached yet is where the watch starts all the same (the server waits).
    let polled_at = polled_at.max(version.parse().unwrap_or(0));
    Ok(Batch { events: events.into(), polled_at })
}

impl<K> RawWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Send + Sync + 'static,
{
    /// The next item, `None` once the watch ended; an ended watch no longer counts for the
    /// liveness phase.
    async fn next(&mut self) -> Option<Result<WatchEvent<K>>> {
        let item = self.step().await;
        if matches!(self.state, State::Done) {
            self.link.unregister();
        }
        item
    }

    async fn step(&mut self) -> Option<Result<WatchEvent<K>>> {
        if !matches!(self.state, State::Done) {
            self.link.poll_started();
        }
        // Each round yields, ends the watch, or takes one event off a batch or one batch off
        // the server: bounded by the events the server has.
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return None,
                State::Watching { revision, batch: Some(mut batch) } => {
                    let Some(event) = batch.events.pop_front() else {
                        let revision = batch.polled_at.max(revision);
                        self.link.seen(revision);
                        self.state = State::Watching { revision, batch: None };
                        continue;
                    };
                    if !self.link.arrive(&event).await {
                        return Some(Ok(WatchEvent::Error(self.link.expired())));
                    }
                    // The server ends a watch after an ERROR event.
                    if !matches!(event, WatchEvent::Error(_)) {
                        self.state = State::Watching { revision, batch: Some(batch) };
                    }
                    return Some(decode(event));
                }
                State::Watching { revision, batch: None } => match self.pull(revision).await {
                    Some(Ok(batch)) => self.state = State::Watching { revision, batch: Some(batch) },
                    Some(Err(error)) => return Some(ended(error)),
                    None => return None,
                },
            }
        }
    }

    /// Wait (until the timeout) for a write into the watch's scope, pass the gate and pull;
    /// `None` when the watch ends there (its timeout passed, or it was cut).
    async fn pull(&mut self, revision: Revision) -> Option<Result<Batch, WatcherError>> {
        if madsim::time::Instant::now() >= self.deadline {
            return None;
        }
        let wait = self.link.wait(revision);
        let timeout = std::pin::pin!(madsim::time::sleep_until(self.deadline));
        // Polled in this order, so a write at the timeout's instant is still pulled.
        let from = match futures::future::select(wait, timeout).await {
            Race::Left((from, _)) => from,
            Race::Right(((), wait)) => {
                wait.cancel();
                return None;
            }
        };
        self.link.pull(from, self.params.clone()).await.transpose()
    }
}

/// One pulled event as the caller's type: each object decoded as `K` (its metadata alone for
/// `K = PartialObjectMeta<_>`, bookmarks included), an object that does not decode an error.
fn decode<K>(event: WatchEvent<Arc<DynamicObject>>) -> Result<WatchEvent<K>>
where
    K: Resource + Clone + DeserializeOwned + Send + Sync + 'static,
{
    let object =
        |o: &Arc<DynamicObject>| typed_view::<K>(o).map(Arc::unwrap_or_clone).map_err(Error::SerdeError);
    Ok(match event {
        WatchEvent::Added(o) => WatchEvent::Added(object(&o)?),
        WatchEvent::Modified(o) => WatchEvent::Modified(object(&o)?),
        WatchEvent::Deleted(o) => WatchEvent::Deleted(object(&o)?),
        WatchEvent::Bookmark(mut bookmark) => {
            if K::metadata_api() {
                bookmark.types = partial_type();
            }
            WatchEvent::Bookmark(bookmark)
        }
        WatchEvent::Error(status) => WatchEvent::Error(status),
    })
}

/// The last item of a watch whose pull failed: an ERROR event for a 410, as the server sends it,
/// and the call's error otherwise.
fn ended<K>(error: WatcherError) -> Result<WatchEvent<K>> {
    match error {
        WatcherError::WatchError(status) => Ok(WatchEvent::Error(status)),
        WatcherError::WatchStartFailed(e)
        | WatcherError::InitialListFailed(e)
        | WatcherError::WatchFailed(e) => Err(e),
        WatcherError::NoResourceVersion => Err(unexpected("watch")),
    }
}
