//! The tests of `sim::explore::findings` (its former unit tests: the library has no test harness).

use sim::explore::findings::*;
use sim::faults::FaultPlan;
use sim::verdict::Verdict;

/// One failure per key, the first of each in (scenario, seed, run) order.
fn deduplicate(failures: Vec<Failure>) -> Vec<(Failure, u64)> {
    let mut findings = Findings::default();
    for failure in failures {
        findings.add(failure);
    }
    findings.into_groups()
}

#[test]
fn message_shape_replaces_numbers_and_hex_digests_with_a_hash() {
    assert_eq!(
        message_shape("pvc data-2 of cluster zk-10 deleted at rv 4711 (digest 9f2c00ab)"),
        "pvc data-# of cluster zk-# deleted at rv # (digest #)"
    );
    assert_eq!(
        message_shape("statefulset dc has 3 replicas, expected 1"),
        message_shape("statefulset dc has 2 replicas, expected 0")
    );
    assert_eq!(message_shape("a deadbeef word"), "a deadbeef word");
}

#[test]
fn generated_name_and_hash_suffixes_shape_alike_and_ordinary_words_stay() {
    let shape = |m| message_shape(m);
    assert_eq!(
        shape("backups default/nightly-x7k2p created twice"),
        "backups default/nightly-* created twice"
    );
    assert_eq!(
        shape("backups default/nightly-x7k2p created twice"),
        shape("backups default/nightly-bqzzt created twice")
    );
    assert_eq!(shape("replicasets default/web-5d4f8b9c7d: 3 pods"), "replicasets default/web-*: # pods");
    assert_eq!(shape("uid 0b6a52e4-33cf-4f1e-9f5c-2b9d0c1e7a11"), "uid #-#-#-#-#");
    // Words with vowels, and suffixes not after a dash, are no generated names.
    assert_eq!(shape("pvc data-backup deleted"), "pvc data-backup deleted");
    assert_eq!(shape("mode x7k2p"), "mode x#k#p");
}

#[test]
fn failures_deduplicate_by_scenario_kind_property_and_message_shape_keeping_the_lowest_seed() {
    let failure = |scenario, seed, message: &str| Failure {
        scenario,
        seed,
        run: 0,
        verdict: Verdict::Correctness { property: "p".into(), message: message.into(), at_millis: 1 },
        plan: FaultPlan::none(),
    };
    let groups = deduplicate(vec![
        failure(0, 9, "pvc data-2 deleted"),
        failure(0, 3, "pvc data-1 deleted"),
        failure(1, 4, "pvc data-1 deleted"),
        failure(0, 5, "statefulset has 3 replicas"),
    ]);
    let seen: Vec<(usize, u64, u64)> = groups.iter().map(|(f, n)| (f.scenario, f.seed, *n)).collect();
    assert_eq!(seen, vec![(0, 3, 2), (0, 5, 1), (1, 4, 1)]);
}

#[test]
fn a_tally_of_further_violations_does_not_make_another_failure() {
    let failure = |message: &str| Failure {
        scenario: 0,
        seed: 1,
        run: 0,
        verdict: Verdict::Correctness { property: "p".into(), message: message.into(), at_millis: 1 },
        plan: FaultPlan::none(),
    };
    let one = key(&failure("configmaps default/b-x7k2p: expected absent, found present"));
    let two =
        key(&failure("configmaps default/b-qqzzt: expected absent, found present (and 1 more violation)"));
    let three =
        key(&failure("configmaps default/b-bcdfg: expected absent, found present (and 12 more violations)"));
    assert_eq!(one, two);
    assert_eq!(one, three);
    assert_eq!(without_tally("odd (and many more violations)"), "odd (and many more violations)");
}

#[test]
fn a_guided_failure_key_keeps_the_lowest_run_whatever_order_the_runs_finished_in() {
    let failure = |run| Failure {
        scenario: 0,
        seed: 7,
        run,
        verdict: Verdict::Liveness { reason: format!("stuck after {run} reconciles") },
        plan: FaultPlan::none(),
    };
    for arrival in [vec![9, 4, 12], vec![12, 9, 4], vec![4, 12, 9]] {
        let groups = deduplicate(arrival.into_iter().map(failure).collect());
        let seen: Vec<(u64, u64)> = groups.iter().map(|(f, n)| (f.run, *n)).collect();
        assert_eq!(seen, vec![(4, 3)]);
    }
}
