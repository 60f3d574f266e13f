//! The tests of `sim::faults::profile` (its former unit tests: the library has no test harness).

use sim::faults::profile::*;

#[test]
fn a_group_is_the_union_of_its_replicas_and_any_semantic_wins() {
    let mut profile = Profile::default();
    profile.note_group("ctrl-0", "ctrl");
    profile.note_group("ctrl-1", "ctrl");
    profile.note_list("ctrl-0", "default/pods", false);
    profile.note_list("ctrl-1", "default/pods", true);
    profile.note_call("ctrl-0", "patch", "leases");
    profile.note_call("ctrl-1", "watch", "pods");
    profile.note_reconcile("ctrl-1");
    let group = profile.of("ctrl");
    assert!(group.lists_any());
    assert_eq!((group.calls, group.writes, group.reconciles, group.leader_elected), (1, 1, 1, true));
    assert!(!profile.of("ctrl-0").lists_any());
    assert_eq!(profile.of("nobody"), ControllerProfile::default());
}
