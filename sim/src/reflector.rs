//! Caches, as kube-runtime's `reflector`: a [`Store`] read handle, the [`Writer`] that fills it
//! from [`watcher::Event`]s, and [`reflector`], which passes a watcher stream through a writer.
//!
//! ```no_run
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use sim::runtime::{WatchStreamExt, reflector, watcher};
//! # async fn f(api: sim::Api<ConfigMap>) {
//! let (reader, writer) = reflector::store::<ConfigMap>();
//! let stream = reflector(writer, watcher(api, watcher::Config::default())).applied_objects();
//! // poll `stream`; `reader.get(..)`, `reader.state()` read what it reflected.
//! # let _ = (reader, stream);
//! # }
//! ```
//!
//! The store keeps objects in a `BTreeMap` by namespace and name, so `state()` lists them in that
//! order on every run (kube-runtime's hash map lists them in a random order).

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::future::Shared;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{Resource, ResourceExt, Selector, SelectorExt};

use crate::watcher;

pub use store::{store, store_shared};

/// The minimal lookup behaviour a [`Store`] needs, as kube-runtime's `reflector::Lookup`:
/// implemented for every [`Resource`].
pub trait Lookup {
    /// Type information for types known only at run time, as [`Resource::DynamicType`].
    type DynamicType;

    /// The kind.
    fn kind(dyntype: &Self::DynamicType) -> Cow<'_, str>;
    /// The API group.
    fn group(dyntype: &Self::DynamicType) -> Cow<'_, str>;
    /// The API version.
    fn version(dyntype: &Self::DynamicType) -> Cow<'_, str>;
    /// The apiVersion (`group/version`, or `version` for the core group).
    fn api_version(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        kube_core::api_version_from_group_version(Self::group(dyntype), Self::version(dyntype))
    }
    /// The plural resource name.
    fn plural(dyntype: &Self::DynamicType) -> Cow<'_, str>;
    /// The object's name.
    fn name(&self) -> Option<Cow<'_, str>>;
    /// The object's namespace.
    fn namespace(&self) -> Option<Cow<'_, str>>;
    /// The object's resourceVersion.
    fn resource_version(&self) -> Option<Cow<'_, str>>;
    /// The object's uid.
    fn uid(&self) -> Option<Cow<'_, str>>;

    /// The reference to this object, its [`ObjectRef::extra`] filled in.
    ///
    /// # Panics
    /// If the object has no name, as kube's.
    fn to_object_ref(&self, _dyntype: Self::DynamicType) -> ObjectRef<Self>
    where
        Self: Sized,
    {
        ObjectRef {
            name: self.name().expect(".metadata.name missing").into_owned(),
            namespace: self.namespace().map(Cow::into_owned),
            extra: Extra {
                resource_version: self.resource_version().map(Cow::into_owned),
                uid: self.uid().map(Cow::into_owned),
            },
            kind: PhantomData,
        }
    }
}

impl<K: Resource> Lookup for K {
    type DynamicType = K::DynamicType;

    fn kind(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dyntype)
    }
    fn group(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dyntype)
    }
    fn version(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dyntype)
    }
    fn plural(dyntype: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dyntype)
    }
    fn name(&self) -> Option<Cow<'_, str>> {
        self.meta().name.as_deref().map(Cow::Borrowed)
    }
    fn namespace(&self) -> Option<Cow<'_, str>> {
        self.meta().namespace.as_deref().map(Cow::Borrowed)
    }
    fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.meta().resource_version.as_deref().map(Cow::Borrowed)
    }
    fn uid(&self) -> Option<Cow<'_, str>> {
        self.meta().uid.as_deref().map(Cow::Borrowed)
    }
}

/// What an [`ObjectRef`] knows of its object besides its name, as kube-runtime's
/// `ObjectRef::extra` (exported as `reflector::ObjectRefExtra`): not compared, but carried into
/// an `ObjectReference`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Extra {
    /// The object's resourceVersion when the reference was made.
    pub resource_version: Option<String>,
    /// The object's uid.
    pub uid: Option<String>,
}

/// A reference to an object of `K` by namespace and name, as kube-runtime's `ObjectRef`.
///
/// Unlike kube's, it holds no `dyntype` (the type is `K`, known when compiled), and
/// [`ObjectRef::erase`] gives a reference of any type rather than `ObjectRef<DynamicObject>`
/// with the type's resource information.
pub struct ObjectRef<K> {
    /// The name.
    pub name: String,
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's uid and resourceVersion when known (from [`ObjectRef::from_obj`] or
    /// [`ObjectRef::from_owner_ref`]); ignored by comparisons, as kube's.
    pub extra: Extra,
    kind: PhantomData<fn() -> K>,
}

impl<K> ObjectRef<K> {
    /// A reference to the cluster-scoped object `name` (add a namespace with [`ObjectRef::within`]).
    pub fn new(name: &str) -> Self {
        ObjectRef { name: name.to_owned(), namespace: None, extra: Extra::default(), kind: PhantomData }
    }
    /// A reference for a type known at run time (the type is not part of the reference here).
    pub fn new_with<D>(name: &str, _dyntype: D) -> Self {
        Self::new(name)
    }
    /// The same reference in namespace `ns`.
    #[must_use]
    pub fn within(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_owned());
        self
    }
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub fn key(&self) -> String {
        let mut key =
            String::with_capacity(self.namespace.as_ref().map_or(0, |ns| ns.len() + 1) + self.name.len());
        let _ = self.write_key(&mut key);
        key
    }
    /// Append [`ObjectRef::key`] to `out`, without the formatting machinery (traces name an
    /// object at every reconcile).
    pub(crate) fn write_key(&self, out: &mut impl fmt::Write) -> fmt::Result {
        if let Some(ns) = &self.namespace {
            out.write_str(ns)?;
            out.write_char('/')?;
        }
        out.write_str(&self.name)
    }
    /// The same reference, for another type.
    pub fn erase<L>(&self) -> ObjectRef<L> {
        ObjectRef {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            extra: self.extra.clone(),
            kind: PhantomData,
        }
    }
    /// The same reference, for `K2`, as kube-runtime's `into_kind_unchecked`: nothing checks that
    /// such an object exists (every Service has an Endpoints, a Pod no Deployment).
    #[must_use]
    pub fn into_kind_unchecked<K2>(self, _dt2: impl Sized) -> ObjectRef<K2> {
        ObjectRef { name: self.name, namespace: self.namespace, extra: self.extra, kind: PhantomData }
    }
}

impl<K: Resource> ObjectRef<K> {
    /// The reference to `object`, its uid and resourceVersion in [`ObjectRef::extra`].
    pub fn from_obj(object: &K) -> Self {
        let meta = object.meta();
        ObjectRef {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            extra: Extra { resource_version: meta.resource_version.clone(), uid: meta.uid.clone() },
            kind: PhantomData,
        }
    }
    /// [`ObjectRef::from_obj`] for a type known at run time, as kube-runtime's.
    pub fn from_obj_with(object: &K, _dyntype: K::DynamicType) -> Self {
        Self::from_obj(object)
    }
    /// The owner an owner reference names, in `namespace`, if its kind and apiVersion are
    /// `K`'s, as kube-runtime's: the owner's uid goes into [`ObjectRef::extra`].
    pub fn from_owner_ref(
        namespace: Option<&str>,
        owner: &OwnerReference,
        dyntype: K::DynamicType,
    ) -> Option<Self> {
        if owner.api_version != K::api_version(&dyntype) || owner.kind != K::kind(&dyntype) {
            return None;
        }
        Some(ObjectRef {
            name: owner.name.clone(),
            namespace: namespace.map(str::to_owned),
            extra: Extra { resource_version: None, uid: Some(owner.uid.clone()) },
            kind: PhantomData,
        })
    }
}

/// `ObjectRef::from(&object)`, as kube-runtime has it.
impl<K: Resource> From<&K> for ObjectRef<K> {
    fn from(object: &K) -> Self {
        ObjectRef::from_obj(object)
    }
}

/// An `ObjectReference` (as Events and `involvedObject` carry) with `K`'s kind and apiVersion.
impl<K: Resource> From<ObjectRef<K>> for ObjectReference
where
    K::DynamicType: Default,
{
    fn from(object_ref: ObjectRef<K>) -> Self {
        let dyntype = K::DynamicType::default();
        ObjectReference {
            api_version: Some(K::api_version(&dyntype).into_owned()),
            kind: Some(K::kind(&dyntype).into_owned()),
            field_path: None,
            name: Some(object_ref.name),
            namespace: object_ref.namespace,
            resource_version: object_ref.extra.resource_version,
            uid: object_ref.extra.uid,
        }
    }
}

impl<K> Clone for ObjectRef<K> {
    fn clone(&self) -> Self {
        self.erase()
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
        self.write_key(f)
    }
}

/// Why waiting for a store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The writer filling the store was dropped before its first list was complete.
    #[error("writer was dropped before store became ready")]
    WriterDropped,
}

/// A cached object's key: its namespace (`""` for a cluster-scoped object) and name, ordered
/// so. Looked up as a [`KeyParts`] of borrowed strings, so that a read or an event for an object
/// already cached allocates no key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ObjectKey {
    namespace: String,
    name: String,
}

impl ObjectKey {
    /// The owned key of a borrowed one ([`lookup_key`]).
    fn new((namespace, name): (&str, &str)) -> Self {
        ObjectKey { namespace: namespace.to_owned(), name: name.to_owned() }
    }
}

/// A key's namespace and name, however held: [`ObjectKey`] borrows as `dyn KeyParts`, which
/// orders as `ObjectKey` does (namespace, then name).
trait KeyParts {
    fn parts(&self) -> (&str, &str);
}

impl KeyParts for ObjectKey {
    fn parts(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }
}

impl KeyParts for (&str, &str) {
    fn parts(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> std::borrow::Borrow<dyn KeyParts + 'a> for ObjectKey {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyParts + '_ {}

impl PartialOrd for dyn KeyParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyParts + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

/// The borrowed key of `namespace`/`name`, to look up.
fn lookup_key<'a>(namespace: Option<&'a str>, name: &'a str) -> (&'a str, &'a str) {
    (namespace.unwrap_or(""), name)
}

/// The borrowed key of an object, to look up.
fn object_lookup_key<K: Resource>(object: &K) -> (&str, &str) {
    let meta = object.meta();
    lookup_key(meta.namespace.as_deref(), meta.name.as_deref().unwrap_or(""))
}

/// A read handle on a reflector's cache, as kube-runtime's `reflector::Store`. Cheap to clone;
/// reads may be stale, as in production.
pub struct Store<K> {
    objects: Arc<Mutex<BTreeMap<ObjectKey, Arc<K>>>>,
    /// Set when the first list is applied, so that [`Store::is_ready`] needs nobody to poll
    /// `ready` (a shared future only knows its value once someone polled it).
    listed: Arc<AtomicBool>,
    /// How many times the writer has changed the cache (see [`Store::changes`]).
    changes: Arc<AtomicU64>,
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
            changes: self.changes.clone(),
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

impl<K> Store<K> {
    /// A new, empty store and the handle that signals its first list.
    pub(crate) fn new() -> (Self, futures::channel::oneshot::Sender<()>) {
        let (tx, rx) = futures::channel::oneshot::channel();
        let store = Store {
            objects: Arc::default(),
            listed: Arc::default(),
            changes: Arc::default(),
            ready: rx.shared(),
            subscribers: Arc::default(),
        };
        (store, tx)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Arc<K>>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The cache for the writer to change: counts the change (see [`Store::changes`]).
    fn lock_to_change(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Arc<K>>> {
        self.changes.fetch_add(1, Ordering::Relaxed);
        self.lock()
    }
    /// The cached object, if any. A namespaced reference also finds a cluster-scoped object of
    /// that name, as kube-runtime's (an owner reference carries no namespace of its own).
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        let objects = self.lock();
        objects
            .get(&lookup_key(key.namespace.as_deref(), &key.name) as &dyn KeyParts)
            .or_else(|| {
                key.namespace
                    .as_ref()
                    .and_then(|_| objects.get(&lookup_key(None, &key.name) as &dyn KeyParts))
            })
            .cloned()
    }
    /// Every cached object matching `predicate`, in namespace/name order.
    pub fn state_filter(&self, predicate: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.lock().values().filter(|o| predicate(o)).cloned().collect()
    }
    /// Every cached object whose labels match `selector`, in namespace/name order, as
    /// kube-runtime's `Store::state_filter_selector`.
    pub fn state_filter_selector(&self, selector: &Selector) -> Vec<Arc<K>>
    where
        K: ResourceExt,
    {
        self.state_filter(|object| selector.matches(object.labels()))
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
    /// A count that moves whenever the writer changes the cache (an event applied, an object
    /// removed, a relist): equal counts mean the cache holds the very same objects. A sim
    /// extension for code that polls a cache and skips its work when nothing changed, as the
    /// built-in garbage collector does; kube-runtime's stores have no such count.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }
    /// Every object the store's writer touches from now on (each event's object, deleted ones
    /// included, and every object of each relist, with the last cached copy of each object a
    /// relist no longer holds: deleted while the watch was down, what client-go's informers hand
    /// their delete handlers as `DeletedFinalStateUnknown`): a sim extension, close to kube-runtime's
    /// [`Writer::subscribe`] but taken from the reader. What
    /// [`Controller::owns_shared_stream`](crate::controller::Controller::owns_shared_stream) and
    /// [`Controller::watches_shared_stream`](crate::controller::Controller::watches_shared_stream)
    /// take, so that a controller reads the cache of an owned kind it also maps triggers from.
    /// Subscribe before the node's first `.await`, or the initial list may pass before the
    /// subscription.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Arc<K>> {
        let (tx, rx) = mpsc::unbounded();
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        rx
    }

    /// Send `object` to every subscriber still listening.
    pub(crate) fn notify(&self, object: &Arc<K>) {
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        if !subscribers.is_empty() {
            subscribers.retain(|tx| tx.unbounded_send(object.clone()).is_ok());
        }
    }

    /// Wait until the initial list has been applied (the writer's first `InitDone`).
    pub async fn wait_until_ready(&self) -> Result<(), StoreError> {
        self.ready.clone().await.map_err(|_| StoreError::WriterDropped)
    }
    /// Replace the cache with a list's objects; the first list makes the store ready. Returns the
    /// objects the list no longer holds (deleted while the watch was down), as last cached.
    pub(crate) fn replace(&self, objects: Vec<(ObjectKey, Arc<K>)>) -> Vec<Arc<K>> {
        let mut cached = self.lock_to_change();
        let before = std::mem::replace(&mut *cached, objects.into_iter().collect());
        self.listed.store(true, Ordering::Relaxed);
        before.into_iter().filter(|(key, _)| !cached.contains_key(key)).map(|(_, object)| object).collect()
    }
    /// Cache `object` under `key` (an object already cached is replaced in place: no new key).
    pub(crate) fn apply(&self, key: (&str, &str), object: Arc<K>) {
        let mut objects = self.lock_to_change();
        match objects.get_mut(&key as &dyn KeyParts) {
            Some(cached) => *cached = object,
            None => {
                objects.insert(ObjectKey::new(key), object);
            }
        }
    }
    pub(crate) fn remove(&self, key: (&str, &str)) {
        self.lock_to_change().remove(&key as &dyn KeyParts);
    }
}

/// What the writer's buffer holds during a relist: the listed objects in list order.
type Buffer<K> = Vec<(ObjectKey, Arc<K>)>;

/// Where a shared writer sends the reference of every object it applies (see [`Writer::subscribe`]).
type Dispatch<K> = Arc<Mutex<Vec<mpsc::UnboundedSender<ObjectRef<K>>>>>;

/// The writing half of a [`Store`], as kube-runtime's `reflector::store::Writer`.
pub struct Writer<K> {
    store: Store<K>,
    ready: Option<futures::channel::oneshot::Sender<()>>,
    /// The objects of the relist in progress (between `Init` and `InitDone`).
    buffer: Buffer<K>,
    /// `Some` for a shared writer ([`store_shared`]).
    dispatch: Option<Dispatch<K>>,
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer").field("store", &self.store).finish()
    }
}

impl<K> Default for Writer<K> {
    fn default() -> Self {
        let (store, ready) = Store::new();
        Writer { store, ready: Some(ready), buffer: Vec::new(), dispatch: None }
    }
}

fn key_of_object<K: Resource>(object: &K) -> ObjectKey {
    ObjectKey::new(object_lookup_key(object))
}

impl<K: Resource> Writer<K> {
    /// A new writer for objects of `K` (kube's `dyntype` is `K`'s static type here).
    pub fn new(_dyntype: K::DynamicType) -> Self {
        Self::default()
    }

    /// A writer whose applied objects reach its subscribers ([`Writer::subscribe`]), as
    /// kube-runtime's `Writer::new_shared`. `buf_size` is kube's bound on how far a subscriber may
    /// lag; a simulated subscriber is a task of the same node and is never left behind, so the
    /// channel is unbounded.
    pub fn new_shared(_buf_size: usize, _dyntype: K::DynamicType) -> Self {
        Writer { dispatch: Some(Arc::default()), ..Self::default() }
    }

    /// A read handle on this writer's store.
    #[must_use]
    pub fn as_reader(&self) -> Store<K> {
        self.store.clone()
    }

    /// A stream of every object this (shared) writer applies from now on, and of every object
    /// of each completed relist, as kube-runtime's `Writer::subscribe`; `None` for a writer made
    /// by [`store`] rather than [`store_shared`].
    pub fn subscribe(&self) -> Option<ReflectHandle<K>> {
        let dispatch = self.dispatch.as_ref()?;
        Some(ReflectHandle::subscribe(Some(dispatch.clone()), self.as_reader(), VecDeque::new()))
    }

    /// Apply one watcher event to the store, as kube-runtime's: `Apply` and `Delete` change it at
    /// once; `Init` starts a buffer, `InitApply` fills it and `InitDone` swaps it in (and makes the
    /// store ready the first time).
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<K>)
    where
        K: Clone,
    {
        let shared = event.clone().map(Arc::new);
        self.apply_shared(&shared, &mut |_| {});
    }

    /// [`Writer::apply_watcher_event`] for shared objects; `touch` is called with every object an
    /// event or a completed relist touches, just before the store's subscribers get it.
    pub(crate) fn apply_shared(&mut self, event: &watcher::Event<Arc<K>>, touch: &mut dyn FnMut(&Arc<K>)) {
        match event {
            watcher::Event::Apply(object) => {
                self.store.apply(object_lookup_key(&**object), object.clone());
                touch(object);
                self.store.notify(object);
                self.dispatch(std::slice::from_ref(object));
            }
            watcher::Event::Delete(object) => {
                self.store.remove(object_lookup_key(&**object));
                touch(object);
                self.store.notify(object);
            }
            watcher::Event::Init => self.buffer.clear(),
            watcher::Event::InitApply(object) => self.buffer.push((key_of_object(&**object), object.clone())),
            watcher::Event::InitDone => {
                let listed = std::mem::take(&mut self.buffer);
                let touched: Vec<Arc<K>> = listed.iter().map(|(_, object)| object.clone()).collect();
                let gone = self.store.replace(listed);
                if let Some(ready) = self.ready.take() {
                    let _ = ready.send(());
                }
                for object in &touched {
                    touch(object);
                    self.store.notify(object);
                }
                // Deleted while the watch was down: the store's subscribers hear of it, as a
                // client-go informer's delete handler does (`DeletedFinalStateUnknown`).
                for object in &gone {
                    self.store.notify(object);
                }
                if self.dispatch.is_some() {
                    self.dispatch(&self.store.state());
                }
            }
        }
    }

    fn dispatch(&self, objects: &[Arc<K>]) {
        let Some(dispatch) = &self.dispatch else { return };
        let mut subscribers = dispatch.lock().unwrap_or_else(|e| e.into_inner());
        for object in objects {
            let object_ref = ObjectRef::from_obj(&**object);
            subscribers.retain(|tx| tx.unbounded_send(object_ref.clone()).is_ok());
        }
    }
}

/// A subscriber of a shared writer, as kube-runtime's `reflector::ReflectHandle`: yields the
/// store's current copy of every object the writer applies (an object deleted meanwhile is
/// skipped). It ends when the writer and its reflector are gone. A clone, as kube's (a broadcast
/// receiver's clone), goes on from where the original is: it yields what the original has not
/// yet taken, then everything the writer applies later.
pub struct ReflectHandle<K> {
    /// The references not yet yielded: what a clone took over from its original, then the
    /// channel. A lock only so that `clone(&self)` can move the channel's waiting references
    /// here (each handle has its own; it is never held across a poll).
    pending: Mutex<Pending<K>>,
    /// Where a clone subscribes. Weak, so that the channels end once the writer is gone.
    dispatch: std::sync::Weak<Mutex<Vec<mpsc::UnboundedSender<ObjectRef<K>>>>>,
    reader: Store<K>,
}

/// What a [`ReflectHandle`] has not yet yielded.
struct Pending<K> {
    taken: VecDeque<ObjectRef<K>>,
    rx: mpsc::UnboundedReceiver<ObjectRef<K>>,
}

impl<K> ReflectHandle<K> {
    /// A handle registered with `dispatch` (if the writer still exists) that first yields `taken`.
    fn subscribe(dispatch: Option<Dispatch<K>>, reader: Store<K>, taken: VecDeque<ObjectRef<K>>) -> Self {
        let (tx, rx) = mpsc::unbounded();
        if let Some(dispatch) = &dispatch {
            dispatch.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        }
        let dispatch = dispatch.as_ref().map_or_else(std::sync::Weak::new, Arc::downgrade);
        ReflectHandle { pending: Mutex::new(Pending { taken, rx }), dispatch, reader }
    }

    /// The store this handle reads objects from.
    #[must_use]
    pub fn reader(&self) -> Store<K> {
        self.reader.clone()
    }
}

impl<K> Clone for ReflectHandle<K> {
    fn clone(&self) -> Self {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded by what is queued. The writer dispatches synchronously on the same thread, so
        // nothing is sent between this drain and the clone's subscription.
        while let Ok(object_ref) = pending.rx.try_recv() {
            pending.taken.push_back(object_ref);
        }
        ReflectHandle::subscribe(self.dispatch.upgrade(), self.reader.clone(), pending.taken.clone())
    }
}

impl<K> Stream for ReflectHandle<K> {
    type Item = Arc<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let pending = this.pending.get_mut().unwrap_or_else(|e| e.into_inner());
        // Bounded by what is queued: each round takes one reference off the queue.
        loop {
            let next = match pending.taken.pop_front() {
                Some(object_ref) => Some(object_ref),
                None => futures::ready!(pending.rx.poll_next_unpin(cx)),
            };
            match next {
                Some(object_ref) => {
                    if let Some(object) = this.reader.get(&object_ref) {
                        return Poll::Ready(Some(object));
                    }
                }
                None => return Poll::Ready(None),
            }
        }
    }
}

/// Pass a watcher stream through `writer`, as kube-runtime's `reflector(writer, stream)`: every
/// event is applied to the store before it is yielded, errors pass unchanged.
pub fn reflector<K, W>(mut writer: Writer<K>, stream: W) -> impl Stream<Item = W::Item>
where
    K: Resource + Clone,
    W: Stream<Item = watcher::Result<watcher::Event<K>>>,
{
    stream.map(move |item| {
        if let Ok(event) = &item {
            writer.apply_watcher_event(event);
        }
        item
    })
}

/// kube-runtime's `reflector::store` module: the store, its writer and their constructors.
pub mod store {
    use kube_core::Resource;

    pub use super::{Store, Writer};
    /// The error of [`Store::wait_until_ready`](super::Store::wait_until_ready), under kube's name.
    pub type WriterDropped = super::StoreError;

    /// A new store and its writer, as kube-runtime's `reflector::store()`.
    #[must_use]
    pub fn store<K: Resource>() -> (Store<K>, Writer<K>) {
        let writer = Writer::default();
        (writer.as_reader(), writer)
    }

    /// A new store and a shared writer (see [`Writer::subscribe`]), as kube-runtime's
    /// `reflector::store_shared`.
    #[must_use]
    pub fn store_shared<K: Resource>(buf_size: usize) -> (Store<K>, Writer<K>)
    where
        K::DynamicType: Default,
    {
        let writer = Writer::new_shared(buf_size, Default::default());
        (writer.as_reader(), writer)
    }
}
