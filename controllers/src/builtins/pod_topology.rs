//! The scheduler-lite's filters that read where other Pods run: kube-scheduler's
//! `PodTopologySpread` and `InterPodAffinity` (`pkg/scheduler/framework/plugins`), in that order,
//! after `NodeResourcesFit`.
//!
//! - `PodTopologySpread`: each of the Pod's `topologySpreadConstraints` with `whenUnsatisfiable:
//!   DoNotSchedule` (the default profile's own constraints only score, so a Pod without
//!   constraints is not filtered). A Node without the constraint's `topologyKey` label fails with
//!   `node(s) didn't match pod topology spread constraints (missing required label)`, which no
//!   eviction undoes. Otherwise the Pods that match the constraint's selector (its `labelSelector`
//!   with `matchLabelKeys` merged from the Pod's labels, as the 1.33 scheduler merges them), in the
//!   Pod's namespace and not being deleted, are counted per topology domain over the Nodes that
//!   carry every constraint's key and pass its inclusion policies (`nodeAffinityPolicy: Honor`
//!   and `nodeTaintsPolicy: Ignore` by default). A Node fails with `node(s) didn't match pod
//!   topology spread constraints` when its domain's count, plus one if the Pod matches its own
//!   selector, less the smallest count of any domain (0 while there are fewer domains than
//!   `minDomains`, 1 by default), exceeds `maxSkew`.
//! - `InterPodAffinity`, with the required terms only (the preferred ones score):
//!   - the Pod's `podAffinity`: a Node must carry every term's `topologyKey`, and for every term
//!     some Pod that matches all the terms must run in the Node's domain, else `node(s) didn't
//!     match pod affinity rules` (no eviction undoes it). The first Pod of a group that matches its
//!     own terms may go anywhere while no Pod matches them;
//!   - the Pod's `podAntiAffinity`: no Pod matching a term may run in the Node's domain of that
//!     term, else `node(s) didn't match pod anti-affinity rules`;
//!   - the running Pods' `podAntiAffinity`: a Node in the domain of a running Pod whose term
//!     matches the incoming Pod fails with `node(s) didn't satisfy existing pods anti-affinity
//!     rules`.
//!
//!   A term selects Pods by its `labelSelector` (none: no Pod; the API server has merged its
//!   `matchLabelKeys` and `mismatchLabelKeys` in) in its `namespaces` and the namespaces its
//!   `namespaceSelector` selects (`{}`: all of them), or the owning Pod's namespace when it has
//!   neither.
//!
//! The Pods counted are those the scheduler's cache holds: bound to a Node and not finished
//! (terminating ones included, except in the spread counts), and the ones it assumed. Every count
//! is kept in ordered maps, so a decision depends only on the caches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use sim::api::ResourceExt;

use super::{labels, scheduler};

/// `InterPodAffinity`'s reason for a Node where the Pod's affinity finds no Pod.
pub const AFFINITY_RULES: &str = "node(s) didn't match pod affinity rules";
/// Its reason for a Node where a Pod the Pod's anti-affinity rejects runs.
pub const ANTI_AFFINITY_RULES: &str = "node(s) didn't match pod anti-affinity rules";
/// Its reason for a Node where a running Pod's anti-affinity rejects the Pod.
pub const EXISTING_ANTI_AFFINITY: &str = "node(s) didn't satisfy existing pods anti-affinity rules";
/// `PodTopologySpread`'s reason for a Node whose domain would be too crowded.
pub const SPREAD_CONSTRAINTS: &str = "node(s) didn't match pod topology spread constraints";
/// Its reason for a Node without a constraint's topology label.
pub const SPREAD_LABEL_MISSING: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// Each namespace's labels, for terms with a `namespaceSelector`.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// A topology domain: a label key and its value on a Node.
type Domain = (String, String);

/// The required terms of `pod`'s Pod affinity (`anti` false) or anti-affinity.
fn required_terms(pod: &Pod, anti: bool) -> &[PodAffinityTerm] {
    let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    let terms = if anti {
        affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_deref())
    } else {
        affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_deref())
    };
    terms.unwrap_or_default()
}

/// Whether scheduling `pod` needs the namespaces' labels: one of its required terms, or a
/// running Pod's required anti-affinity term, has a `namespaceSelector`.
pub fn needs_namespace_labels(pod: &Pod, placed: &[Vec<Arc<Pod>>]) -> bool {
    let has_selector = |terms: &[PodAffinityTerm]| terms.iter().any(|t| t.namespace_selector.is_some());
    has_selector(required_terms(pod, false))
        || has_selector(required_terms(pod, true))
        || placed.iter().flatten().any(|p| has_selector(required_terms(p, true)))
}

/// Whether `pod` waits on where other Pods run: it has required Pod affinity or anti-affinity
/// terms, or a `DoNotSchedule` spread constraint. A Pod bound or relabelled may let it in.
pub fn depends_on_other_pods(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let spreads = spec.and_then(|s| s.topology_spread_constraints.as_deref()).unwrap_or_default();
    !required_terms(pod, false).is_empty()
        || !required_terms(pod, true).is_empty()
        || spreads.iter().any(|c| c.when_unsatisfiable == "DoNotSchedule")
}

/// A Pod affinity term as the scheduler reads it (`framework.AffinityTerm`).
struct Term<'a> {
    namespaces: BTreeSet<&'a str>,
    namespace_selector: Option<&'a LabelSelector>,
    selector: Option<&'a LabelSelector>,
    topology_key: &'a str,
}

impl<'a> Term<'a> {
    /// `term` of `owner`: with neither `namespaces` nor a `namespaceSelector`, the owner's
    /// namespace.
    fn of(owner: &'a Pod, term: &'a PodAffinityTerm) -> Self {
        let listed = term.namespaces.iter().flatten().map(String::as_str);
        let namespaces =
            if term.namespaces.as_ref().is_none_or(Vec::is_empty) && term.namespace_selector.is_none() {
                owner.metadata.namespace.as_deref().into_iter().collect()
            } else {
                listed.collect()
            };
        Term {
            namespaces,
            namespace_selector: term.namespace_selector.as_ref(),
            selector: term.label_selector.as_ref(),
            topology_key: &term.topology_key,
        }
    }

    /// `AffinityTerm.Matches`: `pod` is in one of the term's namespaces and has the labels.
    fn matches(&self, pod: &Pod, namespaces: &NamespaceLabels) -> bool {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let in_namespace = self.namespaces.contains(namespace)
            || self.namespace_selector.is_some_and(|s| labels::matches(s, namespaces.get(namespace)));
        in_namespace && self.selector.is_some_and(|s| labels::matches(s, pod.metadata.labels.as_ref()))
    }
}

/// The domain of `node` for `key`, if it carries the label.
fn domain(node: &Node, key: &str) -> Option<Domain> {
    let value = node.metadata.labels.as_ref()?.get(key)?;
    Some((key.to_owned(), value.clone()))
}

/// A `DoNotSchedule` spread constraint as the scheduler reads it.
struct Constraint {
    key: String,
    max_skew: i64,
    min_domains: usize,
    /// `None`: the constraint has no `labelSelector` and matches no Pod.
    selector: Option<LabelSelector>,
    honor_node_affinity: bool,
    honor_taints: bool,
}

impl Constraint {
    fn matches(&self, pod: &Pod) -> bool {
        self.selector.as_ref().is_some_and(|s| labels::matches(s, pod.metadata.labels.as_ref()))
    }

    /// `matchNodeInclusionPolicies`: whether `node`'s Pods count for the incoming `pod`.
    fn includes(&self, pod: &Pod, node: &Node) -> bool {
        let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
        (!self.honor_node_affinity || scheduler::matches_affinity(pod, node))
            && (!self.honor_taints || scheduler::untolerated_taint(tolerations.iter(), node).is_none())
    }
}

/// `filterTopologySpreadConstraints`: `pod`'s `DoNotSchedule` constraints, each selector with
/// `matchLabelKeys` merged as `<key> In (<value>)` for the keys the Pod has.
fn constraints(pod: &Pod) -> Vec<Constraint> {
    let spreads =
        pod.spec.as_ref().and_then(|s| s.topology_spread_constraints.as_deref()).unwrap_or_default();
    let own = pod.metadata.labels.clone().unwrap_or_default();
    let honored = |policy: Option<&str>, default: bool| policy.map_or(default, |p| p == "Honor");
    spreads
        .iter()
        .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
        .map(|c| {
            let selector = c.label_selector.clone().map(|mut selector| {
                let merged = c.match_label_keys.iter().flatten().filter_map(|key| {
                    let value = own.get(key)?;
                    Some(LabelSelectorRequirement {
                        key: key.clone(),
                        operator: "In".to_owned(),
                        values: Some(vec![value.clone()]),
                    })
                });
                let merged: Vec<_> = merged.collect();
                if !merged.is_empty() {
                    selector.match_expressions.get_or_insert_with(Vec::new).extend(merged);
                }
                selector
            });
            Constraint {
                key: c.topology_key.clone(),
                max_skew: i64::from(c.max_skew),
                min_domains: usize::try_from(c.min_domains.unwrap_or(1)).unwrap_or(1),
                selector,
                honor_node_affinity: honored(c.node_affinity_policy.as_deref(), true),
                honor_taints: honored(c.node_taints_policy.as_deref(), false),
            }
        })
        .collect()
}

/// `PodTopologySpread`'s PreFilter state: the constraints and the matching Pods per domain.
struct Spread {
    constraints: Vec<Constraint>,
    counts: BTreeMap<Domain, i64>,
}

impl Spread {
    fn new(pod: &Pod, nodes: &[Arc<Node>], placed: &[Vec<Arc<Pod>>]) -> Option<Spread> {
        let constraints = constraints(pod);
        if constraints.is_empty() {
            return None;
        }
        let namespace = pod.metadata.namespace.as_deref();
        let mut counts = BTreeMap::new();
        for (node, running) in nodes.iter().zip(placed) {
            // Only Nodes that carry every constraint's key count (`nodeLabelsMatchSpreadConstraints`).
            let Some(domains) = constraints.iter().map(|c| domain(node, &c.key)).collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            for (constraint, domain) in constraints.iter().zip(domains) {
                if !constraint.includes(pod, node) {
                    continue;
                }
                let matching = running.iter().filter(|p| {
                    p.metadata.namespace.as_deref() == namespace
                        && p.metadata.deletion_timestamp.is_none()
                        && constraint.matches(p)
                });
                *counts.entry(domain).or_insert(0) += matching.count() as i64;
            }
        }
        Some(Spread { constraints, counts })
    }

    /// The global minimum for `constraint`: the smallest count of its key's domains, or 0 while
    /// there are fewer of them than `minDomains`.
    fn min_match(&self, constraint: &Constraint) -> i64 {
        let of_key = self.counts.iter().filter(|((key, _), _)| *key == constraint.key).map(|(_, n)| *n);
        let (domains, min) = of_key.fold((0, i64::MAX), |(d, m), n| (d + 1, m.min(n)));
        if domains < constraint.min_domains { 0 } else { min }
    }

    fn filter(&self, pod: &Pod, node: &Node) -> Option<(&'static str, bool)> {
        for constraint in &self.constraints {
            let Some(domain) = domain(node, &constraint.key) else {
                return Some((SPREAD_LABEL_MISSING, false));
            };
            let matching = self.counts.get(&domain).copied().unwrap_or(0);
            let own = i64::from(constraint.matches(pod));
            if matching + own - self.min_match(constraint) > constraint.max_skew {
                return Some((SPREAD_CONSTRAINTS, true));
            }
        }
        None
    }
}

/// `InterPodAffinity`'s PreFilter state.
struct InterPod<'p> {
    affinity: Vec<Term<'p>>,
    anti: Vec<Term<'p>>,
    /// Per domain, the Pods that match all of the Pod's affinity terms.
    affinity_counts: BTreeMap<Domain, i64>,
    /// Per domain, the Pods that match one of the Pod's anti-affinity terms.
    anti_counts: BTreeMap<Domain, i64>,
    /// Per domain, the running Pods with an anti-affinity term that matches the Pod.
    existing_anti_counts: BTreeMap<Domain, i64>,
    /// Whether the Pod matches all its own affinity terms (the first of a group may go anywhere).
    matches_own: bool,
}

impl<'p> InterPod<'p> {
    fn new(
        pod: &'p Pod,
        nodes: &[Arc<Node>],
        placed: &[Vec<Arc<Pod>>],
        namespaces: &NamespaceLabels,
    ) -> Option<InterPod<'p>> {
        let affinity: Vec<Term> = required_terms(pod, false).iter().map(|t| Term::of(pod, t)).collect();
        let anti: Vec<Term> = required_terms(pod, true).iter().map(|t| Term::of(pod, t)).collect();
        let matches_all = |p: &Pod| !affinity.is_empty() && affinity.iter().all(|t| t.matches(p, namespaces));
        let (mut affinity_counts, mut anti_counts, mut existing_anti_counts) =
            (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        for (node, running) in nodes.iter().zip(placed) {
            for other in running {
                for term in required_terms(other, true) {
                    let term = Term::of(other, term);
                    if let Some(domain) = domain(node, term.topology_key)
                        && term.matches(pod, namespaces)
                    {
                        *existing_anti_counts.entry(domain).or_insert(0) += 1;
                    }
                }
                if matches_all(other) {
                    for domain in affinity.iter().filter_map(|t| domain(node, t.topology_key)) {
                        *affinity_counts.entry(domain).or_insert(0) += 1;
                    }
                }
                for term in anti.iter().filter(|t| t.matches(other, namespaces)) {
                    if let Some(domain) = domain(node, term.topology_key) {
                        *anti_counts.entry(domain).or_insert(0) += 1;
                    }
                }
            }
        }
        if existing_anti_counts.is_empty() && affinity.is_empty() && anti.is_empty() {
            return None;
        }
        let matches_own = matches_all(pod);
        Some(InterPod { affinity, anti, affinity_counts, anti_counts, existing_anti_counts, matches_own })
    }

    fn filter(&self, node: &Node) -> Option<(&'static str, bool)> {
        let mut pods_exist = true;
        for term in &self.affinity {
            let Some(domain) = domain(node, term.topology_key) else {
                return Some((AFFINITY_RULES, false));
            };
            if self.affinity_counts.get(&domain).copied().unwrap_or(0) <= 0 {
                pods_exist = false;
            }
        }
        // The first Pod of a group that matches its own terms passes while no Pod matches them.
        let first_of_group = self.affinity_counts.is_empty() && self.matches_own;
        if !(pods_exist || first_of_group) {
            return Some((AFFINITY_RULES, false));
        }
        let crowded =
            |counts: &BTreeMap<Domain, i64>, domain: Domain| counts.get(&domain).is_some_and(|n| *n > 0);
        if self
            .anti
            .iter()
            .filter_map(|t| domain(node, t.topology_key))
            .any(|d| crowded(&self.anti_counts, d))
        {
            return Some((ANTI_AFFINITY_RULES, true));
        }
        let labels = node.labels();
        if labels.iter().any(|(k, v)| crowded(&self.existing_anti_counts, (k.clone(), v.clone()))) {
            return Some((EXISTING_ANTI_AFFINITY, true));
        }
        None
    }
}

/// Both plugins' PreFilter state for one scheduling cycle of one Pod.
pub struct Filters<'p> {
    pod: &'p Pod,
    spread: Option<Spread>,
    inter_pod: Option<InterPod<'p>>,
}

impl<'p> Filters<'p> {
    /// The state for `pod` against `nodes`, with `placed[i]` the Pods on `nodes[i]`.
    pub fn new(
        pod: &'p Pod,
        nodes: &[Arc<Node>],
        placed: &[Vec<Arc<Pod>>],
        namespaces: &NamespaceLabels,
    ) -> Self {
        Filters {
            pod,
            spread: Spread::new(pod, nodes, placed),
            inter_pod: InterPod::new(pod, nodes, placed, namespaces),
        }
    }

    /// Why `node` fails, `PodTopologySpread` first, and whether an eviction could undo it.
    pub fn rejection(&self, node: &Node) -> Option<(&'static str, bool)> {
        self.spread
            .as_ref()
            .and_then(|s| s.filter(self.pod, node))
            .or_else(|| self.inter_pod.as_ref().and_then(|a| a.filter(node)))
    }
}
