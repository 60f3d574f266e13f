//! Determinism: the same seed gives the same trace on any thread, and different seeds explore
//! different runs.

#[path = "support/configmapgen.rs"]
mod configmapgen;

use std::collections::BTreeMap;
use std::sync::Mutex;

use sim::property::FnProperty;
use sim::{SweepConfig, Verdict, sweep};

const GENERATORS: usize = 3;

#[test]
fn two_hundred_seeds_each_run_on_two_threads_give_identical_digests() {
    let world = configmapgen::world(GENERATORS);
    // The self-check on every seed runs it a second time on another fresh thread and compares
    // digests and verdicts; a mismatch is a nondeterminism failure.
    let config = SweepConfig::new("configmapgen-determinism").seeds(200).self_check_every(1);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
    let seeds = configmapgen::expected_seeds(200);
    let checked = if std::env::var_os("SIM_SEED").is_some() { 0 } else { seeds };
    assert_eq!((report.seeds_run, report.self_checks), (seeds, checked));
}

#[test]
fn different_seeds_give_different_traces() {
    let world = configmapgen::world(GENERATORS);
    let digests = Mutex::new(BTreeMap::new());
    let config = SweepConfig { first_seed: 1_000, ..SweepConfig::new("configmapgen-seeds").seeds(50) };
    let report = sweep(&config, |seed, options| {
        let report = world.run_with(seed, options);
        digests.lock().expect("not poisoned").insert(seed, report.digest.clone());
        report
    });
    report.assert_all_passed();
    let digests = digests.into_inner().expect("not poisoned");
    let distinct: std::collections::BTreeSet<&String> = digests.values().collect();
    // Every seed draws its own API latencies and watch delays, so no two traces coincide.
    assert_eq!(distinct.len(), digests.len());
}

#[test]
fn a_kept_trace_has_the_digest_of_a_sweep_run_of_the_same_seed() {
    let world = configmapgen::world(GENERATORS);
    let quiet = std::thread::scope(|s| s.spawn(|| world.run(42)).join()).expect("the run finishes");
    let kept = std::thread::scope(|s| s.spawn(|| world.clone().keep_trace(true).run(42)).join())
        .expect("the run finishes");
    assert_eq!(kept.verdict, Verdict::Pass);
    assert_eq!(kept.digest, quiet.digest);
    assert_eq!(kept.trace.entries().len(), quiet.trace.len());
    assert_eq!(quiet.trace.entries().len(), 0);
}

#[test]
fn a_failing_seed_reports_the_replay_command_of_this_test() {
    // A property that never holds fails every seed with the same verdict.
    let world = configmapgen::world(1).property(FnProperty::at_end("never", |_| Err("by design".to_owned())));
    let config = SweepConfig::new("configmapgen-never").seeds(3).self_check_every(0);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    let release = if cfg!(debug_assertions) { "" } else { " --release" };
    assert_eq!(
        report.replay_command(17),
        format!(
            "SIM_SEED=17 cargo test{release} -p sim-tests --test it -- --exact \
             determinism::a_failing_seed_reports_the_replay_command_of_this_test"
        )
    );
    let seeds = configmapgen::expected_seeds(3);
    assert_eq!(report.failures_total, seeds);
    let first = &report.failures[0];
    let Verdict::Correctness { property, message, .. } = &first.verdict else {
        panic!("expected a correctness verdict, got {}", first.verdict);
    };
    assert_eq!((property.as_str(), message.as_str()), ("never", "by design"));
}
