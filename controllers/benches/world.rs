//! `cargo bench -p controllers --bench world`: the real-sized world of issue 17, an operator that
//! owns a Deployment (`webapp:fixed`) with every built-in controller on (kubelet-lite, the
//! Deployment and ReplicaSet controllers, the garbage collector, the namespace controller, ...)
//! and swarm faults on, every other fixed operator with the built-ins on, and `carina:fixed` (a
//! StatefulSet with claims, every built-in, and lost Nodes among its faults): milliseconds per
//! seed on one thread, and per seed the API calls, watch deliveries and watch pulls (a pull is a
//! parked watcher woken by a write into its type and namespace).
//!
//! `WORLD_SEEDS` seeds per scenario (default 200); `WORLD_SCENARIO=webapp:fixed` runs only the
//! scenarios whose name contains it. Prints numbers only: no assertion.

use std::time::Instant;

use sim::scenario::Scenario;

use controllers::zoo;

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SEEDS_DEFAULT: u64 = 200;

fn main() {
    sim::ensure_simulated();
    let seeds = std::env::var("WORLD_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(SEEDS_DEFAULT);
    println!(
        "{:<36} {:>6} {:>8} {:>10} {:>10} {:>10} {:>9}",
        "scenario", "seeds", "ms/seed", "calls", "deliveries", "pulls", "failing"
    );
    let mut scenarios: Vec<Scenario> = zoo::scenarios()
        .into_iter()
        .filter(|s| ["webapp:fixed", "carina:fixed"].contains(&s.name()))
        .collect();
    scenarios.extend(zoo::fixed_with_builtins());
    if let Ok(only) = std::env::var("WORLD_SCENARIO") {
        scenarios.retain(|s| s.name().contains(only.as_str()));
    }
    for scenario in &scenarios {
        let (mut calls, mut deliveries, mut pulls, mut failing) = (0u64, 0u64, 0u64, 0u64);
        let started = Instant::now();
        for seed in 0..seeds {
            let report = scenario.run(seed);
            calls += report.stats.api_calls;
            deliveries += report.stats.watch_deliveries;
            pulls += report.stats.watch_pulls;
            failing += u64::from(!report.verdict.is_pass());
        }
        let per_seed_ms = started.elapsed().as_secs_f64() * 1000.0 / seeds as f64;
        let per = |n: u64| n as f64 / seeds as f64;
        println!(
            "{:<36} {:>6} {:>8.2} {:>10.1} {:>10.1} {:>10.1} {:>9}",
            scenario.name(),
            seeds,
            per_seed_ms,
            per(calls),
            per(deliveries),
            per(pulls),
            failing
        );
    }
}
