//! `partition`: calls between the controller and the API server fail (client timeouts) and its
//! watches are held for `durationMs` (a node or network failure). Exposes progress assumptions.
//!
//! - swarm: the partition lasts the generic duration;
//! - firing: the node is partitioned until then (the injector's call and watch gates);
//! - shrinking: a shorter partition;
//! - guided: timed outages, from a site of the controller until after one, two or three more
//!   workload steps of the reference run.

use std::time::Duration;

use crate::faults::ctx::FaultCtx;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// The operations of [`Fault::Partition`].
pub(crate) struct Partition;

impl FaultKindOps for Partition {
    fn kind(&self) -> FaultKind {
        FaultKind::Partition
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::Partition { controller: draw.controller.to_owned(), duration_ms: draw.duration_ms }
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::Partition { controller, duration_ms } = fault else { mismatch(self.kind(), fault) };
        let until = firing.now + Duration::from_millis(*duration_ms);
        let node = w.injector.node(controller);
        node.partitioned_until = node.partitioned_until.max(Some(until));
        CallEffect::None
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        (on.calls == 0 && on.informers.is_empty())
            .then_some("it makes no API calls and watches nothing: a partition has no traffic to cut")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("the controller made no call and pulled no watch while partitioned".to_owned())
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::Partition { duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, _config: &PointConfig) -> Vec<Fault> {
        let PointSite::Outage { controller, duration_ms } = site else { return Vec::new() };
        vec![Fault::Partition { controller: (*controller).to_owned(), duration_ms: *duration_ms }]
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::Partition { controller: a, .. }, Fault::Partition { controller: b, .. }) => a == b,
            _ => false,
        }
    }
}
