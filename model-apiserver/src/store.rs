//! Revisioned storage: one persistent map per revision, in a bounded history, plus the event log
//! that watches replay.

use std::sync::Arc;

use kube_core::DynamicObject;

/// A global revision (the resourceVersion, as a number).
pub type Revision = u64;

/// Where an object is stored: its resource type's storage key (`group/plural` or `plural`),
/// namespace (empty for cluster-scoped) and name. Ordered as etcd's keys are.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// [`crate::ResourceType::storage_key`].
    pub resource: Arc<str>,
    /// Namespace, or empty for cluster-scoped objects.
    pub namespace: Arc<str>,
    /// Name.
    pub name: Arc<str>,
}

/// The whole stored state at one revision. Cloning is O(1) (structural sharing).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The revision this snapshot reflects.
    pub revision: Revision,
    /// Every object, by key.
    pub objects: imbl::OrdMap<ObjectKey, Arc<DynamicObject>>,
}

impl Snapshot {
    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<DynamicObject>> {
        self.objects.get(key)
    }
    /// The objects of one resource (storage key), optionally in one namespace, in key order.
    pub fn iter_resource<'a>(
        &'a self,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<DynamicObject>)> + 'a {
        let start = ObjectKey {
            resource: Arc::from(resource),
            namespace: Arc::from(namespace.unwrap_or("")),
            name: Arc::from(""),
        };
        self.objects.range(start..).take_while(move |(k, _)| {
            &*k.resource == resource && namespace.is_none_or(|ns| &*k.namespace == ns)
        })
    }
}

/// The type of a stored change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredEventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed from storage.
    Deleted,
}

/// One change in the event log. Watches filter and translate these (an object leaving a
/// selector's selection becomes DELETED for that watch, one entering it ADDED).
#[derive(Clone, Debug)]
pub struct StoredEvent {
    /// The revision this change created.
    pub revision: Revision,
    /// The change.
    pub kind: StoredEventType,
    /// The object's key.
    pub key: ObjectKey,
    /// The object after the change (for Deleted: the last state, with the deletion's revision).
    pub object: Arc<DynamicObject>,
    /// The object before the change (None for Added).
    pub previous: Option<Arc<DynamicObject>>,
}

/// The revision history: the snapshot of every retained revision and the event that made it.
///
/// Every write is one revision holding exactly one change, as in etcd, so the snapshot at
/// revision `r` is the snapshot at `r - 1` with event `r` applied. History is bounded by
/// `history_revisions_max`; older revisions are compacted.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    /// Retained revisions, oldest first; never empty, the back is the current state.
    history: std::collections::VecDeque<(Snapshot, Option<StoredEvent>)>,
    /// The bound on `history`.
    history_revisions_max: usize,
}

/// The revision of an empty store, as etcd's first revision is 1 (so that "0" keeps meaning
/// "any revision" in requests).
pub(crate) const REVISION_INITIAL: Revision = 1;

impl Store {
    /// An empty store at [`REVISION_INITIAL`].
    pub(crate) fn new(history_revisions_max: usize) -> Self {
        let first = Snapshot { revision: REVISION_INITIAL, objects: imbl::OrdMap::new() };
        let mut history = std::collections::VecDeque::new();
        history.push_back((first, None));
        Store { history, history_revisions_max: history_revisions_max.max(1) }
    }

    /// The current state.
    pub(crate) fn current(&self) -> &Snapshot {
        &self.history.back().expect("history is never empty").0
    }

    /// The current revision.
    pub(crate) fn revision(&self) -> Revision {
        self.current().revision
    }

    /// The oldest retained revision.
    pub(crate) fn oldest(&self) -> Revision {
        self.history.front().expect("history is never empty").0.revision
    }

    /// The state at `revision`, if retained.
    pub(crate) fn at(&self, revision: Revision) -> Option<&Snapshot> {
        let offset = revision.checked_sub(self.oldest())?;
        let entry = self.history.get(usize::try_from(offset).ok()?)?;
        debug_assert_eq!(entry.0.revision, revision);
        Some(&entry.0)
    }

    /// The events after `revision` (exclusive), oldest first; `None` if `revision` is compacted.
    /// A revision in the future yields no events.
    pub(crate) fn events_after(&self, revision: Revision) -> Option<impl Iterator<Item = &StoredEvent>> {
        let offset = revision.checked_sub(self.oldest())?;
        let skip = usize::try_from(offset).unwrap_or(usize::MAX).saturating_add(1);
        Some(self.history.iter().skip(skip).filter_map(|(_, e)| e.as_ref()))
    }

    /// Apply one change as a new revision and return it. `object` must already carry the new
    /// revision as its resourceVersion (see [`Store::next_revision`]).
    pub(crate) fn commit(
        &mut self,
        kind: StoredEventType,
        key: ObjectKey,
        object: Arc<DynamicObject>,
    ) -> Revision {
        let revision = self.next_revision();
        let mut objects = self.current().objects.clone();
        let previous = match kind {
            StoredEventType::Deleted => objects.remove(&key),
            StoredEventType::Added | StoredEventType::Modified => objects.insert(key.clone(), object.clone()),
        };
        let event = StoredEvent { revision, kind, key, object, previous };
        self.history.push_back((Snapshot { revision, objects }, Some(event)));
        while self.history.len() > self.history_revisions_max {
            self.history.pop_front();
        }
        revision
    }

    /// The revision the next commit will create.
    pub(crate) fn next_revision(&self) -> Revision {
        self.revision() + 1
    }

    /// Drop every revision before `revision` (the current one is always kept).
    pub(crate) fn compact(&mut self, revision: Revision) {
        let keep_from = revision.min(self.revision());
        while self.oldest() < keep_from {
            self.history.pop_front();
        }
    }
}
