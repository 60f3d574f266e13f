//! The tests of `sim::explore::random` (its former unit tests: the library has no test harness).

use sim::explore::Strategy;
use sim::explore::random::*;
use sim::explore::shard::Shard;

#[test]
fn random_swarm_interleaves_scenarios_over_this_shards_seeds_within_the_budget() {
    let swarm = RandomSwarm::new(2, 10, Some(4), Shard { index: 1, count: 2 });
    let runs: Vec<(usize, u64)> = (0..).map_while(|i| swarm.run(i)).map(|r| (r.scenario, r.seed)).collect();
    assert_eq!(runs, vec![(0, 11), (1, 11), (0, 13), (1, 13)]);
    assert_eq!(swarm.len(), Some(4));
    assert!(RandomSwarm::new(0, 0, None, Shard::ALL).run(0).is_none());
}
