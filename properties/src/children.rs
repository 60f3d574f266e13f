//! Objects the built-in controllers make, and how the differential oracle compares them.
//!
//! A user's controller owns what it writes: a Deployment, a StatefulSet, a Job, a CronJob. The
//! built-in controllers (kube-controller-manager's, `controllers::builtins` in this workspace)
//! make children from those: ReplicaSets from a Deployment, Pods from a ReplicaSet, StatefulSet,
//! DaemonSet or Job, ControllerRevisions from a StatefulSet or DaemonSet, Jobs from a CronJob.
//! What the user asked for is the parent's spec, and what it gets is the children that are live
//! at the end: their template (image, replicas, labels) and readiness. Everything else about the
//! children is history, which a correct controller legitimately changes under faults: a
//! controller relisted after a missed update goes straight from the first image to the last and
//! leaves one old ReplicaSet fewer, one revision number lower; a ReplicaSet recreated after a
//! name collision gets another hash. So, with the built-in masks on, the oracle
//!
//! 1. recognises a *child* by its controller owner reference: a built-in workload kind that makes
//!    objects of the child's resource ([`MAKERS`]), whoever owns the workload itself;
//! 2. leaves out *retired* children, which record history only: a Deployment's ReplicaSets scaled
//!    to zero (old revisions kept for rollback), every ControllerRevision (a copy of a past or
//!    present template, which the parent's spec holds), a CronJob's finished Jobs, and Pods that
//!    have terminated (a Job's results are in its status);
//! 3. matches the other children as a multiset per parent, like objects named by
//!    `generateName`, with their hash suffixes replaced by stand-ins ([`HashNames`]):
//!    `web-5d4f8b9c7d` is `web-<pod-template-hash>`, wherever it appears (names, labels,
//!    selectors, owner references, condition messages);
//! 4. does not compare how many times a child was created or deleted
//!    ([`crate::ObjectCount::child`]);
//! 5. masks the history fields of the parents: revision numbers (a Deployment's and its
//!    ReplicaSets' `deployment.kubernetes.io/revision`, `revision-history`), `collisionCount`,
//!    and a DaemonSet Pod's `pod-template-generation` (the DaemonSet's generation, which counts
//!    spec writes).
//!
//! A dynamically provisioned PersistentVolume (annotated `pv.kubernetes.io/provisioned-by`, its
//! `claimRef` set) is its claim's child too: a provisioner names it `pvc-<claim uid>`, and two runs
//! draw other uids. Its name's uid stands as `<claim uid>` wherever it appears (the claim's
//! `volumeName`, a `hostPath` under the name), it is matched like the others, and its counts are
//! not compared.
//!
//! Children of a parent the user's controller made are compared through the parent: a wrong
//! image, too many or too few live Pods, a second live ReplicaSet, or a Pod that is not ready is
//! still a difference; a missing or recreated parent is a difference of the parent itself.

use std::collections::BTreeMap;

use kube_core::DynamicObject;
use model_apiserver::{ObjectKey, Snapshot};
use serde_json::Value;

/// Which built-in workload kinds make objects of which resource: (child storage key, parent
/// kind, parent API group). A child is an object of the resource whose controller owner
/// reference is of that kind and group.
pub const MAKERS: &[(&str, &str, &str)] = &[
    ("apps/replicasets", "Deployment", "apps"),
    ("pods", "ReplicaSet", "apps"),
    ("pods", "StatefulSet", "apps"),
    ("pods", "DaemonSet", "apps"),
    ("pods", "Job", "batch"),
    ("apps/controllerrevisions", "StatefulSet", "apps"),
    ("apps/controllerrevisions", "DaemonSet", "apps"),
    ("batch/jobs", "CronJob", "batch"),
];

/// The history fields of parents (and of DaemonSet Pods), masked by the built-in mask:
/// (resource storage key, JSON pointer).
pub(crate) const HISTORY_PATHS: &[(&str, &str)] = &[
    ("apps/deployments", "/metadata/annotations/deployment.kubernetes.io~1revision"),
    ("apps/deployments", "/status/collisionCount"),
    ("apps/replicasets", "/metadata/annotations/deployment.kubernetes.io~1revision"),
    ("apps/replicasets", "/metadata/annotations/deployment.kubernetes.io~1revision-history"),
    ("apps/statefulsets", "/status/collisionCount"),
    ("apps/daemonsets", "/status/collisionCount"),
    ("pods", "/metadata/labels/pod-template-generation"),
];

/// The label holding a ReplicaSet's template hash (`web-5d4f8b9c7d` carries `5d4f8b9c7d`).
const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// The annotation a provisioner puts on the volumes it makes.
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// The prefix of a provisioned volume's name, before its claim's uid (upstream's
/// `getProvisionedVolumeNameForClaim`, every provisioner's default).
const PROVISIONED_PREFIX: &str = "pvc-";

/// The parent that made `object`, if a built-in did: the controller owner reference's kind and
/// name, when [`MAKERS`] lists its kind and group for `resource`; for a dynamically provisioned
/// volume, the claim its `claimRef` names.
pub(crate) fn parent_of<'a>(resource: &str, object: &'a DynamicObject) -> Option<(&'a str, &'a str)> {
    if resource == "persistentvolumes" {
        let provisioned =
            object.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(PROVISIONED_BY));
        let claim = object.data.pointer("/spec/claimRef/name").and_then(Value::as_str);
        return claim.filter(|_| provisioned).map(|claim| ("PersistentVolumeClaim", claim));
    }
    let refs = object.metadata.owner_references.as_deref()?;
    let owner = refs.iter().find(|r| r.controller == Some(true))?;
    let group = owner.api_version.rsplit_once('/').map_or("", |(group, _)| group);
    MAKERS
        .iter()
        .any(|(child, kind, g)| *child == resource && *kind == owner.kind && *g == group)
        .then_some((owner.kind.as_str(), owner.name.as_str()))
}

/// Whether `object`, a child (see [`parent_of`]), records history only and is left out.
pub(crate) fn is_retired(resource: &str, object: &DynamicObject) -> bool {
    let data = &object.data;
    match resource {
        "apps/replicasets" => data.pointer("/spec/replicas").and_then(Value::as_i64) == Some(0),
        "apps/controllerrevisions" => true,
        "batch/jobs" => {
            data.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|conditions| {
                conditions.iter().any(|c| {
                    matches!(c.get("type").and_then(Value::as_str), Some("Complete" | "Failed"))
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
        }
        "pods" => {
            matches!(data.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"))
        }
        _ => false,
    }
}

/// The hash and time suffixes of children's names in one snapshot, and their stand-ins:
/// a Deployment's ReplicaSet `web-5d4f8b9c7d` gives `5d4f8b9c7d` → `<pod-template-hash>`, a
/// StatefulSet's or DaemonSet's ControllerRevision `db-7c9f6d8b5` gives `7c9f6d8b5` →
/// `<controller-revision-hash>`, a CronJob's Job `nightly-29413260` gives `29413260` →
/// `<scheduled time>`. A suffix is replaced where it stands as a whole word (between
/// non-alphanumeric characters) in any string: names, labels, selectors, messages.
#[derive(Clone, Debug, Default)]
pub(crate) struct HashNames {
    stand_ins: BTreeMap<String, &'static str>,
}

impl HashNames {
    pub(crate) fn new(snapshot: &Snapshot) -> Self {
        let mut stand_ins = BTreeMap::new();
        for (key, object) in &snapshot.objects {
            if let Some((suffix, stand_in)) = hash_suffix(key, object) {
                stand_ins.insert(suffix.to_owned(), stand_in);
            }
        }
        HashNames { stand_ins }
    }

    /// `text` with every hash suffix of this snapshot replaced, or `None` if it holds none.
    pub(crate) fn replace(&self, text: &str) -> Option<String> {
        if self.stand_ins.is_empty() {
            return None;
        }
        let mut out: Option<String> = None;
        for (suffix, stand_in) in &self.stand_ins {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(suffix.as_str()) {
                let replaced = replace_words(current, suffix, stand_in);
                if replaced != current {
                    out = Some(replaced);
                }
            }
        }
        out
    }
}

/// The suffix of a child's name that a hash or schedule made (or, for a provisioned volume, its
/// claim's uid), and its stand-in.
fn hash_suffix<'a>(key: &'a ObjectKey, object: &'a DynamicObject) -> Option<(&'a str, &'static str)> {
    let (kind, parent) = parent_of(&key.resource, object)?;
    if kind == "PersistentVolumeClaim" {
        let uid = key.name.strip_prefix(PROVISIONED_PREFIX)?;
        let uid_like = !uid.is_empty() && uid.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        return uid_like.then_some((uid, "<claim uid>"));
    }
    let suffix = key.name.strip_prefix(parent)?.strip_prefix('-')?;
    let stand_in = match (&*key.resource, kind) {
        ("apps/replicasets", _) => {
            let labelled = object.metadata.labels.as_ref().and_then(|l| l.get(POD_TEMPLATE_HASH));
            (labelled.map(String::as_str) == Some(suffix)).then_some("<pod-template-hash>")?
        }
        ("apps/controllerrevisions", _) => "<controller-revision-hash>",
        ("batch/jobs", "CronJob") => "<scheduled time>",
        _ => return None,
    };
    (!suffix.is_empty() && suffix.chars().all(|c| c.is_ascii_alphanumeric())).then_some((suffix, stand_in))
}

/// `text` with each occurrence of `word` that stands between non-alphanumeric characters (or
/// the ends) replaced by `stand_in`.
fn replace_words(text: &str, word: &str, stand_in: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(word) {
        let prior = rest[..at].chars().next_back().or(before);
        let after = rest[at + word.len()..].chars().next();
        let bounded = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if bounded(prior) && bounded(after) {
            out.push_str(stand_in);
        } else {
            out.push_str(word);
        }
        before = word.chars().next_back();
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}
