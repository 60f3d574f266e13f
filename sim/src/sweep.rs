//! Seed sweeps: many seeds, each on a fresh thread, in parallel across cores, with a determinism
//! self-check on a sample.
//!
//! Each seed runs on its own short-lived std thread, so that madsim's thread-local runtime state
//! and std's per-thread hash seeds start fresh. `jobs` worker threads each run one seed thread at
//! a time. Nothing is kept per passing seed, so memory stays flat however many seeds run.
//!
//! Environment: `SIM_SEEDS=N` runs N seeds from `first_seed`; `SIM_SEED=S` runs exactly seed S,
//! with logs printed (filtered by `RUST_LOG`) and the trace kept. Every failure is printed to
//! stderr with its verdict and the exact command that replays it.

use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

use crate::decision::ChoiceMode;
use crate::logging;
use crate::run_options::RunOptions;
pub use crate::runner::ensure_simulated;
use crate::runner::{each_on_workers, on_fresh_thread};
use crate::trace::Trace;
use crate::verdict::{RunReport, RunStats, Verdict};

/// The environment variable that sets how many seeds a sweep runs.
pub const SIM_SEEDS: &str = "SIM_SEEDS";
/// The environment variable that makes a sweep run exactly one seed, with logs.
pub const SIM_SEED: &str = "SIM_SEED";

/// Failures a sweep keeps (with their reports); further ones are only counted, so that a sweep
/// in which every seed fails still runs in flat memory.
const FAILURES_KEPT_MAX: usize = 1_000;
/// Failures a sweep prints as they happen; later ones appear only in the summary count.
const FAILURES_PRINTED_MAX: u64 = 20;
/// Failures [`SweepReport::assert_all_passed`] lists in its panic message.
const FAILURES_SUMMARIZED_MAX: usize = 5;

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
    /// `None` takes the name of the calling thread, which is the test's name under libtest.
    pub test_name: Option<String>,
}

impl SweepConfig {
    /// A sweep of `scenario` over 100 seeds from 0, one worker per core, self-checking every
    /// tenth seed.
    pub fn new(scenario: impl Into<String>) -> Self {
        SweepConfig {
            scenario: scenario.into(),
            seeds: 100,
            first_seed: 0,
            jobs: 0,
            self_check_every: 10,
            test_name: None,
        }
    }

    /// Sets how many seeds run.
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// Sets the number of worker threads (0: one per core).
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    /// Sets how often the determinism self-check runs (every n-th seed; 0: never).
    pub fn self_check_every(mut self, every: u64) -> Self {
        self.self_check_every = every;
        self
    }
}

/// The outcome of a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds run.
    pub seeds_run: u64,
    /// The failing runs, in seed order (at most 1,000; see `failures_total`).
    pub failures: Vec<RunReport>,
    /// How many seeds failed, including any not kept in `failures`.
    pub failures_total: u64,
    /// How many seeds were run a second time for the determinism self-check.
    pub self_checks: u64,
    /// Wall-clock seconds (measured outside the simulation).
    pub wall_seconds: f64,
    /// The replay command with `{seed}` in place of the seed.
    pub replay_template: String,
}

impl SweepReport {
    /// The exact shell command that replays `seed`.
    pub fn replay_command(&self, seed: u64) -> String {
        self.replay_template.replace("{seed}", &seed.to_string())
    }

    /// Seeds per wall-clock second (self-check reruns not counted).
    pub fn seeds_per_second(&self) -> f64 {
        if self.wall_seconds > 0.0 { self.seeds_run as f64 / self.wall_seconds } else { 0.0 }
    }

    /// Panics, listing the first failures with their replay commands, unless every seed passed.
    pub fn assert_all_passed(&self) {
        if self.failures_total == 0 {
            return;
        }
        let mut message = format!(
            "scenario \"{}\": {} of {} seeds failed\n",
            self.scenario, self.failures_total, self.seeds_run
        );
        for failure in self.failures.iter().take(FAILURES_SUMMARIZED_MAX) {
            let _ = writeln!(message, "  seed {}: {}", failure.seed, failure.verdict);
            let _ = writeln!(message, "    replay: {}", self.replay_command(failure.seed));
        }
        if self.failures.len() > FAILURES_SUMMARIZED_MAX {
            let _ =
                writeln!(message, "  ... and {} more", self.failures_total - FAILURES_SUMMARIZED_MAX as u64);
        }
        panic!("{message}");
    }
}

/// Which seeds to run, from the environment or the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SeedPlan {
    first: u64,
    count: u64,
    single: bool,
}

/// Parses a seed: decimal, or hexadecimal with `0x`.
fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn seed_plan(config: &SweepConfig, sim_seed: Option<&str>, sim_seeds: Option<&str>) -> SeedPlan {
    if let Some(text) = sim_seed {
        let seed = parse_seed(text)
            .unwrap_or_else(|| panic!("{SIM_SEED}={text:?} is not a seed (a u64, decimal or 0x-hex)"));
        return SeedPlan { first: seed, count: 1, single: true };
    }
    let count = match sim_seeds {
        Some(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SIM_SEEDS}={text:?} is not a count of seeds (a u64)")),
        None => config.seeds,
    };
    SeedPlan { first: config.first_seed, count, single: false }
}

/// The replay command's template: `SIM_SEED={seed} cargo test [--release] -p PKG TARGET -- --exact NAME`.
fn replay_template(config: &SweepConfig) -> String {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<package>".to_owned());
    let test_name = config
        .test_name
        .clone()
        .or_else(|| thread::current().name().filter(|name| *name != "main").map(str::to_owned))
        .unwrap_or_else(|| "<test name>".to_owned());
    // The test binary is `deps/<target>-<hash>`: a crate's unit tests are named after the crate,
    // integration tests after their file.
    let target =
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_stem().and_then(|stem| stem.to_str()).map(str::to_owned))
            .map(|stem| stem.rsplit_once('-').map_or(stem.clone(), |(name, _hash)| name.to_owned()))
            .map(|name| {
                if name == package.replace('-', "_") { "--lib".to_owned() } else { format!("--test {name}") }
            })
            .unwrap_or_default();
    let release = if cfg!(debug_assertions) { "" } else { " --release" };
    format!("SIM_SEED={{seed}} cargo test{release} -p {package} {target} -- --exact {test_name}")
}

/// Runs `run(seed, options)` on a fresh thread, with logs printed when `options` keep the trace
/// (a single-seed run); a panic that escapes the engine becomes a crash verdict.
fn run_on_fresh_thread<F>(scenario: &str, seed: u64, options: &RunOptions, run: &F) -> RunReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    on_fresh_thread(&format!("sim-seed-{seed}"), || {
        let _logs = logging::init_for_run(options.keep_trace);
        run(seed, options)
    })
    .unwrap_or_else(|message| RunReport {
        scenario: scenario.to_owned(),
        seed,
        verdict: Verdict::Crash { node: "engine".to_owned(), object: None, message },
        digest: String::new(),
        trace: Trace::new(false),
        stats: RunStats::default(),
        plan: crate::faults::FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    })
}

/// Runs one seed, with the self-check when `check`, and returns the failing report, if any.
///
/// The self-check records the first run's choices and replays them in the second, so that when
/// the digests differ the verdict names the first choice at which the runs parted (a divergence
/// replaced the second run's verdict). When no choice diverged, the nondeterminism is in the task
/// order or in the controller's own code, and the verdict says only that the digests differ.
fn run_seed<F>(config: &SweepConfig, seed: u64, single: bool, check: bool, run: &F) -> Option<RunReport>
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    let options = RunOptions { keep_trace: single, choices: check.then_some(ChoiceMode::Record) };
    let mut first = run_on_fresh_thread(&config.scenario, seed, &options, run);
    // Kept failures must not hold a whole recording each: the sweep's memory stays flat.
    let recorded = first.choices.take();
    if check {
        let replay = recorded.map(|choices| ChoiceMode::Replay(std::sync::Arc::new(choices)));
        let options = RunOptions { keep_trace: single, choices: replay };
        let second = run_on_fresh_thread(&config.scenario, seed, &options, run);
        if second.digest != first.digest || second.verdict != first.verdict {
            let choice = match second.verdict {
                Verdict::Nondeterminism { choice, .. } => choice,
                _ => None,
            };
            return Some(RunReport {
                verdict: Verdict::Nondeterminism {
                    first: first.digest.clone(),
                    second: second.digest,
                    choice,
                },
                ..first
            });
        }
    }
    (!first.verdict.is_pass()).then_some(first)
}

/// Run `run(seed, options)` over the configured seeds. `run` builds and runs one world, on a fresh
/// thread per seed, and must hand `options` on to [`crate::SimBuilder::run_with`]: they carry the
/// determinism self-check's recorded choices into its second run, and the `SIM_SEED` run's
/// kept trace.
///
/// ```no_run
/// # let world = sim::Sim::builder();
/// let config = sim::SweepConfig::new("my-operator").seeds(500);
/// sim::sweep(&config, |seed, options| world.run_with(seed, options)).assert_all_passed();
/// ```
pub fn sweep<F>(config: &SweepConfig, run: F) -> SweepReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    ensure_simulated();
    let plan =
        seed_plan(config, std::env::var(SIM_SEED).ok().as_deref(), std::env::var(SIM_SEEDS).ok().as_deref());
    sweep_seeds(config, plan, &run)
}

fn sweep_seeds<F>(config: &SweepConfig, plan: SeedPlan, run: &F) -> SweepReport
where
    F: Fn(u64, &RunOptions) -> RunReport + Sync,
{
    let replay_template = replay_template(config);
    let jobs = match config.jobs {
        0 => thread::available_parallelism().map_or(1, NonZeroUsize::get),
        jobs => jobs,
    };
    let jobs = jobs.min(usize::try_from(plan.count).unwrap_or(usize::MAX)).max(1);
    // A single-seed run prints its logs; a second run would print them again.
    let check_every = if plan.single { 0 } else { config.self_check_every };

    let next_index = AtomicU64::new(0);
    let failures_total = AtomicU64::new(0);
    let self_checks = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    let started = Instant::now();
    each_on_workers(jobs, "sim-sweep-worker", |_| {
        let index = next_index.fetch_add(1, Ordering::Relaxed);
        if index >= plan.count {
            return false;
        }
        let seed = plan.first.wrapping_add(index);
        let check = check_every != 0 && index.is_multiple_of(check_every);
        if check {
            self_checks.fetch_add(1, Ordering::Relaxed);
        }
        let Some(failure) = run_seed(config, seed, plan.single, check, run) else {
            return true;
        };
        let ordinal = failures_total.fetch_add(1, Ordering::Relaxed);
        if ordinal < FAILURES_PRINTED_MAX || plan.single {
            print_failure(&failure, &replay_template);
        }
        let mut failures = failures.lock().unwrap_or_else(|poison| poison.into_inner());
        if failures.len() < FAILURES_KEPT_MAX {
            failures.push(failure);
        }
        true
    });
    let wall_seconds = started.elapsed().as_secs_f64();
    let mut failures = failures.into_inner().unwrap_or_else(|poison| poison.into_inner());
    failures.sort_by_key(|failure| failure.seed);
    SweepReport {
        scenario: config.scenario.clone(),
        seeds_run: plan.count,
        failures,
        failures_total: failures_total.into_inner(),
        self_checks: self_checks.into_inner(),
        wall_seconds,
        replay_template,
    }
}

fn print_failure(failure: &RunReport, replay_template: &str) {
    let mut message = format!(
        "sim: scenario \"{}\" seed {} failed: {}\n  replay: {}\n",
        failure.scenario,
        failure.seed,
        failure.verdict,
        replay_template.replace("{seed}", &failure.seed.to_string())
    );
    if failure.trace.keeps_entries() {
        let _ = write!(
            message,
            "  trace ({} entries, digest {}):\n{}",
            failure.trace.len(),
            failure.digest,
            failure.trace.render()
        );
    }
    eprint!("{message}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::panic_message;

    fn report(seed: u64, verdict: Verdict, digest: &str) -> RunReport {
        RunReport {
            scenario: "toy".into(),
            seed,
            verdict,
            digest: digest.into(),
            trace: Trace::new(false),
            stats: RunStats::default(),
            plan: crate::faults::FaultPlan::none(),
            unfired: Vec::new(),
            choices: None,
            profile: Default::default(),
        }
    }

    fn plan(first: u64, count: u64) -> SeedPlan {
        SeedPlan { first, count, single: false }
    }

    #[test]
    fn sim_seed_runs_exactly_one_seed_and_sim_seeds_sets_the_count() {
        let config = SweepConfig::new("toy").seeds(50);
        assert_eq!(seed_plan(&config, None, None), SeedPlan { first: 0, count: 50, single: false });
        assert_eq!(seed_plan(&config, None, Some("7")), SeedPlan { first: 0, count: 7, single: false });
        assert_eq!(seed_plan(&config, Some("42"), Some("7")), SeedPlan { first: 42, count: 1, single: true });
        assert_eq!(seed_plan(&config, Some("0x10"), None), SeedPlan { first: 16, count: 1, single: true });
    }

    #[test]
    #[should_panic(expected = "SIM_SEED=\"abc\" is not a seed")]
    fn a_malformed_sim_seed_is_rejected_with_its_value() {
        seed_plan(&SweepConfig::new("toy"), Some("abc"), None);
    }

    #[test]
    fn every_seed_runs_once_and_failures_come_back_in_seed_order() {
        let config = SweepConfig::new("toy").jobs(2).self_check_every(0);
        let runs = AtomicU64::new(0);
        let report = sweep_seeds(&config, plan(10, 30), &|seed, _| {
            runs.fetch_add(1, Ordering::Relaxed);
            let verdict = if seed % 7 == 0 {
                Verdict::Liveness { reason: format!("seed {seed} stalls") }
            } else {
                Verdict::Pass
            };
            report(seed, verdict, "d")
        });
        assert_eq!(runs.into_inner(), 30);
        assert_eq!(report.seeds_run, 30);
        assert_eq!(report.failures_total, 4);
        assert_eq!(report.failures.iter().map(|f| f.seed).collect::<Vec<_>>(), vec![14, 21, 28, 35]);
        assert_eq!(report.self_checks, 0);
    }

    #[test]
    fn each_seed_runs_on_a_fresh_thread() {
        let config = SweepConfig::new("toy").jobs(1).self_check_every(0);
        let thread_ids = Mutex::new(Vec::new());
        sweep_seeds(&config, plan(0, 5), &|seed, _| {
            thread_ids.lock().expect("not poisoned").push(thread::current().id());
            assert_eq!(thread::current().name(), Some(format!("sim-seed-{seed}").as_str()));
            report(seed, Verdict::Pass, "d")
        });
        let mut ids = thread_ids.into_inner().expect("not poisoned");
        ids.sort_by_key(|id| format!("{id:?}"));
        ids.dedup();
        assert_eq!(ids.len(), 5);
    }

    #[test]
    fn the_self_check_reruns_every_nth_seed_and_flags_differing_digests() {
        let config = SweepConfig::new("toy").jobs(2).self_check_every(3);
        let calls = Mutex::new(std::collections::BTreeMap::<u64, u32>::new());
        let report = sweep_seeds(&config, plan(0, 9), &|seed, _| {
            let mut calls = calls.lock().expect("not poisoned");
            let call = calls.entry(seed).or_insert(0);
            *call += 1;
            // Seed 6 is "nondeterministic": its second run has another digest.
            let digest = if seed == 6 { format!("d{call}") } else { "d".to_owned() };
            report(seed, Verdict::Pass, &digest)
        });
        let calls = calls.into_inner().expect("not poisoned");
        assert_eq!(
            calls.into_iter().filter(|(_, n)| *n == 2).map(|(s, _)| s).collect::<Vec<_>>(),
            vec![0, 3, 6]
        );
        assert_eq!(report.self_checks, 3);
        assert_eq!(report.failures_total, 1);
        assert_eq!(report.failures[0].seed, 6);
        assert_eq!(
            report.failures[0].verdict,
            Verdict::Nondeterminism { first: "d1".into(), second: "d2".into(), choice: None }
        );
    }

    #[test]
    fn the_self_check_asks_the_first_run_to_record_and_hands_its_recording_to_the_second() {
        use crate::decision::{CHOICES_FORMAT, Choice, Choices};
        let config = SweepConfig::new("toy").jobs(1).self_check_every(2);
        let recording = Choices {
            format: CHOICES_FORMAT,
            seed: 0,
            choices: vec![Choice { stream: "s".into(), value: 7 }],
        };
        let asked = Mutex::new(Vec::new());
        let report = sweep_seeds(&config, plan(0, 2), &|seed, options| {
            asked.lock().expect("not poisoned").push((seed, options.clone()));
            let mut report = report(seed, Verdict::Pass, "d");
            if options.choices == Some(ChoiceMode::Record) {
                report.choices = Some(Choices { seed, ..recording.clone() });
            }
            report
        });
        assert_eq!(report.self_checks, 1);
        let replay = ChoiceMode::Replay(std::sync::Arc::new(recording.clone()));
        assert_eq!(
            asked.into_inner().expect("not poisoned"),
            vec![
                (0, RunOptions { keep_trace: false, choices: Some(ChoiceMode::Record) }),
                (0, RunOptions { keep_trace: false, choices: Some(replay) }),
                (1, RunOptions::default()),
            ]
        );
    }

    #[test]
    fn the_one_seed_sim_seed_asks_for_keeps_its_trace_and_is_not_self_checked() {
        let config = SweepConfig::new("toy").jobs(1).self_check_every(1);
        let asked = Mutex::new(Vec::new());
        let single = SeedPlan { first: 42, count: 1, single: true };
        sweep_seeds(&config, single, &|seed, options| {
            asked.lock().expect("not poisoned").push((seed, options.clone()));
            report(seed, Verdict::Pass, "d")
        });
        assert_eq!(
            asked.into_inner().expect("not poisoned"),
            vec![(42, RunOptions::default().keeping_trace(true))]
        );
    }

    #[test]
    fn a_panic_that_escapes_the_engine_is_a_crash_of_the_engine_with_its_message() {
        let config = SweepConfig::new("toy").jobs(1).self_check_every(0);
        let report = sweep_seeds(&config, plan(3, 1), &|seed, _| {
            if seed == 3 {
                panic!("engine bug at seed {seed}");
            }
            report(seed, Verdict::Pass, "d")
        });
        assert_eq!(
            report.failures[0].verdict,
            Verdict::Crash { node: "engine".into(), object: None, message: "engine bug at seed 3".into() }
        );
    }

    #[test]
    fn the_replay_command_names_the_seed_package_target_and_test() {
        let config = SweepConfig { test_name: Some("sweep::tests::x".into()), ..SweepConfig::new("toy") };
        let report = sweep_seeds(&config, plan(0, 0), &|seed, _| report(seed, Verdict::Pass, "d"));
        let release = if cfg!(debug_assertions) { "" } else { " --release" };
        assert_eq!(
            report.replay_command(1234),
            format!("SIM_SEED=1234 cargo test{release} -p sim --lib -- --exact sweep::tests::x")
        );
    }

    #[test]
    fn the_replay_command_defaults_to_the_calling_tests_name() {
        let report =
            sweep_seeds(&SweepConfig::new("toy"), plan(0, 0), &|seed, _| report(seed, Verdict::Pass, "d"));
        assert!(
            report
                .replay_command(5)
                .ends_with("-- --exact sweep::tests::the_replay_command_defaults_to_the_calling_tests_name"),
            "{}",
            report.replay_command(5)
        );
    }

    #[test]
    fn assert_all_passed_lists_failures_with_replay_commands() {
        let config =
            SweepConfig { test_name: Some("t".into()), ..SweepConfig::new("toy").self_check_every(0) };
        let report = sweep_seeds(&config, plan(0, 3), &|seed, _| {
            let verdict = if seed == 1 {
                Verdict::Correctness { property: "p".into(), message: "m".into(), at_millis: 5 }
            } else {
                Verdict::Pass
            };
            report(seed, verdict, "d")
        });
        let panic = std::panic::catch_unwind(|| report.assert_all_passed()).expect_err("one seed failed");
        let message = panic_message(panic.as_ref());
        let release = if cfg!(debug_assertions) { "" } else { " --release" };
        assert_eq!(
            message,
            format!(
                "scenario \"toy\": 1 of 3 seeds failed\n  seed 1: correctness: property \"p\" failed at \
                 0.005s: m\n    replay: SIM_SEED=1 cargo test{release} -p sim --lib -- --exact t\n"
            )
        );
    }

    #[test]
    fn ensure_simulated_does_not_panic_in_a_madsim_build() {
        // .cargo/config.toml builds tests with --cfg madsim; without it this test panics.
        ensure_simulated();
    }
}
