//! The tests of `sim::explore::shard` (its former unit tests: the library has no test harness).

use sim::explore::shard::*;

#[test]
fn the_union_of_all_shards_is_exactly_the_unsharded_seed_set_with_no_overlap() {
    for count in 1..=7u64 {
        for first in [0u64, 1, 5, 13] {
            let total = 50;
            let mut union: Vec<u64> = Vec::new();
            for index in 0..count {
                let shard = Shard { index, count };
                let seeds: Vec<u64> = shard.seeds_in(first, total).collect();
                assert!(seeds.iter().all(|s| shard.owns(*s)));
                assert_eq!(seeds.len() as u64, shard.count_in(first, total));
                union.extend(seeds);
            }
            union.sort_unstable();
            let unsharded: Vec<u64> = Shard::ALL.seeds_in(first, total).collect();
            assert_eq!(unsharded, (first..first + total).collect::<Vec<_>>());
            // Equal sorted lists of the same length: every seed once, none twice.
            assert_eq!(union, unsharded, "shards of {count} from {first}");
        }
    }
}

#[test]
fn a_shard_parses_from_i_slash_n_and_rejects_an_index_out_of_range() {
    assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
    assert_eq!(
        "4/4".parse::<Shard>(),
        Err("\"4/4\" is not a shard: expected I/N with 0 <= I < N, e.g. 0/4".to_owned())
    );
    assert!("0/0".parse::<Shard>().is_err());
    assert!("x".parse::<Shard>().is_err());
}

#[test]
fn the_nth_seed_of_a_shard_near_u64_max_is_none_instead_of_wrapping() {
    let shard = Shard { index: 1, count: 2 };
    assert_eq!(shard.nth_seed(u64::MAX - 2, 0), Some(u64::MAX - 2));
    assert_eq!(shard.nth_seed(u64::MAX - 2, 1), Some(u64::MAX));
    assert_eq!(shard.nth_seed(u64::MAX - 2, 2), None);
}
