//! The EndpointSlice controller: for each Service with a selector, EndpointSlices listing the
//! Pods it selects.
//!
//! As kube-controller-manager's EndpointSlice controller (`pkg/controller/endpointslice`):
//! - a sync is keyed by the Service and reads its Pods, the Nodes and the slices labelled
//!   `kubernetes.io/service-name=<service>` and managed by `endpointslice-controller.k8s.io` from
//!   informer caches (slices being deleted left out);
//! - an `ExternalName` Service or one without a selector gets no slices; a deleted Service's
//!   slices go with it through their owner reference (the garbage collector);
//! - what to write is [`endpointslice_reconciler::reconcile`]'s plan: slices of at most
//!   [`MAX_ENDPOINTS_PER_SLICE`] endpoints per address type and set of ports, each endpoint with the
//!   Pod's addresses, `ready`/`serving`/`terminating` conditions, `targetRef`, `nodeName` and the
//!   Node's zone; updated in place where possible, a placeholder slice when there are no
//!   endpoints;
//! - the plan is carried out as upstream's `finalize`: a create that a delete can stand for
//!   becomes an update of the deleted slice; no create while the Service is being deleted; updates
//!   carry the resourceVersion read (a stale cache gets 409 and the sync is retried); deletes
//!   tolerate 404;
//! - every write is recorded in an [`endpointslice_tracker::Tracker`]: a slice event that only
//!   brings back this controller's own write syncs nothing, and a sync whose cache has not caught
//!   up with a write fails and is retried (upstream's stale-informer error);
//! - a Pod change syncs the Services selecting it before or after, a slice changed or deleted by
//!   someone else syncs its Service;
//! - events: `FailedToUpdateEndpointSlices` (Warning) on the Service when a write fails, from
//!   component `endpoint-slice-controller`; a create refused because the namespace is
//!   terminating is dropped.
//!
//! Where it differs: see [`endpointslice_reconciler`] (fixed choices, no topology hints, a Pod on
//! an unknown Node published without a zone); the slice watch selects the slices managed here
//! (upstream watches all and filters in its handlers: a slice whose managed-by label changes is
//! then a deletion); no `endpoints.kubernetes.io/last-change-trigger-time` annotation (removed
//! from a slice written); no `endpointUpdatesBatchPeriod` and no one-second delay before a sync
//! triggered by a slice change.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use sim::api::{Api, DeleteParams, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::changes::{self, Change};
use super::endpoint_pods;
use super::endpoints::LAST_CHANGE_TRIGGER_TIME_ANNOTATION;
use super::endpointslice_reconciler::{self, CONTROLLER_NAME, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, Plan};
use super::endpointslice_tracker::Tracker;
use super::error::{Error, has_code, is_namespace_terminating, status_message};
use super::events;
use super::rate_limit::{MAX_RETRIES, RateLimiter, RunRateLimited, SLOW_BASE_DELAY};

pub use endpointslice_reconciler::MAX_ENDPOINTS_PER_SLICE;

/// The EndpointSlice controller's node.
pub const NODE: &str = "endpointslice-controller";
/// The component its Events come from (upstream's recorder).
pub const COMPONENT: &str = "endpoint-slice-controller";

/// Add the EndpointSlice controller to a world, on node [`NODE`].
pub fn endpointslice_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    pods: Store<Pod>,
    slices: Store<EndpointSlice>,
    nodes: Store<Node>,
    tracker: Arc<Mutex<Tracker>>,
    recorder: events::Recorder,
}

fn lock(tracker: &Mutex<Tracker>) -> std::sync::MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether this controller manages the slice.
fn managed(slice: &EndpointSlice) -> bool {
    slice.labels().get(LABEL_MANAGED_BY).map(String::as_str) == Some(CONTROLLER_NAME)
}

/// The Service a slice belongs to (`ServiceControllerKey`), if it names one.
fn service_of(slice: &EndpointSlice) -> Option<ObjectRef<Service>> {
    let name = slice.labels().get(LABEL_SERVICE_NAME).filter(|n| !n.is_empty())?;
    Some(ObjectRef::new(name).within(&slice.namespace().unwrap_or_default()))
}

/// The EndpointSlice controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let controller = Controller::new(Api::<Service>::all(client.clone()), watcher::Config::default());
    let services = controller.store();
    let (requests, requested) = futures::channel::mpsc::unbounded::<ObjectRef<Service>>();
    let pods = {
        let requests = requests.clone();
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            for service in endpoint_pods::services_to_sync(&services, &change) {
                let _ = requests.unbounded_send(service);
            }
        })
    };
    let tracker = Arc::new(Mutex::new(Tracker::default()));
    let managed_here = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={CONTROLLER_NAME}"));
    let slices = {
        let tracker = tracker.clone();
        changes::informer(Api::<EndpointSlice>::all(client.clone()), managed_here, move |change| {
            for service in services_for_slice_change(&change, &mut lock(&tracker)) {
                let _ = requests.unbounded_send(service);
            }
        })
    };
    let nodes = reflector::informer(Api::<Node>::all(client.clone()), watcher::Config::default());
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, COMPONENT),
        client,
        pods,
        slices,
        nodes,
        tracker,
    });
    controller
        .reconcile_on(requested)
        .run_limited_by(
            RateLimiter::default().starting_at(SLOW_BASE_DELAY).dropping_after(MAX_RETRIES),
            reconcile,
            ctx,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The Services a slice change concerns (`onEndpointSliceAdd`, `onEndpointSliceUpdate`,
/// `onEndpointSliceDelete`): none for this controller's own writes coming back; the slice's
/// Service when someone else changed or deleted it; both Services when its service-name label
/// changed.
fn services_for_slice_change(
    change: &Change<EndpointSlice>,
    tracker: &mut Tracker,
) -> Vec<ObjectRef<Service>> {
    match change {
        Change::Added(slice) if managed(slice) && tracker.should_sync(slice) => {
            service_of(slice).into_iter().collect()
        }
        Change::Updated { old, new } => {
            if old.labels().get(LABEL_SERVICE_NAME) != new.labels().get(LABEL_SERVICE_NAME) {
                return service_of(new).into_iter().chain(service_of(old)).collect();
            }
            if managed(old) != managed(new) || (managed(new) && tracker.should_sync(new)) {
                return service_of(new).into_iter().collect();
            }
            Vec::new()
        }
        Change::Deleted(slice) if managed(slice) && tracker.has(slice) && !tracker.handle_deletion(slice) => {
            service_of(slice).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// Sync one Service's slices (upstream's `syncService`).
pub async fn reconcile(service: Arc<Service>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Upstream's workers start once every informer has listed.
    for ready in [
        ctx.pods.wait_until_ready().await,
        ctx.slices.wait_until_ready().await,
        ctx.nodes.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return Ok(Action::await_change());
        }
    }
    let name = service.name_any();
    let namespace =
        service.namespace().ok_or_else(|| Error::MissingNamespace { kind: "Service", name: name.clone() })?;
    if endpoint_pods::service_type(&service) == "ExternalName" {
        return Ok(Action::await_change());
    }
    let Some(selector) = endpoint_pods::selector(&service) else { return Ok(Action::await_change()) };
    let pods = ctx.pods.state_filter(|pod| {
        pod.metadata.namespace.as_deref() == Some(namespace.as_str())
            && endpoint_pods::selector_matches(selector, pod.labels())
    });
    let slices = ctx.slices.state_filter(|slice| {
        slice.metadata.namespace.as_deref() == Some(namespace.as_str())
            && slice.labels().get(LABEL_SERVICE_NAME) == Some(&name)
            && managed(slice)
            && slice.metadata.deletion_timestamp.is_none()
    });
    if lock(&ctx.tracker).stale_slices(&service, &slices) {
        return Err(Error::StaleCache { kind: "EndpointSlice", name: format!("{namespace}/{name}") });
    }
    let plan = endpointslice_reconciler::reconcile(&service, &pods, &slices, &ctx.nodes);
    let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Err(failure) = boxed(|| finalize(&service, plan, &api, &ctx.tracker)).await {
        let message =
            format!("Error updating Endpoint Slices for Service {namespace}/{name}: {}", failure.message);
        events::warning(
            &ctx.recorder,
            &events::reference(&*service),
            "FailedToUpdateEndpointSlices",
            message,
        )
        .await;
        return Err(failure.error.into());
    }
    Ok(Action::await_change())
}

/// A failed write: what upstream's error says, and the API error.
struct Failure {
    message: String,
    error: sim::Error,
}

/// Upstream's `finalize`: carry out the plan, recording each write in the tracker.
async fn finalize(
    service: &Service,
    plan: Plan,
    api: &Api<EndpointSlice>,
    tracker: &Mutex<Tracker>,
) -> Result<(), Failure> {
    let Plan { mut create, mut update, mut delete } = plan;
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    // A slice about to be deleted is reused for one about to be created.
    let mut i = 0;
    while i < delete.len() && !create.is_empty() {
        let reusable = create.last().is_some_and(|new| new.address_type == delete[i].address_type)
            && endpointslice_reconciler::owned_by(&delete[i], service);
        if !reusable {
            i += 1;
            continue;
        }
        if let Some(mut slice) = create.pop() {
            slice.metadata.name = delete.remove(i).metadata.name;
            update.push(slice);
        }
    }
    // No creates while the Service is being deleted: the garbage collector is removing its slices.
    if service.metadata.deletion_timestamp.is_none() {
        for mut slice in create {
            without_trigger_time(&mut slice);
            match api.create(&PostParams::default(), &slice).await {
                Ok(created) => lock(tracker).update(&created),
                // Creates keep failing in a terminating namespace: drop the sync.
                Err(error) if is_namespace_terminating(&error) => return Ok(()),
                Err(error) => {
                    let message = format!(
                        "failed to create EndpointSlice for Service {namespace}/{name}: {}",
                        status_message(&error)
                    );
                    return Err(Failure { message, error });
                }
            }
        }
    }
    for mut slice in update {
        without_trigger_time(&mut slice);
        let slice_name = slice.name_any();
        match api.replace(&slice_name, &PostParams::default(), &slice).await {
            Ok(updated) => lock(tracker).update(&updated),
            Err(error) => {
                let message = format!(
                    "failed to update {slice_name} EndpointSlice for Service {namespace}/{name}: {}",
                    status_message(&error)
                );
                return Err(Failure { message, error });
            }
        }
    }
    for slice in delete {
        let slice_name = slice.name_any();
        match api.delete(&slice_name, &DeleteParams::default()).await {
            Ok(_) => lock(tracker).expect_deletion(&slice),
            Err(error) if has_code(&error, 404) => {}
            Err(error) => {
                let message = format!(
                    "failed to delete {slice_name} EndpointSlice for Service {namespace}/{name}: {}",
                    status_message(&error)
                );
                return Err(Failure { message, error });
            }
        }
    }
    Ok(())
}

/// `addTriggerTimeAnnotation` without a trigger time: the annotation is removed.
fn without_trigger_time(slice: &mut EndpointSlice) {
    if let Some(annotations) = slice.metadata.annotations.as_mut() {
        annotations.remove(LAST_CHANGE_TRIGGER_TIME_ANNOTATION);
        if annotations.is_empty() {
            slice.metadata.annotations = None;
        }
    }
}
