//! `watchDisconnect`: every watch of the controller is cut (an API-server restart, a load
//! balancer reset); its informers re-watch from their last revision, and relist on 410. Exposes
//! cache rebuild bugs.
//!
//! - swarm: no parameters;
//! - firing: the node's disconnect epoch moves; each informer's next pull waits a reconnect
//!   ([`rewatch`]) and re-watches;
//! - shrinking: nothing to lower;
//! - guided: no points (coverage does not count it).

use std::sync::Arc;
use std::time::Duration;

use crate::decision::DecisionSource;
use crate::faults::ctx::FaultCtx;
use crate::faults::injector::REPLICA_STREAM;
use crate::faults::kind::{CallEffect, FaultKindOps, Firing, SwarmDraw, mismatch};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// A cut watch is re-established within this long (client-go's reflector backs off about a
/// second).
pub const REWATCH_DELAY_MS_MAX: u64 = 1_000;

/// The operations of [`Fault::WatchDisconnect`].
pub(crate) struct WatchDisconnect;

impl FaultKindOps for WatchDisconnect {
    fn kind(&self) -> FaultKind {
        FaultKind::WatchDisconnect
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::WatchDisconnect { controller: draw.controller.to_owned() }
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        on.informers.is_empty().then_some("it has no informer: no watch to cut")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("no informer of the controller pulled its watch again before the liveness phase: no watch was cut".to_owned())
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::WatchDisconnect { controller } = fault else { mismatch(self.kind(), fault) };
        w.injector.node(controller).disconnect_epoch += 1;
        CallEffect::None
    }
}

/// How long `informer`'s cut watch takes to come back, and the trace note that says so.
pub(crate) fn rewatch(decisions: &mut DecisionSource, informer: &Arc<str>) -> (Duration, String) {
    let delay = decisions.stream(REPLICA_STREAM).duration_ms(1, REWATCH_DELAY_MS_MAX);
    let text = format!("watch {informer} cut: re-watch from its last revision in {}ms", delay.as_millis());
    (delay, text)
}
