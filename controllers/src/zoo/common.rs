//! What every zoo operator shares: its error type, the error policy, labels, and the PVCs that
//! stand for a data store's volumes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube_core::ObjectMeta;
use model_apiserver::versions::present;
use sim::api::{Api, DeleteParams, PostParams};
use sim::faults::{FaultKind, SwarmConfig};
use sim::runtime::controller::Action;

/// The namespace every zoo workload runs in.
pub const NAMESPACE: &str = "default";
/// The label naming the operator that manages an object.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The label naming the custom resource an object belongs to (by name, as real operators do).
pub const INSTANCE: &str = "app.kubernetes.io/instance";
/// How soon a reconcile runs again when nothing changes, as controller-runtime's `SyncPeriod`
/// (shortened to fit a run): a lost or late trigger delays a reconcile, it never cancels it.
pub const RESYNC: Duration = Duration::from_secs(5);
/// How long a workload goes on using a cluster after its last step, so that faults can still
/// land after it (the liveness phase turns them off).
pub const USER_THINK_TIME: Duration = Duration::from_secs(5);
/// How soon a failed reconcile is retried.
pub const ERROR_REQUEUE: Duration = Duration::from_millis(500);

/// Why a zoo reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed (a fault, a conflict from a stale read, a missing object).
    #[error("API call failed: {0}")]
    Api(#[from] sim::Error),
    /// The operator found a state it does not know how to handle (it retries forever).
    #[error("unexpected state: {0}")]
    Unexpected(String),
}

impl Error {
    /// Whether this is an API error with HTTP `code`.
    pub fn is_status(&self, code: u16) -> bool {
        matches!(self, Error::Api(e) if e.status().is_some_and(|s| s.code == code))
    }
}

/// The error policy of every zoo operator: retry soon, as controller-runtime's rate limiter does.
pub fn retry_soon<K, C>(_object: Arc<K>, error: &Error, _ctx: Arc<C>) -> Action {
    tracing::debug!(%error, "reconcile failed; retrying");
    Action::requeue(ERROR_REQUEUE)
}

/// The swarm faults of a zoo operator on node `node`, whose story takes about `writes_max`
/// writes: every kind but `PauseLeader`, which pauses a leader-elected replica and so never fires
/// on a zoo operator (none runs with leader election), and `LoseNode`, which the plain worlds
/// could not draw (they have no Node), left out so that the worlds with the built-ins draw the
/// plans their regression files and reference sweeps were made with. `DelayWatch` is in: its delays last a bounded time, so the
/// informers catch up before the workload's waits time out.
pub fn swarm(node: &str, writes_max: u32) -> SwarmConfig {
    let kinds = FaultKind::ALL
        .into_iter()
        .filter(|k| !matches!(k, FaultKind::PauseLeader | FaultKind::LoseNode))
        .collect();
    SwarmConfig { controllers: vec![node.to_owned()], kinds, writes_max, ..SwarmConfig::default() }
}

/// The labels of an object of `operator` belonging to custom resource `instance`.
pub fn labels(operator: &str, instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY.to_owned(), operator.to_owned()), (INSTANCE.to_owned(), instance.to_owned())])
}

/// The label selector of the objects of `operator` for `instance`.
pub fn selector(operator: &str, instance: &str) -> String {
    format!("{MANAGED_BY}={operator},{INSTANCE}={instance}")
}

/// A data volume claim of `size_gi` GiB, owned by `owner`.
pub fn pvc(name: &str, operator: &str, owner: &OwnerReference, size_gi: u32) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(labels(operator, &owner.name)),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), gibibytes(size_gi))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// `n` GiB as a quantity.
pub fn gibibytes(n: u32) -> Quantity {
    Quantity(format!("{n}Gi"))
}

/// The GiB a claim requests, if it requests a whole number of GiB.
pub fn requested_gi(pvc: &PersistentVolumeClaim) -> Option<u32> {
    let requests = pvc.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?;
    requests.get("storage")?.0.strip_suffix("Gi")?.parse().ok()
}

/// Create `object` unless it exists (a create that finds it is as good as one that made it). It
/// reads first, so that a reconcile that finds everything in place writes nothing.
pub async fn create_if_absent<K>(api: &Api<K>, object: &K) -> Result<(), Error>
where
    K: kube_core::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    if let Some(name) = object.meta().name.as_deref()
        && api.get_opt(name).await?.is_some()
    {
        return Ok(());
    }
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(e) if e.status().is_some_and(|s| s.code == 409 && s.reason == "AlreadyExists") => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Delete `name` unless it is gone already (a delete that finds nothing is as good as one that
/// deleted it).
pub async fn delete_if_present<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: kube_core::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    match api.delete(name, &DeleteParams::default()).await {
        Err(e) if e.status().is_some_and(|s| s.code == 404) => Ok(()),
        other => other.map(|_| ()).map_err(Error::from),
    }
}

/// Make sure data volume `name` exists and is owned by `owner` (by uid). A claim of that name with
/// another owner was left or made by someone acting for an older object of the same name (a
/// stale view): it is adopted, with its resourceVersion as precondition, before anyone relies on
/// it, since the garbage collector would otherwise delete it under the live cluster. A claim
/// being deleted (an older cluster's, kept a moment by its `kubernetes.io/pvc-protection`
/// finalizer) is not adopted: it goes whatever its owner, so the sync fails and is retried until
/// it is gone and a new one can be made.
pub async fn ensure_owned_pvc(
    api: &Api<PersistentVolumeClaim>,
    name: &str,
    operator: &str,
    owner: &OwnerReference,
    size_gi: u32,
) -> Result<(), Error> {
    match api.get_opt(name).await? {
        None => create_if_absent(api, &pvc(name, operator, owner, size_gi)).await,
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
            Err(Error::Unexpected(format!("claim {name} is being deleted")))
        }
        Some(existing) if existing.metadata.owner_references.iter().flatten().any(|o| o.uid == owner.uid) => {
            Ok(())
        }
        Some(existing) => {
            let patch = serde_json::json!({
                "metadata": {
                    "resourceVersion": existing.metadata.resource_version,
                    "ownerReferences": [owner],
                }
            });
            api.patch(name, &sim::api::PatchParams::default(), &sim::api::Patch::Merge(&patch)).await?;
            Ok(())
        }
    }
}

/// Whether `object`, as a cache shows it, is still the object the server has under its name (the
/// same uid). A cache can lag behind a delete and re-create under the same name; acting for the
/// old object then writes into the new one's world.
pub async fn is_current<K>(api: &Api<K>, object: &K) -> Result<bool, Error>
where
    K: kube_core::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    let Some(name) = object.meta().name.as_deref() else { return Ok(false) };
    let fresh = api.get_opt(name).await?;
    Ok(fresh.is_some_and(|f| f.meta().uid.is_some() && f.meta().uid == object.meta().uid))
}

/// The controller owner reference to a custom resource.
pub fn owner_of<K: kube_core::Resource<DynamicType = ()>>(object: &K) -> OwnerReference {
    object.controller_owner_ref(&()).expect("a custom resource from the server has a name and uid")
}

/// A StatefulSet `name` of `replicas` pods owned by `owner`, with a `persistence` claim template
/// of `claim_gi` GiB if given. No StatefulSet controller runs in zoo worlds: the operators make
/// the claims themselves, so the object records what the operator asked for.
pub fn statefulset(
    name: &str,
    operator: &str,
    owner: &OwnerReference,
    replicas: i32,
    claim_gi: Option<u32>,
) -> StatefulSet {
    let labels = labels(operator, &owner.name);
    let claim = claim_gi.map(|gi| PersistentVolumeClaim {
        metadata: ObjectMeta { name: Some("persistence".to_owned()), ..ObjectMeta::default() },
        spec: pvc("persistence", operator, owner, gi).spec,
        ..PersistentVolumeClaim::default()
    });
    StatefulSet {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: present(StatefulSetSpec {
            replicas: Some(replicas),
            service_name: Some(format!("{}-nodes", owner.name)),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: operator.to_owned(),
                        image: Some(format!("example.com/{operator}:1")),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: claim.map(|c| vec![c]),
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
}

/// The ordinal at the end of a per-node object's name (`data-c-2` is 2).
pub fn ordinal(name: &str) -> Option<i32> {
    name.rsplit_once('-')?.1.parse().ok()
}
