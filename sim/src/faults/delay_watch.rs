//! `delayWatch`: extra delay on one informer's watch pulls (every informer of the node when the
//! resource is empty, each drawing its own delay), for `durationMs` after the fault fires. Watch
//! streams are independent: this reorders events across informers, and exposes controllers that
//! assume child events arrive after parent events.
//!
//! Bounded, as Sieve's delays are: an open-ended delay on every pull of every informer keeps a
//! world from ever catching up before the liveness phase.
//!
//! - swarm: every informer of the controller (empty resource), the extra delay the generic
//!   duration, then how long it lasts drawn for this kind only;
//! - firing: the delay is in force on the node until it ends; each pull that starts meanwhile
//!   waits the largest delay in force for its informer ([`pull_delay_ms`]);
//! - shrinking: a shorter delay, then a shorter time in force;
//! - guided: just before the write that caused every watch delivery to a controller, that
//!   informer delayed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_core::ApiResource;

use crate::decision::DecisionSource;
use crate::faults::ctx::FaultCtx;
use crate::faults::injector::names_resource;
use crate::faults::kind::{
    CallEffect, FaultKindOps, Firing, Knob, PointConfig, PointSite, SwarmDraw, mismatch,
};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::ControllerProfile;

/// The decision stream the per-informer extra delay of `DelayWatch` is drawn from.
pub const DELAY_STREAM: &str = "faults.delay";

/// One fired DelayWatch fault.
#[derive(Clone, Debug)]
pub(crate) struct WatchDelay {
    /// The informers' resource, or empty for every informer of the node.
    resource: String,
    /// Extra milliseconds per pull (the bound of the per-informer draw for an empty resource).
    extra_ms: u64,
    /// Virtual time (since start) when it ends: pulls starting from then on are not delayed.
    until: Duration,
    /// Per informer, the extra delay drawn for an empty resource (once, so that an informer's
    /// pulls keep one pace while informers drift apart).
    drawn: BTreeMap<Arc<str>, u64>,
}

/// The operations of [`Fault::DelayWatch`].
pub(crate) struct DelayWatch;

impl FaultKindOps for DelayWatch {
    fn kind(&self) -> FaultKind {
        FaultKind::DelayWatch
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::DelayWatch {
            controller: draw.controller.to_owned(),
            // Empty resource: every informer of the controller; the engine picks per watch.
            resource: String::new(),
            extra_ms: draw.duration_ms,
            // Drawn only for this kind, so that plans of the other kinds stay as they were.
            duration_ms: 1 + draw.stream.below(draw.config.duration_max_ms.max(1)),
        }
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::DelayWatch { controller, resource, extra_ms, duration_ms } = fault else {
            mismatch(self.kind(), fault)
        };
        let delay = WatchDelay {
            resource: resource.clone(),
            extra_ms: *extra_ms,
            until: firing.now + Duration::from_millis(*duration_ms),
            drawn: BTreeMap::new(),
        };
        w.injector.node(controller).watch_delays.push(delay);
        CallEffect::None
    }

    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        on.informers.is_empty().then_some("it has no informer: no watch to delay")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("no watch pull of the controller was delayed (none started while the delay was in force, or every delay drawn was 0ms)".to_owned())
    }

    fn knobs<'f>(&self, fault: &'f mut Fault) -> Vec<Knob<'f>> {
        let Fault::DelayWatch { extra_ms, duration_ms, .. } = fault else { mismatch(self.kind(), fault) };
        vec![Knob { value: extra_ms, min: 1 }, Knob { value: duration_ms, min: 1 }]
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        let PointSite::Delivery { controller, resource } = site else { return Vec::new() };
        vec![Fault::delay_watch(*controller, *resource, config.delay_ms)]
    }

    /// A delay on every informer (empty resource) has the shape of a delay on any one of them.
    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (
                Fault::DelayWatch { controller: a, resource: r, .. },
                Fault::DelayWatch { controller: b, resource: s, .. },
            ) => a == b && (s.is_empty() || r == s),
            _ => false,
        }
    }
}

/// The extra delay of `informer`'s pull (of `resource`) starting `now`: the largest of the node's
/// delays in force. Delays that ended are dropped for good: faults are bounded, so the informers
/// catch up.
pub(crate) fn pull_delay_ms(
    delays: &mut Vec<WatchDelay>,
    now: Duration,
    informer: &Arc<str>,
    resource: &ApiResource,
    decisions: &mut DecisionSource,
) -> u64 {
    delays.retain(|delay| now < delay.until);
    let mut extra = 0;
    for delay in delays {
        let ms = if delay.resource.is_empty() {
            let bound = delay.extra_ms;
            *delay
                .drawn
                .entry(informer.clone())
                .or_insert_with(|| decisions.stream(DELAY_STREAM).below(bound + 1))
        } else if names_resource(&delay.resource, &resource.kind, &resource.plural) {
            delay.extra_ms
        } else {
            0
        };
        extra = extra.max(ms);
    }
    extra
}
