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
