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
//! ## Per-object creation and deletion counts
//!
//! [`matches_reference`] also compares how many times each object was created and deleted, as
//! Sieve's oracle does: the engine counts every creation and deletion of the whole run
//! ([`sim::Lifecycles`], in [`EndView::lifecycles`]), and [`crate::counts_from_lifecycles`] keys
//! them for comparison (generated names by their `generateName`). An object deleted and
//! recreated under the same name ends the same, but counts two creations and one deletion.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use model_apiserver::Snapshot;
use sim::{EndView, Property, SimBuilder, StepView, Verdict};

use crate::always::Always;
use crate::diff::{EndState, MATCHES_REFERENCE, ObjectCount, Prepared};
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
    /// The first reference run's per-object creation and deletion counts, by cluster.
    counts: ClusterCounts,
    /// The seeds of the two reference runs.
    seeds: [u64; 2],
    /// Fields that differed between the two reference runs.
    learned: Mask,
    /// Built-in, learned and user masks together.
    mask: Mask,
    /// The end state prepared for comparison under `mask`, made by the first
    /// [`Reference::violations`] and shared by every seed's (and every clone's).
    prepared: Arc<OnceLock<PreparedClusters>>,
}

/// Each cluster's end state [`Prepared`], and the mask it was prepared under.
struct PreparedClusters {
    mask: Mask,
    clusters: BTreeMap<Arc<str>, Prepared>,
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

/// Per-object creation and deletion counts of a run, by cluster name.
pub type ClusterCounts = BTreeMap<Arc<str>, Vec<ObjectCount>>;

/// A run's end as the oracle compares it: the end states, and the counts (or, for a cluster
/// whose history was compacted before the engine could count it, how many revisions it missed).
#[derive(Clone, Default)]
struct RunEnd {
    clusters: Clusters,
    counts: ClusterCounts,
    missed: BTreeMap<Arc<str>, u64>,
}

impl RunEnd {
    fn from_view(view: &EndView<'_>) -> Self {
        let mut end = RunEnd { clusters: view.clusters.clone(), ..RunEnd::default() };
        for (name, lifecycles) in view.lifecycles {
            end.counts.insert(name.clone(), crate::counts_from_lifecycles(lifecycles));
            if lifecycles.missed_revisions() > 0 {
                end.missed.insert(name.clone(), lifecycles.missed_revisions());
            }
        }
        end
    }
}

/// A property that keeps each run's end (the reference runs' capture).
struct Capture(Arc<Mutex<Option<RunEnd>>>);

impl Property for Capture {
    fn name(&self) -> &str {
        "capture the reference end state"
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(RunEnd::from_view(view));
        Ok(())
    }
}

impl Reference {
    /// Run `builder` twice without faults (with each of `seeds`), keep the first run's end
    /// state and per-object counts, and learn as masks the fields in which the two end states
    /// differ and the objects the two runs created or deleted a different number of times.
    ///
    /// Faults are turned off with `faults(FaultPlan::none())`; a builder with a `fault_hook`
    /// keeps it, so give this a builder without one. Each run is on a fresh thread, as sweeps
    /// run seeds.
    ///
    /// # Errors
    ///
    /// [`Error::ReferenceRun`] when a reference run does not pass: a scenario that fails
    /// without faults has no reference to compare against. [`Error::ReferenceCounts`] when a
    /// reference run's history was compacted before its creations and deletions were counted.
    pub fn compute(builder: &SimBuilder, seeds: [u64; 2]) -> Result<Self, Error> {
        let [a, b] = seeds;
        let end_a = Self::run_fault_free(builder, a)?;
        let end_b = Self::run_fault_free(builder, b)?;
        let mut learned = Mask::none();
        for (name, snapshot) in &end_a.clusters {
            if let Some(other) = end_b.clusters.get(name) {
                learned = learned.merge(&Mask::learn(snapshot, other));
            }
        }
        let no_counts = Vec::new();
        let names: BTreeSet<&Arc<str>> = end_a.counts.keys().chain(end_b.counts.keys()).collect();
        for name in names {
            let count_a = end_a.counts.get(name).unwrap_or(&no_counts);
            let count_b = end_b.counts.get(name).unwrap_or(&no_counts);
            learned = learned.merge(&Mask::learn_counts(count_a, count_b));
        }
        let mask = Mask::builtin().merge(&learned);
        Ok(Reference {
            end: end_a.clusters,
            counts: end_a.counts,
            seeds,
            learned,
            mask,
            prepared: Arc::default(),
        })
    }

    fn run_fault_free(builder: &SimBuilder, seed: u64) -> Result<RunEnd, Error> {
        let captured: Arc<Mutex<Option<RunEnd>>> = Arc::default();
        let fault_free =
            builder.clone().faults(sim::faults::FaultPlan::none()).property(Capture(captured.clone()));
        let report = run_on_fresh_thread(&fault_free, seed);
        let end = captured.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (report.verdict, end) {
            (Verdict::Pass, Some(end)) => match end.missed.iter().next() {
                Some((cluster, missed)) => {
                    Err(Error::ReferenceCounts { seed, cluster: cluster.to_string(), missed: *missed })
                }
                None => Ok(end),
            },
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

    /// This reference with a user mask on creation and deletion counts: `target` is `*`, a
    /// resource storage key, or one object as violations name it (see [`Mask::user_counts`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCountTarget`] for a malformed target.
    pub fn mask_counts(mut self, target: &str) -> Result<Self, Error> {
        self.mask = self.mask.user_counts(target)?;
        Ok(self)
    }

    /// This reference without count comparison for the objects the reference run itself deleted.
    ///
    /// For worlds with restarts onto a stale replica (time travel, as swarm faults have): a
    /// controller that reconnects to a lagging API server sees the past, and a correct
    /// level-triggered one replays the part of its history it sees again. It recreates an
    /// object that it deleted since (a scaled-down replica's claim, a StatefulSet it replaces)
    /// and deletes it again once the replica catches up: one more creation and deletion than
    /// the reference, with the same end state. Objects the reference never deleted keep their
    /// counts compared, so a delete-and-recreate of a live object is still caught.
    pub fn mask_counts_of_deleted(mut self) -> Self {
        let deleted: Vec<_> =
            self.counts.values().flatten().filter(|c| c.counts.deleted > 0).map(|c| c.key.clone()).collect();
        for key in deleted {
            self.mask = self.mask.with_masked_count(key);
        }
        self
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

    /// The first reference run's per-object creation and deletion counts, by cluster.
    pub fn counts(&self) -> &ClusterCounts {
        &self.counts
    }

    /// The seeds of the two reference runs.
    pub fn seeds(&self) -> [u64; 2] {
        self.seeds
    }

    /// Each cluster's end state prepared under the current mask.
    fn prepare(&self) -> PreparedClusters {
        let clusters = self
            .end
            .iter()
            .map(|(name, snapshot)| (name.clone(), Prepared::new(snapshot, &self.mask)))
            .collect();
        PreparedClusters { mask: self.mask.clone(), clusters }
    }

    /// Every difference between a run's end state and per-object counts and this reference's,
    /// under [`Reference::mask`]: per cluster, state differences first, then count differences.
    pub fn violations(&self, run: &Clusters, run_counts: &ClusterCounts) -> Vec<Violation> {
        let mut all = Vec::new();
        let names: BTreeSet<&Arc<str>> = self.end.keys().chain(run.keys()).collect();
        let named = names.len() > 1;
        let no_counts = Vec::new();
        // Prepared once per mask: a builder method on a clone changes the mask, not the cache.
        let fresh;
        let prepared = match self.prepared.get_or_init(|| self.prepare()) {
            cached if cached.mask == self.mask => cached,
            _ => {
                fresh = self.prepare();
                &fresh
            }
        };
        for name in names {
            let (Some(expected), Some(found)) = (prepared.clusters.get(name), run.get(name)) else {
                all.push(Violation {
                    property: MATCHES_REFERENCE.to_owned(),
                    message:
                        "expected the same clusters as the reference run, found this one only on one side"
                            .to_owned(),
                    object: Some(format!("cluster {name}")),
                });
                continue;
            };
            let expected_counts = self.counts.get(name).unwrap_or(&no_counts);
            let found = EndState {
                snapshot: found.clone(),
                counts: run_counts.get(name).unwrap_or(&no_counts).clone(),
            };
            for mut violation in crate::matches_prepared(expected, expected_counts, &found, &self.mask) {
                if named {
                    violation.object = violation.object.map(|object| format!("cluster {name}: {object}"));
                }
                all.push(violation);
            }
        }
        all
    }
}

/// Run one seed on a fresh thread, as sweeps run seeds: madsim's thread-local state and std's
/// per-thread hash seeds start clean, so a reference run is the run a sweep would make of that
/// seed, wherever `compute` is called from.
fn run_on_fresh_thread(builder: &SimBuilder, seed: u64) -> sim::RunReport {
    /// As the sweep's seed threads (twice libtest's default, for debug builds of deep futures).
    const STACK_BYTES: usize = 4 << 20;
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name(format!("reference-seed-{seed}"))
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || builder.run(seed))
            .expect("the OS refused a thread for a reference run");
        match thread.join() {
            Ok(report) => report,
            // The engine catches controller panics; one that escapes is the engine's own.
            Err(payload) => std::panic::resume_unwind(payload),
        }
    })
}

/// The hook of [`matches_reference`].
struct MatchesReference(Arc<Reference>);

impl Property for MatchesReference {
    fn name(&self) -> &str {
        MATCHES_REFERENCE
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        let run = RunEnd::from_view(view);
        let mut all = Vec::new();
        for (name, missed) in &run.missed {
            // Counts with a gap would be compared as if complete: say so instead.
            all.push(Violation {
                property: MATCHES_REFERENCE.to_owned(),
                message: format!(
                    "{missed} revisions were compacted before their creations and deletions were counted; raise ServerConfig::history_revisions_max"
                ),
                object: Some(format!("cluster {name}")),
            });
        }
        all.extend(self.0.violations(&run.clusters, &run.counts));
        summarize(&all)
    }
}

/// `matches_reference`: the run's end state equals the reference's under its mask, and every
/// object was created and deleted as many times as in the reference (unless the two reference
/// runs already disagreed on it); see [`crate::matches_reference`].
pub fn matches_reference(reference: Arc<Reference>) -> impl Property {
    MatchesReference(reference)
}
