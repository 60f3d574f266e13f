//! `crash`: kill the controller's node (caches, queue and memory lost) and restart it later; with
//! an API-call trigger, `side` says whether the call happened. Exposes intermediate states (a
//! crash between two writes: Sieve's rabbitmq-782, nifikop-49) and state kept only in memory.
//!
//! - swarm: the side is a coin toss, the restart delay the generic duration; only write triggers
//!   (never a rate);
//! - firing: the node's calls pend until the supervisor kills it; a crash before the triggering
//!   call answers it with a client timeout (the write never happens);
//! - shrinking: an earlier restart;
//! - guided: at every controller write that changed something, the crash after it (the
//!   intermediate state Sieve finds most with), then the crash before it (tried late).

use std::sync::Arc;
use std::time::Duration;

use crate::faults::ctx::FaultCtx;
use crate::faults::injector::{NodeAction, client_timeout};
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{CallSide, Fault, FaultKind};

/// The operations of [`Fault::Crash`].
pub(crate) struct Crash;

impl FaultKindOps for Crash {
    fn kind(&self) -> FaultKind {
        FaultKind::Crash
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::Crash {
            controller: draw.controller.to_owned(),
            side: if draw.stream.chance(0.5) { CallSide::Before } else { CallSide::After },
            restart_after_ms: draw.duration_ms,
        }
    }

    fn acts_on_call(&self) -> bool {
        true
    }

    fn swarm_rate(&self) -> bool {
        false
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let planned = firing.planned;
        let Fault::Crash { controller, side, restart_after_ms } = &planned.fault else {
            mismatch(self.kind(), &planned.fault)
        };
        w.injector.node(controller).dying = true;
        let reason = format!("crash fault ({planned})");
        let restart_after = Duration::from_millis(*restart_after_ms);
        w.injector.push_action(NodeAction::Kill {
            node: Arc::from(controller.as_str()),
            restart_after,
            reason,
        });
        match (firing.own_call, side) {
            (Some(_), CallSide::Before) => {
                CallEffect::Fail(Box::new(client_timeout("the client crashed before sending")))
            }
            _ => CallEffect::None,
        }
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::Crash { restart_after_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: restart_after_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        let PointSite::Write { controller } = site else { return Vec::new() };
        let crash = |side| Fault::Crash {
            controller: (*controller).to_owned(),
            side,
            restart_after_ms: config.restart_after_ms,
        };
        vec![crash(CallSide::After), crash(CallSide::Before)]
    }

    /// A crash before a write is mostly a crash after the previous one: tried late.
    fn point_tier(&self, fault: &Fault) -> u8 {
        match fault {
            Fault::Crash { side: CallSide::Before, .. } => 1,
            _ => 0,
        }
    }

    fn point_family(&self, fault: &Fault) -> String {
        let Fault::Crash { side, .. } = fault else { mismatch(self.kind(), fault) };
        format!("crash-{side:?}")
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::Crash { controller: a, side: s, .. }, Fault::Crash { controller: b, side: t, .. }) => {
                a == b && s == t
            }
            _ => false,
        }
    }
}
