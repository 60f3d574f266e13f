//! What the faults see of a running world, and how they reach it.
//!
//! The faults never import the world: the injector and every fault kind act on a [`FaultCtx`],
//! the parts of the world a fault reads or changes (its own state, the clusters, the decisions,
//! the registrations, the trace at the current virtual time). Tasks that wait in a gate reach
//! the world through a [`Host`], which the world implements.

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::Clusters;
use crate::decision::DecisionSource;
use crate::faults::injector::Injector;
use crate::quiescence::Quiescence;
use crate::trace::{Trace, TraceEvent};

/// The parts of the world a fault acts on, borrowed for one synchronous step (virtual time does
/// not move within it).
pub(crate) struct FaultCtx<'a> {
    /// The fault state: the plan, what fired, each node's faults in force.
    pub(crate) injector: &'a mut Injector,
    /// The model servers (a compaction acts on them).
    pub(crate) clusters: &'a mut Clusters,
    /// The run's decisions (rates, delays, catch-up times are drawn from them).
    pub(crate) decisions: &'a mut DecisionSource,
    /// The informers' registrations (a compaction expires the watches of those behind).
    pub(crate) quiescence: &'a Quiescence,
    trace: &'a mut Trace,
    now: Duration,
    /// The run's epoch: the virtual wall clock is it plus `now`.
    epoch: jiff::Timestamp,
}

impl<'a> FaultCtx<'a> {
    /// The context at virtual time `now` (since the start of the run).
    pub(crate) fn new(
        injector: &'a mut Injector,
        clusters: &'a mut Clusters,
        decisions: &'a mut DecisionSource,
        quiescence: &'a Quiescence,
        trace: &'a mut Trace,
        now: Duration,
        epoch: jiff::Timestamp,
    ) -> Self {
        FaultCtx { injector, clusters, decisions, quiescence, trace, now, epoch }
    }

    /// The virtual wall clock (what the servers stamp objects with): the recorder's, computed
    /// here only when a fault writes (the faults do not import the recorder).
    pub(crate) fn wall(&self) -> jiff::Timestamp {
        let span = jiff::SignedDuration::try_from(self.now).unwrap_or(jiff::SignedDuration::MAX);
        self.epoch.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
    }

    /// The first declared cluster's current state (`None` before the clusters are installed).
    pub(crate) fn default_snapshot(&self) -> Option<(Arc<str>, model_apiserver::Snapshot)> {
        let name = self.clusters.first()?.clone();
        let server = self.clusters.default_server()?;
        Some((name, server.snapshot()))
    }

    /// Apply `request` to cluster `cluster`'s server at the virtual now, as the control plane's
    /// own write (no latency, no client, no fault acts on it), and wake the watchers it reaches.
    /// Returns the answer, and whether it changed the state: the caller then reports the write to
    /// the world ([`crate::world::WorldState::wrote`]: progress, and the safety properties).
    pub(crate) fn control_plane_write(
        &mut self,
        cluster: &Arc<str>,
        request: model_apiserver::Request,
    ) -> (Result<model_apiserver::Response, kube_core::Status>, bool) {
        let wall = self.wall();
        let Some(state) = self.clusters.get_mut(cluster) else {
            let status = model_apiserver::errors::internal_error(&format!("no cluster named {cluster}"));
            return (Err(status), false);
        };
        let before = state.server.revision();
        let mut ids = crate::decision::StreamIds(self.decisions.stream("ids"));
        let mut ctx = model_apiserver::Context::new(wall, &mut ids);
        let result = state.server.handle(request, &mut ctx);
        let wrote = state.server.revision() != before;
        if wrote {
            state.revision_moved(before, self.now);
        }
        (result, wrote)
    }

    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&self) -> Duration {
        self.now
    }

    /// Append to the trace at the current virtual time.
    pub(crate) fn trace(&mut self, node: &Arc<str>, event: TraceEvent) {
        let at = u64::try_from(self.now.as_nanos()).unwrap_or(u64::MAX);
        self.trace.push(at, node, event);
    }

    /// How many informers are behind their cluster's revision.
    pub(crate) fn informers_behind(&self) -> usize {
        self.quiescence.informers_behind(self.clusters)
    }

    /// The leader of the replica group `name` names (a replica node or the group), as the
    /// model's Lease says.
    pub(crate) fn current_leader(&self, name: &str) -> Option<Arc<str>> {
        self.clusters.lease_holder(self.injector.group_of(name))
    }
}

/// The world, as tasks waiting in a fault's gate reach it: one synchronous step at a time, with
/// the world locked.
pub(crate) trait Host: Clone + 'static {
    /// Run `f` on the faults' view of the world.
    fn with_faults<R>(&self, f: impl FnOnce(&mut FaultCtx<'_>) -> R) -> R;
}
