//! The namespace controller: empties a terminating namespace, then removes its `kubernetes`
//! finalizer so that it goes away, as kube-controller-manager's `NamespaceController`.
//!
//! A namespace being deleted (deletionTimestamp set, phase Terminating) whose `spec.finalizers`
//! still holds `kubernetes` has every namespaced object in it deleted, kind by kind (a
//! deletecollection per kind, the real controller's way: Pods go gracefully, objects with
//! finalizers wait for them). While anything is left the namespace is looked at again after
//! [`RECHECK`]; once it is empty, the `kubernetes` finalizer is removed through the namespace's
//! `finalize` subresource.
//!
//! The kinds are the built-ins plus every kind a CRD serves, listed from the server at each
//! sync (the real controller's discovery).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{ApiResource, DynamicObject};
use model_apiserver::{Request, Subresource};
use sim::api::{Api, DeleteParams, ListParams, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code};
use super::kinds::{self, Kind};
use super::rate_limit::{NAMESPACE_MAX_DELAY, RateLimiter, RunRateLimited};

/// The namespace controller's node.
pub const NODE: &str = "namespace-controller";
/// The finalizer in `spec.finalizers` that the namespace controller removes.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";
/// The phase of a namespace that takes new content.
pub const PHASE_ACTIVE: &str = "Active";
/// How soon a namespace that is not empty yet is looked at again.
pub const RECHECK: Duration = Duration::from_millis(250);

/// Add the namespace controller to a world, on node [`NODE`].
pub fn namespace_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
}

/// The namespace controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default())
        .run_limited_by(RateLimiter::new(NAMESPACE_MAX_DELAY), reconcile, Arc::new(Context { client }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Whether a namespace takes new content: its phase is `Active` and its deletion has not
/// started (the server sets phase `Terminating` when it does). What the controllers that fill
/// every namespace (the ServiceAccount controller, the root CA publisher) check first, as
/// upstream's `ns.Status.Phase != v1.NamespaceActive`.
pub fn is_active(namespace: &Namespace) -> bool {
    let phase = namespace.status.as_ref().and_then(|s| s.phase.as_deref());
    phase == Some(PHASE_ACTIVE) && namespace.metadata.deletion_timestamp.is_none()
}

fn has_kubernetes_finalizer(namespace: &Namespace) -> bool {
    namespace
        .spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == KUBERNETES_FINALIZER))
}

/// Sync one namespace.
pub async fn reconcile(namespace: Arc<Namespace>, ctx: Arc<Context>) -> Result<Action, Error> {
    if namespace.metadata.deletion_timestamp.is_none() || !has_kubernetes_finalizer(&namespace) {
        return Ok(Action::await_change());
    }
    let name = namespace.name_any();
    let mut remaining = 0;
    for kind in namespaced_kinds(&ctx.client).await? {
        remaining += delete_content(&ctx.client, &kind, &name).await?;
    }
    if remaining > 0 {
        return Ok(Action::requeue(RECHECK));
    }
    finalize(&ctx.client, &namespace).await?;
    Ok(Action::await_change())
}

/// The built-in namespaced kinds and the kinds of every namespaced CRD.
async fn namespaced_kinds(client: &sim::Client) -> Result<Vec<Kind>, Error> {
    let mut all = kinds::builtin_kinds();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    all.extend(crds.list(&ListParams::default()).await?.items.iter().filter_map(kinds::crd_kind));
    Ok(all.into_iter().filter(|k| k.namespaced).collect())
}

/// Delete every object of `kind` in `namespace`; how many are still there afterwards.
async fn delete_content(client: &sim::Client, kind: &Kind, namespace: &str) -> Result<usize, Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &kind.resource);
    let listed = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // A CRD removed meanwhile: nothing of its kind is left to delete.
        Err(e) if has_code(&e, 404) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    if listed.iter().any(|o| o.metadata.deletion_timestamp.is_none()) {
        api.delete_collection(&DeleteParams::default(), &ListParams::default()).await?;
    } else if listed.is_empty() {
        return Ok(0);
    }
    Ok(api.list(&ListParams::default()).await?.items.len())
}

/// Remove the `kubernetes` finalizer from an emptied namespace: `PUT namespaces/{name}/finalize`
/// with the namespace's `spec.finalizers` minus `kubernetes`, conditional on its
/// resourceVersion. A namespace left with no finalizers is then removed by the server.
// NEEDS(sim): `Api::replace_subresource("finalize", ..)` as kube-rs has it; until then the call
// goes through `Client::request` with a model-apiserver request, which still passes the
// transport (latency, trace, faults) like every other call.
async fn finalize(client: &sim::Client, namespace: &Namespace) -> Result<(), Error> {
    let mut object: DynamicObject = serde_json::from_value(serde_json::to_value(namespace)?)?;
    if let Some(finalizers) = object.data.pointer_mut("/spec/finalizers").and_then(|f| f.as_array_mut()) {
        finalizers.retain(|f| f != KUBERNETES_FINALIZER);
    }
    let resource = ApiResource::erase::<Namespace>(&());
    let request = Request::update(&resource, None, &namespace.name_any(), object, PostParams::default())
        .with_subresource(Subresource::Finalize);
    match client.request(request).await {
        Ok(_) => Ok(()),
        // Gone already. A 409 (changed since it was read, or a fault) is retried.
        Err(status) if status.code == 404 => Ok(()),
        Err(status) => Err(Error::Api(sim::Error::from(status))),
    }
}
