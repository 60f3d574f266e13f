//! `partition`: calls between the controller and the API server fail (client timeouts) and its
//! watches are held for `durationMs` (a node or network failure). Exposes progress assumptions.
//!
//! - swarm: the partition lasts the generic duration;
//! - firing: the node is partitioned until then (the injector's call and watch gates);
//! - shrinking: a shorter partition;
//! - guided: no points (coverage does not count it).

use std::time::Duration;

use crate::faults::kind::{CallEffect, FaultKindOps, Firing, Knob, SwarmDraw, mismatch};
use crate::faults::plan::{Fault, FaultKind};
use crate::world::WorldState;

/// The operations of [`Fault::Partition`].
pub(crate) struct Partition;

impl FaultKindOps for Partition {
    fn kind(&self) -> FaultKind {
        FaultKind::Partition
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::Partition { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    fn fire(&self, w: &mut WorldState, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::Partition { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let until = firing.now + Duration::from_millis(*duration_ms);
        let node = w.injector.node(controller);
        node.partitioned_until = node.partitioned_until.max(Some(until));
        CallEffect::None
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::Partition { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }
}
