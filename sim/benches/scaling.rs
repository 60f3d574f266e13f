//! Scaling benchmark: the cost of one seed as the world grows, printed as a table.
//!
//! Run: `cargo bench -p sim --bench scaling` (release). The scenario is the tested
//! ConfigMap-generator one (`tests/it/support/configmapgen.rs`): the workload creates N
//! generators, the controller makes one ConfigMap for each, so a seed holds 2N objects and its
//! API calls and watch deliveries grow with N. N doubles from 10 up to `BENCH_SCALE_MAX`
//! (default 10240, ten doublings). Each row prints the wall time per seed, per object and per
//! event (an API call or a watch delivery), and the growth factor of the time per seed from the
//! previous row: about 2 when the cost grows linearly, 4 when it grows with the square.
//! `BENCH_SCALE_BUDGET=N` sets roughly how many generators each row runs in all (default 2560,
//! so small worlds run several seeds and large ones one).
//!
//! Two more tables keep the objects fixed (20 generators) and double one other dimension:
//! the controllers (1 to `BENCH_SCALE_CONTROLLERS`, default 32, copies of the controller on their
//! own nodes, each watching and reconciling everything) and the events (1 to
//! `BENCH_SCALE_EDITS`, default 512, edits of one generator, each waited for until its ConfigMap
//! shows it). Each row runs `BENCH_SCALE_SEEDS` seeds (default 8). It asserts nothing about time.

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/it/support/configmapgen.rs"]
mod configmapgen;

use std::time::Instant;

use sim::Verdict;

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// One row: the mean over `seeds` seeds of a world of `generators` generators.
struct Row {
    generators: u64,
    seeds: u64,
    passed: u64,
    micros_per_seed: f64,
    objects: u64,
    events: u64,
}

fn measure(generators: u64, seeds: u64) -> Row {
    measure_world(generators, 1, 1, seeds)
}

fn measure_world(generators: u64, controllers: u64, edits: u64, seeds: u64) -> Row {
    let world = configmapgen::world_with(generators as usize, controllers as usize, edits as usize);
    let (mut passed, mut events) = (0, 0);
    let start = Instant::now();
    for seed in 0..seeds {
        let report = world.run(seed);
        passed += u64::from(report.verdict == Verdict::Pass);
        events += report.stats.api_calls + report.stats.watch_deliveries;
    }
    let micros = start.elapsed().as_secs_f64() * 1e6;
    Row {
        generators,
        seeds,
        passed,
        micros_per_seed: micros / seeds as f64,
        // Each generator and its ConfigMap.
        objects: 2 * generators,
        events: events / seeds,
    }
}

fn main() {
    let max = env_count("BENCH_SCALE_MAX", 10_240).max(10);
    let budget = env_count("BENCH_SCALE_BUDGET", 2_560).max(1);
    println!("scaling: configmapgen, N generators and their N ConfigMaps per seed, 1 thread");
    println!(
        "| {:>11} | {:>7} | {:>5} | {:>6} | {:>12} | {:>10} | {:>12} | {:>13} | {:>6} |",
        "generators",
        "objects",
        "seeds",
        "passed",
        "events/seed",
        "ms/seed",
        "µs/object",
        "µs/event",
        "growth"
    );
    let mut previous: Option<f64> = None;
    let mut n = 10;
    while n <= max {
        let seeds = (budget / n).clamp(1, 64);
        let row = measure(n, seeds);
        let growth = previous.map_or_else(|| "-".to_owned(), |p| format!("{:.2}", row.micros_per_seed / p));
        println!(
            "| {:>11} | {:>7} | {:>5} | {:>6} | {:>12} | {:>10.2} | {:>12.2} | {:>13.2} | {:>6} |",
            row.generators,
            row.objects,
            row.seeds,
            row.passed,
            row.events,
            row.micros_per_seed / 1e3,
            row.micros_per_seed / row.objects as f64,
            row.micros_per_seed / row.events.max(1) as f64,
            growth
        );
        previous = Some(row.micros_per_seed);
        n *= 2;
    }
    let seeds = env_count("BENCH_SCALE_SEEDS", 8).max(1);
    let generators = 20;
    let dimension = |what: &str, max: u64, row_of: &dyn Fn(u64) -> Row| {
        println!();
        println!(
            "scaling: configmapgen, {generators} generators, {what} doubling, 1 thread, {seeds} seeds per row"
        );
        println!(
            "| {:>11} | {:>5} | {:>6} | {:>12} | {:>10} | {:>13} | {:>6} |",
            what, "seeds", "passed", "events/seed", "ms/seed", "µs/event", "growth"
        );
        let mut previous: Option<f64> = None;
        let mut n = 1;
        while n <= max {
            let row = row_of(n);
            let growth =
                previous.map_or_else(|| "-".to_owned(), |p| format!("{:.2}", row.micros_per_seed / p));
            println!(
                "| {:>11} | {:>5} | {:>6} | {:>12} | {:>10.2} | {:>13.2} | {:>6} |",
                n,
                row.seeds,
                row.passed,
                row.events,
                row.micros_per_seed / 1e3,
                row.micros_per_seed / row.events.max(1) as f64,
                growth
            );
            previous = Some(row.micros_per_seed);
            n *= 2;
        }
    };
    let controllers = env_count("BENCH_SCALE_CONTROLLERS", 32).max(1);
    dimension("controllers", controllers, &|n| measure_world(generators, n, 1, seeds));
    let edits = env_count("BENCH_SCALE_EDITS", 512).max(1);
    dimension("edits", edits, &|n| measure_world(generators, 1, n, seeds));
}
