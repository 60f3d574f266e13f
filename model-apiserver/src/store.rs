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

/// The objects of one state.
type Objects = imbl::OrdMap<ObjectKey, Arc<DynamicObject>>;

/// Every how many revisions the history keeps a whole snapshot; a revision in between is
/// rebuilt from the checkpoint before it by replaying at most this many minus one events.
///
/// A snapshot per revision would cost one B-tree path copy (about 4 KiB at 10k objects) per
/// write; one per 8 revisions keeps a single-object update near the stored object's own size,
/// while a past read replays at most 7 events (a few microseconds).
const CHECKPOINT_EVERY_REVISIONS: Revision = 8;

/// One retained revision: the change that made it, and the whole state at it if it is a
/// checkpoint.
#[derive(Clone, Debug)]
struct Entry {
    /// None for the initial, empty revision.
    event: Option<StoredEvent>,
    /// The state at this revision, kept every [`CHECKPOINT_EVERY_REVISIONS`] revisions and
    /// always at the oldest retained one.
    checkpoint: Option<Objects>,
    /// The virtual time of the write that made this revision (the Unix epoch for the initial
    /// one and for a snapshot's), which time-based compaction goes by.
    committed_at: jiff::Timestamp,
}

/// The revision history: the event of every retained revision, checkpoints of the whole state,
/// and the current state.
///
/// Every write is one revision holding exactly one change, as in etcd, so the state at
/// revision `r` is the state at `r - 1` with event `r` applied. History is bounded by
/// `history_revisions_max`; older revisions are compacted.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    /// The state at the newest revision.
    current: Snapshot,
    /// Retained revisions, oldest first (entry `i` is revision `oldest + i`); never empty, its
    /// front always a checkpoint, its back the current revision.
    history: std::collections::VecDeque<Entry>,
    /// The bound on `history`.
    history_revisions_max: usize,
}

/// The revision of an empty store, as etcd's first revision is 1 (so that "0" keeps meaning
/// "any revision" in requests).
pub(crate) const REVISION_INITIAL: Revision = 1;

/// `objects` with `event` applied.
fn replay(objects: &mut Objects, event: &StoredEvent) {
    match event.kind {
        StoredEventType::Deleted => {
            objects.remove(&event.key);
        }
        StoredEventType::Added | StoredEventType::Modified => {
            objects.insert(event.key.clone(), event.object.clone());
        }
    }
}

impl Store {
    /// An empty store at [`REVISION_INITIAL`].
    pub(crate) fn new(history_revisions_max: usize) -> Self {
        let current = Snapshot { revision: REVISION_INITIAL, objects: Objects::new() };
        let mut history = std::collections::VecDeque::new();
        history.push_back(Entry {
            event: None,
            checkpoint: Some(Objects::new()),
            committed_at: jiff::Timestamp::UNIX_EPOCH,
        });
        Store { current, history, history_revisions_max: history_revisions_max.max(1) }
    }

    /// A store whose only retained revision is `snapshot`, at its revision: a copy of another
    /// store's state (a simulated run's at one step, served read-only by `kube-sim serve --replay`).
    pub(crate) fn from_snapshot(snapshot: Snapshot, history_revisions_max: usize) -> Self {
        let mut history = std::collections::VecDeque::new();
        history.push_back(Entry {
            event: None,
            checkpoint: Some(snapshot.objects.clone()),
            committed_at: jiff::Timestamp::UNIX_EPOCH,
        });
        Store { current: snapshot, history, history_revisions_max: history_revisions_max.max(1) }
    }

    /// The current state.
    pub(crate) fn current(&self) -> &Snapshot {
        &self.current
    }

    /// The current revision.
    pub(crate) fn revision(&self) -> Revision {
        self.current.revision
    }

    /// The oldest retained revision.
    pub(crate) fn oldest(&self) -> Revision {
        self.current.revision + 1 - self.history.len() as Revision
    }

    /// The state at `revision`, if retained: O(1) for the current revision and checkpoints,
    /// otherwise a replay of fewer than [`CHECKPOINT_EVERY_REVISIONS`] events.
    pub(crate) fn at(&self, revision: Revision) -> Option<Snapshot> {
        if revision == self.current.revision {
            return Some(self.current.clone());
        }
        let index = usize::try_from(revision.checked_sub(self.oldest())?).ok()?;
        if index >= self.history.len() {
            return None;
        }
        let base = (0..=index).rev().find(|i| self.history[*i].checkpoint.is_some())?;
        let mut objects = self.history[base].checkpoint.clone()?;
        for entry in self.history.range(base + 1..=index) {
            if let Some(event) = &entry.event {
                replay(&mut objects, event);
            }
        }
        Some(Snapshot { revision, objects })
    }

    /// The events after `revision` (exclusive), oldest first; `None` if `revision` is compacted.
    /// A revision in the future yields no events.
    pub(crate) fn events_after(&self, revision: Revision) -> Option<impl Iterator<Item = &StoredEvent>> {
        let offset = revision.checked_sub(self.oldest())?;
        // A range, not `skip`: a watch that is caught up must not walk the whole history.
        let first = usize::try_from(offset).unwrap_or(usize::MAX).saturating_add(1).min(self.history.len());
        Some(self.history.range(first..).filter_map(|e| e.event.as_ref()))
    }

    /// The retained events after `revision` (exclusive), oldest first, and whether that is every
    /// one of them (`false` when compaction dropped some: a write whose own revisions were
    /// compacted at once, say).
    pub(crate) fn retained_events_after(
        &self,
        revision: Revision,
    ) -> (bool, impl Iterator<Item = &StoredEvent>) {
        let oldest = self.oldest();
        let skip = revision.saturating_add(1).saturating_sub(oldest);
        let first = usize::try_from(skip).unwrap_or(usize::MAX).min(self.history.len());
        let entries = self.history.range(first..);
        let complete = revision.saturating_add(1) >= oldest && entries.clone().all(|e| e.event.is_some());
        (complete, entries.filter_map(|e| e.event.as_ref()))
    }

    /// Apply one change, written at virtual time `now`, as a new revision and return it.
    /// `object` must already carry the new revision as its resourceVersion (see
    /// [`Store::next_revision`]).
    pub(crate) fn commit(
        &mut self,
        kind: StoredEventType,
        key: ObjectKey,
        object: Arc<DynamicObject>,
        now: jiff::Timestamp,
    ) -> Revision {
        let revision = self.next_revision();
        // Paired with every reader of resourceVersions: the stored object says the revision that
        // stored it (a watch event, a list and a get all hand it on), and revisions only grow.
        debug_assert_eq!(
            object.metadata.resource_version.as_deref(),
            Some(revision.to_string().as_str()),
            "a committed object carries its commit's revision as its resourceVersion"
        );
        assert!(revision > self.current.revision, "revisions strictly increase");
        let previous = self.current.objects.get(&key).cloned();
        let event = StoredEvent { revision, kind, key, object, previous };
        replay(&mut self.current.objects, &event);
        self.current.revision = revision;
        let checkpoint =
            revision.is_multiple_of(CHECKPOINT_EVERY_REVISIONS).then(|| self.current.objects.clone());
        self.history.push_back(Entry { event: Some(event), checkpoint, committed_at: now });
        let excess = self.history.len().saturating_sub(self.history_revisions_max);
        self.drop_oldest(excess);
        revision
    }

    /// The revision the next commit will create.
    pub(crate) fn next_revision(&self) -> Revision {
        self.revision() + 1
    }

    /// Drop every revision before `revision` (the current one is always kept).
    pub(crate) fn compact(&mut self, revision: Revision) {
        let keep_from = revision.min(self.revision());
        let excess = keep_from.saturating_sub(self.oldest());
        self.drop_oldest(usize::try_from(excess).unwrap_or(usize::MAX));
    }

    /// Drop every revision that stopped being current before `cutoff`: the oldest one kept is
    /// the one that was current at `cutoff`, as kube-apiserver's compactor compacts etcd to the
    /// revision it saw one interval earlier. The current revision is always kept.
    pub(crate) fn compact_older_than(&mut self, cutoff: jiff::Timestamp) {
        // Entries are in commit order and virtual time never runs backwards, so the revisions
        // to drop are a prefix; each is looked at once before it goes.
        let stale = self.history.iter().skip(1).take_while(|e| e.committed_at <= cutoff).count();
        self.drop_oldest(stale);
    }

    /// Drop the `count` oldest revisions, first making the new oldest one a checkpoint.
    fn drop_oldest(&mut self, count: usize) {
        let count = count.min(self.history.len() - 1);
        if count == 0 {
            return;
        }
        let new_oldest = self.oldest() + count as Revision;
        if self.history[count].checkpoint.is_none() {
            let state = self.at(new_oldest).expect("a retained revision").objects;
            self.history[count].checkpoint = Some(state);
        }
        self.history.drain(..count);
    }
}
