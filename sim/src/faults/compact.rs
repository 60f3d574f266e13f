//! `compact`: the server compacts its history up to the current revision (etcd compaction);
//! watches behind it get 410 Expired and relist. Exposes 410 handling and relist bugs.
//!
//! The one kind that acts on no controller: swarm selection draws it even without controllers
//! (then at a time).
//!
//! - swarm: no parameters;
//! - firing: every cluster's server compacts at its current revision;
//! - shrinking: nothing to lower;
//! - guided: no points (coverage does not count it).

use crate::faults::kind::{CallEffect, FaultKindOps, Firing, SwarmDraw};
use crate::faults::plan::{Fault, FaultKind};
use crate::faults::profile::Profile;

/// The node world-wide faults' effects are counted on.
const ENGINE: &str = "engine";
use crate::faults::ctx::FaultCtx;

/// The operations of [`Fault::Compact`].
pub(crate) struct Compact;

impl FaultKindOps for Compact {
    fn kind(&self) -> FaultKind {
        FaultKind::Compact
    }

    fn needs_controller(&self) -> bool {
        false
    }

    fn draw(&self, _draw: &mut SwarmDraw<'_>) -> Fault {
        Fault::Compact
    }

    fn cannot_act_in(&self, profile: &Profile) -> Option<&'static str> {
        (!profile.has_informers()).then_some("no informer watches anything: there is no watch to expire")
    }

    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        Some("every informer had seen the current revision: no watch was behind the compaction, nothing expired".to_owned())
    }

    fn fire(&self, w: &mut FaultCtx<'_>, _firing: &Firing<'_>) -> CallEffect {
        for _ in 0..w.informers_behind() {
            w.injector.effect(ENGINE, FaultKind::Compact);
        }
        for cluster in w.clusters.values_mut() {
            let revision = cluster.server.revision();
            cluster.server.compact(revision);
        }
        CallEffect::None
    }
}
