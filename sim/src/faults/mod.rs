//! The fault catalogue of DESIGN.md section 6: plans (what fires, and when), swarm selection, and
//! the machinery that makes each fault act in a run.
//!
//! - [`plan`]: faults and triggers as data (what regression files persist);
//! - [`swarm`]: a plan drawn from the seed;
//! - [`injector`]: the per-run state that fires triggers and puts faults in force at the points
//!   where they act (API calls, watch pulls, relists, reconcile starts);
//! - [`supervisor`]: the engine node that kills, restarts, pauses and resumes controller nodes
//!   and fires faults at a virtual time.
//!
//! A world runs no faults unless its builder says so: [`crate::SimBuilder::faults`] runs a fixed
//! plan, [`crate::SimBuilder::swarm`] draws one per seed. Either way the plan is logged at the
//! start of the run (a trace note per planned fault), every fault that fires is a
//! [`crate::TraceEvent::Fault`], and the faults that never fired are listed in the
//! [`crate::RunReport`].

pub mod injector;
pub mod plan;
pub mod supervisor;
pub mod swarm;

pub use plan::{
    CallSide, DELAY_WATCH_DURATION_MS_DEFAULT, Fault, FaultKind, FaultPlan, InjectedError, ObjectChange,
    PlannedFault, Trigger,
};
pub use swarm::{PLAN_STREAM, SwarmConfig, swarm_plan};

use std::sync::Arc;

use crate::trace::TraceEvent;
use crate::world::World;

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

/// The node name the engine's own trace entries carry.
const ENGINE_NODE: &str = "engine";

/// Decide the run's plan, log it, and install it. `true` if there is anything to inject.
pub(crate) fn install_plan(world: &World, source: &FaultSource, controllers: &[String]) -> bool {
    world.with(|w| {
        let plan = match source {
            FaultSource::None => return false,
            FaultSource::Plan(plan) => plan.clone(),
            FaultSource::Swarm(config) => {
                let mut config = config.clone();
                if config.controllers.is_empty() {
                    config.controllers = controllers.to_vec();
                }
                swarm_plan(&mut w.decisions, &config)
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
        w.injector = injector::Injector::new(&plan);
        !plan.is_empty()
    })
}
