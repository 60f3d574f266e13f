//! `sim::random` and `sim::time`: controller code draws from the run's decision source and reads
//! the run's virtual wall clock, so the same seed gives the same values (and the same digest),
//! draws are recorded choices, and outside a run nothing panics.

#[path = "common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, Patch, PatchParams};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, RunReport, Sim, SimBuilder, Verdict};

use common::config_map;

/// The error type of controllers that never fail.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// What the controller saw, one line per reconcile.
type Seen = Arc<Mutex<Vec<String>>>;

/// A controller that, on each ConfigMap, draws values and reads the clock, records them, and
/// writes the clock into the ConfigMap's data (once), as a controller stamping a time would.
fn world(seen: Seen) -> SimBuilder {
    Sim::builder()
        .controller("stamper", move |clients: Clients| {
            let seen = seen.clone();
            async move {
                let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
                let ctx = Arc::new((api.clone(), seen));
                Controller::new(api, watcher::Config::default())
                    .run(
                        |cm: Arc<ConfigMap>, ctx: Arc<(Api<ConfigMap>, Seen)>| async move {
                            let (api, seen) = &*ctx;
                            let jitter = sim::random::duration_between(
                                Duration::from_millis(100),
                                Duration::from_millis(900),
                            );
                            let line = format!(
                                "{} {} {} {:?} {}",
                                cm.metadata.name.as_deref().unwrap_or(""),
                                sim::random::u64(),
                                sim::random::in_stream("stamper.own").below(1_000),
                                jitter,
                                sim::time::now(),
                            );
                            seen.lock().unwrap().push(line);
                            if !cm.data.as_ref().is_some_and(|d| d.contains_key("stamped")) {
                                madsim::time::sleep(jitter).await;
                                let stamp = sim::time::now_k8s().0.to_string();
                                let patch = serde_json::json!({ "data": { "stamped": stamp } });
                                let name = cm.metadata.name.clone().unwrap_or_default();
                                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                                    .await
                                    .unwrap();
                            }
                            Ok::<_, Never>(Action::await_change())
                        },
                        |_, _: &Never, _| Action::await_change(),
                        ctx,
                    )
                    .for_each(|_| async {})
                    .await;
            }
        })
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            for name in ["a", "b", "c"] {
                w.apply(&api, &config_map(name, "1")).await?;
            }
            Ok(())
        })
}

fn run(seed: u64) -> (RunReport, Vec<String>) {
    let seen: Seen = Arc::default();
    let report = world(seen.clone()).record_choices(true).run(seed);
    let lines = seen.lock().unwrap().clone();
    (report, lines)
}

#[test]
fn the_same_seed_draws_the_same_values_and_reads_the_same_clock() {
    for seed in 0..3 {
        let (first, first_lines) = run(seed);
        let (second, second_lines) = run(seed);
        assert_eq!(first.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(first_lines.len(), 6, "seed {seed}: {first_lines:?}");
        assert_eq!(first_lines, second_lines, "seed {seed}");
        assert_eq!(first.digest, second.digest, "seed {seed}");
    }
    let (_, other) = run(100);
    assert_ne!(run(0).1, other, "two seeds drew the same values");
}

#[test]
fn draws_are_recorded_choices_of_their_streams() {
    let (report, _) = run(7);
    let choices = report.choices.expect("the run records its choices");
    let count = |stream: &str| choices.choices.iter().filter(|c| c.stream == stream).count();
    // Each of the 6 reconciles draws a duration and 64 bits from the default stream, and one
    // number from its own.
    assert_eq!(count(sim::random::STREAM), 12);
    assert_eq!(count("stamper.own"), 6);
}

#[test]
fn the_virtual_clock_is_the_epoch_plus_the_virtual_time_elapsed() {
    let seen: Seen = Arc::default();
    let probe = seen.clone();
    let report = Sim::builder()
        .workload(move |w| {
            let probe = probe.clone();
            async move {
                let epoch = jiff::Timestamp::from_second(sim::world::EPOCH_UNIX_SECONDS).unwrap();
                let on_clock = |elapsed: Duration| epoch + jiff::SignedDuration::try_from(elapsed).unwrap();
                let (start, start_elapsed) = (sim::time::now(), sim::time::elapsed().unwrap());
                w.sleep(Duration::from_millis(1_500)).await;
                let (later, later_elapsed) = (sim::time::now(), sim::time::elapsed().unwrap());
                probe.lock().unwrap().extend([
                    (start == on_clock(start_elapsed) && later == on_clock(later_elapsed)).to_string(),
                    // madsim adds a few nanoseconds of its own to a sleep.
                    (later_elapsed - start_elapsed).as_millis().to_string(),
                    sim::time::is_simulated().to_string(),
                    sim::random::is_simulated().to_string(),
                ]);
                Ok(())
            }
        })
        .run(3);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(*seen.lock().unwrap(), vec!["true", "1500", "true", "true"]);
}

#[test]
fn outside_a_run_draws_and_the_clock_work_without_panicking() {
    assert!(!sim::random::is_simulated());
    assert!(!sim::time::is_simulated());
    assert_eq!(sim::time::elapsed(), None);
    assert_eq!(sim::random::below(0), 0);
    assert!(sim::random::below(10) < 10);
    let (lo, hi) = (Duration::from_millis(5), Duration::from_millis(7));
    let d = sim::random::duration_between(hi, lo);
    assert!(lo <= d && d <= hi, "{d:?}");
    // The real clock: after the virtual epoch of every run (2026-01-01), since this test was
    // written later.
    assert!(sim::time::now().as_second() > sim::world::EPOCH_UNIX_SECONDS);
}
