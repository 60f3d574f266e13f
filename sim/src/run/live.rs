//! The live run loop ([`SimBuilder::run_live`]): the declared controllers on a madsim runtime
//! whose virtual time is paced to the wall clock, against a shared model (see [`crate::live`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::builder::SimBuilder;
use crate::verdict::Verdict;
use crate::world::live::{LiveCluster, SharedCluster, StopHandle, TICK};

impl SimBuilder {
    /// Run the declared controllers live against `cluster` until `stop` is stopped or a
    /// controller panics, on a fresh madsim runtime on the calling thread (give it a thread of its
    /// own: it blocks). The first declared cluster is `cluster`; calls to any other get 500.
    ///
    /// Answers [`Verdict::Pass`] when stopped, or the [`Verdict::Crash`] of the controller that
    /// panicked. The workload, properties, faults and time limits of the builder do not apply.
    ///
    /// # Panics
    ///
    /// If the crate was built without `--cfg madsim` (see [`crate::ensure_simulated`]).
    pub fn run_live(&self, cluster: Arc<dyn SharedCluster>, stop: &StopHandle) -> Verdict {
        crate::runner::ensure_simulated();
        #[cfg(madsim)]
        {
            run(self, cluster, stop)
        }
        #[cfg(not(madsim))]
        {
            let _ = (cluster, stop);
            unreachable!("ensure_simulated panics in a build without --cfg madsim")
        }
    }
}

#[cfg(madsim)]
fn run(builder: &SimBuilder, cluster: Arc<dyn SharedCluster>, stop: &StopHandle) -> Verdict {
    use std::panic::AssertUnwindSafe;
    use std::sync::Mutex;

    use crate::world::World;

    // Read outside the runtime, where the clock is still the real one.
    let wall_start = cluster.now();
    let scale = cluster.time_scale().max(1);
    let seed = u64::try_from(wall_start.as_nanosecond().rem_euclid(1 << 63)).unwrap_or_default();
    let runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    let world = World::new(crate::decision::DecisionSource::new(seed), false, Arc::from(Vec::new()));
    let specs = builder.cluster_specs();
    let live = LiveCluster::new(cluster);
    world.with(|w| {
        w.recorder().set_epoch(wall_start);
        w.add_live(specs[0].name.clone(), live);
    });
    // Controller code finds the run through this (`sim::random`, `sim::time`), as in a simulated run.
    let _ambient = crate::ambient::Enter::new(&world);
    let names: Arc<[Arc<str>]> = specs.iter().map(|s| s.name.clone()).collect();
    let nodes: Arc<Mutex<Vec<madsim::task::NodeId>>> = Arc::default();
    let wall = WallClock::start();
    let pacing = Pacing { stop: stop.clone(), wall_elapsed: wall.elapsed.clone(), scale };
    let main = pace(builder.clone(), world.clone(), names, nodes.clone(), pacing);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(main)));
    wall.stop();
    super::shut_down(runtime, &nodes);
    let failure = world.with(|w| {
        w.clear_live();
        w.take_failure()
    });
    failure.unwrap_or_else(|| match outcome {
        Ok(()) => Verdict::Pass,
        // A live run is not rerun: an exit that met another thread's is reported as such.
        Err(payload) if payload.is::<crate::process_exit::ExitCollision>() => Verdict::Crash {
            node: "engine".to_owned(),
            object: None,
            message: "std::process::exit met another thread's exit in the same instant".to_owned(),
        },
        Err(payload) => crate::process_exit::verdict_for_unwind(&*payload, "engine", None),
    })
}

/// The wall time elapsed since a live run started, for its pacer: madsim answers the clock calls
/// of the runtime's own thread with virtual time, so a thread of its own, outside the runtime,
/// reads the real clock every millisecond. Live runs only: a simulated run has no real clock.
#[cfg(madsim)]
struct WallClock {
    /// Microseconds since the start.
    elapsed: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[cfg(madsim)]
impl WallClock {
    fn start() -> WallClock {
        let elapsed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (e, s) = (elapsed.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("live-wall-clock".to_owned())
            .spawn(move || {
                let start = std::time::Instant::now();
                while !s.load(Ordering::Acquire) {
                    e.store(
                        u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX),
                        Ordering::Release,
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .ok();
        WallClock { elapsed, stop, thread }
    }
    fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the pacer reads each round.
#[cfg(madsim)]
struct Pacing {
    stop: StopHandle,
    /// The wall time elapsed since the start ([`WallClock`]).
    wall_elapsed: Arc<std::sync::atomic::AtomicU64>,
    /// Virtual time runs this many times as fast as the wall clock.
    scale: u32,
}

/// The main task: start the controllers, then pace virtual time to the wall clock (times the
/// cluster's time scale) until stopped.
#[cfg(madsim)]
async fn pace(
    builder: SimBuilder,
    world: crate::world::World,
    names: Arc<[Arc<str>]>,
    nodes: Arc<std::sync::Mutex<Vec<madsim::task::NodeId>>>,
    pacing: Pacing,
) {
    let Pacing { stop, wall_elapsed, scale } = pacing;
    let virtual_start = madsim::time::Instant::now();
    world.with(|w| w.recorder().restart_clock());
    let handle = madsim::runtime::Handle::current();
    for spec in &builder.controllers {
        let id = super::start_controller_node(&handle, spec, &world, &names, &nodes);
        nodes.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    }
    // Unbounded by design: a live run lasts until `stop` (checked every round) or a crash.
    while !stop.is_stopped() && world.with(|w| !w.has_failed()) {
        std::thread::sleep(TICK);
        // Let pass the virtual time the wall clock is ahead by: the round's sleep, and the
        // controllers' compute time, which a fixed step would lose, so that the run's clock
        // drifted behind the wall clock the other writers stamp with.
        // (A wall clock that could not start leaves the fixed step.)
        let wall = Duration::from_micros(wall_elapsed.load(Ordering::Acquire)).saturating_mul(scale);
        let behind = if wall.is_zero() { TICK } else { wall.saturating_sub(virtual_start.elapsed()) };
        madsim::time::sleep(behind.max(Duration::from_millis(1))).await;
        world.with(|w| w.wake_live_if_moved());
    }
}
