//! `pauseReconciles`: the controller's reconciles are held for `durationMs` while its caches keep
//! advancing, so intermediate states go unobserved (diffing against a missed intermediate spec:
//! cassandra-op-398).
//!
//! - swarm: the pause is the generic duration;
//! - firing: no reconcile of the node starts until the pause ends ([`reconcile_gate`]);
//! - shrinking: a shorter pause;
//! - guided: just before every reconcile starts; and as a timed outage, from a site of the
//!   controller until after one, two or three more workload steps.

use std::time::Duration;

use crate::faults::ctx::{FaultCtx, Host};
use crate::faults::injector::Gated;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// The operations of [`Fault::PauseReconciles`].
pub(crate) struct PauseReconciles;

impl FaultKindOps for PauseReconciles {
    fn kind(&self) -> FaultKind {
        FaultKind::PauseReconciles
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::PauseReconciles { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::PauseReconciles { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let until = firing.now + Duration::from_millis(*duration_ms);
        let node = w.injector.node(controller);
        node.reconciles_paused_until = node.reconciles_paused_until.max(Some(until));
        CallEffect::None
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        (on.reconciles == 0).then_some("it runs no reconciles to pause")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("no reconcile was due while the pause lasted".to_owned())
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::PauseReconciles { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        match site {
            PointSite::Reconcile { controller, .. } => {
                vec![Fault::PauseReconciles {
                    controller: (*controller).to_owned(),
                    duration_ms: config.pause_ms,
                }]
            }
            PointSite::Outage { controller, duration_ms } => {
                vec![Fault::PauseReconciles {
                    controller: (*controller).to_owned(),
                    duration_ms: *duration_ms,
                }]
            }
            _ => Vec::new(),
        }
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
pub(crate) async fn reconcile_gate(host: &impl Host, node: &str) {
    for _ in 0..PAUSE_ROUNDS_MAX {
        let wait = host.with_faults(|w| {
            let now = w.elapsed();
            let until = w.injector.nodes.get(node)?.reconciles_paused_until?;
            (now < until).then(|| until - now)
        });
        match wait {
            Some(wait) => {
                host.with_faults(|w| w.injector.effect(node, FaultKind::PauseReconciles));
                let _gated = Gated::enter(host);
                madsim::time::sleep(wait).await;
            }
            None => return,
        }
    }
}
