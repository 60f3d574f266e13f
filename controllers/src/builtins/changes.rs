//! An informer whose handler sees each change as client-go's `ResourceEventHandler` sees it: an
//! add, an update with the object before and after, and a delete with the last state known,
//! including, after a relist, a delete for every cached object the list no longer holds
//! (client-go's `DeltaFIFO.Replace`; kube-runtime's reflector drops those silently).
//!
//! The endpoints controllers need both halves: a Pod's labels before an update (a Pod that
//! leaves a Service's selection must leave its endpoints) and every deletion (a Service deleted
//! while the watch was down must still lose its Endpoints). kube-runtime's `Store::subscribe`
//! gives neither, so this reflects sim's own [`watcher`] into a store and compares.
//!
//! The task runs on the calling node, as [`sim::runtime::reflector::informer`]'s: killing the
//! node loses the cache, and the next start lists again (every object is then `Added`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sim::api::{Api, Resource};
use sim::runtime::WatchStreamExt;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::watcher::{self, Event};

/// One change of a watched object, as a client-go event handler is called with it.
#[derive(Debug)]
pub enum Change<K> {
    /// `OnAdd`: an object the cache did not hold.
    Added(Arc<K>),
    /// `OnUpdate`: an object the cache held, before and after (the same resourceVersion on both
    /// after a relist that found it unchanged, as client-go's resync).
    Updated {
        /// The cached object before the change.
        old: Arc<K>,
        /// The object now cached.
        new: Arc<K>,
    },
    /// `OnDelete`: the object is gone, in its last known state (from the watch event, or the
    /// cache's copy when a relist no longer listed it).
    Deleted(Arc<K>),
    /// The cache holds a complete list (after the first list and after every relist), once
    /// the list's changes have been handled: client-go's `HasSynced` turning true.
    Synced,
}

/// Start an informer for `api` on the current node; `on_change` is called with every change,
/// in the order the cache applies them. Returns the cache.
pub fn informer<K>(
    api: Api<K>,
    config: watcher::Config,
    mut on_change: impl FnMut(Change<K>) + 'static,
) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    let (store, mut writer) = reflector::store::<K>();
    let reader = store.clone();
    // Boxed, as the informer's: the task holds a pointer, not the stream's state machine.
    let mut stream = Box::pin(watcher::watcher(api, config).default_backoff());
    let task = async move {
        let mut relist: Option<Relist<K>> = None;
        // The watcher never ends: this task lives as long as its node.
        while let Some(item) = stream.next().await {
            // Errors are retried by the watcher after the backoff; the cache keeps what it has.
            let Ok(event) = item else { continue };
            // What the cache held before this event (a list changes it only at `InitDone`).
            let old = match &event {
                Event::Apply(object) => reader.get(&ObjectRef::from_obj(object)),
                Event::Init => {
                    let before = reader.state().into_iter().map(|o| (ObjectRef::from_obj(&*o), o)).collect();
                    relist = Some(Relist { before, listed: Vec::new() });
                    None
                }
                _ => None,
            };
            writer.apply_watcher_event(&event);
            match event {
                Event::Apply(object) => {
                    let new = reader.get(&ObjectRef::from_obj(&object)).unwrap_or_else(|| Arc::new(object));
                    on_change(match old {
                        Some(old) => Change::Updated { old, new },
                        None => Change::Added(new),
                    });
                }
                Event::Delete(object) => on_change(Change::Deleted(Arc::new(object))),
                Event::InitApply(object) => {
                    if let Some(relist) = relist.as_mut() {
                        relist.listed.push(ObjectRef::from_obj(&object));
                    }
                }
                Event::InitDone => {
                    if let Some(relist) = relist.take() {
                        relist.report(&reader, &mut on_change);
                    }
                    on_change(Change::Synced);
                }
                Event::Init => {}
            }
        }
    };
    madsim::task::spawn_local(task);
    store
}

/// A relist in progress: the cache as it was when the list started, and the objects listed.
struct Relist<K> {
    before: BTreeMap<ObjectRef<K>, Arc<K>>,
    listed: Vec<ObjectRef<K>>,
}

impl<K: Resource<DynamicType = ()>> Relist<K> {
    /// Once the list is in the cache: each listed object is `Updated` if the cache held it before
    /// the list and `Added` if not; each object held before and not listed is `Deleted`.
    fn report(mut self, reader: &Store<K>, on_change: &mut impl FnMut(Change<K>)) {
        for object_ref in &self.listed {
            let Some(new) = reader.get(object_ref) else { continue };
            match self.before.remove(object_ref) {
                Some(old) => on_change(Change::Updated { old, new }),
                None => on_change(Change::Added(new)),
            }
        }
        for (_, gone) in std::mem::take(&mut self.before) {
            on_change(Change::Deleted(gone));
        }
    }
}
