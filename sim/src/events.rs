//! Publishing `events.k8s.io/v1` Events, as `kube::runtime::events`.
//!
//! A [`Recorder`] publishes an [`Event`] about an object (an `ObjectReference`) in that object's
//! namespace (`default` for a cluster-scoped object), with kube-runtime's series behaviour: a
//! repeat of an event with the same type, action, reason, reporter, regarding and related objects
//! within [`CACHE_TTL`] of its last occurrence does not create a new Event but patches the
//! first one's `series` (`count` 2, 3, ... and `lastObservedTime`). The note is not part of that
//! identity: a repeat with a different note bumps the series and keeps the first note, as kube
//! 5 does.
//!
//! Times come from the run's virtual wall clock, so an Event's name (`<regarding name>.<event
//! time in nanoseconds, hex>`, as kube-runtime names it) and every timestamp replay exactly.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::ResourceExt;
use kube_core::params::{Patch, PatchParams, PostParams};

use crate::client::{Api, Client};

/// How long after its last occurrence an event is remembered for series (kube-runtime's TTL).
pub const CACHE_TTL: SignedDuration = SignedDuration::from_mins(6);

/// What to publish, as kube-runtime's `events::Event`. Every text is for people.
#[derive(Clone, Debug)]
pub struct Event {
    /// Normal or Warning (`Type` in `kubectl describe`).
    pub type_: EventType,
    /// Why the action was taken, at most 128 characters, PascalCase (`Reason`).
    pub reason: String,
    /// A description of the action's outcome, at most 1 kB (`Message`).
    pub note: Option<String>,
    /// What was done, at most 128 characters, PascalCase by convention.
    pub action: String,
    /// Another object the event concerns (the Event's `related`).
    pub secondary: Option<ObjectReference>,
}

/// The severity of an [`Event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// Something happened; nothing to worry about.
    Normal,
    /// Something is not working as expected.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The controller publishing events, as kube-runtime's `events::Reporter`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The controller's name (`reportingController`).
    pub controller: String,
    /// The instance (pod) name (`reportingInstance`); the controller's name when `None`.
    pub instance: Option<String>,
}

/// A reporter whose instance is its controller's name. (kube-runtime's `From<&str>` reads the
/// host name; a simulated controller has none, and a real one would make runs differ.)
impl From<&str> for Reporter {
    fn from(controller: &str) -> Self {
        Reporter { controller: controller.to_owned(), instance: None }
    }
}

impl From<String> for Reporter {
    fn from(controller: String) -> Self {
        Reporter { controller, instance: None }
    }
}

/// The identity of an object reference for series: apiVersion, kind, name, namespace, uid.
type ReferenceKey = [Option<String>; 5];

fn reference_key(reference: &ObjectReference) -> ReferenceKey {
    [
        reference.api_version.clone(),
        reference.kind.clone(),
        reference.name.clone(),
        reference.namespace.clone(),
        reference.uid.clone(),
    ]
}

/// What makes two publishes one series.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EventKey {
    event_type: EventType,
    action: String,
    reason: String,
    reporting_controller: String,
    reporting_instance: Option<String>,
    regarding: ReferenceKey,
    related: Option<ReferenceKey>,
}

/// Publishes Events, as kube-runtime's `events::Recorder`. Cheap to clone; clones share the
/// series cache.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    /// The last published Event of each series. A lock, never held across an `.await`; bounded
    /// by [`CACHE_TTL`], as entries older than it are dropped at every publish.
    cache: Arc<Mutex<BTreeMap<EventKey, K8sEvent>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("client", &self.client).field("reporter", &self.reporter).finish()
    }
}

impl Recorder {
    /// A recorder publishing through `client` as `reporter`.
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Recorder { client, reporter, cache: Arc::default() }
    }

    /// Publish `event` about `reference`: create an Event, or bump the series of an identical
    /// one published within [`CACHE_TTL`].
    ///
    /// # Errors
    ///
    /// The server's answer when it rejects the create or patch; the series cache is then left as
    /// it was, so the next publish tries the same again.
    pub async fn publish(&self, event: &Event, reference: &ObjectReference) -> crate::Result<()> {
        let now = self.client.world.with(|w| w.now());
        let key = self.key(event, reference);
        let cached = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.retain(|_, e| last_seen(e).is_none_or(|at| at + CACHE_TTL > now));
            cache.get(&key).cloned()
        };
        let to_publish = match cached {
            Some(mut previous) => {
                let count = previous.series.as_ref().map_or(2, |s| s.count + 1);
                previous.series = Some(EventSeries { count, last_observed_time: MicroTime(now) });
                previous
            }
            None => self.generate(event, reference, now),
        };
        let namespace = reference.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        if to_publish.series.is_some() {
            events.patch(&to_publish.name_any(), &PatchParams::default(), &Patch::Merge(&to_publish)).await?;
        } else {
            events.create(&PostParams::default(), &to_publish).await?;
        }
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, to_publish);
        Ok(())
    }

    fn key(&self, event: &Event, reference: &ObjectReference) -> EventKey {
        EventKey {
            event_type: event.type_,
            action: event.action.clone(),
            reason: event.reason.clone(),
            reporting_controller: self.reporter.controller.clone(),
            reporting_instance: self.reporter.instance.clone(),
            regarding: reference_key(reference),
            related: event.secondary.as_ref().map(reference_key),
        }
    }

    /// A new Event, named as kube-runtime names it from the (virtual) time.
    fn generate(&self, event: &Event, reference: &ObjectReference, now: Timestamp) -> K8sEvent {
        let regarding_name = reference.name.as_deref().unwrap_or(&self.reporter.controller);
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(reference.clone()),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: reference.namespace.clone(),
                name: Some(format!("{regarding_name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter.instance.clone().unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            series: None,
            type_: Some(event.type_.as_str().to_owned()),
            related: event.secondary.clone(),
            deprecated_count: None,
            deprecated_first_timestamp: None,
            deprecated_last_timestamp: None,
            deprecated_source: None,
        }
    }
}

/// When an Event last occurred: its series' last observation, else its event time.
fn last_seen(event: &K8sEvent) -> Option<Timestamp> {
    match &event.series {
        Some(series) => Some(series.last_observed_time.0),
        None => event.event_time.as_ref().map(|t| t.0),
    }
}
