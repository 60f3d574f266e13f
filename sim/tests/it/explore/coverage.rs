//! The tests of `sim::explore::coverage` (its former unit tests: the library has no test harness).

use sim::explore::coverage::*;

#[test]
fn coverage_of_two_shards_of_one_reference_merges_to_the_union_of_their_points() {
    let first = PointCoverage::new(10, [4, 1, 4]);
    assert_eq!(first, PointCoverage { exercised: 2, total: 10, points: vec![1, 4] });
    let second = PointCoverage::new(10, [9, 1, 12]);
    assert_eq!(second.points, vec![1, 9], "an index past the total is no point");
    assert_eq!(first.union(&second), PointCoverage { exercised: 3, total: 10, points: vec![1, 4, 9] });
    assert_eq!(first.union(&second).to_string(), "3/10");
    // Another reference's points cannot be matched one by one: the larger coverage is kept.
    let other = PointCoverage::new(30, [0, 1, 2]);
    assert_eq!(first.union(&other), other);
    assert_eq!(other.union(&first), other);
}
