//! Random swarm exploration: seed after seed of every scenario, each with the fault plan its
//! scenario draws for that seed (swarm selection: which fault kinds are on, and where).

use super::shard::Shard;
use super::{Run, Strategy};

/// Seeds `first_seed` upwards of this shard, spread over `scenarios` scenarios: run `i` is
/// scenario `i mod S` at this shard's seed number `i / S`, so that all scenarios advance together
/// when a deadline ends the exploration.
#[derive(Clone, Copy, Debug)]
pub struct RandomSwarm {
    scenarios: u64,
    first_seed: u64,
    shard: Shard,
    /// Runs in all (`None`: until the deadline or the end of the seed space).
    budget: Option<u64>,
}

impl RandomSwarm {
    /// The first `seeds` seeds from `first_seed` (this shard's share of them) of every scenario;
    /// `None` seeds runs until the exploration's deadline.
    pub fn new(scenarios: usize, first_seed: u64, seeds: Option<u64>, shard: Shard) -> Self {
        let scenarios = scenarios as u64;
        let budget = seeds.map(|seeds| shard.count_in(first_seed, seeds).saturating_mul(scenarios));
        RandomSwarm { scenarios, first_seed, shard, budget }
    }
}

impl Strategy for RandomSwarm {
    fn name(&self) -> &'static str {
        "swarm"
    }

    fn run(&self, index: u64) -> Option<Run> {
        if self.scenarios == 0 || self.budget.is_some_and(|budget| index >= budget) {
            return None;
        }
        let seed = self.shard.nth_seed(self.first_seed, index / self.scenarios)?;
        let scenario = (index % self.scenarios) as usize;
        Some(Run { scenario, seed, ordinal: 0, plan: None })
    }

    fn len(&self) -> Option<u64> {
        self.budget
    }
}
