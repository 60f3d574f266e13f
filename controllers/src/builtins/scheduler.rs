//! The scheduler-lite's choice of a Node for a Pod: the default profile's filters that read the
//! Node object alone, a spreading choice among the Nodes that pass, and, when none does, the
//! message kube-scheduler writes into `PodScheduled=False` and its `FailedScheduling` event.
//!
//! What it checks, in the default profile's order, with upstream's reasons
//! (`pkg/scheduler/framework/plugins`):
//! - no Node at all: `no nodes available to schedule pods` (`ErrNoNodesAvailable`, checked before
//!   any plugin);
//! - a PreFilter rejection (the VolumeBinding plugin's, [`super::kubelet::volume_binding_failure`])
//!   fails every Node with one message ([`prefilter_error`]);
//! - `NodeUnschedulable`: a cordoned Node (`spec.unschedulable`) unless the Pod tolerates the
//!   `node.kubernetes.io/unschedulable:NoSchedule` taint;
//! - `TaintToleration`: the first `NoSchedule` or `NoExecute` taint the Pod does not tolerate
//!   (`node(s) had untolerated taint {key: value}`);
//! - `NodeAffinity`: `spec.nodeSelector` and the required node affinity's terms (`matchExpressions`
//!   on labels with `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`; `matchFields` on
//!   `metadata.name`).
//!
//! A Node fails on its first failing filter; the message counts the Nodes per reason, sorted as
//! upstream's `FitError` sorts them, and ends with the default preemption plugin's verdict (every
//! one of these rejections is `UnschedulableAndUnresolvable`, so preemption is never helpful).
//!
//! Not modelled: resources (`NodeResourcesFit`: every Node has room), host ports, inter-Pod
//! affinity and topology spread, and scoring beyond spreading: among the Nodes that fit, the one
//! with the fewest Pods bound to it is chosen, the first by name on a tie, so a choice depends
//! only on the caches and replays exactly.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};
use sim::api::ResourceExt;

/// The scheduler's answer when no Node is registered (`ErrNoNodesAvailable`).
pub const NO_NODES: &str = "no nodes available to schedule pods";
/// `NodeUnschedulable`'s reason.
pub const NODE_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// `NodeAffinity`'s reason.
pub const AFFINITY_MISMATCH: &str = "node(s) didn't match Pod's node affinity/selector";
/// The taint a cordoned Node stands for (`v1.TaintNodeUnschedulable`).
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Why `pod` cannot run on `node`: the first filter that rejects it, in the default profile's
/// order; `None` if it fits.
pub fn rejection(pod: &Pod, node: &Node) -> Option<String> {
    let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    let spec = node.spec.as_ref();
    if spec.and_then(|s| s.unschedulable) == Some(true) {
        let cordon = Taint {
            key: TAINT_UNSCHEDULABLE.to_owned(),
            effect: "NoSchedule".to_owned(),
            ..Taint::default()
        };
        if !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            return Some(NODE_UNSCHEDULABLE.to_owned());
        }
    }
    if let Some(taint) = untolerated_taint(tolerations.iter(), node) {
        let value = taint.value.as_deref().unwrap_or_default();
        return Some(format!("node(s) had untolerated taint {{{}: {value}}}", taint.key));
    }
    (!matches_affinity(pod, node)).then(|| AFFINITY_MISMATCH.to_owned())
}

/// The first `NoSchedule` or `NoExecute` taint of `node` that none of `tolerations` tolerates
/// (`FindMatchingUntoleratedTaint` with `DoNotScheduleTaintsFilterFunc`).
pub fn untolerated_taint<'a, 'n>(
    tolerations: impl Iterator<Item = &'a Toleration> + Clone,
    node: &'n Node,
) -> Option<&'n Taint> {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    let mut blocking = taints.iter().filter(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"));
    blocking.find(|taint| !tolerations.clone().any(|t| tolerates(t, taint)))
}

/// `Toleration.ToleratesTaint`: an empty effect or key matches any; `Exists` any value, `Equal`
/// (the default) the same value.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    let key = toleration.key.as_deref().unwrap_or_default();
    if (!effect.is_empty() && effect != taint.effect) || (!key.is_empty() && key != taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" => {
            toleration.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// `NodeAffinity`'s filter: every `nodeSelector` label, and one of the required terms.
pub fn matches_affinity(pod: &Pod, node: &Node) -> bool {
    pod.spec.as_ref().is_none_or(|spec| spec_matches_affinity(spec, node))
}

/// [`matches_affinity`] for a Pod's spec (a template's, for the DaemonSet controller).
pub fn spec_matches_affinity(spec: &PodSpec, node: &Node) -> bool {
    let labels = node.labels();
    let selector = spec.node_selector.iter().flatten();
    if !selector.into_iter().all(|(k, v)| labels.get(k) == Some(v)) {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    required.is_none_or(|r| r.node_selector_terms.iter().any(|term| term_matches(term, node)))
}

/// A term matches when all its expressions (on labels) and fields (on the name) do; an empty
/// term matches no Node.
fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.labels();
    let name = node.name_any();
    expressions.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| r.key == "metadata.name" && requirement_matches(r, Some(&name)))
}

/// One requirement against the value it names (`None` when the label is absent).
fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let in_values = value.is_some_and(|v| values.iter().any(|x| x == v));
    let compare = |ordering: std::cmp::Ordering| {
        let (Some(value), [bound]) = (value, values) else { return false };
        match (value.parse::<i64>(), bound.parse::<i64>()) {
            (Ok(value), Ok(bound)) => value.cmp(&bound) == ordering,
            _ => false,
        }
    };
    match requirement.operator.as_str() {
        "In" => in_values,
        "NotIn" => !in_values,
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => compare(std::cmp::Ordering::Greater),
        "Lt" => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

/// The Node `pod` goes to: of those it fits, the one with the fewest Pods bound to it
/// (`bound(name)`), the first by name on a tie; or the scheduler's message why none fits.
pub fn choose<'a>(
    pod: &Pod,
    nodes: &'a [Arc<Node>],
    bound: impl Fn(&str) -> usize,
) -> Result<&'a Node, String> {
    if nodes.is_empty() {
        return Err(NO_NODES.to_owned());
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut best: Option<(usize, String, &Node)> = None;
    for node in nodes {
        if let Some(reason) = rejection(pod, node) {
            *reasons.entry(reason).or_default() += 1;
            continue;
        }
        let name = node.name_any();
        let load = bound(&name);
        if best.as_ref().is_none_or(|(l, n, _)| (load, &name) < (*l, n)) {
            best = Some((load, name, node));
        }
    }
    match best {
        Some((_, _, node)) => Ok(node),
        None => Err(fit_error(nodes.len(), &reasons)),
    }
}

/// `FitError.Error()` for Nodes rejected by filters: `0/N nodes are available: ` and the sorted
/// `<count> <reason>` histogram, then the preemption plugin's verdict.
pub fn fit_error(nodes: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut histogram: Vec<String> =
        reasons.iter().map(|(reason, count)| format!("{count} {reason}")).collect();
    histogram.sort();
    with_preemption(nodes, &histogram.join(", "))
}

/// `FitError.Error()` for a PreFilter rejection, which fails every Node with one message.
pub fn prefilter_error(nodes: usize, message: &str) -> String {
    with_preemption(nodes, message)
}

fn with_preemption(nodes: usize, reasons: &str) -> String {
    format!(
        "0/{nodes} nodes are available: {reasons}. preemption: 0/{nodes} nodes are available: {nodes} \
         Preemption is not helpful for scheduling."
    )
}
