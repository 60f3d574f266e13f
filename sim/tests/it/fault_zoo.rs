//! The fault zoo: one small controller per fault kind, each with a bug that only that fault
//! exposes and a fixed variant. Each bug is caught by a general property (the controller's
//! contract, not the bug) in a swarm sweep over a stated seed budget, and the failing seed's
//! trace shows the fault that triggered it; each fixed variant passes 1,000 seeds of the same
//! swarm. No test knows a failing seed in advance.

#[path = "fault_zoo/ambiguous.rs"]
mod ambiguous;
#[path = "fault_zoo/common.rs"]
mod common;
#[path = "fault_zoo/finalizer_replay.rs"]
mod finalizer_replay;
#[path = "fault_zoo/leader.rs"]
mod leader;
#[path = "fault_zoo/lost_node.rs"]
mod lost_node;
#[path = "fault_zoo/memory.rs"]
mod memory;
#[path = "fault_zoo/migration.rs"]
mod migration;
#[path = "fault_zoo/reorder.rs"]
mod reorder;
#[path = "fault_zoo/stale_delete.rs"]
mod stale_delete;
#[path = "fault_zoo/unobserved.rs"]
mod unobserved;
#[path = "fault_zoo/write_pair.rs"]
mod write_pair;

use common::{Variant, assert_found_within, assert_passes, swarm_of};
use sim::faults::FaultKind;

/// Seeds every fixed variant passes in the default run.
const FIXED_SEEDS: u64 = 1_000;

#[test]
fn state_kept_only_in_memory_is_found_by_crashes_within_200_seeds() {
    let swarm = swarm_of(FaultKind::Crash, &["zoo"], 4, 6_000, 3_000);
    let world = memory::world(Variant::Buggy).swarm(swarm);
    assert_found_within(&world, memory::SCENARIO, 200, "at most one child per parent", FaultKind::Crash);
}

#[test]
fn state_recovered_from_the_server_survives_1000_seeds_of_crashes() {
    let swarm = swarm_of(FaultKind::Crash, &["zoo"], 4, 6_000, 3_000);
    assert_passes(&memory::world(Variant::Fixed).swarm(swarm), memory::SCENARIO, FIXED_SEEDS);
}

/// Crashes at any of the controller's first 9 writes (3 parents, 3 writes each) or in the first 3s.
fn write_pair_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::Crash, &["zoo"], 9, 3_000, 3_000)
}

#[test]
fn a_write_pair_that_is_not_crash_safe_is_found_by_crashes_within_300_seeds() {
    let world = write_pair::world(Variant::Buggy).swarm(write_pair_swarm());
    let property = "every parent has exactly its expected children";
    assert_found_within(&world, write_pair::SCENARIO, 300, property, FaultKind::Crash);
}

#[test]
fn marking_a_parent_done_after_both_writes_survives_1000_seeds_of_crashes() {
    assert_passes(
        &write_pair::world(Variant::Fixed).swarm(write_pair_swarm()),
        write_pair::SCENARIO,
        FIXED_SEEDS,
    );
}

/// Restarts onto a replica up to 20 revisions behind, at the janitor's first delete or in the
/// first 8s.
fn stale_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::StaleReplica, &["zoo"], 2, 8_000, 3_000)
}

#[test]
fn a_delete_by_name_on_a_stale_view_is_found_by_time_travel_within_300_seeds() {
    let world = stale_delete::world(Variant::Buggy).swarm(stale_swarm());
    let property = "objects that are not expired survive";
    assert_found_within(&world, stale_delete::SCENARIO, 300, property, FaultKind::StaleReplica);
}

#[test]
fn a_delete_with_a_uid_precondition_survives_1000_seeds_of_time_travel() {
    assert_passes(
        &stale_delete::world(Variant::Fixed).swarm(stale_swarm()),
        stale_delete::SCENARIO,
        FIXED_SEEDS,
    );
}

/// Restarts onto a replica up to 20 revisions behind, at one of the registrar's 4 writes or in
/// the first 3s.
fn replay_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::StaleReplica, &["zoo"], 4, 3_000, 3_000)
}

#[test]
fn a_record_created_from_a_replayed_past_is_found_by_time_travel_within_300_seeds() {
    let world = finalizer_replay::world(Variant::Buggy).swarm(replay_swarm());
    let property = finalizer_replay::PROPERTY;
    assert_found_within(&world, finalizer_replay::SCENARIO, 300, property, FaultKind::StaleReplica);
}

#[test]
fn a_record_created_after_a_quorum_read_survives_1000_seeds_of_time_travel() {
    assert_passes(
        &finalizer_replay::world(Variant::Fixed).swarm(replay_swarm()),
        finalizer_replay::SCENARIO,
        FIXED_SEEDS,
    );
}

/// Ambiguous answers to the controller's first 4 writes, or at a random rate.
fn ambiguous_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::Ambiguous, &["zoo"], 4, 3_000, 3_000)
}

#[test]
fn a_non_idempotent_create_is_found_by_ambiguous_writes_within_300_seeds() {
    let world = ambiguous::world(Variant::Buggy).swarm(ambiguous_swarm());
    assert_found_within(
        &world,
        ambiguous::SCENARIO,
        300,
        "at most one child per parent",
        FaultKind::Ambiguous,
    );
}

#[test]
fn an_idempotent_create_survives_1000_seeds_of_ambiguous_writes() {
    assert_passes(
        &ambiguous::world(Variant::Fixed).swarm(ambiguous_swarm()),
        ambiguous::SCENARIO,
        FIXED_SEEDS,
    );
}

/// Reconcile pauses of up to 3s, starting in the first 3s or at one of the first 4 writes.
fn pause_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::PauseReconciles, &["zoo"], 4, 3_000, 3_000)
}

#[test]
fn a_diff_against_a_missed_intermediate_spec_is_found_by_paused_reconciles_within_300_seeds() {
    let world = unobserved::world(Variant::Buggy).swarm(pause_swarm());
    let property = "every parent has exactly its expected children";
    assert_found_within(&world, unobserved::SCENARIO, 300, property, FaultKind::PauseReconciles);
}

#[test]
fn a_level_triggered_cleanup_survives_1000_seeds_of_paused_reconciles() {
    assert_passes(&unobserved::world(Variant::Fixed).swarm(pause_swarm()), unobserved::SCENARIO, FIXED_SEEDS);
}

/// Extra watch delays of up to 3s per informer, from the first 300ms.
fn delay_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::DelayWatch, &["zoo"], 4, 300, 3_000)
}

#[test]
fn a_parent_before_child_ordering_assumption_is_found_by_watch_delays_within_300_seeds() {
    let world = reorder::world(Variant::Buggy).swarm(delay_swarm());
    assert_found_within(
        &world,
        reorder::SCENARIO,
        300,
        "every parent has its children",
        FaultKind::DelayWatch,
    );
}

#[test]
fn asking_the_server_for_the_parent_survives_1000_seeds_of_watch_delays() {
    assert_passes(&reorder::world(Variant::Fixed).swarm(delay_swarm()), reorder::SCENARIO, FIXED_SEEDS);
}

/// Leader pauses of up to 5s (the lease lasts 2s), in the first 6s or at one of replica 0's first
/// 20 writes (its lease renewals count).
fn leader_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::PauseLeader, &["zoo-0"], 20, 6_000, 5_000)
}

#[test]
fn a_double_writer_is_found_by_a_leader_handover_within_300_seeds() {
    let world = leader::world(Variant::Buggy).swarm(leader_swarm());
    assert_found_within(
        &world,
        leader::SCENARIO,
        300,
        "at most one child per parent",
        FaultKind::PauseLeader,
    );
}

#[test]
fn idempotent_writes_survive_1000_seeds_of_leader_handovers() {
    assert_passes(&leader::world(Variant::Fixed).swarm(leader_swarm()), leader::SCENARIO, FIXED_SEEDS);
}

/// Kubelets lost for up to 3s, at one of the registry's first 4 writes or in the first 6s.
fn lost_node_swarm() -> sim::faults::SwarmConfig {
    swarm_of(FaultKind::LoseNode, &["zoo"], 4, 6_000, 3_000)
}

#[test]
fn state_freed_for_a_node_that_stops_reporting_is_found_by_lost_nodes_within_100_seeds() {
    let world = lost_node::world(Variant::Buggy).swarm(lost_node_swarm());
    assert_found_within(&world, lost_node::SCENARIO, 100, lost_node::PROPERTY, FaultKind::LoseNode);
}

#[test]
fn state_kept_until_its_node_is_deleted_survives_1000_seeds_of_lost_nodes() {
    assert_passes(
        &lost_node::world(Variant::Fixed).swarm(lost_node_swarm()),
        lost_node::SCENARIO,
        FIXED_SEEDS,
    );
}

// Guided exploration plans each Node's loss after each workload step (from the reference's
// profile): the registry's bug is among its first points.
#[test]
fn state_freed_for_a_node_that_stops_reporting_is_found_by_guided_exploration_within_50_runs() {
    use sim::guided::{Explorer, GuidedConfig, Site};
    let world = lost_node::world(Variant::Buggy);
    let config = GuidedConfig { runs_max: 50, ..GuidedConfig::default() };
    let exploration = Explorer::new(&world, config)
        .explore_until(|report| breaks(report, lost_node::PROPERTY))
        .expect("the reference passes");
    let lost: Vec<&Site> = exploration
        .points
        .points
        .iter()
        .map(|p| &p.site)
        .filter(|s| matches!(s, Site::NodeOutage { .. }))
        .collect();
    assert!(!lost.is_empty(), "no Node outage among the points");
    let finding = exploration.failure.as_ref().expect("found within 50 runs");
    let kinds: Vec<FaultKind> = finding.plan.faults.iter().map(|f| f.fault.kind()).collect();
    assert!(kinds.contains(&FaultKind::LoseNode), "{kinds:?}");
}

#[test]
fn state_kept_until_its_node_is_deleted_survives_every_guided_node_outage() {
    use sim::guided::{Explorer, GuidedConfig};
    let world = lost_node::world(Variant::Fixed);
    let config = GuidedConfig { runs_max: 200, stop_at_first_failure: false, ..GuidedConfig::default() };
    let exploration = Explorer::new(&world, config).explore().expect("the reference passes");
    assert_eq!(exploration.failures, 0, "{exploration}");
    assert!(exploration.points.outages > 0);
}

/// The migration operator's property: every version's migration ran.
const MIGRATIONS_RAN: &str = "every parent has exactly its expected children";

fn breaks(report: &sim::RunReport, property: &str) -> bool {
    matches!(&report.verdict, sim::Verdict::Correctness { property: p, .. } if p == property)
}

#[test]
fn a_swarm_over_a_controller_with_consistent_lists_draws_no_stale_replica() {
    use sim::decision::DecisionSource;
    use sim::faults::{SwarmConfig, swarm_plan};
    let every_kind = SwarmConfig { kinds: FaultKind::ALL.to_vec(), ..SwarmConfig::default() };
    let consistent = migration::world(Variant::Fixed).swarm(every_kind.clone());
    let profile = consistent.fault_profile();
    assert!(!profile.of("zoo").informers.is_empty(), "the profile saw the informer: {profile:?}");
    assert!(!profile.of("zoo").lists_any());
    // What the engine draws in real runs...
    for seed in 0..20 {
        let report = consistent.run(seed);
        let kinds: Vec<FaultKind> = report.plan.faults.iter().map(|f| f.fault.kind()).collect();
        assert!(!kinds.contains(&FaultKind::StaleReplica), "seed {seed} drew {kinds:?}");
    }
    // ...and over many more seeds, as swarm selection draws them with that profile; the same
    // operator listing with resourceVersion "0" does draw it.
    let any = migration::world_listing_any(Variant::Fixed).fault_profile();
    assert!(any.of("zoo").lists_any());
    let drawn = |profile: &std::sync::Arc<sim::faults::profile::Profile>| {
        let config = SwarmConfig {
            controllers: vec!["zoo".into()],
            profile: Some(profile.clone()),
            ..every_kind.clone()
        };
        (0..2_000u64)
            .flat_map(|seed| swarm_plan(&mut DecisionSource::new(seed), &config).faults)
            .filter(|f| f.fault.kind() == FaultKind::StaleReplica)
            .count()
    };
    assert_eq!(drawn(&profile), 0);
    assert!(drawn(&any) > 100, "listing with resourceVersion \"0\", staleReplica is drawn");
}

#[test]
fn the_trace_of_a_stale_replica_on_consistent_lists_says_it_did_nothing_and_why() {
    use sim::faults::{Fault, FaultPlan, PlannedFault, Trigger};
    let fault = PlannedFault {
        trigger: Trigger::AtTime { at_ms: 2_500 },
        fault: Fault::StaleReplica { controller: "zoo".into(), lag_revisions: 5, restart_after_ms: 100 },
    };
    let plan = FaultPlan { faults: vec![fault] };
    let effects = |world: sim::SimBuilder| -> Vec<String> {
        let report = world.faults(plan.clone()).keep_trace(true).run(1);
        assert!(report.unfired.is_empty(), "the fault fired");
        report
            .trace
            .entries()
            .iter()
            .filter_map(|e| match &e.event {
                sim::TraceEvent::FaultEffect { description } => Some(description.clone()),
                _ => None,
            })
            .collect()
    };
    let consistent = effects(migration::world(Variant::Fixed));
    assert!(
        consistent.iter().any(|e| e.contains("lists consistently") && e.contains("the lag has no effect")),
        "{consistent:?}"
    );
    assert!(
        consistent.iter().any(|e| e.starts_with("fault plan #1 (") && e.contains("did nothing")),
        "{consistent:?}"
    );
    let any = effects(migration::world_listing_any(Variant::Fixed));
    assert!(any.iter().any(|e| e.contains("from the lagging replica")), "{any:?}");
    assert!(!any.iter().any(|e| e.contains("did nothing")), "{any:?}");
}

#[test]
fn skipped_upgrade_steps_after_an_outage_are_found_by_guided_exploration_within_100_runs() {
    use sim::guided::{Explorer, GuidedConfig};
    let world = migration::world(Variant::Buggy);
    let config = GuidedConfig { runs_max: 100, ..GuidedConfig::default() };
    let exploration = Explorer::new(&world, config)
        .explore_until(|report| breaks(report, MIGRATIONS_RAN))
        .expect("the reference passes");
    println!("{exploration}");
    let finding = exploration.failure.as_ref().expect("found within 100 runs");
    println!(
        "run {}: {}",
        finding.run,
        finding.plan.faults.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("; ")
    );
    assert!(finding.run <= 100);
    assert!(exploration.points.outages > 0, "the points include timed outages");
}

#[test]
fn skipped_upgrade_steps_after_an_outage_are_found_by_the_default_swarm_within_500_seeds() {
    let world = migration::world(Variant::Buggy).swarm(sim::faults::SwarmConfig::default());
    let config = sim::SweepConfig::new(migration::SCENARIO).seeds(500).self_check_every(50);
    let report = sim::sweep(&config, |seed, options| world.run_with(seed, options));
    let first = report
        .failures
        .iter()
        .find(|f| matches!(&f.verdict, sim::Verdict::Correctness { property, .. } if property == MIGRATIONS_RAN))
        .unwrap_or_else(|| panic!("no seed of 500 broke \"{MIGRATIONS_RAN}\": {:?}", report.failures.first()));
    let replay = world.clone().keep_trace(true).run(first.seed);
    assert_eq!(replay.digest, first.digest, "the failing seed replays to the same trace");
    println!(
        "{} of {} seeds failed; first: seed {}: {}",
        report.failures_total, report.seeds_run, first.seed, first.verdict
    );
    for planned in &replay.plan.faults {
        println!("  {planned}");
    }
}

#[test]
fn running_every_migration_survives_guided_outages_and_the_default_swarm() {
    use sim::guided::{Explorer, GuidedConfig};
    let world = migration::world(Variant::Fixed);
    let config = GuidedConfig { runs_max: 300, stop_at_first_failure: false, ..GuidedConfig::default() };
    let exploration = Explorer::new(&world, config).explore().expect("the reference passes");
    assert_eq!(exploration.failures, 0, "{exploration}");
    let swarm = world.swarm(sim::faults::SwarmConfig::default());
    assert_passes(&swarm, migration::SCENARIO, 300);
}
