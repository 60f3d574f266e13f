//! Typed verdicts and the report of one run.
//!
//! INTERFACE STUB: filled by the sim-infrastructure work. Signatures are the contract.

use crate::trace::Trace;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every property held and the world converged.
    Pass,
    /// A controller panicked.
    Crash {
        /// The node that panicked.
        node: String,
        /// The object being reconciled, if known (`Kind namespace/name`).
        object: Option<String>,
        /// The panic message.
        message: String,
    },
    /// No progress: madsim found no runnable task (deadlock), the time limit passed, or the world
    /// did not quiesce within the liveness wait.
    Liveness {
        /// What happened, in one line.
        reason: String,
    },
    /// A property failed.
    Correctness {
        /// The property's name.
        property: String,
        /// What broke, in one line (which object, which field, expected against found).
        message: String,
        /// Virtual milliseconds since start when it was detected.
        at_millis: u64,
    },
    /// The determinism self-check found two runs of the same seed with different digests.
    Nondeterminism {
        /// The first run's digest.
        first: String,
        /// The second run's digest.
        second: String,
    },
}

impl Verdict {
    /// Whether the run passed.
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass)
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// API calls made by controllers and the workload.
    pub api_calls: u64,
    /// Watch events delivered to informers.
    pub watch_deliveries: u64,
    /// Reconciles run.
    pub reconciles: u64,
    /// Virtual milliseconds the run took.
    pub virtual_millis: u64,
}

/// The outcome of one seed.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub verdict: Verdict,
    /// The trace digest.
    pub digest: String,
    /// The trace (entries kept only when asked for: single-seed runs and replays).
    pub trace: Trace,
    /// Counters.
    pub stats: RunStats,
}
