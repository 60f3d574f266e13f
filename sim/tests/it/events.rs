//! The events Recorder (`sim::runtime::events`) publishes `events.k8s.io/v1` Events as
//! kube-runtime 5 does: one Event per new (type, action, reason, reporter, regarding, related),
//! and a repeat within the 6-minute TTL bumps that Event's series instead of creating another.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use sim::api::{Api, Resource};
use sim::runtime::events::{Event, EventType, Recorder, Reporter};
use sim::{FnProperty, Sim, Verdict, Workload};

use common::config_map;

/// The run's epoch (`sim::world::EPOCH_UNIX_SECONDS`) in nanoseconds.
const EPOCH_NANOS: i128 = 1_767_225_600 * 1_000_000_000;

fn seen(note: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: "Seen".to_owned(),
        note: Some(note.to_owned()),
        action: "Observe".to_owned(),
        secondary: None,
    }
}

fn reporter() -> Reporter {
    Reporter { controller: "watcher".to_owned(), instance: Some("watcher-0".to_owned()) }
}

/// Create ConfigMap `a` and return a reference to it.
async fn regarding(w: &Workload) -> ObjectReference {
    let cm: ConfigMap =
        w.apply(&Api::namespaced(w.client(), "default"), &config_map("a", "1")).await.unwrap();
    cm.object_ref(&())
}

/// Run `script` on seed `seed` and return every Event in `default` at the end, in name order.
fn events_after<F, Fut>(seed: u64, script: F) -> Vec<K8sEvent>
where
    F: Fn(Workload) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let found: Arc<Mutex<Vec<K8sEvent>>> = Arc::default();
    let sink = found.clone();
    let report = Sim::builder()
        .workload(move |w| {
            let done = script(w);
            async move {
                done.await;
                Ok(())
            }
        })
        .property(FnProperty::at_end("collect events", move |view| {
            let cluster = view.cluster("default").expect("the default cluster exists");
            let events = cluster.iter_resource("events", Some("default"));
            let events =
                events.map(|(_, e)| serde_json::from_value(serde_json::to_value(&**e).unwrap()).unwrap());
            *sink.lock().unwrap() = events.collect();
            Ok(())
        }))
        .run(seed);
    assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
    found.lock().unwrap().clone()
}

/// The time an Event's name encodes (`<name>.<nanoseconds, hex>`), in whole microseconds: the
/// stored eventTime is a MicroTime, so it keeps only microseconds.
fn name_micros(event: &K8sEvent) -> i128 {
    let name = event.metadata.name.as_deref().expect("a name");
    let (_, hex) = name.rsplit_once('.').expect("a dot in the name");
    i128::from_str_radix(hex, 16).expect("hex nanoseconds") / 1000
}

/// The event's time in nanoseconds since the run's start.
fn nanos_since_start(event: &K8sEvent) -> i128 {
    event.event_time.as_ref().expect("an eventTime").0.as_nanosecond() - EPOCH_NANOS
}

#[test]
fn a_published_event_is_created_in_events_k8s_io_with_the_fields_kube_runtime_sets() {
    for seed in 0..3 {
        let events = events_after(seed, |w| async move {
            let reference = regarding(&w).await;
            Recorder::new(w.client(), reporter()).publish(&seen("first look"), &reference).await.unwrap();
        });
        assert_eq!(events.len(), 1, "seed {seed}: {events:?}");
        let event = &events[0];
        let at = event.event_time.as_ref().expect("an eventTime").0;
        assert!(event.metadata.name.as_deref().unwrap().starts_with("a."), "seed {seed}");
        assert_eq!(name_micros(event), at.as_nanosecond() / 1000, "seed {seed}");
        assert_eq!(event.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(event.type_.as_deref(), Some("Normal"));
        assert_eq!(event.reason.as_deref(), Some("Seen"));
        assert_eq!(event.action.as_deref(), Some("Observe"));
        assert_eq!(event.note.as_deref(), Some("first look"));
        assert_eq!(event.reporting_controller.as_deref(), Some("watcher"));
        assert_eq!(event.reporting_instance.as_deref(), Some("watcher-0"));
        let regarding = event.regarding.as_ref().expect("a regarding reference");
        assert_eq!(
            (regarding.kind.as_deref(), regarding.name.as_deref(), regarding.namespace.as_deref()),
            (Some("ConfigMap"), Some("a"), Some("default"))
        );
        assert_eq!(event.series, None);
        assert_eq!(event.related, None);
        assert!(nanos_since_start(event) > 0, "seed {seed}: the event time is the virtual clock's");
    }
}

#[test]
fn a_repeated_event_bumps_the_series_of_the_first_instead_of_creating_another() {
    for seed in 0..3 {
        let events = events_after(seed, |w| async move {
            let reference = regarding(&w).await;
            let recorder = Recorder::new(w.client(), reporter());
            recorder.publish(&seen("first look"), &reference).await.unwrap();
            w.sleep(Duration::from_secs(1)).await;
            recorder.publish(&seen("second look"), &reference).await.unwrap();
            w.sleep(Duration::from_secs(1)).await;
            recorder.publish(&seen("third look"), &reference).await.unwrap();
            let warning = Event { type_: EventType::Warning, ..seen("odd") };
            recorder.publish(&warning, &reference).await.unwrap();
        });
        assert_eq!(events.len(), 2, "seed {seed}: {events:?}");
        let (normal, warning): (Vec<_>, Vec<_>) =
            events.iter().partition(|e| e.type_.as_deref() == Some("Normal"));
        let (normal, warning) = (normal[0], warning[0]);
        let series = normal.series.as_ref().expect("the repeats made a series");
        assert_eq!(series.count, 3, "seed {seed}");
        // The series keeps the first occurrence's note and time; its last observation is the
        // third publish, two seconds (plus API latency) later.
        assert_eq!(normal.note.as_deref(), Some("first look"));
        let first = normal.event_time.as_ref().unwrap().0;
        let last = series.last_observed_time.0;
        assert_eq!(name_micros(normal), first.as_nanosecond() / 1000, "seed {seed}");
        assert_eq!(last.duration_since(first).as_secs(), 2, "seed {seed}: {first} .. {last}");
        assert_eq!(warning.series, None, "seed {seed}");
        assert_eq!(warning.note.as_deref(), Some("odd"));
    }
}

#[test]
fn a_repeat_after_the_six_minute_ttl_starts_a_new_event() {
    let events = events_after(0, |w| async move {
        let reference = regarding(&w).await;
        let recorder = Recorder::new(w.client(), reporter());
        recorder.publish(&seen("before"), &reference).await.unwrap();
        w.sleep(Duration::from_secs(7 * 60)).await;
        recorder.publish(&seen("after"), &reference).await.unwrap();
    });
    let notes: Vec<_> = events.iter().map(|e| (e.note.clone().unwrap(), e.series.clone())).collect();
    assert_eq!(notes, [("before".to_owned(), None), ("after".to_owned(), None)]);
}
