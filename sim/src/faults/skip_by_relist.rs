//! `skipByRelist`: watch deliveries to the controller's informers are held for `durationMs`, then
//! the watch expires (410) and the informer relists: the events in between are never seen one by
//! one (missed delete events: yugabyte-39).
//!
//! - swarm: the hold is the generic duration;
//! - firing: the node's watches are held until the hold ends, and its relist epoch moves, so that
//!   every informer of the node relists after it (the injector's watch gate);
//! - shrinking: a shorter hold;
//! - guided: just before the write that caused every watch delivery to a controller; and as a
//!   timed outage, from a site of the controller until after one, two or three more workload
//!   steps.

use std::time::Duration;

use crate::faults::ctx::FaultCtx;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// The operations of [`Fault::SkipByRelist`].
pub(crate) struct SkipByRelist;

impl FaultKindOps for SkipByRelist {
    fn kind(&self) -> FaultKind {
        FaultKind::SkipByRelist
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::SkipByRelist { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::SkipByRelist { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let until = firing.now + Duration::from_millis(*duration_ms);
        let node = w.injector.node(controller);
        node.watch_held_until = node.watch_held_until.max(Some(until));
        node.relist_epoch += 1;
        CallEffect::None
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        on.informers.is_empty().then_some("it has no informer: no watch to hold, nothing to relist")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("no informer of the controller pulled its watch while held or relisted after it".to_owned())
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::SkipByRelist { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        match site {
            PointSite::Delivery { controller, .. } => {
                vec![Fault::SkipByRelist {
                    controller: (*controller).to_owned(),
                    duration_ms: config.hold_ms,
                }]
            }
            PointSite::Outage { controller, duration_ms } => {
                vec![Fault::SkipByRelist { controller: (*controller).to_owned(), duration_ms: *duration_ms }]
            }
            _ => Vec::new(),
        }
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::SkipByRelist { controller: a, .. }, Fault::SkipByRelist { controller: b, .. }) => a == b,
            _ => false,
        }
    }
}
