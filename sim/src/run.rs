//! Running one seed of a declared world on a fresh madsim runtime.
//!
//! One run goes through fixed phases:
//! 1. the clusters are created (namespaces `default`, `kube-system`, `kube-public`,
//!    `kube-node-lease`, then CRDs);
//! 2. every controller starts on its own madsim node, so that killing the node loses its
//!    informers, caches and work queue, as a crash does;
//! 3. the workload runs on its own node, to completion;
//! 4. the liveness phase waits, within [`SimBuilder::liveness_wait`], until the world is quiet: no
//!    server write for the quiet period, every informer caught up with its server, no reconcile
//!    running or due within the quiet period, and no requeue pending but idle ones: virtual time
//!    advances until each has run (up to [`LIVENESS_REQUEUES_MAX`], within the time limit). A
//!    requeue is idle when the reconcile that asked for it was itself started by a requeue and
//!    changed nothing (see [`crate::controller`]);
//! 5. the end-state properties are checked;
//! 6. every node is killed before the runtime is dropped (madsim leaks parked tasks otherwise).
//!
//! All per-run state (servers, decision source, trace, counters) lives in one
//! [`World`](crate::world::World) made per run; no static holds per-run state.

mod live;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::LocalBoxFuture;

use crate::builder::{ClusterSpec, ControllerSpec, SimBuilder};
use crate::client::Clients;
use crate::decision::ChoiceMode;
use crate::generate::WorkloadSource;
use crate::quiescence::LIVENESS_REQUEUES_MAX;
use crate::run_options::RunOptions;
use crate::runner::panic_message;
use crate::verdict::{RunReport, Verdict};
use crate::workload::{Workload, WorkloadError};
use crate::world::{DEFAULT_CLUSTER, WORKLOAD_NODE, World};

impl SimBuilder {
    /// What this world's nodes do in a fault-free run at [`PROFILE_SEED`]: their informers and how
    /// those list, their calls, writes, reconciles and Leases. Swarm selection draws a fault only
    /// on a controller it can act on, by this profile. Measured once per builder (on a fresh
    /// thread, like every run), and again after a change to the controllers or the workload.
    ///
    /// [`PROFILE_SEED`]: crate::faults::profile::PROFILE_SEED
    pub fn fault_profile(&self) -> Arc<crate::faults::profile::Profile> {
        self.profile
            .get_or_init(|| {
                let mut builder = self.clone().faults(crate::faults::FaultPlan::none()).keep_trace(false);
                builder.choices = ChoiceMode::Off;
                let seed = crate::faults::profile::PROFILE_SEED;
                let report = crate::runner::on_fresh_thread("sim-profile", || builder.run(seed));
                Arc::new(report.map(|r| r.profile).unwrap_or_default())
            })
            .clone()
    }

    /// The swarm this builder draws each seed's plan from, with its controllers and profile filled
    /// in (`None` for a world with a fixed plan or no faults): what a search that draws its own
    /// plans ([`crate::explore::coverage_swarm`]) draws from.
    pub fn swarm_with_profile(&self) -> Option<crate::faults::SwarmConfig> {
        let crate::faults::FaultSource::Swarm(config) = &self.faults else { return None };
        let mut config = config.clone();
        if config.controllers.is_empty() {
            config.controllers = self.controller_names();
        }
        if config.profile.is_none() {
            config.profile = Some(self.fault_profile());
        }
        Some(config)
    }

    /// Run one seed on a fresh madsim runtime, on the calling thread: [`SimBuilder::run_with`]
    /// with the default options.
    ///
    /// # Panics
    ///
    /// If the crate was built without `--cfg madsim` (see [`crate::ensure_simulated`]).
    pub fn run(&self, seed: u64) -> RunReport {
        self.run_with(seed, &RunOptions::default())
    }

    /// Run one seed on a fresh madsim runtime, on the calling thread, with the options of whoever
    /// runs it: a sweep's closure passes on the options it receives, so that the determinism
    /// self-check's recorded choices reach its second run (see [`RunOptions`]).
    ///
    /// # Panics
    ///
    /// If the crate was built without `--cfg madsim` (see [`crate::ensure_simulated`]).
    pub fn run_with(&self, seed: u64, options: &RunOptions) -> RunReport {
        crate::runner::ensure_simulated();
        #[cfg(madsim)]
        {
            self.run_simulated(seed, options)
        }
        #[cfg(not(madsim))]
        {
            unreachable!("ensure_simulated panics in a build without --cfg madsim (seed {seed}, {options:?})")
        }
    }

    /// The builder a run of `seed` uses: with the seed's generated workload, if generated per seed.
    #[cfg(madsim)]
    fn for_seed(&self, seed: u64) -> SimBuilder {
        let mut builder = self.clone();
        if let Some(source @ WorkloadSource::PerSeed { .. }) = &self.generated {
            builder.workload = Some(source.script_for_seed(seed));
        }
        builder
    }

    /// The clusters of `specs` (this builder's [`Self::cluster_specs`]) as every run starts
    /// them: installed by the first run that asks, then shared.
    fn installed(&self, specs: &[ClusterSpec]) -> Arc<[crate::cluster::InstalledCluster]> {
        let install = || {
            let epoch =
                jiff::Timestamp::from_second(crate::world::EPOCH_UNIX_SECONDS).expect("a valid epoch");
            let installed = specs.iter().enumerate().map(|(index, spec)| {
                let config = &self.server_config;
                crate::cluster::InstalledCluster::new(index, &spec.name, &spec.crds, config, epoch)
            });
            installed.collect()
        };
        self.installed.get_or_init(install).clone()
    }

    /// The declared clusters, or the implicit `default` one.
    fn cluster_specs(&self) -> Vec<ClusterSpec> {
        if self.clusters.is_empty() {
            vec![ClusterSpec { name: Arc::from(DEFAULT_CLUSTER), crds: Vec::new() }]
        } else {
            self.clusters.clone()
        }
    }

    #[cfg(madsim)]
    fn run_simulated(&self, seed: u64, options: &RunOptions) -> RunReport {
        // A simulated `std::process::exit` that met another thread's exit in the same instant
        // cannot finish; the run is deterministic, so it is run again (see `process_exit`).
        const COLLISION_RETRIES_MAX: usize = 16;
        crate::process_exit::prepare();
        let mut attempt = 0;
        loop {
            match self.run_simulated_once(seed, options) {
                Some(report) => return report,
                None if attempt < COLLISION_RETRIES_MAX => attempt += 1,
                None => panic!("seed {seed}: {COLLISION_RETRIES_MAX} runs met another thread's exit"),
            }
        }
    }

    /// One run of `seed`, `None` if a simulated exit collided with another thread's.
    #[cfg(madsim)]
    fn run_simulated_once(&self, seed: u64, options: &RunOptions) -> Option<RunReport> {
        use std::panic::AssertUnwindSafe;

        // A single-seed run (SIM_SEED) keeps its trace and lets panics print; a sweep stays quiet.
        let keep_trace = self.keep_trace || options.keep_trace;
        // Measured before this run's runtime starts (on its own thread), so that it is the same
        // profile whichever run asks first.
        let swarm = self.swarm_with_profile();
        let _quiet = crate::panic_quiet::QuietPanics::enter(!keep_trace);
        let mut runtime = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        runtime.set_time_limit(self.time_limit);
        let specs = self.cluster_specs();
        // A sweep's self-check asks its first run to record its choices and its second to replay them.
        let choices = options.choices.as_ref().unwrap_or(&self.choices);
        let world = World::new(choices.source(seed), keep_trace, self.properties.clone().into());
        // Controller code finds the run through this (sim::random, sim::time) until the seed ends.
        let _ambient = crate::ambient::Enter::new(&world);
        if let Some(hook) = &self.fault_hook {
            world.with(|w| w.set_hook(hook(seed)));
        }
        let nodes: Arc<Mutex<Vec<madsim::task::NodeId>>> = Arc::default();
        let main = run_phases(self.for_seed(seed), specs, world.clone(), nodes.clone(), swarm);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(main)));
        shut_down(runtime, &nodes);
        if outcome.as_ref().is_err_and(|payload| payload.is::<crate::process_exit::ExitCollision>()) {
            return None;
        }
        let verdict = world.with(|w| w.take_failure()).unwrap_or_else(|| match outcome {
            Ok(verdict) => verdict,
            Err(payload) => verdict_from_panic(&*payload, self.time_limit),
        });
        Some(world.finish(self.scenario.clone(), seed, verdict))
    }
}

/// The verdict for a panic that escaped `block_on`: madsim's deadlock and time-limit panics are
/// liveness failures; a simulated `std::process::exit` in a task madsim ran (a spawned one) is
/// that node's exit; anything else is a crash of the engine's own (not a controller's).
fn verdict_from_panic(payload: &(dyn std::any::Any + Send), time_limit: Duration) -> Verdict {
    let message = panic_message(payload);
    if payload.is::<crate::process_exit::ProcessExit>() {
        crate::process_exit::verdict_for_unwind(payload, "engine", None)
    } else if message.contains("no events, all tasks will block forever") {
        Verdict::Liveness { reason: format!("deadlock: {message}") }
    } else if message.contains("time limit exceeded") {
        Verdict::Liveness { reason: format!("time limit of {}s exceeded", time_limit.as_secs_f64()) }
    } else {
        Verdict::Crash { node: "engine".to_owned(), object: None, message }
    }
}

/// The main task: setup, controllers, workload, liveness phase, end checks.
#[cfg(madsim)]
async fn run_phases(
    builder: SimBuilder,
    specs: Vec<ClusterSpec>,
    world: World,
    nodes: Arc<Mutex<Vec<madsim::task::NodeId>>>,
    swarm: Option<crate::faults::SwarmConfig>,
) -> Verdict {
    use futures::future::{Either, select};

    let failure = world.with(|w| {
        w.recorder().restart_clock();
        w.install_clusters(&builder.installed(&specs));
        w.take_failure_signal()
    });
    let failure = failure.expect("the failure signal is taken once per run");
    let cluster_names: Arc<[Arc<str>]> = specs.iter().map(|s| s.name.clone()).collect();
    let handle = madsim::runtime::Handle::current();
    let source = match swarm {
        Some(config) => crate::faults::FaultSource::Swarm(config),
        None => builder.faults.clone(),
    };
    let controllers = builder.controller_names();
    let has_faults = world.with(|w| crate::faults::install_plan(&mut w.fault_ctx(), &source, &controllers));
    let mut fault_ids = crate::supervisor::NodeIds::default();
    for spec in &builder.controllers {
        let id = start_controller_node(&handle, spec, &world, &cluster_names, &nodes);
        nodes.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        fault_ids.nodes.insert(spec.name.clone(), id);
    }
    if has_faults || builder.supervised {
        let id = crate::supervisor::start(&handle, &world, fault_ids);
        nodes.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    }
    let (workload_id, workload_done) = start_workload_node(&handle, &builder, &world, &cluster_names);
    nodes.lock().unwrap_or_else(|e| e.into_inner()).push(workload_id);

    let phases = async {
        match workload_done.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Verdict::Correctness {
                    property: "workload".to_owned(),
                    message: e.to_string(),
                    at_millis: world.elapsed_millis(),
                };
            }
            // The workload node died: its panic is already recorded as the failure.
            Err(_) => return Verdict::Pass,
        }
        // Liveness phase: faults stop, crashed nodes restart, partitions heal, pauses end.
        world.with(|w| w.injector().stop());
        let bounds = (builder.liveness_wait, builder.quiet_period, builder.time_limit);
        if let Err(reason) = liveness_phase(&world, bounds).await {
            return Verdict::Liveness { reason };
        }
        world.with(|w| w.check_end())
    };
    let verdict = match select(Box::pin(phases), failure).await {
        Either::Left((verdict, _)) => verdict,
        Either::Right(_) => Verdict::Pass,
    };
    world.with(|w| {
        crate::faults::injector::report_idle(&mut w.fault_ctx());
        w.recorder().end();
    });
    verdict
}

#[cfg(madsim)]
fn start_controller_node(
    handle: &madsim::runtime::Handle,
    spec: &ControllerSpec,
    world: &World,
    clusters: &Arc<[Arc<str>]>,
    nodes: &Nodes,
) -> madsim::task::NodeId {
    let factory = spec.factory.clone();
    let world = world.clone();
    let clusters = clusters.clone();
    let name = spec.name.clone();
    let nodes = nodes.clone();
    let node = handle
        .create_node()
        .name(&*spec.name)
        .init(move || {
            let clients = Clients::new(world.clone(), name.clone(), clusters.clone());
            let factory = factory.clone();
            let (world, name, nodes) = (world.clone(), name.clone(), nodes.clone());
            async move {
                let started = world.elapsed();
                // The factory runs inside the node's task, so whatever it spawns lands on this node.
                let make: Box<dyn FnOnce() -> LocalBoxFuture<'static, ()>> =
                    Box::new(move || factory(clients));
                if guarded_node(world.clone(), name.clone(), make).await {
                    crash_loop(&world, &name, started, &nodes);
                }
            }
        })
        .build();
    node.id()
}

/// The nodes of a run, killed when it ends.
pub(crate) type Nodes = Arc<Mutex<Vec<madsim::task::NodeId>>>;

/// A controller's main future returned: its process exited, and the kubelet restarts its
/// container with CrashLoopBackOff. The node is killed now (every task it spawned ends, as a
/// process's threads do) and restarted after the back-off, by a node of its own; the trace says
/// both. Until the restart the world is not quiet, so a controller that keeps exiting fails the
/// liveness phase, named as in CrashLoopBackOff.
#[cfg(madsim)]
fn crash_loop(world: &World, name: &Arc<str>, started: Duration, nodes: &Nodes) {
    let id = madsim::plugin::node();
    let now = world.elapsed();
    let backoff = world.with(|w| w.container_exited(name, now.saturating_sub(started), now));
    let handle = madsim::runtime::Handle::current();
    let (world, name) = (world.clone(), name.clone());
    let restarter = handle
        .create_node()
        .name(format!("{name}-crashloop"))
        .init(move || {
            let (world, name, handle) = (world.clone(), name.clone(), madsim::runtime::Handle::current());
            async move {
                madsim::time::sleep(backoff).await;
                world.with(|w| w.container_restarting(&name));
                handle.restart(id);
            }
        })
        .build();
    nodes.lock().unwrap_or_else(|e| e.into_inner()).push(restarter.id());
    handle.kill(id);
}

/// Run a node's main future, turning a panic into the run's Crash verdict. Reconciles catch their
/// own panics (to name the object); this catches the rest. `true` if the future returned.
async fn guarded_node(
    world: World,
    node: Arc<str>,
    make: Box<dyn FnOnce() -> LocalBoxFuture<'static, ()>>,
) -> bool {
    use futures::FutureExt;
    world.with(|w| w.node_started(&node));
    let future = std::panic::AssertUnwindSafe(async move { make().await });
    match future.catch_unwind().await {
        Ok(()) => true,
        Err(payload) => {
            let verdict = crate::process_exit::verdict_for_unwind(&*payload, &node, None);
            world.with(|w| w.fail(verdict));
            false
        }
    }
}

#[cfg(madsim)]
fn start_workload_node(
    handle: &madsim::runtime::Handle,
    builder: &SimBuilder,
    world: &World,
    clusters: &Arc<[Arc<str>]>,
) -> (madsim::task::NodeId, futures::channel::oneshot::Receiver<Result<(), WorkloadError>>) {
    let (done_tx, done_rx) = futures::channel::oneshot::channel();
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let script = builder.workload.clone();
    let world = world.clone();
    let clusters = clusters.clone();
    let node_name: Arc<str> = Arc::from(WORKLOAD_NODE);
    let node = handle
        .create_node()
        .name(WORKLOAD_NODE)
        .init(move || {
            let clients = Clients::new(world.clone(), node_name.clone(), clusters.clone());
            let workload = Workload::new(clients);
            let script = script.clone();
            let done_tx = done_tx.clone();
            let future: LocalBoxFuture<'static, ()> = Box::pin(async move {
                let result = match script {
                    Some(script) => script(workload).await,
                    None => Ok(()),
                };
                if let Some(tx) = done_tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = tx.send(result);
                }
            });
            let (world, node_name) = (world.clone(), node_name.clone());
            async move {
                // The workload ending is the run's next phase, not an exit to restart.
                guarded_node(world, node_name, Box::new(move || future)).await;
            }
        })
        .build();
    (node.id(), done_rx)
}

/// The shortest and the usual pause between two quiescence checks: short enough to notice a quiet
/// world promptly, long enough that the liveness phase costs few wake-ups.
const LIVENESS_POLL_MIN: Duration = Duration::from_millis(10);
const _: () = assert!(LIVENESS_POLL_MIN.as_millis() > 0, "the liveness rounds bound divides by it");

/// Wait until the world is quiet, or `wait` passes (a fresh `wait` after each awaited requeue
/// runs). `Err` says why it did not quiesce. `bounds` are (wait, quiet period, time limit).
async fn liveness_phase(world: &World, bounds: (Duration, Duration, Duration)) -> Result<(), String> {
    let (wait, quiet, time_limit) = bounds;
    let start = world.elapsed();
    let mut deadline = start + wait;
    let mut requeues = 0;
    // Each round sleeps at least LIVENESS_POLL_MIN, so this bounds the rounds of each wait.
    let rounds_max =
        (wait.as_millis() / LIVENESS_POLL_MIN.as_millis() + 2) * u128::from(LIVENESS_REQUEUES_MAX + 1);
    for _ in 0..rounds_max {
        let now = world.elapsed();
        let busy = world.with(|w| w.busy(now, quiet));
        let Some(busy) = busy else {
            // Quiet but for requeues due later: one that is not idle may still write, so run it.
            let Some((due, name)) = world.with(|w| w.quiescence().awaited_requeue()) else { return Ok(()) };
            let failing = world.with(|w| w.quiescence().failing(&name));
            let why = format!(
                "controller {name} has a requeue due at {}ms that may still write (not a periodic no-op){failing}",
                due.as_millis()
            );
            if requeues >= LIVENESS_REQUEUES_MAX {
                return Err(format!(
                    "did not quiesce: {why}, after {requeues} such requeues ran in the liveness phase"
                ));
            }
            if due + quiet >= time_limit {
                return Err(format!(
                    "did not quiesce: {why}, beyond the time limit of {}s (SimBuilder::time_limit)",
                    time_limit.as_secs_f64()
                ));
            }
            requeues = requeues.saturating_add(1);
            deadline = deadline.max(due + wait);
            madsim::time::sleep(due.saturating_sub(now).max(Duration::from_nanos(1))).await;
            continue;
        };
        if now >= deadline {
            let grace = world.with(|w| w.grace_outlasting(now)).map(|g| format!("; {g}")).unwrap_or_default();
            return Err(format!("did not quiesce within {}s: {busy}{grace}", wait.as_secs_f64()));
        }
        let until_quiet = world.with(|w| (w.quiescence().last_write() + quiet).saturating_sub(now));
        let pause = until_quiet.max(LIVENESS_POLL_MIN).min(deadline - now);
        madsim::time::sleep(pause.max(Duration::from_nanos(1))).await;
    }
    Err(format!("did not quiesce within {}s", wait.as_secs_f64()))
}

/// Kill every node, then let the executor drop the killed tasks' futures once more, so that
/// nothing parked on a timer outlives the run (madsim leaks pending tasks otherwise), and drop the
/// runtime. Every run, simulated or live, ends through here.
#[cfg(madsim)]
fn shut_down(runtime: madsim::runtime::Runtime, nodes: &Mutex<Vec<madsim::task::NodeId>>) {
    use futures::FutureExt;
    use std::panic::AssertUnwindSafe;

    let handle = runtime.handle().clone();
    for id in nodes.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        handle.kill(*id);
    }
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(async {}.boxed_local())));
    drop(runtime);
}
