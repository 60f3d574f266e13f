//! `staleReplica`: after the controller's next restart its informers list and watch from a lagging
//! API-server replica, `lagRevisions` behind storage (time travel: kubernetes#59848). Writes still
//! go to storage with real resourceVersion checks. Exposes acting on an old view: deleting by
//! name what was recreated (K8SPSMDB-430, zookeeper-312).
//!
//! - swarm: a lag in `1..=20` revisions, the restart delay the generic duration;
//! - firing: the node is killed; the [supervisor](super::supervisor) restarts it onto the replica
//!   ([`connect_replica`]), which catches up within [`REPLICA_CATCH_UP_MS_MAX`];
//!   an informer's relist with resourceVersion "0" (`ListSemantic::Any`) then reads the
//!   replica's past ([`replica_list`]), and its watch is held until the replica caught up. A
//!   consistent list (resourceVersion unset, kube-rs's `watcher::Config::default()`) is a quorum
//!   read: it reads storage, and the trace says the lag had no effect on it;
//! - conditions: the controller has an informer listing with resourceVersion "0"; swarm
//!   selection draws the fault on no other controller, and guided exploration plans it on no
//!   other;
//! - shrinking: a smaller lag, an earlier restart;
//! - guided: at every object transition that changes again later, each controller restarted at
//!   the later change onto a replica from just before the first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_core::params::{ListParams, VersionMatch};
use model_apiserver::Revision;

use crate::faults::ctx::FaultCtx;
use crate::faults::ctx::Host;
use crate::faults::injector::{NodeAction, REPLICA_STREAM};
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;
use crate::trace::TraceEvent;

/// A lagging replica catches up within this long after the restart that connected to it.
pub const REPLICA_CATCH_UP_MS_MAX: u64 = 2_000;

/// A lagging API-server replica a restarted node reads from.
#[derive(Clone, Debug)]
pub(crate) struct Replica {
    /// Per cluster, the revision the replica's watch cache holds.
    pub(crate) revisions: BTreeMap<Arc<str>, Revision>,
    /// Virtual time (since start) when it has caught up with storage.
    pub(crate) catch_up_at: Duration,
}

/// The operations of [`Fault::StaleReplica`].
pub(crate) struct StaleReplica;

impl FaultKindOps for StaleReplica {
    fn kind(&self) -> FaultKind {
        FaultKind::StaleReplica
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::StaleReplica {
            controller: draw.controller.to_owned(),
            lag_revisions: 1 + draw.stream.below(20),
            restart_after_ms: draw.duration_ms,
        }
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let planned = firing.planned;
        let Fault::StaleReplica { controller, lag_revisions, restart_after_ms } = &planned.fault else {
            mismatch(self.kind(), &planned.fault)
        };
        let node = w.injector.node(controller);
        node.dying = true;
        node.stale_lag_next_restart = Some(*lag_revisions);
        let reason = format!("crash before a stale-replica restart ({planned})");
        let restart_after = Duration::from_millis(*restart_after_ms);
        w.injector.push_action(NodeAction::Kill {
            node: Arc::from(controller.as_str()),
            restart_after,
            reason,
        });
        CallEffect::None
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        (!on.lists_any()).then_some(
            "every informer of it lists consistently (resourceVersion unset), a quorum read no lagging replica serves: the lag would have no effect",
        )
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some(
            "it restarted the controller (a crash), but no list was served from the lagging replica: its informers list consistently (resourceVersion unset), or none listed before the replica caught up"
                .to_owned(),
        )
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::StaleReplica { lag_revisions, restart_after_ms, .. } = fault else {
            mismatch(self.kind(), fault)
        };
        vec![Knob { value: lag_revisions, min: 1 }, Knob { value: restart_after_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        let PointSite::Transition { controller, lag_revisions } = site else { return Vec::new() };
        vec![Fault::StaleReplica {
            controller: (*controller).to_owned(),
            lag_revisions: *lag_revisions,
            restart_after_ms: config.stale_restart_after_ms,
        }]
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::StaleReplica { controller: a, .. }, Fault::StaleReplica { controller: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// Record the lagging replica a restarting node connects to (called by the supervisor).
pub(crate) fn connect_replica(w: &mut FaultCtx<'_>, node: &str) {
    let Some(lag) = w.injector.nodes.get_mut(node).and_then(|n| n.stale_lag_next_restart.take()) else {
        return;
    };
    let now = w.elapsed();
    let catch_up = w.decisions.stream(REPLICA_STREAM).duration_ms(1, REPLICA_CATCH_UP_MS_MAX);
    let revisions = w
        .clusters
        .iter()
        .map(|(name, c)| {
            let revision = c.server.revision().saturating_sub(lag).max(c.server.oldest_revision());
            (name.clone(), revision)
        })
        .collect();
    let text = format!(
        "{node} connects to a replica {lag} revisions behind, caught up in {}ms",
        catch_up.as_millis()
    );
    w.trace(&Arc::from(node), TraceEvent::Note { text });
    w.injector.node(node).replica = Some(Replica { revisions, catch_up_at: now + catch_up });
}

/// The list parameters of an informer's relist: a node on a lagging replica, listing with
/// resourceVersion "0" (served from the watch cache), reads the replica's past revision; the
/// answer's `Some(time)` holds its watch until the replica has caught up. A consistent list
/// (resourceVersion unset) is a quorum read that no lagging replica serves: it reads storage, and
/// the trace says that the lag had no effect on it.
pub(crate) fn replica_list(
    host: &impl Host,
    node: &Arc<str>,
    cluster: &str,
    informer: &str,
    mut params: ListParams,
) -> (ListParams, Option<Duration>) {
    let any = params.resource_version.as_deref() == Some("0");
    let lagging = host.with_faults(|w| {
        let now = w.elapsed();
        let replica = w.injector.nodes.get(&**node)?.replica.as_ref()?;
        if now >= replica.catch_up_at {
            return None;
        }
        let (revision, until) = (*replica.revisions.get(cluster)?, replica.catch_up_at);
        let current = w.clusters.get(cluster).map_or(revision, |c| c.server.revision());
        let description = if any {
            w.injector.effect(node, FaultKind::StaleReplica);
            format!(
                "{informer} lists with resourceVersion \"0\" from the lagging replica: revision {revision}, {} behind storage's {current}",
                current.saturating_sub(revision)
            )
        } else {
            format!(
                "{informer} lists consistently (resourceVersion unset), a quorum read no lagging replica serves: the lag has no effect on it (revision {current})"
            )
        };
        w.trace(node, TraceEvent::FaultEffect { description });
        any.then_some((revision, until))
    });
    match lagging {
        Some((revision, until)) => {
            params.resource_version = Some(revision.to_string());
            params.version_match = Some(VersionMatch::Exact);
            (params, Some(until))
        }
        None => (params, None),
    }
}
