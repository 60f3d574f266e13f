//! Benchmark of a CRD whose schema has a `pattern`: the configmapgen scenario with its CRD as
//! derived, and with a pattern on `spec.content` (every create and patch of a generator is
//! validated against it), in µs per seed on one worker with a fresh thread per seed, as sweeps run
//! seeds. The server compiles a pattern once for the process (model-apiserver's `schema.rs`); when
//! it compiled once per thread, that was once per seed, and the pattern row cost about 65 µs more
//! than the other (docs/performance.md).
//!
//! Run: `cargo bench -p sim --bench patterns` (release). `BENCH_SEEDS=N` sets the seeds per sweep
//! (default 1000); each row is the best of 3 sweeps. It prints a table and asserts nothing about
//! time.

// The allocator kube-sim's binaries use (see the workspace Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/it/support/configmapgen.rs"]
mod configmapgen;

use kube::CustomResourceExt;
use sim::property::FnProperty;
use sim::{Sim, SimBuilder, SweepConfig, sweep};

/// What the workload writes into `spec.content`, and so what the pattern must accept.
const CONTENT_PATTERN: &str = "^(content [0-9]+|edit [0-9]+|edited)$";
const SEEDS_DEFAULT: u64 = 1_000;
const REPEATS: usize = 3;

/// The configmapgen CRD, with `pattern` on `spec.content` when given.
fn crd_yaml(pattern: Option<&str>) -> String {
    let mut crd = configmapgen::ConfigMapGenerator::crd();
    if let Some(pattern) = pattern {
        let content = crd.spec.versions[0]
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|root| root.properties.as_mut())
            .and_then(|p| p.get_mut("spec"))
            .and_then(|spec| spec.properties.as_mut())
            .and_then(|p| p.get_mut("content"))
            .expect("the derived CRD has spec.content");
        content.pattern = Some(pattern.to_owned());
    }
    serde_yaml_ng::to_string(&crd).expect("the CRD serializes")
}

/// The scenario's world (3 generators, one edit) on the given CRD.
fn world(crd: &str) -> SimBuilder {
    Sim::builder()
        .scenario(configmapgen::SCENARIO)
        .crds_yaml("default", crd)
        .expect("the CRD installs")
        .controller("cmgen", configmapgen::run_controller)
        .workload(|w| configmapgen::workload_with_edits(w, 3, 1))
        .property(FnProperty::at_end(
            "generators have their ConfigMaps",
            configmapgen::check_generators_have_their_configmaps,
        ))
}

/// The best wall µs per seed of [`REPEATS`] sweeps of `seeds` seeds on one worker.
fn us_per_seed(world: &SimBuilder, seeds: u64) -> f64 {
    (0..REPEATS)
        .map(|_| {
            let config = SweepConfig::new(configmapgen::SCENARIO).seeds(seeds).jobs(1).self_check_every(0);
            let report = sweep(&config, |seed, options| world.run_with(seed, options));
            report.assert_all_passed();
            report.wall_seconds / seeds as f64 * 1e6
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let seeds =
        std::env::var("BENCH_SEEDS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(SEEDS_DEFAULT);
    let plain = world(&crd_yaml(None));
    let patterned = world(&crd_yaml(Some(CONTENT_PATTERN)));
    // A pattern that rejects the workload's content would fail every seed, not measure anything.
    assert!(patterned.run(0).verdict.is_pass(), "the pattern accepts what the workload writes");
    let (plain_us, patterned_us) = (us_per_seed(&plain, seeds), us_per_seed(&patterned, seeds));
    println!(
        "configmapgen (3 generators), 1 worker, a fresh thread per seed, best of {REPEATS} sweeps of {seeds} seeds\n"
    );
    println!("| CRD | µs per seed |");
    println!("|---|---|");
    println!("| as derived (no pattern) | {plain_us:.1} |");
    println!("| `pattern` on spec.content | {patterned_us:.1} |");
    println!("| the pattern's cost per seed | {:.1} |", patterned_us - plain_us);
}
