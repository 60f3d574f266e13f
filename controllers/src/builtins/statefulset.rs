//! The StatefulSet controller: stable, ordered Pods `<set>-<ordinal>` and their PVCs, as
//! kube-controller-manager's `StatefulSetController` with the `OrderedReady` policy (and
//! `Parallel`, which drops the ordering).
//!
//! - Pods are read with a live list at each sync and claimed by controller reference (a
//!   matching orphan whose name is one of the set's ordinals is adopted).
//! - Creation is in ordinal order: Pod `i + 1` is created only once Pod `i` is Running and
//!   Ready; a Failed Pod is deleted and then recreated; a terminating one is waited for.
//! - Before a Pod is created, each `volumeClaimTemplates` entry `tpl` gets its PVC
//!   `<tpl>-<set>-<ordinal>` (template labels plus the selector's `matchLabels`), mounted by the
//!   Pod as volume `tpl`.
//! - Scale-down deletes the highest ordinal first, one at a time, and only while every Pod that
//!   stays is Running and Ready.
//! - PVCs stay after scale-down and after deletion (the default
//!   `persistentVolumeClaimRetentionPolicy` is Retain for both); `whenDeleted: Delete` makes the
//!   set the PVC's owner (so the garbage collector removes it with the set), and `whenScaled:
//!   Delete` deletes a condemned ordinal's PVCs once its Pod is gone.
//! - Status: `replicas`, `readyReplicas`, `currentReplicas`, `updatedReplicas`,
//!   `availableReplicas`, `observedGeneration`. Template updates are not rolled out to existing
//!   Pods (no ControllerRevisions yet).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use sim::api::{
    Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt,
};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code};
use super::owners::{self, Claim};
use super::templates::{PodName, pod_from_template};
use super::{labels, pod_state};

/// The StatefulSet controller's node.
pub const NODE: &str = "statefulset-controller";
/// The label naming a StatefulSet Pod.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding a StatefulSet Pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Add the StatefulSet controller to a world, on node [`NODE`].
pub fn statefulset_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
}

/// The StatefulSet controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    Controller::new(Api::<StatefulSet>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .run(reconcile, super::retry_soon, Arc::new(Context { client }))
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
    set.spec.persistent_volume_claim_retention_policy.as_ref().and_then(when).is_some_and(|p| p == "Delete")
}

/// Sync one StatefulSet.
pub async fn reconcile(set: Arc<StatefulSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = set.name_any();
    let namespace =
        set.namespace().ok_or(Error::MissingNamespace { kind: "StatefulSet", name: name.clone() })?;
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if labels::is_empty(&set.spec.selector) {
        let reason = "empty selector is invalid for statefulset".to_owned();
        return Err(Error::InvalidSpec { kind: "StatefulSet", name, reason });
    }
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods = claim_pods(&set, &pods_api).await?;
    let start = set.spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0).max(0);
    let replicas = set.spec.replicas.unwrap_or(1).max(0);
    let wanted = start..start.saturating_add(replicas);
    let ordered = set.spec.pod_management_policy.as_deref() != Some("Parallel");
    let status = status_of(&set, &pods);
    // Scale up and repair, lowest ordinal first.
    let mut blocked = false;
    for ordinal in wanted.clone() {
        let healthy = match pods.get(&ordinal) {
            None => {
                create_claims(&set, ordinal, &claims_api).await?;
                create_pod(&set, ordinal, &pods_api).await?;
                false
            }
            Some(pod)
                if pod_state::phase(pod) == pod_state::PHASE_FAILED && !pod_state::is_terminating(pod) =>
            {
                delete_pod(pod, &pods_api).await?;
                false
            }
            Some(pod) => pod_state::is_running_and_ready(pod) && !pod_state::is_terminating(pod),
        };
        if !healthy && ordered {
            blocked = true;
            break;
        }
    }
    // Scale down, highest ordinal first, once every remaining Pod is healthy.
    if !blocked {
        let condemned: Vec<&Pod> =
            pods.iter().rev().filter(|(o, _)| !wanted.contains(o)).map(|(_, p)| p).collect();
        for pod in condemned {
            if !pod_state::is_terminating(pod) {
                delete_pod(pod, &pods_api).await?;
            }
            if ordered {
                break;
            }
        }
        if policy_deletes(&set, |p| p.when_scaled.as_ref()) {
            delete_condemned_claims(&set, &pods, &wanted, &claims_api).await?;
        }
    }
    update_status(&set, status, &ctx.client, &namespace).await?;
    Ok(Action::await_change())
}

/// The set's Pods by ordinal, after claiming (adopting orphans that match and carry one of the
/// set's ordinal names, releasing owned Pods that stopped matching).
async fn claim_pods(set: &StatefulSet, api: &Api<Pod>) -> Result<BTreeMap<i32, Pod>, Error> {
    let uid = set.uid().unwrap_or_default();
    let name = set.name_any();
    let mut pods = BTreeMap::new();
    for pod in api.list(&ListParams::default()).await?.items {
        let Some(ordinal) = ordinal_of(&name, &pod.name_any()) else { continue };
        let selected = labels::matches(&set.spec.selector, pod.metadata.labels.as_ref());
        let patch = match owners::claim(&pod.metadata, &uid, selected) {
            Claim::Owned => {
                pods.insert(ordinal, pod);
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

/// Create every missing PVC of `ordinal` (an existing one, whoever made it, is used as is).
async fn create_claims(
    set: &StatefulSet,
    ordinal: i32,
    api: &Api<PersistentVolumeClaim>,
) -> Result<(), Error> {
    let set_name = set.name_any();
    let owner: Option<OwnerReference> = policy_deletes(set, |p| p.when_deleted.as_ref())
        .then(|| OwnerReference { controller: None, ..owners::controller_ref(set) });
    for template in set.spec.volume_claim_templates.iter().flatten() {
        let template_name = template.name_any();
        let name = claim_name(&template_name, &set_name, ordinal);
        let mut labels = template.metadata.labels.clone().unwrap_or_default();
        labels.extend(set.spec.selector.match_labels.clone().unwrap_or_default());
        let claim = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: set.namespace(),
                labels: Some(labels),
                annotations: template.metadata.annotations.clone(),
                owner_references: owner.clone().map(|o| vec![o]),
                ..ObjectMeta::default()
            },
            spec: template.spec.clone(),
            status: None,
        };
        match api.create(&PostParams::default(), &claim).await {
            Ok(_) => {}
            // Made by an earlier sync (or by the user): used as it is, if it is really there.
            Err(e) if has_code(&e, 409) => {
                if api.get_opt(&claim.name_any()).await?.is_none() {
                    return Err(e.into());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

async fn create_pod(set: &StatefulSet, ordinal: i32, api: &Api<Pod>) -> Result<(), Error> {
    let set_name = set.name_any();
    let name = format!("{set_name}-{ordinal}");
    let namespace = set.namespace().unwrap_or_default();
    let mut pod = pod_from_template(
        &set.spec.template,
        PodName::Fixed(name.clone()),
        &namespace,
        owners::controller_ref(set),
    );
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.to_owned(), name.clone());
    labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = Some(name.clone());
    spec.subdomain = set.spec.service_name.clone().filter(|s| !s.is_empty());
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    for template in set.spec.volume_claim_templates.iter().flatten() {
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
    // A 409 (created by an earlier sync whose answer was lost, or a fault) is retried: the next
    // sync's list shows which.
    api.create(&PostParams::default(), &pod).await?;
    Ok(())
}

async fn delete_pod(pod: &Pod, api: &Api<Pod>) -> Result<(), Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: pod.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(_) => Ok(()),
        // Gone already; a 409 is retried (a fault's 409 changes nothing that would trigger a sync).
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
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
        set.spec.volume_claim_templates.iter().flatten().map(|t| t.name_any()).collect();
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

fn status_of(set: &StatefulSet, pods: &BTreeMap<i32, Pod>) -> StatefulSetStatus {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let replicas = count(pods.len());
    let ready = count(pods.values().filter(|p| pod_state::is_ready(p)).count());
    let available = count(pods.values().filter(|p| pod_state::is_available(p)).count());
    StatefulSetStatus {
        replicas,
        ready_replicas: Some(ready),
        available_replicas: Some(available),
        current_replicas: Some(replicas),
        updated_replicas: Some(replicas),
        observed_generation: set.metadata.generation,
        collision_count: set.status.as_ref().and_then(|s| s.collision_count),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
        current_revision: None,
        update_revision: None,
    }
}

async fn update_status(
    set: &StatefulSet,
    status: StatefulSetStatus,
    client: &sim::Client,
    namespace: &str,
) -> Result<(), Error> {
    if set.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({ "status": status });
    match api.patch_status(&set.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_parsed_only_from_the_sets_own_pod_names() {
        assert_eq!(ordinal_of("db", "db-0"), Some(0));
        assert_eq!(ordinal_of("db", "db-10"), Some(10));
        assert_eq!(ordinal_of("db", "db-01"), None);
        assert_eq!(ordinal_of("db", "dbx-1"), None);
        assert_eq!(ordinal_of("db", "db-web-1"), None);
        assert_eq!(ordinal_of("db", "db--1"), None);
    }

    #[test]
    fn claim_names_join_template_set_and_ordinal() {
        assert_eq!(claim_name("data", "db", 2), "data-db-2");
    }
}
