//! Built-in end-state checks every controller should pass: no orphans, no stuck deletions, no
//! reconcile error loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::DynamicObject;
use model_apiserver::{ObjectKey, ResourceTypes, Snapshot};

use crate::violation::{Violation, describe_key};

/// The property name [`no_orphans`] reports under.
pub const NO_ORPHANS: &str = "no_orphans";
/// The property name [`no_stuck_deletions`] reports under.
pub const NO_STUCK_DELETIONS: &str = "no_stuck_deletions";
/// The property name [`no_error_loop`] reports under.
pub const NO_ERROR_LOOP: &str = "no_error_loop";

/// `no_orphans` with the built-in kinds only: see [`no_orphans_with`].
pub fn no_orphans(snapshot: &Snapshot) -> Vec<Violation> {
    no_orphans_with(snapshot, &ResourceTypes::builtin())
}

/// `no_orphans`: every live object (no deletionTimestamp; one being deleted is
/// [`no_stuck_deletions`]' concern) whose owner reference does not resolve, checked after the
/// garbage collector has settled.
///
/// An owner reference resolves as Kubernetes' garbage collector resolves it:
/// 1. Its kind and the group of its apiVersion (the version does not matter: all versions share
///    storage) name a resource: first among `types` (the built-ins, plus any CRDs the caller
///    serves), else among the objects present in the snapshot (a custom resource's storage key
///    and scope are those of any object of that group and kind). A kind found in neither has no
///    object at all, so its owner is gone.
/// 2. A namespaced owner is looked up in the dependent's namespace, a cluster-scoped one at
///    cluster scope. A cluster-scoped dependent with a namespaced owner is invalid: the garbage
///    collector cannot resolve it, and it is reported as such. An owner that exists only in
///    another namespace is reported as a cross-namespace reference.
/// 3. The object found must carry the reference's uid: a new object with the owner's name is not
///    the owner (the dependent of a deleted-and-recreated owner is an orphan).
pub fn no_orphans_with(snapshot: &Snapshot, types: &ResourceTypes) -> Vec<Violation> {
    let kinds = KindTable::new(snapshot, types);
    let uids: BTreeMap<&str, &ObjectKey> = snapshot
        .objects
        .iter()
        .filter_map(|(key, object)| object.metadata.uid.as_deref().map(|uid| (uid, key)))
        .collect();
    let mut violations = Vec::new();
    for (key, object) in &snapshot.objects {
        if object.metadata.deletion_timestamp.is_some() {
            continue;
        }
        for owner in object.metadata.owner_references.as_deref().unwrap_or_default() {
            if let Some(message) = unresolved_owner(snapshot, &kinds, &uids, key, owner) {
                violations.push(Violation::on(NO_ORPHANS, key, message));
            }
        }
    }
    violations
}

/// Why `owner` of the object at `key` does not resolve, or `None` when it does.
fn unresolved_owner(
    snapshot: &Snapshot,
    kinds: &KindTable,
    uids: &BTreeMap<&str, &ObjectKey>,
    key: &ObjectKey,
    owner: &OwnerReference,
) -> Option<String> {
    let who = format!("owner {} {} (uid {})", owner.kind, owner.name, owner.uid);
    let Some(&(ref resource, owner_namespaced)) = kinds.get(group_of(&owner.api_version), &owner.kind) else {
        return Some(format!(
            "{who} is gone: expected an object of kind {} in apiVersion {}, found none of that kind",
            owner.kind, owner.api_version
        ));
    };
    let dependent_namespaced = !key.namespace.is_empty();
    if owner_namespaced && !dependent_namespaced {
        return Some(format!(
            "{who} is namespaced but this object is cluster-scoped: the garbage collector cannot resolve such a reference"
        ));
    }
    let namespace = if owner_namespaced { key.namespace.clone() } else { Arc::from("") };
    let owner_key = ObjectKey { resource: resource.clone(), namespace, name: Arc::from(owner.name.as_str()) };
    match snapshot.get(&owner_key).and_then(|o| o.metadata.uid.as_deref()) {
        Some(uid) if uid == owner.uid => None,
        Some(uid) => Some(format!(
            "{who} is gone: expected uid {} at {}, found uid {uid} (a new object with the owner's name)",
            owner.uid,
            describe_key(&owner_key)
        )),
        None => match uids.get(owner.uid.as_str()) {
            Some(elsewhere) if !elsewhere.namespace.is_empty() && elsewhere.namespace != key.namespace => {
                Some(format!(
                    "{who} is in namespace {}, not {}: a namespaced owner must be in its dependent's namespace",
                    elsewhere.namespace, key.namespace
                ))
            }
            _ => Some(format!("{who} is gone: expected {}, found nothing", describe_key(&owner_key))),
        },
    }
}

/// (group, kind) -> (storage key, namespaced).
struct KindTable {
    by_kind: BTreeMap<(String, String), (Arc<str>, bool)>,
}

impl KindTable {
    fn new(snapshot: &Snapshot, types: &ResourceTypes) -> Self {
        let mut by_kind = BTreeMap::new();
        for ty in types.iter() {
            by_kind.insert((ty.api.group.clone(), ty.api.kind.clone()), (ty.storage_key(), ty.namespaced));
        }
        for (key, object) in &snapshot.objects {
            let Some(types) = object.types.as_ref() else {
                continue;
            };
            let group = group_of(&types.api_version).to_owned();
            by_kind
                .entry((group, types.kind.clone()))
                .or_insert_with(|| (key.resource.clone(), !key.namespace.is_empty()));
        }
        KindTable { by_kind }
    }

    fn get(&self, group: &str, kind: &str) -> Option<&(Arc<str>, bool)> {
        self.by_kind.get(&(group.to_owned(), kind.to_owned()))
    }
}

/// The group of an apiVersion: `apps` of `apps/v1`, empty for the core `v1`.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// `no_stuck_deletions`: every object whose deletion was requested (deletionTimestamp set) but
/// that still exists at the end, with the finalizers that hold it.
pub fn no_stuck_deletions(snapshot: &Snapshot) -> Vec<Violation> {
    snapshot
        .objects
        .iter()
        .filter_map(|(key, object)| {
            let requested = object.metadata.deletion_timestamp.as_ref()?;
            Some(Violation::on(NO_STUCK_DELETIONS, key, stuck_message(&requested.0, object)))
        })
        .collect()
}

fn stuck_message(requested: &k8s_openapi::jiff::Timestamp, object: &DynamicObject) -> String {
    let finalizers = object.metadata.finalizers.as_deref().unwrap_or_default();
    if finalizers.is_empty() {
        format!("deletion requested at {requested}: expected gone, found present with no finalizers left")
    } else {
        format!(
            "deletion requested at {requested}: expected gone, found present with finalizers [{}]",
            finalizers.join(", ")
        )
    }
}

/// `no_error_loop`: every object whose reconciles failed more than `errors_max` times after
/// convergence. `results` are (object, is_error) pairs, one per reconcile after convergence, in
/// any order; objects are reported in name order.
pub fn no_error_loop<S: AsRef<str>>(results: &[(S, bool)], errors_max: u64) -> Vec<Violation> {
    // (errors, reconciles) per object.
    let mut per_object: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (object, is_error) in results {
        let entry = per_object.entry(object.as_ref()).or_default();
        entry.0 += u64::from(*is_error);
        entry.1 += 1;
    }
    per_object
        .into_iter()
        .filter(|(_, (errors, _))| *errors > errors_max)
        .map(|(object, (errors, reconciles))| Violation {
            property: NO_ERROR_LOOP.to_owned(),
            message: format!(
                "reconcile failed {errors} of {reconciles} times after convergence: expected at most {errors_max} failures"
            ),
            object: Some(object.to_owned()),
        })
        .collect()
}
