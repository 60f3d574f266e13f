//! Recorded choices: a run records every choice of its decision source, a replay of the recording
//! gives the identical run, and a replay that asks for another choice than recorded ends with a
//! nondeterminism verdict naming the first divergent choice. The sweep's self-check uses them.

#[path = "support/configmapgen.rs"]
mod configmapgen;

use std::sync::atomic::{AtomicU64, Ordering};

use sim::decision::{Choices, DecisionError};
use sim::{RunReport, SimBuilder, SweepConfig, Verdict, sweep};

const SEED: u64 = 5;

/// Run on a fresh thread, as sweeps do: madsim's per-thread state starts clean.
fn run(builder: &SimBuilder, seed: u64) -> RunReport {
    std::thread::scope(|s| s.spawn(|| builder.run(seed)).join()).expect("the engine does not panic")
}

fn recorded() -> (RunReport, Choices) {
    let mut report = run(&configmapgen::world(2).record_choices(true), SEED);
    let choices = report.choices.take().expect("a recording run reports its choices");
    (report, choices)
}

#[test]
fn a_run_reports_its_choices_only_when_asked_to_record_them() {
    let (recording, choices) = recorded();
    assert_eq!(recording.verdict, Verdict::Pass);
    assert_eq!(choices.seed, SEED);
    assert!(choices.choices.iter().any(|c| c.stream == "latency"), "{:?}", &choices.choices[..4]);
    let plain = run(&configmapgen::world(2), SEED);
    assert_eq!(plain.choices, None);
    // Recording changes nothing about the run.
    assert_eq!(plain.digest, recording.digest);
}

#[test]
fn replaying_recorded_choices_gives_the_identical_digest_and_verdict() {
    let (recording, choices) = recorded();
    let replay = run(&configmapgen::world(2).replay_choices(choices), SEED);
    assert_eq!(replay.verdict, Verdict::Pass);
    assert_eq!(replay.digest, recording.digest);
    assert_eq!(replay.choices, None);
}

#[test]
fn a_recording_with_another_stream_at_one_choice_gives_a_nondeterminism_verdict_naming_it() {
    let (_, mut choices) = recorded();
    let index = choices.choices.len() / 2;
    let found = std::mem::replace(&mut choices.choices[index].stream, "tampered".to_owned());
    let replay = run(&configmapgen::world(2).replay_choices(choices), SEED);
    let expected = DecisionError::StreamMismatch { index, expected: "tampered".to_owned(), found };
    assert_eq!(expected.choice(), Some((expected_found(&expected), index)));
    assert_eq!(
        replay.verdict,
        Verdict::Nondeterminism {
            first: String::new(),
            second: replay.digest.clone(),
            choice: Some(expected)
        }
    );
    assert!(
        replay.verdict.to_string().starts_with(&format!(
            "nondeterminism: the replay (trace digest {}) left its recorded choices: choice {index}: drawn \
             from stream",
            replay.digest
        )),
        "{}",
        replay.verdict
    );
}

fn expected_found(error: &DecisionError) -> &str {
    match error {
        DecisionError::StreamMismatch { found, .. } => found,
        _ => unreachable!("only called on a stream mismatch"),
    }
}

#[test]
fn a_recorded_latency_out_of_its_range_gives_a_nondeterminism_verdict_naming_the_choice() {
    let (_, mut choices) = recorded();
    let index = choices.choices.iter().position(|c| c.stream == "latency").expect("a latency draw");
    choices.choices[index].value = u64::MAX;
    let replay = run(&configmapgen::world(2).replay_choices(choices), SEED);
    let Verdict::Nondeterminism {
        choice: Some(DecisionError::OutOfRange { index: at, stream, value, .. }),
        ..
    } = &replay.verdict
    else {
        panic!("expected an out-of-range divergence, got {}", replay.verdict);
    };
    assert_eq!((*at, stream.as_str(), *value), (index, "latency", u64::MAX));
}

#[test]
fn a_truncated_recording_is_exhausted_at_its_length() {
    let (_, mut choices) = recorded();
    let len = choices.choices.len() - 3;
    let stream = choices.choices[len].stream.clone();
    choices.choices.truncate(len);
    let replay = run(&configmapgen::world(2).replay_choices(choices), SEED);
    let expected = DecisionError::Exhausted { index: len, stream };
    assert_eq!(
        replay.verdict,
        Verdict::Nondeterminism {
            first: String::new(),
            second: replay.digest.clone(),
            choice: Some(expected)
        }
    );
}

#[test]
fn a_recording_replayed_at_another_seed_is_a_seed_mismatch() {
    let (_, choices) = recorded();
    let replay = run(&configmapgen::world(2).replay_choices(choices), SEED + 1);
    let expected = DecisionError::SeedMismatch { recorded: SEED, run: SEED + 1 };
    assert_eq!(
        replay.verdict,
        Verdict::Nondeterminism {
            first: String::new(),
            second: replay.digest.clone(),
            choice: Some(expected)
        }
    );
}

/// Runs of the nondeterministic world so far. A static on purpose: it is the hidden state that
/// makes the world nondeterministic, as a controller's global counter would.
static RUNS: AtomicU64 = AtomicU64::new(0);

#[test]
fn the_sweep_self_check_names_the_first_choice_at_which_a_nondeterministic_world_diverged() {
    // Every other run creates one more generator: more API calls, hence more latency draws.
    let world = configmapgen::world(1).workload(|w| {
        let count = if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) { 1 } else { 2 };
        configmapgen::workload(w, count)
    });
    // The divergence the self-check must find: where recordings of the two variants part.
    let one = run(&configmapgen::world(1).record_choices(true), SEED).choices.expect("recorded").choices;
    let two = run(&configmapgen::world(2).record_choices(true), SEED).choices.expect("recorded").choices;
    let index = one.iter().zip(&two).position(|(a, b)| a.stream != b.stream).expect("the runs part");
    let expected = DecisionError::StreamMismatch {
        index,
        expected: one[index].stream.clone(),
        found: two[index].stream.clone(),
    };

    RUNS.store(0, Ordering::Relaxed);
    let config = SweepConfig {
        first_seed: SEED,
        ..SweepConfig::new("nondeterministic").seeds(1).jobs(1).self_check_every(1)
    };
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    if std::env::var_os("SIM_SEED").is_some() {
        return; // a single-seed run does not self-check
    }
    assert_eq!(report.failures_total, 1);
    let Verdict::Nondeterminism { first, second, choice } = &report.failures[0].verdict else {
        panic!("expected nondeterminism, got {}", report.failures[0].verdict);
    };
    assert_ne!(first, second);
    assert_eq!(choice.as_ref(), Some(&expected));
    assert_eq!(report.failures[0].choices, None, "kept failures hold no recording");
}
