//! Typed views of stored objects, shared within a run.
//!
//! The model stores every object once, as an `Arc<DynamicObject>`, and hands the same `Arc` to
//! every watcher that receives it and to the writer's answer. Each of them wants it as its own
//! type `K` (a `Pod`, a `Deployment`), and decoding a `K` from the dynamic object is the largest
//! cost of a delivery: with the built-in controllers on, the same Pod revision is decoded by the
//! kubelet's informer, the ReplicaSet controller's and the writer's answer. This cache decodes each
//! (object, type, view) once per run and shares the result.
//!
//! Keys are the stored `Arc`'s address: the entry keeps that `Arc` alive, so the address cannot
//! be reused by another object while the entry exists, and a hit is exactly "this very object was
//! decoded as this type before". Whether a lookup hits depends only on the run's events, and a hit
//! gives the same value a fresh decode would, so the cache changes no run's behaviour or trace.
//! The map is only looked up by key and pruned with `retain`; nothing iterates it in a way that
//! could reach a result. Entries whose object nobody else holds any more (superseded revisions
//! compacted out of the server's history, deleted objects) are pruned when the cache has doubled
//! since the last pruning, so it stays proportional to the objects alive.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::Arc;

use kube_core::DynamicObject;

/// Below this many entries the cache is never pruned.
const PRUNE_FLOOR: usize = 256;

/// (the stored object's address, the type it was decoded as, whether it is the metadata-only view).
type Key = (usize, TypeId, bool);

struct Entry {
    /// Keeps the address of the key from being reused.
    object: Arc<DynamicObject>,
    typed: Arc<dyn Any + Send + Sync>,
}

/// The cache of one run (see the module doc).
pub(crate) struct TypedViews {
    entries: BTreeMap<Key, Entry>,
    prune_at: usize,
}

impl Default for TypedViews {
    fn default() -> Self {
        TypedViews { entries: BTreeMap::new(), prune_at: PRUNE_FLOOR }
    }
}

fn key<K: Any>(object: &Arc<DynamicObject>, view: bool) -> Key {
    (Arc::as_ptr(object) as usize, TypeId::of::<K>(), view)
}

impl TypedViews {
    /// `object` as `K` (`view`: as its metadata-only view), if decoded before in this run.
    pub(crate) fn get<K: Any + Send + Sync>(
        &self,
        object: &Arc<DynamicObject>,
        view: bool,
    ) -> Option<Arc<K>> {
        let entry = self.entries.get(&key::<K>(object, view))?;
        entry.typed.clone().downcast::<K>().ok()
    }

    /// Remember `typed` as `object` decoded as `K`.
    pub(crate) fn insert<K: Any + Send + Sync>(
        &mut self,
        object: &Arc<DynamicObject>,
        view: bool,
        typed: Arc<K>,
    ) {
        if self.entries.len() >= self.prune_at {
            self.entries.retain(|_, entry| Arc::strong_count(&entry.object) > 1);
            self.prune_at = (self.entries.len() * 2).max(PRUNE_FLOOR);
        }
        self.entries.insert(key::<K>(object, view), Entry { object: object.clone(), typed });
    }
}
