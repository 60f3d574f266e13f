//! The Events the built-ins publish, as kube-controller-manager's controllers and the kubelet
//! publish them (reason, type, message, reporting controller and the object they concern), through
//! `sim`'s events [`Recorder`] (`events.k8s.io/v1`, with kube-runtime's series).
//!
//! Publishing is best effort, as with the real controllers' event broadcasters: a failed publish
//! (a fault, a terminating namespace) is logged and dropped, never retried, and never fails the
//! sync that published it.

use k8s_openapi::api::core::v1::ObjectReference;
use kube_core::Resource;
use sim::runtime::events::{Event, EventType, Recorder, Reporter};

/// A recorder publishing through `client` as `controller` (the real controllers' component name,
/// `deployment-controller`, `kubelet`, `default-scheduler`...).
pub fn recorder(client: &sim::Client, controller: &str) -> Recorder {
    Recorder::new(client.clone(), Reporter::from(controller))
}

/// The reference an Event's `regarding` (core/v1 `involvedObject`) holds for `object`.
pub fn reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Publish a `Normal` event with `reason` and `message` about `regarding`.
pub async fn normal(recorder: &Recorder, regarding: &ObjectReference, reason: &str, message: String) {
    publish(recorder, regarding, EventType::Normal, reason, message).await;
}

/// Publish a `Warning` event with `reason` and `message` about `regarding`.
pub async fn warning(recorder: &Recorder, regarding: &ObjectReference, reason: &str, message: String) {
    publish(recorder, regarding, EventType::Warning, reason, message).await;
}

async fn publish(
    recorder: &Recorder,
    regarding: &ObjectReference,
    type_: EventType,
    reason: &str,
    message: String,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(message),
        // The legacy recorders kube-controller-manager uses set no action; the events.k8s.io
        // API requires one, and the reason is what they would say.
        action: reason.to_owned(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, regarding).await {
        tracing::debug!(%error, reason, "publishing an event failed; dropped");
    }
}
