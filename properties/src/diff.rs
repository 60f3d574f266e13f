//! The differential oracle (Sieve's): the end state of a run against the end state of a
//! fault-free reference run of the same scenario and workload, modulo a [`Mask`], plus how many
//! times each object was created and deleted.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use kube_core::DynamicObject;
use model_apiserver::{ObjectKey, Snapshot, StoredEvent, StoredEventType};
use serde_json::Value;
use sim::Lifecycles;

use crate::children;
use crate::mask::Mask;
use crate::normalize::{Normalizer, generated_marker, kind_of};
use crate::path::{Path, Step};
use crate::violation::{Violation, describe_key, describe_value};

/// The property name [`matches_reference`] reports under.
pub const MATCHES_REFERENCE: &str = "matches_reference";

/// How deep the comparison walks; deeper subtrees are compared whole.
const DEPTH_MAX: usize = 128;

/// How many times one object was created and deleted during a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Counts {
    /// Creations (ADDED events).
    pub created: u64,
    /// Deletions (removals from storage).
    pub deleted: u64,
}

/// When a run last created or deleted an object: the step (the cluster's revision, as safety
/// violations name it) and, when known, the virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LastChange {
    /// The revision of the write.
    pub step: u64,
    /// Virtual milliseconds since the start of the run, if known.
    pub at_millis: Option<u64>,
}

impl fmt::Display for LastChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at_millis {
            Some(millis) => write!(f, "step {}, {millis} ms", self.step),
            None => write!(f, "step {}", self.step),
        }
    }
}

/// The creation and deletion counts of one object, keyed as [`count_key`] keys it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectCount {
    /// The object (for a generated name: `generateName*`, so that runs compare).
    pub key: ObjectKey,
    /// Its counts.
    pub counts: Counts,
    /// The latest creation or deletion, when the source knows it (named in count violations).
    pub last: Option<LastChange>,
    /// Whether the object is a child a built-in controller made (see the crate's section on
    /// generated objects): under the built-in masks its counts are history, not compared.
    pub child: bool,
}

/// One way the run's end state differs from the reference's.
#[derive(Clone, Debug, PartialEq)]
pub enum Difference {
    /// The reference run ends with this object; the run has no counterpart.
    Missing {
        /// The reference's object.
        key: ObjectKey,
    },
    /// The run ends with this object; the reference has no counterpart.
    Extra {
        /// The run's object.
        key: ObjectKey,
    },
    /// A field of matched objects differs (after masking and normalisation).
    Field {
        /// The run's object.
        key: ObjectKey,
        /// Where in the object.
        path: Path,
        /// The reference's value, `None` when absent (or null).
        expected: Option<Value>,
        /// The run's value, `None` when absent (or null).
        found: Option<Value>,
    },
    /// The object was created or deleted a different number of times.
    Count {
        /// The object, as [`count_key`] keys it.
        key: ObjectKey,
        /// The reference's counts.
        expected: Counts,
        /// The run's counts.
        found: Counts,
        /// The run's latest creation or deletion of the object, if known.
        last: Option<LastChange>,
    },
}

impl Difference {
    /// The object this difference is about.
    pub fn key(&self) -> &ObjectKey {
        match self {
            Difference::Missing { key }
            | Difference::Extra { key }
            | Difference::Field { key, .. }
            | Difference::Count { key, .. } => key,
        }
    }

    /// The message part, without the object.
    pub fn message(&self) -> String {
        match self {
            Difference::Missing { .. } => {
                "expected to exist (the reference run ends with it), found absent".to_owned()
            }
            Difference::Extra { .. } => {
                "expected absent (the reference run ends without it), found present".to_owned()
            }
            Difference::Field { path, expected, found, .. } => format!(
                "{path}: expected {}, found {}",
                describe_value(expected.as_ref()),
                describe_value(found.as_ref())
            ),
            Difference::Count { expected, found, last, .. } => count_message(*expected, *found, *last),
        }
    }

    /// This difference as a violation of `property`.
    pub fn to_violation(&self, property: &str) -> Violation {
        Violation::on(property, self.key(), self.message())
    }
}

/// `created 3 times, the fault-free reference created it 2 times`, for each of created and
/// deleted that differs, then where the run last changed the object.
fn count_message(expected: Counts, found: Counts, last: Option<LastChange>) -> String {
    let times = |n: u64| if n == 1 { "1 time".to_owned() } else { format!("{n} times") };
    let mut parts = Vec::new();
    if expected.created != found.created {
        parts.push(format!(
            "created {}, the fault-free reference created it {}",
            times(found.created),
            times(expected.created)
        ));
    }
    if expected.deleted != found.deleted {
        parts.push(format!(
            "deleted {}, the fault-free reference deleted it {}",
            times(found.deleted),
            times(expected.deleted)
        ));
    }
    let mut message = parts.join("; ");
    if let Some(last) = last {
        message.push_str(&format!(" (last created or deleted at {last})"));
    }
    message
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", describe_key(self.key()), self.message())
    }
}

/// The end of one run, as the oracle compares it.
#[derive(Clone, Debug, Default)]
pub struct EndState {
    /// The stored state after the liveness phase.
    pub snapshot: Snapshot,
    /// Per-object creation and deletion counts over the run (see [`counts_from_events`]).
    pub counts: Vec<ObjectCount>,
}

/// `matches_reference`: every difference between a run's end state and the reference's, under
/// `mask`, as violations: missing and extra objects, differing fields, then differing counts.
pub fn matches_reference(reference: &EndState, run: &EndState, mask: &Mask) -> Vec<Violation> {
    matches_prepared(&Prepared::new(&reference.snapshot, mask), &reference.counts, run, mask)
}

/// [`matches_reference`] with the reference's snapshot already [`Prepared`] under `mask`, as a
/// sweep compares every seed with one reference.
pub fn matches_prepared(
    reference: &Prepared,
    reference_counts: &[ObjectCount],
    run: &EndState,
    mask: &Mask,
) -> Vec<Violation> {
    let mut differences = diff_prepared(reference, &run.snapshot, mask);
    differences.extend(diff_counts(reference_counts, &run.counts, mask));
    differences.iter().map(|d| d.to_violation(MATCHES_REFERENCE)).collect()
}

/// The key counts are kept under: the object's key, with a generated name replaced by
/// `generateName*` (so all objects generated from one prefix share one count, which is what two
/// runs can agree on).
pub fn count_key(key: &ObjectKey, object: &DynamicObject) -> ObjectKey {
    match generated_marker(object) {
        Some(marker) => ObjectKey { name: Arc::from(marker), ..key.clone() },
        None => key.clone(),
    }
}

/// Creation and deletion counts from a run's stored events, in key order. The step of the
/// latest creation or deletion is the event's revision; its virtual time is unknown.
pub fn counts_from_events<'a>(events: impl IntoIterator<Item = &'a StoredEvent>) -> Vec<ObjectCount> {
    let entries = events.into_iter().filter_map(|event| {
        let counts = match event.kind {
            StoredEventType::Added => Counts { created: 1, deleted: 0 },
            StoredEventType::Deleted => Counts { created: 0, deleted: 1 },
            StoredEventType::Modified => return None,
        };
        Some(ObjectCount {
            key: count_key(&event.key, &event.object),
            counts,
            last: Some(LastChange { step: event.revision, at_millis: None }),
            child: children::parent_of(&event.key.resource, &event.object).is_some(),
        })
    });
    sum_counts(entries).into_values().collect()
}

/// Creation and deletion counts from the engine's per-object [`Lifecycles`] of one cluster (the
/// whole run's, unlike the server's bounded event log), keyed by [`count_key`], in key order.
pub fn counts_from_lifecycles(lifecycles: &Lifecycles) -> Vec<ObjectCount> {
    let entries = lifecycles.iter().map(|(key, lifecycle)| ObjectCount {
        key: count_key(key, &lifecycle.object),
        counts: Counts { created: lifecycle.created, deleted: lifecycle.deleted },
        last: Some(LastChange {
            step: lifecycle.last_revision,
            at_millis: Some(u64::try_from(lifecycle.last_at.as_millis()).unwrap_or(u64::MAX)),
        }),
        child: children::parent_of(&key.resource, &lifecycle.object).is_some(),
    });
    sum_counts(entries).into_values().collect()
}

/// Entries summed by key (generated names share one); the latest change is the latest step, and
/// a key is a child's if any entry is.
fn sum_counts(list: impl IntoIterator<Item = ObjectCount>) -> BTreeMap<ObjectKey, ObjectCount> {
    let mut map: BTreeMap<ObjectKey, ObjectCount> = BTreeMap::new();
    for entry in list {
        let sum = map.entry(entry.key.clone()).or_insert_with(|| ObjectCount {
            key: entry.key.clone(),
            counts: Counts::default(),
            last: None,
            child: false,
        });
        sum.counts.created += entry.counts.created;
        sum.counts.deleted += entry.counts.deleted;
        sum.last = sum.last.max(entry.last);
        sum.child |= entry.child;
    }
    map
}

/// The count keys whose counts differ between two fault-free runs (what [`Mask::learn_counts`]
/// masks), in key order.
pub(crate) fn differing_counts(a: &[ObjectCount], b: &[ObjectCount]) -> Vec<ObjectKey> {
    diff_counts(a, b, &Mask::none()).into_iter().map(|d| d.key().clone()).collect()
}

/// Compare per-object counts. Entries with the same key are summed; a key absent on one side
/// counts zero there. Skipped: resources the mask masks whole (by storage key or `*`: counts
/// carry no kind, so a whole-object rule naming a kind does not apply here), keys whose counts
/// the mask masks ([`Mask::masks_counts`]: learned from two fault-free runs), and with the
/// built-in masks on, the children of built-in controllers ([`ObjectCount::child`]: how many
/// ReplicaSets or Pods a rollout made is history).
pub fn diff_counts(expected: &[ObjectCount], found: &[ObjectCount], mask: &Mask) -> Vec<Difference> {
    let expected = sum_counts(expected.iter().cloned());
    let found = sum_counts(found.iter().cloned());
    let keys: BTreeSet<&ObjectKey> = expected.keys().chain(found.keys()).collect();
    let child = |key: &ObjectKey| [expected.get(key), found.get(key)].into_iter().flatten().any(|c| c.child);
    keys.into_iter()
        .filter(|key| !mask.masks_counts(key))
        .filter(|key| !(mask.is_builtin_on() && child(key)))
        .filter_map(|key| {
            let e = expected.get(key).map(|c| c.counts).unwrap_or_default();
            let (f, last) = found.get(key).map(|c| (c.counts, c.last)).unwrap_or_default();
            (e != f).then(|| Difference::Count { key: key.clone(), expected: e, found: f, last })
        })
        .collect()
}

/// Every difference between `found` and `expected` under `mask`, ordered by object key.
///
/// Objects are matched by key (resource, namespace, name), except that with the built-in masks
/// on, objects whose name was generated from `metadata.generateName`, and the children of
/// built-in controllers (see the crate's section on generated objects), are matched as a
/// multiset per (resource, namespace, generateName or name with its hash suffix replaced, owner
/// kind and name): identical objects pair first, the rest pair in order of their canonical form,
/// and what is left over is missing or extra. Retired children (a Deployment's ReplicaSets
/// scaled to zero, ControllerRevisions, a CronJob's finished Jobs, terminated Pods) are history
/// and not compared.
pub fn diff(expected: &Snapshot, found: &Snapshot, mask: &Mask) -> Vec<Difference> {
    diff_prepared(&Prepared::new(expected, mask), found, mask)
}

/// A snapshot normalized once under a mask, to be compared with many others by
/// [`diff_prepared`]: a sweep's reference, which every seed's end state is compared with.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The objects matched by name, normalized.
    named: BTreeMap<ObjectKey, Value>,
    /// The generated objects, grouped and sorted for pairing.
    generated: BTreeMap<GroupKey, Vec<Generated>>,
}

impl Prepared {
    /// `snapshot` under `mask`: [`diff_prepared`] with it answers what [`diff`] with `snapshot`
    /// answers.
    pub fn new(snapshot: &Snapshot, mask: &Mask) -> Prepared {
        let side = Side::new(snapshot, mask);
        let named = side
            .named
            .iter()
            .map(|(key, object)| ((*key).clone(), side.normalizer.normalize(key, object)))
            .collect();
        Prepared { named, generated: side.generated }
    }
}

/// [`diff`] with the expected side [`Prepared`] (under the same `mask`).
pub fn diff_prepared(expected: &Prepared, found: &Snapshot, mask: &Mask) -> Vec<Difference> {
    let found = Side::new(found, mask);
    let mut out = Vec::new();

    let keys: BTreeSet<&ObjectKey> = expected.named.keys().chain(found.named.keys().copied()).collect();
    for key in keys {
        match (expected.named.get(key), found.named.get(key)) {
            (Some(e), Some(f)) => {
                let f = found.normalizer.normalize(key, f);
                compare(key, &Path::default(), Some(e), Some(&f), 0, &mut out);
            }
            (Some(_), None) => out.push(Difference::Missing { key: key.clone() }),
            (None, Some(_)) => out.push(Difference::Extra { key: key.clone() }),
            (None, None) => {}
        }
    }

    let groups: BTreeSet<&GroupKey> = expected.generated.keys().chain(found.generated.keys()).collect();
    for group in groups {
        let none = Vec::new();
        let e = expected.generated.get(group).unwrap_or(&none);
        let f = found.generated.get(group).unwrap_or(&none);
        pair_generated(e, f, &mut out);
    }

    // Stable, so the differences within one object keep their path order.
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out
}

/// Objects generated from one prefix, or made by one built-in parent, are matched within a
/// group of this key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    resource: Arc<str>,
    namespace: Arc<str>,
    /// The generateName, else the name, with hash suffixes replaced by their stand-ins.
    name: String,
    /// The controller owner reference (else the first one): kind and normalised name.
    owner: Option<(String, String)>,
}

/// A generated object in canonical form.
#[derive(Clone, Debug)]
struct Generated {
    canonical: String,
    key: ObjectKey,
    value: Value,
}

/// One snapshot, split into objects matched by name and generated objects grouped for pairing.
struct Side<'a> {
    normalizer: Normalizer<'a>,
    named: BTreeMap<&'a ObjectKey, &'a DynamicObject>,
    generated: BTreeMap<GroupKey, Vec<Generated>>,
}

impl<'a> Side<'a> {
    fn new(snapshot: &'a Snapshot, mask: &'a Mask) -> Self {
        let normalizer = Normalizer::new(snapshot, mask);
        let mut named = BTreeMap::new();
        let mut generated: BTreeMap<GroupKey, Vec<Generated>> = BTreeMap::new();
        for (key, object) in &snapshot.objects {
            if mask.masks_object(&key.resource, kind_of(object)) {
                continue;
            }
            let child = mask.is_builtin_on() && children::parent_of(&key.resource, object).is_some();
            if child && children::is_retired(&key.resource, object) {
                continue;
            }
            let prefix = generated_marker(object).and(object.metadata.generate_name.as_deref());
            let group_name = match prefix {
                Some(prefix) => Some(normalizer.hashed(prefix)),
                None => child.then(|| normalizer.hashed(&key.name)),
            };
            match group_name.filter(|_| mask.is_builtin_on()) {
                Some(name) => {
                    let group = GroupKey {
                        resource: key.resource.clone(),
                        namespace: key.namespace.clone(),
                        name,
                        owner: owner_of(object, &normalizer),
                    };
                    let value = normalizer.normalize(key, object);
                    let canonical = value.to_string();
                    generated.entry(group).or_default().push(Generated {
                        canonical,
                        key: key.clone(),
                        value,
                    });
                }
                None => {
                    named.insert(key, object.as_ref());
                }
            }
        }
        for list in generated.values_mut() {
            list.sort_by(|a, b| (&a.canonical, &a.key).cmp(&(&b.canonical, &b.key)));
        }
        Side { normalizer, named, generated }
    }
}

/// The owner a generated object is grouped by: its controller reference, else its first one.
fn owner_of(object: &DynamicObject, normalizer: &Normalizer<'_>) -> Option<(String, String)> {
    let refs = object.metadata.owner_references.as_deref()?;
    let owner = refs.iter().find(|r| r.controller == Some(true)).or_else(|| refs.first())?;
    Some((owner.kind.clone(), normalizer.name(&owner.name)))
}

/// Pair two sorted lists of generated objects: equal canonical forms first, then the rest in
/// order; report fields of unequal pairs and what is left over.
fn pair_generated(expected: &[Generated], found: &[Generated], out: &mut Vec<Difference>) {
    let (mut e_rest, mut f_rest) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    // A merge of two sorted lists: each step advances at least one index.
    while i < expected.len() && j < found.len() {
        match expected[i].canonical.cmp(&found[j].canonical) {
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => {
                e_rest.push(&expected[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                f_rest.push(&found[j]);
                j += 1;
            }
        }
    }
    e_rest.extend(&expected[i..]);
    f_rest.extend(&found[j..]);
    for (e, f) in e_rest.iter().zip(&f_rest) {
        compare(&f.key, &Path::default(), Some(&e.value), Some(&f.value), 0, out);
    }
    for e in e_rest.iter().skip(f_rest.len()) {
        out.push(Difference::Missing { key: e.key.clone() });
    }
    for f in f_rest.iter().skip(e_rest.len()) {
        out.push(Difference::Extra { key: f.key.clone() });
    }
}

/// Compare two canonical values under `path`, appending field differences. `null` counts as
/// absent, as it does for the API server.
fn compare(
    key: &ObjectKey,
    path: &Path,
    expected: Option<&Value>,
    found: Option<&Value>,
    depth: usize,
    out: &mut Vec<Difference>,
) {
    let expected = expected.filter(|v| !v.is_null());
    let found = found.filter(|v| !v.is_null());
    match (expected, found) {
        (None, None) => {}
        (Some(Value::Object(e)), Some(Value::Object(f))) if depth < DEPTH_MAX => {
            let names: BTreeSet<&String> = e.keys().chain(f.keys()).collect();
            for name in names {
                let child = path.child(Step::Key(name.clone()));
                compare(key, &child, e.get(name), f.get(name), depth + 1, out);
            }
        }
        (Some(Value::Array(e)), Some(Value::Array(f))) if depth < DEPTH_MAX => {
            for index in 0..e.len().max(f.len()) {
                let child = path.child(Step::Index(index));
                compare(key, &child, e.get(index), f.get(index), depth + 1, out);
            }
        }
        (e, f) if e == f => {}
        (e, f) => out.push(Difference::Field {
            key: key.clone(),
            path: path.clone(),
            expected: e.cloned(),
            found: f.cloned(),
        }),
    }
}
