//! How many times each object was created and deleted over a whole run.
//!
//! The model API server keeps a bounded revision history (`history_revisions_max`, and
//! compaction faults cut it further), so its event log cannot answer "how often was `web-0`
//! created?" at the end of a long run. The world therefore counts as writes happen: after every
//! write that moved a cluster's revision it reads the events since the last one counted (usually
//! exactly one) and bumps the counts of the Added and Deleted ones. Modified events, most writes,
//! cost one comparison.
//!
//! Counts are kept by stored key (resource, namespace, name): an object deleted and recreated
//! under the same name is two creations and one deletion of that key. The object of the latest
//! creation or deletion is kept (a pointer, not a copy), so that a consumer can key generated
//! names by their `generateName` (see `properties::count_key`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_core::DynamicObject;
use model_apiserver::{ApiServer, ObjectKey, Revision, StoredEvent, StoredEventType};

/// The creations and deletions of one stored key during a run.
#[derive(Clone, Debug)]
pub struct Lifecycle {
    /// How many times an object was created under this key (ADDED events).
    pub created: u64,
    /// How many times an object under this key was removed from storage (DELETED events).
    pub deleted: u64,
    /// The object as of its latest creation or deletion.
    pub object: Arc<DynamicObject>,
    /// The revision of the latest creation or deletion (the step a safety check would name).
    pub last_revision: Revision,
    /// Virtual time since the start of the run of the latest creation or deletion.
    pub last_at: Duration,
}

/// One cluster's [`Lifecycle`]s over the whole run, by stored key.
///
/// It holds one entry per key ever created: no more than the objects the run wrote, so it is
/// bounded by what the run's time limit lets its writers do, as the store itself is.
#[derive(Clone, Debug, Default)]
pub struct Lifecycles {
    by_key: BTreeMap<ObjectKey, Lifecycle>,
    /// Every revision up to this one has been counted (or was compacted before counting began).
    counted_to: Revision,
    /// Revisions compacted away before they were counted (only with a history shorter than one
    /// write's events: see [`Lifecycles::missed_revisions`]).
    missed: u64,
}

impl Lifecycles {
    /// Counts for `server` from its oldest retained revision on: a fresh server's whole history,
    /// including the setup's namespaces and CRDs. With a history shorter than the setup, the
    /// setup revisions already compacted are not counted (they are the same in every run).
    pub(crate) fn new(server: &ApiServer, at: Duration) -> Self {
        let mut lifecycles = Lifecycles { counted_to: server.oldest_revision(), ..Lifecycles::default() };
        lifecycles.observe(server, at);
        lifecycles
    }

    /// Count the events `server` stored since the last call, at virtual time `at`.
    pub(crate) fn observe(&mut self, server: &ApiServer, at: Duration) {
        let revision = server.revision();
        if revision <= self.counted_to {
            return;
        }
        match server.changes_after(self.counted_to) {
            Some(events) => {
                for event in events {
                    self.record(event, at);
                }
            }
            None => {
                self.missed += revision - self.counted_to;
            }
        }
        self.counted_to = revision;
    }

    /// Count one stored event: creations and deletions only.
    fn record(&mut self, event: &StoredEvent, at: Duration) {
        let created = match event.kind {
            StoredEventType::Added => true,
            StoredEventType::Deleted => false,
            StoredEventType::Modified => return,
        };
        let StoredEvent { key, object, revision, .. } = event;
        let entry = self.by_key.entry(key.clone()).or_insert_with(|| Lifecycle {
            created: 0,
            deleted: 0,
            object: object.clone(),
            last_revision: *revision,
            last_at: at,
        });
        if created {
            entry.created += 1;
        } else {
            entry.deleted += 1;
        }
        entry.object = object.clone();
        entry.last_revision = *revision;
        entry.last_at = at;
    }

    /// Every stored key created or deleted during the run, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Lifecycle)> {
        self.by_key.iter()
    }

    /// The lifecycle of one stored key, if an object was ever created under it.
    pub fn get(&self, key: &ObjectKey) -> Option<&Lifecycle> {
        self.by_key.get(key)
    }

    /// How many revisions were compacted before they could be counted: 0 unless the server's
    /// `history_revisions_max` is shorter than the events of one write (a delete-collection).
    /// When it is not 0 the counts are incomplete.
    pub fn missed_revisions(&self) -> u64 {
        self.missed
    }
}
