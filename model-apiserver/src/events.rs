//! The two Event APIs over one store: core/v1 `Event` (`/api/v1/events`, what client-go's
//! recorder posts and `kubectl events` reads) and `events.k8s.io/v1` `Event` (kube-rs's
//! recorder).
//!
//! kube-apiserver keeps both under the same etcd prefix (`/events`), so an Event created
//! through one API is listed, gotten and watched through the other. The field mapping is the
//! one of `pkg/apis/events/v1/conversion.go` and its generated conversions: the fields an
//! events.k8s.io Event renamed or deprecated map onto their core names, the rest (metadata,
//! eventTime, series, action, reason, related, type, reportingInstance) are shared as they are.

use serde_json::Value;

/// The apiVersion of events.k8s.io Events.
pub const EVENTS_API_VERSION: &str = "events.k8s.io/v1";

/// (core/v1 name, events.k8s.io/v1 name) of every top-level field the two APIs name differently.
const RENAMED_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Whether `(group, kind)` is one of the two Event kinds.
pub fn is_event_kind(group: &str, kind: &str) -> bool {
    kind == "Event" && matches!(group, "" | "events.k8s.io")
}

/// The storage prefix of the built-in type `(group, kind, plural)`: `plural` for the core group
/// and for both Event APIs (one store), `group/plural` otherwise. A typed read of a
/// [`crate::Snapshot`] finds a kind's objects under this key.
pub fn builtin_storage_key(group: &str, kind: &str, plural: &str) -> String {
    if group.is_empty() || is_event_kind(group, kind) {
        plural.to_owned()
    } else {
        format!("{group}/{plural}")
    }
}

/// Rewrite an Event's fields (apiVersion and kind apart) into the shape of the API whose
/// apiVersion is `to_api_version`: `events.k8s.io/v1`, or core `v1`.
pub fn convert(data: &mut Value, to_api_version: &str) {
    let Some(map) = data.as_object_mut() else { return };
    let to_events = to_api_version == EVENTS_API_VERSION;
    for (core, events) in RENAMED_FIELDS {
        let (from, to) = if to_events { (core, events) } else { (events, core) };
        if let Some(v) = map.remove(*from) {
            map.insert((*to).to_owned(), v);
        }
    }
}

/// The JSON pointer of a core Event field label (`involvedObject.name`, `reportingComponent`)
/// in an Event stored in the shape of `api_version`.
pub(crate) fn pointer_of_core_label(label: &str, api_version: &str) -> String {
    let mut parts = label.split('.');
    let first = parts.next().unwrap_or_default();
    let first = if api_version == EVENTS_API_VERSION {
        RENAMED_FIELDS.iter().find(|(core, _)| *core == first).map_or(first, |(_, events)| *events)
    } else {
        first
    };
    std::iter::once(first).chain(parts).map(|p| format!("/{p}")).collect()
}
