//! The Events the built-ins publish, as kube-controller-manager's controllers and the kubelet
//! publish them: reason, type, message, source and the object they concern.
//!
//! kube-controller-manager and the kubelet publish through client-go's legacy recorder
//! (`k8s.io/client-go/tools/record`): core/v1 Events, correlated before they are written, and
//! [`Recorder`] does the same:
//!
//! - an Event is named `<object>.<time in nanoseconds, hex>` in the object's namespace
//!   (`default` for a cluster-scoped one), with `source` (`component`, and `host` for the
//!   kubelet), `reportingComponent` and `reportingInstance` from it, `count` 1 and
//!   `firstTimestamp` = `lastTimestamp` = now (the virtual clock);
//! - the same event again (same source, object, field path, type, reason **and message**)
//!   patches the first one's `count`, `lastTimestamp` and `message` (`EventLogger`): what
//!   `kubectl describe` shows as `(x3 over 2m)`. Different messages are different Events;
//! - once [`AGGREGATE_MAX_EVENTS`] different messages of one source, object, type and reason
//!   occur within [`AGGREGATE_INTERVAL`], the next ones become one Event whose message is
//!   `(combined from similar events): <the latest message>` (`EventAggregator`);
//! - each source and object may publish [`SPAM_BURST`] Events at once, then one per
//!   [`SPAM_REFILL`] (`EventSourceObjectSpamFilter`); the others are dropped.
//!
//! The scheduler publishes through the newer `events.k8s.io` recorder (`Scheduled`, action
//! `Binding`): [`scheduler_recorder`] and [`scheduled`].
//!
//! Publishing is best effort, as with the real broadcasters: a failed write (a fault, a
//! terminating namespace) is logged and dropped, never retried, and never fails the sync that
//! published it. Every cache is bounded ([`CACHE_ENTRIES_MAX`] entries, least recently used
//! evicted, as client-go's LRU caches) and ordered (`BTreeMap`), so runs replay exactly.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::Resource;
use sim::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, ResourceExt};

use super::error::has_code;

/// Entries each correlation cache keeps (client-go's `maxLruCacheEntries`).
pub const CACHE_ENTRIES_MAX: usize = 4096;
/// Different messages of one source, object, type and reason after which they are combined
/// (client-go's `defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long similar messages count towards [`AGGREGATE_MAX_EVENTS`]
/// (`defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_INTERVAL: SignedDuration = SignedDuration::from_secs(600);
/// The message prefix of a combined Event (`EventAggregatorByReasonMessageFunc`).
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";
/// Events one source may publish about one object at once (`defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// How long one more Event takes to be allowed once the burst is spent (`defaultSpamQPS` is one
/// every five minutes).
pub const SPAM_REFILL: SignedDuration = SignedDuration::from_secs(300);

/// The `Normal` event type.
pub const NORMAL: &str = "Normal";
/// The `Warning` event type.
pub const WARNING: &str = "Warning";

/// Publishes core/v1 Events as one component (`deployment-controller`, `kubelet`...), correlated
/// as client-go's recorder correlates them. Cheap to clone; clones share the caches.
#[derive(Clone)]
pub struct Recorder {
    client: sim::Client,
    source: EventSource,
    correlator: Arc<Mutex<Correlator>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("source", &self.source).finish()
    }
}

/// A recorder publishing through `client` as `component` (the real controllers' component name:
/// `deployment-controller`, `replicaset-controller`...).
pub fn recorder(client: &sim::Client, component: &str) -> Recorder {
    Recorder::new(client, EventSource { component: Some(component.to_owned()), host: None })
}

/// A recorder publishing as `component` on node `host` (the kubelet: `kubelet` on `node-1`).
pub fn recorder_on_host(client: &sim::Client, component: &str, host: &str) -> Recorder {
    let source = EventSource { component: Some(component.to_owned()), host: Some(host.to_owned()) };
    Recorder::new(client, source)
}

impl Recorder {
    fn new(client: &sim::Client, source: EventSource) -> Self {
        Recorder { client: client.clone(), source, correlator: Arc::default() }
    }
}

/// The reference an Event's `involvedObject` holds for `object`.
pub fn reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// Publish a `Normal` event with `reason` and `message` about `regarding`.
pub async fn normal(recorder: &Recorder, regarding: &ObjectReference, reason: &str, message: String) {
    recorder.publish(regarding, NORMAL, reason, message).await;
}

/// Publish a `Warning` event with `reason` and `message` about `regarding`.
pub async fn warning(recorder: &Recorder, regarding: &ObjectReference, reason: &str, message: String) {
    recorder.publish(regarding, WARNING, reason, message).await;
}

/// The scheduler's recorder (`events.k8s.io`, as kube-scheduler's), publishing as `component`.
pub fn scheduler_recorder(client: &sim::Client, component: &str) -> sim::runtime::events::Recorder {
    use sim::runtime::events::{Recorder, Reporter};
    Recorder::new(client.clone(), Reporter::from(component))
}

/// Publish the scheduler's `Scheduled` event (action `Binding`) about a Pod.
pub async fn scheduled(recorder: &sim::runtime::events::Recorder, pod: &ObjectReference, message: String) {
    use sim::runtime::events::{Event, EventType};
    let event = Event {
        type_: EventType::Normal,
        reason: "Scheduled".to_owned(),
        note: Some(message),
        action: "Binding".to_owned(),
        secondary: None,
    };
    let pod = ObjectReference { resource_version: None, ..pod.clone() };
    if let Err(error) = recorder.publish(&event, &pod).await {
        tracing::debug!(%error, "publishing the Scheduled event failed; dropped");
    }
}

/// Publish the scheduler's `Preempted` event (action `Preempting`) about a Pod it evicts to make
/// room for `preemptor` on `node`.
pub async fn preempted(
    recorder: &sim::runtime::events::Recorder,
    victim: &ObjectReference,
    preemptor: &ObjectReference,
    node: &str,
) {
    use sim::runtime::events::{Event, EventType};
    let uid = preemptor.uid.clone().unwrap_or_default();
    let event = Event {
        type_: EventType::Normal,
        reason: "Preempted".to_owned(),
        note: Some(format!("Preempted by pod {uid} on node {node}")),
        action: "Preempting".to_owned(),
        secondary: Some(ObjectReference { resource_version: None, ..preemptor.clone() }),
    };
    let victim = ObjectReference { resource_version: None, ..victim.clone() };
    if let Err(error) = recorder.publish(&event, &victim).await {
        tracing::debug!(%error, "publishing the Preempted event failed; dropped");
    }
}

/// Publish the scheduler's `FailedScheduling` Warning (action `Scheduling`) about a Pod it could
/// not place.
pub async fn failed_scheduling(
    recorder: &sim::runtime::events::Recorder,
    pod: &ObjectReference,
    message: String,
) {
    use sim::runtime::events::{Event, EventType};
    let event = Event {
        type_: EventType::Warning,
        reason: "FailedScheduling".to_owned(),
        note: Some(message),
        action: "Scheduling".to_owned(),
        secondary: None,
    };
    let pod = ObjectReference { resource_version: None, ..pod.clone() };
    if let Err(error) = recorder.publish(&event, &pod).await {
        tracing::debug!(%error, "publishing the FailedScheduling event failed; dropped");
    }
}

/// What to write for one published event.
// `pub` (hidden from the docs) for its test in tests/it/builtins/events.rs only.
#[doc(hidden)]
pub enum Write {
    /// A new Event.
    Create(Event),
    /// `count`, `lastTimestamp` and `message` of an Event published before.
    Patch(Event),
}

impl Recorder {
    /// Correlate and write one event; best effort.
    async fn publish(&self, regarding: &ObjectReference, type_: &str, reason: &str, message: String) {
        let now = sim::time::now();
        let event = self.make_event(regarding, type_, reason, message, now);
        let write = {
            let mut correlator = self.correlator.lock().unwrap_or_else(|e| e.into_inner());
            correlator.correlate(event, now)
        };
        let Some(write) = write else {
            tracing::debug!(reason, "event dropped by the spam filter");
            return;
        };
        let (event, patch) = match write {
            Write::Create(event) => (event, false),
            Write::Patch(event) => (event, true),
        };
        let namespace = event.metadata.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let mut written = None;
        if patch {
            let body = serde_json::json!({
                "count": event.count,
                "lastTimestamp": event.last_timestamp,
                "message": event.message,
            });
            match api.patch(&event.name_any(), &PatchParams::default(), &Patch::Merge(&body)).await {
                Ok(patched) => written = Some(patched),
                // Gone (expired, or never written): create it afresh, as `recordEvent` does.
                Err(e) if has_code(&e, 404) => {}
                Err(error) => {
                    tracing::debug!(%error, reason, "patching an event failed; dropped");
                    return;
                }
            }
        }
        if written.is_none() {
            let mut fresh = event.clone();
            fresh.metadata.resource_version = None;
            match api.create(&PostParams::default(), &fresh).await {
                Ok(created) => written = Some(created),
                Err(error) => {
                    tracing::debug!(%error, reason, "publishing an event failed; dropped");
                    return;
                }
            }
        }
        if let Some(written) = written {
            let mut correlator = self.correlator.lock().unwrap_or_else(|e| e.into_inner());
            correlator.update_state(&written);
        }
    }

    /// `makeEvent`.
    fn make_event(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        message: String,
        now: Timestamp,
    ) -> Event {
        let name = regarding.name.clone().unwrap_or_default();
        let namespace =
            regarding.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(type_.to_owned()),
            source: Some(self.source.clone()),
            reporting_component: self.source.component.clone(),
            reporting_instance: self.source.host.clone(),
            ..Event::default()
        }
    }
}

/// A map of at most [`CACHE_ENTRIES_MAX`] entries that evicts the least recently used one.
struct Lru<V> {
    entries: BTreeMap<String, (u64, V)>,
    clock: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru { entries: BTreeMap::new(), clock: 0 }
    }
}

impl<V: Clone> Lru<V> {
    fn get(&mut self, key: &str) -> Option<V> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(used, value)| {
            *used = clock;
            value.clone()
        })
    }

    fn insert(&mut self, key: String, value: V) {
        self.clock += 1;
        self.entries.insert(key, (self.clock, value));
        if self.entries.len() > CACHE_ENTRIES_MAX {
            let oldest = self.entries.iter().min_by_key(|(_, (used, _))| *used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
    }
}

/// What the logger remembers of an Event written (`eventLog`).
#[derive(Clone)]
struct Logged {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// What the aggregator remembers of one source, object, type and reason (`aggregateRecord`).
#[derive(Clone, Default)]
struct Aggregate {
    messages: std::collections::BTreeSet<String>,
    last: Option<Timestamp>,
}

/// A token bucket per source and object (`spamRecord`).
#[derive(Clone)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

/// client-go's `EventCorrelator`: aggregate, then observe, then filter spam.
// `pub` (hidden from the docs) for its test in tests/it/builtins/events.rs only.
#[doc(hidden)]
#[derive(Default)]
pub struct Correlator {
    aggregates: Lru<Aggregate>,
    logged: Lru<Logged>,
    buckets: Lru<Bucket>,
}

fn text(value: Option<&String>) -> &str {
    value.map_or("", String::as_str)
}

/// The fields of the source and the object every key starts with.
fn object_key(event: &Event) -> Vec<&str> {
    let source = event.source.as_ref();
    let object = &event.involved_object;
    vec![
        text(source.and_then(|s| s.component.as_ref())),
        text(source.and_then(|s| s.host.as_ref())),
        text(object.kind.as_ref()),
        text(object.namespace.as_ref()),
        text(object.name.as_ref()),
        text(object.uid.as_ref()),
        text(object.api_version.as_ref()),
    ]
}

/// `getEventKey`: source, object (with its field path), type, reason and message.
fn event_key(event: &Event) -> String {
    let mut key = object_key(event);
    key.insert(5, text(event.involved_object.field_path.as_ref()));
    key.extend([text(event.type_.as_ref()), text(event.reason.as_ref()), text(event.message.as_ref())]);
    key.join("")
}

/// `EventAggregatorByReasonFunc`'s aggregate key: source, object, type, reason and reporter.
fn aggregate_key(event: &Event) -> String {
    let mut key = object_key(event);
    key.extend([
        text(event.type_.as_ref()),
        text(event.reason.as_ref()),
        text(event.reporting_component.as_ref()),
        text(event.reporting_instance.as_ref()),
    ]);
    key.join("")
}

impl Correlator {
    /// `EventCorrelate`: what to write for `event`, or `None` when the spam filter drops it.
    // `pub` for its test in tests/it/builtins/events.rs only (the type is hidden from the docs).
    pub fn correlate(&mut self, event: Event, now: Timestamp) -> Option<Write> {
        let (event, key) = self.aggregate(event, now);
        let write = self.observe(event, key);
        let event = match &write {
            Write::Create(e) | Write::Patch(e) => e,
        };
        if self.is_spam(event, now) { None } else { Some(write) }
    }

    /// `EventAggregate`: past [`AGGREGATE_MAX_EVENTS`] different messages, a combined Event.
    fn aggregate(&mut self, event: Event, now: Timestamp) -> (Event, String) {
        let key = aggregate_key(&event);
        let mut record = self.aggregates.get(&key).unwrap_or_default();
        if record.last.is_none_or(|last| now.duration_since(last) > AGGREGATE_INTERVAL) {
            record = Aggregate::default();
        }
        record.messages.insert(event.message.clone().unwrap_or_default());
        record.last = Some(now);
        let combine = record.messages.len() >= AGGREGATE_MAX_EVENTS;
        if combine {
            // As `PopAny`: forget one message, so the set stays at the limit.
            let first = record.messages.iter().next().cloned();
            if let Some(first) = first {
                record.messages.remove(&first);
            }
        }
        self.aggregates.insert(key.clone(), record);
        if !combine {
            let key = event_key(&event);
            return (event, key);
        }
        let message = format!("{COMBINED_PREFIX}{}", event.message.as_deref().unwrap_or_default());
        let name = event.involved_object.name.clone().unwrap_or_default();
        let combined = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            involved_object: event.involved_object.clone(),
            message: Some(message),
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            source: event.source.clone(),
            ..Event::default()
        };
        (combined, key)
    }

    /// `eventObserve`: an event seen before under `key` becomes a patch of the first one.
    fn observe(&mut self, mut event: Event, key: String) -> Write {
        let last = self.logged.get(&key);
        let write = match last {
            Some(last) if last.count > 0 => {
                event.metadata.name = last.name;
                event.metadata.resource_version = last.resource_version;
                event.first_timestamp = last.first_timestamp;
                event.count = Some(last.count.saturating_add(1));
                Write::Patch(event)
            }
            _ => Write::Create(event),
        };
        let event = match &write {
            Write::Create(e) | Write::Patch(e) => e,
        };
        self.logged.insert(key, logged(event));
        write
    }

    /// `EventSourceObjectSpamFilter.Filter`: whether the source's bucket for the object is empty.
    fn is_spam(&mut self, event: &Event, now: Timestamp) -> bool {
        let key = object_key(event).join("");
        let mut bucket = self.buckets.get(&key).unwrap_or(Bucket { tokens: SPAM_BURST, at: now });
        let refill = now.duration_since(bucket.at).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill.max(0.0)).min(SPAM_BURST);
        bucket.at = now;
        let spam = bucket.tokens < 1.0;
        if !spam {
            bucket.tokens -= 1.0;
        }
        self.buckets.insert(key, bucket);
        spam
    }

    /// `UpdateState`: remember the written Event's name, resourceVersion and count.
    // `pub` for its test in tests/it/builtins/events.rs only (the type is hidden from the docs).
    pub fn update_state(&mut self, written: &Event) {
        self.logged.insert(event_key(written), logged(written));
    }
}

fn logged(event: &Event) -> Logged {
    Logged {
        count: event.count.unwrap_or(1),
        first_timestamp: event.first_timestamp.clone(),
        name: event.metadata.name.clone(),
        resource_version: event.metadata.resource_version.clone(),
    }
}
