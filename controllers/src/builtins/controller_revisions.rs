//! ControllerRevisions (apps/v1): the template history of a StatefulSet or DaemonSet, as
//! upstream's `controller/history` package keeps it.
//!
//! A revision is named `<owner>-<hash>`, controlled by its owner, and holds the owner's Pod
//! template as the patch `{"spec":{"template":{..,"$patch":"replace"}}}` with a revision number.
//! The current template's revision always has the highest number: a template that comes back
//! moves its old revision up. Revisions no Pod uses, other than those the owner still needs, are
//! deleted beyond `revisionHistoryLimit`, oldest first.
//!
//! The revisions are read from the owner controller's ControllerRevision informer cache, as
//! upstream's `controllerHistory` reads its lister. A create of a revision the cache does not show
//! yet is `AlreadyExists`, and the one the server holds is read and used if its data is the same
//! (upstream's `CreateControllerRevision`); moving a revision up carries the resourceVersion read,
//! so a decision on a stale revision gets 409 and the sync is retried.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use model_apiserver::versions::{Required, present};
use std::collections::BTreeMap;

use sim::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions, ResourceExt};
use sim::runtime::reflector::Store;

use super::error::{Error, has_code};
use super::{hashing, owners};

/// The label holding a ControllerRevision's hash.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// At most this many name collisions are tried when creating one revision.
pub const REVISION_COLLISIONS_MAX: usize = 5;
/// The longest name prefix of a revision (upstream's `ControllerRevisionName` cut).
const NAME_PREFIX_MAX: usize = 223;

/// The patch a revision holds for `template`: `{"spec":{"template":{..,"$patch":"replace"}}}`,
/// as upstream's `getPatch`.
pub fn revision_data(template: &PodTemplateSpec) -> serde_json::Value {
    let mut template = serde_json::to_value(template).unwrap_or_default();
    if let Some(object) = template.as_object_mut() {
        object.insert("$patch".to_owned(), serde_json::Value::String("replace".to_owned()));
    }
    serde_json::json!({ "spec": { "template": template } })
}

/// The template a revision holds (its data's `spec.template` without the `$patch` directive).
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision.data.value().0.pointer("/spec/template")?.clone();
    template.as_object_mut()?.remove("$patch");
    serde_json::from_value(template).ok()
}

/// A hash over `bytes` and the collision count, spelled in the safe alphabet: FNV-32a, as
/// upstream's `HashControllerRevision` and `ComputeHash` (FNV over Go's encodings: the values
/// differ from a real cluster's, the behaviour does not).
pub fn hash(bytes: &[u8], collision_count: Option<i32>) -> String {
    let mut bytes = bytes.to_vec();
    if let Some(count) = collision_count {
        bytes.extend_from_slice(count.to_string().as_bytes());
    }
    hashing::safe_encode(hashing::fnv32(&bytes))
}

/// The revision's number (0 when unset).
pub fn number(revision: &ControllerRevision) -> i64 {
    *revision.revision.value()
}

/// What a new revision is made of.
pub struct NewRevision<'a> {
    /// The controller reference to the owner.
    pub owner: OwnerReference,
    /// The owner's namespace.
    pub namespace: &'a str,
    /// The revision's labels (the owner's template labels, plus the hash label the caller wants).
    pub labels: BTreeMap<String, String>,
    /// The hash label key to set to the revision's hash.
    pub hash_label: &'a str,
    /// The revision's data ([`revision_data`]).
    pub data: serde_json::Value,
    /// The hash for a collision count.
    pub hash_for: &'a dyn Fn(Option<i32>) -> String,
}

/// The revisions of one owner's namespace, read from a cache and written through one API.
pub struct History<'a> {
    api: Api<ControllerRevision>,
    namespace: &'a str,
    cache: &'a Store<ControllerRevision>,
}

impl<'a> History<'a> {
    /// The history in `namespace`, read from `cache` (an informer of every ControllerRevision).
    pub fn new(client: &sim::Client, namespace: &'a str, cache: &'a Store<ControllerRevision>) -> Self {
        History { api: Api::namespaced(client.clone(), namespace), namespace, cache }
    }

    /// The revisions controlled by `owner_uid`, by number (then name).
    pub fn list(&self, owner_uid: &str) -> Vec<ControllerRevision> {
        let mut revisions: Vec<ControllerRevision> = self
            .cache
            .state_filter(|r| {
                r.metadata.namespace.as_deref() == Some(self.namespace)
                    && owners::is_controlled_by(&r.metadata, owner_uid)
            })
            .into_iter()
            .map(std::sync::Arc::unwrap_or_clone)
            .collect();
        revisions.sort_by(|a, b| {
            (number(a), a.metadata.name.as_ref()).cmp(&(number(b), b.metadata.name.as_ref()))
        });
        revisions
    }

    /// The revision of `new.data`: the newest one already, an equal old one moved to the next
    /// number, or a new one created with the next number (on a name held by other data, the
    /// collision count goes up and the next name is tried).
    pub async fn update_revision(
        &self,
        revisions: &[ControllerRevision],
        new: NewRevision<'_>,
        collision_count: &mut Option<i32>,
    ) -> Result<ControllerRevision, Error> {
        let next = revisions.last().map_or(1, |r| number(r) + 1);
        match revisions.iter().rev().find(|r| r.data.value().0 == new.data) {
            Some(r) if revisions.last().map(|l| &l.metadata.name) == Some(&r.metadata.name) => Ok(r.clone()),
            Some(r) => {
                // `next` comes from the revisions as read: conditional on this one being as read
                // (upstream updates the lister's copy), so a stale decision gets 409.
                let patch = serde_json::json!({
                    "metadata": { "resourceVersion": r.resource_version() },
                    "revision": next,
                });
                Ok(self.api.patch(&r.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?)
            }
            None => self.create(new, next, collision_count).await,
        }
    }

    async fn create(
        &self,
        new: NewRevision<'_>,
        next: i64,
        collision_count: &mut Option<i32>,
    ) -> Result<ControllerRevision, Error> {
        let mut prefix = new.owner.name.clone();
        prefix.truncate(NAME_PREFIX_MAX);
        for _ in 0..REVISION_COLLISIONS_MAX {
            let hash = (new.hash_for)(*collision_count);
            let mut labels = new.labels.clone();
            labels.insert(new.hash_label.to_owned(), hash.clone());
            let revision = ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(format!("{prefix}-{hash}")),
                    namespace: Some(new.namespace.to_owned()),
                    labels: Some(labels),
                    owner_references: Some(vec![new.owner.clone()]),
                    ..ObjectMeta::default()
                },
                data: present(RawExtension(new.data.clone())),
                revision: present(next),
            };
            match self.api.create(&PostParams::default(), &revision).await {
                Ok(created) => return Ok(created),
                Err(e) if has_code(&e, 409) => {
                    let Some(existing) = self.api.get_opt(&revision.name_any()).await? else {
                        return Err(e.into());
                    };
                    if existing.data.value().0 == new.data {
                        return Ok(existing);
                    }
                    *collision_count = Some(collision_count.unwrap_or(0).saturating_add(1));
                }
                Err(e) => return Err(e.into()),
            }
        }
        let reason = format!("{REVISION_COLLISIONS_MAX} revision name collisions in a row");
        Err(Error::InvalidSpec { kind: "ControllerRevision", name: new.owner.name, reason })
    }

    /// `truncateHistory`: delete the oldest revisions not `kept` beyond `limit`.
    pub async fn truncate(
        &self,
        revisions: &[ControllerRevision],
        kept: impl Fn(&ControllerRevision) -> bool,
        limit: i32,
    ) -> Result<(), Error> {
        let history: Vec<&ControllerRevision> = revisions.iter().filter(|r| !kept(r)).collect();
        let surplus = history.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
        for revision in history.into_iter().take(surplus) {
            let params = DeleteParams {
                preconditions: Some(Preconditions { uid: revision.uid(), resource_version: None }),
                ..DeleteParams::default()
            };
            match self.api.delete(&revision.name_any(), &params).await {
                Ok(_) => {}
                Err(e) if has_code(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
