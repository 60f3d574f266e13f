//! Guided exploration against the fault zoo: each buggy controller whose bug one fault exposes is
//! found by guided exploration, in fewer runs than a random swarm sweep needs; a fixed controller
//! has every injection point exercised.

#[path = "fault_zoo/ambiguous.rs"]
mod ambiguous;
#[allow(dead_code)]
#[path = "fault_zoo/common.rs"]
mod common;
#[path = "fault_zoo/finalizer_replay.rs"]
mod finalizer_replay;
#[path = "fault_zoo/leader.rs"]
mod leader;
#[path = "fault_zoo/memory.rs"]
mod memory;
#[path = "fault_zoo/reorder.rs"]
mod reorder;
#[path = "fault_zoo/stale_delete.rs"]
mod stale_delete;
#[path = "fault_zoo/unobserved.rs"]
mod unobserved;
#[path = "fault_zoo/write_pair.rs"]
mod write_pair;

use common::Variant;
use sim::faults::SwarmConfig;
use sim::guided::{Explorer, GuidedConfig, explorer::run_isolated};
use sim::{SimBuilder, Verdict};

/// Seeds a random swarm sweep may use before it counts as not finding the bug.
const RANDOM_SEEDS_MAX: u64 = 300;

/// One zoo bug: its world, the property its bug breaks, and its controllers.
struct Case {
    name: &'static str,
    world: fn(Variant) -> SimBuilder,
    property: &'static str,
    controllers: &'static [&'static str],
}

const CASES: [Case; 8] = [
    Case {
        name: "memory",
        world: memory::world,
        property: "at most one child per parent",
        controllers: &["zoo"],
    },
    Case {
        name: "write-pair",
        world: write_pair::world,
        property: "every parent has exactly its expected children",
        controllers: &["zoo"],
    },
    Case {
        name: "stale-delete",
        world: stale_delete::world,
        property: "objects that are not expired survive",
        controllers: &["zoo"],
    },
    Case {
        name: "ambiguous",
        world: ambiguous::world,
        property: "at most one child per parent",
        controllers: &["zoo"],
    },
    Case {
        name: "unobserved",
        world: unobserved::world,
        property: "every parent has exactly its expected children",
        controllers: &["zoo"],
    },
    Case {
        name: "reorder",
        world: reorder::world,
        property: "every parent has its children",
        controllers: &["zoo"],
    },
    Case {
        name: "finalizer-replay",
        world: finalizer_replay::world,
        property: finalizer_replay::PROPERTY,
        controllers: &["zoo"],
    },
    Case {
        name: "leader",
        world: leader::world,
        property: "at most one child per parent",
        controllers: &["zoo-0", "zoo-1"],
    },
];

fn broke(verdict: &Verdict, property: &str) -> bool {
    matches!(verdict, Verdict::Correctness { property: p, .. } if p == property)
}

/// Runs until guided exploration breaks `case.property` (the reference counts as run 1).
fn guided_runs(case: &Case) -> Option<usize> {
    let exploration = Explorer::new(&(case.world)(Variant::Buggy), GuidedConfig::default())
        .explore_until(|report| broke(&report.verdict, case.property))
        .expect("the buggy variant passes its fault-free reference");
    let finding = exploration.failure?;
    broke(&finding.report.verdict, case.property).then_some(finding.run)
}

/// Seeds of a random swarm (every fault kind but leader pauses, unless the controller is
/// replicated) until one breaks `case.property`.
fn random_runs(case: &Case) -> Option<u64> {
    let world = random_world(case);
    (0..RANDOM_SEEDS_MAX)
        .find(|seed| broke(&run_isolated(&world, *seed).verdict, case.property))
        .map(|s| s + 1)
}

/// The buggy world under a random swarm of every fault kind (leader pauses only for a replicated
/// controller, which is the only kind they act on).
fn random_world(case: &Case) -> SimBuilder {
    let mut swarm = SwarmConfig {
        controllers: case.controllers.iter().map(|c| (*c).to_owned()).collect(),
        ..SwarmConfig::default()
    };
    if case.controllers.len() > 1 {
        swarm.kinds.push(sim::faults::FaultKind::PauseLeader);
    }
    (case.world)(Variant::Buggy).swarm(swarm)
}

/// Over seeds `0..RANDOM_SEEDS_MAX` of the same swarm: how many break `case.property`.
fn random_hits(case: &Case) -> u64 {
    let world = random_world(case);
    (0..RANDOM_SEEDS_MAX).filter(|seed| broke(&run_isolated(&world, *seed).verdict, case.property)).count()
        as u64
}

/// Guided runs until the bug, against random exploration's: the runs from seed 0 until a swarm
/// seed fails, and the runs a random sweep needs on average (seeds / failing seeds over
/// `0..RANDOM_SEEDS_MAX`). Every bug is found; in total guided needs fewer runs than both. Per
/// bug the counts are printed: for a bug that a crash at the first write exposes (memory) random
/// swarms are about as fast, so the assertion is on the totals.
#[test]
fn guided_exploration_finds_each_fault_zoo_bug_in_fewer_runs_than_random_exploration_needs() {
    let (mut guided_total, mut first_total, mut average_total) = (0, 0, 0.0);
    for case in &CASES {
        let guided =
            guided_runs(case).unwrap_or_else(|| panic!("guided exploration missed the {} bug", case.name));
        let first = random_runs(case).unwrap_or(RANDOM_SEEDS_MAX + 1);
        let hits = random_hits(case);
        let average = RANDOM_SEEDS_MAX as f64 / hits.max(1) as f64;
        eprintln!(
            "{:<13} runs until the bug: guided {guided:>2}, random from seed 0 {first:>3}, random on average \
             {average:>5.1} ({hits} of {RANDOM_SEEDS_MAX} seeds fail)",
            case.name,
        );
        guided_total += guided as u64;
        first_total += first;
        average_total += average;
    }
    eprintln!(
        "total         runs until the bug: guided {guided_total:>2}, random from seed 0 {first_total:>3}, random on \
         average {average_total:>5.1}"
    );
    assert!(guided_total < first_total, "guided {guided_total} runs, random from seed 0 {first_total}");
    assert!(
        (guided_total as f64) < average_total,
        "guided {guided_total} runs, random on average {average_total}"
    );
}

/// A fixed controller whose reference passes: every single-fault plan runs and passes, and each
/// point's fault fires.
#[test]
fn guided_exploration_of_a_fixed_controller_exercises_every_injection_point() {
    let config = GuidedConfig { stop_at_first_failure: false, multi_plans_max: 0, ..GuidedConfig::default() };
    let exploration =
        Explorer::new(&write_pair::world(Variant::Fixed), config).explore().expect("the reference passes");
    eprintln!("{exploration}");
    let total = exploration.points.points.len();
    assert_eq!(exploration.points.writes, 9, "3 parents, 3 writes each");
    assert!(
        exploration
            .to_string()
            .ends_with(&format!("; no failure; {total} of {total} injection points exercised")),
        "{exploration}"
    );
    assert_eq!(exploration.coverage.to_string(), format!("{total} of {total} injection points exercised"));
    assert!(exploration.coverage.is_complete());
    assert_eq!((exploration.runs, exploration.single_plans, exploration.failures), (total + 1, total, 0));
    assert_eq!(exploration.stopped_by, None);
}

/// Multi-fault plans: 2 or 3 points each, pairwise related and at different sites, no set twice,
/// the same for the same seed; the fixed controller survives them.
#[test]
fn multi_fault_plans_combine_related_points_and_the_fixed_controller_survives_them() {
    let config =
        GuidedConfig { stop_at_first_failure: false, multi_plans_max: 20, ..GuidedConfig::default() };
    let explorer = Explorer::new(&write_pair::world(Variant::Fixed), config.clone());
    let reference = explorer.reference();
    let points = sim::guided::injection_points(&reference);
    let plans = explorer.multi_plans(&points);
    assert_eq!(plans.len(), 20);
    assert_eq!(plans, Explorer::new(&write_pair::world(Variant::Fixed), config).multi_plans(&points));
    let distinct: std::collections::BTreeSet<&Vec<usize>> = plans.iter().collect();
    assert_eq!(distinct.len(), 20);
    for plan in &plans {
        assert!((2..=3).contains(&plan.len()), "{plan:?}");
        for (i, a) in plan.iter().enumerate() {
            for b in &plan[i + 1..] {
                assert!(points[*a].related(&points[*b]) && points[*a].site != points[*b].site, "{plan:?}");
            }
        }
    }
    let exploration = explorer.explore().expect("the reference passes");
    assert_eq!((exploration.multi_plans, exploration.failures), (20, 0));
}

/// Sieve's promise for a correct controller: no single-fault plan of its reference breaks it.
/// Every fixed zoo controller passes every single-fault plan, and every point's fault fires.
#[test]
fn every_fixed_fault_zoo_controller_survives_every_single_fault_plan_with_every_point_exercised() {
    for case in &CASES {
        let config =
            GuidedConfig { stop_at_first_failure: false, multi_plans_max: 0, ..GuidedConfig::default() };
        let exploration =
            Explorer::new(&(case.world)(Variant::Fixed), config).explore().expect("the reference passes");
        eprintln!("{}: {exploration}", case.name);
        let total = exploration.points.points.len();
        let first = exploration
            .failure
            .as_ref()
            .map(|f| format!("run {}: {} with {:?}", f.run, f.report.verdict, f.plan));
        assert_eq!((exploration.failures, first), (0, None), "{}", case.name);
        assert_eq!(exploration.coverage.unexercised, Vec::new(), "{}", case.name);
        assert_eq!((exploration.runs, exploration.coverage.exercised), (total + 1, total), "{}", case.name);
    }
}
