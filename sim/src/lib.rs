//! # sim: the kube-sim engine
//!
//! A seeded madsim world that runs real controller code against `model-apiserver`.

pub mod decision;
pub mod sweep;
pub mod trace;
pub mod verdict;

pub use decision::{DecisionSource, Stream};
pub use sweep::{SweepConfig, SweepReport, sweep};
pub use trace::{Trace, TraceEntry, TraceEvent};
pub use verdict::{RunReport, RunStats, Verdict};
