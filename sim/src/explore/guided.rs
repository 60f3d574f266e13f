//! Guided enumeration (Sieve's test plans, without the cluster): every scenario's fault-free
//! reference at one seed, then every plan over its injection points ([`crate::guided`]), single
//! faults first, then several.
//!
//! Run `k` of a scenario (the reference is run 0) belongs to shard `k mod N`, and run `k` of
//! every scenario comes before run `k + 1` of any, so that all scenarios advance together when a
//! deadline ends the exploration early. Every plan runs (there is no stopping at the first
//! failure), so the runs, their verdicts and the failures kept are the same whatever the number
//! of workers.

use crate::guided::{Explorer, GuidedConfig, GuidedError, Phase, PlannedRun};
use crate::scenario::Scenario;

use super::coverage::Reference;
use super::shard::Shard;
use super::{ExploreError, Run, Strategy};

/// The planned runs of every scenario, this shard's share, in run order.
#[derive(Debug)]
pub struct Guided {
    seed: u64,
    /// Per scenario: its planned runs 1.. (run 0 is the reference).
    planned: Vec<Vec<PlannedRun>>,
    /// Per scenario: whether `runs_max` cut its plans short.
    stopped_by_runs_max: Vec<bool>,
    /// This shard's work: (scenario, run k >= 1), run k of every scenario before run k + 1.
    items: Vec<(usize, usize)>,
    owns_reference: bool,
}

impl Guided {
    /// Plan the runs of `scenarios` over their `references` (all of which must have passed) at
    /// `config.seed`, at most `config.runs_max` runs per scenario, the reference included.
    pub fn plan(
        scenarios: &[&Scenario],
        references: &[Result<Reference, crate::verdict::Verdict>],
        config: &GuidedConfig,
        shard: Shard,
    ) -> Result<Self, ExploreError> {
        let mut planned = Vec::with_capacity(scenarios.len());
        let mut stopped_by_runs_max = Vec::with_capacity(scenarios.len());
        for (scenario, reference) in scenarios.iter().zip(references) {
            let reference = reference.as_ref().map_err(|verdict| GuidedError::ReferenceFailed {
                scenario: scenario.name().to_owned(),
                seed: config.seed,
                verdict: Box::new(verdict.clone()),
            })?;
            let mut runs =
                Explorer::for_scenario(scenario, config.clone()).planned_runs(&reference.points.points);
            let plans_max = config.runs_max.saturating_sub(1);
            stopped_by_runs_max.push(runs.len() > plans_max);
            runs.truncate(plans_max);
            planned.push(runs);
        }
        let mut items: Vec<(usize, usize)> = planned
            .iter()
            .enumerate()
            .flat_map(|(s, runs)| (1..=runs.len()).map(move |k| (s, k)))
            .filter(|(_, k)| shard.owns(*k as u64))
            .collect();
        items.sort_by_key(|(s, k)| (*k, *s));
        Ok(Guided { seed: config.seed, planned, stopped_by_runs_max, items, owns_reference: shard.owns(0) })
    }

    /// The planned run behind work item `index`.
    fn planned_run(&self, index: u64) -> Option<(usize, usize, &PlannedRun)> {
        let (scenario, k) = *self.items.get(usize::try_from(index).ok()?)?;
        Some((scenario, k, &self.planned[scenario][k - 1]))
    }

    /// How `scenario`'s runs went, from which work items ran (`ran[i]` for item `i`).
    pub fn summary(&self, scenario: usize, ran: &[bool]) -> GuidedSummary {
        let (mut single, mut multi, mut unfinished) = (0, 0, false);
        for (i, (s, k)) in self.items.iter().enumerate().filter(|(_, (s, _))| *s == scenario) {
            if !ran.get(i).copied().unwrap_or(false) {
                unfinished = true;
                continue;
            }
            match self.planned[*s][k - 1].phase {
                Phase::Multi => multi += 1,
                _ => single += 1,
            }
        }
        let stopped_by = if unfinished {
            Some("--duration")
        } else {
            self.stopped_by_runs_max[scenario].then_some("--seeds")
        };
        GuidedSummary { single, multi, stopped_by }
    }
}

/// What one scenario's guided runs were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuidedSummary {
    /// Single-fault plans run.
    pub single: u64,
    /// Multi-fault plans run.
    pub multi: u64,
    /// What ended the runs early: `--duration` (a deadline), `--seeds` (the runs bound), or none.
    pub stopped_by: Option<&'static str>,
}

impl Strategy for Guided {
    fn name(&self) -> &'static str {
        "guided"
    }

    fn run(&self, index: u64) -> Option<Run> {
        let (scenario, k, planned) = self.planned_run(index)?;
        Some(Run { scenario, seed: self.seed, ordinal: k as u64, plan: Some(planned.plan.clone()) })
    }

    fn len(&self) -> Option<u64> {
        Some(self.items.len() as u64)
    }

    fn counted_before(&self, _scenario: usize) -> u64 {
        u64::from(self.owns_reference)
    }
}
