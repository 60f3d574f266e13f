//! Injection-point coverage: which points of a scenario's fault-free reference run (every
//! controller write, watch delivery, reconcile and object transition, see [`crate::guided`]) the
//! faults of some exploration run fired at.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::faults::FaultPlan;
use crate::guided::{GuidedConfig, PointMap, PointSet, injection_points_of};
use crate::scenario::Scenario;
use crate::verdict::Verdict;

use super::replay;
use crate::runner::on_workers;

/// Injection-point coverage of one scenario: of the points of its fault-free reference (at the
/// exploration's first seed), those whose fault fired in some run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PointCoverage {
    /// Points exercised (the length of `points`).
    pub exercised: u64,
    /// Points found in the reference run.
    pub total: u64,
    /// The exercised points, as indices (ascending) into the reference's point list in exploration
    /// order, so that a merge can take the union of its shards' points.
    pub points: Vec<u64>,
}

impl PointCoverage {
    /// Coverage of `total` points, of which `points` (indices, in any order, repeats allowed) were
    /// exercised.
    pub fn new(total: u64, points: impl IntoIterator<Item = u64>) -> Self {
        let mut points: Vec<u64> = points.into_iter().filter(|p| *p < total).collect();
        points.sort_unstable();
        points.dedup();
        PointCoverage { exercised: points.len() as u64, total, points }
    }

    /// The union with another shard's coverage of the same reference. Coverages of different
    /// references (another first seed or engine: their point totals differ) cannot be combined
    /// point by point: the larger one is kept.
    pub fn union(&self, other: &PointCoverage) -> PointCoverage {
        if self.total != other.total {
            return if other.exercised > self.exercised { other.clone() } else { self.clone() };
        }
        PointCoverage::new(self.total, self.points.iter().chain(&other.points).copied())
    }
}

impl std::fmt::Display for PointCoverage {
    /// `37/112`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.exercised, self.total)
    }
}

/// A scenario's fault-free reference run and its injection points.
pub struct Reference {
    /// The injection points, in exploration order.
    pub points: PointSet,
    /// Maps a run's fired faults onto those points.
    pub map: PointMap,
}

/// The fault-free reference of every scenario at `seed` (on `jobs` workers) with its injection
/// points under `config`, or the verdict of a reference that did not pass (it has no correct run
/// to perturb).
pub fn references(
    scenarios: &[&Scenario],
    seed: u64,
    config: &GuidedConfig,
    jobs: usize,
) -> Vec<Result<Reference, Verdict>> {
    on_workers(jobs, scenarios.len(), |i| {
        let report = replay::run_plan(scenarios[i], seed, &FaultPlan::none(), true);
        if !report.verdict.is_pass() {
            return Err(report.verdict);
        }
        let points = injection_points_of(&report, &config.points);
        let map = PointMap::new(report.trace.entries(), &points.points);
        Ok(Reference { points, map })
    })
}

/// Injection-point coverage as the workers find it: which points of which scenario some run
/// exercised. Marking is a union, so the end result does not depend on the order of the runs.
pub(crate) struct LiveCoverage {
    marked: Vec<Vec<AtomicBool>>,
    exercised: AtomicU64,
    total: u64,
}

impl LiveCoverage {
    pub(crate) fn new_from(references: &[Option<&Reference>]) -> Self {
        let points = |r: &Option<&Reference>| r.map_or(0, |r| r.map.len());
        let marked: Vec<Vec<AtomicBool>> =
            references.iter().map(|r| (0..points(r)).map(|_| AtomicBool::new(false)).collect()).collect();
        let total = marked.iter().map(|m| m.len() as u64).sum();
        LiveCoverage { marked, exercised: AtomicU64::new(0), total }
    }

    /// Mark `points` of `scenario` exercised; whether any was new.
    pub(crate) fn mark(&self, scenario: usize, points: &[usize]) -> bool {
        let mut new = false;
        for point in points {
            if let Some(flag) = self.marked[scenario].get(*point)
                && !flag.swap(true, Ordering::Relaxed)
            {
                self.exercised.fetch_add(1, Ordering::Relaxed);
                new = true;
            }
        }
        new
    }

    /// Points exercised so far, and points in all.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.exercised.load(Ordering::Relaxed), self.total)
    }

    pub(crate) fn into_summaries(self) -> Vec<PointCoverage> {
        self.marked
            .into_iter()
            .map(|flags| {
                let total = flags.len() as u64;
                let exercised = flags.into_iter().map(AtomicBool::into_inner).enumerate();
                PointCoverage::new(total, exercised.filter(|(_, e)| *e).map(|(i, _)| i as u64))
            })
            .collect()
    }
}
