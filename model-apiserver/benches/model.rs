//! Throughput and memory of the model API server, applied directly (no simulator).
//!
//! Run with `cargo bench -p model-apiserver --bench model`. It prints operations per second for
//! create, update, get, list and watch replay at 1k, 10k and 100k ConfigMaps, and the memory a
//! 10k-object store holds with 100k revisions of history, measured with a counting global
//! allocator and compared with a full copy of the state per revision. It asserts nothing about
//! time: the numbers are for reading side by side (DESIGN.md section 9).

use std::alloc::System;
use std::hint::black_box;
use std::time::{Duration, Instant};

use kube_core::{
    ApiResource, DynamicObject,
    params::{GetParams, ListParams, PostParams, WatchParams},
};
use model_apiserver::{ApiServer, Context, Request, ResourceTypes, Response, SeqIds, ServerConfig};
use stats_alloc::StatsAlloc;

// Counts every allocation of this process, so that the bytes a server holds can be read off.
#[global_allocator]
static ALLOCATOR: StatsAlloc<System> = StatsAlloc::system();

/// Store sizes of the throughput table.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Objects of the memory measurement.
const MEMORY_OBJECTS: usize = 10_000;
/// Revisions of history of the memory measurement (creates included).
const MEMORY_REVISIONS: usize = 100_000;
/// The retained history per single-object update that DESIGN.md section 9 targets.
const TARGET_BYTES_PER_UPDATE: f64 = 4096.0;
/// Objects read per list measurement: the list count is this divided by the store size, at least
/// one, so that every size lists about as many objects in total.
const LIST_OBJECTS_PER_SIZE: usize = 1_000_000;
/// Events replayed per watch measurement, likewise.
const WATCH_EVENTS_PER_SIZE: usize = 1_000_000;

/// Namespaces the objects are spread over (they exist in a fresh server).
const NAMESPACES: [&str; 2] = ["default", "kube-system"];

fn config_maps() -> ApiResource {
    let types = ResourceTypes::builtin();
    types
        .iter()
        .find(|t| t.api.group.is_empty() && t.api.plural == "configmaps")
        .expect("built in")
        .api
        .clone()
}

/// The bytes currently allocated by the process.
fn live_bytes() -> i64 {
    let s = ALLOCATOR.stats();
    let total = i128::try_from(s.bytes_allocated).unwrap_or(i128::MAX)
        - i128::try_from(s.bytes_deallocated).unwrap_or(0)
        + i128::try_from(s.bytes_reallocated).unwrap_or(0);
    i64::try_from(total).unwrap_or(i64::MAX)
}

/// A ConfigMap with a realistic handful of small fields.
fn body(i: usize, version: usize, rv: Option<&str>) -> DynamicObject {
    let ns = NAMESPACES[i % NAMESPACES.len()];
    let mut v = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:06}"), "namespace": ns, "labels": {"app": "bench", "shard": (i % 16).to_string()}},
        "data": {"config.yaml": format!("replicas: {}\nversion: {version}\n", i % 7), "version": version.to_string()}
    });
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = serde_json::json!(rv);
    }
    serde_json::from_value(v).expect("ConfigMap body")
}

/// A server, its id source and its clock, with the objects' current resourceVersions.
struct Bench {
    server: ApiServer,
    ids: SeqIds,
    now: jiff::Timestamp,
    cm: ApiResource,
    rvs: Vec<String>,
}

impl Bench {
    fn new(history_revisions_max: usize) -> Bench {
        let mut ids = SeqIds::default();
        let now = jiff::Timestamp::from_second(1_767_225_600).expect("valid time");
        let config = ServerConfig { history_revisions_max, ..ServerConfig::default() };
        let server = ApiServer::with_config(config).with_default_namespaces(&mut Context::new(now, &mut ids));
        Bench { server, ids, now, cm: config_maps(), rvs: Vec::new() }
    }

    fn handle(&mut self, request: Request) -> Response {
        match self.server.handle(request, &mut Context::new(self.now, &mut self.ids)) {
            Ok(r) => r,
            Err(e) => panic!("benchmark request failed: {} {}: {}", e.code, e.reason, e.message),
        }
    }

    fn rv_of(response: &Response) -> String {
        response.object().and_then(|o| o.metadata.resource_version.clone()).expect("written object has an rv")
    }

    /// Create objects `0..n`; returns the time spent in the server.
    fn create(&mut self, n: usize) -> Duration {
        let requests: Vec<Request> = (0..n)
            .map(|i| {
                Request::create(
                    &self.cm,
                    Some(NAMESPACES[i % NAMESPACES.len()]),
                    body(i, 0, None),
                    PostParams::default(),
                )
            })
            .collect();
        let start = Instant::now();
        for r in requests {
            let response = self.handle(r);
            self.rvs.push(Self::rv_of(&response));
        }
        start.elapsed()
    }

    /// Update `count` objects round robin to `version`; returns the time spent in the server.
    fn update(&mut self, count: usize, version: usize) -> Duration {
        let n = self.rvs.len();
        let mut elapsed = Duration::ZERO;
        // Bodies carry the current resourceVersion, so they are built in batches between timings.
        const BATCH: usize = 10_000;
        let mut done = 0;
        while done < count {
            let batch: Vec<(usize, Request)> = (done..count.min(done + BATCH))
                .map(|k| {
                    let i = k % n;
                    let ns = NAMESPACES[i % NAMESPACES.len()];
                    let name = format!("cm-{i:06}");
                    let obj = body(i, version + k / n, Some(&self.rvs[i]));
                    (i, Request::update(&self.cm, Some(ns), &name, obj, PostParams::default()))
                })
                .collect();
            let start = Instant::now();
            for (i, r) in batch {
                let response = self.handle(r);
                self.rvs[i] = Self::rv_of(&response);
            }
            elapsed += start.elapsed();
            done = count.min(done + BATCH);
        }
        elapsed
    }

    fn get(&mut self, n: usize) -> Duration {
        let requests: Vec<Request> = (0..n)
            .map(|i| {
                let ns = NAMESPACES[i % NAMESPACES.len()];
                Request::get(&self.cm, Some(ns), &format!("cm-{i:06}"), GetParams::default())
            })
            .collect();
        let start = Instant::now();
        for r in requests {
            black_box(self.handle(r));
        }
        start.elapsed()
    }

    /// `times` lists of every ConfigMap; returns the time and the objects listed.
    fn list(&mut self, times: usize) -> (Duration, usize) {
        let mut objects = 0;
        let start = Instant::now();
        for _ in 0..times {
            if let Response::List(l) = self.handle(Request::list(&self.cm, None, ListParams::default())) {
                objects += l.items.len();
            }
        }
        (start.elapsed(), objects)
    }

    /// `times` watches from `from` (replaying every later event); returns the time and the events.
    fn watch(&mut self, from: u64, times: usize) -> (Duration, usize) {
        let mut events = 0;
        let rv = from.to_string();
        let start = Instant::now();
        for _ in 0..times {
            if let Response::Watch(w) =
                self.handle(Request::watch(&self.cm, None, &rv, WatchParams::default()))
            {
                events += w.len();
            }
        }
        (start.elapsed(), events)
    }
}

fn per_second(ops: usize, d: Duration) -> String {
    let rate = ops as f64 / d.as_secs_f64().max(1e-9);
    if rate >= 1e6 { format!("{:.2}M", rate / 1e6) } else { format!("{:.0}k", rate / 1e3) }
}

fn throughput_row(n: usize) -> String {
    // Keep every revision of the run so that a watch from the start still replays.
    let mut b = Bench::new(2 * n + 16);
    let start_revision = b.server.revision();
    let create = b.create(n);
    let update = b.update(n, 1);
    let get = b.get(n);
    let (list, listed) = b.list((LIST_OBJECTS_PER_SIZE / n).max(1));
    let (watch, events) = b.watch(start_revision, (WATCH_EVENTS_PER_SIZE / (2 * n)).max(1));
    format!(
        "{n:>8} {:>11} {:>11} {:>11} {:>9.1} {:>13} {:>15}",
        per_second(n, create),
        per_second(n, update),
        per_second(n, get),
        listed as f64 / n as f64 / list.as_secs_f64().max(1e-9),
        per_second(listed, list),
        per_second(events, watch),
    )
}

fn mib(bytes: f64) -> String {
    let mib = bytes / (1024.0 * 1024.0);
    if mib >= 10.0 * 1024.0 { format!("{:.1} GiB", mib / 1024.0) } else { format!("{mib:.1} MiB") }
}

fn memory_report() {
    // One full copy of the state: the same objects in a server that keeps a single revision.
    let before = live_bytes();
    let mut single = Bench::new(1);
    single.create(MEMORY_OBJECTS);
    single.update(MEMORY_OBJECTS, 1);
    let one_copy = (live_bytes() - before) as f64;
    drop(single);

    let before = live_bytes();
    let mut b = Bench::new(MEMORY_REVISIONS + 16);
    b.create(MEMORY_OBJECTS);
    let after_creates = live_bytes();
    b.update(MEMORY_REVISIONS - MEMORY_OBJECTS, 1);
    let held = (live_bytes() - before) as f64;
    let updates = (MEMORY_REVISIONS - MEMORY_OBJECTS) as f64;
    let per_update = (live_bytes() - after_creates) as f64 / updates;
    let full_copies = one_copy * MEMORY_REVISIONS as f64;
    println!();
    println!(
        "memory: {MEMORY_OBJECTS} ConfigMaps, {MEMORY_REVISIONS} revisions of history (creates included)"
    );
    println!("  held by the server (live heap bytes)       {:>12}", mib(held));
    println!("  one copy of the state (history of 1)       {:>12}", mib(one_copy));
    println!("  estimate: a full copy per revision         {:>12}", mib(full_copies));
    println!("  held / full-copy estimate                  {:>12.5}", held / full_copies);
    println!(
        "  retained per single-object update          {:>8.0} B   (target <= {TARGET_BYTES_PER_UPDATE:.0} B)",
        per_update
    );
    println!(
        "    of which one stored object version        {:>8.0} B   (one copy / objects)",
        one_copy / MEMORY_OBJECTS as f64
    );
    println!(
        "  revisions retained by the server           {:>12}",
        b.server.revision() - b.server.oldest_revision() + 1
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a harness-less binary ignores its arguments.
    println!("model-apiserver: operations per second, applied directly (wall time, one thread)");
    println!(
        "{:>8} {:>11} {:>11} {:>11} {:>9} {:>13} {:>15}",
        "objects", "create/s", "update/s", "get/s", "lists/s", "listed obj/s", "watch events/s"
    );
    for n in SIZES {
        println!("{}", throughput_row(n));
    }
    memory_report();
}
