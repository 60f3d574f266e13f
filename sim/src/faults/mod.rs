//! The fault catalogue of DESIGN.md section 6: plans (what fires, and when), swarm selection, and
//! the machinery that makes each fault act in a run.
//!
//! - [`plan`]: faults and triggers as data (what regression files persist);
//! - [`swarm`]: a plan drawn from the seed;
//! - [`injector`]: the per-run state that fires triggers and puts faults in force at the points
//!   where they act (API calls, watch pulls, relists, reconcile starts);
//! - [`crate::supervisor`]: the engine node that kills, restarts, pauses and resumes controller nodes
//!   and fires faults at a virtual time.
//!
//! ## One fault kind, one file
//!
//! Everything one kind does lives in its file, as FoundationDB keeps one fault per workload file:
//! its swarm draw (its parameters drawn from the seed), its firing (what it puts in force, and
//! the gates that read that), its shrink steps (the numbers that may be lowered) and its guided
//! injection points (the reference-run sites it is planned at, its ordering and its shape for
//! coverage). Each file implements `FaultKindOps` (in `kind.rs`) on a unit struct, and [`ops`]
//! is the one `match` from a [`FaultKind`] to it. The generic machinery (the plan as data, the
//! swarm's kind selection and trigger draw, trigger matching and the per-run state in the
//! injector, the supervisor node, the shrinker's passes, the guided sites) knows no kind.
//!
//! | kind (`type`) | file |
//! |---|---|
//! | `crash` | [`crash`] |
//! | `staleReplica` | [`stale_replica`] |
//! | `pauseReconciles` | [`pause_reconciles`] |
//! | `skipByRelist` | [`skip_by_relist`] |
//! | `delayWatch` | [`delay_watch`] |
//! | `apiError` | [`api_error`] |
//! | `ambiguous` | [`ambiguous`] |
//! | `watchDisconnect` | [`watch_disconnect`] |
//! | `compact` | [`compact`] |
//! | `partition` | [`partition`] |
//! | `pauseLeader` | [`pause_leader`] |
//! | `loseNode` | [`lose_node`] |
//!
//! Adding a kind: its variant in [`Fault`] and [`FaultKind`] (data: what regression files
//! persist, and how it prints), its file, and one line in [`ops`] (plus its place in
//! `POINT_ORDER` if guided exploration plans it).
//!
//! A world runs no faults unless its builder says so: [`crate::SimBuilder::faults`] runs a fixed
//! plan, [`crate::SimBuilder::swarm`] draws one per seed. Either way the plan is logged at the
//! start of the run (a trace note per planned fault), every fault that fires is a
//! [`crate::TraceEvent::Fault`], and the faults that never fired are listed in the
//! [`crate::RunReport`].

pub mod ambiguous;
pub mod api_error;
pub mod compact;
pub mod crash;
pub(crate) mod ctx;
pub mod delay_watch;
pub mod hook;
pub mod injector;
pub(crate) mod kind;
pub mod lose_node;
pub mod partition;
pub mod pause_leader;
pub mod pause_reconciles;
pub mod plan;
pub mod profile;
pub mod skip_by_relist;
pub mod stale_replica;
pub mod swarm;
pub mod watch_disconnect;

pub use plan::{
    CallSide, DELAY_WATCH_DURATION_MS_DEFAULT, Fault, FaultKind, FaultPlan, InjectedError, ObjectChange,
    PlannedFault, Trigger,
};
pub use swarm::{PLAN_STREAM, SwarmConfig, drawable_kinds, redraw_trigger, swarm_fault, swarm_plan};

use std::sync::Arc;

use crate::faults::ctx::FaultCtx;
use crate::faults::kind::FaultKindOps;
use crate::trace::TraceEvent;

/// The operations of `kind`: the one dispatch from a kind to its file.
pub(crate) fn ops(kind: FaultKind) -> &'static dyn FaultKindOps {
    match kind {
        FaultKind::Crash => &crash::Crash,
        FaultKind::StaleReplica => &stale_replica::StaleReplica,
        FaultKind::PauseReconciles => &pause_reconciles::PauseReconciles,
        FaultKind::SkipByRelist => &skip_by_relist::SkipByRelist,
        FaultKind::DelayWatch => &delay_watch::DelayWatch,
        FaultKind::ApiError => &api_error::ApiError,
        FaultKind::Ambiguous => &ambiguous::Ambiguous,
        FaultKind::WatchDisconnect => &watch_disconnect::WatchDisconnect,
        FaultKind::Compact => &compact::Compact,
        FaultKind::Partition => &partition::Partition,
        FaultKind::PauseLeader => &pause_leader::PauseLeader,
        FaultKind::LoseNode => &lose_node::LoseNode,
    }
}

/// The kind whose operations `ops` gives for `kind` (its own, if the dispatch is right).
// `pub` (hidden from the docs) for its test in tests/it/faults/mod.rs only: the operations'
// trait is private to the crate.
#[doc(hidden)]
pub fn ops_kind(kind: FaultKind) -> FaultKind {
    ops(kind).kind()
}

/// The kinds guided exploration asks for points, in the order their points at one site are
/// planned (a write: the crash after, the crash before, the ambiguous answer, then the errors; a
/// delivery: the delay, then the hold and relist; a reconcile: the pause, then the leader's; a
/// timed outage: the partition, the held watches, then the paused reconciles; a Node's outage:
/// its lost kubelet). The
/// order is part of every guided exploration's output. Kinds that plan no points are left out.
// `pub` (hidden from the docs) for its test in tests/it/faults/mod.rs only.
#[doc(hidden)]
pub const POINT_ORDER: [FaultKind; 10] = [
    FaultKind::Crash,
    FaultKind::Ambiguous,
    FaultKind::ApiError,
    FaultKind::Partition,
    FaultKind::DelayWatch,
    FaultKind::SkipByRelist,
    FaultKind::PauseReconciles,
    FaultKind::PauseLeader,
    FaultKind::StaleReplica,
    FaultKind::LoseNode,
];

/// Where a world's fault plan comes from.
#[derive(Clone, Debug, Default)]
pub enum FaultSource {
    /// No faults (the default, and the reference run).
    #[default]
    None,
    /// The same plan for every seed.
    Plan(FaultPlan),
    /// A plan drawn from each seed.
    Swarm(SwarmConfig),
}

/// The name of the supervisor's node: the engine task that kills, restarts and pauses nodes
/// and fires faults at a virtual time (see `crate::supervisor`).
pub const SUPERVISOR_NODE: &str = "faults";

/// The node name the engine's own trace entries carry.
const ENGINE_NODE: &str = "engine";

/// Decide the run's plan, log it, and install it. `true` if there is anything to inject.
pub(crate) fn install_plan(w: &mut FaultCtx<'_>, source: &FaultSource, controllers: &[String]) -> bool {
    {
        let plan = match source {
            FaultSource::None => return false,
            FaultSource::Plan(plan) => plan.clone(),
            FaultSource::Swarm(config) => {
                let mut config = config.clone();
                if config.controllers.is_empty() {
                    config.controllers = controllers.to_vec();
                }
                swarm_plan(w.decisions, &config)
            }
        };
        let engine: Arc<str> = Arc::from(ENGINE_NODE);
        if plan.is_empty() {
            w.trace(&engine, TraceEvent::Note { text: "fault plan: none".to_owned() });
        }
        for (i, planned) in plan.faults.iter().enumerate() {
            let text = format!("fault plan #{}: {planned}", i + 1);
            w.trace(&engine, TraceEvent::Note { text });
        }
        *w.injector = injector::Injector::new(&plan);
        !plan.is_empty()
    }
}
