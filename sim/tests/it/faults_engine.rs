//! The fault engine on a small world (the fault zoo's write-pair controller, fixed variant, which
//! makes 3 writes per parent for 3 parents): fixed plans, swarm plans, unfired faults, and what
//! each kind of fault does to the calls, watches and nodes it acts on.

#[path = "fault_zoo/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "fault_zoo/write_pair.rs"]
mod write_pair;

use sim::faults::{
    CallSide, Fault, FaultKind, FaultPlan, InjectedError, ObjectChange, PlannedFault, SwarmConfig, Trigger,
};
use sim::{RunReport, SimBuilder, TraceEvent, Verdict};

fn world() -> SimBuilder {
    write_pair::world(common::Variant::Fixed).keep_trace(true)
}

fn nth_write(n: u32, fault: Fault) -> PlannedFault {
    PlannedFault { trigger: Trigger::NthWrite { controller: "zoo".into(), n, kind: None, verb: None }, fault }
}

fn lines(report: &RunReport) -> Vec<String> {
    report.trace.entries().iter().map(|e| format!("{} {}", e.node, e.event)).collect()
}

fn faults_fired(report: &RunReport) -> Vec<String> {
    report
        .trace
        .entries()
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Fault { description } => Some(description.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_world_without_faults_reports_an_empty_plan_and_nothing_unfired() {
    let report = world().run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.plan, FaultPlan::none());
    assert!(report.unfired.is_empty());
    assert!(faults_fired(&report).is_empty());
}

#[test]
fn a_fixed_plan_is_logged_at_the_start_and_a_fault_that_never_fires_is_reported() {
    let never = nth_write(100, Fault::Ambiguous { controller: "zoo".into() });
    let plan = FaultPlan { faults: vec![never.clone()] };
    let report = world().faults(plan.clone()).run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.plan, plan);
    assert_eq!(report.unfired, vec![never]);
    assert_eq!(
        lines(&report)[0],
        "engine note: fault plan #1: apply zoo's write but answer 504 Timeout, at write #100 by zoo"
    );
    assert!(
        report.to_string().ends_with(
            "pass (1 of 1 planned faults never fired: apply zoo's write but answer 504 Timeout, at write #100 by zoo)"
        ),
        "{report}"
    );
}

#[test]
fn an_injected_conflict_answers_the_third_write_without_reaching_the_server() {
    let plan = FaultPlan {
        faults: vec![nth_write(
            3,
            Fault::ApiError { controller: "zoo".into(), error: InjectedError::Conflict },
        )],
    };
    let report = world().faults(plan).run(1);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert!(report.unfired.is_empty());
    assert_eq!(faults_fired(&report)[0], "fail zoo's call with 409 Conflict, at write #3 by zoo");
    // The third write is p0's done mark: answered 409 in the server's place, then retried after
    // the error policy's requeue.
    let text = lines(&report);
    let patch = text.iter().position(|l| l.contains("patch configmaps/default/p0")).expect("the patch");
    let call = text[patch].split_whitespace().nth(2).expect("the call number").to_owned();
    let answer = format!("zoo api {call} error 409 Conflict");
    assert!(text[patch..patch + 4].contains(&answer), "{text:#?}");
    let retried = text[patch + 1..].iter().any(|l| l.contains("patch configmaps/default/p0"));
    assert!(retried, "{text:#?}");
}

#[test]
fn a_crash_after_a_write_applies_it_kills_the_node_and_restarts_it_with_fresh_memory() {
    let plan = FaultPlan {
        faults: vec![nth_write(
            1,
            Fault::Crash { controller: "zoo".into(), side: CallSide::After, restart_after_ms: 700 },
        )],
    };
    let report = world().faults(plan).run(1);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let text = lines(&report);
    let fault =
        text.iter().position(|l| l.starts_with("zoo fault: crash zoo after the call")).expect("fault fired");
    let kill = text.iter().position(|l| l.starts_with("zoo node kill: crash fault")).expect("node killed");
    let restart = text.iter().position(|l| l == "zoo node restart").expect("node restarted");
    assert!(fault < kill && kill < restart, "{text:#?}");
    // The crashed call was applied (the server answered it) but the controller never saw it: the
    // restarted controller finds p0-a already there (409 AlreadyExists).
    assert!(text[kill..].iter().any(|l| l.contains("error 409 AlreadyExists")), "{text:#?}");
}

#[test]
fn a_crash_that_outlasts_the_workload_is_restarted_by_the_liveness_phase() {
    let plan = FaultPlan {
        faults: vec![nth_write(
            1,
            Fault::Crash { controller: "zoo".into(), side: CallSide::Before, restart_after_ms: 1_000_000 },
        )],
    };
    let report = world().faults(plan).run(2);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert!(lines(&report).iter().any(|l| l == "zoo node restart"));
}

#[test]
fn a_partition_fails_the_controllers_calls_with_504_until_it_heals() {
    let plan = FaultPlan {
        faults: vec![nth_write(1, Fault::Partition { controller: "zoo".into(), duration_ms: 1_000 })],
    };
    let report = world().faults(plan).run(3);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let text = report.trace.render();
    assert!(
        text.contains("fault: partition zoo from the API server for 1000ms, at write #1 by zoo"),
        "{text}"
    );
    assert!(text.contains("error 504 Timeout"), "{text}");
}

#[test]
fn an_ambiguous_write_is_applied_but_answered_504() {
    let plan = FaultPlan { faults: vec![nth_write(1, Fault::Ambiguous { controller: "zoo".into() })] };
    let report = world().faults(plan).run(4);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let text = lines(&report);
    let first = text.iter().position(|l| l.contains(" error 504 Timeout")).expect("a 504 answer");
    // The retry finds the child that the ambiguous create made.
    assert!(text[first..].iter().any(|l| l.contains("error 409 AlreadyExists")), "{text:#?}");
}

#[test]
fn an_object_trigger_fires_when_the_workload_creates_that_object() {
    let trigger = Trigger::OnObject {
        kind: "ConfigMap".into(),
        namespace: "default".into(),
        name: "p1".into(),
        change: ObjectChange::Create,
    };
    let plan = FaultPlan {
        faults: vec![PlannedFault { trigger, fault: Fault::WatchDisconnect { controller: "zoo".into() } }],
    };
    let report = world().faults(plan).run(5);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert_eq!(
        faults_fired(&report),
        vec!["disconnect zoo's watches, on Create of ConfigMap default/p1".to_owned()]
    );
    assert!(report.trace.render().contains("cut: re-watch from its last revision"));
}

#[test]
fn compaction_at_a_time_makes_lagging_watches_relist() {
    let plan = FaultPlan {
        faults: vec![
            PlannedFault {
                trigger: Trigger::AtTime { at_ms: 100 },
                fault: Fault::SkipByRelist { controller: "zoo".into(), duration_ms: 500 },
            },
            PlannedFault { trigger: Trigger::AtTime { at_ms: 400 }, fault: Fault::Compact },
        ],
    };
    let report = world().faults(plan).run(6);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert_eq!(faults_fired(&report).len(), 2, "{:?}", faults_fired(&report));
    let relists = lines(&report).iter().filter(|l| l.starts_with("zoo relist ")).count();
    assert!(relists >= 2, "an initial list and a relist after the held watch: {relists}");
}

#[test]
fn a_swarm_plan_replayed_as_a_fixed_plan_gives_the_same_trace() {
    let swarm = SwarmConfig { kinds: FaultKind::ALL.to_vec(), ..SwarmConfig::default() };
    let world = world().swarm(swarm);
    for seed in 0..20 {
        let drawn = world.run(seed);
        let replayed =
            write_pair::world(common::Variant::Fixed).keep_trace(true).faults(drawn.plan.clone()).run(seed);
        assert_eq!(replayed.digest, drawn.digest, "seed {seed}");
        assert_eq!(replayed.verdict, drawn.verdict, "seed {seed}");
        assert_eq!(replayed.unfired, drawn.unfired, "seed {seed}");
    }
}

#[test]
fn a_leader_pause_on_a_controller_without_leader_election_never_fires_and_is_reported() {
    let pause = PlannedFault {
        trigger: Trigger::AtTime { at_ms: 100 },
        fault: Fault::PauseLeader { controller: "zoo".into(), duration_ms: 1_000 },
    };
    let report = world().faults(FaultPlan { faults: vec![pause.clone()] }).run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.unfired, vec![pause]);
    assert!(faults_fired(&report).is_empty());
}
