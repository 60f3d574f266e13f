//! Coverage-feedback swarm: swarm testing that favours the rare. Each seed starts from the plan
//! random swarm would draw for it (or, half the time once there are some, from a mutation of a
//! plan that reached something new), and adds one fault aimed at what has fired least so far:
//! the least-exercised injection point of the scenario's reference, or the least-fired fault
//! kind (partitions, compaction and watch cuts have no points).
//!
//! What a seed's plan depends on is fixed, so that `--jobs` and `--shard` never change which
//! plans run:
//! - the seed space is split into [`LANES`] lanes, seed `s` in lane `s mod LANES`; a lane learns
//!   only from its own seeds, in seed order, so a seed's plan depends on its seed and on the
//!   outcomes of the seeds of its lane before it;
//! - the exploration runs in rounds of [`LANES`] consecutive seeds (one per lane), and the
//!   outcomes of a round are observed between rounds in seed order
//!   ([`Strategy::round_len`](super::Strategy::round_len));
//! - shard `I/N` runs the lanes `l` with `l mod N = I` (so seed `s` belongs to shard
//!   `(s mod LANES) mod N`, which is `s mod N` whenever `N` divides [`LANES`]); at most [`LANES`]
//!   shards.
//!
//! Every run is a fixed plan ([`Run::plan`]), so a failure's regression file records the plan
//! that ran, and replaying it needs none of the feedback (`found.by` is `coverage`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::decision::{DecisionSource, Stream};
use crate::faults::{
    FaultKind, FaultPlan, PlannedFault, SwarmConfig, drawable_kinds, swarm_fault, swarm_plan,
};
use crate::guided::point_map::fired;
use crate::scenario::Scenario;

use super::coverage::Reference;
use super::shard::Shard;
use super::{Outcome, Run, Strategy};

/// Lanes of the seed space: independent chains of feedback, and the most shards a coverage
/// exploration splits into.
pub const LANES: u64 = 8;
/// The decision stream the steering draws from (each seed's own: the plan random swarm would
/// draw comes from [`crate::faults::PLAN_STREAM`] as ever).
pub const STEER_STREAM: &str = "explore.coverage";
/// Plans that reached a new point or kind, kept per lane to mutate (the oldest go first).
pub const CORPUS_MAX: usize = 32;

/// Why a coverage exploration cannot run as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CoverageError {
    /// More shards than lanes: some shard would run nothing, and the lanes cannot be split finer.
    #[error(
        "coverage search splits the seed space into {lanes} lanes: --shard {shard} has more shards than that"
    )]
    TooManyShards {
        /// The shard asked for.
        shard: Shard,
        /// [`LANES`].
        lanes: u64,
    },
}

/// What one scenario's plans are drawn from.
struct Arm {
    /// Its swarm, with controllers and profile (`None`: a scenario without a swarm runs as it
    /// is declared, unsteered).
    swarm: Option<SwarmConfig>,
    /// The faults of its reference's injection points that its swarm could draw (a kind the
    /// scenario leaves out stays out), by point index.
    targets: Vec<(usize, PlannedFault)>,
    /// The kinds its swarm can draw.
    kinds: Vec<FaultKind>,
    points: usize,
}

/// What one lane of one scenario has seen.
#[derive(Clone, Debug, Default)]
struct Lane {
    /// Per injection point: how many runs exercised it.
    hits: Vec<u32>,
    /// Per fault kind: how many planned faults of it fired.
    fired: BTreeMap<FaultKind, u32>,
    /// Plans that reached a point or a kind no run of the lane had.
    corpus: Vec<FaultPlan>,
}

/// Coverage-feedback swarm over seeds `first_seed` upwards of this shard's lanes.
pub struct CoverageSwarm {
    arms: Vec<Arm>,
    first_seed: u64,
    /// Seeds per scenario (`None`: until the deadline).
    seeds: Option<u64>,
    /// Offsets `t` in `0..LANES` of a round's seeds (`first_seed + r * LANES + t`) this shard owns.
    offsets: Vec<u64>,
    /// Per scenario, per lane.
    lanes: Mutex<Vec<Vec<Lane>>>,
}

impl std::fmt::Debug for CoverageSwarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoverageSwarm")
            .field("scenarios", &self.arms.len())
            .field("first_seed", &self.first_seed)
            .field("seeds", &self.seeds)
            .field("offsets", &self.offsets)
            .finish_non_exhaustive()
    }
}

impl CoverageSwarm {
    /// The first `seeds` seeds from `first_seed` of every scenario (this shard's lanes of them),
    /// steered by coverage of `references[i]` (scenario `i`'s fault-free reference; without one,
    /// only by fault kinds). `None` seeds runs until the exploration's deadline.
    pub fn new(
        scenarios: &[&Scenario],
        references: &[Option<Reference>],
        first_seed: u64,
        seeds: Option<u64>,
        shard: Shard,
    ) -> Result<Self, CoverageError> {
        if shard.count > LANES {
            return Err(CoverageError::TooManyShards { shard, lanes: LANES });
        }
        let arms: Vec<Arm> = scenarios
            .iter()
            .enumerate()
            .map(|(i, scenario)| arm(scenario, references.get(i).and_then(Option::as_ref)))
            .collect();
        let offsets = (0..LANES)
            .filter(|t| (first_seed.wrapping_add(*t) % LANES) % shard.count == shard.index)
            .collect();
        let lanes = arms
            .iter()
            .map(|arm| vec![Lane { hits: vec![0; arm.points], ..Lane::default() }; LANES as usize])
            .collect();
        Ok(CoverageSwarm { arms, first_seed, seeds, offsets, lanes: Mutex::new(lanes) })
    }

    /// Work item `index` as (scenario, seed), whether or not it is within the budget.
    fn item(&self, index: u64) -> Option<(usize, u64)> {
        let scenarios = self.arms.len() as u64;
        let per_round = (self.offsets.len() as u64).checked_mul(scenarios).filter(|n| *n > 0)?;
        let (round, within) = (index / per_round, index % per_round);
        let offset = self.offsets[(within / scenarios) as usize];
        let seed = self.first_seed.checked_add(round.checked_mul(LANES)?)?.checked_add(offset)?;
        Some(((within % scenarios) as usize, seed))
    }

    /// The plan of `scenario` at `seed`, from what its lane saw.
    fn plan(&self, scenario: usize, seed: u64, lane: &Lane) -> Option<FaultPlan> {
        let arm = &self.arms[scenario];
        let swarm = arm.swarm.as_ref()?;
        let mut source = DecisionSource::new(seed);
        let stream = source.stream(STEER_STREAM);
        let mut plan = if !lane.corpus.is_empty() && stream.chance(0.5) {
            let parent = &lane.corpus[stream.below(lane.corpus.len() as u64) as usize];
            mutate(parent, stream, swarm, arm)
        } else {
            swarm_plan(&mut DecisionSource::new(seed), swarm)
        };
        if let Some(rare) = rarest(stream, swarm, arm, lane) {
            plan.faults.push(rare);
        }
        // Bounded: a lineage of mutations that each add a fault must not grow without end.
        while plan.faults.len() > swarm.faults_max.max(1) + 1 {
            plan.faults.remove(stream.below(plan.faults.len() as u64) as usize);
        }
        Some(plan)
    }
}

/// What scenario `scenario`'s plans are drawn from.
fn arm(scenario: &Scenario, reference: Option<&Reference>) -> Arm {
    let swarm = scenario.builder().swarm_with_profile();
    let kinds = swarm.as_ref().map(drawable_kinds).unwrap_or_default();
    let points = reference.map_or(0, |r| r.points.points.len());
    let targets = reference
        .map(|r| {
            r.points
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| kinds.contains(&p.fault.fault.kind()))
                .map(|(i, p)| (i, p.fault.clone()))
                .collect()
        })
        .unwrap_or_default();
    Arm { swarm, targets, kinds, points }
}

/// One fault toward the rare: half the time (or always, for a scenario without points) a fault
/// of the least-fired kind, otherwise the fault of a least-exercised point; ties broken by the
/// stream.
fn rarest(stream: &mut Stream, swarm: &SwarmConfig, arm: &Arm, lane: &Lane) -> Option<PlannedFault> {
    if arm.targets.is_empty() || stream.chance(0.5) {
        let fewest = arm.kinds.iter().map(|k| lane.fired.get(k).copied().unwrap_or(0)).min()?;
        let rare: Vec<FaultKind> =
            arm.kinds.iter().copied().filter(|k| lane.fired.get(k).copied().unwrap_or(0) == fewest).collect();
        let kind = rare[stream.below(rare.len() as u64) as usize];
        return swarm_fault(stream, swarm, kind);
    }
    let fewest = arm.targets.iter().map(|(i, _)| lane.hits[*i]).min()?;
    let rare: Vec<&PlannedFault> =
        arm.targets.iter().filter(|(i, _)| lane.hits[*i] == fewest).map(|(_, f)| f).collect();
    Some(rare[stream.below(rare.len() as u64) as usize].clone())
}

/// A plan like `parent`: one of its faults moved to another moment, dropped, or replaced by a
/// fresh fault of another drawable kind.
fn mutate(parent: &FaultPlan, stream: &mut Stream, swarm: &SwarmConfig, arm: &Arm) -> FaultPlan {
    let mut plan = parent.clone();
    if plan.faults.is_empty() || arm.kinds.is_empty() {
        return plan;
    }
    let at = stream.below(plan.faults.len() as u64) as usize;
    match stream.below(3) {
        0 => plan.faults[at].trigger = crate::faults::redraw_trigger(stream, swarm, &plan.faults[at]),
        1 if plan.faults.len() > 1 => {
            plan.faults.remove(at);
        }
        _ => {
            let kind = arm.kinds[stream.below(arm.kinds.len() as u64) as usize];
            if let Some(fresh) = swarm_fault(stream, swarm, kind) {
                plan.faults[at] = fresh;
            }
        }
    }
    plan
}

impl Strategy for CoverageSwarm {
    fn name(&self) -> &'static str {
        "coverage"
    }

    fn run(&self, index: u64) -> Option<Run> {
        let (scenario, seed) = self.item(index)?;
        if self.seeds.is_some_and(|seeds| seed - self.first_seed >= seeds) {
            return None;
        }
        let lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let plan = self.plan(scenario, seed, &lanes[scenario][(seed % LANES) as usize]);
        Some(Run { scenario, seed, ordinal: 0, plan })
    }

    fn len(&self) -> Option<u64> {
        let seeds = self.seeds?;
        let per_scenario: u64 = self.offsets.iter().map(|t| seeds.saturating_sub(*t).div_ceil(LANES)).sum();
        Some(per_scenario * self.arms.len() as u64)
    }

    fn round_len(&self) -> Option<u64> {
        Some(self.offsets.len() as u64 * self.arms.len() as u64)
    }

    fn observe(&self, _index: u64, outcome: &Outcome) {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let lane = &mut lanes[outcome.run.scenario][(outcome.run.seed % LANES) as usize];
        let mut new = false;
        for point in &outcome.exercised {
            if let Some(hits) = lane.hits.get_mut(*point) {
                new |= *hits == 0;
                *hits += 1;
            }
        }
        for planned in fired(&outcome.plan, &outcome.unfired) {
            let count = lane.fired.entry(planned.fault.kind()).or_default();
            new |= *count == 0;
            *count += 1;
        }
        if new && !outcome.plan.is_empty() {
            if lane.corpus.len() == CORPUS_MAX {
                lane.corpus.remove(0);
            }
            lane.corpus.push(outcome.plan.clone());
        }
    }
}
