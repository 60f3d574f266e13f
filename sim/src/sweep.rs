//! Seed sweeps: many seeds, each on a fresh thread, in parallel across cores, with a determinism
//! self-check on a sample.
//!
//! INTERFACE STUB: filled by the sim-infrastructure work. Signatures are the contract.

use crate::verdict::RunReport;

/// How a sweep runs. `SIM_SEEDS=N` overrides `seeds`, `SIM_SEED=S` runs exactly seed S.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// The scenario's name (for messages and the replay command).
    pub scenario: String,
    /// How many seeds (from `first_seed`), unless `SIM_SEEDS`/`SIM_SEED` say otherwise.
    pub seeds: u64,
    /// The first seed.
    pub first_seed: u64,
    /// Worker threads; 0 means one per core.
    pub jobs: usize,
    /// Run the determinism self-check on every n-th seed (0: never).
    pub self_check_every: u64,
    /// The test that runs this sweep, for the replay command (`SIM_SEED=S cargo test -p P NAME`).
    pub test_name: Option<String>,
}

/// The outcome of a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// Seeds run.
    pub seeds_run: u64,
    /// The failing runs, in seed order.
    pub failures: Vec<RunReport>,
    /// Wall-clock seconds (measured outside the simulation).
    pub wall_seconds: f64,
}

/// Run `run(seed)` over the configured seeds. `run` builds and runs one world; it is called on a
/// fresh thread per seed.
pub fn sweep<F>(_config: &SweepConfig, _run: F) -> SweepReport
where
    F: Fn(u64) -> RunReport + Sync,
{
    todo!("sim infrastructure")
}
