//! The ConfigMap-generator controller (kube-rs's `configmapgen_controller` example, ported by
//! changing its imports) converges on every seed of a sweep.

#[path = "support/configmapgen.rs"]
mod configmapgen;

use sim::{SweepConfig, Verdict, sweep};

/// Generators the workload creates.
const GENERATORS: usize = 3;

#[test]
fn configmap_generator_converges_on_500_seeds() {
    let world = configmapgen::world(GENERATORS);
    let config = SweepConfig::new(configmapgen::SCENARIO).seeds(500);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
    assert_eq!(report.seeds_run, configmapgen::expected_seeds(500));
}

#[test]
fn one_configmap_generator_run_creates_one_configmap_per_generator_and_updates_the_edited_one() {
    let report = configmapgen::world(GENERATORS).keep_trace(true).run(7);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    let lines = report.trace.render();
    // The controller created every ConfigMap, then replaced gen-0's after the edit.
    for i in 0..GENERATORS {
        assert!(lines.contains(&format!("create configmaps/default/gen-{i}")), "{lines}");
    }
    assert!(lines.contains("update configmaps/default/gen-0"), "{lines}");
    assert!(report.stats.reconciles >= GENERATORS as u64, "{:?}", report.stats);
}
