//! `ambiguous`: the triggering write is applied by the server, but the client sees 504 Timeout
//! (a lost response). Exposes non-idempotent creates and double actions.
//!
//! - swarm: no parameters; a write trigger or (one time in three) a rate, drawn on writes only;
//! - firing: the controller's own triggering call answers a timeout after it applied; a trigger
//!   that is not its call (an object, a time) arms the next write of the node;
//! - shrinking: nothing to lower;
//! - guided: at every controller write that changed something, after both crashes.

use crate::faults::ctx::FaultCtx;
use crate::faults::kind::{CallEffect, FaultKindOps, Firing, PointConfig, PointSite, SwarmDraw, mismatch};
use crate::faults::plan::{Fault, FaultKind};

/// The operations of [`Fault::Ambiguous`].
pub(crate) struct Ambiguous;

impl FaultKindOps for Ambiguous {
    fn kind(&self) -> FaultKind {
        FaultKind::Ambiguous
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::Ambiguous { controller: draw.controller.to_owned() }
    }

    fn acts_on_call(&self) -> bool {
        true
    }

    /// Ambiguity only makes sense on a write.
    fn rate_needs_write(&self) -> bool {
        true
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::Ambiguous { controller } = fault else { mismatch(self.kind(), fault) };
        match firing.own_call {
            Some(call) => CallEffect::Ambiguous(call),
            None => {
                w.injector.node(controller).armed_ambiguous += 1;
                CallEffect::None
            }
        }
    }

    fn points(&self, site: &PointSite<'_>, _config: &PointConfig) -> Vec<Fault> {
        let PointSite::Write { controller } = site else { return Vec::new() };
        vec![Fault::Ambiguous { controller: (*controller).to_owned() }]
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::Ambiguous { controller: a }, Fault::Ambiguous { controller: b }) => a == b,
            _ => false,
        }
    }
}
