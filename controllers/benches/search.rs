//! `cargo bench -p controllers --bench search`: seeds to the first failure of every planted bug
//! of the zoo, and of the schema-migration operator of sim's fault zoo (its bug needs an outage
//! spanning two upgrades), under plain swarm, coverage-feedback swarm and guided enumeration,
//! side by side, with totals.
//!
//! - swarm and coverage are averaged over `SEARCH_BASES` first seeds (default 5: 0, 10000,
//!   20000, ...); coverage counts its fault-free reference as one seed;
//! - guided runs once, at seed 0, and counts its reference as run 1;
//! - a search that finds nothing within `SEARCH_SEEDS_MAX` seeds (default 2,000) counts as that
//!   many, and its cell is marked `>`.
//!
//! Runs on every core (the lowest failing seed is the same for any number of workers). Prints
//! numbers only: no assertion, no wall time.

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use sim::explore::coverage_swarm::CoverageSwarm;
use sim::explore::random::RandomSwarm;
use sim::explore::shard::Shard;
use sim::explore::{self, Options, Quiet, Reference, Strategy};
use sim::guided::{Explorer, GuidedConfig};
use sim::scenario::Scenario;

use controllers::zoo;

// The schema-migration operator of sim's fault zoo, included as sim's own tests include it (its
// `super::common` is this crate's root).
#[allow(dead_code)]
#[path = "../../sim/tests/it/fault_zoo/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../../sim/tests/it/fault_zoo/migration.rs"]
mod migration;

/// Seeds a search may use per scenario and base seed.
const SEEDS_MAX_DEFAULT: u64 = 2_000;
/// First seeds the random searches are averaged over.
const BASES_DEFAULT: u64 = 5;
/// The distance between two first seeds.
const BASE_STRIDE: u64 = 10_000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Seeds to the first failure of `strategy` over `scenario` from `first_seed`, or `None`.
fn first_failure(
    scenario: &Scenario,
    strategy: &dyn Strategy,
    references: &[Option<Reference>],
    first_seed: u64,
) -> Option<u64> {
    let options = Options { stop_at_first_failure: true, ..Options::default() };
    let explored = explore::explore(&[scenario], strategy, references, &options, &Quiet);
    explored.groups.iter().map(|(failure, _)| failure.seed - first_seed + 1).min()
}

fn swarm(scenario: &Scenario, first_seed: u64, seeds_max: u64) -> Option<u64> {
    let strategy = RandomSwarm::new(1, first_seed, Some(seeds_max), Shard::ALL);
    first_failure(scenario, &strategy, &[], first_seed)
}

fn coverage(scenario: &Scenario, first_seed: u64, seeds_max: u64) -> Option<u64> {
    let config = GuidedConfig { seed: first_seed, ..GuidedConfig::default() };
    let jobs = sim::runner::default_jobs();
    let references: Vec<Option<Reference>> =
        explore::references(&[scenario], first_seed, &config, jobs).into_iter().map(Result::ok).collect();
    let strategy = CoverageSwarm::new(&[scenario], &references, first_seed, Some(seeds_max), Shard::ALL)
        .expect("one shard");
    // The reference is a run the search needs before its first seed.
    first_failure(scenario, &strategy, &references, first_seed).map(|seeds| seeds + 1)
}

fn guided(scenario: &Scenario, seeds_max: u64) -> Option<u64> {
    let config = GuidedConfig { seed: 0, runs_max: seeds_max as usize, ..GuidedConfig::default() };
    let exploration = Explorer::for_scenario(scenario, config).explore().ok()?;
    exploration.failure.map(|finding| finding.run as u64)
}

/// One column's cell: the mean over the bases (a miss counted as the budget), `>` if some missed.
struct Cell {
    total: u64,
    runs: u64,
    missed: u64,
}

impl Cell {
    fn of(found: impl IntoIterator<Item = Option<u64>>, seeds_max: u64) -> Cell {
        let mut cell = Cell { total: 0, runs: 0, missed: 0 };
        for f in found {
            cell.runs += 1;
            cell.total += f.unwrap_or(seeds_max);
            cell.missed += u64::from(f.is_none());
        }
        cell
    }

    fn mean(&self) -> f64 {
        self.total as f64 / self.runs.max(1) as f64
    }

    fn show(&self) -> String {
        let mark = if self.missed > 0 { ">" } else { "" };
        format!("{mark}{:.1}", self.mean())
    }
}

fn main() {
    sim::ensure_simulated();
    let seeds_max = env("SEARCH_SEEDS_MAX", SEEDS_MAX_DEFAULT);
    let bases: Vec<u64> = (0..env("SEARCH_BASES", BASES_DEFAULT)).map(|b| b * BASE_STRIDE).collect();
    let mut scenarios: Vec<Scenario> =
        zoo::scenarios().into_iter().filter(|s| !s.name().ends_with(":fixed")).collect();
    let migration = migration::world(common::Variant::Buggy).swarm(sim::faults::SwarmConfig::default());
    scenarios.push(Scenario::new(migration::SCENARIO, "skipped upgrade steps after an outage", migration));
    println!(
        "seeds to the first failure (mean of {} first seeds for swarm and coverage; budget {seeds_max})",
        bases.len()
    );
    println!("{:<28} {:>10} {:>10} {:>10}", "scenario", "swarm", "coverage", "guided");
    let mut sums = [0.0f64; 3];
    for scenario in &scenarios {
        let plain = Cell::of(bases.iter().map(|b| swarm(scenario, *b, seeds_max)), seeds_max);
        let steered = Cell::of(bases.iter().map(|b| coverage(scenario, *b, seeds_max)), seeds_max);
        let enumerated = Cell::of([guided(scenario, seeds_max)], seeds_max);
        for (sum, cell) in sums.iter_mut().zip([&plain, &steered, &enumerated]) {
            *sum += cell.mean();
        }
        println!(
            "{:<28} {:>10} {:>10} {:>10}",
            scenario.name(),
            plain.show(),
            steered.show(),
            enumerated.show()
        );
    }
    println!("{:<28} {:>10.1} {:>10.1} {:>10.1}", "total", sums[0], sums[1], sums[2]);
}
