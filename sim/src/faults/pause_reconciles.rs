//! `pauseReconciles`: the controller's reconciles are held for `durationMs` while its caches keep
//! advancing, so intermediate states go unobserved (diffing against a missed intermediate spec:
//! cassandra-op-398).
//!
//! - swarm: the pause is the generic duration;
//! - firing: no reconcile of the node starts until the pause ends ([`reconcile_gate`]);
//! - shrinking: a shorter pause;
//! - guided: just before every reconcile starts.

use std::time::Duration;

use crate::faults::injector::Gated;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::world::{World, WorldState};

/// The operations of [`Fault::PauseReconciles`].
pub(crate) struct PauseReconciles;

impl FaultKindOps for PauseReconciles {
    fn kind(&self) -> FaultKind {
        FaultKind::PauseReconciles
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::PauseReconciles { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    fn fire(&self, w: &mut WorldState, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::PauseReconciles { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let until = firing.now + Duration::from_millis(*duration_ms);
        let node = w.injector.node(controller);
        node.reconciles_paused_until = node.reconciles_paused_until.max(Some(until));
        CallEffect::None
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::PauseReconciles { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        let PointSite::Reconcile { controller, .. } = site else { return Vec::new() };
        vec![Fault::PauseReconciles { controller: (*controller).to_owned(), duration_ms: config.pause_ms }]
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::PauseReconciles { controller: a, .. }, Fault::PauseReconciles { controller: b, .. }) => {
                a == b
            }
            _ => false,
        }
    }
}

/// At most this many pause rounds: each sleeps until the current pause ends, and pauses are set
/// by fired faults, which are finite.
const PAUSE_ROUNDS_MAX: usize = 64;

/// Before a controller starts reconciles: wait while its reconciles are paused.
pub(crate) async fn reconcile_gate(world: &World, node: &str) {
    for _ in 0..PAUSE_ROUNDS_MAX {
        let wait = world.with(|w| {
            let now = w.elapsed();
            let until = w.injector.nodes.get(node)?.reconciles_paused_until?;
            (now < until).then(|| until - now)
        });
        match wait {
            Some(wait) => {
                let _gated = Gated::enter(world);
                madsim::time::sleep(wait).await;
            }
            None => return,
        }
    }
}
