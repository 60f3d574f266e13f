//! watch: the events after a revision, filtered by namespace and selectors, as one answer of a
//! pull-based stream.

use std::sync::Arc;

use kube_core::{
    DynamicObject, Status, WatchEvent,
    params::WatchParams,
    watch::{Bookmark, BookmarkMeta},
};

use crate::{
    errors,
    filter::ObjectFilter,
    read::parse_revision,
    server::{ApiServer, Target},
    store::{ObjectKey, Revision, StoredEventType},
};

/// The annotation of the bookmark that ends a watch's initial events.
const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// A watch answer.
type Events = Vec<WatchEvent<Arc<DynamicObject>>>;

impl ApiServer {
    /// WATCH from `resource_version` (exclusive).
    ///
    /// `""` and `"0"` start with the current state as synthetic ADDED events (in key order).
    /// A number N yields every matching change after N; N in the future yields nothing yet (the
    /// real server would wait); N compacted yields one ERROR event with 410 Expired. With
    /// `bookmarks`, a BOOKMARK at the current revision ends the answer, so that the client can
    /// resume from there; with `send_initial_events` from `""`/`"0"`, that bookmark is always
    /// sent and carries `k8s.io/initial-events-end: "true"`.
    pub(crate) fn watch(
        &self,
        t: &Target,
        resource_version: &str,
        params: &WatchParams,
    ) -> Result<Events, Status> {
        let filter = ObjectFilter::parse(
            params.label_selector.as_deref(),
            params.field_selector.as_deref(),
            &t.ty.selectable_fields,
        )?;
        let mut events = Events::new();
        match resource_version {
            "" | "0" => {
                let snapshot = self.store.current();
                events.extend(
                    snapshot
                        .iter_resource(&t.resource, t.namespace_filter())
                        .filter(|(k, o)| filter.matches(k, o))
                        .map(|(_, o)| WatchEvent::Added(t.present(o))),
                );
            }
            rv => {
                let from = parse_revision(rv)?;
                let Some(changes) = self.store.events_after(from) else {
                    let expired = errors::expired(from, self.store.oldest());
                    return Ok(vec![WatchEvent::Error(Box::new(expired))]);
                };
                events.extend(changes.filter(|e| in_scope(t, &e.key)).filter_map(|e| {
                    let now = filter.matches(&e.key, &e.object);
                    let previous = e.previous.as_ref().filter(|p| filter.matches(&e.key, p));
                    let object = || t.present(&e.object);
                    match (e.kind, previous, now) {
                        (StoredEventType::Added, _, true) => Some(WatchEvent::Added(object())),
                        (StoredEventType::Modified, Some(_), true) => Some(WatchEvent::Modified(object())),
                        // An object entering the selection is new to this watch, one leaving it
                        // is gone from it: the watch cache sends the object as this watch last
                        // saw it, at the change's revision.
                        (StoredEventType::Modified, None, true) => Some(WatchEvent::Added(object())),
                        (StoredEventType::Modified, Some(before), false) => {
                            Some(WatchEvent::Deleted(t.present(&at_revision(before, e.revision))))
                        }
                        (StoredEventType::Deleted, _, true) => Some(WatchEvent::Deleted(object())),
                        _ => None,
                    }
                }));
            }
        }
        let initial = matches!(resource_version, "" | "0");
        if params.bookmarks || (initial && params.send_initial_events) {
            // With sendInitialEvents (kube-rs's streaming-list watcher), the bookmark after the
            // initial state carries the annotation that ends the initial list.
            let mut annotations = std::collections::BTreeMap::new();
            if initial && params.send_initial_events {
                annotations.insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
            }
            events.push(WatchEvent::Bookmark(Bookmark {
                types: t.type_meta(),
                metadata: BookmarkMeta { resource_version: self.store.revision().to_string(), annotations },
            }));
        }
        Ok(events)
    }
}

/// `object` with its resourceVersion set to `revision`.
fn at_revision(object: &Arc<DynamicObject>, revision: Revision) -> Arc<DynamicObject> {
    let mut o = DynamicObject::clone(object);
    o.metadata.resource_version = Some(revision.to_string());
    Arc::new(o)
}

/// Whether a change is to this watch's resource and namespace.
fn in_scope(t: &Target, key: &ObjectKey) -> bool {
    key.resource == t.resource && t.namespace_filter().is_none_or(|ns| &*key.namespace == ns)
}
