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
use crate::world::WorldState;

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

    fn fire(&self, w: &mut WorldState, _firing: &Firing<'_>) -> CallEffect {
        for cluster in w.clusters.values_mut() {
            let revision = cluster.server.revision();
            cluster.server.compact(revision);
        }
        CallEffect::None
    }
}
