//! Benchmark of fault injection: seeds per second with every fault kind on (swarm selection)
//! against no faults, for the ConfigMap-generator scenario and one fault-zoo controller (the
//! write-pair controller, fixed variant), printed side by side.
//!
//! Run: `cargo bench -p sim --bench faults` (release). `BENCH_SEEDS=N` sets the seeds per sweep
//! (default 1000). Each measure is the best of 3 on one worker thread (the machines are shared and
//! noisy), with the failing-seed count next to it (the fixed controllers should have none, so a
//! faulted sweep is not cut short by failures). It asserts nothing about time.

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/it/fault_zoo/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "../tests/it/support/configmapgen.rs"]
mod configmapgen;
#[path = "../tests/it/fault_zoo/write_pair.rs"]
mod write_pair;

use std::time::Instant;

use sim::faults::{FaultKind, SwarmConfig};
use sim::{SimBuilder, SweepConfig, sweep};

const SEEDS_DEFAULT: u64 = 1_000;
/// Each measure is the best of this many sweeps.
const REPEATS: usize = 3;
/// Generators the ConfigMap-generator workload creates (as in its test).
const GENERATORS: usize = 3;

/// Every fault kind but leader pauses (neither world runs replicas), on the world's controllers.
fn all_faults() -> SwarmConfig {
    SwarmConfig {
        kinds: FaultKind::ALL.into_iter().filter(|k| *k != FaultKind::PauseLeader).collect(),
        ..SwarmConfig::default()
    }
}

/// Best seeds/s of `REPEATS` one-worker sweeps of `seeds` seeds, and the failures of the last.
fn measure(name: &str, world: &SimBuilder, seeds: u64) -> (f64, u64) {
    let config = SweepConfig::new(name).seeds(seeds).jobs(1).self_check_every(0);
    let mut best = 0.0f64;
    let mut failures = 0;
    for _ in 0..REPEATS {
        let started = Instant::now();
        let report = sweep(&config, |seed, options| world.run_with(seed, options));
        let per_second = report.seeds_run as f64 / started.elapsed().as_secs_f64();
        best = best.max(per_second);
        failures = report.failures_total;
    }
    (best, failures)
}

fn main() {
    let seeds =
        std::env::var("BENCH_SEEDS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(SEEDS_DEFAULT);
    let worlds: [(&str, SimBuilder); 2] = [
        (configmapgen::SCENARIO, configmapgen::world(GENERATORS)),
        (write_pair::SCENARIO, write_pair::world(common::Variant::Fixed)),
    ];
    println!("fault injection: seeds/s on one worker, best of {REPEATS}, {seeds} seeds per sweep");
    println!(
        "{:<16} {:>14} {:>14} {:>8}  failing seeds (no faults / all faults)",
        "scenario", "no faults", "all faults", "ratio"
    );
    for (name, world) in worlds {
        let (plain, plain_failures) = measure(name, &world, seeds);
        let (faulted, faulted_failures) = measure(name, &world.clone().swarm(all_faults()), seeds);
        println!(
            "{name:<16} {plain:>14.0} {faulted:>14.0} {:>8.2}  {plain_failures} / {faulted_failures}",
            faulted / plain
        );
    }
}
