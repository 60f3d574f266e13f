//! Guided exploration, as Sieve does it but without a cluster: run the scenario once without
//! faults, list the points in that reference run where a fault could act, and try them.
//!
//! - [`points`]: the injection points of a reference trace (every controller write, every watch
//!   delivery, every reconcile, every object transition), each with the one
//!   [`PlannedFault`](crate::faults::PlannedFault) that acts there, pruned as Sieve prunes
//!   (writes that change nothing are dropped, points that yield the same plan are merged);
//! - [`explorer`]: the [`Explorer`], which runs the reference, then every single-fault plan in a
//!   fixed order, then random multi-fault plans over causally related points, and reports the
//!   first failure and the coverage (which points' faults actually fired);
//! - [`point_map`]: which points a run's fired faults exercised, exactly for guided plans and by
//!   place and shape for random (swarm) plans, so that random exploration reports coverage too.
//!
//! ```no_run
//! # fn world() -> sim::SimBuilder { unimplemented!() }
//! use sim::guided::{Explorer, GuidedConfig};
//!
//! let exploration = Explorer::new(&world(), GuidedConfig::default()).explore().expect("reference passes");
//! println!("{}", exploration.coverage);
//! if let Some(finding) = &exploration.failure {
//!     println!("run {}: {} with {:?}", finding.run, finding.report.verdict, finding.plan);
//! }
//! ```

pub mod explorer;
pub mod point_map;
pub mod points;

pub use explorer::{Coverage, Exploration, Explorer, Finding, GuidedConfig, GuidedError, Phase, PlannedRun};
pub use point_map::PointMap;
pub use points::{
    InjectionPoint, PointConfig, PointSet, Site, injection_points, injection_points_of,
    injection_points_profiled, injection_points_with,
};
