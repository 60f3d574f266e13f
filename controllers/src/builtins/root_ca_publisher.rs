//! The root CA certificate publisher: every active namespace has a ConfigMap
//! [`ROOT_CA_CONFIG_MAP`] (`kube-root-ca.crt`) holding the cluster's CA bundle, which Pods mount
//! to verify the API server, as kube-controller-manager's `rootcacertpublisher.Publisher`
//! (`pkg/controller/certificates/rootcacertpublisher`).
//!
//! - The ConfigMap's `data` is exactly `ca.crt` = [`ROOT_CA_BUNDLE`], and its annotation
//!   [`DESCRIPTION_ANNOTATION`] holds upstream's [`DESCRIPTION`].
//! - A namespace is synced when it is added or changes, when its ConfigMap is deleted or changed
//!   so that it no longer holds that, and after a relist of the ConfigMap cache
//!   ([`per_namespace`](super::per_namespace)). A missing ConfigMap is created; one whose `data`
//!   differs (a key edited, added or removed) or whose annotation is missing or empty is updated
//!   back, description included, with the resourceVersion read (a stale read gets 409 and is
//!   retried). Its other labels and annotations are kept, and so is a reworded description while
//!   the data is right, as upstream keeps them.
//! - ConfigMaps are read from the controller's own cache, as upstream reads its lister. A create
//!   answered `AlreadyExists` (the cache lagged) is retried, as upstream returns it as an error:
//!   the retry reads the existing one and updates it if it differs.
//!
//! The bundle is a constant of the simulated cluster, PEM-shaped but no certificate (nothing in a
//! simulation verifies TLS). Without the built-ins (bare `kube-sim serve`, as a bare
//! kube-apiserver) no namespace gets this ConfigMap.
//!
//! Where it differs:
//! - A namespace that is not active (phase `Terminating`) is skipped, where upstream syncs it
//!   and lets the server refuse the create (403 with the `NamespaceTerminating` cause), which it
//!   then ignores; the same end state, without a write bound to fail. Those answers, and a 404
//!   for a namespace gone meanwhile, are no error here either.
//! - The ConfigMap cache holds only those named `kube-root-ca.crt` (a field selector), where
//!   upstream's informer holds every ConfigMap and its handlers drop the others.
//! - A changed ConfigMap syncs its namespace only when it no longer holds the bundle and
//!   description, where upstream syncs on every update (the extra syncs change nothing). After
//!   a relist of the ConfigMap cache, every active namespace it shows without an up-to-date one
//!   is synced, where upstream hears only of the ConfigMaps its cache held
//!   ([`per_namespace`](super::per_namespace)).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use sim::api::{Api, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code, is_namespace_terminating};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::{namespace, per_namespace};

/// The publisher's node (upstream's controller name).
pub const NODE: &str = "root-ca-certificate-publisher-controller";
/// The ConfigMap every active namespace gets (upstream's `RootCACertConfigMapName`).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The key of the bundle in the ConfigMap's `data`.
pub const CA_CRT_KEY: &str = "ca.crt";
/// The annotation saying what the ConfigMap is for (upstream's `DescriptionAnnotation`).
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's `Description`, word for word.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal \
     endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across \
     distributions of Kubernetes clusters.";
/// The simulated cluster's CA bundle: one PEM block, shaped as a certificate, whose content
/// (base64 of plain text) says it is none.
pub const ROOT_CA_BUNDLE: &str = "-----BEGIN CERTIFICATE-----
a3ViZS1zaW0gc2ltdWxhdGVkIGNsdXN0ZXIgcm9vdCBDQS4gVGhpcyBpcyBub3Qg
YSBjZXJ0aWZpY2F0ZTogaXQgaXMgYSBwbGFjZWhvbGRlciBvZiB0aGUgcmlnaHQg
c2hhcGUsIGFuZCBub3RoaW5nIGNhbiBiZSB2ZXJpZmllZCB3aXRoIGl0LiBFdmVy
eSBzaW11bGF0ZWQgY2x1c3RlciBjYXJyaWVzIHRoZSBzYW1lIG9uZS4=
-----END CERTIFICATE-----
";

/// Add the root CA publisher to a world, on node [`NODE`].
pub fn root_ca_cert_publisher(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    config_maps: Store<ConfigMap>,
}

/// The publisher's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let controller = Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default());
    let (config_maps, changed) =
        per_namespace::watch(&client, ROOT_CA_CONFIG_MAP, controller.store(), needs_sync);
    controller
        .reconcile_on(changed)
        .run_limited_by(RateLimiter::default(), reconcile, Arc::new(Context { client, config_maps }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A namespace needs a sync when its ConfigMap is missing or not up to date.
fn needs_sync(cm: Option<&ConfigMap>) -> bool {
    !cm.is_some_and(is_up_to_date)
}

/// The `data` the ConfigMap must hold.
fn wanted_data() -> BTreeMap<String, String> {
    BTreeMap::from([(CA_CRT_KEY.to_owned(), ROOT_CA_BUNDLE.to_owned())])
}

/// Whether the ConfigMap holds exactly the bundle and a description (upstream's check: equal
/// `data` and a non-empty annotation).
pub fn is_up_to_date(cm: &ConfigMap) -> bool {
    let described = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    described && cm.data.as_ref() == Some(&wanted_data())
}

/// Sync one namespace (upstream's `syncNamespace`): create its ConfigMap if the cache has none,
/// or update the cached one back if it differs.
pub async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Upstream waits for the ConfigMap cache before its workers start.
    if ctx.config_maps.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    if !namespace::is_active(&ns) {
        return Ok(Action::await_change());
    }
    let name = ns.name_any();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &name);
    let cached = ctx.config_maps.get(&ObjectRef::new(ROOT_CA_CONFIG_MAP).within(&name));
    let creating = cached.is_none();
    let result = match cached {
        None => api.create(&PostParams::default(), &published(&name)).await,
        Some(cm) if is_up_to_date(&cm) => return Ok(Action::await_change()),
        Some(cm) => api.replace(ROOT_CA_CONFIG_MAP, &PostParams::default(), &restored(&cm)).await,
    };
    match result {
        Ok(_) => Ok(Action::await_change()),
        // Don't retry a create into a namespace that is gone or terminating (as upstream); an
        // update of a ConfigMap deleted meanwhile (404) is retried, and the retry creates it.
        Err(e) if creating && (has_code(&e, 404) || is_namespace_terminating(&e)) => {
            Ok(Action::await_change())
        }
        Err(e) => Err(e.into()),
    }
}

/// The ConfigMap a namespace gets.
fn published(namespace: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(ROOT_CA_CONFIG_MAP.to_owned()),
            namespace: Some(namespace.to_owned()),
            annotations: Some(BTreeMap::from([(DESCRIPTION_ANNOTATION.to_owned(), DESCRIPTION.to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(wanted_data()),
        ..ConfigMap::default()
    }
}

/// `cm` (as read, with its resourceVersion) holding the bundle and the description again.
fn restored(cm: &ConfigMap) -> ConfigMap {
    let mut cm = cm.clone();
    cm.data = Some(wanted_data());
    cm.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESCRIPTION_ANNOTATION.to_owned(), DESCRIPTION.to_owned());
    cm
}
