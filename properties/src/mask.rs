//! Masks for the differential oracle: which parts of an end state may legitimately differ from
//! the reference run's.
//!
//! Three sources, merged into one [`Mask`]:
//! - **built-in** ([`Mask::builtin`]): what differs between any two runs of a correct
//!   controller: identities (uid, resourceVersion), timestamps, generated names, managedFields,
//!   generation counts, and Events;
//! - **learned** ([`Mask::learn`]): fields that differed between two fault-free runs of the same
//!   scenario with different seeds, so differ without any fault; and ([`Mask::learn_counts`])
//!   objects those two runs created or deleted a different number of times;
//! - **user** ([`Mask::user`]): fields the author knows to be run-dependent, by kind or resource
//!   and path.

use std::collections::BTreeSet;
use std::fmt;

use model_apiserver::{ObjectKey, Snapshot};

use crate::Error;
use crate::diff::{Difference, ObjectCount, diff, differing_counts};
use crate::path::{PathPattern, Segment, Step};

/// Where a [`MaskRule`] came from (shown when rules are listed, so a person can tell a rule they
/// wrote from one the oracle learned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// Part of [`Mask::builtin`].
    Builtin,
    /// Found by [`Mask::learn`].
    Learned,
    /// Given to [`Mask::user`].
    User,
}

/// Which objects a [`MaskRule`] applies to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Every object.
    All,
    /// Objects whose kind (`Deployment`) or resource storage key (`apps/deployments`,
    /// `configmaps`) is this text. Kinds are CamelCase and storage keys lowercase, so one text
    /// never means both.
    Named(String),
}

impl Target {
    /// Whether an object of this resource (storage key) and kind is targeted.
    pub fn applies_to(&self, resource: &str, kind: Option<&str>) -> bool {
        match self {
            Target::All => true,
            Target::Named(name) => name == resource || kind == Some(name.as_str()),
        }
    }
}

/// One masked subtree: under `path`, in the objects `target` names. An empty path masks the
/// whole object, its existence included.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MaskRule {
    /// Where the rule came from.
    pub origin: Origin,
    /// Which objects it applies to.
    pub target: Target,
    /// The masked subtree.
    pub path: PathPattern,
}

impl fmt::Display for MaskRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = match self.origin {
            Origin::Builtin => "built-in",
            Origin::Learned => "learned",
            Origin::User => "user",
        };
        match &self.target {
            Target::All => write!(f, "{origin}: every object {}", self.path),
            Target::Named(name) => write!(f, "{origin}: {name} {}", self.path),
        }
    }
}

/// A set of mask rules, plus whether the built-in value normalisations are on.
///
/// Built-in masking is more than paths: with it on, the oracle also
/// - replaces every RFC 3339 timestamp in a field whose name ends in `Time` or `Timestamp`, or
///   is a container state's `startedAt` or `finishedAt` (`creationTimestamp`,
///   `deletionTimestamp`, conditions' `lastTransitionTime`, ...) by a
///   placeholder, anywhere in the object, so that presence is compared and the instant is not;
/// - replaces every string equal to the uid of an object in the same snapshot by
///   `<uid of resource namespace/name>` (owner labels such as `controller-uid` and selectors
///   then compare by identity);
/// - matches objects named by `metadata.generateName` by their generateName and owner instead
///   of their name, and replaces every string equal to such a name by `generateName*`;
/// - masks `metadata.generation` and compares `status.observedGeneration` (and conditions'
///   `observedGeneration`) by whether it equals the generation, not by value. Generation is
///   meaningful, but its value counts spec writes, and retries after faults legitimately write
///   more; what a user relies on is that the controller has observed the latest spec.
/// - orders `status.conditions` by type: a map keyed by type whose order only tells the history
///   of its writes (a condition set again moves to the end of the list).
///
/// - compares the objects the built-in controllers make (ReplicaSets, Pods, ControllerRevisions,
///   a CronJob's Jobs) by what their parent asked for, not by their history or their hash
///   names: retired ones (old ReplicaSets, revisions, finished Jobs, terminated Pods) are left
///   out, the rest matched per parent with hash suffixes replaced by stand-ins, their counts not
///   compared, and the parents' revision numbers and collision counts masked (see the crate's
///   section on generated objects).
///
/// Besides fields, a mask can hide an object's creation and deletion counts
/// ([`Mask::learn_counts`]): an object that two fault-free runs create a different number of
/// times is legitimately nondeterministic, and no run is faulted for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mask {
    rules: BTreeSet<MaskRule>,
    builtin: bool,
    /// Objects (as `count_key` keys them) whose counts are not compared.
    counts: BTreeSet<ObjectKey>,
    /// Resources (storage keys, or `*` for all) whose objects' counts are not compared.
    count_resources: BTreeSet<String>,
}

/// The built-in masked paths, for every object.
const BUILTIN_PATHS: &[&str] = &[
    "/metadata/uid",
    "/metadata/resourceVersion",
    "/metadata/managedFields",
    "/metadata/generation",
    "/metadata/ownerReferences/*/uid",
];

/// Built-in masked paths of one resource: a container's runtime id (`containerd://...`) is an
/// identity the kubelet makes up for each container run, as the server makes up uids; a volume's
/// `claimRef` holds the claim's resourceVersion when it was bound.
const BUILTIN_RESOURCE_PATHS: &[(&str, &str)] = &[
    ("persistentvolumes", "/spec/claimRef/resourceVersion"),
    ("pods", "/status/containerStatuses/*/containerID"),
    ("pods", "/status/containerStatuses/*/state/terminated/containerID"),
    ("pods", "/status/containerStatuses/*/lastState/terminated/containerID"),
    ("pods", "/status/initContainerStatuses/*/containerID"),
    ("pods", "/status/initContainerStatuses/*/state/terminated/containerID"),
    ("pods", "/status/initContainerStatuses/*/lastState/terminated/containerID"),
];

/// Resources masked whole by default: Events record what happened on the way (retries, errors),
/// not the end state, so a run with faults legitimately has different ones. Both Event APIs
/// (core/v1 and events.k8s.io/v1) share the one `events` store, as on kube-apiserver.
const BUILTIN_IGNORED_RESOURCES: &[&str] = &["events"];

impl Mask {
    /// No masking at all: objects are matched by name and every field is compared.
    pub fn none() -> Self {
        Mask {
            rules: BTreeSet::new(),
            builtin: false,
            counts: BTreeSet::new(),
            count_resources: BTreeSet::new(),
        }
    }

    /// The built-in masks (see [`Mask`] for what they cover).
    pub fn builtin() -> Self {
        let mut rules = BTreeSet::new();
        for path in BUILTIN_PATHS {
            let path = PathPattern::parse(path).expect("built-in mask paths are valid pointers");
            rules.insert(MaskRule { origin: Origin::Builtin, target: Target::All, path });
        }
        for (resource, path) in crate::children::HISTORY_PATHS.iter().chain(BUILTIN_RESOURCE_PATHS) {
            let path = PathPattern::parse(path).expect("built-in mask paths are valid pointers");
            rules.insert(MaskRule {
                origin: Origin::Builtin,
                target: Target::Named((*resource).to_owned()),
                path,
            });
        }
        for resource in BUILTIN_IGNORED_RESOURCES {
            rules.insert(MaskRule {
                origin: Origin::Builtin,
                target: Target::Named((*resource).to_owned()),
                path: PathPattern::default(),
            });
        }
        Mask { rules, builtin: true, counts: BTreeSet::new(), count_resources: BTreeSet::new() }
    }

    /// The fields that differ between two fault-free reference runs of one scenario (different
    /// seeds), compared under the built-in masks. Array indices are generalised to `*`, so one
    /// differing condition masks that field in every condition. Objects present in only one
    /// reference are not learnable (a scenario whose set of objects depends on the seed needs a
    /// user mask) and add no rule.
    pub fn learn(reference_a: &Snapshot, reference_b: &Snapshot) -> Self {
        let mut rules = BTreeSet::new();
        for difference in diff(reference_a, reference_b, &Mask::builtin()) {
            if let Difference::Field { key, path, .. } = difference {
                rules.insert(MaskRule {
                    origin: Origin::Learned,
                    target: Target::Named(key.resource.to_string()),
                    path: PathPattern::generalise(&path),
                });
            }
        }
        Mask { rules, builtin: false, counts: BTreeSet::new(), count_resources: BTreeSet::new() }
    }

    /// The objects whose creation or deletion counts differ between two fault-free reference
    /// runs (keyed as `count_key` keys them): a run is not faulted for differing there either.
    pub fn learn_counts(reference_a: &[ObjectCount], reference_b: &[ObjectCount]) -> Self {
        let counts = differing_counts(reference_a, reference_b).into_iter().collect();
        Mask { counts, ..Mask::none() }
    }

    /// This mask plus a user rule: `target` is a kind (`Deployment`), a resource storage key
    /// (`apps/deployments`) or `*` for every object; `path` is a dotted path
    /// (`.status.lastSeen`) or a JSON pointer (`/status/lastSeen`), see [`PathPattern`].
    pub fn user(mut self, target: &str, path: &str) -> Result<Self, Error> {
        let target = if target == "*" { Target::All } else { Target::Named(target.to_owned()) };
        let path = PathPattern::parse(path)?;
        self.rules.insert(MaskRule { origin: Origin::User, target, path });
        Ok(self)
    }

    /// The union of two masks (built-in normalisation is on if it is on in either).
    pub fn merge(mut self, other: &Mask) -> Self {
        self.rules.extend(other.rules.iter().cloned());
        self.builtin |= other.builtin;
        self.counts.extend(other.counts.iter().cloned());
        self.count_resources.extend(other.count_resources.iter().cloned());
        self
    }

    /// Every rule, in order (built-in, then learned, then user).
    pub fn rules(&self) -> impl Iterator<Item = &MaskRule> {
        self.rules.iter()
    }

    /// This mask plus a user rule on creation and deletion counts (as Sieve's per-test
    /// state-update-summary masks): `target` is `*` (no counts are compared), a resource storage
    /// key (`persistentvolumeclaims`, `apps/statefulsets`: no object of it), or one object as
    /// violations name it (`persistentvolumeclaims default/data-0`, `namespaces team-a`, or
    /// `pods default/web-*` for the objects generated from one prefix).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCountTarget`] for an empty target or part.
    pub fn user_counts(mut self, target: &str) -> Result<Self, Error> {
        let invalid =
            |reason: &str| Error::InvalidCountTarget { target: target.to_owned(), reason: reason.to_owned() };
        let target = target.trim();
        match target.split_once(' ') {
            None if target.is_empty() => return Err(invalid("it is empty")),
            None => {
                self.count_resources.insert(target.to_owned());
            }
            Some((resource, object)) => {
                let (namespace, name) = object.split_once('/').unwrap_or(("", object));
                if resource.is_empty() || name.is_empty() || name.contains(['/', ' ']) {
                    return Err(invalid("expected `resource`, `resource namespace/name` or `resource name`"));
                }
                self.counts.insert(ObjectKey {
                    resource: resource.into(),
                    namespace: namespace.into(),
                    name: name.into(),
                });
            }
        }
        Ok(self)
    }

    /// This mask plus the counts of one object (as `count_key` keys it).
    pub(crate) fn with_masked_count(mut self, key: ObjectKey) -> Self {
        self.counts.insert(key);
        self
    }

    /// The objects whose creation and deletion counts are not compared (learned, or user rules
    /// naming one object), in key order.
    pub fn masked_counts(&self) -> impl Iterator<Item = &ObjectKey> {
        self.counts.iter()
    }

    /// The resources (storage keys, `*` for all) whose counts are not compared (user rules).
    pub fn masked_count_resources(&self) -> impl Iterator<Item = &str> {
        self.count_resources.iter().map(String::as_str)
    }

    /// Whether the creation and deletion counts of `key` (as `count_key` keys it) are masked:
    /// by a learned or user rule on the object or its resource, or by a rule masking the
    /// resource's objects whole (by storage key or `*`).
    pub fn masks_counts(&self, key: &ObjectKey) -> bool {
        self.counts.contains(key)
            || self.count_resources.contains("*")
            || self.count_resources.contains(&*key.resource)
            || self.masks_object(&key.resource, None)
    }

    /// Whether the built-in value normalisations are on.
    pub fn is_builtin_on(&self) -> bool {
        self.builtin
    }

    /// Whether a whole object of this resource and kind is masked (its existence included).
    pub fn masks_object(&self, resource: &str, kind: Option<&str>) -> bool {
        self.rules.iter().any(|rule| rule.path.0.is_empty() && rule.target.applies_to(resource, kind))
    }

    /// Whether `path` in an object of this resource and kind lies in a masked subtree.
    pub fn covers(&self, resource: &str, kind: Option<&str>, path: &[Step]) -> bool {
        self.rules.iter().any(|rule| rule.target.applies_to(resource, kind) && rule.path.covers(path))
    }

    /// Remove every masked subtree from `value`, an object of this resource and kind. A masked
    /// array element becomes `null` rather than disappearing, so later indices keep their meaning.
    pub(crate) fn strip(&self, resource: &str, kind: Option<&str>, value: &mut serde_json::Value) {
        for rule in &self.rules {
            if rule.target.applies_to(resource, kind) && !rule.path.0.is_empty() {
                strip_path(value, &rule.path.0);
            }
        }
    }
}

/// Remove what `segments` matches under `value`. Recursion depth is the pattern's length.
fn strip_path(value: &mut serde_json::Value, segments: &[Segment]) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    match value {
        // A key names at most one member: removed or entered directly, no key copied.
        serde_json::Value::Object(map) => match first {
            Segment::Key(want) if rest.is_empty() => {
                map.remove(want);
            }
            Segment::Key(want) => {
                if let Some(child) = map.get_mut(want) {
                    strip_path(child, rest);
                }
            }
            Segment::Any if rest.is_empty() => map.clear(),
            Segment::Any => {
                for child in map.values_mut() {
                    strip_path(child, rest);
                }
            }
        },
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                let hit = match first {
                    Segment::Any => true,
                    Segment::Key(want) => want.parse::<usize>() == Ok(index),
                };
                if !hit {
                    continue;
                }
                if rest.is_empty() {
                    *item = serde_json::Value::Null;
                } else {
                    strip_path(item, rest);
                }
            }
        }
        _ => {}
    }
}
