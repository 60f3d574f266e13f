//! Informers: a watcher that lists, then watches from the list's resourceVersion, and the cache it
//! fills, read through a [`Store`] as kube-runtime's reflector gives.
//!
//! The watcher is a small state machine ([`State`]): `Empty` lists and goes to `Watching`;
//! `Watching` waits for its cluster's revision to move, pulls the events since the revision it has
//! seen, and applies them one at a time, each after a delay drawn from the decision stream
//! `watch`. Events of one watch therefore arrive in order, while two informers (two tasks) drift
//! apart. A 410 Expired answer (a compacted revision) goes back to `Empty`: a relist, which
//! replaces the cache and touches every object.
//!
//! Everything runs on the node that created the informer: killing the node loses the cache.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::channel::mpsc;
use futures::future::Shared;
use kube_core::{
    DynamicObject, Resource, WatchEvent,
    params::{ListParams, WatchParams},
};
use serde::{Serialize, de::DeserializeOwned};

use model_apiserver::{Request, Response, Revision};

use crate::client::{Api, typed};
use crate::faults::injector::{self, WatchEpochs};
use crate::faults::stale_replica;
use crate::quiescence::Progress;
use crate::trace::TraceEvent;
use crate::transport::{self, Delivery, DeliveryInfo, RETRY_BACKOFF, RevisionAbove};
use crate::world::Registration;

/// The bounds of the delay before one watch event reaches the informer, in milliseconds (stream
/// `watch`).
pub const WATCH_DELAY_MS_MIN: u64 = 1;
/// See [`WATCH_DELAY_MS_MIN`].
pub const WATCH_DELAY_MS_MAX: u64 = 5;
const _: () = assert!(WATCH_DELAY_MS_MIN <= WATCH_DELAY_MS_MAX);

/// How an informer's lists read, as kube-runtime's `watcher::ListSemantic`.
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

/// What to watch, as kube-runtime's `watcher::Config`: label and field selectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// A label selector (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name=foo`).
    pub field_selector: Option<String>,
    /// How relists read.
    pub list_semantic: ListSemantic,
}

impl Config {
    /// Only objects matching a label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }
    /// Only objects matching a field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }
    /// Set how relists read.
    pub fn list_semantic(mut self, semantic: ListSemantic) -> Self {
        self.list_semantic = semantic;
        self
    }
    /// Relist with [`ListSemantic::Any`] (`resourceVersion="0"`, from a watch cache).
    pub fn any_semantic(self) -> Self {
        self.list_semantic(ListSemantic::Any)
    }
    fn list_params(&self) -> ListParams {
        let (resource_version, version_match) = match self.list_semantic {
            ListSemantic::Any => (Some("0".to_owned()), Some(kube_core::params::VersionMatch::NotOlderThan)),
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

/// A reference to an object of `K` by namespace and name, as kube-runtime's `ObjectRef`.
pub struct ObjectRef<K> {
    /// The name.
    pub name: String,
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> ObjectRef<K> {
    /// A reference to the cluster-scoped object `name` (add a namespace with [`ObjectRef::within`]).
    pub fn new(name: &str) -> Self {
        ObjectRef { name: name.to_owned(), namespace: None, kind: PhantomData }
    }
    /// A reference for a type known at run time (the type is not part of the reference here).
    pub fn new_with<D>(name: &str, _dyntype: D) -> Self {
        Self::new(name)
    }
    /// The same reference in namespace `ns`.
    pub fn within(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_owned());
        self
    }
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
    /// The same reference, for another type.
    pub fn erase<L>(&self) -> ObjectRef<L> {
        ObjectRef { name: self.name.clone(), namespace: self.namespace.clone(), kind: PhantomData }
    }
}

impl<K: Resource> ObjectRef<K> {
    /// The reference to `object`.
    pub fn from_obj(object: &K) -> Self {
        let meta = object.meta();
        ObjectRef {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            kind: PhantomData,
        }
    }
}

/// `ObjectRef::from(&object)`, as kube-runtime has it.
impl<K: Resource> From<&K> for ObjectRef<K> {
    fn from(object: &K) -> Self {
        ObjectRef::from_obj(object)
    }
}

impl<K> Clone for ObjectRef<K> {
    fn clone(&self) -> Self {
        ObjectRef { name: self.name.clone(), namespace: self.namespace.clone(), kind: PhantomData }
    }
}
impl<K> PartialEq for ObjectRef<K> {
    fn eq(&self, other: &Self) -> bool {
        self.namespace == other.namespace && self.name == other.name
    }
}
impl<K> Eq for ObjectRef<K> {}
impl<K> PartialOrd for ObjectRef<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for ObjectRef<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.namespace, &self.name).cmp(&(&other.namespace, &other.name))
    }
}
impl<K> std::hash::Hash for ObjectRef<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.namespace.hash(state);
        self.name.hash(state);
    }
}
impl<K> fmt::Debug for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef({})", self.key())
    }
}
impl<K> fmt::Display for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// Why waiting for a store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The informer filling the store stopped before its first list.
    #[error("the informer stopped before its initial list")]
    WriterDropped,
}

type ObjectKey = (String, String);

/// A read handle on an informer's cache. Cheap to clone; reads may be stale, as in production.
pub struct Store<K> {
    objects: Arc<Mutex<BTreeMap<ObjectKey, Arc<K>>>>,
    /// Set when the first list is applied, so that [`Store::is_ready`] needs nobody to poll
    /// `ready` (a shared future only knows its value once someone polled it).
    listed: Arc<AtomicBool>,
    ready: Shared<futures::channel::oneshot::Receiver<()>>,
    /// Where every object the informer touches is sent (see [`Store::subscribe`]). Each channel
    /// holds at most what one relist touches before its reader runs, since the reader is a task
    /// of the same node that runs as soon as the informer yields.
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<K>>>>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            objects: self.objects.clone(),
            listed: self.listed.clone(),
            ready: self.ready.clone(),
            subscribers: self.subscribers.clone(),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("len", &self.len()).finish()
    }
}

fn key_of(namespace: Option<&str>, name: &str) -> ObjectKey {
    (namespace.unwrap_or("").to_owned(), name.to_owned())
}

impl<K> Store<K> {
    /// A new, empty store and the handle that signals its first list.
    pub(crate) fn new() -> (Self, futures::channel::oneshot::Sender<()>) {
        let (tx, rx) = futures::channel::oneshot::channel();
        let store = Store {
            objects: Arc::default(),
            listed: Arc::default(),
            ready: rx.shared(),
            subscribers: Arc::default(),
        };
        (store, tx)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Arc<K>>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The cached object, if any.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.lock().get(&key_of(key.namespace.as_deref(), &key.name)).cloned()
    }
    /// Every cached object, in namespace/name order.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.lock().values().cloned().collect()
    }
    /// The first cached object (in namespace/name order) matching `predicate`.
    pub fn find(&self, predicate: impl Fn(&K) -> bool) -> Option<Arc<K>> {
        self.lock().values().find(|o| predicate(o)).cloned()
    }
    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.lock().len()
    }
    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether the initial list has been applied, as kube-runtime's `Store::is_ready`: true from
    /// the moment the informer's first list is in the cache, whether or not anything waited for it.
    pub fn is_ready(&self) -> bool {
        self.listed.load(Ordering::Relaxed)
    }
    /// Every object the informer touches from now on (each event's object, every object of each
    /// relist), as kube-runtime's shared reflector's `subscribe`: what
    /// [`Controller::owns_stream`](crate::controller::Controller::owns_stream) and
    /// [`Controller::watches_stream`](crate::controller::Controller::watches_stream) take, so that
    /// a controller reads the cache of an owned kind it also maps triggers from. Subscribe before
    /// the node's first `.await`, or the initial list may pass before the subscription.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<K>> {
        let (tx, rx) = mpsc::unbounded();
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        rx
    }

    /// Send `object` to every subscriber still listening.
    fn notify(&self, object: &Arc<K>) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        if !subscribers.is_empty() {
            subscribers.retain(|tx| tx.unbounded_send(object.clone()).is_ok());
        }
    }

    /// Wait until the initial list has been applied.
    pub async fn wait_until_ready(&self) -> Result<(), StoreError> {
        self.ready.clone().await.map_err(|_| StoreError::WriterDropped)
    }
    /// Replace the cache with a list's objects; the first list makes the store ready.
    fn replace(&self, objects: Vec<(ObjectKey, Arc<K>)>) {
        *self.lock() = objects.into_iter().collect();
        self.listed.store(true, Ordering::Relaxed);
    }
    fn apply(&self, key: ObjectKey, object: Arc<K>) {
        self.lock().insert(key, object);
    }
    fn remove(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

/// Start an informer for `api` on the current node and return its cache.
pub fn reflector<K>(api: Api<K>, config: Config) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    spawn(api, config, |_| {})
}

/// Start an informer; `on_touch` is called with every object an event or a relist touches.
pub(crate) fn spawn<K>(api: Api<K>, config: Config, on_touch: impl Fn(&Arc<K>) + 'static) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    let (store, ready) = Store::new();
    let fault_epochs = WatchEpochs::current(&api.client.world, &api.client.node);
    let informer = Informer {
        api,
        config,
        store: store.clone(),
        ready: Some(ready),
        on_touch: Box::new(on_touch),
        fault_epochs,
    };
    madsim::task::spawn_local(informer.run());
    store
}

/// The watcher's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing cached yet, or the watch expired: list.
    Empty,
    /// Watching from `revision` (everything up to it is applied).
    Watching { revision: Revision },
}

/// Called with every object an event or a relist touches.
type OnTouch<K> = Box<dyn Fn(&Arc<K>)>;

struct Informer<K: Resource> {
    api: Api<K>,
    config: Config,
    store: Store<K>,
    ready: Option<futures::channel::oneshot::Sender<()>>,
    on_touch: OnTouch<K>,
    /// What the informer knows of its node's faults (forced relists, cut watches, a lagging replica).
    fault_epochs: WatchEpochs,
}

/// The name an informer has in traces: `cluster/resource[/namespace]`.
fn informer_name<K: Resource>(api: &Api<K>) -> Arc<str> {
    let mut name = format!("{}/{}", api.client.cluster, api.resource.plural);
    if let Some(ns) = &api.namespace {
        name.push('/');
        name.push_str(ns);
    }
    Arc::from(name)
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// Runs for the node's lifetime; each round awaits (a call, a delivery or a revision move).
    async fn run(mut self) {
        let name = informer_name(&self.api);
        let cluster = self.api.client.cluster.clone();
        let registration = Registration::new(
            &self.api.client.world,
            Progress::Informer { cluster: cluster.clone(), name: name.clone(), seen: None },
        );
        let mut state = State::Empty;
        loop {
            let watched = match state {
                State::Watching { revision } => Some(revision),
                State::Empty => None,
            };
            state = match state {
                State::Empty => self.relist(&name).await,
                State::Watching { revision } => self.watch(&name, revision).await,
            };
            // Within one watch, the revision only moves forward; only a relist may go back (onto
            // a lagging replica, for one).
            if let (Some(before), State::Watching { revision }) = (watched, &state) {
                assert!(
                    *revision >= before,
                    "informer {name}: watched revision went back from {before} to {revision}"
                );
            }
            if let State::Watching { revision } = state {
                let seen = Some(revision);
                registration.update(Progress::Informer {
                    cluster: cluster.clone(),
                    name: name.clone(),
                    seen,
                });
            }
        }
    }

    async fn relist(&mut self, name: &Arc<str>) -> State {
        let api = &self.api;
        let (params, replica_until) = stale_replica::replica_list(
            &api.client.world,
            &api.client.node,
            &api.client.cluster,
            name,
            self.config.list_params(),
        );
        let request = Request::list(&api.resource, api.namespace.as_deref(), params);
        let list =
            match transport::call(&api.client.world, &api.client.cluster, &api.client.node, request).await {
                Ok(Response::List(list)) => list,
                _ => {
                    madsim::time::sleep(RETRY_BACKOFF).await;
                    return State::Empty;
                }
            };
        let Ok(revision) = list.resource_version.parse::<Revision>() else {
            madsim::time::sleep(RETRY_BACKOFF).await;
            return State::Empty;
        };
        let mut objects = Vec::with_capacity(list.items.len());
        for item in &list.items {
            let Ok(typed) = typed::<K>(item) else { continue };
            objects.push((key_of(item.metadata.namespace.as_deref(), &name_of(item)), typed));
        }
        let touched: Vec<Arc<K>> = objects.iter().map(|(_, o)| o.clone()).collect();
        self.store.replace(objects);
        api.client.world.with(|w| {
            w.profile().note_list(&api.client.node, name, self.config.list_semantic == ListSemantic::Any);
            let event = TraceEvent::Relist {
                watch: name.to_string(),
                resource_version: list.resource_version.clone(),
                items: touched.len(),
            };
            w.trace(&api.client.node, event);
        });
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(());
        }
        for object in &touched {
            (self.on_touch)(object);
            self.store.notify(object);
        }
        self.fault_epochs.listed_from_replica(replica_until);
        State::Watching { revision }
    }

    async fn watch(&mut self, name: &Arc<str>, revision: Revision) -> State {
        let client = self.api.client.clone();
        RevisionAbove { world: client.world.clone(), cluster: client.cluster.clone(), revision }.await;
        let gate = injector::watch_gate(
            &client.world,
            &client.node,
            &self.api.resource,
            name,
            &mut self.fault_epochs,
        )
        .await;
        if gate == injector::Gate::Relist {
            return State::Empty;
        }
        let request = Request::watch(
            &self.api.resource,
            self.api.namespace.as_deref(),
            &revision.to_string(),
            self.config.watch_params(),
        );
        let (answer, polled_at) = transport::poll_watch(&client.world, &client.cluster, request);
        let events = match answer {
            Ok(Response::Watch(events)) => events,
            Err(status) if status.code == 410 => return State::Empty,
            _ => {
                madsim::time::sleep(RETRY_BACKOFF).await;
                return State::Watching { revision };
            }
        };
        for event in events {
            let Some((kind, object, resource_version)) = summarize(&event) else { continue };
            let (delay, fault) = client.world.with(|w| {
                let delay = w.decisions().stream("watch").duration_ms(WATCH_DELAY_MS_MIN, WATCH_DELAY_MS_MAX);
                let info = DeliveryInfo {
                    node: &client.node,
                    cluster: &client.cluster,
                    watch: name,
                    kind,
                    object: &object,
                    resource_version: &resource_version,
                };
                (delay, w.hook().on_delivery(&info))
            });
            let delay = match fault {
                Delivery::Deliver => delay,
                Delivery::Delay(extra) => {
                    let description =
                        format!("watch {name}: {kind} {object} delayed {}ms", extra.as_millis());
                    client.world.with(|w| w.trace(&client.node, TraceEvent::Fault { description }));
                    delay + extra
                }
                Delivery::Expire => {
                    let description = format!("watch {name} expired before {kind} {object}");
                    client.world.with(|w| w.trace(&client.node, TraceEvent::Fault { description }));
                    return State::Empty;
                }
            };
            madsim::time::sleep(delay).await;
            if !self.deliver(name, event, kind, object, resource_version) {
                return State::Empty;
            }
        }
        State::Watching { revision: polled_at.max(revision) }
    }

    /// Apply one event to the cache. `false` if the watch expired and a relist is due.
    fn deliver(
        &mut self,
        name: &Arc<str>,
        event: WatchEvent<Arc<DynamicObject>>,
        kind: &'static str,
        object_name: String,
        resource_version: String,
    ) -> bool {
        self.trace_delivery(name, kind, object_name, resource_version);
        let object = match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
            WatchEvent::Bookmark(_) => return true,
            WatchEvent::Error(status) => return status.code != 410,
        };
        let key = key_of(object.metadata.namespace.as_deref(), &name_of(&object));
        let Ok(typed) = typed::<K>(&object) else { return true };
        if kind == "DELETED" {
            self.store.remove(&key);
        } else {
            self.store.apply(key, typed.clone());
        }
        (self.on_touch)(&typed);
        self.store.notify(&typed);
        true
    }

    fn trace_delivery(&self, name: &Arc<str>, kind: &'static str, object: String, resource_version: String) {
        let client = &self.api.client;
        client.world.with(|w| {
            w.recorder().stats.watch_deliveries += 1;
            let event = TraceEvent::WatchDelivery { watch: name.to_string(), kind, object, resource_version };
            w.trace(&client.node, event);
        });
    }
}

fn name_of(object: &DynamicObject) -> String {
    object.metadata.name.clone().unwrap_or_default()
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
    let name = format!("{}/{}", object.metadata.namespace.as_deref().unwrap_or(""), name_of(object));
    Some((kind, name, object.metadata.resource_version.clone().unwrap_or_default()))
}
