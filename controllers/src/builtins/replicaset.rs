//! The ReplicaSet controller: keeps `spec.replicas` active Pods matching the selector.
//!
//! As kube-controller-manager's `ReplicaSetController`:
//! - Pods are claimed by controller reference: owned ones are kept, matching orphans adopted
//!   (never by a ReplicaSet being deleted), owned ones that stopped matching released;
//! - missing Pods are created from the template with `generateName: <rs>-` and a controller
//!   reference (`controller: true`, `blockOwnerDeletion: true`), at most [`BURST_REPLICAS`] per
//!   sync; surplus Pods are deleted in [`pod_state::deletion_order`], with their uid as
//!   precondition;
//! - Pods are read from the controller's Pod informer cache, as upstream reads its Pod lister, and
//!   the create and delete step waits on [`expectations`](super::expectations) as upstream's: a
//!   sync that runs before the cache shows the Pods the previous sync created or deleted updates
//!   the status but creates and deletes nothing, until the cache shows them or five minutes
//!   pass. The controller starts syncing once that cache has its first list
//!   (`WaitForCacheSync`), so a restarted controller does not take an empty cache for no Pods;
//! - events: `SuccessfulCreate` ("Created pod: x"), `SuccessfulDelete` ("Deleted pod: x") and the
//!   Warnings `FailedCreate` / `FailedDelete` ([`super::pod_control`]), as upstream; in a namespace
//!   being terminated a refused create ends the sync's creates without an error;
//! - status: `replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` (Pods
//!   ready for more than `minReadySeconds`, on the virtual clock; while every replica is ready but
//!   not all available, the ReplicaSet is synced again `minReadySeconds` later) and
//!   `observedGeneration`, computed from the Pods claimed before the sync's creates and deletes,
//!   as upstream's (a Pod it deleted counts until the next sync; see `reconcile`); the `ReplicaFailure`
//!   condition (FailedCreate / FailedDelete, the error's text) while creates or deletes fail.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use model_apiserver::versions::{Text, WorkloadSpec, present};
use sim::api::{Api, Patch, PatchParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::error::{Error, has_code};
use super::expectations::{Expectations, Wait};
use super::owners::{self, Claim};
use super::pod_control::{self, Created};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::templates::{PodName, pod_from_template};
use super::{events, labels, pod_state};

/// The ReplicaSet controller's node.
pub const NODE: &str = "replicaset-controller";
/// At most this many Pods are created or deleted in one sync (the real `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// Add the ReplicaSet controller to a world, on node [`NODE`].
pub fn replicaset_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: super::events::Recorder,
    /// The Pod informer's cache, which syncs read.
    pods: Store<Pod>,
    /// What earlier syncs created and deleted that `pods` may not show yet.
    expectations: Expectations,
}

/// The ReplicaSet controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let Some((pods, pod_changes)) = super::synced_cache::<Pod>(&client).await else { return };
    let controller = Controller::new(Api::<ReplicaSet>::all(client.clone()), watcher::Config::default());
    let sets = controller.store();
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, NODE),
        client,
        pods,
        expectations: Expectations::default(),
    });
    controller
        .watches_shared_stream(pod_changes, move |pod: Arc<Pod>| owners_of_pod(&pod, &sets))
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The ReplicaSets a changed Pod concerns: its controller if that is a ReplicaSet, otherwise
/// (an orphan) every ReplicaSet in its namespace whose selector matches it.
fn owners_of_pod(pod: &Pod, sets: &Store<ReplicaSet>) -> Vec<ObjectRef<ReplicaSet>> {
    let namespace = pod.namespace().unwrap_or_default();
    match owners::controller_of(&pod.metadata) {
        Some(r) if r.kind == "ReplicaSet" && r.api_version == "apps/v1" => {
            vec![ObjectRef::new(&r.name).within(&namespace)]
        }
        Some(_) => Vec::new(),
        None => sets
            .state()
            .iter()
            .filter(|rs| rs.namespace().as_deref() == Some(namespace.as_str()))
            .filter(|rs| labels::matches(&rs.spec().selector, pod.metadata.labels.as_ref()))
            .map(|rs| ObjectRef::from_obj(&**rs))
            .collect(),
    }
}

/// Sync one ReplicaSet.
pub async fn reconcile(rs: Arc<ReplicaSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = rs.name_any();
    let namespace =
        rs.namespace().ok_or(Error::MissingNamespace { kind: "ReplicaSet", name: name.clone() })?;
    if rs.metadata.deletion_timestamp.is_some() {
        // Its Pods are the garbage collector's now.
        return Ok(Action::await_change());
    }
    let spec = rs.spec().clone();
    if labels::is_empty(&spec.selector) {
        let reason = "empty selector is invalid for replicaset".to_owned();
        return Err(Error::InvalidSpec { kind: "ReplicaSet", name, reason });
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let wait = ctx.expectations.check(&rs.uid().unwrap_or_default(), &namespace, &ctx.pods, sim::time::now());
    let cached = ctx.pods.state_filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()));
    let claimed = boxed(|| claim_pods(&rs, &spec.selector, cached, &pods)).await?;
    let replicas = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
    let managed = if wait != Wait::Satisfied {
        Ok(())
    } else if claimed.len() < replicas {
        boxed(|| create_pods(&rs, &spec, replicas - claimed.len(), &pods, &ctx)).await
    } else if claimed.len() > replicas {
        boxed(|| delete_pods(&rs, &claimed, claimed.len() - replicas, &pods, &ctx)).await
    } else {
        Ok(())
    };
    // The status counts the Pods claimed before this sync's creates and deletes, as upstream's
    // `calculateStatus(rs, activePods, ..)`: a Pod deleted just now is counted (and available)
    // until the next sync sees it go. The Deployment controller reads that status; it stops
    // scaling an old ReplicaSet down while its status counts more available Pods than its spec.
    let failure = managed.as_ref().err().map(|error| replica_failure(error, claimed.len(), replicas));
    let status = boxed(|| update_status(&rs, &spec, &claimed, failure, &ctx.client, &namespace)).await?;
    // Every replica ready but not all available yet: no Pod event marks the moment they become
    // so, so look again `minReadySeconds` later, as upstream's `syncReplicaSet`.
    let ready = status.ready_replicas.unwrap_or(0);
    let becoming_available = spec.min_ready_seconds.unwrap_or(0) > 0
        && ready == spec.replicas.unwrap_or(1)
        && status.available_replicas.unwrap_or(0) != ready;
    let recheck = becoming_available
        .then(|| Duration::from_secs(u64::try_from(spec.min_ready_seconds.unwrap_or(0)).unwrap_or(0)));
    managed.map(|()| {
        // The Pod events that fulfil them trigger the next sync; if none comes, they expire.
        let expire = match wait {
            Wait::Pending(expire) => Some(expire),
            Wait::Satisfied => None,
        };
        match expire.into_iter().chain(recheck).min() {
            Some(after) => Action::requeue(after),
            None => Action::await_change(),
        }
    })
}

/// Claim the active Pods of `cached` (the cache's Pods in the ReplicaSet's namespace): keep owned
/// ones, adopt matching orphans, release owned ones that stopped matching. Returns the Pods the
/// ReplicaSet now controls.
async fn claim_pods(
    rs: &ReplicaSet,
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    cached: Vec<Arc<Pod>>,
    api: &Api<Pod>,
) -> Result<Vec<Arc<Pod>>, Error> {
    let uid = rs.uid().unwrap_or_default();
    let mut claimed = Vec::new();
    for pod in cached {
        if !pod_state::is_active(&pod) {
            continue;
        }
        let selected = labels::matches(selector, pod.metadata.labels.as_ref());
        match owners::claim(&pod.metadata, &uid, selected) {
            Claim::Owned => claimed.push(pod),
            Claim::Adopt => {
                let patch = owners::adopt_patch(&pod.metadata, owners::controller_ref(rs));
                match api.patch(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(adopted) => claimed.push(Arc::new(adopted)),
                    // Gone or replaced meanwhile: not ours to count.
                    Err(e) if has_code(&e, 404) || has_code(&e, 409) || has_code(&e, 422) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Claim::Release => {
                let patch = owners::release_patch(&pod.metadata, &uid);
                match api.patch(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(_) => {}
                    Err(e) if has_code(&e, 404) || has_code(&e, 409) || has_code(&e, 422) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Claim::Ignore => {}
        }
    }
    Ok(claimed)
}

/// Create `missing` Pods, each expected in the cache from the moment it is created.
async fn create_pods(
    rs: &ReplicaSet,
    spec: &k8s_openapi::api::apps::v1::ReplicaSetSpec,
    missing: usize,
    api: &Api<Pod>,
    ctx: &Context,
) -> Result<(), Error> {
    let namespace = api.namespace().unwrap_or_default().to_owned();
    let template = spec.template.clone().unwrap_or_default();
    let uid = rs.uid().unwrap_or_default();
    for _ in 0..missing.min(BURST_REPLICAS) {
        let name = PodName::Generate(format!("{}-", rs.name_any()));
        let pod = pod_from_template(&template, name, &namespace, owners::controller_ref(rs));
        match pod_control::create(api, &pod, rs, &ctx.recorder).await? {
            Created::Pod(pod) => ctx.expectations.created(&uid, pod.name_any(), sim::time::now()),
            // Every create will be refused: nothing to do, as upstream.
            Created::NamespaceTerminating => break,
        }
    }
    Ok(())
}

/// Delete `surplus` Pods, expecting the cache to show each go (a 404 too: the cache shows it
/// gone or will).
async fn delete_pods(
    rs: &ReplicaSet,
    claimed: &[Arc<Pod>],
    surplus: usize,
    api: &Api<Pod>,
    ctx: &Context,
) -> Result<(), Error> {
    let owner = rs.uid().unwrap_or_default();
    let expect = |pod: &Pod| {
        ctx.expectations.deleted(&owner, pod.name_any(), pod.uid().unwrap_or_default(), sim::time::now());
    };
    let mut ranked: Vec<&Arc<Pod>> = claimed.iter().collect();
    ranked.sort_by(|a, b| pod_state::deletion_order(a, b));
    for pod in ranked.into_iter().take(surplus.min(BURST_REPLICAS)) {
        // Deleted now or gone already: either way the cache is to show it go.
        pod_control::delete(api, pod, rs, &ctx.recorder).await?;
        expect(pod);
    }
    Ok(())
}

/// The `ReplicaFailure` condition a failed create or delete step gives (`calculateStatus`'s
/// `manageReplicasErr`): reason `FailedCreate` when Pods were missing, `FailedDelete` when there
/// were too many, the error's text as message (a delete's as upstream's `DeletePod` wraps it).
fn replica_failure(error: &Error, active: usize, replicas: usize) -> ReplicaSetCondition {
    let text = error.message();
    let (reason, message) = match active.cmp(&replicas) {
        std::cmp::Ordering::Less => ("FailedCreate", text),
        std::cmp::Ordering::Greater => ("FailedDelete", format!("unable to delete pods: {text}")),
        std::cmp::Ordering::Equal => ("", text),
    };
    ReplicaSetCondition {
        type_: present(REPLICA_FAILURE.to_owned()),
        status: present("True".to_owned()),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_transition_time: Some(sim::time::now_k8s()),
    }
}

/// The type of the condition a ReplicaSet carries while its Pods cannot be created or deleted.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// The status the claimed Pods give, with the `ReplicaFailure` condition set when the sync's
/// create or delete step failed (kept as first set while it keeps failing) and removed once one
/// succeeds, as upstream's `calculateStatus`.
fn status_of(
    rs: &ReplicaSet,
    spec: &k8s_openapi::api::apps::v1::ReplicaSetSpec,
    claimed: &[Arc<Pod>],
    failure: Option<ReplicaSetCondition>,
    now: k8s_openapi::jiff::Timestamp,
) -> ReplicaSetStatus {
    let template_labels =
        spec.template.as_ref().and_then(|t| t.metadata.as_ref()).and_then(|m| m.labels.clone());
    let fully_labeled = claimed
        .iter()
        .filter(|p| {
            let labels = p.metadata.labels.clone().unwrap_or_default();
            template_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v))
        })
        .count();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let mut conditions = rs.status.as_ref().and_then(|s| s.conditions.clone());
    let failing = conditions.iter().flatten().any(|c| c.type_.text() == REPLICA_FAILURE);
    match failure {
        Some(failure) if !failing => conditions.get_or_insert_with(Vec::new).push(failure),
        Some(_) => {}
        None if failing => {
            conditions.iter_mut().for_each(|c| c.retain(|c| c.type_.text() != REPLICA_FAILURE));
            conditions = conditions.filter(|c| !c.is_empty());
        }
        None => {}
    }
    ReplicaSetStatus {
        replicas: count(claimed.len()),
        fully_labeled_replicas: Some(count(fully_labeled)),
        ready_replicas: Some(count(claimed.iter().filter(|p| pod_state::is_ready(p)).count())),
        available_replicas: Some(count(
            claimed.iter().filter(|p| pod_state::is_available_at(p, spec.min_ready_seconds, now)).count(),
        )),
        observed_generation: rs.metadata.generation,
        conditions,
        terminating_replicas: rs.status.as_ref().and_then(|s| s.terminating_replicas),
    }
}

async fn update_status(
    rs: &ReplicaSet,
    spec: &k8s_openapi::api::apps::v1::ReplicaSetSpec,
    claimed: &[Arc<Pod>],
    failure: Option<ReplicaSetCondition>,
    client: &sim::Client,
    namespace: &str,
) -> Result<ReplicaSetStatus, Error> {
    let status = status_of(rs, spec, claimed, failure, sim::time::now());
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    super::status_patch::write(&api, &rs.name_any(), rs.status.as_ref(), &status).await?;
    Ok(status)
}
