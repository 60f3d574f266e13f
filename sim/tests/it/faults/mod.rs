//! The tests of `sim::faults` (its former unit tests: the library has no test harness).

mod lose_node;
mod profile;

use sim::faults::*;

#[test]
fn every_kind_dispatches_to_the_operations_of_that_same_kind() {
    for kind in FaultKind::ALL {
        assert_eq!(ops_kind(kind), kind);
    }
}

#[test]
fn point_order_names_each_kind_at_most_once() {
    for (i, kind) in POINT_ORDER.iter().enumerate() {
        assert!(!POINT_ORDER[..i].contains(kind), "{kind:?} twice");
    }
}

#[test]
fn the_default_swarm_turns_on_every_kind_but_pause_leader_and_lose_node_in_catalogue_order() {
    let kinds = SwarmConfig::default().kinds;
    let expected: Vec<FaultKind> = FaultKind::ALL
        .into_iter()
        .filter(|k| !matches!(k, FaultKind::PauseLeader | FaultKind::LoseNode))
        .collect();
    assert_eq!(kinds, expected);
}
