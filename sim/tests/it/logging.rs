//! The tests of `sim::logging` (its former unit tests: the library has no test harness).

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::Dispatch;

use sim::logging::*;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Captured {
    type Writer = Captured;
    fn make_writer(&'w self) -> Captured {
        self.clone()
    }
}

/// Runs a small world on a fresh thread (as a sweep does), logging through `directives`.
fn run_logged(directives: &str) -> String {
    let captured = Captured::default();
    let dispatch = Dispatch::new(subscriber(directives, captured.clone()));
    std::thread::scope(|scope| scope.spawn(|| run_world(&dispatch)).join()).expect("the run finishes");
    let bytes = captured.0.lock().expect("not poisoned").clone();
    String::from_utf8(bytes).expect("utf-8 logs")
}

fn run_world(dispatch: &Dispatch) {
    let _guard = tracing::dispatcher::set_default(dispatch);
    let runtime = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
    runtime.block_on(async {
        let node = madsim::runtime::Handle::current().create_node().name("ctrl").build();
        node.spawn(async {
            madsim::time::sleep(Duration::from_millis(12)).await;
            tracing::info!(object = "default/a", "reconciled");
            tracing::debug!("detail");
        })
        .await
        .expect("the task finishes");
        // madsim::time::sleep sleeps at least 1 ms, so the main node's event comes later.
        tracing::warn!("done");
    });
}

#[test]
fn events_carry_virtual_time_and_the_node_name() {
    let logs = run_logged("info");
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 2, "{logs}");
    assert!(
        lines[0].starts_with("[      12.")
            && lines[0].contains("ms] ctrl        INFO it::logging: reconciled object=\"default/a\""),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("madsim-main  WARN it::logging: done"), "{}", lines[1]);
}

#[test]
fn rust_log_directives_filter_events_but_keep_the_node() {
    let logs = run_logged("it=debug");
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 3, "{logs}");
    assert!(lines[1].contains(" ctrl       DEBUG it::logging: detail"), "{}", lines[1]);
    let quiet = run_logged("warn");
    assert_eq!(quiet.lines().count(), 1, "{quiet}");
}

/// The iteration order of a std HashMap filled inside a madsim runtime of seed 7, on a fresh
/// thread that first installs the single-seed log subscriber.
#[allow(clippy::disallowed_types)] // The point: std's hash order must come from madsim's seed.
fn hash_order_after_single_seed_logging() -> Vec<u32> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let _logs = init_for_run(true);
                let runtime = madsim::runtime::Runtime::with_seed_and_config(7, madsim::Config::default());
                runtime.block_on(async {
                    let map: std::collections::HashMap<u32, ()> = (0..64).map(|i| (i, ())).collect();
                    map.into_keys().collect()
                })
            })
            .join()
    })
    .expect("the run finishes")
}

#[test]
fn a_single_seed_log_subscriber_leaves_std_hash_order_to_madsims_seed() {
    // Building the filter on the run's own thread would seed its std hash keys from the OS
    // before madsim could, and the order would differ between the two runs.
    assert_eq!(hash_order_after_single_seed_logging(), hash_order_after_single_seed_logging());
}

#[test]
fn a_sweep_run_is_quiet() {
    let _guard = init_for_run(false);
    assert!(!tracing::enabled!(tracing::Level::ERROR));
}
