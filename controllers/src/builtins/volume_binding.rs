//! The scheduler-lite's VolumeBinding plugin (`pkg/scheduler/framework/plugins/volumebinding`):
//! which Nodes a Pod's PersistentVolumeClaims allow, and, for claims of a `WaitForFirstConsumer`
//! class, the writes that bind them on the chosen Node before the Pod is bound.
//!
//! - PreFilter ([`prefilter`], `GetPodVolumeClaims`): a claim that is missing (a generic
//!   ephemeral volume's not made yet), bound to a volume that is gone (`Lost`), or being deleted
//!   fails every Node with its message; so does a claim not bound yet of an `Immediate` class
//!   (`pod has unbound immediate PersistentVolumeClaims`). A claim not bound yet of a
//!   `WaitForFirstConsumer` class is left to the scheduler.
//! - Filter ([`PodVolumes::rejection`], `FindPodVolumes`), with reasons no eviction undoes: a
//!   bound claim's volume must be in the cache (`node(s) unavailable due to one or more pvc(s)
//!   bound to non-existent pv(s)`; its arrival schedules the Pod again) and admit the Node by its
//!   node affinity (`node(s) had volume node affinity conflict`); a delayed claim already given a node
//!   (`volume.kubernetes.io/selected-node`) admits only that one, else it needs an available
//!   volume that fits it and admits the Node (the smallest, as the binder picks), or a class
//!   that can provision there: a provisioner other than `kubernetes.io/no-provisioner` and the
//!   class's `allowedTopologies` matching the Node's labels (`node(s) didn't find available
//!   persistent volumes to bind`). Storage capacity tracking is not modelled.
//! - PreBind ([`PodVolumes::bindings`], `BindPodVolumes`): on the chosen Node, each delayed claim
//!   with a matching volume has that volume pre-bound to it (its `claimRef`, with
//!   `pv.kubernetes.io/bound-by-controller`); each other one is annotated with the Node, for its
//!   provisioner. The Pod is bound only once every claim is bound, which the PersistentVolume
//!   binder and the provisioner then do; the claims' changes schedule the Pod again, and the new
//!   volumes' node affinity keeps it on the Node. Upstream waits for that inside the binding
//!   cycle with the Pod assumed on the Node; here the Pod is not assumed meanwhile.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use sim::api::{Api, Patch, PatchParams, ResourceExt};
use sim::runtime::reflector::{ObjectRef, Store};

use super::persistentvolume as pv;

/// The Filter's reason for a Node where a delayed claim can neither be bound nor provisioned.
pub const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// The Filter's reason for a Node a bound claim's volume does not admit.
pub const NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// The Filter's reason for every Node while a bound claim's volume is not in the cache yet.
pub const PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// The PreFilter's reason for a claim of an `Immediate` class not bound yet.
pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
/// The provisioner of a class whose volumes are made by hand (local volumes).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// A Pod's claims, as the VolumeBinding plugin sorts them for one scheduling cycle.
#[derive(Default)]
pub struct PodVolumes {
    /// The volumes of the bound claims (those the cache holds).
    bound: Vec<Arc<PersistentVolume>>,
    /// Whether a bound claim names a volume the cache does not hold (yet).
    missing_volume: bool,
    /// The claims not bound yet whose class waits for the first consumer, with their class.
    delayed: Vec<(Arc<PersistentVolumeClaim>, Arc<StorageClass>)>,
    /// Every volume, for the delayed claims to match.
    volumes: Vec<Arc<PersistentVolume>>,
}

/// The caches the plugin reads.
pub struct Caches<'a> {
    pub claims: &'a Store<PersistentVolumeClaim>,
    pub classes: &'a Store<StorageClass>,
    pub volumes: &'a Store<PersistentVolume>,
}

/// The claims `pod` mounts: its `persistentVolumeClaim` volumes' by name, and its generic
/// `ephemeral` volumes' (`<pod>-<volume>`, made by [`super::ephemeral`]), each with whether it is
/// an ephemeral volume's.
pub fn claim_names(pod: &Pod) -> Vec<(String, bool)> {
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    volumes
        .filter_map(|v| match (&v.persistent_volume_claim, &v.ephemeral) {
            (Some(c), _) => Some((c.claim_name.clone(), false)),
            (None, Some(_)) => Some((super::ephemeral::claim_name(&pod.name_any(), &v.name), true)),
            _ => None,
        })
        .collect()
}

/// Whether the claim is bound (`spec.volumeName` and `pv.kubernetes.io/bind-completed`).
fn is_fully_bound(claim: &PersistentVolumeClaim) -> bool {
    pv::volume_name_of(claim).is_some() && claim.annotations().contains_key(pv::ANN_BIND_COMPLETED)
}

/// The PreFilter: the Pod's claims sorted, or why no Node can take it.
pub fn prefilter(pod: &Pod, caches: &Caches<'_>) -> Result<PodVolumes, String> {
    let namespace = pod.namespace().unwrap_or_default();
    let mut found = PodVolumes::default();
    let mut unbound_immediate = false;
    for (name, ephemeral) in claim_names(pod) {
        let Some(claim) = caches.claims.get(&ObjectRef::new(&name).within(&namespace)) else {
            // Normal for a moment after a Pod with a generic ephemeral volume is created.
            return Err(if ephemeral {
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}"
                )
            } else {
                format!("persistentvolumeclaim {name:?} not found")
            });
        };
        let volume = pv::volume_name_of(&claim).unwrap_or_default().to_owned();
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(pv::PHASE_LOST) {
            return Err(format!(
                "persistentvolumeclaim {name:?} bound to non-existent persistentvolume {volume:?}"
            ));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
        }
        if ephemeral && let Some(not_ours) = super::ephemeral::not_for_pod(pod, &claim) {
            return Err(not_ours);
        }
        if is_fully_bound(&claim) {
            match caches.volumes.get(&ObjectRef::new(&volume)) {
                Some(volume) => found.bound.push(volume),
                None => found.missing_volume = true,
            }
            continue;
        }
        let class = pv::claim_class(&claim);
        let delayed = (!class.is_empty())
            .then(|| caches.classes.get(&ObjectRef::new(&class)))
            .flatten()
            .filter(|c| pv::is_delay_binding_class(c));
        match delayed {
            Some(class) => found.delayed.push((claim, class)),
            None => unbound_immediate = true,
        }
    }
    if unbound_immediate {
        return Err(UNBOUND_IMMEDIATE.to_owned());
    }
    if !found.delayed.is_empty() {
        found.volumes = caches.volumes.state();
    }
    Ok(found)
}

/// How one delayed claim would be bound on a Node.
enum Binding {
    /// Pre-bind this available volume to the claim.
    Volume(Arc<PersistentVolume>),
    /// Have the class's provisioner make a volume there.
    Provision,
}

impl PodVolumes {
    /// Whether the Pod waits for claims to be bound on the Node chosen for it.
    pub fn has_delayed(&self) -> bool {
        !self.delayed.is_empty()
    }

    /// How `claim` would be bound on `node`, if it can be.
    fn binding(&self, claim: &PersistentVolumeClaim, class: &StorageClass, node: &Node) -> Option<Binding> {
        let name = node.name_any();
        // Given to a node already: that one only, provisioned there.
        if let Some(selected) = claim.annotations().get(pv::ANN_SELECTED_NODE) {
            return (*selected == name).then_some(Binding::Provision);
        }
        if let Some(volume) = pv::find_best_match_for(claim, &self.volumes, Some(node), true) {
            return Some(Binding::Volume(volume));
        }
        let topologies = class.allowed_topologies.as_deref().unwrap_or_default();
        let labels = node.labels();
        let allowed = topologies.is_empty()
            || topologies.iter().any(|term| {
                term.match_label_expressions
                    .iter()
                    .flatten()
                    .all(|r| labels.get(&r.key).is_some_and(|v| r.values.contains(v)))
            });
        (class.provisioner != NO_PROVISIONER && allowed).then_some(Binding::Provision)
    }

    /// The Filter's reason for `node`, if the Pod's claims do not allow it.
    pub fn rejection(&self, node: &Node) -> Option<&'static str> {
        if self.missing_volume {
            return Some(PV_NOT_EXIST);
        }
        if self.bound.iter().any(|volume| !pv::volume_fits_node(volume, node)) {
            return Some(NODE_CONFLICT);
        }
        let unsatisfied =
            self.delayed.iter().any(|(claim, class)| self.binding(claim, class, node).is_none());
        unsatisfied.then_some(BIND_CONFLICT)
    }

    /// PreBind on `node`: pre-bind the matching volumes to their claims and give the others the
    /// node, each write conditional on the resourceVersion read. Whether the Pod may be bound now
    /// (no claim was waiting).
    pub async fn bind_on(&self, node: &Node, client: &sim::Client) -> Result<bool, sim::Error> {
        let name = node.name_any();
        for (claim, class) in &self.delayed {
            match self.binding(claim, class, node) {
                Some(Binding::Volume(volume)) => {
                    // GetBindVolumeToClaim: a volume already bound to this very claim (one its
                    // provisioner made for it, which a cache behind the claim's binding still
                    // offers) is left as it is, one pre-bound by name gets the claim's uid; any
                    // other gets the claim and says the binding is the controller's.
                    let pre_bound = pv::is_volume_bound_to_claim(&volume, claim);
                    let reference = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
                    if pre_bound && reference.is_some_and(|r| r.uid == claim.metadata.uid) {
                        continue;
                    }
                    let mut metadata = serde_json::json!({ "resourceVersion": volume.resource_version() });
                    if !pre_bound {
                        metadata["annotations"] = serde_json::json!({ pv::ANN_BOUND_BY_CONTROLLER: "yes" });
                    }
                    let patch = serde_json::json!({
                        "metadata": metadata,
                        "spec": { "claimRef": pv::claim_ref(claim) },
                    });
                    let volumes: Api<PersistentVolume> = Api::all(client.clone());
                    volumes.patch(&volume.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
                }
                Some(Binding::Provision) if !claim.annotations().contains_key(pv::ANN_SELECTED_NODE) => {
                    let patch = serde_json::json!({
                        "metadata": {
                            "resourceVersion": claim.resource_version(),
                            "annotations": { pv::ANN_SELECTED_NODE: name },
                        },
                    });
                    let claims: Api<PersistentVolumeClaim> =
                        Api::namespaced(client.clone(), &claim.namespace().unwrap_or_default());
                    claims.patch(&claim.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
                }
                // Given the node already: its provisioner is at work.
                Some(Binding::Provision) | None => {}
            }
        }
        Ok(self.delayed.is_empty())
    }
}
