//! The resource quota controller: keeps each ResourceQuota's `status` (`hard` as its spec says,
//! `used` as the namespace holds), as kube-controller-manager's `resourcequota` controller
//! (`pkg/controller/resourcequota`). kube-apiserver's `ResourceQuota` admission plugin
//! ([`model_apiserver::admission::resource_quota`]) refuses and charges writes against that
//! status, so a quota limits nothing until this controller has synced it once; this controller
//! turns the plugin on ([`model_apiserver::ServerConfig::resource_quota`]).
//!
//! - A quota is synced when it is added (every quota at start, as upstream's informer adds them),
//!   when its `spec.hard` changes, and every [`RESYNC`] (`--resource-quota-sync-period`), on the
//!   virtual clock and without keeping the world busy ([`Action::requeue_idle`]).
//! - A sync recalculates `used` for every resource of `spec.hard` from the objects of its
//!   namespace that the quota's scopes select ([`model_apiserver::quota`], the evaluators the
//!   plugin uses): Pods, Services and claims from this controller's informer caches, as upstream
//!   reads its listers; the object counts of other resources (`count/deployments.apps`,
//!   `configmaps`...) from a list of the namespace through the API. A resource it cannot measure
//!   keeps the `used` it had. The status is written (an update of `/status` with the
//!   resourceVersion read: a quota charged meanwhile by admission gets 409 and is synced again)
//!   only when it differs.
//! - Its informers of Pods, Services, claims, ConfigMaps and Secrets start with the first quota
//!   the cluster holds (a world without quotas pays for none of them), and quotas are synced once
//!   their caches have their first list (upstream's informers are kube-controller-manager's
//!   shared ones, already running).
//! - Replenishment (upstream's `QuotaMonitor`): a Pod deleted or turning terminal (`Succeeded`,
//!   `Failed`), a Service deleted or changing type, a claim, ConfigMap or Secret deleted, each
//!   syncs the quotas of its namespace that limit what it counted, so a freed slot is usable
//!   again at once; so does the deletion of an object of any other kind a quota counts
//!   (`count/deployments.apps`, `count/widgets.example.com`), watched from the first sync of a
//!   quota that counts it.
//!
//! Where it differs: the object counts of resources other than Pods, Services and claims are
//! listed through the API at each sync (upstream reads its monitors' caches). A Pod whose
//! deletion's grace period ends stops counting at the next sync, as upstream (nothing watches a
//! grace period).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, ResourceQuota, Secret, Service};
use kube_core::{ApiResource, DynamicObject};
use model_apiserver::quota::{self, Evaluator, ResourceList};
use serde::Serialize;
use sim::api::{Api, ListParams, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, WatchStreamExt, watcher};
use sim::{Clients, SimBuilder};

use super::changes::{self, Change};
use super::error::Error;
use super::rate_limit::{RateLimiter, RunRateLimited};

/// The controller's node (upstream's controller name).
pub const NODE: &str = "resourcequota-controller";

/// How often every quota is recalculated (kube-controller-manager's
/// `--resource-quota-sync-period`, 5 minutes).
pub const RESYNC: Duration = Duration::from_secs(300);

/// Add the resource quota controller to a world, on node [`NODE`], and turn on the admission
/// plugin that enforces the quotas it keeps.
pub fn resource_quota_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run).server_config_with(|config| config.resource_quota = true)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    pods: Store<Pod>,
    services: Store<Service>,
    claims: Store<PersistentVolumeClaim>,
    quotas: Store<ResourceQuota>,
    requests: Requests,
    /// The (group, resource) of the object counts whose deletions are watched
    /// ([`monitor_deletions`]); ConfigMaps and Secrets from the start, the others from the
    /// first sync of a quota that counts them.
    monitored: std::sync::Mutex<BTreeSet<(String, String)>>,
}

type Requests = futures::channel::mpsc::UnboundedSender<ObjectRef<ResourceQuota>>;

/// The controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let (requests, requested) = futures::channel::mpsc::unbounded::<ObjectRef<ResourceQuota>>();
    let quotas = {
        let requests = requests.clone();
        changes::informer(
            Api::<ResourceQuota>::all(client.clone()),
            watcher::Config::default(),
            move |change| {
                let quota = match change {
                    Change::Added(q) => q,
                    Change::Updated { old, new } if hard_of(&old) != hard_of(&new) => new,
                    _ => return,
                };
                let _ = requests.unbounded_send(ObjectRef::from_obj(&*quota));
            },
        )
    };
    // The first quota's sync request: until a quota exists nothing needs the other caches, and
    // a world without quotas pays for no informer of its Pods, Services or claims.
    let mut requested = requested;
    let Some(first) = requested.next().await else { return };
    let pods = {
        let (quotas, requests) = (quotas.clone(), requests.clone());
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            let freed = match &change {
                Change::Deleted(pod) => Some(pod),
                Change::Updated { old, new } if !is_terminal(old) && is_terminal(new) => Some(new),
                _ => None,
            };
            if let Some(pod) = freed {
                replenish(&quotas, &requests, pod.namespace(), &Evaluator::Pods);
            }
        })
    };
    let services = {
        let (quotas, requests) = (quotas.clone(), requests.clone());
        changes::informer(Api::<Service>::all(client.clone()), watcher::Config::default(), move |change| {
            let changed = match &change {
                Change::Deleted(service) => Some(service),
                Change::Updated { old, new } if service_type(old) != service_type(new) => Some(new),
                _ => None,
            };
            if let Some(service) = changed {
                replenish(&quotas, &requests, service.namespace(), &Evaluator::Services);
            }
        })
    };
    let claims =
        replenished_on_delete::<PersistentVolumeClaim>(&client, &quotas, &requests, Evaluator::Claims);
    // The object counts most quotas hold besides Pods, Services and claims: their deletions are
    // replenished at once too (others wait for the resync).
    let count = |plural: &str| Evaluator::Count { group: String::new(), plural: plural.to_owned() };
    replenished_on_delete::<ConfigMap>(&client, &quotas, &requests, count("configmaps"));
    replenished_on_delete::<Secret>(&client, &quotas, &requests, count("secrets"));
    // Upstream's `WaitForCacheSync`: a sync counts from complete caches.
    if pods.wait_until_ready().await.is_err()
        || services.wait_until_ready().await.is_err()
        || claims.wait_until_ready().await.is_err()
    {
        return;
    }
    let monitored = [("", "configmaps"), ("", "secrets")].map(|(g, p)| (g.to_owned(), p.to_owned()));
    let ctx = Arc::new(Context {
        client,
        pods,
        services,
        claims,
        quotas: quotas.clone(),
        requests,
        monitored: std::sync::Mutex::new(BTreeSet::from(monitored)),
    });
    Controller::for_shared_stream(futures::stream::empty(), quotas)
        .reconcile_on(futures::stream::once(futures::future::ready(first)).chain(requested))
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// An informer of every `K` whose deletions sync the quotas of their namespace that limit what
/// `evaluator` measures.
fn replenished_on_delete<K>(
    client: &sim::Client,
    quotas: &Store<ResourceQuota>,
    requests: &Requests,
    evaluator: Evaluator,
) -> Store<K>
where
    K: kube_core::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (quotas, requests) = (quotas.clone(), requests.clone());
    changes::informer(Api::<K>::all(client.clone()), watcher::Config::default(), move |change| {
        if let Change::Deleted(object) = &change {
            replenish(&quotas, &requests, object.meta().namespace.clone(), &evaluator);
        }
    })
}

/// A quota's `spec.hard`.
fn hard_of(
    quota: &ResourceQuota,
) -> Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>> {
    quota.spec.as_ref().and_then(|s| s.hard.as_ref())
}

/// Whether a Pod has finished (its compute resources no longer count).
fn is_terminal(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

/// A Service's type.
fn service_type(service: &Service) -> Option<&str> {
    service.spec.as_ref().and_then(|s| s.type_.as_deref())
}

/// Sync the quotas of `namespace` whose status limits something `evaluator` measures
/// (upstream's `replenishQuota`).
fn replenish(
    quotas: &Store<ResourceQuota>,
    requests: &Requests,
    namespace: Option<String>,
    evaluator: &Evaluator,
) {
    let Some(namespace) = namespace else { return };
    for quota in quotas.state() {
        if quota.metadata.namespace.as_deref() != Some(namespace.as_str()) {
            continue;
        }
        let hard = quota.status.as_ref().and_then(|s| s.hard.as_ref());
        if hard.is_some_and(|h| !evaluator.matching_resources(h.keys().map(String::as_str)).is_empty()) {
            let _ = requests.unbounded_send(ObjectRef::from_obj(&*quota));
        }
    }
}

/// `object` as the evaluators read it.
fn dynamic<K: Serialize>(object: &K) -> Result<DynamicObject, Error> {
    Ok(serde_json::from_value(serde_json::to_value(object)?)?)
}

/// The cached objects of `namespace`, as the evaluators read them.
fn cached_in<K: Serialize + kube_core::Resource>(
    store: &Store<K>,
    namespace: &str,
) -> Result<Vec<DynamicObject>, Error> {
    store
        .state()
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .map(|o| dynamic(&**o))
        .collect()
}

/// The objects of a counted resource in `namespace`, listed through the API, and its API
/// resource; `None` if the cluster does not serve it.
async fn listed_in(
    client: &sim::Client,
    group: &str,
    plural: &str,
    namespace: &str,
) -> Result<Option<(ApiResource, Vec<DynamicObject>)>, Error> {
    let Ok(served) = sim::discovery::group(client, group).await else { return Ok(None) };
    let Some((resource, _)) = served.recommended_resources().into_iter().find(|(r, _)| r.plural == plural)
    else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let objects = api.list(&ListParams::default()).await?.items;
    Ok(Some((resource, objects)))
}

/// Watch the deletions of `resource`, counted as `evaluator` counts it, once (upstream's
/// `QuotaMonitor` watches every resource a quota counts): each syncs the quotas of its namespace
/// that count it, so that a deleted object's slot is usable again at once, not at the next
/// [`RESYNC`]. A deletion the watch missed (a relist) is found by what the list no longer holds,
/// as an informer's `DeletedFinalStateUnknown`.
fn monitor_deletions(ctx: &Context, resource: &ApiResource, evaluator: &Evaluator) {
    let (group, plural) = evaluator.group_resource();
    let key = (group.to_owned(), plural.to_owned());
    {
        let mut monitored = ctx.monitored.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !monitored.insert(key) {
            return;
        }
    }
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), resource);
    let mut stream = Box::pin(watcher::watcher(api, watcher::Config::default()).default_backoff());
    let (quotas, requests, evaluator) = (ctx.quotas.clone(), ctx.requests.clone(), evaluator.clone());
    let task = async move {
        let key_of = |o: &DynamicObject| (o.metadata.namespace.clone(), o.metadata.name.clone());
        let mut known = BTreeSet::new();
        let mut listed: Option<BTreeSet<_>> = None;
        // The watcher never ends: this task lives as long as the controller's node.
        while let Some(item) = stream.next().await {
            let Ok(event) = item else { continue };
            match event {
                watcher::Event::Apply(object) => {
                    known.insert(key_of(&object));
                }
                watcher::Event::Delete(object) => {
                    known.remove(&key_of(&object));
                    replenish(&quotas, &requests, object.metadata.namespace.clone(), &evaluator);
                }
                watcher::Event::Init => listed = Some(BTreeSet::new()),
                watcher::Event::InitApply(object) => {
                    if let Some(listed) = listed.as_mut() {
                        listed.insert(key_of(&object));
                    }
                }
                watcher::Event::InitDone => {
                    if let Some(listed) = listed.take() {
                        for (namespace, _) in known.difference(&listed) {
                            replenish(&quotas, &requests, namespace.clone(), &evaluator);
                        }
                        known = listed;
                    }
                }
            }
        }
    };
    madsim::task::spawn_local(task);
}

/// Sync one quota (upstream's `syncResourceQuota`).
pub async fn reconcile(quota: Arc<ResourceQuota>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = quota.name_any();
    let namespace =
        quota.namespace().ok_or(Error::MissingNamespace { kind: "ResourceQuota", name: name.clone() })?;
    let as_dynamic = dynamic(&*quota)?;
    let hard = quota::list_at(&as_dynamic.data, "/spec/hard");
    let hard_names: Vec<String> = hard.keys().cloned().collect();
    let status_hard = quota::list_at(&as_dynamic.data, "/status/hard");
    let status_used = as_dynamic.data.pointer("/status/used").filter(|u| u.is_object());
    let mut used: ResourceList = quota::list_of(status_used);
    let evaluators: std::collections::BTreeSet<Evaluator> =
        hard_names.iter().filter_map(|n| Evaluator::of_resource_name(n)).collect();
    let now = sim::time::now();
    for evaluator in evaluators {
        let resources = evaluator.matching_resources(hard_names.iter().map(String::as_str));
        let objects = match &evaluator {
            Evaluator::Pods => cached_in(&ctx.pods, &namespace)?,
            Evaluator::Services => cached_in(&ctx.services, &namespace)?,
            Evaluator::Claims => cached_in(&ctx.claims, &namespace)?,
            Evaluator::Count { group, plural } => {
                match listed_in(&ctx.client, group, plural, &namespace).await? {
                    Some((resource, objects)) => {
                        monitor_deletions(&ctx, &resource, &evaluator);
                        objects
                    }
                    None => continue,
                }
            }
        };
        used.extend(evaluator.usage_stats(&as_dynamic, &resources, &objects, now));
    }
    let used = quota::mask(&used, &hard_names);
    let has_status =
        as_dynamic.data.pointer("/status/hard").is_some_and(|h| h.is_object()) && status_used.is_some();
    if has_status && status_hard == hard && quota::list_of(status_used) == used {
        return Ok(Action::requeue_idle(RESYNC));
    }
    let mut synced = as_dynamic;
    synced.data["status"] = serde_json::json!({
        "hard": quota::list_to_value(&hard),
        "used": quota::list_to_value(&used),
    });
    let synced: ResourceQuota = sim::client::from_dynamic(&synced)?;
    let api: Api<ResourceQuota> = Api::namespaced(ctx.client.clone(), &namespace);
    api.replace_status(&name, &PostParams::default(), &synced).await?;
    Ok(Action::requeue_idle(RESYNC))
}
