//! Benchmark of the ConfigMap-generator scenario: seeds per second (one core, all cores) and the
//! engine's overhead over applying the same API operations straight to `model-apiserver`.
//!
//! Run: `cargo bench -p sim --bench configmapgen` (release). `BENCH_SEEDS=N` sets the seeds per
//! sweep (default 2000), `BENCH_DIRECT_ROUNDS=N` the rounds of the direct baseline (default 2000)
//! and `BENCH_GENERATORS=N` the generators the workload creates (default 3; runs with 1 and 3 split
//! a seed's cost into a fixed part and a part per event). Each measure is the best of 3 (the
//! machines are shared and noisy). It prints a table, with the process's RSS before and after the
//! sweeps (it should not grow with the number of seeds); it asserts nothing about time. A reference
//! row runs the same seeds one after another on one thread, which sweeps never do (see
//! `same_thread_us_per_seed`): its difference from the sweep is what a seed's fresh thread costs.
//! The events per seed (API calls and watch deliveries) are printed for seed 0, whose operations
//! the direct baseline replays, and as the mean over the sweep's seeds, which the cost per event
//! divides by (`sim/benches/side-by-side.sh`), as the madsim floor averages its own.
//! `BENCH_RSS_SEEDS=100000` instead runs one long sweep and prints the RSS as it goes.
//!
//! The baseline: one run of seed 0 is traced, and its API requests (verb and target, in order)
//! and watch deliveries are rebuilt as model requests: the same gets, lists, creates, patches and
//! updates with the scenario's bodies, plus one watch request per delivered event. Each round
//! applies them, on the calling thread, to a clone of a server with the same setup installed once
//! (default namespaces and the CRD), as the engine starts each run from its builder's installed
//! clusters. The engine's informers actually poll the watch on every revision move, so the
//! baseline does no more work than the engine and the ratio errs on the engine's side.

// The allocator kube-sim's binaries use (see the workspace Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../tests/it/support/configmapgen.rs"]
mod configmapgen;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::params::{GetParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube_core::{ApiResource, DynamicObject, Resource};
use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};
use sim::{RunReport, RunStats, SweepConfig, Trace, TraceEvent, Verdict, sweep};

/// Generators the workload creates (as in the test, unless `BENCH_GENERATORS` says otherwise).
static GENERATORS: std::sync::LazyLock<usize> =
    std::sync::LazyLock::new(|| env_count("BENCH_GENERATORS", 3) as usize);
const SEEDS_DEFAULT: u64 = 2_000;
const DIRECT_ROUNDS_DEFAULT: u64 = 2_000;
/// Each measure is the best of this many runs.
const REPEATS: usize = 3;

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// One rebuilt operation of the traced run.
#[derive(Clone, Debug)]
enum Op {
    Get { resource: ApiResource, namespace: String, name: String },
    List { resource: ApiResource },
    CreateGenerator { name: String, content: String },
    CreateConfigMap { name: String },
    UpdateConfigMap { name: String },
    PatchGenerator { name: String, patch: serde_json::Value },
    Watch { resource: ApiResource, after_revision: u64 },
}

fn generators() -> ApiResource {
    ApiResource::erase::<configmapgen::ConfigMapGenerator>(&())
}

fn configmaps() -> ApiResource {
    ApiResource::erase::<ConfigMap>(&())
}

fn resource_of(plural: &str) -> ApiResource {
    match plural {
        "configmapgenerators" => generators(),
        "configmaps" => configmaps(),
        other => panic!("the scenario does not touch {other}"),
    }
}

/// The operations of one traced run of seed 0.
fn record() -> (Vec<Op>, u64) {
    let report = configmapgen::world(*GENERATORS).keep_trace(true).run(0);
    assert_eq!(report.verdict, Verdict::Pass, "seed 0 must pass to be a baseline");
    let mut ops = Vec::new();
    let mut created = 0usize;
    for entry in report.trace.entries() {
        match &entry.event {
            TraceEvent::ApiRequest { verb, target, .. } => {
                let parts: Vec<&str> = target.split('/').collect();
                let op = match (*verb, parts.as_slice()) {
                    ("get", [plural, namespace, name]) => Op::Get {
                        resource: resource_of(plural),
                        namespace: (*namespace).to_owned(),
                        name: (*name).to_owned(),
                    },
                    ("list", [plural, ..]) => Op::List { resource: resource_of(plural) },
                    ("create", ["configmapgenerators", _, name]) => {
                        created += 1;
                        Op::CreateGenerator {
                            name: (*name).to_owned(),
                            content: format!("content {}", created - 1),
                        }
                    }
                    ("create", ["configmaps", _, name]) => Op::CreateConfigMap { name: (*name).to_owned() },
                    ("update", ["configmaps", _, name]) => Op::UpdateConfigMap { name: (*name).to_owned() },
                    ("patch", ["configmapgenerators", _, name]) => Op::PatchGenerator {
                        name: (*name).to_owned(),
                        patch: serde_json::json!({ "spec": { "content": "edited" } }),
                    },
                    (verb, _) => panic!("the baseline does not rebuild {verb} {target}"),
                };
                ops.push(op);
            }
            TraceEvent::WatchDelivery { watch, resource_version, .. } => {
                let plural = watch.rsplit('/').next().expect("cluster/plural");
                let revision: u64 = resource_version.parse().expect("a numeric resourceVersion");
                ops.push(Op::Watch { resource: resource_of(plural), after_revision: revision - 1 });
            }
            _ => {}
        }
    }
    (ops, report.stats.api_calls)
}

/// The server every round starts from: the default namespaces and the CRD installed, as the
/// engine installs a builder's clusters once and starts each run from a clone.
fn installed_server(crd: &DynamicObject, crd_resource: &ApiResource) -> ApiServer {
    let mut ids = SeqIds::default();
    let mut ctx = Context::new(epoch(), &mut ids);
    let mut server = ApiServer::new().with_bootstrap_objects(&mut ctx);
    let created =
        server.handle(Request::create(crd_resource, None, crd.clone(), PostParams::default()), &mut ctx);
    assert!(created.is_ok(), "the CRD installs");
    server
}

fn epoch() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_767_225_600).expect("valid")
}

/// Applies the rebuilt operations to a clone of the installed server, as the scenario's controller
/// and workload would; returns the final revision.
fn apply_directly(ops: &[Op], installed: &ApiServer) -> u64 {
    let mut ids = SeqIds::default();
    let mut ctx = Context::new(epoch(), &mut ids);
    let mut server = installed.clone();
    let mut contents: BTreeMap<&str, String> = BTreeMap::new();
    let mut uids: BTreeMap<&str, String> = BTreeMap::new();
    let mut last_seen: BTreeMap<&str, Arc<DynamicObject>> = BTreeMap::new();
    for op in ops {
        let request = match op {
            Op::Get { resource, namespace, name } => {
                Request::get(resource, Some(namespace), name, GetParams::default())
            }
            Op::List { resource } => Request::list(resource, None, ListParams::default()),
            Op::CreateGenerator { name, content } => {
                contents.insert(name, content.clone());
                let object = configmapgen::generator(name, content);
                Request::create(&generators(), Some("default"), to_dynamic(&object), PostParams::default())
            }
            Op::PatchGenerator { name, patch } => {
                contents.insert(name, "edited".to_owned());
                let patch = Patch::Merge(patch.clone());
                Request::patch(&generators(), Some("default"), name, patch, PatchParams::default())
            }
            Op::CreateConfigMap { name } => {
                let object = configmap(name, &contents, &uids, None);
                Request::create(&configmaps(), Some("default"), object, PostParams::default())
            }
            Op::UpdateConfigMap { name } => {
                let rv = last_seen.get(name.as_str()).and_then(|o| o.metadata.resource_version.clone());
                let object = configmap(name, &contents, &uids, rv);
                Request::update(&configmaps(), Some("default"), name, object, PostParams::default())
            }
            Op::Watch { resource, after_revision } => {
                Request::watch(resource, None, &after_revision.to_string(), WatchParams::default())
            }
        };
        let is_generator_create = matches!(op, Op::CreateGenerator { .. });
        if let Ok(Response::Object(object)) = server.handle(request, &mut ctx) {
            let name = match op {
                Op::Get { name, .. } | Op::CreateGenerator { name, .. } | Op::CreateConfigMap { name } => {
                    name
                }
                _ => continue,
            };
            if is_generator_create {
                uids.insert(name, object.metadata.uid.clone().unwrap_or_default());
            } else {
                last_seen.insert(name, object);
            }
        }
    }
    server.revision()
}

fn configmap(
    name: &str,
    contents: &BTreeMap<&str, String>,
    uids: &BTreeMap<&str, String>,
    resource_version: Option<String>,
) -> DynamicObject {
    let mut generator = configmapgen::generator(name, contents.get(name).map_or("", String::as_str));
    generator.metadata.uid = uids.get(name).cloned();
    let owner = generator.controller_owner_ref(&()).expect("named, with a uid");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("default".to_owned());
    cm.metadata.owner_references = Some(vec![owner]);
    cm.metadata.resource_version = resource_version;
    cm.data = Some(BTreeMap::from([("content".to_owned(), generator.spec.content.clone())]));
    to_dynamic(&cm)
}

fn to_dynamic<K: serde::Serialize>(object: &K) -> DynamicObject {
    serde_json::from_value(serde_json::to_value(object).expect("serializes")).expect("an object")
}

fn crd_object() -> (DynamicObject, ApiResource) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(&configmapgen::crd_yaml()).expect("a CRD");
    (to_dynamic(&crd), ApiResource::erase::<CustomResourceDefinition>(&()))
}

/// Runs a sweep of `seeds` seeds on `jobs` workers (0: every core), without the self-check.
fn seeds_per_second(seeds: u64, jobs: usize) -> (f64, f64) {
    let world = configmapgen::world(*GENERATORS);
    let config = SweepConfig::new(configmapgen::SCENARIO).seeds(seeds).jobs(jobs).self_check_every(0);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
    (report.seeds_per_second(), report.wall_seconds)
}

/// Wall microseconds per seed of the same seeds run one after another on one thread: a reference
/// only. Sweeps never do this: std's `HashMap` keys are drawn once per thread (madsim seeds them
/// from the run's seed on a fresh thread), so on a reused thread a controller that iterates a
/// `HashMap` would see an order set by the seeds that ran before, and a seed would not replay
/// alone. The difference from the sweep's figure is what the fresh thread costs a seed.
fn same_thread_us_per_seed(seeds: u64) -> f64 {
    let world = configmapgen::world(*GENERATORS);
    sim::runner::on_fresh_thread("same-thread", || {
        let started = Instant::now();
        for seed in 0..seeds {
            let report = world.run(seed);
            assert!(report.verdict.is_pass(), "seed {seed}: {:?}", report.verdict);
        }
        started.elapsed().as_secs_f64() / seeds as f64 * 1e6
    })
    .expect("the same-thread reference run panicked")
}

/// API calls and watch deliveries per seed, averaged over the sweep's seeds (as the madsim floor
/// reports its own): a seed's count depends on its interleaving (how often the workload's wait
/// polls, whether a write meets a conflict), so seed 0 alone need not be typical. Counted in a
/// sweep of their own, outside every timed run.
fn mean_events_per_seed(seeds: u64) -> (f64, f64) {
    let world = configmapgen::world(*GENERATORS);
    let totals = std::sync::Mutex::new((0u64, 0u64));
    let config = SweepConfig::new(configmapgen::SCENARIO).seeds(seeds).self_check_every(0);
    let report = sweep(&config, |seed, options| {
        let report = world.run_with(seed, options);
        let mut totals = totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.0 += report.stats.api_calls;
        totals.1 += report.stats.watch_deliveries;
        report
    });
    report.assert_all_passed();
    let (calls, deliveries) = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    (calls as f64 / seeds as f64, deliveries as f64 / seeds as f64)
}

/// The resident set size in KiB (Linux; `None` elsewhere).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rss_text() -> String {
    rss_kib().map_or_else(|| "n/a".to_owned(), |kib| format!("{} MiB", kib / 1024))
}

/// Wall microseconds per seed of a sweep (1 worker) whose run is `run`: the fixed costs under the
/// scenario.
fn harness_us_per_seed(seeds: u64, run: impl Fn(u64) -> RunReport + Sync) -> f64 {
    let config = SweepConfig::new("harness").seeds(seeds).jobs(1).self_check_every(0);
    let report = sweep(&config, |seed, _options| run(seed));
    report.assert_all_passed();
    report.wall_seconds / seeds as f64 * 1e6
}

fn empty_report(seed: u64) -> RunReport {
    RunReport {
        scenario: "harness".to_owned(),
        seed,
        verdict: Verdict::Pass,
        digest: String::new(),
        trace: Trace::new(false),
        stats: RunStats::default(),
        plan: sim::faults::FaultPlan::none(),
        unfired: Vec::new(),
        choices: None,
        profile: Default::default(),
    }
}

/// The long-sweep mode (`BENCH_RSS_SEEDS=N`): N seeds in ten chunks on every core, printing the
/// RSS after each chunk. It should stay flat: nothing of a passing seed outlives its thread.
fn rss_over_a_long_sweep(total: u64) {
    let world = configmapgen::world(*GENERATORS);
    let chunk = (total / 10).max(1);
    println!("| seeds run | RSS      | seeds/s |");
    println!("|-----------|----------|---------|");
    for i in 0..total.div_ceil(chunk) {
        let seeds = chunk.min(total - i * chunk);
        let config =
            SweepConfig { first_seed: i * chunk, ..SweepConfig::new(configmapgen::SCENARIO).seeds(seeds) };
        let report = sweep(&config, |seed, options| world.run_with(seed, options));
        report.assert_all_passed();
        println!("| {:>9} | {:>8} | {:>7.0} |", i * chunk + seeds, rss_text(), report.seeds_per_second());
    }
}

fn main() {
    if let Some(total) = std::env::var("BENCH_RSS_SEEDS").ok().and_then(|v| v.trim().parse().ok()) {
        rss_over_a_long_sweep(total);
        return;
    }
    let seeds = env_count("BENCH_SEEDS", SEEDS_DEFAULT);
    let rounds = env_count("BENCH_DIRECT_ROUNDS", DIRECT_ROUNDS_DEFAULT);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let profile =
        if cfg!(debug_assertions) { "debug (numbers mean little: use cargo bench)" } else { "release" };
    println!("ConfigMap-generator scenario ({} generators), {profile} build, {cores} cores", *GENERATORS);

    // Warm up (page in code, grow the allocator's pools) so that RSS compares like with like.
    seeds_per_second(seeds.min(200), 0);
    let rss_before = rss_text();
    // The machine is shared and noisy: each measure is the best of REPEATS, interleaved.
    let (mut one_core, mut one_core_wall) = (0.0, f64::MAX);
    let (mut all_cores, mut all_cores_wall) = (0.0, f64::MAX);
    let (mut thread_us, mut runtime_us, mut same_thread_us) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..REPEATS {
        let (rate, wall) = seeds_per_second(seeds, 1);
        if wall < one_core_wall {
            (one_core, one_core_wall) = (rate, wall);
        }
        let (rate, wall) = seeds_per_second(seeds, 0);
        if wall < all_cores_wall {
            (all_cores, all_cores_wall) = (rate, wall);
        }
        thread_us = thread_us.min(harness_us_per_seed(seeds, empty_report));
        runtime_us = runtime_us.min(harness_us_per_seed(seeds, |seed| {
            let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
            runtime.block_on(async {});
            empty_report(seed)
        }));
        same_thread_us = same_thread_us.min(same_thread_us_per_seed(seeds));
    }
    let rss_after = rss_text();

    let (ops, api_calls) = record();
    let (crd, crd_resource) = crd_object();
    let installed = installed_server(&crd, &crd_resource);
    let mut direct_wall = f64::MAX;
    for _ in 0..REPEATS {
        let started = Instant::now();
        for _ in 0..rounds {
            black_box(apply_directly(black_box(&ops), &installed));
        }
        direct_wall = direct_wall.min(started.elapsed().as_secs_f64());
    }
    let direct_per_round_us = direct_wall / rounds as f64 * 1e6;
    let sim_per_seed_us = one_core_wall / seeds as f64 * 1e6;

    println!();
    println!("| measure                                   | value        |");
    println!("|-------------------------------------------|--------------|");
    println!("| seeds/s, 1 worker (fresh thread per seed) | {one_core:>12.0} |");
    println!("| {:<41} | {all_cores:>12.0} |", format!("seeds/s, {cores} workers"));
    println!("| wall time per seed, 1 worker (us)         | {sim_per_seed_us:>12.1} |");
    println!(
        "| API calls per seed (seed 0) + deliveries  | {:>12} |",
        format!("{api_calls} + {}", ops.len() as u64 - api_calls)
    );
    let (mean_calls, mean_deliveries) = mean_events_per_seed(seeds);
    println!(
        "| API calls + deliveries, mean of the seeds | {:>12} |",
        format!("{mean_calls:.1} + {mean_deliveries:.1}")
    );
    println!("| same seeds on one thread (reference, us)  | {same_thread_us:>12.1} |");
    println!("| of which: fresh thread + logging (us)     | {thread_us:>12.1} |");
    println!("| of which: + empty madsim runtime (us)     | {runtime_us:>12.1} |");
    println!("| direct model ops per round (us)           | {direct_per_round_us:>12.1} |");
    println!(
        "| engine overhead (seed / direct)           | {:>11.2}x |",
        sim_per_seed_us / direct_per_round_us
    );
    println!("| RSS before / after the two sweeps         | {:>12} |", format!("{rss_before} / {rss_after}"));
    println!(
        "| overhead without thread + runtime         | {:>11.2}x |",
        (sim_per_seed_us - runtime_us) / direct_per_round_us
    );
    println!();
    println!(
        "(best of {REPEATS}: {seeds} seeds per sweep, {one_core_wall:.2}s on 1 worker, {all_cores_wall:.2}s \
         on {cores}; {rounds} direct rounds, {direct_wall:.2}s)"
    );
}
