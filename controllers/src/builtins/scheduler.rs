//! The scheduler-lite's choice of a Node for a Pod: the default profile's filters that read the
//! Node object alone, a spreading choice among the Nodes that pass, and, when none does, the
//! message kube-scheduler writes into `PodScheduled=False` and its `FailedScheduling` event.
//!
//! What it checks, in the default profile's order, with upstream's reasons
//! (`pkg/scheduler/framework/plugins`):
//! - no Node at all: `no nodes available to schedule pods` (`ErrNoNodesAvailable`, checked before
//!   any plugin);
//! - a PreFilter rejection (the VolumeBinding plugin's, [`super::volume_binding::prefilter`])
//!   fails every Node with one message ([`prefilter_error`]);
//! - `NodeUnschedulable`: a cordoned Node (`spec.unschedulable`) unless the Pod tolerates the
//!   `node.kubernetes.io/unschedulable:NoSchedule` taint;
//! - `TaintToleration`: the first `NoSchedule` or `NoExecute` taint the Pod does not tolerate
//!   (`node(s) had untolerated taint {key: value}`);
//! - `NodeAffinity`: `spec.nodeSelector` and the required node affinity's terms (`matchExpressions`
//!   on labels with `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`; `matchFields` on
//!   `metadata.name`).
//!
//! - `NodePorts`: a container `hostPort` already taken on the Node by a Pod running there (same
//!   protocol, and the same `hostIP` or either of them unset or `0.0.0.0`): `node(s) didn't have
//!   free ports for the requested pod ports`;
//! - `NodeResourcesFit`: `Too many pods` past the Node's allocatable `pods`, then `Insufficient
//!   cpu`, `memory`, `ephemeral-storage` and `Insufficient <name>` for extended resources, each
//!   the Pod's request against the Node's allocatable less what the Pods running there request
//!   ([`pod_requests`]: containers summed, init containers as their maximum, sidecars added,
//!   `spec.overhead` on top). A Node whose status reports no allocatable resources counts as the
//!   kubelet-lite's own Node ([`super::kubelet::NODE_CAPACITY`]).
//!
//! A Node fails on its first failing filter (with all of `NodeResourcesFit`'s reasons); the
//! message counts the Nodes per reason, sorted as upstream's `FitError` sorts them, and ends with
//! the default preemption plugin's verdict: `Preemption is not helpful for scheduling` for the
//! Nodes whose rejection no eviction could undo (`UnschedulableAndUnresolvable`: the filters
//! before `NodePorts`, and a request larger than the whole Node), `No preemption victims found for
//! incoming pod` for the others where no Pod of lower priority runs, or `not eligible due to
//! preemptionPolicy=Never.` for a Pod that may not preempt.
//!
//! Preemption ([`preempt`], the `DefaultPreemption` plugin): a Pod no Node fits, with Pods of lower
//! `spec.priority` running (the API server resolves it from the `priorityClassName` when its Pod
//! admission plugins are on, as [`super::all`] turns them on), evicts the fewest of them, the least
//! important first, from the Node upstream's criteria pick (PodDisruptionBudgets violated, then the
//! victims' priorities, their number, their start times). The victims get `DisruptionTarget=True`
//! (reason `PreemptionByScheduler`), are deleted with their grace period and get a `Preempted`
//! event; the Pod is nominated to the Node (`status.nominatedNodeName`) and, while a victim is
//! still terminating, told `not eligible due to a terminating pod on the nominated node.`; a Pod
//! nominated to a Node counts on it for Pods of no higher priority, so the room is kept for it.
//! Where no eviction helps, the message counts per Node the reason it fits there even with every
//! lower-priority Pod gone. Not modelled: the candidate sampling of large clusters (every Node is
//! tried) and the asynchronous preemption of newer schedulers.
//!
//! - `VolumeBinding`: the Nodes the Pod's claims allow ([`super::volume_binding`]);
//! - `PodTopologySpread` and `InterPodAffinity`, with their required rules only
//!   ([`super::pod_topology`]).
//!
//! Not modelled: pod-level `spec.resources`,
//! and scoring beyond spreading (preferred affinity terms and `ScheduleAnyway` constraints are
//! not weighed): among the Nodes
//! that fit, the one with the fewest Pods bound to it is chosen, the first by name on a tie, so a
//! choice depends only on the caches and replays exactly. The Pods counted on a Node are those
//! of the kubelet-lite's Pod cache bound to it and those the scheduler-lite assumed on it (chosen
//! for it, their binding not in the cache yet), as kube-scheduler's cache assumes them: Pods
//! scheduled in quick succession never share a Node's room.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use model_apiserver::versions::Required;
use sim::api::ResourceExt;

use super::{labels, pod_topology, podgc, volume_binding};

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

/// Whether one of `selector`'s terms matches `node` (`NodeSelector` matching, as a volume's
/// node affinity is read).
pub fn node_selector_matches(selector: &k8s_openapi::api::core::v1::NodeSelector, node: &Node) -> bool {
    selector.node_selector_terms.iter().any(|term| term_matches(term, node))
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

/// The Node `pod` goes to: of those it fits, the one with the fewest Pods running on it
/// (`placed[i]`: the Pods bound to `nodes[i]` that have not finished, and those assumed on it),
/// the first by name on a tie; or the scheduler's message why none fits. `namespaces` holds the
/// namespaces' labels when a Pod affinity term selects namespaces by label
/// ([`pod_topology::needs_namespace_labels`]); `volumes` what the Pod's claims allow
/// ([`volume_binding::prefilter`]).
pub fn choose<'a>(
    pod: &Pod,
    nodes: &'a [Arc<Node>],
    placed: &[Vec<Arc<Pod>>],
    namespaces: &pod_topology::NamespaceLabels,
    volumes: &volume_binding::PodVolumes,
) -> Result<&'a Node, String> {
    if nodes.is_empty() {
        return Err(NO_NODES.to_owned());
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    let mut best: Option<(usize, String, &Node)> = None;
    let requests = pod_requests(pod);
    let topology = pod_topology::Filters::new(pod, nodes, placed, namespaces);
    for (node, running) in nodes.iter().zip(placed) {
        let name = node.name_any();
        let failed = node_rejection(pod, &requests, node, running, volumes, &topology);
        let Some((failed, resolvable)) = failed else {
            let load = running.len();
            if best.as_ref().is_none_or(|(l, n, _)| (load, &name) < (*l, n)) {
                best = Some((load, name, node));
            }
            continue;
        };
        for reason in failed {
            *reasons.entry(reason).or_default() += 1;
        }
        *preemption.entry(if resolvable { NO_VICTIMS } else { NOT_HELPFUL }).or_default() += 1;
    }
    match best {
        Some((_, _, node)) => Ok(node),
        None => Err(fit_error(pod, nodes.len(), &reasons, &preemption)),
    }
}

/// Why `pod` (which requests `requests`) fails on `node` running `running`: every filter in the
/// default profile's order, the first failing one's reasons, and whether an eviction could undo
/// them.
fn node_rejection(
    pod: &Pod,
    requests: &BTreeMap<String, f64>,
    node: &Node,
    running: &[Arc<Pod>],
    volumes: &volume_binding::PodVolumes,
    topology: &pod_topology::Filters,
) -> Option<(Vec<String>, bool)> {
    match rejection(pod, node) {
        Some(reason) => Some((vec![reason], false)),
        None => running_rejection(pod, requests, node, running)
            .or_else(|| volumes.rejection(node).map(|reason| (vec![reason.to_owned()], false)))
            .or_else(|| {
                topology.rejection(node).map(|(reason, resolvable)| (vec![reason.to_owned()], resolvable))
            }),
    }
}

/// A Pod's priority (`spec.priority`, which the API server resolves from its
/// `priorityClassName`; 0 without one).
pub fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// The condition reason of a Pod the scheduler evicts to make room (`v1.PodReasonPreemptionByScheduler`).
pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// The preemption plugin's verdict on a Pod whose earlier victims are still terminating.
pub const TERMINATING_ON_NOMINATED_NODE: &str =
    "not eligible due to a terminating pod on the nominated node.";

/// What the default preemption plugin (`DefaultPreemption`'s PostFilter) decides for a Pod no Node
/// fits.
#[derive(Debug)]
pub enum Preemption<'a> {
    /// Evict `victims` from `node` and nominate the Pod to it. `message` is the fit error the Pod
    /// carries meanwhile (no preemption part: the plugin succeeded).
    Evict { node: &'a Node, victims: Vec<Arc<Pod>>, message: String },
    /// Nothing to evict: the fit error with the plugin's verdict.
    Unschedulable(String),
}

/// `DefaultPreemption` for `pod`, which no Node fits (`placed`, `namespaces` and `volumes` as for
/// [`choose`]; `budgets` the cluster's PodDisruptionBudgets). As upstream's evaluator:
/// - a Pod with `preemptionPolicy: Never` preempts nothing; nor does one nominated to a Node where
///   a lower-priority Pod is still terminating by preemption (its victims are going);
/// - on each Node whose rejection an eviction could undo, the Pods of lower priority are the
///   potential victims; if the Pod does not fit with all of them gone, the Node is out; otherwise
///   they are put back one by one, most important first (higher priority, then earlier start),
///   those whose PodDisruptionBudget would be violated first, and each that still lets the Pod
///   fit is spared;
/// - the Node chosen has the fewest budget violations, then the lowest highest victim priority,
///   the lowest sum of priorities, the fewest victims, the latest start of its most important
///   victims, then the first by name.
pub fn preempt<'a>(
    pod: &Pod,
    nodes: &'a [Arc<Node>],
    placed: &[Vec<Arc<Pod>>],
    namespaces: &pod_topology::NamespaceLabels,
    volumes: &volume_binding::PodVolumes,
    budgets: &[PodDisruptionBudget],
) -> Preemption<'a> {
    let requests = pod_requests(pod);
    let topology = pod_topology::Filters::new(pod, nodes, placed, namespaces);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    // Whether an eviction could help on each Node (one that fits now, freed since, counts too).
    let mut helpful = Vec::with_capacity(nodes.len());
    for (node, running) in nodes.iter().zip(placed) {
        let failed = node_rejection(pod, &requests, node, running, volumes, &topology);
        helpful.push(failed.as_ref().is_none_or(|(_, resolvable)| *resolvable));
        for reason in failed.into_iter().flat_map(|(failed, _)| failed) {
            *reasons.entry(reason).or_default() += 1;
        }
    }
    // The fit error; the plugin's verdict follows it unless it found victims.
    let base = format!("0/{} nodes are available: {}.", nodes.len(), histogram(&reasons));
    if pod.spec.as_ref().and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
        return Preemption::Unschedulable(format!(
            "{base}{}",
            preemption_message(pod, nodes.len(), &BTreeMap::new())
        ));
    }
    let own = priority(pod);
    let nominated = pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref());
    if let Some(i) = nominated.and_then(|n| nodes.iter().position(|node| node.name_any() == n))
        && helpful[i]
        && placed[i].iter().any(|p| priority(p) < own && terminating_by_preemption(p))
    {
        // The message ends in a period, and the separator adds one.
        return Preemption::Unschedulable(format!("{base} preemption: {TERMINATING_ON_NOMINATED_NODE}."));
    }
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, helpful) in helpful.into_iter().enumerate() {
        if !helpful {
            *verdicts.entry(NOT_HELPFUL.to_owned()).or_default() += 1;
            continue;
        }
        match victims_on_node(pod, &requests, nodes, placed, i, namespaces, volumes, budgets) {
            Ok(candidate) => candidates.push(candidate),
            Err(failed) => {
                for reason in failed {
                    *verdicts.entry(reason).or_default() += 1;
                }
            }
        }
    }
    match pick_candidate(candidates) {
        Some(best) => Preemption::Evict { node: &nodes[best.node], victims: best.victims, message: base },
        None => Preemption::Unschedulable(format!(
            "{base} preemption: 0/{} nodes are available: {}.",
            nodes.len(),
            histogram(&verdicts)
        )),
    }
}

/// Whether `pod` is going because the scheduler preempted it (`podTerminatingByPreemption`).
fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.type_ == podgc::CONDITION_DISRUPTION_TARGET
                    && c.status == "True"
                    && c.reason.as_deref() == Some(REASON_PREEMPTION_BY_SCHEDULER)
            })
        })
}

/// One Node's victims (`selectVictimsOnNode`'s answer).
#[derive(Debug)]
struct Candidate {
    node: usize,
    victims: Vec<Arc<Pod>>,
    violating: usize,
}

/// The fewest Pods of lower priority whose eviction from `nodes[i]` lets `pod` fit, or the
/// reasons it fits there in no case.
#[allow(clippy::too_many_arguments)]
fn victims_on_node(
    pod: &Pod,
    requests: &BTreeMap<String, f64>,
    nodes: &[Arc<Node>],
    placed: &[Vec<Arc<Pod>>],
    i: usize,
    namespaces: &pod_topology::NamespaceLabels,
    volumes: &volume_binding::PodVolumes,
    budgets: &[PodDisruptionBudget],
) -> Result<Candidate, Vec<String>> {
    let own = priority(pod);
    let (mut potential, mut remaining): (Vec<Arc<Pod>>, Vec<Arc<Pod>>) =
        placed[i].iter().cloned().partition(|p| priority(p) < own);
    if potential.is_empty() {
        return Err(vec![NO_VICTIMS.to_owned()]);
    }
    let fits = |remaining: &[Arc<Pod>]| {
        let mut trial = placed.to_vec();
        trial[i] = remaining.to_vec();
        let topology = pod_topology::Filters::new(pod, nodes, &trial, namespaces);
        node_rejection(pod, requests, &nodes[i], remaining, volumes, &topology)
    };
    if let Some((failed, _)) = fits(&remaining) {
        return Err(failed);
    }
    // Most important first: higher priority, then the earlier start.
    potential.sort_by(|a, b| priority(b).cmp(&priority(a)).then_with(|| start_time(a).cmp(&start_time(b))));
    let (violating, sparing) = split_by_budget(&potential, budgets);
    let mut victims = Vec::new();
    let mut violations = 0;
    for (pod, violates) in
        violating.into_iter().map(|p| (p, true)).chain(sparing.into_iter().map(|p| (p, false)))
    {
        remaining.push(pod.clone());
        if fits(&remaining).is_some() {
            remaining.pop();
            victims.push(pod);
            violations += usize::from(violates);
        }
    }
    Ok(Candidate { node: i, victims, violating: violations })
}

fn start_time(pod: &Pod) -> Option<k8s_openapi::jiff::Timestamp> {
    pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0)
}

/// `filterPodsWithPDBViolation`: the Pods whose eviction would take a matching budget below zero
/// disruptions allowed (counted down Pod by Pod, in order), and the others. A Pod a budget already
/// lists as disrupted costs it nothing.
fn split_by_budget(pods: &[Arc<Pod>], budgets: &[PodDisruptionBudget]) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut allowed: Vec<i32> =
        budgets.iter().map(|b| b.status.as_ref().map_or(0, |s| *s.disruptions_allowed.value())).collect();
    let (mut violating, mut sparing) = (Vec::new(), Vec::new());
    for pod in pods {
        let mut violated = false;
        if pod.metadata.labels.as_ref().is_some_and(|l| !l.is_empty()) {
            for (budget, allowed) in budgets.iter().zip(allowed.iter_mut()) {
                let Some(selector) = budget.spec.as_ref().and_then(|s| s.selector.as_ref()) else { continue };
                if budget.metadata.namespace != pod.metadata.namespace
                    || labels::is_empty(selector)
                    || !labels::matches(selector, pod.metadata.labels.as_ref())
                {
                    continue;
                }
                let disrupted = budget.status.as_ref().and_then(|s| s.disrupted_pods.as_ref());
                if disrupted.is_some_and(|d| d.contains_key(&pod.name_any())) {
                    continue;
                }
                *allowed -= 1;
                violated |= *allowed < 0;
            }
        }
        if violated { violating.push(pod.clone()) } else { sparing.push(pod.clone()) }
    }
    (violating, sparing)
}

/// `pickOneNodeForPreemption`: a Node with no victim at once; otherwise the fewest budget
/// violations, the lowest highest victim priority, the lowest sum of priorities, the fewest
/// victims, the latest earliest start among the most important victims, the first by name.
fn pick_candidate(mut candidates: Vec<Candidate>) -> Option<Candidate> {
    if let Some(empty) = candidates.iter().position(|c| c.victims.is_empty()) {
        return Some(candidates.swap_remove(empty));
    }
    let highest = |c: &Candidate| c.victims.iter().map(|p| priority(p)).max().unwrap_or(i32::MIN);
    // Each priority shifted by 2^31, as upstream's, so that negative ones add up the same way.
    let sum = |c: &Candidate| c.victims.iter().map(|p| i64::from(priority(p)) + (1_i64 << 31)).sum::<i64>();
    let earliest_of_highest = |c: &Candidate| {
        let top = highest(c);
        c.victims.iter().filter(|p| priority(p) == top).filter_map(|p| start_time(p)).min()
    };
    candidates
        .into_iter()
        .enumerate()
        .min_by(|(ia, a), (ib, b)| {
            a.violating
                .cmp(&b.violating)
                .then_with(|| highest(a).cmp(&highest(b)))
                .then_with(|| sum(a).cmp(&sum(b)))
                .then_with(|| a.victims.len().cmp(&b.victims.len()))
                .then_with(|| earliest_of_highest(b).cmp(&earliest_of_highest(a)))
                .then_with(|| ia.cmp(ib))
        })
        .map(|(_, c)| c)
}

/// The preemption plugin's verdict on a Node where evicting Pods could make room but none may go.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// Its verdict on a Node where no eviction would help.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// `NodePorts`' reason.
pub const PORTS_TAKEN: &str = "node(s) didn't have free ports for the requested pod ports";

/// The filters that read the Pods running on `node`, in the default profile's order: `NodePorts`,
/// then `NodeResourcesFit`. Their reasons, and whether an eviction could undo them (`Unschedulable`
/// rather than `UnschedulableAndUnresolvable`).
fn running_rejection(
    pod: &Pod,
    requests: &BTreeMap<String, f64>,
    node: &Node,
    running: &[Arc<Pod>],
) -> Option<(Vec<String>, bool)> {
    let wanted = host_ports(pod);
    if !wanted.is_empty() {
        let taken: Vec<HostPort> = running.iter().flat_map(|p| host_ports(p)).collect();
        if wanted.iter().any(|w| taken.iter().any(|t| w.conflicts(t))) {
            return Some((vec![PORTS_TAKEN.to_owned()], true));
        }
    }
    let allocatable = allocatable(node);
    let amount = |map: &BTreeMap<String, f64>, name: &str| map.get(name).copied().unwrap_or(0.0);
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for other in running {
        for (name, value) in pod_requests(other) {
            *used.entry(name).or_default() += value;
        }
    }
    let mut reasons = Vec::new();
    let mut resolvable = true;
    if running.len() as f64 + 1.0 > amount(&allocatable, "pods") {
        reasons.push("Too many pods".to_owned());
    }
    // cpu, memory and ephemeral-storage first, then the others by name (upstream walks a Go map
    // for those, in no set order).
    let fixed = ["cpu", "memory", "ephemeral-storage"];
    let others = requests.keys().filter(|k| !fixed.contains(&k.as_str()) && k.as_str() != "pods");
    for name in fixed.iter().copied().chain(others.map(String::as_str)) {
        let want = amount(requests, name);
        if want <= 0.0 {
            continue;
        }
        let room = amount(&allocatable, name) - amount(&used, name);
        if want > room {
            reasons.push(format!("Insufficient {name}"));
            if want > amount(&allocatable, name) {
                resolvable = false;
            }
        }
    }
    (!reasons.is_empty()).then_some((reasons, resolvable))
}

/// What `pod` requests of each resource (`computePodResourceRequest`): the containers' requests
/// summed, each init container's with the sidecars started before it, the larger of the two per
/// resource, and `spec.overhead`. CPU is in cores and the others in their units, as parsed. A
/// container being resized in place counts the larger of its spec and what the kubelet reports
/// ([`super::kubelet_resize::container_requests`]).
pub fn pod_requests(pod: &Pod) -> BTreeMap<String, f64> {
    let sidecar = |c: &k8s_openapi::api::core::v1::Container| c.restart_policy.as_deref() == Some("Always");
    summed_requests(pod, |c, init| {
        if init && !sidecar(c) {
            spec_requests(c)
        } else {
            super::kubelet_resize::container_requests(pod, c, init)
        }
    })
}

/// What `pod`'s spec requests, as [`pod_requests`] sums it but from the spec alone (what a
/// resize asks of the Node).
pub fn pod_spec_requests(pod: &Pod) -> BTreeMap<String, f64> {
    summed_requests(pod, |c, _| spec_requests(c))
}

fn spec_requests(c: &k8s_openapi::api::core::v1::Container) -> BTreeMap<String, f64> {
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    requests
        .into_iter()
        .flatten()
        .map(|(k, q)| (k.clone(), super::quantity::value(q).unwrap_or(0.0)))
        .collect()
}

/// [`pod_requests`]'s sum of the containers' requests as `of` gives them (the container, whether
/// an init container).
fn summed_requests(
    pod: &Pod,
    of: impl Fn(&k8s_openapi::api::core::v1::Container, bool) -> BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let Some(spec) = pod.spec.as_ref() else { return BTreeMap::new() };
    let add = |into: &mut BTreeMap<String, f64>, from: &BTreeMap<String, f64>| {
        for (k, v) in from {
            *into.entry(k.clone()).or_default() += v;
        }
    };
    let max = |into: &mut BTreeMap<String, f64>, from: &BTreeMap<String, f64>| {
        for (k, v) in from {
            let slot = into.entry(k.clone()).or_default();
            *slot = slot.max(*v);
        }
    };
    let mut total = BTreeMap::new();
    for c in &spec.containers {
        add(&mut total, &of(c, false));
    }
    let (mut sidecars, mut init_max) = (BTreeMap::new(), BTreeMap::new());
    for c in spec.init_containers.iter().flatten() {
        let own = of(c, true);
        if c.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            max(&mut init_max, &sidecars);
        } else {
            let mut running = own;
            add(&mut running, &sidecars);
            max(&mut init_max, &running);
        }
    }
    max(&mut total, &init_max);
    let overhead =
        spec.overhead.iter().flatten().map(|(k, q)| (k.clone(), super::quantity::value(q).unwrap_or(0.0)));
    add(&mut total, &overhead.collect());
    total
}

/// A Node's allocatable resources, parsed; the kubelet-lite's own when the Node reports none.
pub fn allocatable(node: &Node) -> BTreeMap<String, f64> {
    let parse = |(k, q): (&String, &k8s_openapi::apimachinery::pkg::api::resource::Quantity)| {
        (k.clone(), super::quantity::value(q).unwrap_or(0.0))
    };
    match node.status.as_ref().and_then(|s| s.allocatable.as_ref()).filter(|a| !a.is_empty()) {
        Some(reported) => reported.iter().map(parse).collect(),
        None => super::kubelet::NODE_CAPACITY
            .iter()
            .map(|(k, v)| ((*k).to_owned(), model_apiserver::quantity::value(v).unwrap_or(0.0)))
            .collect(),
    }
}

/// A container port bound on its Node (`hostPort` > 0).
struct HostPort {
    ip: String,
    protocol: String,
    port: i32,
}

impl HostPort {
    /// `HostPortInfo`'s conflict: the same protocol and port, and the same IP or either unset
    /// (`0.0.0.0`, every address).
    fn conflicts(&self, other: &HostPort) -> bool {
        let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || any(&self.ip) || any(&other.ip))
    }
}

/// The host ports `pod`'s containers bind.
fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let ports = containers.iter().flat_map(|c| c.ports.iter().flatten());
    ports
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| HostPort {
            ip: p.host_ip.clone().unwrap_or_default(),
            protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
            port: p.host_port.unwrap_or_default(),
        })
        .collect()
}

/// `FitError.Error()` for Nodes rejected by filters: `0/N nodes are available: ` and the sorted
/// `<count> <reason>` histogram, then the preemption plugin's verdict on the same Nodes.
pub fn fit_error(
    pod: &Pod,
    nodes: usize,
    reasons: &BTreeMap<String, usize>,
    preemption: &BTreeMap<&str, usize>,
) -> String {
    format!(
        "0/{nodes} nodes are available: {}.{}",
        histogram(reasons),
        preemption_message(pod, nodes, preemption)
    )
}

/// `FitError.Error()` for a PreFilter rejection, which fails every Node with one message that no
/// eviction undoes.
pub fn prefilter_error(pod: &Pod, nodes: usize, message: &str) -> String {
    let preemption = BTreeMap::from([(NOT_HELPFUL, nodes)]);
    format!("0/{nodes} nodes are available: {message}.{}", preemption_message(pod, nodes, &preemption))
}

/// The sorted `<count> <reason>` histogram.
fn histogram<K: std::fmt::Display>(counts: &BTreeMap<K, usize>) -> String {
    let mut histogram: Vec<String> =
        counts.iter().map(|(reason, count)| format!("{count} {reason}")).collect();
    histogram.sort();
    histogram.join(", ")
}

/// The default preemption plugin's part of the message (`PostFilterMsg`), with its separator.
fn preemption_message(pod: &Pod, nodes: usize, verdicts: &BTreeMap<&str, usize>) -> String {
    if pod.spec.as_ref().and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
        // `PodEligibleToPreemptOthers`' message ends in a period, and the separator adds one.
        return " preemption: not eligible due to preemptionPolicy=Never..".to_owned();
    }
    format!(" preemption: 0/{nodes} nodes are available: {}.", histogram(verdicts))
}
