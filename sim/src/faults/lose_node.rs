//! `loseNode`: a Node's kubelet goes silent for `durationMs`, then posts its status again.
//! Exposes controllers that take an unready Pod for a failed one, that take readiness for
//! monotonic, or that act on a Pod the cluster can no longer reach.
//!
//! What the cluster shows is what kube-controller-manager's node lifecycle controller writes
//! once a kubelet's heartbeats stop (`tryUpdateNodeHealth`, after `--node-monitor-grace-period`):
//! the Node's `Ready`, `MemoryPressure`, `DiskPressure` and `PIDPressure` conditions turn
//! `Unknown` (reason `NodeStatusUnknown`, "Kubelet stopped posting node status.", a new
//! `lastTransitionTime`, the last heartbeat kept; a condition the kubelet never posted is added
//! with reason `NodeStatusNeverUpdated`). `NetworkUnavailable` is left, as upstream leaves it.
//! When the fault ends the kubelet posts its status again: each condition the fault turned
//! `Unknown`, and that nobody has written since, gets back what it said before, with a new
//! heartbeat (and a new transition time); one it added is removed. The controllers that react
//! to the Node are the world's: with the built-ins on, the node lifecycle controller marks the
//! Node's Pods not Ready and taints it `node.kubernetes.io/unreachable`, the taint eviction
//! controller evicts what does not tolerate the taint, and the kubelet-lite leaves the Node's
//! Pods alone until it is back (`controllers::builtins`).
//!
//! The fault acts on a Node of the first declared cluster and on no controller, so
//! [`SwarmConfig::default`](crate::faults::SwarmConfig) leaves it off: a world opts in.
//!
//! - swarm: the Node is drawn among those of the profile's fault-free run (a world with none never
//!   draws the kind); the outage is the generic duration;
//! - firing: only while the Node exists (else it stays unfired, and the report says so); the
//!   [supervisor](crate::supervisor) writes the conditions, and writes them back when the
//!   duration is over or the liveness phase begins, whichever comes first;
//! - shrinking: a shorter outage;
//! - guided: each Node of the reference run's profile lost from just after each workload step
//!   until after one, two or three more (as a controller's timed outage spans them).

use std::sync::Arc;
use std::time::Duration;

use kube_core::{ApiResource, DynamicObject};
use model_apiserver::{ObjectKey, Request, Response, Subresource};
use serde_json::Value;

use crate::faults::SUPERVISOR_NODE;
use crate::faults::ctx::FaultCtx;
use crate::faults::injector::NodeAction;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::Profile;
use crate::trace::TraceEvent;

/// The conditions upstream sets `Unknown` when a kubelet goes silent, in its order.
const CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];
/// The reasons of a condition set `Unknown` for a silent kubelet (`NodeStatusUnknown`) or for one
/// that never posted it (`NodeStatusNeverUpdated`).
const SILENT: &str = "NodeStatusUnknown";
const NEVER: &str = "NodeStatusNeverUpdated";
/// Who writes what: the node lifecycle controller marks the Node, its kubelet posts it back.
const LIFECYCLE_MANAGER: &str = "kube-controller-manager";
const KUBELET_MANAGER: &str = "kubelet";

/// The operations of [`Fault::LoseNode`].
pub(crate) struct LoseNode;

impl FaultKindOps for LoseNode {
    fn kind(&self) -> FaultKind {
        FaultKind::LoseNode
    }

    fn needs_controller(&self) -> bool {
        false
    }

    fn swarm_by_default(&self) -> bool {
        false
    }

    fn cannot_act_in(&self, profile: &Profile) -> Option<&'static str> {
        profile.kube_nodes.is_empty().then_some(
            "the world has no Node (none declared, and no kubelet registered one): there is no kubelet to lose",
        )
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        let nodes = draw.config.profile.as_ref().map(|p| p.kube_nodes.as_slice()).unwrap_or_default();
        let node = if nodes.is_empty() {
            String::new()
        } else {
            nodes[draw.stream.below(nodes.len() as u64) as usize].clone()
        };
        Fault::LoseNode { node, duration_ms: draw.duration_ms }
    }

    /// Only a Node that exists can lose its kubelet.
    fn ready(&self, w: &FaultCtx<'_>, fault: &Fault) -> bool {
        let Fault::LoseNode { node, .. } = fault else { mismatch(self.kind(), fault) };
        target(w, node).is_some()
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::LoseNode { node, duration_ms } = fault else { mismatch(self.kind(), fault) };
        if let Some(node) = target(w, node) {
            let duration = Duration::from_millis(*duration_ms);
            w.injector.push_action(NodeAction::LoseNode { node, duration });
        }
        CallEffect::None
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::LoseNode { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, _config: &PointConfig) -> Vec<Fault> {
        match site {
            PointSite::NodeOutage { node, duration_ms } => {
                vec![Fault::LoseNode { node: (*node).to_owned(), duration_ms: *duration_ms }]
            }
            _ => Vec::new(),
        }
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::LoseNode { node: a, .. }, Fault::LoseNode { node: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// The Node `name` names in the first declared cluster (empty: its first Node by name), if it
/// exists.
fn target(w: &FaultCtx<'_>, name: &str) -> Option<Arc<str>> {
    let (_, snapshot) = w.default_snapshot()?;
    let mut nodes = snapshot.iter_resource(NODES, None);
    let (key, _) = if name.is_empty() { nodes.next()? } else { nodes.find(|(key, _)| &*key.name == name)? };
    Some(key.name.clone())
}

/// The storage key of Nodes.
const NODES: &str = "nodes";

/// What a lost Node's conditions said before the loss: per condition the fault set `Unknown`,
/// the condition as it was (`None`: it had none).
#[derive(Clone, Debug, Default)]
pub(crate) struct Before {
    conditions: Vec<(&'static str, Option<Value>)>,
}

/// The kubelet of Node `node` goes silent: its conditions turn `Unknown`, as the node lifecycle
/// controller writes them. Returns what they said before (to post back), and whether the write
/// changed the state (the caller reports it to the world); `None` if the Node is gone.
pub(crate) fn lose(w: &mut FaultCtx<'_>, node: &Arc<str>) -> Option<(Before, Option<Arc<str>>)> {
    let (cluster, current) = current_node(w, node)?;
    let now = timestamp(w);
    let mut object = current;
    let created = object.metadata.creation_timestamp.as_ref().map(|t| Value::String(t.0.to_string()));
    let conditions = conditions_mut(&mut object);
    let mut before = Before::default();
    for kind in CONDITIONS {
        match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)) {
            Some(condition) => {
                before.conditions.push((kind, Some(condition.clone())));
                if condition.get("status").and_then(Value::as_str) != Some("Unknown") {
                    condition["status"] = Value::from("Unknown");
                    condition["reason"] = Value::from(SILENT);
                    condition["message"] = Value::from("Kubelet stopped posting node status.");
                    condition["lastTransitionTime"] = Value::from(now.clone());
                }
            }
            None => {
                before.conditions.push((kind, None));
                let mut condition = serde_json::json!({
                    "type": kind,
                    "status": "Unknown",
                    "reason": NEVER,
                    "message": "Kubelet never posted node status.",
                    "lastTransitionTime": now,
                });
                if let Some(created) = &created {
                    condition["lastHeartbeatTime"] = created.clone();
                }
                conditions.push(condition);
            }
        }
    }
    let wrote = write_status(w, &cluster, object, LIFECYCLE_MANAGER, "kubelet silent: Ready Unknown");
    Some((before, wrote.then_some(cluster)))
}

/// The kubelet of Node `node` posts its status again: every condition the loss set `Unknown` that
/// is still `Unknown` for a silent kubelet says again what it said `before` (with a new heartbeat),
/// one the loss added goes. Returns the cluster written, if the write changed the state.
pub(crate) fn back(w: &mut FaultCtx<'_>, node: &Arc<str>, before: &Before) -> Option<Arc<str>> {
    let (cluster, mut object) = current_node(w, node)?;
    let now = timestamp(w);
    let conditions = conditions_mut(&mut object);
    let mut changed = false;
    for (kind, was) in &before.conditions {
        let Some(at) = conditions.iter().position(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        else {
            continue;
        };
        let current = &conditions[at];
        let silent = current.get("status").and_then(Value::as_str) == Some("Unknown")
            && matches!(current.get("reason").and_then(Value::as_str), Some(SILENT | NEVER));
        if !silent {
            // Written since (by a test, a workload, another fault's end): it stands.
            continue;
        }
        changed = true;
        match was {
            None => {
                conditions.remove(at);
            }
            Some(was) => {
                let mut posted = was.clone();
                posted["lastHeartbeatTime"] = Value::from(now.clone());
                if posted.get("status").and_then(Value::as_str) != Some("Unknown") {
                    posted["lastTransitionTime"] = Value::from(now.clone());
                }
                conditions[at] = posted;
            }
        }
    }
    if !changed {
        return None;
    }
    let wrote = write_status(w, &cluster, object, KUBELET_MANAGER, "kubelet posts its status again");
    wrote.then_some(cluster)
}

/// The Node as the first declared cluster stores it now, and that cluster's name.
fn current_node(w: &FaultCtx<'_>, node: &Arc<str>) -> Option<(Arc<str>, DynamicObject)> {
    let (cluster, snapshot) = w.default_snapshot()?;
    let key = ObjectKey { resource: Arc::from(NODES), namespace: Arc::from(""), name: node.clone() };
    let object = snapshot.get(&key)?;
    Some((cluster, (**object).clone()))
}

/// The virtual wall clock as a condition's time (RFC 3339, whole seconds, as the API serves it).
fn timestamp(w: &FaultCtx<'_>) -> String {
    w.wall().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `status.conditions` of `object`, made a list if it is missing.
fn conditions_mut(object: &mut DynamicObject) -> &mut Vec<Value> {
    if !object.data.is_object() {
        object.data = Value::Object(serde_json::Map::new());
    }
    let status = object.data.as_object_mut().expect("made an object above").entry("status");
    let status = status.or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !status.is_object() {
        *status = Value::Object(serde_json::Map::new());
    }
    let conditions = status.as_object_mut().expect("made an object above").entry("conditions");
    let conditions = conditions.or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    conditions.as_array_mut().expect("made a list above")
}

/// Update `object`'s status as `manager`, and trace what happened (`what`, the new
/// resourceVersion or the server's refusal). Returns whether the state changed.
fn write_status(
    w: &mut FaultCtx<'_>,
    cluster: &Arc<str>,
    object: DynamicObject,
    manager: &str,
    what: &str,
) -> bool {
    let name = object.metadata.name.clone().unwrap_or_default();
    let nodes = ApiResource {
        group: String::new(),
        version: "v1".to_owned(),
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        plural: NODES.to_owned(),
    };
    let mut request = Request::update(&nodes, None, &name, object, kube_core::params::PostParams::default())
        .with_subresource(Subresource::Status);
    request.user = Some(Arc::from(manager));
    let (result, wrote) = w.control_plane_write(cluster, request);
    let text = match result {
        Ok(Response::Object(o)) => format!(
            "Node {name}: {what} (resourceVersion {})",
            o.metadata.resource_version.as_deref().unwrap_or_default()
        ),
        Ok(_) => format!("Node {name}: {what}"),
        Err(status) => {
            format!("Node {name}: {what}: the server refused it: {} {}", status.code, status.message)
        }
    };
    w.trace(&Arc::from(SUPERVISOR_NODE), TraceEvent::Note { text });
    wrote
}
