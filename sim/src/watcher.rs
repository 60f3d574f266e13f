//! kube-runtime's watcher: a stream of [`Event`]s that lists, then watches from the list's
//! resourceVersion, and relists when the watch expires (410 Gone), over the simulated transport.
//!
//! The stream is an explicit state machine ([`State`]), as kube-runtime's: `Empty` lists and yields
//! [`Event::Init`]; `InitPage` yields one [`Event::InitApply`] per listed object, then
//! [`Event::InitDone`]; `Watching` waits for its cluster's revision to move, passes the node's
//! watch faults (a held or cut watch, a forced relist, a lagging replica), pulls the events since
//! the revision it has seen, and yields them one at a time, each after a delay drawn from the
//! decision stream `watch`. A 410 (a compacted revision, an injected expiry) is yielded as
//! [`Error::WatchError`] and the next poll relists; a failed list or watch is yielded as an error
//! and the next poll retries, so a caller's backoff ([`WatchStreamExt::default_backoff`]) spaces
//! the retries as it does against a real API server.
//!
//! The informers of [`Controller`](crate::controller::Controller) and
//! [`informer`](crate::informer::informer) are this stream reflected into a
//! [`Store`](crate::reflector::Store): every fault reaches a user's own `watcher()` exactly as it
//! reaches them. So does kube-client's raw [`Api::watch`] stream, which takes the same watch path
//! (`WatchLink`) without the list and the relists.
//!
//! [`WatchStreamExt::default_backoff`]: crate::utils::WatchStreamExt::default_backoff

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube_core::{
    DynamicObject, PartialObjectMeta, Resource, ResourceExt, Selector, Status, WatchEvent,
    params::{ListParams, VersionMatch, WatchParams},
};
use serde::de::DeserializeOwned;

use model_apiserver::{Request, Response, Revision};

use crate::client::{Api, typed_in};
use crate::cluster::WatchScope;
use crate::faults::injector::{self, OnCut, WatchEpochs};
use crate::faults::stale_replica;
use crate::quiescence::Progress;
use crate::trace::{EventRef, TraceEvent};
use crate::transport::{self, Delivery, DeliveryInfo, RevisionAbove};
use crate::world::Registration;

mod raw;

pub use raw::WATCH_TIMEOUT_SECONDS_DEFAULT;

/// The bounds of the delay before one watch event reaches the watcher, in milliseconds (stream
/// `watch`).
pub const WATCH_DELAY_MS_MIN: u64 = 1;
/// See [`WATCH_DELAY_MS_MIN`].
pub const WATCH_DELAY_MS_MAX: u64 = 5;
const _: () = assert!(WATCH_DELAY_MS_MIN <= WATCH_DELAY_MS_MAX);

/// How a watcher's lists read, as kube-runtime's `watcher::ListSemantic`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListSemantic {
    /// A consistent read of the latest state (kube-runtime 5's default): `resourceVersion` unset.
    #[default]
    MostRecent,
    /// Any recent state, served from an API server's watch cache: `resourceVersion="0"`, as
    /// client-go informers list. After a restart onto a lagging replica it may be older than what
    /// the controller saw before (time travel, kubernetes#59848).
    Any,
}

/// How the initial list is fetched, as kube-runtime's `watcher::InitialListStrategy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialListStrategy {
    /// List, then watch from the list's resourceVersion.
    #[default]
    ListWatch,
    /// Kubernetes 1.27's streaming lists. Accepted; the simulation lists as `ListWatch` does
    /// (the same events reach the stream: `Init`, one `InitApply` per object, `InitDone`).
    StreamingList,
}

/// What to watch, as kube-runtime's `watcher::Config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// A label selector (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name=foo`).
    pub field_selector: Option<String>,
    /// The watch call's timeout in seconds. Accepted; a simulated watch never times out (a cut
    /// watch is the `watchDisconnect` fault's job).
    pub timeout: Option<u32>,
    /// How relists read.
    pub list_semantic: ListSemantic,
    /// How the initial list is fetched.
    pub initial_list_strategy: InitialListStrategy,
    /// Objects per list page. Accepted; a simulated list is one page.
    pub page_size: Option<u32>,
    /// Ask for bookmarks. Accepted; a simulated watcher resumes from the revision it last pulled,
    /// which is what a bookmark gives.
    pub bookmarks: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            label_selector: None,
            field_selector: None,
            timeout: None,
            list_semantic: ListSemantic::default(),
            initial_list_strategy: InitialListStrategy::default(),
            page_size: Some(500),
            bookmarks: true,
        }
    }
}

impl Config {
    /// Only objects matching a label selector.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }
    /// Only objects matching a typed label selector.
    #[must_use]
    pub fn labels_from(mut self, selector: &Selector) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }
    /// Only objects matching a field selector.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }
    /// Set the watch timeout (accepted, see [`Config::timeout`]).
    #[must_use]
    pub fn timeout(mut self, timeout_secs: u32) -> Self {
        self.timeout = Some(timeout_secs);
        self
    }
    /// Set how relists read.
    #[must_use]
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }
    /// Relist with [`ListSemantic::Any`] (`resourceVersion="0"`, from a watch cache).
    #[must_use]
    pub fn any_semantic(self) -> Self {
        self.list_semantic(ListSemantic::Any)
    }
    /// Turn bookmarks off (accepted, see [`Config::bookmarks`]).
    #[must_use]
    pub fn disable_bookmarks(mut self) -> Self {
        self.bookmarks = false;
        self
    }
    /// Set the list page size (accepted, see [`Config::page_size`]).
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size);
        self
    }
    /// Use streaming lists (accepted, see [`InitialListStrategy::StreamingList`]).
    #[must_use]
    pub fn streaming_lists(mut self) -> Self {
        self.initial_list_strategy = InitialListStrategy::StreamingList;
        self
    }
    pub(crate) fn list_params(&self) -> ListParams {
        let (resource_version, version_match) = match self.list_semantic {
            ListSemantic::Any => (Some("0".to_owned()), Some(VersionMatch::NotOlderThan)),
            ListSemantic::MostRecent => (None, None),
        };
        ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            resource_version,
            version_match,
            ..ListParams::default()
        }
    }
    fn watch_params(&self) -> WatchParams {
        WatchParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..WatchParams::default()
        }
    }
}

/// What a watcher yields, as kube-runtime's `watcher::Event`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<K> {
    /// An object was added or modified.
    Apply(K),
    /// An object was deleted. Events may be missed (a relist after a 410 skips them): clean up
    /// with finalizers, not on this event.
    Delete(K),
    /// A (re)list starts: `InitApply` events follow, then `InitDone`.
    Init,
    /// An object of the list.
    InitApply(K),
    /// The list is complete: whatever was applied before and not listed since is gone.
    InitDone,
}

impl<K> Event<K> {
    /// Change each object of the event in place (drop fields to save memory, as kube's).
    #[must_use]
    pub fn modify(mut self, mut f: impl FnMut(&mut K)) -> Self {
        match &mut self {
            Event::Apply(object) | Event::Delete(object) | Event::InitApply(object) => f(object),
            Event::Init | Event::InitDone => {}
        }
        self
    }

    /// The same event with its object mapped.
    pub(crate) fn map<L>(self, f: impl FnOnce(K) -> L) -> Event<L> {
        match self {
            Event::Apply(object) => Event::Apply(f(object)),
            Event::Delete(object) => Event::Delete(f(object)),
            Event::InitApply(object) => Event::InitApply(f(object)),
            Event::Init => Event::Init,
            Event::InitDone => Event::InitDone,
        }
    }
}

impl<K: Resource> fmt::Display for Event<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Init => f.write_str("Init"),
            Event::InitApply(object) => write!(f, "InitApply({})", object.name_any()),
            Event::InitDone => f.write_str("InitDone"),
            Event::Apply(object) => write!(f, "Apply({})", object.name_any()),
            Event::Delete(object) => write!(f, "Delete({})", object.name_any()),
        }
    }
}

/// What a watcher yields on failure, as kube-runtime's `watcher::Error`. Every variant is
/// retryable: the next poll retries (apply a backoff to space the retries).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The list failed (an API error, a partition, an injected fault); the next poll lists again.
    #[error("failed to perform initial object list: {0}")]
    InitialListFailed(#[source] crate::Error),
    /// Starting the watch failed; the next poll watches again from the same resourceVersion.
    #[error("failed to start watching object: {0}")]
    WatchStartFailed(#[source] crate::Error),
    /// The server sent an ERROR event. A 410 (the watched revision was compacted, or an injected
    /// expiry) makes the next poll relist.
    #[error("error returned by apiserver during watch: {}", .0.message)]
    WatchError(Box<Status>),
    /// The watch failed while streaming (kept for kube's shape: a simulated watch never fails
    /// mid-stream, it is cut or expires).
    #[error("watch stream failed: {0}")]
    WatchFailed(#[source] crate::Error),
    /// The list carried no usable resourceVersion.
    #[error("no metadata.resourceVersion in watch result (does resource support watch?)")]
    NoResourceVersion,
}

impl Error {
    /// Whether an informer pauses before its next poll: a failed call is retried after a pause,
    /// while an event-level error (an expiry, a non-fatal ERROR event) is not.
    pub(crate) fn pauses_informer(&self) -> bool {
        !matches!(self, Error::WatchError(_))
    }
}

/// `Result` with a watcher [`Error`], as kube-runtime's `watcher::Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The watcher's state.
enum State<K> {
    /// Nothing listed yet, or the watch expired: list.
    Empty,
    /// A list is being yielded, one object per poll; then watch from `revision`.
    InitPage { objects: VecDeque<Arc<K>>, revision: Revision },
    /// Watching from `revision` (everything up to it is yielded); `batch` is what the last pull
    /// returned and is still being yielded.
    Watching { revision: Revision, batch: Option<Batch> },
}

/// The events of one pull, yielded one at a time.
struct Batch {
    events: VecDeque<WatchEvent<Arc<DynamicObject>>>,
    /// The server's revision at the pull: once every event is yielded, the watch resumes from it.
    polled_at: Revision,
}

/// One watch of `api` on the simulated transport: what the watcher's state machine and a raw
/// [`Api::watch`] stream share, so that both wait, pull and deliver the same way (per-scope
/// wakeups, the watch gate and its faults, delivery delays and faults, the liveness phase's view).
struct WatchLink<K: Resource> {
    api: Api<K>,
    /// `cluster/resource[/namespace]`, as traces name the watch.
    name: Arc<str>,
    /// What the watch knows of its node's faults (forced relists, cut watches, a lagging replica).
    epochs: WatchEpochs,
    /// The watch's progress, as the liveness phase reads it; made on the first poll.
    registration: Option<Registration>,
    /// The writes that wake it: its type (and namespace), once the server serves the type.
    scope: Option<WatchScope>,
    /// Whether a cut watch re-watches (a watcher) or ends (a raw watch).
    on_cut: OnCut,
}

impl<K: Resource> WatchLink<K> {
    fn new(api: Api<K>, on_cut: OnCut) -> Self {
        let epochs = WatchEpochs::current(&api.client.world, &api.client.node);
        let name = watch_name(&api);
        WatchLink { api, name, epochs, registration: None, scope: None, on_cut }
    }

    /// Find which writes concern this watch, once its type is served. Until then (a CRD not
    /// yet created) any write wakes it, and the liveness phase waits for it to see every one.
    fn resolve_scope(&mut self) {
        if self.scope.is_some() {
            return;
        }
        let (client, api) = (&self.api.client, &self.api);
        self.scope = client.world.with(|w| {
            let cluster = w.clusters().get(&client.cluster)?;
            cluster.watch_scope(&api.resource, api.namespace.as_deref())
        });
    }

    fn progress(&self, seen: Option<Revision>) -> Progress {
        Progress::Informer {
            cluster: self.api.client.cluster.clone(),
            name: self.name.clone(),
            scope: self.scope.clone(),
            seen,
        }
    }

    /// At each poll: resolve the scope and, the first time, register with the liveness phase.
    fn poll_started(&mut self) {
        self.resolve_scope();
        if self.registration.is_none() {
            self.registration = Some(Registration::new(&self.api.client.world, self.progress(None)));
        }
    }

    /// Every event up to `revision` is yielded: say so to the liveness phase.
    fn seen(&self, revision: Revision) {
        if let Some(registration) = &self.registration {
            registration.update(self.progress(Some(revision)));
        }
    }

    /// The watch ended: the liveness phase no longer waits for it.
    fn unregister(&mut self) {
        self.registration = None;
    }

    /// Resolves once a write into the watch's scope moved the revision above `revision`, to the
    /// revision to pull from.
    fn wait(&mut self, revision: Revision) -> RevisionAbove {
        self.resolve_scope();
        let client = &self.api.client;
        RevisionAbove {
            world: client.world.clone(),
            cluster: client.cluster.clone(),
            revision,
            scope: self.scope.clone(),
            waiter: None,
        }
    }

    /// Pass the watch gate and pull the events after `from`; `None` if the watch was cut and ends
    /// (only with [`OnCut::End`]).
    async fn pull(&mut self, from: Revision, params: WatchParams) -> Result<Option<Batch>> {
        let client = self.api.client.clone();
        client.world.with(|w| w.recorder().stats.watch_pulls += 1);
        let gate = injector::watch_gate(
            &client.world,
            &client.node,
            &self.api.resource,
            &self.name,
            &mut self.epochs,
            self.on_cut,
        )
        .await;
        match gate {
            injector::Gate::Relist => return Err(Error::WatchError(self.expired())),
            injector::Gate::Cut => return Ok(None),
            injector::Gate::Pull => {}
        }
        let request =
            Request::watch(&self.api.resource, self.api.namespace.as_deref(), &from.to_string(), params);
        let (answer, polled_at) = transport::poll_watch(&client.world, &client.cluster, request);
        match answer {
            Ok(Response::Watch(events)) => Ok(Some(Batch { events: events.into(), polled_at })),
            Err(status) if status.code == 410 => Err(Error::WatchError(Box::new(status))),
            Ok(_) => Err(Error::WatchStartFailed(unexpected("watch"))),
            Err(status) => Err(Error::WatchStartFailed(status.into())),
        }
    }

    /// Deliver one pulled event: wait its drawn delay (and any injected delay), and trace it.
    /// `false` if an injected fault expired the watch before it arrived. A bookmark (no object,
    /// nothing changes) arrives at once.
    async fn arrive(&self, event: &WatchEvent<Arc<DynamicObject>>) -> bool {
        let Some((kind, object, resource_version)) = summarize(event) else { return true };
        let client = &self.api.client;
        let name = &self.name;
        let (delay, fault) = client.world.with(|w| {
            let delay = w.decisions().stream("watch").duration_ms(WATCH_DELAY_MS_MIN, WATCH_DELAY_MS_MAX);
            let info = DeliveryInfo {
                node: &client.node,
                cluster: &client.cluster,
                watch: name,
                kind,
                object: &object,
                resource_version: &resource_version,
                elapsed: w.elapsed(),
            };
            (delay, w.hook().on_delivery(&info))
        });
        let delay = match fault {
            Delivery::Deliver => delay,
            Delivery::Delay(extra) => {
                let description = format!("watch {name}: {kind} {object} delayed {}ms", extra.as_millis());
                client.world.with(|w| w.trace(&client.node, TraceEvent::Fault { description }));
                delay + extra
            }
            Delivery::Expire => {
                let description = format!("watch {name} expired before {kind} {object}");
                client.world.with(|w| w.trace(&client.node, TraceEvent::Fault { description }));
                return false;
            }
        };
        madsim::time::sleep(delay).await;
        client.world.with(|w| {
            w.recorder().stats.watch_deliveries += 1;
            let event = EventRef::WatchDelivery {
                watch: name,
                kind,
                object: &object,
                resource_version: &resource_version,
            };
            w.trace_ref(&client.node, event);
        });
        true
    }

    /// The 410 Expired the watch gets when an injected fault expires it.
    fn expired(&self) -> Box<Status> {
        let message = format!("watch {}: too old resource version", self.name);
        Box::new(Status::failure(&message, "Expired").with_code(410))
    }
}

/// The watcher's state machine and what it owns.
struct Machine<K: Resource> {
    link: WatchLink<K>,
    config: Config,
    state: State<K>,
}

/// The name a watcher has in traces: `cluster/resource[/namespace]`.
pub(crate) fn watch_name<K: Resource>(api: &Api<K>) -> Arc<str> {
    let mut name = format!("{}/{}", api.client.cluster, api.resource.plural);
    if let Some(ns) = &api.namespace {
        name.push('/');
        name.push_str(ns);
    }
    Arc::from(name)
}

fn unexpected(verb: &str) -> crate::Error {
    crate::Error::from(model_apiserver::errors::internal_error(&format!("unexpected answer to a {verb}")))
}

impl<K> Machine<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    fn new(api: Api<K>, config: Config) -> Self {
        Machine { link: WatchLink::new(api, OnCut::Rewatch), config, state: State::Empty }
    }

    /// The next item: loops (without yielding) over steps that produce nothing.
    async fn next(&mut self) -> Result<Event<Arc<K>>> {
        self.link.poll_started();
        loop {
            match std::mem::replace(&mut self.state, State::Empty) {
                State::Empty => return self.list().await,
                State::InitPage { mut objects, revision } => match objects.pop_front() {
                    Some(object) => {
                        self.state = State::InitPage { objects, revision };
                        return Ok(Event::InitApply(object));
                    }
                    None => {
                        self.watch_from(None, revision);
                        return Ok(Event::InitDone);
                    }
                },
                State::Watching { revision, batch: None } => {
                    let from = self.link.wait(revision).await;
                    match self.link.pull(from, self.config.watch_params()).await {
                        Ok(batch) => self.state = State::Watching { revision, batch },
                        // An expired watch relists (the state stays `Empty`); a failed one retries.
                        Err(error @ Error::WatchError(_)) => return Err(error),
                        Err(error) => {
                            self.state = State::Watching { revision, batch: None };
                            return Err(error);
                        }
                    }
                }
                State::Watching { revision, batch: Some(mut batch) } => {
                    let Some(event) = batch.events.pop_front() else {
                        self.watch_from(Some(revision), batch.polled_at.max(revision));
                        continue;
                    };
                    self.state = State::Watching { revision, batch: Some(batch) };
                    if let Some(item) = self.deliver(event).await {
                        return item;
                    }
                }
            }
        }
    }

    /// Watch from `revision` on, and say so to the liveness phase.
    fn watch_from(&mut self, before: Option<Revision>, revision: Revision) {
        // Within one watch, the revision only moves forward; only a relist may go back (onto a
        // lagging replica, for one).
        if let Some(before) = before {
            assert!(
                revision >= before,
                "watcher {}: watched revision went back from {before} to {revision}",
                self.link.name
            );
        }
        self.state = State::Watching { revision, batch: None };
        self.link.seen(revision);
    }

    async fn list(&mut self) -> Result<Event<Arc<K>>> {
        let link = &mut self.link;
        let api = &link.api;
        let (params, replica_until) = stale_replica::replica_list(
            &api.client.world,
            &api.client.node,
            &api.client.cluster,
            &link.name,
            self.config.list_params(),
        );
        let request = Request::list(&api.resource, api.namespace.as_deref(), params);
        let list =
            match transport::call(&api.client.world, &api.client.cluster, &api.client.node, request).await {
                Ok(Response::List(list)) => list,
                Ok(_) => return Err(Error::InitialListFailed(unexpected("list"))),
                Err(status) => return Err(Error::InitialListFailed(status.into())),
            };
        let Ok(revision) = list.resource_version.parse::<Revision>() else {
            return Err(Error::NoResourceVersion);
        };
        // An object that does not decode as `K` is left out, as a list that skips it.
        let objects: VecDeque<Arc<K>> =
            list.items.iter().filter_map(|item| typed_in::<K>(&api.client.world, item, true).ok()).collect();
        api.client.world.with(|w| {
            w.profile().note_list(
                &api.client.node,
                &link.name,
                self.config.list_semantic == ListSemantic::Any,
            );
            let event = TraceEvent::Relist {
                watch: link.name.to_string(),
                resource_version: list.resource_version.clone(),
                items: objects.len(),
            };
            w.trace(&api.client.node, event);
        });
        link.epochs.listed_from_replica(replica_until);
        self.state = State::InitPage { objects, revision };
        Ok(Event::Init)
    }

    /// Deliver one pulled event after its drawn delay (and any injected fault); `None` for an
    /// event that yields nothing (a bookmark, an object that does not decode as `K`).
    async fn deliver(&mut self, event: WatchEvent<Arc<DynamicObject>>) -> Option<Result<Event<Arc<K>>>> {
        if !self.link.arrive(&event).await {
            self.state = State::Empty;
            return Some(Err(Error::WatchError(self.link.expired())));
        }
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                typed_in::<K>(&self.link.api.client.world, &o, true).ok().map(|o| Ok(Event::Apply(o)))
            }
            WatchEvent::Deleted(o) => {
                typed_in::<K>(&self.link.api.client.world, &o, true).ok().map(|o| Ok(Event::Delete(o)))
            }
            WatchEvent::Bookmark(_) => None,
            WatchEvent::Error(status) => {
                if status.code == 410 {
                    self.state = State::Empty;
                }
                Some(Err(Error::WatchError(status)))
            }
        }
    }
}

fn name_of(object: &DynamicObject) -> &str {
    object.metadata.name.as_deref().unwrap_or("")
}

/// The kind, `namespace/name` and resourceVersion of an event, as traces show it; `None` for a
/// bookmark (it carries no object and changes nothing).
fn summarize(event: &WatchEvent<Arc<DynamicObject>>) -> Option<(&'static str, String, String)> {
    let (kind, object) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        WatchEvent::Bookmark(_) => return None,
        WatchEvent::Error(status) => return Some(("ERROR", String::new(), status.code.to_string())),
    };
    // Every delivery is summarized: `concat` rather than `format!`, the same text for less work.
    let name = [object.metadata.namespace.as_deref().unwrap_or(""), "/", name_of(object)].concat();
    Some((kind, name, object.metadata.resource_version.clone().unwrap_or_default()))
}

/// The watcher with shared objects: what the engine's informers reflect without a copy.
pub(crate) fn shared<K>(api: Api<K>, config: Config) -> impl Stream<Item = Result<Event<Arc<K>>>> + Send
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    futures::stream::unfold(Machine::new(api, config), |mut machine| async move {
        let item = machine.next().await;
        Some((item, machine))
    })
}

/// Watch the objects of `api` matching `config`, as kube-runtime's `watcher()`: a stream that
/// never ends, of [`Event`]s and retryable [`Error`]s.
///
/// ```no_run
/// use futures::TryStreamExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use sim::runtime::{WatchStreamExt, watcher};
/// # async fn f(pods: sim::Api<Pod>) -> Result<(), watcher::Error> {
/// watcher(pods, watcher::Config::default())
///     .default_backoff()
///     .applied_objects()
///     .try_for_each(|pod| async move { Ok(println!("applied {:?}", pod.metadata.name)) })
///     .await?;
/// # Ok(())
/// # }
/// ```
///
/// It runs on the node that polls it, through the simulated transport: every list is an API
/// call (latency, faults), every event waits its drawn delay, and the node's watch faults apply.
pub fn watcher<K>(api: Api<K>, config: Config) -> impl Stream<Item = Result<Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    shared(api, config).map(|item| item.map(|event| event.map(Arc::unwrap_or_clone)))
}

/// Watch the objects' metadata, as kube-runtime's `metadata_watcher`: [`watcher`] over
/// `Api<PartialObjectMeta<K>>`, whose objects are their metadata alone, typed `meta.k8s.io/v1`
/// `PartialObjectMetadata`.
#[deprecated(note = "Use `watcher(Api::<PartialObjectMeta<K>>::all(client), config)` instead. \
            `Api<PartialObjectMeta<K>>` now automatically uses metadata-only requests.")]
pub fn metadata_watcher<K>(
    api: Api<K>,
    config: Config,
) -> impl Stream<Item = Result<Event<PartialObjectMeta<K>>>> + Send
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    watcher(api.metadata(), config)
}

/// Watch one named object, as kube-runtime's `watch_object`: `Some(object)` when it is found or
/// changes, `None` when it is deleted or missing from a (re)list.
pub fn watch_object<K>(api: Api<K>, name: &str) -> impl Stream<Item = Result<Option<K>>> + Send + use<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    let fields = format!("metadata.name={name}");
    watcher(api, Config::default().fields(&fields))
        // Whether the object was seen since the last `Init`: a list without it means it is gone.
        .scan(false, |seen, event| {
            match &event {
                Ok(Event::Init) => *seen = false,
                Ok(Event::InitApply(_)) => *seen = true,
                _ => {}
            }
            futures::future::ready(Some((*seen, event)))
        })
        .filter_map(|(seen, event)| async move {
            match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => Some(Ok(Some(object))),
                Ok(Event::Delete(_)) => Some(Ok(None)),
                Ok(Event::InitDone) if !seen => Some(Ok(None)),
                Ok(Event::Init | Event::InitDone) => None,
                Err(error) => Some(Err(error)),
            }
        })
}
