//! The tests of `sim::explore::coverage_swarm` (its former unit tests: the library has no test harness).

use sim::explore::Strategy;
use sim::explore::coverage_swarm::*;
use sim::explore::shard::Shard;
use sim::scenario::Scenario;

#[test]
fn the_lanes_of_any_shard_count_hold_every_seed_of_the_unsharded_search_once() {
    let scenario = Scenario::new("t", "a world", sim::SimBuilder::new());
    let seeds_of = |shard| {
        let search = CoverageSwarm::new(&[&scenario], &[], 3, Some(21), shard).expect("few shards");
        let seeds: Vec<u64> = (0..).map_while(|i| search.run(i)).map(|r| r.seed).collect();
        assert_eq!(Some(seeds.len() as u64), search.len(), "{shard}");
        assert!(seeds.windows(2).all(|w| w[0] < w[1]), "{shard}: seeds in order");
        seeds
    };
    let all = seeds_of(Shard::ALL);
    assert_eq!(all, (3..24).collect::<Vec<_>>());
    for count in [2, 3, 8] {
        let mut union: Vec<u64> = (0..count).flat_map(|index| seeds_of(Shard { index, count })).collect();
        union.sort_unstable();
        assert_eq!(union, all, "{count} shards");
    }
    // Where the shard count divides the lanes, a seed's shard is the random mode's.
    assert!(seeds_of(Shard { index: 1, count: 4 }).iter().all(|s| s % 4 == 1));
    let nine = Shard { index: 0, count: 9 };
    let error = CoverageSwarm::new(&[&scenario], &[], 0, None, nine).expect_err("nine shards");
    assert_eq!(error, CoverageError::TooManyShards { shard: nine, lanes: LANES });
}
