//! `pauseLeader`: the controller's current leader replica is paused for `durationMs`; its Lease
//! expires, the other replica takes over, and the old leader wakes still believing it leads
//! (split brain). Exposes double writers.
//!
//! Needs a controller running with leader election, so
//! [`SwarmConfig::default`](crate::faults::SwarmConfig) leaves it off.
//!
//! - swarm: the pause is the generic duration;
//! - firing: only once a replica leads, that is once the group's Lease in the model names a
//!   holder (else it stays unfired, and the report says so); the [supervisor](super::supervisor)
//!   pauses the node the Lease names and resumes it;
//! - shrinking: a shorter pause;
//! - guided: just before every reconcile of a controller that renews a Lease.

use std::sync::Arc;
use std::time::Duration;

use crate::faults::ctx::FaultCtx;
use crate::faults::injector::NodeAction;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// The operations of [`Fault::PauseLeader`].
pub(crate) struct PauseLeader;

impl FaultKindOps for PauseLeader {
    fn kind(&self) -> FaultKind {
        FaultKind::PauseLeader
    }

    fn swarm_by_default(&self) -> bool {
        false
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        (!on.leader_elected)
            .then_some("it runs no leader election (it writes no Lease): there is no leader to pause")
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::PauseLeader { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    /// Pausing the leader of a controller without leader election (or before any replica leads)
    /// would do nothing.
    fn ready(&self, w: &FaultCtx<'_>, fault: &Fault) -> bool {
        let Fault::PauseLeader { controller, .. } = fault else { mismatch(self.kind(), fault) };
        w.current_leader(controller).is_some()
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::PauseLeader { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let duration = Duration::from_millis(*duration_ms);
        w.injector
            .push_action(NodeAction::PauseLeader { controller: Arc::from(controller.as_str()), duration });
        CallEffect::None
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::PauseLeader { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        match site {
            PointSite::Reconcile { controller, leader_elected: true } => vec![Fault::PauseLeader {
                controller: (*controller).to_owned(),
                duration_ms: config.leader_pause_ms,
            }],
            _ => Vec::new(),
        }
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::PauseLeader { controller: a, .. }, Fault::PauseLeader { controller: b, .. }) => a == b,
            _ => false,
        }
    }
}
