//! Fault plans are data that survives code changes: they round-trip through JSON, and swarm
//! selection draws them deterministically from the seed within the configured bounds.

use sim::DecisionSource;
use sim::faults::{Fault, FaultKind, FaultPlan, SwarmConfig, Trigger, swarm_plan};

fn config() -> SwarmConfig {
    SwarmConfig { controllers: vec!["op".to_owned(), "gc".to_owned()], ..SwarmConfig::default() }
}

#[test]
fn the_same_seed_draws_the_same_plan() {
    for seed in 0..200 {
        let a = swarm_plan(&mut DecisionSource::new(seed), &config());
        let b = swarm_plan(&mut DecisionSource::new(seed), &config());
        assert_eq!(a, b, "seed {seed}");
    }
}

#[test]
fn swarm_plans_vary_across_seeds_and_cover_every_allowed_kind() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut empty = 0;
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..500 {
        let plan = swarm_plan(&mut DecisionSource::new(seed), &config());
        if plan.is_empty() {
            empty += 1;
        }
        kinds.extend(plan.faults.iter().map(|f| f.fault.kind()));
        distinct.insert(serde_json::to_string(&plan).unwrap());
    }
    let expected: std::collections::BTreeSet<FaultKind> = config().kinds.into_iter().collect();
    assert_eq!(kinds, expected);
    // Each of 10 kinds is off with probability 1/2: an empty plan is rare but possible.
    assert!(empty < 10, "{empty} empty plans in 500 seeds");
    assert!(distinct.len() > 450, "only {} distinct plans in 500 seeds", distinct.len());
}

#[test]
fn swarm_plans_stay_within_their_bounds() {
    let config = SwarmConfig { faults_max: 3, writes_max: 5, time_max_ms: 100, ..config() };
    for seed in 0..300 {
        let plan = swarm_plan(&mut DecisionSource::new(seed), &config);
        assert!(plan.faults.len() <= 3, "seed {seed}: {plan:?}");
        for planned in &plan.faults {
            if let Some(c) = planned.fault.controller() {
                assert!(config.controllers.iter().any(|k| k == c), "seed {seed}: {planned}");
            }
            match &planned.trigger {
                Trigger::NthWrite { n, .. } => assert!((1..=5).contains(n), "seed {seed}: {planned}"),
                Trigger::AtTime { at_ms } => assert!(*at_ms <= 100, "seed {seed}: {planned}"),
                Trigger::Rate { per_mille, max, .. } => {
                    assert!(*per_mille <= 1000 && *max >= 1, "seed {seed}: {planned}")
                }
                Trigger::OnObject { .. } => panic!("swarm never draws object triggers: {planned}"),
            }
            // Every fault that lasts is bounded: a watch delay ends within the drawn duration.
            if let Fault::DelayWatch { extra_ms, duration_ms, .. } = &planned.fault {
                let bounds = 1..=config.duration_max_ms;
                assert!(bounds.contains(extra_ms) && bounds.contains(duration_ms), "seed {seed}: {planned}");
            }
            // A call-bound fault must be triggered by a call.
            if matches!(planned.fault, Fault::ApiError { .. } | Fault::Ambiguous { .. } | Fault::Crash { .. })
            {
                assert!(
                    matches!(planned.trigger, Trigger::NthWrite { .. } | Trigger::Rate { .. }),
                    "seed {seed}: {planned}"
                );
            }
        }
    }
}

#[test]
fn a_plan_without_controllers_can_only_compact() {
    let config = SwarmConfig { controllers: vec![], ..SwarmConfig::default() };
    for seed in 0..100 {
        let plan = swarm_plan(&mut DecisionSource::new(seed), &config);
        assert!(plan.faults.iter().all(|f| f.fault == Fault::Compact), "seed {seed}: {plan:?}");
    }
}

#[test]
fn fault_plans_round_trip_through_json() {
    for seed in 0..300 {
        let plan = swarm_plan(&mut DecisionSource::new(seed), &config());
        let json = serde_json::to_string_pretty(&plan).unwrap();
        let back: FaultPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan, "seed {seed}: {json}");
    }
}

#[test]
fn a_planned_fault_reads_as_a_sentence() {
    let json = r#"{"faults":[{"trigger":{"type":"nthWrite","controller":"op","n":2},
        "fault":{"type":"crash","controller":"op","side":"after","restartAfterMs":300}}]}"#;
    let plan: FaultPlan = serde_json::from_str(json).unwrap();
    assert_eq!(plan.faults[0].to_string(), "crash op after the call, restart after 300ms, at write #2 by op");
}
