//! The StatefulSet controller: stable, ordered Pods `<set>-<ordinal>` and their PVCs, rolled
//! from one template revision to the next, as kube-controller-manager's `StatefulSetController`
//! (`pkg/controller/statefulset`).
//!
//! - Pods are read from the controller's Pod informer cache, as upstream reads its Pod lister,
//!   and claimed by controller reference (a matching orphan whose name is one of the set's
//!   ordinals is adopted); syncs start once the cache has its first list. A Pod the lagging cache
//!   does not show yet is created again and answered `AlreadyExists`, which fails the sync to be
//!   retried, as upstream's. ControllerRevisions are read from a cache too
//!   ([`super::controller_revisions`]), and the claims a Pod needs from a claim cache (a claim
//!   the cache does not show yet is created again and answered `AlreadyExists`, then read); the
//!   claims of condemned ordinals with a live list.
//! - Revisions: every template the set has had is a `ControllerRevision` (apps/v1) named
//!   `<set>-<hash>`, labelled `controller.kubernetes.io/hash`, owned by the set, holding the
//!   template as the patch `{"spec":{"template":{..,"$patch":"replace"}}}` and a revision number
//!   (the highest for the current template; a template that comes back moves its old revision
//!   up). `status.updateRevision` names the current template's revision and
//!   `status.currentRevision` the one the set is rolling from; each Pod is labelled
//!   `controller-revision-hash` with the revision it was made from. Revisions no Pod uses, other
//!   than the current and update ones, are deleted beyond `revisionHistoryLimit` (default 10),
//!   oldest first.
//! - Creation (`OrderedReady`): Pod `i + 1` is created only once Pod `i` is Running and Ready,
//!   and has been Ready for more than `minReadySeconds` (virtual clock; the status's
//!   `availableReplicas` counts those too, and the set is synced again while some are ready but
//!   not yet available); a
//!   Failed or Succeeded Pod is deleted and then recreated; a terminating one is waited for. `Parallel`
//!   drops the ordering. A Pod below the RollingUpdate `partition` is made from the current
//!   revision, every other from the update revision.
//! - Before a Pod is created, each `volumeClaimTemplates` entry `tpl` gets its PVC
//!   `<tpl>-<set>-<ordinal>` (template labels plus the selector's `matchLabels`), mounted by the
//!   Pod as volume `tpl`. An existing claim is used as it is, unless it is being deleted (kept
//!   by its protection finalizer while a Pod uses it, [`super::volume_protection`]): then the
//!   Pod is not created ("pvc <name> is being deleted") and the sync is retried until the claim
//!   is gone and can be created anew. A Pending Pod's missing claims are created again (one
//!   deleted while the Pod waited for it to bind).
//! - Scale-down deletes the highest ordinal first, one at a time, and only while every Pod that
//!   stays is Running and Ready.
//! - RollingUpdate: once every Pod is healthy, the highest-ordinal Pod at or above `partition`
//!   whose revision is not the update revision is deleted (and so recreated from it), one at a
//!   time, waiting for each to be Running and Ready again; with `maxUnavailable`, up to that many
//!   are down at once. Once every Pod is updated and ready, the current revision becomes the
//!   update revision. `OnDelete`: Pods are updated only when someone deletes them (and, as
//!   upstream, the current revision never moves on by itself).
//! - PVCs stay after scale-down and after deletion (the default
//!   `persistentVolumeClaimRetentionPolicy` is Retain for both); `whenDeleted: Delete` makes the
//!   set the PVC's owner (so the garbage collector removes it with the set), and `whenScaled:
//!   Delete` deletes a condemned ordinal's PVCs once its Pod is gone.
//! - Status: `replicas`, `readyReplicas`, `currentReplicas`, `updatedReplicas`,
//!   `availableReplicas`, `currentRevision`, `updateRevision`, `collisionCount`,
//!   `observedGeneration`: what `kubectl rollout status sts/<set>` reads.
//! - Events: `SuccessfulCreate` and `SuccessfulDelete` for Pods and claims, and the Warnings
//!   `FailedCreate` (a claim's and then its Pod's, or the Pod's; none for `AlreadyExists`) and
//!   `FailedDelete`, as upstream words them ("create Pod db-0 in StatefulSet db successful",
//!   "create Pod db-0 in StatefulSet db failed error: ...").

use std::collections::BTreeMap;
use std::sync::Arc;

use super::events::Recorder;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::versions::WorkloadSpec;
use sim::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt,
};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::controller_revisions::{self, HASH_LABEL, History, NewRevision, template_of};
use super::error::{Error, has_code, status_message};
use super::owners::{self, Claim};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::templates::{PodName, pod_from_template};
use super::{events, labels, pod_state};

/// The StatefulSet controller's node.
pub const NODE: &str = "statefulset-controller";
/// The label naming a StatefulSet Pod.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding a StatefulSet Pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The label naming the ControllerRevision a Pod was made from (StatefulSet and DaemonSet).
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// `revisionHistoryLimit` when unset.
pub const REVISION_HISTORY_LIMIT_DEFAULT: i32 = 10;

/// Add the StatefulSet controller to a world, on node [`NODE`].
pub fn statefulset_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: Recorder,
    /// The Pod informer's cache, which syncs read.
    pods: Store<Pod>,
    /// The ControllerRevision informer's cache, which the history reads.
    revisions: Store<ControllerRevision>,
    /// The PersistentVolumeClaim informer's cache (upstream's claim lister): a Pod's claims are
    /// looked up there before any is created. Claims trigger no sync, as upstream's.
    claims: Store<PersistentVolumeClaim>,
}

/// The StatefulSet controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let (pods, revisions, claims) = futures::join!(
        super::synced_cache::<Pod>(&client),
        super::synced_cache::<ControllerRevision>(&client),
        super::synced_cache::<PersistentVolumeClaim>(&client)
    );
    let (Some((pods, pod_changes)), Some((revisions, _)), Some((claims, _))) = (pods, revisions, claims)
    else {
        return;
    };
    let controller = Controller::new(Api::<StatefulSet>::all(client.clone()), watcher::Config::default());
    let recorder = events::recorder(&client, NODE);
    let ctx = Arc::new(Context { recorder, client, pods, revisions, claims });
    controller
        .owns_shared_stream(pod_changes)
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The ordinal of `pod_name` if it is one of `set`'s Pods (`<set>-<ordinal>`).
pub fn ordinal_of(set: &str, pod_name: &str) -> Option<i32> {
    let ordinal = pod_name.strip_prefix(set)?.strip_prefix('-')?;
    // "01" is not an ordinal the controller would have made.
    if ordinal.len() > 1 && ordinal.starts_with('0') {
        return None;
    }
    ordinal.parse().ok().filter(|o: &i32| *o >= 0)
}

/// The PVC name of claim template `template` for ordinal `ordinal` of `set`.
pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

fn policy_deletes(
    set: &StatefulSet,
    when: fn(&k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy) -> Option<&String>,
) -> bool {
    set.spec().persistent_volume_claim_retention_policy.as_ref().and_then(when).is_some_and(|p| p == "Delete")
}

fn is_on_delete(set: &StatefulSet) -> bool {
    set.spec().update_strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("OnDelete")
}

/// The RollingUpdate `partition` (0 when unset).
fn partition(set: &StatefulSet) -> i32 {
    set.spec()
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.partition)
        .unwrap_or(0)
        .max(0)
}

/// The RollingUpdate `maxUnavailable` against `replicas` (rounded down, at least 1), if set.
fn max_unavailable(set: &StatefulSet, replicas: i32) -> Option<i32> {
    let value = set.spec().update_strategy.as_ref()?.rolling_update.as_ref()?.max_unavailable.as_ref()?;
    let n = match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => {
            let percent: i64 = s.strip_suffix('%').and_then(|p| p.parse().ok()).unwrap_or(0);
            i32::try_from(percent * i64::from(replicas) / 100).unwrap_or(i32::MAX)
        }
    };
    Some(n.max(1))
}

/// The revision a Pod was made from (its `controller-revision-hash` label).
pub fn pod_revision(pod: &Pod) -> Option<&str> {
    pod.labels().get(REVISION_LABEL).map(String::as_str)
}

/// Running, ready, and ready for more than the set's `minReadySeconds` (upstream's
/// `isRunningAndAvailable`).
fn is_running_and_available(set: &StatefulSet, pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> bool {
    pod_state::is_running_and_ready(pod)
        && pod_state::ready_for_at_least(pod, set.spec().min_ready_seconds, now)
}

fn is_healthy(pod: &Pod) -> bool {
    pod_state::is_running_and_ready(pod) && !pod_state::is_terminating(pod)
}

/// Sync one StatefulSet.
pub async fn reconcile(set: Arc<StatefulSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = set.name_any();
    let namespace =
        set.namespace().ok_or(Error::MissingNamespace { kind: "StatefulSet", name: name.clone() })?;
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if labels::is_empty(&set.spec().selector) {
        let reason = "empty selector is invalid for statefulset".to_owned();
        return Err(Error::InvalidSpec { kind: "StatefulSet", name, reason });
    }
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let history = History::new(&ctx.client, &namespace, &ctx.revisions);
    let cached = ctx.pods.state_filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()));
    let pods = claim_pods(&set, cached, &pods_api).await?;
    let revisions = history.list(&set.uid().unwrap_or_default());
    let (current, update, collision_count) = current_and_update(&set, &history, &revisions).await?;
    let sync = Sync {
        set: &set,
        ctx: &ctx,
        pods_api: &pods_api,
        claims_api: &claims_api,
        current: &current,
        update: &update,
    };
    let start = set.spec().ordinals.as_ref().and_then(|o| o.start).unwrap_or(0).max(0);
    let replicas = set.spec().replicas.unwrap_or(1).max(0);
    let wanted = start..start.saturating_add(replicas);
    let ordered = set.spec().pod_management_policy.as_deref() != Some("Parallel");
    let now = sim::time::now();
    let status = status_of(&set, &pods, &current, &update, collision_count, now);
    // Every ready replica that is not available yet is looked at again `minReadySeconds` later
    // (upstream's `durationStore`): no Pod event marks the moment it becomes so.
    let min_ready = set.spec().min_ready_seconds.unwrap_or(0);
    let recheck = (min_ready > 0 && status.ready_replicas != status.available_replicas)
        .then(|| std::time::Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)));
    // The creates, deletes and updates, in upstream's order; a failed one ends them, and the
    // status computed before them is written all the same (upstream's `performUpdate`), so a
    // set whose next Pod is refused (a quota, a terminating namespace) still reports the
    // replicas it has.
    let synced: Result<(), Error> = async {
        // Scale up and repair, lowest ordinal first.
        let mut blocked = false;
        for ordinal in wanted.clone() {
            let healthy = match pods.get(&ordinal) {
                None => {
                    sync.create_claims(ordinal, ClaimsFor::NewPod).await?;
                    sync.create_pod(ordinal, start).await?;
                    false
                }
                // Succeeded too: a Pod stopped by an eviction or a node reboot ends in the phase its
                // container's exit code gives (upstream's `isFailed || isSucceeded`).
                Some(pod) if pod_state::is_finished(pod) && !pod_state::is_terminating(pod) => {
                    sync.delete_pod(pod).await?;
                    false
                }
                Some(pod) => {
                    // A Pending Pod gets its missing claims again (upstream's
                    // `createMissingPersistentVolumeClaims`): one deleted while the Pod waited for it
                    // to bind would otherwise keep it Pending for ever.
                    if pod_state::phase(pod) == pod_state::PHASE_PENDING {
                        sync.create_claims(ordinal, ClaimsFor::PendingPod).await?;
                    }
                    // The next ordinal waits for this one to be available, not only ready.
                    is_healthy(pod) && is_running_and_available(&set, pod, now)
                }
            };
            if !healthy && ordered {
                blocked = true;
                break;
            }
        }
        // Scale down, highest ordinal first, once every remaining Pod is healthy.
        let condemned: Vec<&Pod> =
            pods.iter().rev().filter(|(o, _)| !wanted.contains(o)).map(|(_, p)| p).collect();
        if !blocked {
            for pod in &condemned {
                if !pod_state::is_terminating(pod) {
                    sync.delete_pod(pod).await?;
                }
                if ordered {
                    break;
                }
            }
            if policy_deletes(&set, |p| p.when_scaled.as_ref()) {
                delete_condemned_claims(&set, &pods, &wanted, &claims_api).await?;
            }
        }
        if !blocked && condemned.is_empty() && !is_on_delete(&set) {
            sync.rolling_update(&pods, &wanted, start).await?;
        }
        Ok(())
    }
    .await;
    if let Err(error) = synced {
        if let Err(status_error) = update_status(&set, status, &ctx.client, &namespace).await {
            tracing::debug!(%status_error, "status not written after a failed sync");
        }
        return Err(error);
    }
    let live: Vec<&str> = pods.values().filter_map(pod_revision).collect();
    let kept = |r: &ControllerRevision| {
        let name = r.name_any();
        live.contains(&name.as_str()) || name == current.name_any() || name == update.name_any()
    };
    let limit = set.spec().revision_history_limit.unwrap_or(REVISION_HISTORY_LIMIT_DEFAULT);
    history.truncate(&revisions, kept, limit).await?;
    update_status(&set, status, &ctx.client, &namespace).await?;
    Ok(recheck.map_or_else(Action::await_change, Action::requeue))
}

/// Why a sync makes a Pod's claims: for the Pod it is about to create, whose failed create is
/// reported when they fail, or for a Pending Pod that may have lost one (no Pod event then, as
/// upstream's `createMissingPersistentVolumeClaims`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClaimsFor {
    NewPod,
    PendingPod,
}

/// What one sync writes through.
struct Sync<'a> {
    set: &'a StatefulSet,
    ctx: &'a Context,
    pods_api: &'a Api<Pod>,
    claims_api: &'a Api<PersistentVolumeClaim>,
    current: &'a ControllerRevision,
    update: &'a ControllerRevision,
}

impl Sync<'_> {
    /// RollingUpdate: delete the highest-ordinal Pod at or above the partition that is not at the
    /// update revision, waiting for unhealthy Pods first (up to `maxUnavailable` at once when
    /// set).
    async fn rolling_update(
        &self,
        pods: &BTreeMap<i32, Pod>,
        wanted: &std::ops::Range<i32>,
        start: i32,
    ) -> Result<(), Error> {
        let update_name = self.update.name_any();
        let update_min = start.saturating_add(partition(self.set));
        let in_range: Vec<(&i32, &Pod)> = pods.iter().filter(|(o, _)| wanted.contains(o)).rev().collect();
        let outdated =
            |pod: &Pod| pod_revision(pod) != Some(update_name.as_str()) && !pod_state::is_terminating(pod);
        if let Some(max_unavailable) = max_unavailable(self.set, wanted.len().try_into().unwrap_or(i32::MAX))
        {
            let unavailable = in_range.iter().filter(|(_, p)| !is_healthy(p)).count();
            let mut budget = usize::try_from(max_unavailable).unwrap_or(0).saturating_sub(unavailable);
            for (_, pod) in in_range.iter().filter(|(o, _)| **o >= update_min) {
                if budget == 0 {
                    break;
                }
                if outdated(pod) {
                    self.delete_pod(pod).await?;
                    budget -= 1;
                }
            }
            return Ok(());
        }
        for (_, pod) in in_range.iter().filter(|(o, _)| **o >= update_min) {
            if outdated(pod) {
                return self.delete_pod(pod).await;
            }
            if !is_healthy(pod) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Create every missing PVC of `ordinal`, as found in the claim cache (upstream's
    /// `createPersistentVolumeClaims`): an existing one, whoever made it, is used as it is, but
    /// one being deleted fails the sync ("pvc <name> is being deleted"; for a new Pod, reported
    /// as its failed create), to be retried until it is gone and can be made anew.
    async fn create_claims(&self, ordinal: i32, purpose: ClaimsFor) -> Result<(), Error> {
        let set = self.set;
        let set_name = set.name_any();
        let namespace = set.namespace().unwrap_or_default();
        let pod = format!("{set_name}-{ordinal}");
        let owner: Option<OwnerReference> = policy_deletes(set, |p| p.when_deleted.as_ref())
            .then(|| OwnerReference { controller: None, ..owners::controller_ref(set) });
        for template in set.spec().volume_claim_templates.iter().flatten() {
            let template_name = template.name_any();
            let name = claim_name(&template_name, &set_name, ordinal);
            match self.ctx.claims.get(&ObjectRef::new(&name).within(&namespace)) {
                Some(cached) if cached.metadata.deletion_timestamp.is_some() => {
                    return Err(self.claim_being_deleted(&name, &pod, purpose).await);
                }
                Some(_) => continue,
                None => {}
            }
            let mut labels = template.metadata.labels.clone().unwrap_or_default();
            labels.extend(set.spec().selector.match_labels.clone().unwrap_or_default());
            let claim = PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: set.namespace(),
                    labels: Some(labels),
                    annotations: template.metadata.annotations.clone(),
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..ObjectMeta::default()
                },
                spec: template.spec.clone(),
                status: None,
            };
            match self.claims_api.create(&PostParams::default(), &claim).await {
                Ok(_) => {
                    let message = format!("create Claim {name} Pod {pod} in StatefulSet {set_name} success");
                    events::normal(&self.ctx.recorder, &events::reference(set), "SuccessfulCreate", message)
                        .await;
                }
                // Made since the cache last heard (by an earlier sync, or by the user): used as
                // it is, if it is really there and not being deleted.
                Err(e) if has_code(&e, 409) => match self.claims_api.get_opt(&name).await? {
                    None => return Err(e.into()),
                    Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                        return Err(self.claim_being_deleted(&name, &pod, purpose).await);
                    }
                    Some(_) => {}
                },
                Err(e) => {
                    // Upstream's claim event, then the Pod's (its `createPersistentVolumeClaims`
                    // error, which stops the Pod's create).
                    let error = status_message(&e);
                    let message = format!(
                        "create Claim {name} for Pod {pod} in StatefulSet {set_name} failed error: {error}"
                    );
                    events::warning(&self.ctx.recorder, &events::reference(set), "FailedCreate", message)
                        .await;
                    if purpose == ClaimsFor::NewPod {
                        let message = format!(
                            "create Pod {pod} in StatefulSet {set_name} failed error: failed to create PVC {name}: {error}"
                        );
                        events::warning(&self.ctx.recorder, &events::reference(set), "FailedCreate", message)
                            .await;
                    }
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }

    /// The error of a claim found being deleted, reported as the failed create of `pod` when it
    /// was to be created.
    async fn claim_being_deleted(&self, name: &str, pod: &str, purpose: ClaimsFor) -> Error {
        let error = Error::ClaimBeingDeleted { name: name.to_owned() };
        if purpose == ClaimsFor::NewPod {
            let set_name = self.set.name_any();
            let message =
                format!("create Pod {pod} in StatefulSet {set_name} failed error: {}", error.message());
            events::warning(&self.ctx.recorder, &events::reference(self.set), "FailedCreate", message).await;
        }
        error
    }

    /// Create Pod `ordinal` from the current revision (below the partition) or the update one.
    async fn create_pod(&self, ordinal: i32, start: i32) -> Result<(), Error> {
        let set = self.set;
        let set_name = set.name_any();
        let name = format!("{set_name}-{ordinal}");
        let namespace = set.namespace().unwrap_or_default();
        let from_current = !is_on_delete(set) && ordinal < start.saturating_add(partition(set));
        let revision = if from_current { self.current } else { self.update };
        let template = template_of(revision).unwrap_or_else(|| set.spec().template.clone());
        let mut pod = pod_from_template(
            &template,
            PodName::Fixed(name.clone()),
            &namespace,
            owners::controller_ref(set),
        );
        let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(POD_NAME_LABEL.to_owned(), name.clone());
        labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
        labels.insert(REVISION_LABEL.to_owned(), revision.name_any());
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.hostname = Some(name.clone());
        spec.subdomain = set.spec().service_name.clone().filter(|s| !s.is_empty());
        let volumes = spec.volumes.get_or_insert_with(Vec::new);
        for template in set.spec().volume_claim_templates.iter().flatten() {
            let volume_name = template.name_any();
            volumes.retain(|v| v.name != volume_name);
            volumes.push(Volume {
                name: volume_name.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name(&volume_name, &set_name, ordinal),
                    read_only: None,
                }),
                ..Volume::default()
            });
        }
        // A 409 (a Pod the lagging cache does not show yet, one created by an earlier sync whose
        // answer was lost, or a fault) fails the sync, which is retried, as upstream's
        // `AlreadyExists`: the cache shows which once it catches up. Upstream publishes no event
        // for it, and a Warning for any other failure.
        match self.pods_api.create(&PostParams::default(), &pod).await {
            Ok(_) => {
                let message = format!("create Pod {name} in StatefulSet {set_name} successful");
                events::normal(&self.ctx.recorder, &events::reference(set), "SuccessfulCreate", message)
                    .await;
                Ok(())
            }
            Err(e) if has_code(&e, 409) => Err(e.into()),
            Err(e) => {
                let error = status_message(&e);
                let message = format!("create Pod {name} in StatefulSet {set_name} failed error: {error}");
                events::warning(&self.ctx.recorder, &events::reference(set), "FailedCreate", message).await;
                Err(e.into())
            }
        }
    }

    async fn delete_pod(&self, pod: &Pod) -> Result<(), Error> {
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: pod.uid(), resource_version: None }),
            ..DeleteParams::default()
        };
        match self.pods_api.delete(&pod.name_any(), &params).await {
            Ok(_) => {
                let message = format!(
                    "delete Pod {} in StatefulSet {} successful",
                    pod.name_any(),
                    self.set.name_any()
                );
                events::normal(&self.ctx.recorder, &events::reference(self.set), "SuccessfulDelete", message)
                    .await;
                Ok(())
            }
            // Upstream publishes the failure of any delete (a Pod gone already too, which is
            // done here; a 409 is retried: a fault's 409 changes nothing that would trigger a
            // sync).
            Err(e) => {
                let message = format!(
                    "delete Pod {} in StatefulSet {} failed error: {}",
                    pod.name_any(),
                    self.set.name_any(),
                    status_message(&e)
                );
                events::warning(&self.ctx.recorder, &events::reference(self.set), "FailedDelete", message)
                    .await;
                if has_code(&e, 404) { Ok(()) } else { Err(e.into()) }
            }
        }
    }
}

/// `getStatefulSetRevisions`: the current revision (the status's, else the update one), the
/// update revision (the current template's), and the collision count used.
async fn current_and_update(
    set: &StatefulSet,
    history: &History<'_>,
    revisions: &[ControllerRevision],
) -> Result<(ControllerRevision, ControllerRevision, Option<i32>), Error> {
    let data = controller_revisions::revision_data(&set.spec().template);
    let mut collision_count = set.status.as_ref().and_then(|s| s.collision_count);
    let bytes = serde_json::to_vec(&data).unwrap_or_default();
    let hash_for = |count: Option<i32>| controller_revisions::hash(&bytes, count);
    let namespace = set.namespace().unwrap_or_default();
    let new = NewRevision {
        owner: owners::controller_ref(set),
        namespace: &namespace,
        labels: set.spec().template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default(),
        hash_label: HASH_LABEL,
        data: data.clone(),
        hash_for: &hash_for,
    };
    let update = history.update_revision(revisions, new, &mut collision_count).await?;
    let current_name = set.status.as_ref().and_then(|s| s.current_revision.clone());
    let current = revisions
        .iter()
        .find(|r| Some(r.name_any()) == current_name)
        .cloned()
        .unwrap_or_else(|| update.clone());
    Ok((current, update, collision_count))
}

/// The set's Pods by ordinal among `cached` (the cache's Pods in its namespace), after claiming
/// (adopting orphans that match and carry one of the set's ordinal names, releasing owned Pods
/// that stopped matching).
async fn claim_pods(
    set: &StatefulSet,
    cached: Vec<Arc<Pod>>,
    api: &Api<Pod>,
) -> Result<BTreeMap<i32, Pod>, Error> {
    let uid = set.uid().unwrap_or_default();
    let name = set.name_any();
    let mut pods = BTreeMap::new();
    for pod in cached {
        let Some(ordinal) = ordinal_of(&name, &pod.name_any()) else { continue };
        let selected = labels::matches(&set.spec().selector, pod.metadata.labels.as_ref());
        let patch = match owners::claim(&pod.metadata, &uid, selected) {
            Claim::Owned => {
                pods.insert(ordinal, Arc::unwrap_or_clone(pod));
                continue;
            }
            Claim::Ignore => continue,
            Claim::Adopt => owners::adopt_patch(&pod.metadata, owners::controller_ref(set)),
            Claim::Release => owners::release_patch(&pod.metadata, &uid),
        };
        match api.patch(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(patched) if owners::is_controlled_by(&patched.metadata, &uid) => {
                pods.insert(ordinal, patched);
            }
            Ok(_) => {}
            Err(e) if has_code(&e, 404) || has_code(&e, 409) || has_code(&e, 422) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(pods)
}

/// `whenScaled: Delete`: the PVCs of ordinals no longer wanted, once their Pods are gone.
async fn delete_condemned_claims(
    set: &StatefulSet,
    pods: &BTreeMap<i32, Pod>,
    wanted: &std::ops::Range<i32>,
    api: &Api<PersistentVolumeClaim>,
) -> Result<(), Error> {
    let set_name = set.name_any();
    let templates: Vec<String> =
        set.spec().volume_claim_templates.iter().flatten().map(|t| t.name_any()).collect();
    for claim in api.list(&ListParams::default()).await?.items {
        let claim_name = claim.name_any();
        let ordinal = templates.iter().find_map(|t| {
            let rest = claim_name.strip_prefix(t.as_str())?.strip_prefix('-')?;
            ordinal_of(&set_name, rest)
        });
        let Some(ordinal) = ordinal else { continue };
        if wanted.contains(&ordinal)
            || pods.contains_key(&ordinal)
            || claim.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: claim.uid(), resource_version: None }),
            ..DeleteParams::default()
        };
        match api.delete(&claim_name, &params).await {
            Ok(_) => {}
            Err(e) if has_code(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The status the set's Pods give (`computeReplicaStatus` and `completeRollingUpdate`).
fn status_of(
    set: &StatefulSet,
    pods: &BTreeMap<i32, Pod>,
    current: &ControllerRevision,
    update: &ControllerRevision,
    collision_count: Option<i32>,
    now: k8s_openapi::jiff::Timestamp,
) -> StatefulSetStatus {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (current_name, update_name) = (current.name_any(), update.name_any());
    let live = || pods.values().filter(|p| !pod_state::is_terminating(p));
    let at = |name: &str| count(live().filter(|p| pod_revision(p) == Some(name)).count());
    let mut status = StatefulSetStatus {
        replicas: count(pods.len()),
        ready_replicas: Some(count(pods.values().filter(|p| pod_state::is_running_and_ready(p)).count())),
        available_replicas: Some(count(
            pods.values().filter(|p| is_running_and_available(set, p, now)).count(),
        )),
        current_replicas: Some(at(&current_name)),
        updated_replicas: Some(at(&update_name)),
        observed_generation: set.metadata.generation,
        collision_count,
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
        current_revision: Some(current_name),
        update_revision: Some(update_name),
    };
    let replicas = set.spec().replicas.unwrap_or(1);
    if !is_on_delete(set)
        && status.updated_replicas == Some(replicas)
        && status.ready_replicas == Some(replicas)
        && status.replicas == replicas
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
    status
}

async fn update_status(
    set: &StatefulSet,
    status: StatefulSetStatus,
    client: &sim::Client,
    namespace: &str,
) -> Result<(), Error> {
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    super::status_patch::write(&api, &set.name_any(), set.status.as_ref(), &status).await
}
