//! The one object of a name that a controller keeps in every namespace (the ServiceAccount
//! controller's `default` account, the root CA publisher's `kube-root-ca.crt`): a cache of the
//! objects of that name, and the namespaces to sync as that cache changes.
//!
//! As the upstream controllers' informer handlers, a namespace is synced when its object is
//! deleted, or changed so that it needs a sync. A relist (after a 410, or a watch that fell
//! behind) announces no deletion at all: client-go hands the handlers a
//! `DeletedFinalStateUnknown` for each object its cache held and the list no longer has, but an
//! object created and deleted while the watch lagged was never held, and no handler hears of it.
//! So each relist after the first list syncs every active namespace whose object the relisted
//! cache shows missing or in need of a sync, which covers both. (The first list needs no such
//! look: the namespaces' own first list syncs every namespace.)

use std::fmt;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sim::api::{Api, Resource, ResourceExt};
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::watcher::Event;
use sim::runtime::{WatchStreamExt, watcher};

use super::namespace;

/// Whether a namespace whose object is this (`None`: it has none) needs a sync.
pub type NeedsSync<K> = fn(Option<&K>) -> bool;

/// Start a cache of the objects named `name` (a field selector) and return it with the stream
/// of namespaces to sync, for `Controller::reconcile_on`. `namespaces` is the controller's
/// namespace cache, read at each relist. The stream must be polled for the cache to fill.
pub fn watch<K>(
    client: &sim::Client,
    name: &'static str,
    namespaces: Store<Namespace>,
    needs_sync: NeedsSync<K>,
) -> (Store<K>, impl Stream<Item = ObjectRef<Namespace>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    let (cache, writer) = reflector::store::<K>();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let reader = cache.clone();
    let mut listed = false;
    let triggers = watcher(Api::<K>::all(client.clone()), config)
        .default_backoff()
        .reflect(writer)
        .map(move |event| match event {
            Ok(Event::Apply(object)) if needs_sync(Some(&object)) => own_namespace(&object),
            Ok(Event::Delete(object)) => own_namespace(&object),
            Ok(Event::InitDone) if std::mem::replace(&mut listed, true) => {
                needing_sync(&namespaces, &reader, name, needs_sync)
            }
            Ok(_) => Vec::new(),
            Err(error) => {
                tracing::debug!(%error, "watching {name} failed; backing off");
                Vec::new()
            }
        })
        .flat_map(futures::stream::iter);
    (cache, triggers)
}

fn own_namespace<K: ResourceExt>(object: &K) -> Vec<ObjectRef<Namespace>> {
    object.namespace().map(|ns| ObjectRef::new(&ns)).into_iter().collect()
}

/// The active namespaces (as cached) whose object `name`, as `cache` shows it, needs a sync.
pub fn needing_sync<K: Resource<DynamicType = ()>>(
    namespaces: &Store<Namespace>,
    cache: &Store<K>,
    name: &str,
    needs_sync: NeedsSync<K>,
) -> Vec<ObjectRef<Namespace>> {
    namespaces
        .state()
        .iter()
        .filter(|ns| namespace::is_active(ns))
        .map(|ns| ns.name_any())
        .filter(|ns| needs_sync(cache.get(&ObjectRef::new(name).within(ns)).as_deref()))
        .map(|ns| ObjectRef::new(&ns))
        .collect()
}
