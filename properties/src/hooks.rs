//! The checkers of this crate as [`sim::Property`] hooks, ready for `SimBuilder::property`.
//!
//! - [`no_orphans`] and [`no_stuck_deletions`]: built-in end-state checks over every cluster;
//! - [`always`]: a user predicate over the written cluster's state after every write;
//! - [`at_end`] (and its synonym [`eventually`]): a user predicate over every cluster's end state;
//! - [`matches_reference`]: the differential oracle against a [`Reference`] computed once per
//!   sweep from two fault-free runs of the same builder.
//!
//! A broken hook becomes a `Verdict::Correctness` naming the property; its message names the
//! object (and the cluster, when the world has more than one) and what was expected and found.
//!
//! ## Limitation: no per-object creation and deletion counts yet
//!
//! Sieve's oracle also compares how many times each object was created and deleted. The engine's
//! `EndView` carries each cluster's end snapshot but not its event history, so the hooks compare
//! end states only ([`EndState::counts`] is left empty on both sides). Once the view offers the
//! stored events, [`crate::counts_from_events`] fills them in without other changes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use model_apiserver::Snapshot;
use sim::{EndView, Property, SimBuilder, StepView, Verdict};

use crate::always::Always;
use crate::diff::{EndState, MATCHES_REFERENCE};
use crate::error::Error;
use crate::mask::Mask;
use crate::violation::{Violation, summarize};

/// The end snapshots of a run, by cluster name.
pub type Clusters = BTreeMap<Arc<str>, Snapshot>;

/// Run a per-cluster check over every cluster in name order, and report the violations as one
/// line. With more than one cluster, each violation's object is prefixed by its cluster.
fn over_clusters(clusters: &Clusters, check: impl Fn(&Snapshot) -> Vec<Violation>) -> Result<(), String> {
    let named = clusters.len() > 1;
    let mut all = Vec::new();
    for (name, snapshot) in clusters {
        for mut violation in check(snapshot) {
            if named {
                violation.object = Some(match violation.object {
                    Some(object) => format!("cluster {name}: {object}"),
                    None => format!("cluster {name}"),
                });
            }
            all.push(violation);
        }
    }
    summarize(&all)
}

/// A hook from an end-state check over one snapshot.
struct EndCheck<F> {
    name: String,
    check: F,
}

impl<F> Property for EndCheck<F>
where
    F: Fn(&Snapshot) -> Vec<Violation> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        over_clusters(view.clusters, &self.check)
    }
}

/// `no_orphans` at the end of the run, in every cluster (see [`crate::no_orphans`]).
pub fn no_orphans() -> impl Property {
    EndCheck { name: crate::NO_ORPHANS.to_owned(), check: crate::no_orphans }
}

/// `no_stuck_deletions` at the end of the run, in every cluster (see
/// [`crate::no_stuck_deletions`]).
pub fn no_stuck_deletions() -> impl Property {
    EndCheck { name: crate::NO_STUCK_DELETIONS.to_owned(), check: crate::no_stuck_deletions }
}

/// A user predicate over a state: `Ok(())`, or one line saying what is wrong.
pub trait StatePredicate: Fn(&Snapshot) -> Result<(), String> + Send + Sync + 'static {}
impl<F: Fn(&Snapshot) -> Result<(), String> + Send + Sync + 'static> StatePredicate for F {}

/// The hook of [`always`].
struct AlwaysHook(Always);

impl Property for AlwaysHook {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn check_step(&self, view: &StepView<'_>) -> Result<(), String> {
        let Some(snapshot) = view.cluster(view.written_cluster) else {
            return Ok(());
        };
        let at_millis = u64::try_from(view.at.as_millis()).unwrap_or(u64::MAX);
        // The step is the written cluster's revision: it names the write that broke the
        // property, and reads the same in the trace.
        match self.0.check_step(snapshot.revision, at_millis, snapshot) {
            Some(violation) => Err(violation.message),
            None => Ok(()),
        }
    }
}

/// A safety property: `check` must hold for the written cluster's state after every write. The
/// message names the step (the written cluster's revision) and the virtual time.
pub fn always(name: impl Into<String>, check: impl StatePredicate) -> impl Property {
    AlwaysHook(crate::always(name, check))
}

/// The hook of [`at_end`].
struct AtEnd<F> {
    name: String,
    check: F,
}

impl<F: StatePredicate> Property for AtEnd<F> {
    fn name(&self) -> &str {
        &self.name
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        over_clusters(view.clusters, |snapshot| match (self.check)(snapshot) {
            Ok(()) => Vec::new(),
            Err(message) => vec![Violation::new(self.name.clone(), message)],
        })
    }
}

/// A user predicate over the end state, after the liveness phase, checked in every cluster.
pub fn at_end(name: impl Into<String>, check: impl StatePredicate) -> impl Property {
    AtEnd { name: name.into(), check }
}

/// Liveness read over a finite run: once the world is quiet, `check` holds (the same hook as
/// [`at_end`]: the engine checks end properties only after the world quiesced).
pub fn eventually(name: impl Into<String>, check: impl StatePredicate) -> impl Property {
    at_end(name, check)
}

/// The fault-free end state of a scenario, and the mask its two runs taught: computed once per
/// sweep with [`Reference::compute`], shared by every seed's [`matches_reference`].
#[derive(Clone)]
pub struct Reference {
    /// The first reference run's end state, by cluster.
    end: Clusters,
    /// The seeds of the two reference runs.
    seeds: [u64; 2],
    /// Fields that differed between the two reference runs.
    learned: Mask,
    /// Built-in, learned and user masks together.
    mask: Mask,
}

impl fmt::Debug for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reference")
            .field("seeds", &self.seeds)
            .field("clusters", &self.end.keys().collect::<Vec<_>>())
            .field("mask", &self.mask)
            .finish()
    }
}

/// A property that keeps each run's end state (the reference runs' capture).
struct Capture(Arc<Mutex<Option<Clusters>>>);

impl Property for Capture {
    fn name(&self) -> &str {
        "capture the reference end state"
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(view.clusters.clone());
        Ok(())
    }
}

impl Reference {
    /// Run `builder` twice without faults (with each of `seeds`), keep the first run's end
    /// state, and learn as masks the fields in which the two end states differ.
    ///
    /// Faults are turned off with `faults(FaultPlan::none())`; a builder with a `fault_hook`
    /// keeps it, so give this a builder without one.
    ///
    /// # Errors
    ///
    /// [`Error::ReferenceRun`] when a reference run does not pass: a scenario that fails
    /// without faults has no reference to compare against.
    pub fn compute(builder: &SimBuilder, seeds: [u64; 2]) -> Result<Self, Error> {
        let [a, b] = seeds;
        let end_a = Self::run_fault_free(builder, a)?;
        let end_b = Self::run_fault_free(builder, b)?;
        let mut learned = Mask::none();
        for (name, snapshot) in &end_a {
            if let Some(other) = end_b.get(name) {
                learned = learned.merge(&Mask::learn(snapshot, other));
            }
        }
        let mask = Mask::builtin().merge(&learned);
        Ok(Reference { end: end_a, seeds, learned, mask })
    }

    fn run_fault_free(builder: &SimBuilder, seed: u64) -> Result<Clusters, Error> {
        let captured: Arc<Mutex<Option<Clusters>>> = Arc::default();
        let report = builder
            .clone()
            .faults(sim::faults::FaultPlan::none())
            .property(Capture(captured.clone()))
            .run(seed);
        let end = captured.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (report.verdict, end) {
            (Verdict::Pass, Some(end)) => Ok(end),
            (verdict, _) => Err(Error::ReferenceRun { seed, verdict: verdict.to_string() }),
        }
    }

    /// This reference with a user mask: `target` is a kind (`Deployment`), a resource storage
    /// key (`apps/deployments`) or `*`; `path` a dotted path or JSON pointer (see
    /// [`Mask::user`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a malformed path.
    pub fn mask_user(mut self, target: &str, path: &str) -> Result<Self, Error> {
        self.mask = self.mask.user(target, path)?;
        Ok(self)
    }

    /// The mask runs are compared under: built-in, learned and user rules.
    pub fn mask(&self) -> &Mask {
        &self.mask
    }

    /// The rules learned from the two reference runs.
    pub fn learned(&self) -> &Mask {
        &self.learned
    }

    /// The first reference run's end state, by cluster.
    pub fn end_state(&self) -> &Clusters {
        &self.end
    }

    /// The seeds of the two reference runs.
    pub fn seeds(&self) -> [u64; 2] {
        self.seeds
    }

    /// Every difference between a run's end state and this reference, under [`Reference::mask`].
    pub fn violations(&self, run: &Clusters) -> Vec<Violation> {
        let mut all = Vec::new();
        let names: std::collections::BTreeSet<&Arc<str>> = self.end.keys().chain(run.keys()).collect();
        let named = names.len() > 1;
        for name in names {
            let (Some(expected), Some(found)) = (self.end.get(name), run.get(name)) else {
                all.push(Violation {
                    property: MATCHES_REFERENCE.to_owned(),
                    message:
                        "expected the same clusters as the reference run, found this one only on one side"
                            .to_owned(),
                    object: Some(format!("cluster {name}")),
                });
                continue;
            };
            let expected = EndState { snapshot: expected.clone(), counts: Vec::new() };
            let found = EndState { snapshot: found.clone(), counts: Vec::new() };
            for mut violation in crate::matches_reference(&expected, &found, &self.mask) {
                if named {
                    violation.object = violation.object.map(|object| format!("cluster {name}: {object}"));
                }
                all.push(violation);
            }
        }
        all
    }
}

/// The hook of [`matches_reference`].
struct MatchesReference(Arc<Reference>);

impl Property for MatchesReference {
    fn name(&self) -> &str {
        MATCHES_REFERENCE
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        summarize(&self.0.violations(view.clusters))
    }
}

/// `matches_reference`: the run's end state equals the reference's under its mask (see
/// [`crate::matches_reference`]; per-object counts are not compared yet, see the module docs).
pub fn matches_reference(reference: Arc<Reference>) -> impl Property {
    MatchesReference(reference)
}
