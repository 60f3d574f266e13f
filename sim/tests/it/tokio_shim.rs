//! Controller code written against tokio runs on the simulation unchanged: with kube-sim's tokio
//! shim renamed as `tokio` in Cargo.toml (`tokio = { package = "kube-sim-tokio", .. }`, madsim's
//! tokio shim with a deterministic `select!`, see tokio_select.rs; as this crate's
//! dev-dependencies do), `tokio::spawn`, `tokio::time::{sleep, interval, timeout,
//! Instant}`, `std::time::SystemTime::now()` and `jiff::Timestamp::now()` all run on the seed's
//! virtual clock and scheduler. A ten-minute sleep costs no real time, and the same seed gives the
//! same readings and the same digest.
//!
//! `SystemTime::now()` (and `jiff::Timestamp::now()`, which reads it) is madsim's virtual wall
//! clock: it advances exactly with virtual time, but madsim 0.2 starts it at a seeded instant of
//! 2022, not at the engine's epoch (2026-01-01T00:00:00Z, `sim::world::EPOCH_UNIX_SECONDS`) that
//! `sim::time::now()` and the API server's timestamps use. The two differ by a constant offset
//! within a run; docs/porting.md says which to use where.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, Patch, PatchParams};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, RunReport, Sim, SimBuilder, Verdict};

#[path = "common/mod.rs"]
mod common;

/// The error type of a controller that never fails.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// What the controller saw, one line per reading.
type Seen = Arc<Mutex<Vec<String>>>;

/// The background task of the controller's main: five heartbeats on a 30-second tokio interval.
const HEARTBEATS: u32 = 5;
const HEARTBEAT_PERIOD: Duration = Duration::from_secs(30);
/// The long wait of the reconcile, done by a task spawned with `tokio::spawn`.
const LONG_WAIT: Duration = Duration::from_secs(600);

/// A reconcile of the `job` ConfigMap written as tokio code: a timeout that fires, a spawned task
/// that sleeps ten minutes, awaited under a timeout that does not fire; then the clocks' readings
/// are written back.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<(Api<ConfigMap>, Seen)>) -> Result<Action, Never> {
    let (api, seen) = &*ctx;
    if cm.data.as_ref().is_some_and(|d| d.contains_key("done")) {
        return Ok(Action::await_change());
    }
    let (instant, system, jiff_now, engine) =
        (tokio::time::Instant::now(), SystemTime::now(), jiff::Timestamp::now(), sim::time::now());
    let expired = tokio::time::timeout(Duration::from_secs(1), tokio::time::sleep(LONG_WAIT)).await;
    let after_timeout = instant.elapsed();
    let sleeper = tokio::spawn(async move {
        tokio::time::sleep(LONG_WAIT).await;
        "slept"
    });
    let joined = tokio::time::timeout(LONG_WAIT * 2, sleeper).await;
    let line = |what: &str, d: Duration| format!("{what} {}ms", d.as_millis());
    let system_elapsed = SystemTime::now().duration_since(system).unwrap_or_default();
    let jiff_elapsed =
        Duration::try_from(jiff::Timestamp::now().duration_since(jiff_now)).unwrap_or_default();
    let engine_elapsed = Duration::try_from(sim::time::now().duration_since(engine)).unwrap_or_default();
    let offset =
        |jiff_now: jiff::Timestamp, engine: jiff::Timestamp| jiff_now.duration_since(engine).as_secs();
    let offset_kept = offset(jiff_now, engine) == offset(jiff::Timestamp::now(), sim::time::now());
    seen.lock().unwrap().extend([
        format!("timeout of a 10-minute sleep after 1s: elapsed={}", expired.is_err()),
        line("after the timeout", after_timeout),
        format!("spawned task joined within 20 minutes: {:?}", joined.map(|j| j.ok())),
        line("tokio Instant", instant.elapsed()),
        line("SystemTime", system_elapsed),
        line("jiff Timestamp", jiff_elapsed),
        line("sim::time", engine_elapsed),
        format!("offset of SystemTime from sim::time kept: {offset_kept}"),
        format!("SystemTime::now {:?}", jiff::Timestamp::now()),
    ]);
    let patch = serde_json::json!({ "data": { "done": "yes" } });
    api.patch("job", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    Ok(Action::await_change())
}

fn world(seen: Seen) -> SimBuilder {
    Sim::builder()
        .time_limit(Duration::from_secs(3_600))
        .controller("tokio-controller", move |clients: Clients| {
            let seen = seen.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                // A background task of main, as a controller's metrics or heartbeat loop would be.
                let beats = seen.clone();
                let start = tokio::time::Instant::now();
                tokio::spawn(async move {
                    let mut every = tokio::time::interval(HEARTBEAT_PERIOD);
                    for _ in 0..HEARTBEATS {
                        every.tick().await;
                        beats.lock().unwrap().push(format!("heartbeat at {}s", start.elapsed().as_secs()));
                    }
                });
                Controller::new(api.clone(), watcher::Config::default())
                    .run(reconcile, |_, _: &Never, _| Action::await_change(), Arc::new((api, seen)))
                    .for_each(|_| async {})
                    .await;
            }
        })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            w.apply(&api, &common::config_map("job", "1")).await?;
            let done = |cm: Option<&ConfigMap>| {
                cm.and_then(|c| c.data.as_ref()).is_some_and(|d| d.contains_key("done"))
            };
            w.wait_for(&api, "job", done, Duration::from_secs(1_200)).await
        })
}

fn run(seed: u64) -> (RunReport, Vec<String>) {
    let seen: Seen = Arc::default();
    let report = world(seen.clone()).run(seed);
    let lines = seen.lock().unwrap().clone();
    (report, lines)
}

#[test]
fn tokio_timers_spawn_and_the_system_clock_run_on_virtual_time() {
    let (report, lines) = run(5);
    assert_eq!(report.verdict, Verdict::Pass, "{lines:?}");
    let heartbeats: Vec<&str> =
        lines.iter().map(String::as_str).filter(|l| l.starts_with("heartbeat")).collect();
    // tokio's interval ticks at once, then every period: 0, 30, 60, 90, 120 s of virtual time.
    assert_eq!(
        heartbeats,
        ["heartbeat at 0s", "heartbeat at 30s", "heartbeat at 60s", "heartbeat at 90s", "heartbeat at 120s"]
    );
    let readings: Vec<&str> =
        lines.iter().map(String::as_str).filter(|l| !l.starts_with("heartbeat")).collect();
    // The timeout fired after its second; the spawned ten-minute sleep then finished under the
    // 20-minute timeout; every clock saw the same 601 virtual seconds (madsim adds a few
    // nanoseconds of its own to a sleep, hence milliseconds).
    assert_eq!(
        readings[..8],
        [
            "timeout of a 10-minute sleep after 1s: elapsed=true",
            "after the timeout 1000ms",
            "spawned task joined within 20 minutes: Ok(Some(\"slept\"))",
            "tokio Instant 601000ms",
            "SystemTime 601000ms",
            "jiff Timestamp 601000ms",
            "sim::time 601000ms",
            "offset of SystemTime from sim::time kept: true",
        ]
    );
}

#[test]
fn the_same_seed_gives_the_same_tokio_readings_and_digest() {
    let (first, first_lines) = run(11);
    let (second, second_lines) = run(11);
    assert_eq!(first.verdict, Verdict::Pass);
    assert_eq!(first_lines, second_lines);
    assert_eq!(first.digest, second.digest);
    // The system clock's origin is madsim's, drawn from the seed: another seed reads another one.
    let (_, other_lines) = run(12);
    assert_ne!(first_lines.last(), other_lines.last(), "{first_lines:?} {other_lines:?}");
}
