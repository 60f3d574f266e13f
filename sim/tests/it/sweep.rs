//! The tests of `sim::sweep` (its former unit tests: the library has no test harness).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use sim::decision::ChoiceMode;
use sim::run_options::RunOptions;
use sim::runner::panic_message;
use sim::sweep::*;
use sim::trace::Trace;
use sim::verdict::{RunReport, RunStats, Verdict};

fn report(seed: u64, verdict: Verdict, digest: &str) -> RunReport {
    RunReport {
        scenario: "toy".into(),
        seed,
        verdict,
        digest: digest.into(),
        trace: Trace::new(false),
        stats: RunStats::default(),
        plan: sim::faults::FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    }
}

fn plan(first: u64, count: u64) -> SeedPlan {
    SeedPlan { first, count, single: false }
}

#[test]
fn sim_seed_runs_exactly_one_seed_and_sim_seeds_sets_the_count() {
    let config = SweepConfig::new("toy").seeds(50);
    assert_eq!(seed_plan(&config, None, None), SeedPlan { first: 0, count: 50, single: false });
    assert_eq!(seed_plan(&config, None, Some("7")), SeedPlan { first: 0, count: 7, single: false });
    assert_eq!(seed_plan(&config, Some("42"), Some("7")), SeedPlan { first: 42, count: 1, single: true });
    assert_eq!(seed_plan(&config, Some("0x10"), None), SeedPlan { first: 16, count: 1, single: true });
}

#[test]
#[should_panic(expected = "SIM_SEED=\"abc\" is not a seed")]
fn a_malformed_sim_seed_is_rejected_with_its_value() {
    seed_plan(&SweepConfig::new("toy"), Some("abc"), None);
}

#[test]
fn every_seed_runs_once_and_failures_come_back_in_seed_order() {
    let config = SweepConfig::new("toy").jobs(2).self_check_every(0);
    let runs = AtomicU64::new(0);
    let report = sweep_seeds(&config, plan(10, 30), &|seed, _| {
        runs.fetch_add(1, Ordering::Relaxed);
        let verdict = if seed % 7 == 0 {
            Verdict::Liveness { reason: format!("seed {seed} stalls") }
        } else {
            Verdict::Pass
        };
        report(seed, verdict, "d")
    });
    assert_eq!(runs.into_inner(), 30);
    assert_eq!(report.seeds_run, 30);
    assert_eq!(report.failures_total, 4);
    assert_eq!(report.failures.iter().map(|f| f.seed).collect::<Vec<_>>(), vec![14, 21, 28, 35]);
    assert_eq!(report.self_checks, 0);
}

#[test]
fn each_seed_runs_on_a_fresh_thread() {
    let config = SweepConfig::new("toy").jobs(1).self_check_every(0);
    let thread_ids = Mutex::new(Vec::new());
    sweep_seeds(&config, plan(0, 5), &|seed, _| {
        thread_ids.lock().expect("not poisoned").push(thread::current().id());
        assert_eq!(thread::current().name(), Some(format!("sim-seed-{seed}").as_str()));
        report(seed, Verdict::Pass, "d")
    });
    let mut ids = thread_ids.into_inner().expect("not poisoned");
    ids.sort_by_key(|id| format!("{id:?}"));
    ids.dedup();
    assert_eq!(ids.len(), 5);
}

#[test]
fn the_self_check_reruns_every_nth_seed_and_flags_differing_digests() {
    let config = SweepConfig::new("toy").jobs(2).self_check_every(3);
    let calls = Mutex::new(std::collections::BTreeMap::<u64, u32>::new());
    let report = sweep_seeds(&config, plan(0, 9), &|seed, _| {
        let mut calls = calls.lock().expect("not poisoned");
        let call = calls.entry(seed).or_insert(0);
        *call += 1;
        // Seed 6 is "nondeterministic": its second run has another digest.
        let digest = if seed == 6 { format!("d{call}") } else { "d".to_owned() };
        report(seed, Verdict::Pass, &digest)
    });
    let calls = calls.into_inner().expect("not poisoned");
    assert_eq!(calls.into_iter().filter(|(_, n)| *n == 2).map(|(s, _)| s).collect::<Vec<_>>(), vec![0, 3, 6]);
    assert_eq!(report.self_checks, 3);
    assert_eq!(report.failures_total, 1);
    assert_eq!(report.failures[0].seed, 6);
    assert_eq!(
        report.failures[0].verdict,
        Verdict::Nondeterminism { first: "d1".into(), second: "d2".into(), choice: None }
    );
}

#[test]
fn the_self_check_asks_the_first_run_to_record_and_hands_its_recording_to_the_second() {
    use sim::decision::{CHOICES_FORMAT, Choice, Choices};
    let config = SweepConfig::new("toy").jobs(1).self_check_every(2);
    let recording =
        Choices { format: CHOICES_FORMAT, seed: 0, choices: vec![Choice { stream: "s".into(), value: 7 }] };
    let asked = Mutex::new(Vec::new());
    let report = sweep_seeds(&config, plan(0, 2), &|seed, options| {
        asked.lock().expect("not poisoned").push((seed, options.clone()));
        let mut report = report(seed, Verdict::Pass, "d");
        if options.choices == Some(ChoiceMode::Record) {
            report.choices = Some(Choices { seed, ..recording.clone() });
        }
        report
    });
    assert_eq!(report.self_checks, 1);
    let replay = ChoiceMode::Replay(std::sync::Arc::new(recording.clone()));
    assert_eq!(
        asked.into_inner().expect("not poisoned"),
        vec![
            (0, RunOptions { keep_trace: false, choices: Some(ChoiceMode::Record) }),
            (0, RunOptions { keep_trace: false, choices: Some(replay) }),
            (1, RunOptions::default()),
        ]
    );
}

#[test]
fn the_one_seed_sim_seed_asks_for_keeps_its_trace_and_is_not_self_checked() {
    let config = SweepConfig::new("toy").jobs(1).self_check_every(1);
    let asked = Mutex::new(Vec::new());
    let single = SeedPlan { first: 42, count: 1, single: true };
    sweep_seeds(&config, single, &|seed, options| {
        asked.lock().expect("not poisoned").push((seed, options.clone()));
        report(seed, Verdict::Pass, "d")
    });
    assert_eq!(
        asked.into_inner().expect("not poisoned"),
        vec![(42, RunOptions::default().keeping_trace(true))]
    );
}

#[test]
fn a_panic_that_escapes_the_engine_is_a_crash_of_the_engine_with_its_message() {
    let config = SweepConfig::new("toy").jobs(1).self_check_every(0);
    let report = sweep_seeds(&config, plan(3, 1), &|seed, _| {
        if seed == 3 {
            panic!("engine bug at seed {seed}");
        }
        report(seed, Verdict::Pass, "d")
    });
    assert_eq!(
        report.failures[0].verdict,
        Verdict::Crash { node: "engine".into(), object: None, message: "engine bug at seed 3".into() }
    );
}

#[test]
fn the_replay_command_names_the_seed_package_target_and_test() {
    let config = SweepConfig { test_name: Some("sweep::tests::x".into()), ..SweepConfig::new("toy") };
    let report = sweep_seeds(&config, plan(0, 0), &|seed, _| report(seed, Verdict::Pass, "d"));
    let release = if cfg!(debug_assertions) { "" } else { " --release" };
    assert_eq!(
        report.replay_command(1234),
        format!("SIM_SEED=1234 cargo test{release} -p sim-tests --test it -- --exact sweep::tests::x")
    );
    // A crate's unit-test binary is named after the crate, with `_` for `-`.
    assert_eq!(replay_target(Path::new("target/debug/deps/sim-0123abcd"), "sim"), "--lib");
    assert_eq!(replay_target(Path::new("deps/kube_sim-0123abcd"), "kube-sim"), "--lib");
}

#[test]
fn the_replay_command_defaults_to_the_calling_tests_name() {
    let report =
        sweep_seeds(&SweepConfig::new("toy"), plan(0, 0), &|seed, _| report(seed, Verdict::Pass, "d"));
    assert!(
        report
            .replay_command(5)
            .ends_with("-- --exact sweep::the_replay_command_defaults_to_the_calling_tests_name"),
        "{}",
        report.replay_command(5)
    );
}

#[test]
fn assert_all_passed_lists_failures_with_replay_commands() {
    let config = SweepConfig { test_name: Some("t".into()), ..SweepConfig::new("toy").self_check_every(0) };
    let report = sweep_seeds(&config, plan(0, 3), &|seed, _| {
        let verdict = if seed == 1 {
            Verdict::Correctness { property: "p".into(), message: "m".into(), at_millis: 5 }
        } else {
            Verdict::Pass
        };
        report(seed, verdict, "d")
    });
    let panic = std::panic::catch_unwind(|| report.assert_all_passed()).expect_err("one seed failed");
    let message = panic_message(panic.as_ref());
    let release = if cfg!(debug_assertions) { "" } else { " --release" };
    assert_eq!(
        message,
        format!(
            "scenario \"toy\": 1 of 3 seeds failed\n  seed 1: correctness: property \"p\" failed at \
             0.005s: m\n    replay: SIM_SEED=1 cargo test{release} -p sim-tests --test it -- --exact t\n"
        )
    );
}

#[test]
fn ensure_simulated_does_not_panic_in_a_madsim_build() {
    // .cargo/config.toml builds tests with --cfg madsim; without it this test panics.
    ensure_simulated();
}
