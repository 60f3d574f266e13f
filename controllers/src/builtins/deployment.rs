//! The Deployment controller: Deployment → ReplicaSets, with the RollingUpdate and Recreate
//! strategies, as kube-controller-manager's `DeploymentController`.
//!
//! - ReplicaSets are claimed by controller reference (adopt matching orphans, release
//!   non-matching), read with a live list at each sync.
//! - The ReplicaSet of the current template (the "new" one) is named
//!   `<deployment>-<pod-template-hash>`; the hash ([`template_hash`]) also becomes the
//!   `pod-template-hash` label of its selector, template and Pods, so ReplicaSets of different
//!   templates never select each other's Pods.
//! - Each ReplicaSet carries `deployment.kubernetes.io/revision`; the new one always has the
//!   highest, so rolling back to an old template gives its ReplicaSet a new revision.
//! - RollingUpdate scales the new ReplicaSet up while the sum of every ReplicaSet's
//!   `spec.replicas` stays within `replicas + maxSurge`, and old ones down while the available
//!   Pods stay at least `replicas - maxUnavailable` (defaults 25 % and 25 %, surge rounded up,
//!   unavailable rounded down; both 0 means maxUnavailable 1).
//! - Once a rollout completes, old ReplicaSets scaled to zero beyond `revisionHistoryLimit`
//!   (default 10) are deleted, oldest revision first.
//! - Status: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`,
//!   `unavailableReplicas`, `observedGeneration`, `collisionCount`, and the `Available` and
//!   `Progressing` conditions (without timestamps: `sim` has no virtual wall clock for
//!   controllers yet).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sim::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt,
};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code};
use super::owners::{self, Claim};
use super::{hashing, labels};

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
}

/// The Deployment controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let controller = Controller::new(Api::<Deployment>::all(client.clone()), watcher::Config::default());
    let deployments = controller.store();
    controller
        .watches(Api::<ReplicaSet>::all(client.clone()), watcher::Config::default(), move |rs: ReplicaSet| {
            owners_of_replica_set(&rs, &deployments)
        })
        .run(reconcile, super::retry_soon, Arc::new(Context { client }))
        .for_each(|_| futures::future::ready(()))
        .await;
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
            .filter(|d| labels::matches(&d.spec.selector, rs.metadata.labels.as_ref()))
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
fn equal_ignore_hash(rs_template: Option<&PodTemplateSpec>, template: &PodTemplateSpec) -> bool {
    let Some(rs_template) = rs_template else { return false };
    let mut rs_template = rs_template.clone();
    if let Some(labels) = rs_template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    let normalize = |t: &PodTemplateSpec| {
        let mut value = serde_json::to_value(t).unwrap_or_default();
        // An empty label map and no label map are the same template.
        if value.pointer("/metadata/labels").and_then(|l| l.as_object()).is_some_and(|l| l.is_empty())
            && let Some(meta) = value.pointer_mut("/metadata").and_then(|m| m.as_object_mut())
        {
            meta.remove("labels");
        }
        value
    };
    normalize(&rs_template) == normalize(template)
}

/// `maxSurge` and `maxUnavailable` resolved against `replicas`, as
/// `deploymentutil.ResolveFenceposts`: surge rounds up, unavailable down, and both 0 would stall
/// a rollout, so unavailable becomes 1.
pub fn resolve_fenceposts(deployment: &Deployment) -> (i32, i32) {
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let rolling = deployment.spec.strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
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
    rs.spec.replicas.unwrap_or(1)
}

fn available(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

fn is_recreate(deployment: &Deployment) -> bool {
    deployment.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate")
}

/// Sync one Deployment.
pub async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = deployment.name_any();
    let namespace =
        deployment.namespace().ok_or(Error::MissingNamespace { kind: "Deployment", name: name.clone() })?;
    if deployment.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if labels::is_empty(&deployment.spec.selector) {
        let reason = "empty selector is invalid for deployment".to_owned();
        return Err(Error::InvalidSpec { kind: "Deployment", name, reason });
    }
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut owned = claim_replica_sets(&deployment, &api).await?;
    owned.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref(), a.metadata.name.as_ref())
            .cmp(&(b.metadata.creation_timestamp.as_ref(), b.metadata.name.as_ref()))
    });
    let template = &deployment.spec.template;
    let (new, old): (Vec<ReplicaSet>, Vec<ReplicaSet>) =
        owned.into_iter().partition(|rs| equal_ignore_hash(rs.spec.template.as_ref(), template));
    // Several equal templates only after a hash collision: the oldest is the new one.
    let mut new = new.into_iter();
    let new_rs = new.next();
    let old: Vec<ReplicaSet> = old.into_iter().chain(new).collect();
    let max_old_revision = old.iter().map(revision).max().unwrap_or(0);
    let new_rs = match new_rs {
        Some(rs) if revision(&rs) <= max_old_revision => {
            let patch = serde_json::json!({ "metadata": { "annotations": {
                REVISION_ANNOTATION: (max_old_revision + 1).to_string() } } });
            api.patch(&rs.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?
        }
        Some(rs) => rs,
        None => match create_new_replica_set(&deployment, &old, max_old_revision + 1, &api).await? {
            Some(rs) => rs,
            None => return Ok(Action::requeue(super::ERROR_REQUEUE)),
        },
    };
    let scaled = if is_recreate(&deployment) {
        rollout_recreate(&deployment, &new_rs, &old, &api).await?
    } else {
        rollout_rolling(&deployment, &new_rs, &old, &api).await?
    };
    let status = status_of(&deployment, &new_rs, &old);
    if !scaled && is_complete(&deployment, &status) {
        cleanup(&deployment, &old, &api).await?;
    }
    update_status(&deployment, status, &ctx.client, &namespace).await?;
    Ok(Action::await_change())
}

/// Claim the ReplicaSets of the Deployment's namespace.
async fn claim_replica_sets(
    deployment: &Deployment,
    api: &Api<ReplicaSet>,
) -> Result<Vec<ReplicaSet>, Error> {
    let uid = deployment.uid().unwrap_or_default();
    let mut owned = Vec::new();
    for rs in api.list(&ListParams::default()).await?.items {
        let selected = labels::matches(&deployment.spec.selector, rs.metadata.labels.as_ref());
        let patch = match owners::claim(&rs.metadata, &uid, selected) {
            Claim::Owned => {
                owned.push(rs);
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

/// Create the ReplicaSet of the current template. `None` after a name collision (the
/// Deployment's `collisionCount` is bumped, so the next sync hashes differently).
async fn create_new_replica_set(
    deployment: &Deployment,
    old: &[ReplicaSet],
    revision: i64,
    api: &Api<ReplicaSet>,
) -> Result<Option<ReplicaSet>, Error> {
    let collision_count = deployment.status.as_ref().and_then(|s| s.collision_count);
    let hash = template_hash(&deployment.spec.template, collision_count);
    let mut template = deployment.spec.template.clone();
    let template_meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    template_meta
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
    let mut selector: LabelSelector = deployment.spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
    let replicas = if is_recreate(deployment) {
        0
    } else {
        new_replicas_rolling(deployment, old.iter().map(spec_replicas).sum(), 0)
    };
    let (surge, _) = resolve_fenceposts(deployment);
    let desired = deployment.spec.replicas.unwrap_or(1);
    let name = format!("{}-{hash}", deployment.name_any());
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: deployment.namespace(),
            labels: template_meta.labels.clone(),
            annotations: Some(BTreeMap::from([
                (REVISION_ANNOTATION.to_owned(), revision.to_string()),
                (DESIRED_REPLICAS_ANNOTATION.to_owned(), desired.to_string()),
                (MAX_REPLICAS_ANNOTATION.to_owned(), (desired + surge).to_string()),
            ])),
            owner_references: Some(vec![owners::controller_ref(deployment)]),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: deployment.spec.min_ready_seconds,
            selector,
            template: Some(template),
        },
        status: None,
    };
    match api.create(&PostParams::default(), &rs).await {
        Ok(created) => Ok(Some(created)),
        Err(e) if has_code(&e, 409) => {
            // Ours already (created by an earlier sync whose answer was lost): found next sync.
            let Some(existing) = api.get_opt(&name).await? else {
                // Nothing of that name after all (the 409 did not come from the server's store):
                // retry.
                return Err(e.into());
            };
            let ours =
                owners::is_controlled_by(&existing.metadata, deployment.uid().as_deref().unwrap_or_default())
                    && equal_ignore_hash(existing.spec.template.as_ref(), &deployment.spec.template);
            if !ours {
                let count = collision_count.unwrap_or(0).saturating_add(1);
                let deployments: Api<Deployment> =
                    Api::namespaced(api.clone().into_client(), api.namespace().unwrap_or_default());
                let patch = serde_json::json!({ "status": { "collisionCount": count } });
                deployments
                    .patch_status(&deployment.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// `deploymentutil.NewRSNewReplicas` for RollingUpdate: how far the new ReplicaSet may grow now.
fn new_replicas_rolling(deployment: &Deployment, all_spec_replicas: i32, new_spec_replicas: i32) -> i32 {
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let (surge, _) = resolve_fenceposts(deployment);
    let max_total = replicas + surge;
    if all_spec_replicas >= max_total {
        return new_spec_replicas;
    }
    let scale_up = (max_total - all_spec_replicas).min(replicas - new_spec_replicas).max(0);
    new_spec_replicas + scale_up
}

/// Set a ReplicaSet's `spec.replicas` (and the replica annotations).
async fn scale(
    deployment: &Deployment,
    rs: &ReplicaSet,
    replicas: i32,
    api: &Api<ReplicaSet>,
) -> Result<(), Error> {
    let (surge, _) = resolve_fenceposts(deployment);
    let desired = deployment.spec.replicas.unwrap_or(1);
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": rs.resource_version(),
            "annotations": {
                DESIRED_REPLICAS_ANNOTATION: desired.to_string(),
                MAX_REPLICAS_ANNOTATION: (desired + surge).to_string(),
            },
        },
        "spec": { "replicas": replicas },
    });
    // The resourceVersion makes the patch conditional: scaling from a stale view gets 409 and the
    // sync is retried from a fresh list.
    api.patch(&rs.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// RollingUpdate: scale the new ReplicaSet up, else old ones down. `true` if anything was
/// scaled.
async fn rollout_rolling(
    deployment: &Deployment,
    new_rs: &ReplicaSet,
    old: &[ReplicaSet],
    api: &Api<ReplicaSet>,
) -> Result<bool, Error> {
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let old_total: i32 = old.iter().map(spec_replicas).sum();
    let all_total = old_total + spec_replicas(new_rs);
    // reconcileNewReplicaSet
    let new_count = if spec_replicas(new_rs) > replicas {
        replicas
    } else {
        new_replicas_rolling(deployment, all_total, spec_replicas(new_rs))
    };
    if new_count != spec_replicas(new_rs) {
        scale(deployment, new_rs, new_count, api).await?;
        return Ok(true);
    }
    // reconcileOldReplicaSets
    if old_total == 0 {
        return Ok(false);
    }
    let (_, max_unavailable) = resolve_fenceposts(deployment);
    let min_available = replicas - max_unavailable;
    let new_unavailable = (spec_replicas(new_rs) - available(new_rs)).max(0);
    let mut max_scaled_down = all_total - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Ok(false);
    }
    let mut scaled = false;
    // cleanupUnhealthyReplicas: old Pods that are not available go first.
    let mut current: Vec<(ReplicaSet, i32)> = old.iter().map(|rs| (rs.clone(), spec_replicas(rs))).collect();
    for (rs, count) in current.iter_mut() {
        if max_scaled_down <= 0 {
            break;
        }
        let unhealthy = (*count - available(rs)).max(0).min(max_scaled_down);
        if *count == 0 || unhealthy == 0 {
            continue;
        }
        *count -= unhealthy;
        max_scaled_down -= unhealthy;
        scale(deployment, rs, *count, api).await?;
        scaled = true;
    }
    if scaled {
        return Ok(true);
    }
    // scaleDownOldReplicaSetsForRollingUpdate: then available ones, oldest first, keeping
    // min_available.
    let available_total: i32 = old.iter().map(available).sum::<i32>() + available(new_rs);
    let mut to_scale_down = available_total - min_available;
    for (rs, count) in &current {
        if to_scale_down <= 0 {
            break;
        }
        if *count == 0 {
            continue;
        }
        let down = (*count).min(to_scale_down);
        scale(deployment, rs, count - down, api).await?;
        to_scale_down -= down;
        scaled = true;
    }
    Ok(scaled)
}

/// Recreate: scale every old ReplicaSet to zero, wait until their Pods are gone, then scale the
/// new one up. `true` if anything was scaled.
async fn rollout_recreate(
    deployment: &Deployment,
    new_rs: &ReplicaSet,
    old: &[ReplicaSet],
    api: &Api<ReplicaSet>,
) -> Result<bool, Error> {
    let mut scaled = false;
    for rs in old.iter().filter(|rs| spec_replicas(rs) > 0) {
        scale(deployment, rs, 0, api).await?;
        scaled = true;
    }
    let old_pods: i32 = old.iter().map(|rs| rs.status.as_ref().map_or(0, |s| s.replicas)).sum();
    if scaled || old_pods > 0 {
        return Ok(scaled);
    }
    let replicas = deployment.spec.replicas.unwrap_or(1);
    if spec_replicas(new_rs) != replicas {
        scale(deployment, new_rs, replicas, api).await?;
        return Ok(true);
    }
    Ok(false)
}

/// Delete old ReplicaSets scaled to zero beyond `revisionHistoryLimit`, oldest revision first.
async fn cleanup(deployment: &Deployment, old: &[ReplicaSet], api: &Api<ReplicaSet>) -> Result<(), Error> {
    let limit =
        usize::try_from(deployment.spec.revision_history_limit.unwrap_or(REVISION_HISTORY_LIMIT_DEFAULT))
            .unwrap_or(0);
    let mut idle: Vec<&ReplicaSet> = old
        .iter()
        .filter(|rs| {
            spec_replicas(rs) == 0
                && rs.status.as_ref().is_none_or(|s| s.replicas == 0)
                && rs.metadata.deletion_timestamp.is_none()
        })
        .collect();
    if idle.len() <= limit {
        return Ok(());
    }
    idle.sort_by_key(|rs| (revision(rs), rs.metadata.name.clone()));
    let surplus = idle.len() - limit;
    for rs in idle.into_iter().take(surplus) {
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: rs.uid(), resource_version: None }),
            ..DeleteParams::default()
        };
        match api.delete(&rs.name_any(), &params).await {
            Ok(_) => {}
            // Gone already. (A 409 is retried: a fault can answer it without a change to see.)
            Err(e) if has_code(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn is_complete(deployment: &Deployment, status: &DeploymentStatus) -> bool {
    let replicas = deployment.spec.replicas.unwrap_or(1);
    status.updated_replicas == Some(replicas)
        && status.replicas == Some(replicas)
        && status.available_replicas == Some(replicas)
        && status.observed_generation >= deployment.metadata.generation
}

fn condition(type_: &str, status: bool, reason: &str, message: String) -> DeploymentCondition {
    DeploymentCondition {
        type_: Some(type_.to_owned()),
        status: Some(if status { "True" } else { "False" }.to_owned()),
        reason: Some(reason.to_owned()),
        message: Some(message),
        ..DeploymentCondition::default()
    }
}

/// The status the ReplicaSets give, with the `Available` and `Progressing` conditions.
fn status_of(deployment: &Deployment, new_rs: &ReplicaSet, old: &[ReplicaSet]) -> DeploymentStatus {
    let all = || old.iter().chain(std::iter::once(new_rs));
    let sum = |f: fn(&ReplicaSet) -> i32| all().map(f).sum::<i32>();
    let replicas = sum(|rs| rs.status.as_ref().map_or(0, |s| s.replicas));
    let ready = sum(|rs| rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0));
    let available_replicas = sum(available);
    let updated = new_rs.status.as_ref().map_or(0, |s| s.replicas);
    let desired = deployment.spec.replicas.unwrap_or(1);
    let (_, max_unavailable) = resolve_fenceposts(deployment);
    let available_condition = if available_replicas >= desired - max_unavailable {
        condition(
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".to_owned(),
        )
    } else {
        let message = "Deployment does not have minimum availability.".to_owned();
        condition("Available", false, "MinimumReplicasUnavailable", message)
    };
    let rs_name = new_rs.name_any();
    let progressing = if updated == desired && replicas == desired && available_replicas == desired {
        let message = format!("ReplicaSet \"{rs_name}\" has successfully progressed.");
        condition("Progressing", true, "NewReplicaSetAvailable", message)
    } else {
        condition(
            "Progressing",
            true,
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{rs_name}\" is progressing."),
        )
    };
    DeploymentStatus {
        replicas: Some(replicas),
        updated_replicas: Some(updated),
        ready_replicas: Some(ready),
        available_replicas: Some(available_replicas),
        unavailable_replicas: Some((desired - available_replicas).max(0)),
        observed_generation: deployment.metadata.generation,
        collision_count: deployment.status.as_ref().and_then(|s| s.collision_count),
        conditions: Some(vec![available_condition, progressing]),
        terminating_replicas: None,
    }
}

async fn update_status(
    deployment: &Deployment,
    status: DeploymentStatus,
    client: &sim::Client,
    namespace: &str,
) -> Result<(), Error> {
    if deployment.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({ "status": status });
    match api.patch_status(&deployment.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};

    fn with(replicas: i32, surge: Option<IntOrString>, unavailable: Option<IntOrString>) -> Deployment {
        let mut d = Deployment::default();
        d.spec.replicas = Some(replicas);
        d.spec.strategy = Some(DeploymentStrategy {
            type_: None,
            rolling_update: Some(RollingUpdateDeployment { max_surge: surge, max_unavailable: unavailable }),
        });
        d
    }

    #[test]
    fn default_fenceposts_round_surge_up_and_unavailable_down() {
        assert_eq!(resolve_fenceposts(&with(4, None, None)), (1, 1));
        assert_eq!(resolve_fenceposts(&with(3, None, None)), (1, 0));
        assert_eq!(resolve_fenceposts(&with(10, None, None)), (3, 2));
    }

    #[test]
    fn zero_surge_and_zero_unavailable_become_one_unavailable() {
        let zero = || Some(IntOrString::Int(0));
        assert_eq!(resolve_fenceposts(&with(5, zero(), zero())), (0, 1));
        let percent = |p: &str| Some(IntOrString::String(p.to_owned()));
        assert_eq!(resolve_fenceposts(&with(10, percent("50%"), percent("0%"))), (5, 0));
    }

    #[test]
    fn a_template_equals_its_hashed_copy_but_not_a_changed_one() {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
                ..ObjectMeta::default()
            }),
            spec: None,
        };
        let mut hashed = template.clone();
        let hash = template_hash(&template, None);
        if let Some(labels) = hashed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash);
        }
        assert!(equal_ignore_hash(Some(&hashed), &template));
        let mut changed = hashed.clone();
        if let Some(labels) = changed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert("tier".to_owned(), "x".to_owned());
        }
        assert!(!equal_ignore_hash(Some(&changed), &template));
        assert_ne!(template_hash(&template, None), template_hash(&template, Some(1)));
    }
}
