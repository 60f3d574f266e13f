//! The operator zoo under swarm faults: every planted bug is found by a general property within
//! its seed budget, and every fixed variant passes its sweep.
//!
//! Seeds: [`FIXED_SEEDS`] per fixed variant and [`BUG_BUDGET`] per planted bug by default;
//! `SIM_SEEDS=N` runs N instead (`SIM_SEEDS=20000 cargo test --release -p controllers --test
//! zoo_sweeps`).

use sim::scenario::Scenario;
use sim::{SweepConfig, SweepReport, TraceEvent};

use controllers::zoo;

/// Seeds every fixed variant must pass.
const FIXED_SEEDS: u64 = 500;
/// Seeds within which each planted bug must be found.
const BUG_BUDGET: u64 = 500;

fn scenario(name: &str) -> Scenario {
    zoo::scenarios().into_iter().find(|s| s.name() == name).unwrap_or_else(|| panic!("no scenario {name}"))
}

fn sweep(scenario: &Scenario, seeds: u64) -> SweepReport {
    sim::sweep(&SweepConfig::new(scenario.name()).seeds(seeds), |seed, options| {
        scenario.run_with(seed, options)
    })
}

/// Sweep a fixed variant: every seed passes.
fn fixed_variant_passes(name: &str) {
    let scenario = scenario(name);
    let report = sweep(&scenario, FIXED_SEEDS);
    report.assert_all_passed();
    assert!(report.seeds_run >= 1);
}

/// Sweep a planted bug: some seed fails, by a general property; print that seed's faults.
fn planted_bug_is_found(name: &str) {
    planted_bug_is_found_within(name, BUG_BUDGET);
}

/// [`planted_bug_is_found`] within `budget` seeds; returns the failing seed's replay.
fn planted_bug_is_found_within(name: &str, budget: u64) -> sim::RunReport {
    let scenario = scenario(name);
    let report = sweep(&scenario, budget);
    let first = report
        .failures
        .first()
        .unwrap_or_else(|| panic!("{name}: no seed of {} failed: the bug went unfound", report.seeds_run));
    assert!(
        zoo::oracle::is_general_failure(&first.verdict),
        "{name}: seed {} failed, but not by a general property: {}",
        first.seed,
        first.verdict
    );
    let replay = zoo::oracle::run_on_fresh_thread(&scenario.builder().clone().keep_trace(true), first.seed);
    assert_eq!(replay.verdict, first.verdict, "{name}: replaying seed {} gave another verdict", first.seed);
    println!(
        "{name}: {} of {} seeds failed; first: seed {}: {}",
        report.failures_total, report.seeds_run, first.seed, first.verdict
    );
    for entry in replay.trace.entries().iter().filter(|e| matches!(e.event, TraceEvent::Fault { .. })) {
        println!("  {entry}");
    }
    replay
}

#[test]
fn rabbitmq_fixed_passes_its_sweep() {
    fixed_variant_passes("rabbitmq:fixed");
}

#[test]
fn rabbitmq_resize_crash_is_found_by_the_differential_oracle() {
    planted_bug_is_found("rabbitmq:resize-crash");
}

#[test]
fn zookeeper_fixed_passes_its_sweep() {
    fixed_variant_passes("zookeeper:fixed");
}

#[test]
fn zookeeper_stale_delete_is_found_by_the_data_volume_contract() {
    planted_bug_is_found("zookeeper:stale-delete");
}

#[test]
fn cassandra_fixed_passes_its_sweep() {
    fixed_variant_passes("cassandra:fixed");
}

#[test]
fn cassandra_missed_scale_down_is_found_by_the_differential_oracle() {
    planted_bug_is_found("cassandra:missed-scale-down");
}

#[test]
fn casskop_fixed_passes_its_sweep() {
    fixed_variant_passes("casskop:fixed");
}

#[test]
fn casskop_lost_flag_is_found_as_a_world_that_never_converges() {
    planted_bug_is_found("casskop:lost-flag");
}

#[test]
fn mongodb_fixed_passes_its_sweep() {
    fixed_variant_passes("mongodb:fixed");
}

#[test]
fn mongodb_stale_delete_is_found_by_the_data_volume_contract() {
    planted_bug_is_found("mongodb:stale-delete");
}

#[test]
fn mongodb_duplicate_backup_is_found_by_the_children_within_spec_contract() {
    planted_bug_is_found("mongodb:duplicate-backup");
}

#[test]
fn yugabyte_fixed_passes_its_sweep() {
    fixed_variant_passes("yugabyte:fixed");
}

#[test]
fn yugabyte_missed_delete_is_found_by_the_differential_oracle() {
    planted_bug_is_found("yugabyte:missed-delete");
}

#[test]
fn nifikop_fixed_passes_its_sweep() {
    fixed_variant_passes("nifikop:fixed");
}

#[test]
fn nifikop_config_crash_is_found_by_the_differential_oracle() {
    planted_bug_is_found("nifikop:config-crash");
}

/// Seeds each `carina` variant runs in CI (each runs every built-in, as `webapp:fixed`).
const CARINA_SEEDS: u64 = 60;

#[test]
fn carina_fixed_passes_its_sweep() {
    let report = sweep(&scenario("carina:fixed"), CARINA_SEEDS);
    report.assert_all_passed();
    assert!(report.seeds_run >= 1);
}

/// carina#128 is found through a lost Node: the failing seed's trace shows one fire before the
/// failure (nothing else makes a Node NotReady).
#[test]
fn carina_notready_migration_is_found_by_the_differential_oracle_after_a_lost_node() {
    let replay = planted_bug_is_found_within("carina:notready-migration", CARINA_SEEDS);
    let lost =
        replay.trace.entries().iter().any(
            |e| matches!(&e.event, TraceEvent::Fault { description } if description.starts_with("lose ")),
        );
    assert!(lost, "the failing seed lost no Node:\n{}", replay.trace.render());
}

/// Seeds `webapp:fixed` runs in CI (each runs every built-in, so a seed costs tens of times a
/// zoo seed; the 2,000-seed figure is [`webapp_fixed_passes_2000_seeds`]).
const WEBAPP_SEEDS: u64 = 60;

#[test]
fn webapp_fixed_owning_a_deployment_passes_its_sweep_with_the_builtins_on() {
    let report = sweep(&scenario("webapp:fixed"), WEBAPP_SEEDS);
    report.assert_all_passed();
    assert!(report.seeds_run >= 1);
}

/// Seeds each fixed variant runs with the built-in controllers on, in CI (the 10,000-seed
/// figure is [`fixed_variants_with_the_builtins_pass_10000_seeds_each`]; CI's time bound keeps
/// this count small).
const WITH_BUILTINS_SEEDS: u64 = 30;

/// Sweep `scenario` for `seeds` seeds and print its figures.
fn sweep_printed(scenario: &Scenario, seeds: u64) -> SweepReport {
    let report = sweep(scenario, seeds);
    println!(
        "{}: {} of {} seeds failed ({:.1} s, {:.0} seeds/s)",
        scenario.name(),
        report.failures_total,
        report.seeds_run,
        report.wall_seconds,
        report.seeds_per_second()
    );
    report
}

/// Sweep each of `scenarios` for `seeds` seeds; print each one's figures and return the
/// failures (scenario, seed, verdict), the first few of each.
fn sweep_each(scenarios: impl IntoIterator<Item = Scenario>, seeds: u64) -> Vec<(String, u64, String)> {
    let mut failures = Vec::new();
    for scenario in scenarios {
        let report = sweep_printed(&scenario, seeds);
        for failure in report.failures.iter().take(3) {
            failures.push((scenario.name().to_owned(), failure.seed, failure.verdict.to_string()));
        }
    }
    failures
}

/// Issue 15: with the StatefulSet controller, the kubelet and the rest on, the fixed operators'
/// StatefulSets get Pods, claims, ControllerRevisions and Events they never name; the
/// differential oracle must not flag them.
#[test]
fn every_fixed_variant_passes_its_sweep_with_the_builtins_on() {
    let failures = sweep_each(zoo::fixed_with_builtins(), WITH_BUILTINS_SEEDS);
    assert!(failures.is_empty(), "false alarms on fixed operators: {failures:#?}");
}

/// Seeds each fixed variant runs with the built-ins on under lost Nodes only, in CI.
const LOST_NODE_SEEDS: u64 = 40;

/// The fixed operators (and `webapp:fixed`) with the built-ins on, under `loseNode` faults alone
/// (node-1's kubelet silent for up to 5 s, at a write or in the first 10 s, as each scenario's
/// swarm draws them): its Pods turn unready and the Node is tainted `unreachable`, then all
/// comes back. The differential oracle must not flag what that leaves behind: it did, on every
/// fifth seed, while the node lifecycle controller left `spec.taints: []` where a Node never
/// tainted has no field, and upstream's patch removes it.
#[test]
fn every_fixed_variant_with_the_builtins_passes_lost_nodes() {
    let mut failures = Vec::new();
    let mut fired = 0;
    for scenario in zoo::fixed_with_builtins().into_iter().chain([scenario("webapp:fixed")]) {
        let world = scenario.builder().clone();
        let mut swarm = world.swarm_with_profile().expect("a zoo scenario has a swarm");
        swarm.kinds = vec![sim::faults::FaultKind::LoseNode];
        let world = world.swarm(swarm);
        let report =
            sim::sweep(&SweepConfig::new(scenario.name()).seeds(LOST_NODE_SEEDS), |seed, options| {
                world.run_with(seed, options)
            });
        for failure in report.failures.iter().take(3) {
            failures.push((scenario.name().to_owned(), failure.seed, failure.verdict.to_string()));
        }
        // The first seeds, replayed: their lost Nodes did fire.
        fired += (0..4)
            .map(|seed| zoo::oracle::run_on_fresh_thread(&world, seed))
            .filter(|run| run.plan.faults.len() > run.unfired.len())
            .count();
    }
    assert!(failures.is_empty(), "false alarms on fixed operators under lost Nodes: {failures:#?}");
    assert!(fired > 0, "no lost Node fired");
}

/// Issue 15's figure: a fixed controller that owns a Deployment, relisted under swarm faults,
/// with the built-ins on, fails no seed of 2,000.
/// `cargo test --release --test it webapp_fixed_passes_2000 -- --ignored --nocapture`
#[test]
#[ignore = "2,000 seeds: run in release with --ignored"]
fn webapp_fixed_passes_2000_seeds() {
    sweep_printed(&scenario("webapp:fixed"), 2_000).assert_all_passed();
}

/// Issue 15's figure: every fixed variant with the built-ins on and swarm faults, 10,000 seeds
/// each: the seven operators' `:fixed-with-builtins` and `webapp:fixed` (which owns a Deployment).
/// `cargo test --release -p controllers --test it fixed_variants_with_the_builtins_pass_10000 --
/// --ignored --nocapture`
#[test]
#[ignore = "80,000 seeds: run in release with --ignored"]
fn fixed_variants_with_the_builtins_pass_10000_seeds_each() {
    let scenarios = zoo::fixed_with_builtins().into_iter().chain([scenario("webapp:fixed")]);
    let failures = sweep_each(scenarios, 10_000);
    assert!(failures.is_empty(), "false alarms on fixed operators: {failures:#?}");
}

#[test]
fn every_zoo_scenario_is_named_operator_colon_variant_and_each_operator_has_a_fixed_variant() {
    let scenarios = zoo::scenarios();
    let names: Vec<&str> = scenarios.iter().map(Scenario::name).collect();
    let registry = sim::scenario::Registry::new(scenarios.clone()).expect("names are unique");
    assert_eq!(registry.len(), names.len());
    let operators: std::collections::BTreeSet<&str> =
        names.iter().map(|n| n.split_once(':').expect("operator:variant").0).collect();
    assert_eq!(operators.len(), 9, "{operators:?}");
    for operator in operators {
        assert!(names.contains(&format!("{operator}:fixed").as_str()), "{operator} has no fixed variant");
    }
    assert_eq!(names.len(), 18);
}

/// With the built-ins on, a deleted claim lingers a moment, `Terminating`, until the PVC
/// protection controller lets it go. The fixed zookeeper operator deletes the old cluster's claims
/// and the workload re-creates the cluster at once: an operator that adopted the terminating
/// claim of the same name would list a data volume that then vanishes under the live cluster
/// (seen in 2 of 10,000 seeds of the 80,000-seed sweep). Here the protection controller's claim
/// watch lags 3 s, so every seed meets the terminating claim.
#[test]
fn zookeeper_fixed_does_not_adopt_a_claim_that_is_being_deleted() {
    let lagging = crate::fault_plans::lagging_watch(
        controllers::builtins::volume_protection::PVC_NODE,
        "persistentvolumeclaims",
        3_000,
        60_000,
    );
    let world = controllers::builtins::all(zoo::zookeeper::fixed_world()).faults(lagging);
    let report = sim::sweep(&SweepConfig::new("zookeeper-terminating-claim").seeds(20), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
