//! `cargo bench -p controllers --bench zoo`: for every zoo scenario with a planted bug, the seeds
//! explored until the first failure, the wall time that took, and the faults left in the plan
//! after shrinking it (with an oracle that replays the plan on the same seed and checks that the
//! same property fails).
//!
//! `ZOO_SEEDS_MAX` bounds the search per scenario (default 5,000).

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use sim::shrink::{ShrinkBounds, shrink_plan};

use controllers::zoo;

/// Seeds tried per scenario before giving up, unless `ZOO_SEEDS_MAX` says otherwise.
const SEEDS_MAX_DEFAULT: u64 = 5_000;

fn main() {
    sim::ensure_simulated();
    let seeds_max =
        std::env::var("ZOO_SEEDS_MAX").ok().and_then(|s| s.parse().ok()).unwrap_or(SEEDS_MAX_DEFAULT);
    let bounds = ShrinkBounds { replays_max: 200, wall_time_max: Duration::from_secs(30) };
    println!(
        "{:<28} {:>6} {:>10} {:>7} {:>7}  shrunk plan",
        "scenario", "seeds", "wall ms", "faults", "shrunk"
    );
    for scenario in zoo::scenarios().into_iter().filter(|s| !s.name().ends_with(":fixed")) {
        let started = Instant::now();
        let mut found = None;
        for seed in 0..seeds_max {
            let report = zoo::oracle::run_on_fresh_thread(scenario.builder(), seed);
            if !report.verdict.is_pass() {
                found = Some(report);
                break;
            }
        }
        let wall = started.elapsed();
        let Some(failure) = found else {
            println!(
                "{:<28} {:>6} {:>10.1} {:>7} {:>7}  (not found)",
                scenario.name(),
                seeds_max,
                wall.as_secs_f64() * 1e3,
                "-",
                "-"
            );
            continue;
        };
        let seed = failure.seed;
        let shrunk = shrink_plan(&failure.plan, &bounds, |plan| {
            let replay =
                zoo::oracle::run_on_fresh_thread(&scenario.builder().clone().faults(plan.clone()), seed);
            zoo::oracle::same_failure(&replay.verdict, &failure.verdict)
        });
        let plan: Vec<String> = shrunk.plan.faults.iter().map(ToString::to_string).collect();
        println!(
            "{:<28} {:>6} {:>10.1} {:>7} {:>7}  {}",
            scenario.name(),
            seed + 1,
            wall.as_secs_f64() * 1e3,
            shrunk.faults_before,
            shrunk.faults_after,
            if plan.is_empty() { "(none: fails without faults)".to_owned() } else { plan.join("; ") }
        );
        println!("{:<28} verdict: {}", "", failure.verdict);
        if let Some(bound) = shrunk.stopped_by {
            println!("{:<28} shrink stopped by {bound} after {} replays", "", shrunk.replays);
        }
    }
}
