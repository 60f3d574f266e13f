//! What one fault kind does, as the generic machinery asks it: [`FaultKindOps`], the seam between
//! the plan, swarm, injector, shrinker and guided points (which know no kind) and the one file per
//! kind that knows everything about it (FoundationDB's "one fault, one file").
//!
//! [`super::ops`] maps a [`FaultKind`] to its operations; nothing else matches on kinds.

use std::time::Duration;

use kube_core::Status;

use crate::decision::Stream;
use crate::faults::ctx::FaultCtx;
use crate::faults::plan::{Fault, FaultKind, InjectedError, PlannedFault};
use crate::faults::profile::{ControllerProfile, Profile};
use crate::faults::swarm::SwarmConfig;

/// The operations of one fault kind. Each kind implements it on a unit struct in its own file;
/// every method that takes a [`Fault`] is given one of its own kind (the dispatch guarantees it).
pub(crate) trait FaultKindOps: Sync {
    /// The kind.
    fn kind(&self) -> FaultKind;

    // Swarm selection.

    /// Whether the kind acts on a controller: without controllers to pick from, swarm selection
    /// cannot draw it.
    fn needs_controller(&self) -> bool {
        true
    }
    /// Whether [`SwarmConfig::default`] turns the kind on.
    fn swarm_by_default(&self) -> bool {
        true
    }
    /// The fault with its parameters drawn from the seed's plan stream, after the generic draws
    /// (the controller, one duration). The draws are part of every swarm seed's digest: their
    /// number and order must not change.
    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault;
    /// Whether the fault acts on the one API call its trigger names (fails it, makes it
    /// ambiguous, crashes around it); swarm selection then draws it a call trigger.
    fn acts_on_call(&self) -> bool {
        false
    }
    /// Whether swarm selection may draw a call-bound fault a `Rate` trigger (one time in three).
    fn swarm_rate(&self) -> bool {
        self.acts_on_call()
    }
    /// Why a fault of this kind on `on` (what that controller did in a fault-free run: see
    /// [`Profile`]) could not act, or `None` if it can. Swarm selection never draws a fault that
    /// cannot act, and guided exploration plans no point for it. The default: a fault acting on
    /// a call needs a controller that writes (its trigger counts writes).
    fn cannot_act(&self, on: &ControllerProfile) -> Option<&'static str> {
        (self.acts_on_call() && on.writes == 0).then_some("it makes no writes for a write trigger to count")
    }
    /// For a kind that acts on no controller: why it could not act in a world that did `profile`.
    fn cannot_act_in(&self, _profile: &Profile) -> Option<&'static str> {
        None
    }
    /// Why a fired fault of this kind may have done nothing, when the engine counts what it did
    /// (calls failed, pulls held, reconciles paused, lists served stale): a fired fault with
    /// nothing counted is reported in the trace with this reason. `None`: the kind always acts
    /// when it fires (a kill, a failed call), and nothing is counted.
    fn idle_reason(&self, _fault: &Fault) -> Option<String> {
        None
    }

    // Firing.

    /// Whether a `Rate` trigger of the fault is drawn only on writes.
    fn rate_needs_write(&self) -> bool {
        false
    }
    /// Whether the fault can act now; one that cannot is left unfired, so that the report says
    /// so. (A fault on a controller that is down or dying is never fired; that check is generic.)
    fn ready(&self, _w: &FaultCtx<'_>, _fault: &Fault) -> bool {
        true
    }
    /// Put the fault in force (it was traced and counted as fired); say what it does to the
    /// triggering call.
    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect;

    // Shrinking.

    /// The fault's numbers shrinking may lower (after its trigger's), in shrink order.
    fn knobs<'f>(&self, _fault: &'f mut Fault) -> Vec<Knob<'f>> {
        Vec::new()
    }

    // Guided exploration.

    /// The faults of this kind that guided exploration plans at `site`, in exploration order.
    fn points(&self, _site: &PointSite<'_>, _config: &PointConfig) -> Vec<Fault> {
        Vec::new()
    }
    /// 0 for Sieve's fault families, 1 for faults guided exploration tries after all of those.
    fn point_tier(&self, _fault: &Fault) -> u8 {
        0
    }
    /// The fault's family, for guided ordering: one round tries each family once per class.
    fn point_family(&self, _fault: &Fault) -> String {
        format!("{:?}", self.kind())
    }
    /// Whether a fired fault of this kind is the point's fault up to durations and lags (for
    /// coverage). Kinds that plan no points have no shape to match.
    fn same_shape(&self, _point: &Fault, _fired: &Fault) -> bool {
        false
    }
}

/// What a swarm draw of one fault has to work with.
pub(crate) struct SwarmDraw<'a> {
    /// The plan stream.
    pub(crate) stream: &'a mut Stream,
    /// What selection may draw from.
    pub(crate) config: &'a SwarmConfig,
    /// The controller drawn for the fault (empty when there are none).
    pub(crate) controller: &'a str,
    /// A duration drawn for every fault, in `1..=duration_max_ms`.
    pub(crate) duration_ms: u64,
}

/// One firing of a planned fault.
pub(crate) struct Firing<'a> {
    /// The planned fault.
    pub(crate) planned: &'a PlannedFault,
    /// Virtual time since the start of the run.
    pub(crate) now: Duration,
    /// The triggering API call, when it is a call of the fault's own controller (the fault then
    /// lands on it).
    pub(crate) own_call: Option<u64>,
}

/// What a fault firing on a call does to that call.
pub(crate) enum CallEffect {
    /// Nothing.
    None,
    /// The call fails with this answer without reaching the server.
    Fail(Box<Status>),
    /// The call (this id) applies, but its caller sees a timeout.
    Ambiguous(u64),
}

/// A number of a fault that shrinking may lower, down to `min`.
pub(crate) struct Knob<'f> {
    /// The number, in place.
    pub(crate) value: &'f mut u64,
    /// Its smallest meaningful value.
    pub(crate) min: u64,
}

/// A place in a fault-free reference run where guided exploration may plan a fault.
pub(crate) enum PointSite<'a> {
    /// A controller's write that changed something.
    Write {
        /// The writing controller.
        controller: &'a str,
    },
    /// A watch event reaching a controller's informer.
    Delivery {
        /// The informer's node.
        controller: &'a str,
        /// The informer's resource (plural).
        resource: &'a str,
    },
    /// A reconcile starting.
    Reconcile {
        /// The reconciling controller.
        controller: &'a str,
        /// Whether the controller renews a Lease (runs leader election).
        leader_elected: bool,
    },
    /// A timed outage of a controller (its calls cut, its reconciles paused, its watches held)
    /// starting at one of its sites and lasting until after one, two or three more workload
    /// steps of the reference run.
    Outage {
        /// The controller cut off.
        controller: &'a str,
        /// How long the outage lasts.
        duration_ms: u64,
    },
    /// A Node of the world lost (its kubelet silent) from just after one workload step until
    /// after one, two or three more steps of the reference run.
    NodeOutage {
        /// The Node (a Node object of the first declared cluster).
        node: &'a str,
        /// How long it is lost.
        duration_ms: u64,
    },
    /// An object transition that changes again later, for one controller: restarted onto a
    /// replica that lags `lag_revisions`, its view misses both changes.
    Transition {
        /// The controller to restart.
        controller: &'a str,
        /// How far behind the replica is.
        lag_revisions: u64,
    },
}

/// The parameters of the faults the guided injection points plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointConfig {
    /// A crashed controller comes back after this long.
    pub restart_after_ms: u64,
    /// A controller restarted onto a lagging replica comes back after this long: at once, so
    /// that it reads the replica while the world is still where the point found it (a restart
    /// after the workload's end would read none: the liveness phase catches every replica up).
    pub stale_restart_after_ms: u64,
    /// Reconcile pauses last this long: longer than a workload usually waits between two changes
    /// of one object, so that a pause hides an intermediate state.
    pub pause_ms: u64,
    /// Extra delay of a delayed informer.
    pub delay_ms: u64,
    /// How long watches are held before the forced relist.
    pub hold_ms: u64,
    /// How long a leader is paused: longer than a usual Lease (its duration plus a renewal).
    pub leader_pause_ms: u64,
    /// The errors a write is failed with, one point each, in this order.
    pub errors: Vec<InjectedError>,
    /// Timed outages span at most this many workload steps after the one they start at (1 to
    /// 3: the cheap, short ones are tried first); 0 plans none.
    pub outage_steps_max: u32,
    /// An outage lasts until this long after the last step it spans (or half the time to the
    /// next step, if that is shorter), so that the step's change lands while it is in force.
    pub outage_margin_ms_max: u64,
}

impl Default for PointConfig {
    fn default() -> Self {
        PointConfig {
            restart_after_ms: 500,
            stale_restart_after_ms: 1,
            pause_ms: 1_500,
            delay_ms: 1_000,
            hold_ms: 1_000,
            leader_pause_ms: 5_000,
            errors: vec![
                InjectedError::Conflict,
                InjectedError::TooManyRequests,
                InjectedError::InternalError,
                InjectedError::Timeout,
            ],
            outage_steps_max: 3,
            outage_margin_ms_max: 1_000,
        }
    }
}

/// The operations of `kind` were given a fault of another kind: a broken dispatch.
pub(crate) fn mismatch(kind: FaultKind, fault: &Fault) -> ! {
    unreachable!("the {kind:?} operations were given {fault:?}")
}
