//! Typed verdicts and the report of one run.
//!
//! A [`Verdict`] displays as one line that starts with its [`Verdict::kind`], e.g.
//! `correctness: property "owned" failed at 1.234s: ...`; sweeps print it next to the seed and
//! the replay command.

use std::fmt;

use crate::decision::{Choices, DecisionError};
use crate::faults::{FaultPlan, PlannedFault};
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
    /// A node called `std::process::exit` (the seed ends there; the process goes on).
    Exit {
        /// The node whose task called it (a controller, or `workload`).
        node: String,
        /// The exit code it passed.
        code: i32,
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
    /// The determinism self-check found two runs of the same seed with different digests, or a
    /// run replaying recorded choices diverged from them.
    Nondeterminism {
        /// The first run's digest (empty for a replay of recorded choices, whose digest the
        /// recording does not hold).
        first: String,
        /// The second run's (or the replay's) digest.
        second: String,
        /// The first choice at which the second run left the first run's recorded choices, if
        /// the choices were recorded and one did: where to look for the nondeterminism.
        choice: Option<DecisionError>,
    },
}

impl Verdict {
    /// Whether the run passed.
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass)
    }

    /// The verdict's kind: `pass`, `crash`, `exit`, `liveness`, `correctness` or `nondeterminism`.
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Crash { .. } => "crash",
            Verdict::Exit { .. } => "exit",
            Verdict::Liveness { .. } => "liveness",
            Verdict::Correctness { .. } => "correctness",
            Verdict::Nondeterminism { .. } => "nondeterminism",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        match self {
            Verdict::Pass => f.write_str(kind),
            Verdict::Crash { node, object: Some(object), message } => {
                write!(f, "{kind}: node \"{node}\" panicked reconciling {object}: {message}")
            }
            Verdict::Crash { node, object: None, message } => {
                write!(f, "{kind}: node \"{node}\" panicked: {message}")
            }
            Verdict::Exit { node, code } => {
                write!(f, "{kind}: node \"{node}\" called std::process::exit({code})")
            }
            Verdict::Liveness { reason } => write!(f, "{kind}: {reason}"),
            Verdict::Correctness { property, message, at_millis } => {
                let (seconds, millis) = (at_millis / 1000, at_millis % 1000);
                write!(f, "{kind}: property \"{property}\" failed at {seconds}.{millis:03}s: {message}")
            }
            Verdict::Nondeterminism { first, second, choice: None } => {
                write!(f, "{kind}: the same seed gave trace digests {first} and {second}")
            }
            Verdict::Nondeterminism { first, second, choice: Some(choice) } if first.is_empty() => {
                write!(f, "{kind}: the replay (trace digest {second}) left its recorded choices: {choice}")
            }
            Verdict::Nondeterminism { first, second, choice: Some(choice) } => write!(
                f,
                "{kind}: the same seed gave trace digests {first} and {second}; first divergent {choice}"
            ),
        }
    }
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// API calls made by controllers and the workload.
    pub api_calls: u64,
    /// Watch events delivered to informers.
    pub watch_deliveries: u64,
    /// Watch pulls: a parked watcher woken to ask for new events. A write wakes only the watchers
    /// of its type (and namespace), so a write to Secrets costs a ConfigMap watcher nothing.
    pub watch_pulls: u64,
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
    /// The fault plan the run used (fixed, or drawn from the seed by swarm selection).
    pub plan: FaultPlan,
    /// The planned faults that never fired (never silently dropped: the report's line shows them).
    pub unfired: Vec<PlannedFault>,
    /// The run's choices, when it recorded them ([`crate::SimBuilder::record_choices`]).
    pub choices: Option<Choices>,
    /// What each node did: its informers and how they list, its calls, writes and reconciles.
    pub profile: crate::faults::profile::Profile,
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scenario \"{}\" seed {}: {}", self.scenario, self.seed, self.verdict)?;
        if !self.unfired.is_empty() {
            write!(f, " ({} of {} planned faults never fired:", self.unfired.len(), self.plan.faults.len())?;
            for (i, fault) in self.unfired.iter().enumerate() {
                let sep = if i == 0 { " " } else { "; " };
                write!(f, "{sep}{fault}")?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}
