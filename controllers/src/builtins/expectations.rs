//! Expectations: the objects a workload controller created or deleted that its cache does not
//! show yet, as kube-controller-manager's `UIDTrackingControllerExpectations`
//! (pkg/controller/controller_utils.go).
//!
//! A controller that reads its children from an informer cache must not act on a cache that
//! lags behind its own writes: a sync that runs before the cache shows the Pods the previous one
//! created would create them again. Upstream counts the creations and deletions it expects per
//! owner, lowers the counts as its informer's event handlers observe them, and skips the create
//! and delete step of a sync until they are fulfilled or [`TIMEOUT`] has passed since they were
//! set. Here the expected objects are kept by name (and uid for a deletion) and looked up in the
//! same cache the sync reads, which is what upstream's handlers observe: a creation is observed
//! once the cache holds the object, a deletion once the cache no longer holds it or holds it with
//! a `deletionTimestamp` (upstream's `updatePod` treats a terminating Pod as deleted). A write
//! that failed is not expected (upstream lowers the count for it), so a write whose answer was
//! lost but that took effect is found by the next sync as the real controller finds it.
//!
//! Owners are keyed by uid: a ReplicaSet deleted and created again under the same name starts
//! with no expectations, as upstream's `DeleteExpectations` on the delete event gives it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use kube_core::Resource;
use sim::runtime::reflector::{ObjectRef, Store};

/// How long expectations hold a sync back at most (upstream's `ExpectationsTimeout`).
pub const TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What one owner is waiting for.
#[derive(Debug)]
struct Pending {
    /// When the first of these writes was expected (upstream's expectations timestamp).
    since: jiff::Timestamp,
    /// Names of the objects created and not yet seen in the cache.
    created: Vec<String>,
    /// Name and uid of the objects deleted and still cached as live.
    deleted: Vec<(String, String)>,
}

/// Whether a sync may create and delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Every expected write is in the cache (or none is expected, or they expired).
    Satisfied,
    /// Some are not: skip the create and delete step; they expire after this long.
    Pending(Duration),
}

/// The expectations of one controller, per owner uid.
#[derive(Debug, Default)]
pub struct Expectations {
    owners: Mutex<BTreeMap<String, Pending>>,
}

impl Expectations {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Pending>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the owner's expected writes are all in `cache` (objects in `namespace`), as
    /// upstream's `SatisfiedExpectations`; fulfilled or expired expectations are dropped.
    pub fn check<K>(&self, owner_uid: &str, namespace: &str, cache: &Store<K>, now: jiff::Timestamp) -> Wait
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        let mut owners = self.lock();
        let Some(pending) = owners.get_mut(owner_uid) else {
            return Wait::Satisfied;
        };
        let cached = |name: &str| cache.get(&ObjectRef::new(name).within(namespace));
        pending.created.retain(|name| cached(name).is_none());
        pending.deleted.retain(|(name, uid)| {
            cached(name).is_some_and(|o| {
                o.meta().uid.as_deref() == Some(uid.as_str()) && o.meta().deletion_timestamp.is_none()
            })
        });
        let waited = Duration::try_from(now.duration_since(pending.since)).unwrap_or_default();
        if (pending.created.is_empty() && pending.deleted.is_empty()) || waited > TIMEOUT {
            owners.remove(owner_uid);
            return Wait::Satisfied;
        }
        // Strictly older than the timeout expires it, so the recheck is a moment after.
        Wait::Pending(TIMEOUT - waited + Duration::from_millis(1))
    }

    /// The owner created `name`: expect to see it.
    pub fn created(&self, owner_uid: &str, name: String, now: jiff::Timestamp) {
        self.lock().entry(owner_uid.to_owned()).or_insert_with(|| Pending::since(now)).created.push(name);
    }

    /// The owner deleted `name` (uid `uid`): expect to see it go or terminate.
    pub fn deleted(&self, owner_uid: &str, name: String, uid: String, now: jiff::Timestamp) {
        self.lock()
            .entry(owner_uid.to_owned())
            .or_insert_with(|| Pending::since(now))
            .deleted
            .push((name, uid));
    }
}

impl Pending {
    fn since(now: jiff::Timestamp) -> Self {
        Pending { since: now, created: Vec::new(), deleted: Vec::new() }
    }
}
