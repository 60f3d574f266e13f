//! Coverage-feedback swarm over the operator zoo: it finds every planted bug within the plain
//! swarm's budget, the plans it runs and the failures it finds are the same for one worker, two
//! workers and two shards merged, and a regression file it writes replays.

use std::collections::BTreeMap;
use std::sync::Mutex;

use sim::explore::coverage_swarm::{CoverageSwarm, LANES};
use sim::explore::shard::Shard;
use sim::explore::shrink::shrink_groups;
use sim::explore::{self, Options, Outcome, Quiet, Reference, Run, Strategy};
use sim::faults::FaultPlan;
use sim::guided::GuidedConfig;
use sim::scenario::{Registry, Scenario};

use controllers::zoo;

/// The plain swarm's budget per planted bug (`zoo_sweeps`' `BUG_BUDGET`).
const BUG_BUDGET: u64 = 500;

fn scenario(name: &str) -> Scenario {
    zoo::scenarios().into_iter().find(|s| s.name() == name).unwrap_or_else(|| panic!("no scenario {name}"))
}

fn references(scenarios: &[&Scenario], first_seed: u64) -> Vec<Option<Reference>> {
    let config = GuidedConfig { seed: first_seed, ..GuidedConfig::default() };
    explore::references(scenarios, first_seed, &config, 2).into_iter().map(Result::ok).collect()
}

/// A strategy that remembers the plan of every run it hands out, by (scenario, seed).
struct Recording<'s> {
    inner: &'s dyn Strategy,
    plans: Mutex<BTreeMap<(usize, u64), Option<FaultPlan>>>,
}

impl<'s> Recording<'s> {
    fn new(inner: &'s dyn Strategy) -> Self {
        Recording { inner, plans: Mutex::new(BTreeMap::new()) }
    }
}

impl Strategy for Recording<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn run(&self, index: u64) -> Option<Run> {
        let run = self.inner.run(index)?;
        self.plans.lock().unwrap().insert((run.scenario, run.seed), run.plan.clone());
        Some(run)
    }
    fn len(&self) -> Option<u64> {
        self.inner.len()
    }
    fn round_len(&self) -> Option<u64> {
        self.inner.round_len()
    }
    fn observe(&self, index: u64, outcome: &Outcome) {
        self.inner.observe(index, outcome)
    }
}

/// One failure kept: its deduplication key, seed, plan, verdict and how many runs shared it.
type Kept = (sim::explore::findings::Key, u64, FaultPlan, String, u64);
/// What an exploration ran and found: every run's plan, and its failures.
type Seen = (BTreeMap<(usize, u64), Option<FaultPlan>>, Vec<Kept>);

fn coverage_exploration(scenarios: &[&Scenario], seeds: u64, jobs: usize, shard: Shard) -> Seen {
    let references = references(scenarios, 0);
    let coverage =
        CoverageSwarm::new(scenarios, &references, 0, Some(seeds), shard).expect("two shards at most");
    let recording = Recording::new(&coverage);
    let options = Options { jobs, ..Options::default() };
    let explored = explore::explore(scenarios, &recording, &references, &options, &Quiet);
    let failures = explored
        .groups
        .iter()
        .map(|(f, n)| (sim::explore::findings::key(f), f.seed, f.plan.clone(), f.verdict.to_string(), *n))
        .collect();
    (recording.plans.into_inner().unwrap(), failures)
}

#[test]
fn coverage_search_finds_every_planted_bug_of_the_zoo_within_the_plain_swarms_budget() {
    for scenario in zoo::scenarios().iter().filter(|s| !s.name().ends_with(":fixed")) {
        let chosen = [scenario];
        let references = references(&chosen, 0);
        let coverage =
            CoverageSwarm::new(&chosen, &references, 0, Some(BUG_BUDGET), Shard::ALL).expect("one shard");
        let options = Options { stop_at_first_failure: true, ..Options::default() };
        let explored = explore::explore(&chosen, &coverage, &references, &options, &Quiet);
        let (first, _) = explored.groups.iter().min_by_key(|(f, _)| f.seed).unwrap_or_else(|| {
            panic!("{}: no seed of {BUG_BUDGET} failed under coverage search", scenario.name())
        });
        assert!(
            zoo::oracle::is_general_failure(&first.verdict),
            "{}: seed {} failed, but not by a general property: {}",
            scenario.name(),
            first.seed,
            first.verdict
        );
        // The recorded plan alone, at that seed, fails the same way: what a regression file keeps.
        let replay = zoo::oracle::run_on_fresh_thread(
            &scenario.builder().clone().faults(first.plan.clone()),
            first.seed,
        );
        assert_eq!(replay.verdict, first.verdict, "{}: seed {} with its plan", scenario.name(), first.seed);
        println!(
            "{}: first failure at seed {} ({} faults): {}",
            scenario.name(),
            first.seed,
            first.plan.faults.len(),
            first.verdict
        );
    }
}

#[test]
fn coverage_search_runs_the_same_plans_and_finds_the_same_failures_with_one_or_two_jobs_and_two_merged_shards()
 {
    let (rabbitmq, mongodb) = (scenario("rabbitmq:resize-crash"), scenario("mongodb:duplicate-backup"));
    let scenarios = [&rabbitmq, &mongodb];
    let seeds = 40;
    let one = coverage_exploration(&scenarios, seeds, 1, Shard::ALL);
    assert_eq!(one.0.len() as u64, seeds * 2, "every seed of both scenarios ran");
    assert!(!one.1.is_empty(), "the planted bugs fail somewhere in {seeds} seeds: {:?}", one.1);
    // The feedback acted: the first round (one seed per lane) is what a search that saw nothing
    // draws, and some later seed's plan is not.
    let references = references(&scenarios, 0);
    let unfed = CoverageSwarm::new(&scenarios, &references, 0, Some(seeds), Shard::ALL).expect("one shard");
    let mut changed = 0;
    for run in (0..).map_while(|i| unfed.run(i)) {
        let ran = &one.0[&(run.scenario, run.seed)];
        if run.seed < LANES {
            assert_eq!(ran, &run.plan, "seed {} of the first round", run.seed);
        } else {
            changed += usize::from(*ran != run.plan);
        }
    }
    assert!(changed > 0, "no plan changed with what the rounds before saw");
    let two = coverage_exploration(&scenarios, seeds, 2, Shard::ALL);
    assert_eq!(one, two, "two workers ran other plans or found other failures");
    // Two shards: disjoint seeds whose plans are the unsharded ones, and whose failures merge
    // (per failure shape, the lowest seed, the counts added) to the unsharded findings.
    let first = coverage_exploration(&scenarios, seeds, 1, Shard { index: 0, count: 2 });
    let second = coverage_exploration(&scenarios, seeds, 2, Shard { index: 1, count: 2 });
    let mut plans = first.0.clone();
    for (key, plan) in &second.0 {
        assert!(plans.insert(*key, plan.clone()).is_none(), "{key:?} ran on both shards");
    }
    assert_eq!(plans, one.0, "the shards ran other plans");
    let mut merged: BTreeMap<sim::explore::findings::Key, Kept> = BTreeMap::new();
    for failure in first.1.iter().chain(&second.1) {
        match merged.get_mut(&failure.0) {
            Some(kept) => {
                let count = kept.4 + failure.4;
                if failure.1 < kept.1 {
                    *kept = failure.clone();
                }
                kept.4 = count;
            }
            None => {
                merged.insert(failure.0.clone(), failure.clone());
            }
        }
    }
    let mut merged: Vec<_> = merged.into_values().collect();
    merged.sort_by_key(|f| (f.0.0, f.1));
    assert_eq!(merged, one.1, "the merged shards found other failures");
}

#[test]
fn a_regression_file_written_by_coverage_search_records_its_plan_and_replays() {
    let registry = Registry::new(zoo::scenarios()).expect("unique names");
    let rabbitmq = registry.get("rabbitmq:resize-crash").expect("in the zoo");
    let chosen = [rabbitmq];
    let references = references(&chosen, 0);
    let coverage =
        CoverageSwarm::new(&chosen, &references, 0, Some(BUG_BUDGET), Shard::ALL).expect("one shard");
    let options = Options { stop_at_first_failure: true, ..Options::default() };
    let explored = explore::explore(&chosen, &coverage, &references, &options, &Quiet);
    assert!(!explored.groups.is_empty(), "coverage search found the resize crash");
    let shrunk = shrink_groups(&chosen, &explored.groups[..1], &explored.seeds_run, coverage.name(), 100, 2);
    let file = &shrunk[0].file;
    assert_eq!(file.found.by, "coverage");
    assert!(!file.fault_plan.is_empty(), "the file keeps the plan that ran: {file:?}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = file.write_to(dir.path()).expect("the file is written");
    let replayed = sim::explore::replay::replay_file(&path, &registry).expect("the file loads");
    assert!(replayed.reproduced, "the file replays its failure: {}", replayed.report.verdict);
    assert_eq!(replayed.report.digest, file.trace_digest, "the replay's trace is the recorded one");
}
