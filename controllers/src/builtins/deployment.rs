//! The Deployment controller: Deployment → ReplicaSets, with the RollingUpdate and Recreate
//! strategies, as kube-controller-manager's `DeploymentController` (`pkg/controller/deployment`).
//!
//! - ReplicaSets are claimed by controller reference (adopt matching orphans, release
//!   non-matching), read from the controller's ReplicaSet informer cache, as upstream reads its
//!   lister; syncs start once that cache has its first list (`WaitForCacheSync`). Every write
//!   decided from the cache is conditional, so a decision taken on a lagging cache gets 409 and
//!   the sync is retried: scaling and annotation patches carry the resourceVersion read (as
//!   upstream's updates do), a new ReplicaSet has its template's name (a second create is
//!   `AlreadyExists`, then read back from the server), and the history cleanup deletes with the
//!   uid and resourceVersion read (upstream's delete has no precondition; a ReplicaSet a stale
//!   cache shows idle may have been scaled up since).
//! - The ReplicaSet of the current template (the "new" one) is named
//!   `<deployment>-<pod-template-hash>`; the hash ([`template_hash`]) also becomes the
//!   `pod-template-hash` label of its selector, template and Pods, so ReplicaSets of different
//!   templates never select each other's Pods.
//! - Revisions: each ReplicaSet carries `deployment.kubernetes.io/revision`, and the new one
//!   always the highest (max of the old ones + 1; a template that comes back moves its old
//!   ReplicaSet to the new revision and records the old number in
//!   `deployment.kubernetes.io/revision-history`). The Deployment carries its new ReplicaSet's
//!   revision in the same annotation, and its other annotations are copied to the new ReplicaSet,
//!   so that `kubectl rollout history` and `kubectl rollout undo` (which, since kubectl 1.x does it
//!   client-side, replaces the Deployment's template and annotations with the wanted
//!   ReplicaSet's) work as against a cluster.
//! - `deployment.kubernetes.io/desired-replicas` and `max-replicas` record `replicas` and
//!   `replicas + maxSurge` on each ReplicaSet scaled; a change of `replicas` while ReplicaSets of
//!   several templates run is spread over them in proportion (`scale`), as upstream.
//! - RollingUpdate scales the new ReplicaSet up while the sum of every ReplicaSet's
//!   `spec.replicas` stays within `replicas + maxSurge`, and old ones down while the available
//!   Pods stay at least `replicas - maxUnavailable` (defaults 25 % and 25 %, surge rounded up,
//!   unavailable rounded down; both 0 means maxUnavailable 1). Recreate scales every old
//!   ReplicaSet to 0, waits until their Pods are gone (read from a Pod cache; the deletion of a
//!   Deployment's last Pod syncs it, as upstream's `deletePod`), then creates the new one at full
//!   size.
//! - `spec.paused`: no new ReplicaSet and no rollout step while paused; scaling still happens
//!   (proportionally), and old ReplicaSets are cleaned up.
//! - Once a rollout completes, old ReplicaSets scaled to zero beyond `revisionHistoryLimit`
//!   (default 10) are deleted, oldest revision first.
//! - Status: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`,
//!   `unavailableReplicas`, `observedGeneration`, `collisionCount`, and the conditions with their
//!   times on the virtual clock (`sim::time`): `Available` (MinimumReplicasAvailable,
//!   MinimumReplicasUnavailable) and, with `progressDeadlineSeconds`, `Progressing`
//!   (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
//!   ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed, and False with
//!   ReplicaSetCreateError when the new ReplicaSet's create is refused), and a ReplicaSet's
//!   `ReplicaFailure` moved onto the Deployment while it lasts. A rollout that makes no
//!   progress is requeued for when its deadline passes.
//! - Events: `ScalingReplicaSet` ("Scaled up replica set web-abc from 0 to 2") and the Warning
//!   `ReplicaSetCreateError` ("Failed to create new replica set \"web-abc\": ..."), as upstream.
//!   In a namespace being terminated a refused create ends the sync, not retried.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::versions::{Text, WorkloadSpec, present};
use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::boxed;
use super::changes::{self, Change};
use super::error::{Error, has_code, is_namespace_terminating, status_message};
use super::owners::{self, Claim};
use super::rate_limit::{MAX_RETRIES, RateLimiter, RunRateLimited};
use super::{events, hashing, labels, pod_state, replicaset};

/// The Deployment controller's node.
pub const NODE: &str = "deployment-controller";
/// The label that ties a ReplicaSet and its Pods to one template.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// The annotation holding a ReplicaSet's revision.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// The annotation holding the Deployment's `replicas` when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
/// The annotation holding `replicas + maxSurge` when the ReplicaSet was last scaled.
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// The annotation holding the revisions a ReplicaSet had before its template came back.
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
/// The longest `revision-history` annotation kept (upstream's `maxRevHistoryLengthInChars`).
pub const REVISION_HISTORY_CHARS_MAX: usize = 2000;
/// The Deployment annotations never copied to its ReplicaSets (upstream's `annotationsToSkip`).
const ANNOTATIONS_TO_SKIP: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    "deprecated.deployment.rollback.to",
];
/// `revisionHistoryLimit` when unset.
pub const REVISION_HISTORY_LIMIT_DEFAULT: i32 = 10;
/// `maxSurge` and `maxUnavailable` when unset.
pub const MAX_SURGE_DEFAULT: &str = "25%";
/// See [`MAX_SURGE_DEFAULT`].
pub const MAX_UNAVAILABLE_DEFAULT: &str = "25%";

/// Add the Deployment controller to a world, on node [`NODE`].
pub fn deployment_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: super::events::Recorder,
    /// The ReplicaSet informer's cache, which syncs read.
    replica_sets: Store<ReplicaSet>,
    /// The Pod informer's cache, which a Recreate rollout reads for the old Pods.
    pods: Store<Pod>,
}

/// The Deployment controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let Some((replica_sets, changes)) = super::synced_cache::<ReplicaSet>(&client).await else { return };
    let controller = Controller::new(Api::<Deployment>::all(client.clone()), watcher::Config::default());
    let deployments = controller.store();
    // A Recreate rollout waits for its old Pods to be gone: the deletion of the last one syncs
    // its Deployment (upstream's `deletePod`), as no ReplicaSet changes then.
    let (emptied, emptied_requests) = futures::channel::mpsc::unbounded::<ObjectRef<Deployment>>();
    let pods_cell: Rc<OnceCell<Store<Pod>>> = Rc::default();
    let pods = {
        let (pods_cell, replica_sets, deployments) =
            (pods_cell.clone(), replica_sets.clone(), deployments.clone());
        changes::informer(Api::<Pod>::all(client.clone()), watcher::Config::default(), move |change| {
            let (Change::Deleted(pod), Some(pods)) = (change, pods_cell.get()) else { return };
            if let Some(d) = recreate_emptied_by(&pod, pods, &replica_sets, &deployments) {
                let _ = emptied.unbounded_send(d);
            }
        })
    };
    // Set before the informer's task first runs: it is spawned on this thread and runs at the
    // next `.await`.
    let _ = pods_cell.set(pods.clone());
    if pods.wait_until_ready().await.is_err() {
        return;
    }
    let ctx = Arc::new(Context { recorder: events::recorder(&client, NODE), client, replica_sets, pods });
    controller
        .reconcile_on(emptied_requests)
        .watches_shared_stream(changes, move |rs: Arc<ReplicaSet>| owners_of_replica_set(&rs, &deployments))
        .run_limited_by(RateLimiter::default().dropping_after(MAX_RETRIES), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The Recreate Deployment whose last Pod `pod` was (`deletePod`): its controlling ReplicaSet's
/// controlling Deployment, when that uses Recreate and `pods` (the cache, `pod` gone from it)
/// holds no Pod of its ReplicaSets any more.
fn recreate_emptied_by(
    pod: &Pod,
    pods: &Store<Pod>,
    replica_sets: &Store<ReplicaSet>,
    deployments: &Store<Deployment>,
) -> Option<ObjectRef<Deployment>> {
    let namespace = pod.namespace()?;
    let rs_ref = owners::controller_of(&pod.metadata).filter(|r| r.kind == "ReplicaSet")?;
    let rs = replica_sets.get(&ObjectRef::new(&rs_ref.name).within(&namespace))?;
    let d_ref = owners::controller_of(&rs.metadata).filter(|r| r.kind == "Deployment")?;
    let d = deployments.get(&ObjectRef::new(&d_ref.name).within(&namespace))?;
    if d.uid().as_deref() != Some(d_ref.uid.as_str()) || !is_recreate(&d) {
        return None;
    }
    let owned: Vec<String> = replica_sets
        .state()
        .iter()
        .filter(|rs| rs.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|rs| owners::is_controlled_by(&rs.metadata, &d_ref.uid))
        .filter_map(|rs| rs.uid())
        .collect();
    let remaining = pods.state().iter().any(|p| {
        p.namespace().as_deref() == Some(namespace.as_str())
            && owners::controller_of(&p.metadata).is_some_and(|r| owned.contains(&r.uid))
    });
    (!remaining).then(|| ObjectRef::from_obj(&*d))
}

/// The Deployments a changed ReplicaSet concerns: its controller, or for an orphan every
/// Deployment in its namespace whose selector matches it.
fn owners_of_replica_set(rs: &ReplicaSet, deployments: &Store<Deployment>) -> Vec<ObjectRef<Deployment>> {
    let namespace = rs.namespace().unwrap_or_default();
    match owners::controller_of(&rs.metadata) {
        Some(r) if r.kind == "Deployment" && r.api_version == "apps/v1" => {
            vec![ObjectRef::new(&r.name).within(&namespace)]
        }
        Some(_) => Vec::new(),
        None => deployments
            .state()
            .iter()
            .filter(|d| d.namespace().as_deref() == Some(namespace.as_str()))
            .filter(|d| labels::matches(&d.spec().selector, rs.metadata.labels.as_ref()))
            .map(|d| ObjectRef::from_obj(&**d))
            .collect(),
    }
}

/// The `pod-template-hash` of a template: FNV-32a over its JSON form and the collision count,
/// spelled in the safe alphabet, as `controller.ComputeHash` (which hashes Go's printed form;
/// the value differs from a real cluster's, the properties do not).
pub fn template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(count) = collision_count {
        bytes.extend_from_slice(&count.to_le_bytes());
    }
    hashing::safe_encode(hashing::fnv32(&bytes))
}

/// Whether a ReplicaSet's template is the Deployment's, ignoring the `pod-template-hash` label.
// `pub` (hidden from the docs) for its test in tests/it/builtins/deployment.rs only.
#[doc(hidden)]
pub fn equal_ignore_hash(rs_template: Option<&PodTemplateSpec>, template: &PodTemplateSpec) -> bool {
    let Some(rs_template) = rs_template else { return false };
    // Compared as typed values, which is comparing their JSON forms (k8s-openapi writes every set
    // field and no unset one) without building them, except for the labels: there an empty map
    // and no map are the same template, and the ReplicaSet's hash label does not count.
    // Destructured, so that a field k8s-openapi adds is not silently left out.
    let PodTemplateSpec { metadata: rs_meta, spec: rs_spec } = rs_template;
    let PodTemplateSpec { metadata: meta, spec } = template;
    fn labels(meta: &Option<ObjectMeta>) -> Option<&BTreeMap<String, String>> {
        meta.as_ref().and_then(|m| m.labels.as_ref())
    }
    let rs_labels = labels(rs_meta).into_iter().flatten().filter(|(k, _)| *k != POD_TEMPLATE_HASH_LABEL);
    if rs_spec != spec || !rs_labels.eq(labels(meta).into_iter().flatten()) {
        return false;
    }
    let without_labels = |m: &ObjectMeta| ObjectMeta { labels: None, ..m.clone() };
    match (rs_meta, meta) {
        (Some(rs_meta), Some(meta)) => without_labels(rs_meta) == without_labels(meta),
        (None, None) => true,
        _ => false,
    }
}

/// `maxSurge` and `maxUnavailable` resolved against `replicas`, as
/// `deploymentutil.ResolveFenceposts`: surge rounds up, unavailable down, and both 0 would stall
/// a rollout, so unavailable becomes 1.
pub fn resolve_fenceposts(deployment: &Deployment) -> (i32, i32) {
    let replicas = deployment.spec().replicas.unwrap_or(1);
    if is_recreate(deployment) {
        // MaxSurge and MaxUnavailable are 0 for anything but a rolling update.
        return (0, 0);
    }
    let rolling = deployment.spec().strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let default = |d: &str| IntOrString::String(d.to_owned());
    let surge = rolling.and_then(|r| r.max_surge.clone()).unwrap_or_else(|| default(MAX_SURGE_DEFAULT));
    let unavailable =
        rolling.and_then(|r| r.max_unavailable.clone()).unwrap_or_else(|| default(MAX_UNAVAILABLE_DEFAULT));
    let surge = scaled_value(&surge, replicas, true);
    let unavailable = scaled_value(&unavailable, replicas, false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

/// An int-or-percent against `total` (`intstr.GetScaledValueFromIntOrPercent`). A malformed
/// percentage counts as 0 (validation rejects it on a real server).
fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> i32 {
    match value {
        IntOrString::Int(n) => (*n).max(0),
        IntOrString::String(s) => {
            let percent: i64 = s.strip_suffix('%').and_then(|p| p.parse().ok()).unwrap_or(0);
            let scaled = percent * i64::from(total);
            let value = if round_up { (scaled + 99) / 100 } else { scaled / 100 };
            i32::try_from(value.max(0)).unwrap_or(i32::MAX)
        }
    }
}

fn revision(rs: &ReplicaSet) -> i64 {
    rs.annotations().get(REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec().replicas.unwrap_or(1)
}

fn available(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

fn is_recreate(deployment: &Deployment) -> bool {
    deployment.spec().strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate")
}

/// The Deployment's `replicas` (1 when unset, as defaulted).
fn desired(deployment: &Deployment) -> i32 {
    deployment.spec().replicas.unwrap_or(1)
}

fn is_paused(deployment: &Deployment) -> bool {
    deployment.spec().paused == Some(true)
}

fn status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

/// `util.HasProgressDeadline`: a deadline is set and is not "never" (`MaxInt32`).
fn progress_deadline(deployment: &Deployment) -> Option<i32> {
    deployment.spec().progress_deadline_seconds.filter(|s| *s != i32::MAX)
}

/// The ReplicaSet's revision annotation as a number (0 when absent or malformed, as
/// `deploymentutil.Revision` reads it).
pub fn revision_of(rs: &ReplicaSet) -> i64 {
    revision(rs)
}

/// Sync one Deployment, as `syncDeployment`: a paused Deployment or a change of `replicas` is
/// only scaled; anything else takes a rollout step of its strategy.
pub async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = deployment.name_any();
    let namespace =
        deployment.namespace().ok_or(Error::MissingNamespace { kind: "Deployment", name: name.clone() })?;
    if deployment.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if labels::is_empty(&deployment.spec().selector) {
        let reason = "empty selector is invalid for deployment".to_owned();
        return Err(Error::InvalidSpec { kind: "Deployment", name, reason });
    }
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let cached =
        ctx.replica_sets.state_filter(|rs| rs.metadata.namespace.as_deref() == Some(namespace.as_str()));
    let mut owned = boxed(|| claim_replica_sets(&deployment, cached, &api)).await?;
    owned.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref(), a.metadata.name.as_ref())
            .cmp(&(b.metadata.creation_timestamp.as_ref(), b.metadata.name.as_ref()))
    });
    let sync = Sync { ctx: &ctx, api: &api, namespace: &namespace };
    let mut d = (*deployment).clone();
    let status = d.status.get_or_insert_with(DeploymentStatus::default);
    check_paused_conditions(&deployment, status);
    let (new_rs, old) = split_new_and_old(&d, owned);
    if is_paused(&d) || is_scaling_event(&d, new_rs.as_ref(), &old) {
        let new_rs = match new_rs {
            Some(rs) => Some(boxed(|| sync.existing_new_replica_set(&mut d, rs, &old)).await?),
            None => None,
        };
        boxed(|| sync.scale(&d, new_rs.as_ref(), &old)).await?;
        if is_paused(&d) {
            boxed(|| cleanup(&d, &old, &api)).await?;
        }
        let status = calculate_status(&d, new_rs.as_ref(), &old);
        boxed(|| sync.finish(&deployment, &d, status)).await?;
        return Ok(Action::await_change());
    }
    let (new_rs, scaled) = if is_recreate(&d) {
        match boxed(|| sync.rollout_recreate(&mut d, new_rs, &old)).await? {
            Ok(done) => done,
            Err(halted) => return Ok(halted),
        }
    } else {
        let new_rs = match new_rs {
            Some(rs) => boxed(|| sync.existing_new_replica_set(&mut d, rs, &old)).await?,
            None => match boxed(|| sync.create_new_replica_set(&mut d, &old)).await? {
                NewReplicaSet::Created(rs) => *rs,
                halted => return Ok(halted.action()),
            },
        };
        let scaled = boxed(|| sync.rollout_rolling(&d, &new_rs, &old)).await?;
        (Some(new_rs), scaled)
    };
    let previous = d.status.clone().unwrap_or_default();
    if !scaled && deployment_complete(&d, &previous) {
        boxed(|| cleanup(&d, &old, &api)).await?;
    }
    let status = sync_rollout_status(&d, new_rs.as_ref(), &old);
    let requeue = requeue_stuck(&d, &status);
    boxed(|| sync.finish(&deployment, &d, status)).await?;
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}

/// The ReplicaSet whose template is the Deployment's (the new one) and the others, oldest first.
fn split_new_and_old(
    deployment: &Deployment,
    owned: Vec<ReplicaSet>,
) -> (Option<ReplicaSet>, Vec<ReplicaSet>) {
    let template = &deployment.spec().template;
    let (new, old): (Vec<ReplicaSet>, Vec<ReplicaSet>) =
        owned.into_iter().partition(|rs| equal_ignore_hash(rs.spec().template.as_ref(), template));
    // Several equal templates only after a hash collision: the oldest is the new one.
    let mut new = new.into_iter();
    let new_rs = new.next();
    (new_rs, old.into_iter().chain(new).collect())
}

/// `checkPausedConditions`: Progressing becomes Unknown/DeploymentPaused when paused and
/// Unknown/DeploymentResumed when resumed (never over a ProgressDeadlineExceeded).
fn check_paused_conditions(deployment: &Deployment, status: &mut DeploymentStatus) {
    if progress_deadline(deployment).is_none() {
        return;
    }
    let reason = get_condition(status, "Progressing").and_then(|c| c.reason.clone());
    if reason.as_deref() == Some(TIMED_OUT_REASON) {
        return;
    }
    let paused_condition = reason.as_deref() == Some(PAUSED_REASON);
    if is_paused(deployment) && !paused_condition {
        set_condition(
            status,
            condition("Progressing", "Unknown", PAUSED_REASON, "Deployment is paused".into()),
        );
    } else if !is_paused(deployment) && paused_condition {
        let resumed = condition("Progressing", "Unknown", RESUMED_REASON, "Deployment is resumed".into());
        set_condition(status, resumed);
    }
}

/// `isScalingEvent`: an active ReplicaSet's `desired-replicas` annotation differs from the
/// Deployment's `replicas`.
fn is_scaling_event(deployment: &Deployment, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> bool {
    let want = desired(deployment).to_string();
    new_rs
        .into_iter()
        .chain(old)
        .filter(|rs| spec_replicas(rs) > 0)
        .any(|rs| rs.annotations().get(DESIRED_REPLICAS_ANNOTATION).is_some_and(|d| *d != want))
}

/// What one sync writes through.
struct Sync<'a> {
    ctx: &'a Context,
    api: &'a Api<ReplicaSet>,
    namespace: &'a str,
}

impl Sync<'_> {
    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.ctx.client.clone(), self.namespace)
    }

    /// `getNewReplicaSet` for an existing new ReplicaSet: its revision becomes the highest and
    /// the Deployment's annotations are copied to it; the Deployment takes its revision, and
    /// `FoundNewReplicaSet` when it had no Progressing condition yet.
    async fn existing_new_replica_set(
        &self,
        d: &mut Deployment,
        rs: ReplicaSet,
        old: &[ReplicaSet],
    ) -> Result<ReplicaSet, Error> {
        let new_revision = old.iter().map(revision).max().unwrap_or(0) + 1;
        let mut annotations = rs.annotations().clone();
        let changed = set_new_replica_set_annotations(d, &mut annotations, new_revision, true);
        let rs = if changed || rs.spec().min_ready_seconds != d.spec().min_ready_seconds {
            let patch = serde_json::json!({
                "metadata": { "annotations": annotations, "resourceVersion": rs.resource_version() },
                "spec": { "minReadySeconds": d.spec().min_ready_seconds },
            });
            self.api.patch(&rs.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?
        } else {
            rs
        };
        self.set_deployment_revision(d, revision(&rs)).await?;
        let has_deadline = progress_deadline(d).is_some();
        let status = d.status.get_or_insert_with(DeploymentStatus::default);
        if has_deadline && get_condition(status, "Progressing").is_none() {
            let message = format!("Found new replica set \"{}\"", rs.name_any());
            set_condition(status, condition("Progressing", "True", FOUND_NEW_RS_REASON, message));
        }
        Ok(rs)
    }

    /// `SetDeploymentRevision`: the Deployment's revision annotation follows its new
    /// ReplicaSet's (a metadata patch: the real controller sends it with a status update, whose
    /// strategy keeps annotations; the model's `/status` takes only `.status`).
    async fn set_deployment_revision(&self, d: &mut Deployment, revision: i64) -> Result<(), Error> {
        let revision = revision.to_string();
        if d.annotations().get(REVISION_ANNOTATION) == Some(&revision) {
            return Ok(());
        }
        let patch = serde_json::json!({ "metadata": { "annotations": { REVISION_ANNOTATION: revision } } });
        let patched =
            self.deployments().patch(&d.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        d.metadata.annotations = patched.metadata.annotations;
        Ok(())
    }

    /// Create the ReplicaSet of the current template (`getNewReplicaSet` with
    /// `createIfNotExisted`). A create that fails otherwise than on a name is published as
    /// upstream does: a `ReplicaSetCreateError` Warning and, with a progress deadline, the
    /// `Progressing` condition False with that reason (written best effort).
    async fn create_new_replica_set(
        &self,
        d: &mut Deployment,
        old: &[ReplicaSet],
    ) -> Result<NewReplicaSet, Error> {
        let new_revision = old.iter().map(revision).max().unwrap_or(0) + 1;
        let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = template_hash(&d.spec().template, collision_count);
        let mut template = d.spec().template.clone();
        let template_meta = template.metadata.get_or_insert_with(ObjectMeta::default);
        template_meta
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
        let mut selector: LabelSelector = d.spec().selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
        let replicas = if is_recreate(d) {
            desired(d)
        } else {
            new_replicas_rolling(d, old.iter().map(spec_replicas).sum(), 0)
        };
        let mut annotations = BTreeMap::new();
        set_new_replica_set_annotations(d, &mut annotations, new_revision, false);
        let name = format!("{}-{hash}", d.name_any());
        let rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: d.namespace(),
                labels: template_meta.labels.clone(),
                annotations: Some(annotations),
                owner_references: Some(vec![owners::controller_ref(d)]),
                ..ObjectMeta::default()
            },
            spec: present(ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: d.spec().min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let created = match self.api.create(&PostParams::default(), &rs).await {
            Ok(created) => created,
            Err(e) if has_code(&e, 409) => {
                self.on_create_conflict(d, &name, collision_count, e).await?;
                return Ok(NewReplicaSet::Conflict);
            }
            Err(e) if is_namespace_terminating(&e) => return Ok(NewReplicaSet::NamespaceTerminating),
            Err(e) => {
                self.report_create_failure(d, &name, &e).await;
                return Err(e.into());
            }
        };
        if replicas > 0 {
            let message = format!("Scaled up replica set {name} from 0 to {replicas}");
            events::normal(&self.ctx.recorder, &events::reference(d), SCALING_REASON, message).await;
        }
        self.set_deployment_revision(d, new_revision).await?;
        if progress_deadline(d).is_some() {
            let status = d.status.get_or_insert_with(DeploymentStatus::default);
            let message = format!("Created new replica set \"{name}\"");
            set_condition(status, condition("Progressing", "True", NEW_RS_REASON, message));
        }
        Ok(NewReplicaSet::Created(Box::new(created)))
    }

    /// Publish a failed create of the new ReplicaSet `name`: the `Progressing` condition False
    /// (with a progress deadline; an update of the status as read, whose failure changes
    /// nothing, as upstream ignores it) and a Warning.
    async fn report_create_failure(&self, d: &mut Deployment, name: &str, error: &sim::Error) {
        let message = format!("Failed to create new replica set \"{name}\": {}", status_message(error));
        if progress_deadline(d).is_some() {
            let status = d.status.get_or_insert_with(DeploymentStatus::default);
            let failed = condition("Progressing", "False", FAILED_RS_CREATE_REASON, message.clone());
            set_condition(status, failed);
            // The resourceVersion read, as an update carries it: a status changed since is not
            // overwritten.
            let patch = serde_json::json!({
                "metadata": { "resourceVersion": d.resource_version() },
                "status": { "conditions": d.status.as_ref().and_then(|s| s.conditions.as_ref()) },
            });
            let written = self
                .deployments()
                .patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            if let Err(error) = written {
                tracing::debug!(%error, "writing the ReplicaSetCreateError condition failed; ignored");
            }
        }
        events::warning(&self.ctx.recorder, &events::reference(&*d), FAILED_RS_CREATE_REASON, message).await;
    }

    /// A 409 on create: ours already (created by an earlier sync whose answer was lost, found
    /// next sync), or someone else's: a hash collision, so `collisionCount` goes up.
    async fn on_create_conflict(
        &self,
        d: &Deployment,
        name: &str,
        collision_count: Option<i32>,
        error: sim::Error,
    ) -> Result<(), Error> {
        let Some(existing) = self.api.get_opt(name).await? else {
            // Nothing of that name after all (the 409 did not come from the server's store): retry.
            return Err(error.into());
        };
        let ours = owners::is_controlled_by(&existing.metadata, d.uid().as_deref().unwrap_or_default())
            && equal_ignore_hash(existing.spec().template.as_ref(), &d.spec().template);
        if !ours {
            let count = collision_count.unwrap_or(0).saturating_add(1);
            let patch = serde_json::json!({ "status": { "collisionCount": count } });
            self.deployments()
                .patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Ok(())
    }

    /// Set a ReplicaSet's `spec.replicas` and its replica annotations
    /// (`scaleReplicaSetAndRecordEvent`), publishing `ScalingReplicaSet` when the size changes.
    /// The ReplicaSet as written, or `None` when nothing needed writing.
    async fn scale_to(
        &self,
        d: &Deployment,
        rs: &ReplicaSet,
        replicas: i32,
    ) -> Result<Option<ReplicaSet>, Error> {
        let (surge, _) = resolve_fenceposts(d);
        let want_desired = desired(d).to_string();
        let want_max = (desired(d) + surge).to_string();
        let annotations = rs.annotations();
        let size_changes = spec_replicas(rs) != replicas;
        if !size_changes
            && annotations.get(DESIRED_REPLICAS_ANNOTATION) == Some(&want_desired)
            && annotations.get(MAX_REPLICAS_ANNOTATION) == Some(&want_max)
        {
            return Ok(None);
        }
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": rs.resource_version(),
                "annotations": { DESIRED_REPLICAS_ANNOTATION: want_desired, MAX_REPLICAS_ANNOTATION: want_max },
            },
            "spec": { "replicas": replicas },
        });
        // The resourceVersion makes the patch conditional: scaling from a stale cache gets 409 and
        // the sync is retried once the cache has caught up.
        let written = self.api.patch(&rs.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        if size_changes {
            let direction = if spec_replicas(rs) < replicas { "up" } else { "down" };
            let message = format!(
                "Scaled {direction} replica set {} from {} to {replicas}",
                rs.name_any(),
                spec_replicas(rs)
            );
            events::normal(&self.ctx.recorder, &events::reference(d), SCALING_REASON, message).await;
        }
        Ok(Some(written))
    }

    /// `scale`: bring the ReplicaSets to the Deployment's `replicas` without a rollout step.
    /// One active ReplicaSet (or none: the newest) takes it all; a saturated new one makes the
    /// old ones 0; otherwise a rolling Deployment spreads the change in proportion to each
    /// ReplicaSet's share, the leftover going to the largest.
    async fn scale(
        &self,
        d: &Deployment,
        new_rs: Option<&ReplicaSet>,
        old: &[ReplicaSet],
    ) -> Result<(), Error> {
        let replicas = desired(d);
        if let Some(rs) = find_active_or_latest(new_rs, old) {
            if spec_replicas(rs) != replicas {
                self.scale_to(d, rs, replicas).await?;
            }
            return Ok(());
        }
        if new_rs.is_some_and(|rs| is_saturated(d, rs)) {
            for rs in old.iter().filter(|rs| spec_replicas(rs) > 0) {
                self.scale_to(d, rs, 0).await?;
            }
            return Ok(());
        }
        if is_recreate(d) {
            return Ok(());
        }
        let mut active: Vec<&ReplicaSet> =
            old.iter().chain(new_rs).filter(|rs| spec_replicas(rs) > 0).collect();
        let total: i32 = active.iter().map(|rs| spec_replicas(rs)).sum();
        let (surge, _) = resolve_fenceposts(d);
        let allowed = if replicas > 0 { replicas + surge } else { 0 };
        let to_add = allowed - total;
        // Larger first; among equals, newer first when growing and older first when shrinking.
        active.sort_by(|a, b| {
            let by_size = spec_replicas(b).cmp(&spec_replicas(a));
            let by_age = a.metadata.creation_timestamp.cmp(&b.metadata.creation_timestamp);
            by_size.then(if to_add > 0 { by_age.reverse() } else { by_age })
        });
        let mut sizes: Vec<i32> = Vec::with_capacity(active.len());
        let mut added = 0;
        for rs in &active {
            let proportion = proportion(d, rs, to_add, added);
            sizes.push(spec_replicas(rs) + proportion);
            added += proportion;
        }
        if let Some(first) = sizes.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
        for (rs, size) in active.into_iter().zip(sizes) {
            self.scale_to(d, rs, size).await?;
        }
        Ok(())
    }

    /// RollingUpdate (`rolloutRolling`): scale the new ReplicaSet up, else old ones down. `true`
    /// if anything was scaled.
    async fn rollout_rolling(
        &self,
        d: &Deployment,
        new_rs: &ReplicaSet,
        old: &[ReplicaSet],
    ) -> Result<bool, Error> {
        let replicas = desired(d);
        let old_total: i32 = old.iter().map(spec_replicas).sum();
        let all_total = old_total + spec_replicas(new_rs);
        // reconcileNewReplicaSet
        let new_count = if spec_replicas(new_rs) > replicas {
            replicas
        } else {
            new_replicas_rolling(d, all_total, spec_replicas(new_rs))
        };
        if new_count != spec_replicas(new_rs) {
            self.scale_to(d, new_rs, new_count).await?;
            return Ok(true);
        }
        // reconcileOldReplicaSets, on the active old ReplicaSets (oldest first).
        if old_total == 0 {
            return Ok(false);
        }
        let (_, max_unavailable) = resolve_fenceposts(d);
        let min_available = replicas - max_unavailable;
        let new_unavailable = spec_replicas(new_rs) - available(new_rs);
        let max_scaled_down = all_total - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        let mut active: Vec<ReplicaSet> = old.iter().filter(|rs| spec_replicas(rs) > 0).cloned().collect();
        let Some(cleaned) = self.cleanup_unhealthy_replicas(d, &mut active, max_scaled_down).await? else {
            return Ok(false);
        };
        let scaled_down = self.scale_down_old_replica_sets(d, new_rs, &active, min_available).await?;
        Ok(cleaned + scaled_down > 0)
    }

    /// `cleanupUnhealthyReplicas`: scale the old ReplicaSets down by their unavailable replicas,
    /// at most `max_cleanup` in all, oldest first, so that the Pods that serve nothing go before
    /// any available one. `active` is updated with the ReplicaSets as written. `None` where an
    /// old ReplicaSet's status counts more available replicas than its spec asks for (a status
    /// from before its last scale-down): upstream refuses that scale ("got invalid request to
    /// scale down") and the sync scales nothing more until the status has caught up, which keeps
    /// a rollout from scaling down on Pods that are already going.
    async fn cleanup_unhealthy_replicas(
        &self,
        d: &Deployment,
        active: &mut [ReplicaSet],
        max_cleanup: i32,
    ) -> Result<Option<i32>, Error> {
        let mut total = 0;
        for rs in active.iter_mut() {
            if total >= max_cleanup {
                break;
            }
            let count = spec_replicas(rs);
            if count == 0 || count == available(rs) {
                continue;
            }
            let down = (max_cleanup - total).min(count - available(rs));
            if down < 0 {
                return Ok(None);
            }
            if let Some(written) = self.scale_to(d, rs, count - down).await? {
                *rs = written;
            }
            total += down;
        }
        Ok(Some(total))
    }

    /// `scaleDownOldReplicaSetsForRollingUpdate`: scale the old ReplicaSets down, oldest first,
    /// by what the available replicas of these and the new one exceed `min_available` by.
    async fn scale_down_old_replica_sets(
        &self,
        d: &Deployment,
        new_rs: &ReplicaSet,
        active: &[ReplicaSet],
        min_available: i32,
    ) -> Result<i32, Error> {
        let available_total: i32 = active.iter().map(available).sum::<i32>() + available(new_rs);
        let to_scale_down = available_total - min_available;
        let mut total = 0;
        for rs in active {
            if total >= to_scale_down {
                break;
            }
            let count = spec_replicas(rs);
            if count == 0 {
                continue;
            }
            let down = count.min(to_scale_down - total);
            self.scale_to(d, rs, count - down).await?;
            total += down;
        }
        Ok(total)
    }

    /// Recreate (`rolloutRecreate`): scale every old ReplicaSet to zero, wait until their Pods
    /// are gone, then create (or scale up) the new one. The new ReplicaSet (if any) and whether
    /// anything was scaled; `Err(action)` when creating the new one came to nothing (the sync
    /// ends with that action).
    async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        new_rs: Option<ReplicaSet>,
        old: &[ReplicaSet],
    ) -> Result<Result<(Option<ReplicaSet>, bool), Action>, Error> {
        let new_rs = match new_rs {
            Some(rs) => Some(self.existing_new_replica_set(d, rs, old).await?),
            None => None,
        };
        let mut scaled = false;
        for rs in old.iter().filter(|rs| spec_replicas(rs) > 0) {
            self.scale_to(d, rs, 0).await?;
            scaled = true;
        }
        if scaled || self.old_pods_running(old) {
            return Ok(Ok((new_rs, scaled)));
        }
        let new_rs = match new_rs {
            Some(rs) => rs,
            None => match self.create_new_replica_set(d, old).await? {
                NewReplicaSet::Created(rs) => return Ok(Ok((Some(*rs), true))),
                halted => return Ok(Err(halted.action())),
            },
        };
        let replicas = desired(d);
        let scaled = spec_replicas(&new_rs) != replicas;
        if scaled {
            self.scale_to(d, &new_rs, replicas).await?;
        }
        Ok(Ok((Some(new_rs), scaled)))
    }

    /// `oldPodsRunning`: whether a Pod of an old ReplicaSet has not finished, terminating ones
    /// included (Recreate starts new Pods only once the old ones are gone), read from the Pod
    /// cache as upstream reads its Pod lister.
    fn old_pods_running(&self, old: &[ReplicaSet]) -> bool {
        if old.iter().any(|rs| status_replicas(rs) > 0) {
            return true;
        }
        let uids: Vec<String> = old.iter().filter_map(|rs| rs.uid()).collect();
        self.ctx.pods.state().iter().any(|pod| {
            pod.namespace().as_deref() == Some(self.namespace)
                && !pod_state::is_finished(pod)
                && owners::controller_of(&pod.metadata).is_some_and(|r| uids.contains(&r.uid))
        })
    }

    /// Write the status (if it changed) of the Deployment as it was read.
    async fn finish(&self, read: &Deployment, d: &Deployment, status: DeploymentStatus) -> Result<(), Error> {
        if super::status_patch::unchanged::<Deployment, _>(read.status.as_ref(), &status) {
            return Ok(());
        }
        let patch = super::status_patch::replacing(read.status.as_ref(), &status)?;
        match self
            .deployments()
            .patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, 404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// `SetNewReplicaSetAnnotations`: copy the Deployment's annotations (but the skipped ones), raise
/// the revision to `new_revision` if it is lower (keeping the old number in `revision-history`),
/// and for a ReplicaSet about to be created, the replica annotations. Whether anything changed.
fn set_new_replica_set_annotations(
    d: &Deployment,
    annotations: &mut BTreeMap<String, String>,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = false;
    for (key, value) in d.annotations() {
        if ANNOTATIONS_TO_SKIP.contains(&key.as_str()) || annotations.get(key) == Some(value) {
            continue;
        }
        annotations.insert(key.clone(), value.clone());
        changed = true;
    }
    let old_revision = annotations.get(REVISION_ANNOTATION).cloned();
    let old_number: i64 = old_revision.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0);
    if old_number < new_revision {
        annotations.insert(REVISION_ANNOTATION.to_owned(), new_revision.to_string());
        changed = true;
        if let Some(old_revision) = old_revision {
            let history = annotations.get(REVISION_HISTORY_ANNOTATION).cloned().unwrap_or_default();
            let mut revisions: Vec<&str> = history.split(',').filter(|r| !r.is_empty()).collect();
            revisions.push(&old_revision);
            // Drop the oldest entries until the list fits the length limit.
            while revisions.len() > 1 && revisions.join(",").len() > REVISION_HISTORY_CHARS_MAX {
                revisions.remove(0);
            }
            annotations.insert(REVISION_HISTORY_ANNOTATION.to_owned(), revisions.join(","));
        }
    }
    if !exists {
        let (surge, _) = resolve_fenceposts(d);
        annotations.insert(DESIRED_REPLICAS_ANNOTATION.to_owned(), desired(d).to_string());
        annotations.insert(MAX_REPLICAS_ANNOTATION.to_owned(), (desired(d) + surge).to_string());
        changed = true;
    }
    changed
}

/// `FindActiveOrLatest`: the one active ReplicaSet, or with none active the new one (else the
/// newest old one); `None` when several are active.
fn find_active_or_latest<'a>(
    new_rs: Option<&'a ReplicaSet>,
    old: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let mut active = new_rs.into_iter().chain(old).filter(|rs| spec_replicas(rs) > 0);
    match (active.next(), active.next()) {
        (Some(only), None) => Some(only),
        (None, _) => new_rs.or_else(|| old.last()),
        (Some(_), Some(_)) => None,
    }
}

/// `IsSaturated`: the new ReplicaSet has all the Deployment's replicas, recorded and available.
fn is_saturated(d: &Deployment, rs: &ReplicaSet) -> bool {
    let replicas = desired(d);
    spec_replicas(rs) == replicas
        && rs.annotations().get(DESIRED_REPLICAS_ANNOTATION) == Some(&replicas.to_string())
        && available(rs) == replicas
}

/// `GetProportion`: how many of the `to_add` replicas (`added` given out so far) this
/// ReplicaSet takes, from its share of the size it was last scaled for (`max-replicas`).
fn proportion(d: &Deployment, rs: &ReplicaSet, to_add: i32, added: i32) -> i32 {
    let size = spec_replicas(rs);
    if size == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if desired(d) == 0 {
        -size
    } else {
        let (surge, _) = resolve_fenceposts(d);
        let target = f64::from(desired(d) + surge);
        let annotated = rs
            .annotations()
            .get(MAX_REPLICAS_ANNOTATION)
            .and_then(|m| m.parse::<i32>().ok())
            .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
        if annotated == 0 {
            return 0;
        }
        // Go's math.Round: halves away from zero, as f64::round.
        let scaled = (f64::from(size) * target / f64::from(annotated)).round();
        let scaled = scaled.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32;
        scaled - size
    };
    let allowed = to_add - added;
    if to_add > 0 { fraction.min(allowed) } else { fraction.max(allowed) }
}

/// Delete old ReplicaSets scaled to zero beyond `revisionHistoryLimit`, oldest revision first.
async fn cleanup(deployment: &Deployment, old: &[ReplicaSet], api: &Api<ReplicaSet>) -> Result<(), Error> {
    let limit =
        usize::try_from(deployment.spec().revision_history_limit.unwrap_or(REVISION_HISTORY_LIMIT_DEFAULT))
            .unwrap_or(0);
    let mut idle: Vec<&ReplicaSet> = old
        .iter()
        .filter(|rs| {
            spec_replicas(rs) == 0 && status_replicas(rs) == 0 && rs.metadata.deletion_timestamp.is_none()
        })
        .collect();
    if idle.len() <= limit {
        return Ok(());
    }
    idle.sort_by_key(|rs| (revision(rs), rs.metadata.name.clone()));
    let surplus = idle.len() - limit;
    for rs in idle.into_iter().take(surplus) {
        // Idle as the cache shows it: the resourceVersion makes sure it still is.
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: rs.uid(), resource_version: rs.resource_version() }),
            ..DeleteParams::default()
        };
        match api.delete(&rs.name_any(), &params).await {
            Ok(_) => {}
            // Gone already. (A 409 is retried: the cache or a fault was behind.)
            Err(e) if has_code(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `DeploymentComplete`: every replica updated and available, and the spec observed.
fn deployment_complete(deployment: &Deployment, status: &DeploymentStatus) -> bool {
    let replicas = desired(deployment);
    status.updated_replicas.unwrap_or(0) == replicas
        && status.replicas.unwrap_or(0) == replicas
        && status.available_replicas.unwrap_or(0) == replicas
        && status.observed_generation >= deployment.metadata.generation
}

/// `DeploymentProgressing`: more updated, ready or available replicas, or fewer old ones.
fn deployment_progressing(deployment: &Deployment, new: &DeploymentStatus) -> bool {
    let old = deployment.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old_replicas = n(old.replicas) - n(old.updated_replicas);
    let new_old_replicas = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old_replicas < old_old_replicas
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// `DeploymentTimedOut`: no progress for `progressDeadlineSeconds` since the Progressing
/// condition's last update, on the virtual clock.
fn deployment_timed_out(deployment: &Deployment, status: &DeploymentStatus) -> bool {
    let Some(deadline) = progress_deadline(deployment) else { return false };
    let Some(progressing) = get_condition(status, "Progressing") else { return false };
    match progressing.reason.as_deref() {
        Some(NEW_RS_AVAILABLE_REASON) => false,
        Some(TIMED_OUT_REASON) => true,
        _ => progressing.last_update_time.as_ref().is_some_and(|from| {
            let due = from.0 + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(deadline));
            due < sim::time::now()
        }),
    }
}

/// `requeueStuckDeployment`: when to look again at a rollout that is neither complete nor timed
/// out, so that its deadline is noticed without any other change: one second after it passes.
fn requeue_stuck(deployment: &Deployment, status: &DeploymentStatus) -> Option<std::time::Duration> {
    let deadline = progress_deadline(deployment)?;
    let progressing = get_condition(status, "Progressing")?;
    if deployment_complete(deployment, status) || progressing.reason.as_deref() == Some(TIMED_OUT_REASON) {
        return None;
    }
    let from = progressing.last_update_time.as_ref()?.0;
    let due = from + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(deadline));
    let after = std::time::Duration::try_from(due.duration_since(sim::time::now())).unwrap_or_default();
    Some(after + std::time::Duration::from_secs(1))
}

/// The reason of a new ReplicaSet just created.
const NEW_RS_REASON: &str = "NewReplicaSetCreated";
/// The reason of a new ReplicaSet's failed create (`FailedRSCreateReason`), an Event's and the
/// Progressing condition's.
pub const FAILED_RS_CREATE_REASON: &str = "ReplicaSetCreateError";
/// The reason of a new ReplicaSet found without a Progressing condition.
const FOUND_NEW_RS_REASON: &str = "FoundNewReplicaSet";
/// The reason of a rollout that made progress.
const RS_UPDATED_REASON: &str = "ReplicaSetUpdated";
/// The reason of a finished rollout.
const NEW_RS_AVAILABLE_REASON: &str = "NewReplicaSetAvailable";
/// The reason of a rollout past its progress deadline.
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";
/// The reason while paused.
pub const PAUSED_REASON: &str = "DeploymentPaused";
/// The reason once resumed.
pub const RESUMED_REASON: &str = "DeploymentResumed";
/// The reason of the Deployment's scaling events.
pub const SCALING_REASON: &str = "ScalingReplicaSet";

/// A condition stamped now (virtual clock) for both its update and transition times.
fn condition(type_: &str, status: &str, reason: &str, message: String) -> DeploymentCondition {
    let now = sim::time::now_k8s();
    DeploymentCondition {
        type_: present(type_.to_owned()),
        status: present(status.to_owned()),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

fn get_condition<'a>(status: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    status.conditions.iter().flatten().find(|c| c.type_.text() == type_)
}

fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_.text() != type_);
    }
}

/// `SetDeploymentCondition`: nothing if the same status and reason are there already; the
/// transition time is kept while the status stays; the condition goes last.
fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    let type_ = condition.type_.text().to_owned();
    if let Some(current) = get_condition(status, &type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &type_);
    status.conditions.get_or_insert_with(Vec::new).push(condition);
}

/// `calculateStatus`: the counts the ReplicaSets give and the `Available` condition.
fn calculate_status(d: &Deployment, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> DeploymentStatus {
    let all = || old.iter().chain(new_rs);
    let available_replicas: i32 = all().map(available).sum();
    let total: i32 = all().map(spec_replicas).sum();
    // The counts are Go `int32`s with `omitempty`: a zero is no field on the wire, so the status
    // is built as it reads back, and comparing it with the one read is a typed comparison.
    let count = |n: i32| (n != 0).then_some(n);
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: count(all().map(status_replicas).sum()),
        updated_replicas: count(new_rs.map_or(0, status_replicas)),
        ready_replicas: count(
            all().map(|rs| rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0)).sum(),
        ),
        available_replicas: count(available_replicas),
        unavailable_replicas: count((total - available_replicas).max(0)),
        collision_count: d.status.as_ref().and_then(|s| s.collision_count),
        conditions: d.status.as_ref().and_then(|s| s.conditions.clone()),
        terminating_replicas: None,
    };
    let (_, max_unavailable) = resolve_fenceposts(d);
    let max_unavailable = if desired(d) == 0 { 0 } else { max_unavailable.min(desired(d)) };
    let available_condition = if available_replicas >= desired(d) - max_unavailable {
        condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
        )
    } else {
        let message = "Deployment does not have minimum availability.".to_owned();
        condition("Available", "False", "MinimumReplicasUnavailable", message)
    };
    set_condition(&mut status, available_condition);
    status
}

/// `syncRolloutStatus`: [`rollout_progress`], and the `ReplicaFailure` condition of the new
/// ReplicaSet (else of an old one) moved onto the Deployment, or removed when none has one.
fn sync_rollout_status(d: &Deployment, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> DeploymentStatus {
    let mut status = rollout_progress(d, new_rs, old);
    let failure_of = |rs: &ReplicaSet| {
        let conditions = rs.status.as_ref().and_then(|s| s.conditions.as_ref());
        conditions.into_iter().flatten().find(|c| c.type_.text() == replicaset::REPLICA_FAILURE).cloned()
    };
    // `getReplicaFailures`: the new ReplicaSet's failure over the old ones'.
    match new_rs.and_then(failure_of).or_else(|| old.iter().find_map(failure_of)) {
        Some(failure) => set_condition(
            &mut status,
            DeploymentCondition {
                type_: present(replicaset::REPLICA_FAILURE.to_owned()),
                status: failure.status,
                reason: failure.reason,
                message: failure.message,
                last_update_time: failure.last_transition_time.clone(),
                last_transition_time: failure.last_transition_time,
            },
        ),
        None => remove_condition(&mut status, replicaset::REPLICA_FAILURE),
    }
    status
}

/// [`calculate_status`] plus the Progressing condition of a rollout that is not known complete:
/// NewReplicaSetAvailable once complete, ReplicaSetUpdated on progress (the update time moves,
/// the transition time stays), ProgressDeadlineExceeded past the deadline.
fn rollout_progress(d: &Deployment, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> DeploymentStatus {
    let mut status = calculate_status(d, new_rs, old);
    if progress_deadline(d).is_none() {
        remove_condition(&mut status, "Progressing");
        return status;
    }
    let current = d.status.as_ref().and_then(|s| get_condition(s, "Progressing")).cloned();
    let known_complete = status.replicas == status.updated_replicas
        && current.as_ref().is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE_REASON));
    if known_complete {
        return status;
    }
    let subject = match new_rs {
        Some(rs) => format!("ReplicaSet \"{}\"", rs.name_any()),
        None => format!("Deployment \"{}\"", d.name_any()),
    };
    if deployment_complete(d, &status) {
        let message = format!("{subject} has successfully progressed.");
        set_condition(&mut status, condition("Progressing", "True", NEW_RS_AVAILABLE_REASON, message));
    } else if deployment_progressing(d, &status) {
        let mut progressing =
            condition("Progressing", "True", RS_UPDATED_REASON, format!("{subject} is progressing."));
        if let Some(current) = &current {
            if current.status.text() == "True" {
                progressing.last_transition_time = current.last_transition_time.clone();
            }
            remove_condition(&mut status, "Progressing");
        }
        set_condition(&mut status, progressing);
    } else if deployment_timed_out(d, &status) {
        let message = format!("{subject} has timed out progressing.");
        set_condition(&mut status, condition("Progressing", "False", TIMED_OUT_REASON, message));
    }
    status
}

/// What creating the new ReplicaSet came to, when the create did not fail.
#[derive(Debug)]
enum NewReplicaSet {
    /// Created.
    Created(Box<ReplicaSet>),
    /// 409: ours already (made by a sync whose answer was lost) or a name collision (the
    /// Deployment's `collisionCount` is bumped, so the next sync hashes differently).
    Conflict,
    /// Its namespace is being terminated: every create will be refused.
    NamespaceTerminating,
}

impl NewReplicaSet {
    /// How the sync ends when no ReplicaSet was created: a collision is taken again soon; in a
    /// terminating namespace there is nothing to do, and upstream's `handleErr` does not retry.
    fn action(&self) -> Action {
        match self {
            NewReplicaSet::NamespaceTerminating => Action::await_change(),
            NewReplicaSet::Created(_) | NewReplicaSet::Conflict => Action::requeue(super::ERROR_REQUEUE),
        }
    }
}

/// Claim the ReplicaSets of `cached` (the cache's ReplicaSets in the Deployment's namespace).
async fn claim_replica_sets(
    deployment: &Deployment,
    cached: Vec<Arc<ReplicaSet>>,
    api: &Api<ReplicaSet>,
) -> Result<Vec<ReplicaSet>, Error> {
    let uid = deployment.uid().unwrap_or_default();
    let mut owned = Vec::new();
    for rs in cached {
        let selected = labels::matches(&deployment.spec().selector, rs.metadata.labels.as_ref());
        let patch = match owners::claim(&rs.metadata, &uid, selected) {
            Claim::Owned => {
                owned.push(Arc::unwrap_or_clone(rs));
                continue;
            }
            Claim::Ignore => continue,
            Claim::Adopt if deployment.metadata.deletion_timestamp.is_none() => {
                owners::adopt_patch(&rs.metadata, owners::controller_ref(deployment))
            }
            Claim::Adopt => continue,
            Claim::Release => owners::release_patch(&rs.metadata, &uid),
        };
        match api.patch(&rs.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(patched) if owners::is_controlled_by(&patched.metadata, &uid) => owned.push(patched),
            Ok(_) => {}
            Err(e) if has_code(&e, 404) || has_code(&e, 409) || has_code(&e, 422) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(owned)
}

/// `deploymentutil.NewRSNewReplicas` for RollingUpdate: how far the new ReplicaSet may grow now.
fn new_replicas_rolling(deployment: &Deployment, all_spec_replicas: i32, new_spec_replicas: i32) -> i32 {
    let replicas = deployment.spec().replicas.unwrap_or(1);
    let (surge, _) = resolve_fenceposts(deployment);
    let max_total = replicas + surge;
    if all_spec_replicas >= max_total {
        return new_spec_replicas;
    }
    let scale_up = (max_total - all_spec_replicas).min(replicas - new_spec_replicas).max(0);
    new_spec_replicas + scale_up
}
