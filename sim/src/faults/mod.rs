//! The fault catalogue of DESIGN.md section 6: plans (what fires, and when) and swarm selection.

pub mod plan;
pub mod swarm;

pub use plan::{CallSide, Fault, FaultKind, FaultPlan, InjectedError, ObjectChange, PlannedFault, Trigger};
pub use swarm::{PLAN_STREAM, SwarmConfig, swarm_plan};
