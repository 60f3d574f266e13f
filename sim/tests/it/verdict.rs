//! The tests of `sim::verdict` (its former unit tests: the library has no test harness).

use sim::decision::DecisionError;
use sim::faults::FaultPlan;
use sim::trace::Trace;
use sim::verdict::*;

#[test]
fn each_verdict_displays_as_one_line_starting_with_its_kind() {
    let cases = [
        (Verdict::Pass, "pass"),
        (
            Verdict::Crash {
                node: "ctrl".into(),
                object: Some("ConfigMap default/a".into()),
                message: "boom".into(),
            },
            "crash: node \"ctrl\" panicked reconciling ConfigMap default/a: boom",
        ),
        (
            Verdict::Crash { node: "ctrl".into(), object: None, message: "boom".into() },
            "crash: node \"ctrl\" panicked: boom",
        ),
        (Verdict::Liveness { reason: "no events: deadlock".into() }, "liveness: no events: deadlock"),
        (
            Verdict::Correctness { property: "owned".into(), message: "a missing".into(), at_millis: 1234 },
            "correctness: property \"owned\" failed at 1.234s: a missing",
        ),
        (
            Verdict::Nondeterminism { first: "ab".into(), second: "cd".into(), choice: None },
            "nondeterminism: the same seed gave trace digests ab and cd",
        ),
        (
            Verdict::Nondeterminism {
                first: "ab".into(),
                second: "cd".into(),
                choice: Some(DecisionError::Exhausted { index: 4, stream: "watch".into() }),
            },
            "nondeterminism: the same seed gave trace digests ab and cd; first divergent choice 4 on \
             stream \"watch\": the recording holds only 4 choices",
        ),
        (
            Verdict::Nondeterminism {
                first: String::new(),
                second: "cd".into(),
                choice: Some(DecisionError::StreamMismatch {
                    index: 2,
                    expected: "latency".into(),
                    found: "watch".into(),
                }),
            },
            "nondeterminism: the replay (trace digest cd) left its recorded choices: choice 2: drawn \
             from stream \"watch\", but the recording has stream \"latency\"",
        ),
    ];
    for (verdict, line) in cases {
        assert_eq!(verdict.to_string(), line);
        assert!(line.starts_with(verdict.kind()));
        assert_eq!(verdict.is_pass(), verdict.kind() == "pass");
    }
}

#[test]
fn a_report_displays_scenario_seed_and_verdict() {
    let report = RunReport {
        scenario: "cmgen".into(),
        seed: 7,
        verdict: Verdict::Liveness { reason: "time limit 60s passed".into() },
        digest: String::new(),
        trace: Trace::new(false),
        stats: RunStats::default(),
        plan: FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    };
    assert_eq!(report.to_string(), "scenario \"cmgen\" seed 7: liveness: time limit 60s passed");
}
