//! The disruption controller: fills in a PodDisruptionBudget's `status`, which the eviction
//! subresource reads to allow or refuse a voluntary disruption.
//!
//! As kube-controller-manager's `DisruptionController` (`pkg/controller/disruption`):
//! - the Pods of a budget are those its `selector` selects in its namespace, read from a Pod
//!   cache (the real controller's Pod lister); in policy/v1 a missing selector selects nothing
//!   and an empty one (`{}`) every Pod of the namespace;
//! - `expectedPods` and `desiredHealthy` ([`expected_pod_count`]): an integer `minAvailable` is
//!   `desiredHealthy` itself, with every selected Pod expected; a percentage `minAvailable` and
//!   any `maxUnavailable` are taken of the sum of the scales of the Pods' controllers
//!   (Deployment through its ReplicaSet, ReplicaSet, StatefulSet, and any other kind through its
//!   `/scale` subresource), rounded up;
//! - `currentHealthy`: the selected Pods that are Ready, not being deleted and not in
//!   `disruptedPods` (an eviction's mark that the Pod is about to go);
//! - `disruptedPods`: the entries the eviction subresource wrote, minus those whose Pod is gone or
//!   being deleted, and minus those older than [`DELETION_TIMEOUT`] (the Pod was evicted but never
//!   deleted; a `NotDeleted` Warning on the Pod). The budget is synced again when the next entry
//!   would expire;
//! - `disruptionsAllowed` = `currentHealthy - desiredHealthy`, never below 0, and 0 while
//!   `expectedPods` is 0; `observedGeneration`; the `DisruptionAllowed` condition (`True`,
//!   `SufficientPods` or `False`, `InsufficientPods`);
//! - on any error but a conflict ([`fail_safe`]): `disruptionsAllowed` 0 and the condition
//!   `False`, `SyncFailed`, with the error as message, so that no eviction is allowed on a status
//!   nobody could compute;
//! - the status is written with `UpdateStatus` (a PUT of `/status` carrying the resourceVersion
//!   read), not a merge patch: a status computed from a stale read must not overwrite what the
//!   eviction subresource wrote meanwhile (it lowers `disruptionsAllowed` and adds to
//!   `disruptedPods`); the server answers 409 and the sync is retried;
//! - events: `NoPods` ("No matching pods found"), `CalculateExpectedPodCountFailed`,
//!   `UnmanagedPods` on the budget and `NotDeleted` on a Pod, as upstream, from the component
//!   `controllermanager` as upstream's recorder names itself.
//!
//! Where it differs:
//! - a Pod event syncs every budget selecting the Pod, where upstream syncs the first its lister
//!   returns ("Chose %q arbitrarily") and publishes `MultiplePodDisruptionBudgets`, which this one
//!   does not;
//! - the controllers' scales are read with live GETs when a sync needs them (percentages and
//!   `maxUnavailable` only), where upstream reads Deployment, ReplicaSet, StatefulSet and
//!   ReplicationController listers: a world with no such budget pays for no informer.
//!   ReplicationControllers are not served by the model, so they have no finder of their own;
//! - a fail-safe status already on the budget is not written again; if an API call failed (a
//!   fault, which passes), the budget is synced again after [`RESYNC`] instead, standing in for
//!   the informer resync (12 to 24 h upstream) that rescues a budget whose sync failed twice
//!   alike;
//! - the stale `DisruptionTarget` Pod condition cleanup (its second work queue) is not modelled:
//!   nothing in the model sets that condition.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::DynamicObject;
use kube_core::gvk::GroupVersionKind;
use model_apiserver::versions::{Required, WorkloadSpec, present};
use sim::api::{Api, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::error::{Error, has_code, status_message};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::{events, kinds, labels, owners, pod_state};

/// The disruption controller's node.
pub const NODE: &str = "disruption-controller";
/// The component its Events come from (upstream's recorder says `controllermanager`).
pub const COMPONENT: &str = "controllermanager";
/// How long an entry of `disruptedPods` is trusted: a Pod evicted this long ago but not being
/// deleted is taken not to be deleted at all (upstream's `DeletionTimeout`).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);
/// When a budget whose sync failed on an API error, with its fail-safe status already written, is
/// synced again.
pub const RESYNC: Duration = Duration::from_secs(30);
/// The shortest recheck: an entry expires only once strictly older than [`DELETION_TIMEOUT`],
/// so a recheck due now is taken a moment later, never in a loop at one virtual instant.
const RECHECK_MIN: Duration = Duration::from_millis(1);

/// The condition this controller owns, and its reasons (policy/v1's constants).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// `DisruptionAllowed` is `True`: more Pods are healthy than the budget needs.
pub const SUFFICIENT_PODS: &str = "SufficientPods";
/// `DisruptionAllowed` is `False`: no Pod may be disrupted.
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
/// `DisruptionAllowed` is `False`: the status could not be computed.
pub const SYNC_FAILED: &str = "SyncFailed";

/// Add the disruption controller to a world, on node [`NODE`].
pub fn disruption_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    pods: Store<Pod>,
    recorder: events::Recorder,
}

/// The disruption controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let pods = reflector::informer(Api::<Pod>::all(client.clone()), watcher::Config::default());
    // Subscribed before the first `.await`, so that the initial list reaches the mapper.
    let pod_changes = pods.subscribe();
    let controller =
        Controller::new(Api::<PodDisruptionBudget>::all(client.clone()), watcher::Config::default());
    let budgets = controller.store();
    let ctx = Arc::new(Context { recorder: events::recorder(&client, COMPONENT), client, pods });
    controller
        .watches_shared_stream(pod_changes, move |pod: Arc<Pod>| budgets_of_pod(&pod, &budgets))
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The budgets a changed Pod concerns: every one in its namespace whose selector selects it
/// (upstream's `getPdbForPod` takes the first of these).
fn budgets_of_pod(pod: &Pod, budgets: &Store<PodDisruptionBudget>) -> Vec<ObjectRef<PodDisruptionBudget>> {
    if budgets.is_empty() {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.as_deref();
    budgets
        .state()
        .iter()
        .filter(|pdb| pdb.metadata.namespace.as_deref() == namespace && selects(pdb, pod))
        .map(|pdb| ObjectRef::from_obj(&**pdb))
        .collect()
}

/// Whether the budget's selector selects the Pod (`LabelSelectorAsSelector`: a missing selector
/// selects nothing, an empty one everything).
fn selects(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
    selector.is_some_and(|s| labels::matches(s, pod.metadata.labels.as_ref()))
}

/// Why a sync could not compute a budget's status; the message is what the `SyncFailed`
/// condition shows, as upstream's error strings.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// An API call failed (a fault, a 409 from a stale budget).
    #[error("{}", status_message(.0))]
    Api(#[from] sim::Error),
    /// A selected Pod's controller is of no kind with a scale, or is gone.
    #[error("found no controllers for pod {pod:?}")]
    NoControllers {
        /// The Pod's name.
        pod: String,
    },
    /// A selected Pod's controller is of a kind the server does not serve.
    #[error("no matches for kind {kind:?} in version {api_version:?}")]
    NoMapping {
        /// The controller reference's kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// A selected Pod's controller is of a kind without a `/scale` subresource (a DaemonSet, a
    /// Job), so a percentage or `maxUnavailable` has nothing to be taken of.
    #[error("{resource} does not implement the scale subresource")]
    NoScale {
        /// The group resource, as Go prints it (`daemonsets.apps`).
        resource: String,
    },
    /// `minAvailable` or `maxUnavailable` is a string that is not a percentage (validation
    /// refuses these, so only a budget the model took without validation gets here).
    #[error("{0}")]
    IntOrPercent(String),
}

impl SyncError {
    fn is_conflict(&self) -> bool {
        matches!(self, SyncError::Api(e) if has_code(e, 409))
    }
}

/// Sync one budget (upstream's `sync`): compute and write its status, or its fail-safe status.
pub async fn reconcile(pdb: Arc<PodDisruptionBudget>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Upstream waits for every informer's cache before its workers start.
    if ctx.pods.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let namespace = pdb
        .namespace()
        .ok_or_else(|| Error::MissingNamespace { kind: "PodDisruptionBudget", name: pdb.name_any() })?;
    match boxed(|| try_sync(&pdb, &namespace, &ctx)).await {
        Ok(recheck) => {
            Ok(recheck.map_or_else(Action::await_change, |after| Action::requeue(after.max(RECHECK_MIN))))
        }
        // A conflict is retried without the fail-safe: the budget changed, and the retry reads it.
        Err(SyncError::Api(e)) if has_code(&e, 409) => Err(e.into()),
        Err(error) => {
            tracing::debug!(%error, "sync failed; writing the fail-safe status");
            // A fail-safe write changes the budget, and that change syncs it again (as upstream).
            // One already written changes nothing: an API error (a fault) may pass, so the
            // resync stands in for the informer's; any other error lasts until the Pods or the
            // budget change, which sync it again.
            let wrote = boxed(|| fail_safe(&pdb, &namespace, &error, &ctx.client)).await?;
            let passing = matches!(error, SyncError::Api(_));
            Ok(if !wrote && passing { Action::requeue(RESYNC) } else { Action::await_change() })
        }
    }
}

/// Upstream's `trySync`: the status from the selected Pods; returns when to sync again for the
/// next `disruptedPods` entry to expire.
async fn try_sync(
    pdb: &PodDisruptionBudget,
    namespace: &str,
    ctx: &Context,
) -> Result<Option<Duration>, SyncError> {
    let pods: Vec<Arc<Pod>> = ctx
        .pods
        .state_filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace) && selects(pdb, pod));
    let regarding = events::reference(pdb);
    if pods.is_empty() {
        events::normal(&ctx.recorder, &regarding, "NoPods", "No matching pods found".to_owned()).await;
    }
    let expected = match boxed(|| expected_pod_count(pdb, &pods, namespace, &ctx.client)).await {
        Ok(expected) => expected,
        Err(error) => {
            let message = format!("Failed to calculate the number of expected pods: {error}");
            events::warning(&ctx.recorder, &regarding, "CalculateExpectedPodCountFailed", message).await;
            return Err(error);
        }
    };
    if expected.unmanaged {
        let selector = go_selector(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()));
        let message = format!(
            "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. \
             As a result, the status of the PDB cannot be calculated correctly, which may result in \
             undefined behavior. To account for these pods please set \".spec.minAvailable\" field of \
             the PDB to an integer value."
        );
        events::warning(&ctx.recorder, &regarding, "UnmanagedPods", message).await;
    }
    let now = sim::time::now();
    let (disrupted, recheck) = disrupted_pod_map(pdb, &pods, now);
    for pod in &disrupted.expired {
        // Upstream's message names the budget's namespace twice (`pdb.Namespace, pdb.Namespace`).
        let message = format!("Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't");
        events::warning(&ctx.recorder, &events::reference(&**pod), "NotDeleted", message).await;
    }
    let current_healthy = count_healthy_pods(&pods, &disrupted.kept, now);
    let counts =
        Counts { current_healthy, desired_healthy: expected.desired_healthy, expected: expected.count };
    boxed(|| update_status(pdb, namespace, counts, disrupted.kept, &ctx.client)).await?;
    Ok(recheck.map(|at| duration_until(now, at)))
}

/// `expectedPods` and `desiredHealthy`, and whether some selected Pod has no controller (then
/// the scale-based figures leave it out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// `expectedPods`.
    pub count: i32,
    /// `desiredHealthy`.
    pub desired_healthy: i32,
    /// Whether a selected Pod has no controller (only looked at when a scale is needed).
    pub unmanaged: bool,
}

/// Upstream's `getExpectedPodCount`.
async fn expected_pod_count(
    pdb: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
    namespace: &str,
    client: &sim::Client,
) -> Result<Expected, SyncError> {
    let spec = pdb.spec.clone().unwrap_or_default();
    if let Some(max_unavailable) = &spec.max_unavailable {
        let (count, unmanaged) = boxed(|| expected_scale(pods, namespace, client)).await?;
        let max_unavailable = scaled_value(max_unavailable, count)?;
        let desired_healthy = count.saturating_sub(max_unavailable).max(0);
        return Ok(Expected { count, desired_healthy, unmanaged });
    }
    match &spec.min_available {
        Some(IntOrString::Int(min)) => Ok(Expected {
            count: i32::try_from(pods.len()).unwrap_or(i32::MAX),
            desired_healthy: *min,
            unmanaged: false,
        }),
        Some(min @ IntOrString::String(_)) => {
            let (count, unmanaged) = boxed(|| expected_scale(pods, namespace, client)).await?;
            Ok(Expected { count, desired_healthy: scaled_value(min, count)?, unmanaged })
        }
        None => Ok(Expected::default()),
    }
}

/// `intstr.GetScaledValueFromIntOrPercent(value, total, roundUp: true)`.
pub fn scaled_value(value: &IntOrString, total: i32) -> Result<i32, SyncError> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let Some(number) = s.strip_suffix('%') else {
                let reason = "invalid value for IntOrString: invalid type: string is not a percentage";
                return Err(SyncError::IntOrPercent(reason.to_owned()));
            };
            let percent: i64 = number.parse().map_err(|_| {
                SyncError::IntOrPercent(format!(
                    "invalid value for IntOrString: invalid value {s:?}: strconv.Atoi: parsing {number:?}: invalid syntax"
                ))
            })?;
            let scaled = (percent * i64::from(total)).div_euclid(100)
                + i64::from((percent * i64::from(total)).rem_euclid(100) != 0);
            Ok(i32::try_from(scaled).unwrap_or(i32::MAX))
        }
    }
}

/// Upstream's `getExpectedScale`: the sum of the scales of the selected Pods' controllers, each
/// counted once; and whether some Pod has no controller.
async fn expected_scale(
    pods: &[Arc<Pod>],
    namespace: &str,
    client: &sim::Client,
) -> Result<(i32, bool), SyncError> {
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    let mut unmanaged = false;
    for pod in pods {
        let Some(reference) = owners::controller_of(&pod.metadata) else {
            unmanaged = true;
            continue;
        };
        if scales.contains_key(&reference.uid) {
            continue;
        }
        match boxed(|| controller_scale(reference, namespace, client)).await? {
            Some((uid, scale)) => {
                scales.insert(uid, scale);
            }
            None => return Err(SyncError::NoControllers { pod: pod.name_any() }),
        }
    }
    Ok((scales.values().fold(0i32, |sum, s| sum.saturating_add(*s)), unmanaged))
}

/// The controller `reference` names and its scale, by upstream's finders in order: a
/// Deployment through its ReplicaSet, a ReplicaSet no Deployment controls, a StatefulSet, and
/// any kind through its `/scale` subresource. `None` if it is gone or another object now has
/// its name.
async fn controller_scale(
    reference: &OwnerReference,
    namespace: &str,
    client: &sim::Client,
) -> Result<Option<(String, i32)>, SyncError> {
    let group = kinds::group_of(&reference.api_version);
    let typed = match (reference.kind.as_str(), group) {
        ("ReplicaSet", "apps" | "extensions") => {
            boxed(|| replica_set_scale(reference, namespace, client)).await?
        }
        ("StatefulSet", "apps") => {
            let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
            get_opt(&sets, &reference.name)
                .await?
                .filter(|ss| ss.metadata.uid.as_deref() == Some(reference.uid.as_str()))
                .map(|ss| (reference.uid.clone(), ss.spec().replicas.unwrap_or(1)))
        }
        _ => None,
    };
    match typed {
        Some(found) => Ok(Some(found)),
        None => boxed(|| scale_subresource(reference, namespace, client)).await,
    }
}

/// `getPodDeployment`, then `getPodReplicaSet`: the Deployment's scale if a Deployment controls
/// the ReplicaSet, else the ReplicaSet's.
async fn replica_set_scale(
    reference: &OwnerReference,
    namespace: &str,
    client: &sim::Client,
) -> Result<Option<(String, i32)>, SyncError> {
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    let Some(rs) = get_opt(&sets, &reference.name).await? else { return Ok(None) };
    if rs.metadata.uid.as_deref() != Some(reference.uid.as_str()) {
        return Ok(None);
    }
    match owners::controller_of(&rs.metadata) {
        Some(owner) if owner.kind == "Deployment" => {
            if !matches!(kinds::group_of(&owner.api_version), "apps" | "extensions") {
                return Ok(None);
            }
            let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            Ok(get_opt(&deployments, &owner.name)
                .await?
                .filter(|d| d.metadata.uid.as_deref() == Some(owner.uid.as_str()))
                .map(|d| (owner.uid.clone(), d.spec().replicas.unwrap_or(1))))
        }
        _ => Ok(Some((reference.uid.clone(), rs.spec().replicas.unwrap_or(1)))),
    }
}

/// `getScaleController`: the `/scale` of whatever kind the reference names.
async fn scale_subresource(
    reference: &OwnerReference,
    namespace: &str,
    client: &sim::Client,
) -> Result<Option<(String, i32)>, SyncError> {
    let (group, version) = match reference.api_version.rsplit_once('/') {
        Some((group, version)) => (group, version),
        None => ("", reference.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &reference.kind);
    let no_mapping =
        || SyncError::NoMapping { kind: reference.kind.clone(), api_version: reference.api_version.clone() };
    let (resource, capabilities) =
        sim::discovery::pinned_kind(client, &gvk).await.map_err(|_| no_mapping())?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    match api.get_scale(&reference.name).await {
        Ok(scale) if scale.metadata.uid.as_deref() == Some(reference.uid.as_str()) => {
            Ok(Some((reference.uid.clone(), scale.spec.and_then(|s| s.replicas).unwrap_or(0))))
        }
        Ok(_) => Ok(None),
        // Not found: the object is gone, or its kind has no scale; the latter is an error.
        Err(e) if has_code(&e, 404) => {
            if capabilities.subresources.iter().any(|(sub, _)| sub.plural == "scale") {
                Ok(None)
            } else {
                let resource =
                    if group.is_empty() { resource.plural } else { format!("{}.{group}", resource.plural) };
                Err(SyncError::NoScale { resource })
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// A GET whose 404 is `None`, as a lister's NotFound.
async fn get_opt<K>(api: &Api<K>, name: &str) -> Result<Option<K>, SyncError>
where
    K: kube_core::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    match api.get(name).await {
        Ok(object) => Ok(Some(object)),
        Err(e) if has_code(&e, 404) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What `buildDisruptedPodMap` keeps and drops.
#[derive(Debug, Default)]
pub struct Disrupted {
    /// The entries still trusted.
    pub kept: BTreeMap<String, Time>,
    /// The Pods whose entry expired while they were not being deleted.
    pub expired: Vec<Arc<Pod>>,
}

/// Upstream's `buildDisruptedPodMap`: the budget's `disruptedPods` entries of selected Pods not
/// yet being deleted, minus those older than [`DELETION_TIMEOUT`]; and when the first kept one
/// expires.
pub fn disrupted_pod_map(
    pdb: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
    now: Timestamp,
) -> (Disrupted, Option<Timestamp>) {
    let mut out = Disrupted::default();
    let mut recheck: Option<Timestamp> = None;
    let Some(recorded) = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()) else {
        return (out, recheck);
    };
    for pod in pods {
        if pod_state::is_terminating(pod) {
            continue;
        }
        let name = pod.name_any();
        let Some(disrupted_at) = recorded.get(&name) else { continue };
        let expected_deletion = expiry(disrupted_at);
        if expected_deletion < now {
            out.expired.push(pod.clone());
        } else {
            recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
            out.kept.insert(name, disrupted_at.clone());
        }
    }
    (out, recheck)
}

fn expiry(disrupted_at: &Time) -> Timestamp {
    let timeout = SignedDuration::try_from(DELETION_TIMEOUT).unwrap_or(SignedDuration::MAX);
    disrupted_at.0.checked_add(timeout).unwrap_or(Timestamp::MAX)
}

fn duration_until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)
}

/// Upstream's `countHealthyPods`: Ready Pods neither being deleted nor about to be (a
/// `disruptedPods` entry younger than [`DELETION_TIMEOUT`]).
pub fn count_healthy_pods(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>, now: Timestamp) -> i32 {
    let healthy = pods
        .iter()
        .filter(|pod| !pod_state::is_terminating(pod))
        .filter(|pod| disrupted.get(&pod.name_any()).is_none_or(|at| expiry(at) <= now))
        .filter(|pod| pod_state::is_ready(pod))
        .count();
    i32::try_from(healthy).unwrap_or(i32::MAX)
}

/// The three figures a sync computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// `currentHealthy`.
    pub current_healthy: i32,
    /// `desiredHealthy`.
    pub desired_healthy: i32,
    /// `expectedPods`.
    pub expected: i32,
}

/// `disruptionsAllowed`: the healthy Pods beyond those desired, and none while no Pod is
/// expected (a budget whose first Pods appear before its status says so stays safe).
pub fn disruptions_allowed(counts: Counts) -> i32 {
    let allowed = counts.current_healthy.saturating_sub(counts.desired_healthy);
    if counts.expected <= 0 || allowed <= 0 { 0 } else { allowed }
}

/// Upstream's `updatePdbStatus`: write the status unless it is already up to date.
async fn update_status(
    pdb: &PodDisruptionBudget,
    namespace: &str,
    counts: Counts,
    disrupted: BTreeMap<String, Time>,
    client: &sim::Client,
) -> Result<(), SyncError> {
    let allowed = disruptions_allowed(counts);
    let old = pdb.status.clone().unwrap_or_default();
    let disrupted = (!disrupted.is_empty()).then_some(disrupted);
    let old_disrupted = old.disrupted_pods.clone().filter(|m| !m.is_empty());
    let up_to_date = *old.current_healthy.value() == counts.current_healthy
        && *old.desired_healthy.value() == counts.desired_healthy
        && *old.expected_pods.value() == counts.expected
        && *old.disruptions_allowed.value() == allowed
        && old_disrupted == disrupted
        && old.observed_generation.unwrap_or(0) == pdb.metadata.generation.unwrap_or(0)
        && conditions_up_to_date(pdb);
    if up_to_date {
        return Ok(());
    }
    let mut conditions = old.conditions.unwrap_or_default();
    let (status, reason) = if allowed > 0 { ("True", SUFFICIENT_PODS) } else { ("False", INSUFFICIENT_PODS) };
    set_condition(&mut conditions, status, reason, String::new(), pdb.metadata.generation);
    let status = PodDisruptionBudgetStatus {
        current_healthy: present(counts.current_healthy),
        desired_healthy: present(counts.desired_healthy),
        expected_pods: present(counts.expected),
        disruptions_allowed: present(allowed),
        disrupted_pods: disrupted,
        observed_generation: pdb.metadata.generation,
        conditions: Some(conditions),
    };
    Ok(write_status(pdb, namespace, status, client).await?)
}

/// `pdbhelper.ConditionsAreUpToDate`: the condition agrees with `disruptionsAllowed` and the
/// status was computed for the current generation.
fn conditions_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    let Some(status) = pdb.status.as_ref() else { return false };
    let Some(condition) = status.conditions.iter().flatten().find(|c| c.type_ == DISRUPTION_ALLOWED) else {
        return false;
    };
    if status.observed_generation.unwrap_or(0) != pdb.metadata.generation.unwrap_or(0) {
        return false;
    }
    if *status.disruptions_allowed.value() > 0 {
        condition.status == "True" && condition.reason == SUFFICIENT_PODS
    } else {
        condition.status == "False" && condition.reason == INSUFFICIENT_PODS
    }
}

/// `meta.SetStatusCondition` for `DisruptionAllowed`: the transition time moves only when the
/// status does (to the virtual now).
fn set_condition(
    conditions: &mut Vec<Condition>,
    status: &str,
    reason: &str,
    message: String,
    observed_generation: Option<i64>,
) {
    match conditions.iter_mut().find(|c| c.type_ == DISRUPTION_ALLOWED) {
        Some(existing) => {
            if existing.status != status {
                existing.status = status.to_owned();
                existing.last_transition_time = sim::time::now_k8s();
            }
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = observed_generation;
        }
        None => conditions.push(Condition {
            type_: DISRUPTION_ALLOWED.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation,
            last_transition_time: sim::time::now_k8s(),
        }),
    }
}

/// Upstream's `failSafe`: `disruptionsAllowed` 0 and `DisruptionAllowed` `False`, `SyncFailed`,
/// the rest of the status as read.
async fn fail_safe(
    pdb: &PodDisruptionBudget,
    namespace: &str,
    error: &SyncError,
    client: &sim::Client,
) -> Result<bool, Error> {
    debug_assert!(!error.is_conflict(), "a conflict is retried, not failed safe");
    let old = pdb.status.clone().unwrap_or_default();
    let mut status = old.clone();
    status.disruptions_allowed = present(0);
    let mut conditions = status.conditions.take().unwrap_or_default();
    set_condition(&mut conditions, "False", SYNC_FAILED, error.to_string(), old.observed_generation);
    status.conditions = Some(conditions);
    if super::status_patch::unchanged::<PodDisruptionBudget, _>(pdb.status.as_ref(), &status) {
        return Ok(false);
    }
    write_status(pdb, namespace, status, client).await?;
    Ok(true)
}

/// `UpdateStatus`: PUT `/status` with the budget as read (its resourceVersion included), so that
/// a status computed from a stale budget gets 409 instead of overwriting a newer one. A budget
/// deleted meanwhile (404) is no error.
async fn write_status(
    pdb: &PodDisruptionBudget,
    namespace: &str,
    status: PodDisruptionBudgetStatus,
    client: &sim::Client,
) -> Result<(), sim::Error> {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let updated = PodDisruptionBudget { status: Some(status), ..pdb.clone() };
    match api.replace_status(&pdb.name_any(), &PostParams::default(), &updated).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A label selector as Go's `%v` prints a `*metav1.LabelSelector` (its generated `String()`),
/// as upstream's `UnmanagedPods` message shows it.
pub fn go_selector(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else { return "nil".to_owned() };
    let labels: String = selector.match_labels.iter().flatten().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = selector
        .match_expressions
        .iter()
        .flatten()
        .map(|r| {
            let values = r.values.as_deref().unwrap_or_default().join(" ");
            format!("LabelSelectorRequirement{{Key:{},Operator:{},Values:[{values}],}},", r.key, r.operator)
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}
