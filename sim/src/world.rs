//! The world: a builder that declares clusters, CRDs, controllers, a workload and properties, and
//! [`SimBuilder::run`], which runs one seed of it on a fresh madsim runtime.
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
//! All per-run state (servers, decision source, trace, counters) lives in one [`World`] made per
//! run; no static holds per-run state.

pub mod live;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

use futures::future::LocalBoxFuture;
use kube_core::DynamicObject;
use model_apiserver::{ApiServer, Revision, ServerConfig, Snapshot};

use crate::client::Client;
use crate::decision::{ChoiceMode, Choices, DecisionSource};
use crate::generate::{GenerateError, GeneratedWorkload, WorkloadSource};
use crate::lifecycles::Lifecycles;
use crate::property::Property;
use crate::run_options::RunOptions;
pub(crate) use crate::runner::panic_message;
use crate::trace::{Trace, TraceEvent};
use crate::transport::{FaultHook, NoFaults};
use crate::verdict::{RunReport, RunStats, Verdict};
use crate::workload::{Workload, WorkloadError};

/// The virtual wall clock at the start of every run: 2026-01-01T00:00:00Z. Objects get
/// `creationTimestamp`s from this epoch plus the virtual time elapsed, so they are the same on
/// every machine and every replay.
pub const EPOCH_UNIX_SECONDS: i64 = 1_767_225_600;

/// The name of the cluster a builder declares when none is declared.
pub const DEFAULT_CLUSTER: &str = "default";

/// The name of the workload's node.
pub const WORKLOAD_NODE: &str = "workload";

/// Why a world could not be declared.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// CRDs could not be loaded.
    #[error("loading CRDs for cluster {cluster}: {source}")]
    Crds {
        /// The cluster they were meant for.
        cluster: String,
        /// What was wrong.
        #[source]
        source: Box<model_apiserver::crd::CrdLoadError>,
    },
    /// A CRD could not be turned into an API object.
    #[error("CRD for cluster {cluster} does not serialize: {source}")]
    CrdSerialize {
        /// The cluster it was meant for.
        cluster: String,
        /// The serializer's complaint.
        #[source]
        source: serde_json::Error,
    },
}

/// The entry point: `Sim::builder()`.
#[derive(Debug)]
pub struct Sim;

impl Sim {
    /// A builder with one cluster named `default`, no controllers and an empty workload.
    pub fn builder() -> SimBuilder {
        SimBuilder::new()
    }
}

type ControllerFactory = Arc<dyn Fn(Clients) -> LocalBoxFuture<'static, ()> + Send + Sync>;
type FaultHookFactory = Arc<dyn Fn(u64) -> Box<dyn FaultHook> + Send + Sync>;
type WorkloadFactory =
    Arc<dyn Fn(Workload) -> LocalBoxFuture<'static, Result<(), WorkloadError>> + Send + Sync>;

/// One declared cluster.
#[derive(Clone)]
struct ClusterSpec {
    name: Arc<str>,
    /// CRDs installed at start, as API objects (serialized once, shared by every seed).
    crds: Vec<Arc<DynamicObject>>,
}

/// One declared controller.
#[derive(Clone)]
struct ControllerSpec {
    name: Arc<str>,
    factory: ControllerFactory,
}

/// Declares a world; [`SimBuilder::run`] runs one seed of it. Reusable across seeds and threads.
#[derive(Clone)]
pub struct SimBuilder {
    scenario: String,
    clusters: Vec<ClusterSpec>,
    controllers: Vec<ControllerSpec>,
    workload: Option<WorkloadFactory>,
    properties: Vec<Arc<dyn Property>>,
    time_limit: Duration,
    liveness_wait: Duration,
    quiet_period: Duration,
    keep_trace: bool,
    server_config: ServerConfig,
    faults: crate::faults::FaultSource,
    /// Start the fault supervisor even without faults (leader-elected replicas need it).
    supervised: bool,
    fault_hook: Option<FaultHookFactory>,
    /// Whether runs record their choices or replay a recording.
    choices: ChoiceMode,
    /// The generated workload, when the workload is one (the shrinker shortens it).
    generated: Option<WorkloadSource>,
    /// The world's fault profile, measured once on a fault-free run (shared by clones; a change
    /// to what the world runs starts a new one).
    profile: Arc<OnceLock<Arc<crate::faults::profile::Profile>>>,
}

impl Default for SimBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Defaults chosen so that a small world converges well within them, and a stuck one is reported
/// in milliseconds of wall time.
const TIME_LIMIT_DEFAULT: Duration = Duration::from_secs(600);
const LIVENESS_WAIT_DEFAULT: Duration = Duration::from_secs(60);
const QUIET_PERIOD_DEFAULT: Duration = Duration::from_secs(2);

impl SimBuilder {
    /// A builder with one cluster named `default`, no controllers and an empty workload.
    pub fn new() -> Self {
        SimBuilder {
            scenario: "scenario".to_owned(),
            clusters: Vec::new(),
            controllers: Vec::new(),
            workload: None,
            properties: Vec::new(),
            time_limit: TIME_LIMIT_DEFAULT,
            liveness_wait: LIVENESS_WAIT_DEFAULT,
            quiet_period: QUIET_PERIOD_DEFAULT,
            keep_trace: false,
            server_config: ServerConfig::default(),
            faults: crate::faults::FaultSource::None,
            supervised: false,
            fault_hook: None,
            choices: ChoiceMode::Off,
            generated: None,
            profile: Arc::default(),
        }
    }

    /// Name the scenario (for reports and replay commands).
    pub fn scenario(mut self, name: impl Into<String>) -> Self {
        self.scenario = name.into();
        self
    }

    /// Declare a cluster. Declaring any cluster replaces the implicit `default` one; the first
    /// declared cluster is what [`Clients::default_cluster`] returns.
    pub fn cluster(mut self, name: impl Into<Arc<str>>) -> Self {
        self.cluster_mut(name.into());
        self
    }

    fn cluster_mut(&mut self, name: Arc<str>) -> &mut ClusterSpec {
        let index = match self.clusters.iter().position(|c| c.name == name) {
            Some(index) => index,
            None => {
                self.clusters.push(ClusterSpec { name, crds: Vec::new() });
                self.clusters.len() - 1
            }
        };
        &mut self.clusters[index]
    }

    /// Install the CRDs of a (multi-document) YAML string in `cluster` at start, as envtest does.
    pub fn crds_yaml(mut self, cluster: &str, yaml: &str) -> Result<Self, SimError> {
        let crds = model_apiserver::crd::load_crds_from_yaml("<string>", yaml)
            .map_err(|source| SimError::Crds { cluster: cluster.to_owned(), source: Box::new(source) })?;
        self.add_crds(cluster, crds)?;
        Ok(self)
    }

    /// Install the CRDs of a file, or of every YAML/JSON file of a directory, in `cluster`.
    pub fn crds_from_path(mut self, cluster: &str, path: impl AsRef<Path>) -> Result<Self, SimError> {
        let crds = model_apiserver::crd::load_crds_from_path(path.as_ref())
            .map_err(|source| SimError::Crds { cluster: cluster.to_owned(), source: Box::new(source) })?;
        self.add_crds(cluster, crds)?;
        Ok(self)
    }

    fn add_crds(
        &mut self,
        cluster: &str,
        crds: Vec<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >,
    ) -> Result<(), SimError> {
        let spec = self.cluster_mut(Arc::from(cluster));
        for crd in crds {
            let object = crate::client::to_dynamic(&crd)
                .map_err(|source| SimError::CrdSerialize { cluster: cluster.to_owned(), source })?;
            spec.crds.push(Arc::new(object));
        }
        Ok(())
    }

    /// Declare a controller: `factory` builds its main future from the clients it may use. It runs
    /// on its own node named `name`, and is called again when the node restarts.
    pub fn controller<F, Fut>(mut self, name: impl Into<Arc<str>>, factory: F) -> Self
    where
        F: Fn(Clients) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let factory: ControllerFactory = Arc::new(move |clients| Box::pin(factory(clients)));
        self.controllers.push(ControllerSpec { name: name.into(), factory });
        self.profile = Arc::default();
        self
    }

    /// Declare the workload: an async script of steps, run once on its own node.
    pub fn workload<F, Fut>(mut self, script: F) -> Self
    where
        F: Fn(Workload) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), WorkloadError>> + 'static,
    {
        self.workload = Some(Arc::new(move |w| Box::pin(script(w))));
        self.generated = None;
        self.profile = Arc::default();
        self
    }

    /// Declare a generated workload as the workload, the same steps for every seed. Unlike
    /// `.workload(workload.into_script())`, the builder knows the steps, so a shrinker can shorten
    /// them and a regression file can hold them (see [`SimBuilder::generated_workload_for`]).
    pub fn generated_workload(self, workload: GeneratedWorkload) -> Self {
        self.workload_source(WorkloadSource::Fixed(Arc::new(workload)))
    }

    /// Declare a workload generated from `crd`'s schema with `steps_max` steps, a different one
    /// for each seed (generated from the run's seed, as [`GeneratedWorkload::for_crd`] does).
    /// A schema nothing can be generated from fails the run's first workload step.
    pub fn generate_workload(
        self,
        crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        steps_max: usize,
    ) -> Result<Self, GenerateError> {
        let (resource, schema) = crate::generate::crd_schema(crd)?;
        Ok(self.workload_source(WorkloadSource::PerSeed { resource, schema: Arc::new(schema), steps_max }))
    }

    /// Declare the workload as a generated one from `source`.
    pub fn workload_source(mut self, source: WorkloadSource) -> Self {
        self.workload = Some(source.script());
        self.generated = Some(source);
        self.profile = Arc::default();
        self
    }

    /// The generated workload a run of `seed` runs: `None` if the workload is not a generated one
    /// (a script), `Some(Err)` if it cannot be generated.
    pub fn generated_workload_for(&self, seed: u64) -> Option<Result<GeneratedWorkload, GenerateError>> {
        self.generated.as_ref().map(|source| source.for_seed(seed))
    }

    /// Record every choice of each run; [`RunReport::choices`] then holds them, for
    /// [`SimBuilder::replay_choices`] or a regression file. `false` stops recording (a replay
    /// set with [`SimBuilder::replay_choices`] stays).
    pub fn record_choices(mut self, record: bool) -> Self {
        if record {
            self.choices = ChoiceMode::Record;
        } else if self.choices == ChoiceMode::Record {
            self.choices = ChoiceMode::Off;
        }
        self
    }

    /// Replay recorded choices instead of drawing them from the seed (run the recording's seed).
    /// A run that asks for another choice than recorded ends with a nondeterminism verdict naming
    /// the first divergent choice (its stream and index).
    pub fn replay_choices(mut self, choices: Choices) -> Self {
        self.choices = ChoiceMode::Replay(Arc::new(choices));
        self
    }

    /// Add a property, checked after every write and at the end.
    pub fn property(mut self, property: impl Property + 'static) -> Self {
        self.properties.push(Arc::new(property));
        self
    }

    /// Add a property checked before every property added so far.
    ///
    /// The first property that fails at a step ends the step checks, so a property added with
    /// [`property`](Self::property) after a failing one never sees the failing write. An observer
    /// that must see every step, the failing one included (`kube-sim serve --replay` captures
    /// the state at a step this way), is added first.
    pub fn property_first(mut self, property: impl Property + 'static) -> Self {
        self.properties.insert(0, Arc::new(property));
        self
    }

    /// The virtual time after which the run is stopped with a liveness verdict.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// How long (virtual) the liveness phase waits for quiescence after the workload ends.
    pub fn liveness_wait(mut self, wait: Duration) -> Self {
        self.liveness_wait = wait;
        self
    }

    /// How long (virtual) the world must stay without writes to count as quiet.
    pub fn quiet_period(mut self, period: Duration) -> Self {
        self.quiet_period = period;
        self
    }

    /// The bounds of every cluster's model server (a short history makes watches expire: 410).
    pub fn server_config(mut self, config: ServerConfig) -> Self {
        self.server_config = config;
        self
    }

    /// Where faults act: `hook(seed)` makes a fresh [`FaultHook`] for each run.
    pub fn fault_hook<H: FaultHook + 'static>(
        mut self,
        hook: impl Fn(u64) -> H + Send + Sync + 'static,
    ) -> Self {
        self.fault_hook = Some(Arc::new(move |seed| Box::new(hook(seed))));
        self
    }

    /// Run every seed with this fixed fault plan (replays and shrinking use it).
    pub fn faults(mut self, plan: crate::faults::FaultPlan) -> Self {
        self.faults = crate::faults::FaultSource::Plan(plan);
        self
    }

    /// Draw each seed's fault plan from the seed (swarm selection). An empty
    /// `SwarmConfig::controllers` means every declared controller node.
    pub fn swarm(mut self, config: crate::faults::SwarmConfig) -> Self {
        self.faults = crate::faults::FaultSource::Swarm(config);
        self
    }

    /// Start the fault supervisor in every run, faults or not.
    pub(crate) fn supervised(mut self) -> Self {
        self.supervised = true;
        self
    }

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

    /// The swarm this builder draws from, with its profile filled in.
    fn swarm_with_profile(&self) -> Option<crate::faults::SwarmConfig> {
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

    /// The names of the declared controller nodes, in declaration order.
    pub fn controller_names(&self) -> Vec<String> {
        self.controllers.iter().map(|c| c.name.to_string()).collect()
    }

    /// Keep every trace entry in the report (single-seed runs and replays), and let controller
    /// panics print as usual. A sweep keeps only the digest and stays quiet.
    pub fn keep_trace(mut self, keep: bool) -> Self {
        self.keep_trace = keep;
        self
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
            world.with(|w| w.faults = hook(seed));
        }
        let nodes: Arc<Mutex<Vec<madsim::task::NodeId>>> = Arc::default();
        let main = run_phases(self.for_seed(seed), specs, world.clone(), nodes.clone(), swarm);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(main)));
        shut_down(runtime, &nodes);
        let verdict = world.with(|w| w.failure.take()).unwrap_or_else(|| match outcome {
            Ok(verdict) => verdict,
            Err(payload) => verdict_from_panic(&panic_message(&*payload), self.time_limit),
        });
        world.finish(self.scenario.clone(), seed, verdict)
    }
}

/// The verdict for a panic that escaped `block_on`: madsim's deadlock and time-limit panics are
/// liveness failures; anything else is a crash of the engine's own (not a controller's).
fn verdict_from_panic(message: &str, time_limit: Duration) -> Verdict {
    if message.contains("no events, all tasks will block forever") {
        Verdict::Liveness { reason: format!("deadlock: {message}") }
    } else if message.contains("time limit exceeded") {
        Verdict::Liveness { reason: format!("time limit of {}s exceeded", time_limit.as_secs_f64()) }
    } else {
        Verdict::Crash { node: "engine".to_owned(), object: None, message: message.to_owned() }
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
        w.start = Instant::now();
        w.install_clusters(&specs, &builder.server_config);
        w.failure_signal.take()
    });
    let failure = failure.expect("the failure signal is taken once per run");
    let cluster_names: Arc<[Arc<str>]> = specs.iter().map(|s| s.name.clone()).collect();
    let handle = madsim::runtime::Handle::current();
    let source = match swarm {
        Some(config) => crate::faults::FaultSource::Swarm(config),
        None => builder.faults.clone(),
    };
    let has_faults = crate::faults::install_plan(&world, &source, &builder.controller_names());
    let mut fault_ids = crate::faults::supervisor::NodeIds::default();
    for spec in &builder.controllers {
        let id = start_controller_node(&handle, spec, &world, &cluster_names);
        nodes.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        fault_ids.nodes.insert(spec.name.clone(), id);
    }
    if has_faults || builder.supervised {
        let id = crate::faults::supervisor::start(&handle, &world, fault_ids);
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
        world.with(|w| w.injector.stop());
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
        crate::faults::injector::report_idle(w);
        w.end_elapsed = Some(w.elapsed());
    });
    verdict
}

#[cfg(madsim)]
fn start_controller_node(
    handle: &madsim::runtime::Handle,
    spec: &ControllerSpec,
    world: &World,
    clusters: &Arc<[Arc<str>]>,
) -> madsim::task::NodeId {
    let factory = spec.factory.clone();
    let world = world.clone();
    let clusters = clusters.clone();
    let name = spec.name.clone();
    let node = handle
        .create_node()
        .name(&*spec.name)
        .init(move || {
            let clients = Clients { world: world.clone(), node: name.clone(), clusters: clusters.clone() };
            let factory = factory.clone();
            // The factory runs inside the node's task, so whatever it spawns lands on this node.
            guarded_node(world.clone(), name.clone(), Box::new(move || factory(clients)))
        })
        .build();
    node.id()
}

/// Run a node's main future, turning a panic into the run's Crash verdict. Reconciles catch their
/// own panics (to name the object); this catches the rest.
async fn guarded_node(world: World, node: Arc<str>, make: Box<dyn FnOnce() -> LocalBoxFuture<'static, ()>>) {
    use futures::FutureExt;
    world.with(|w| {
        let starts = w.node_starts.entry(node.clone()).or_insert(0);
        *starts += 1;
        let restart = *starts > 1;
        w.trace(&node, TraceEvent::NodeStart { restart });
    });
    let future = std::panic::AssertUnwindSafe(async move { make().await });
    if let Err(payload) = future.catch_unwind().await {
        let message = panic_message(&*payload);
        world.with(|w| w.fail(Verdict::Crash { node: node.to_string(), object: None, message }));
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
            let clients =
                Clients { world: world.clone(), node: node_name.clone(), clusters: clusters.clone() };
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
            guarded_node(world.clone(), node_name.clone(), Box::new(move || future))
        })
        .build();
    (node.id(), done_rx)
}

/// The shortest and the usual pause between two quiescence checks: short enough to notice a quiet
/// world promptly, long enough that the liveness phase costs few wake-ups.
const LIVENESS_POLL_MIN: Duration = Duration::from_millis(10);
const _: () = assert!(LIVENESS_POLL_MIN.as_millis() > 0, "the liveness rounds bound divides by it");

/// At most this many requeues that are not idle are waited for in one liveness phase: a
/// controller that changes something on every periodic requeue never settles, and is reported
/// once it has done so this often.
pub const LIVENESS_REQUEUES_MAX: u32 = 100;
const _: () = assert!(LIVENESS_REQUEUES_MAX > 0);

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
            let Some((due, name)) = world.with(|w| w.awaited_requeue()) else { return Ok(()) };
            let failing = world.with(|w| w.failing(&name));
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
        let until_quiet = world.with(|w| (w.last_write + quiet).saturating_sub(now));
        let pause = until_quiet.max(LIVENESS_POLL_MIN).min(deadline - now);
        madsim::time::sleep(pause.max(Duration::from_nanos(1))).await;
    }
    Err(format!("did not quiesce within {}s", wait.as_secs_f64()))
}

/// The clients a controller or the workload may use: one per cluster.
#[derive(Clone)]
pub struct Clients {
    pub(crate) world: World,
    pub(crate) node: Arc<str>,
    pub(crate) clusters: Arc<[Arc<str>]>,
}

impl Clients {
    /// The client of the first declared cluster (`default` unless declared otherwise).
    pub fn default_cluster(&self) -> Client {
        Client::new(self.world.clone(), self.clusters[0].clone(), self.node.clone())
    }
    /// The client of the cluster called `name`.
    ///
    /// # Panics
    ///
    /// If no cluster of that name was declared: that is a mistake in the scenario, not in the
    /// controller under test.
    pub fn cluster(&self, name: &str) -> Client {
        match self.clusters.iter().find(|c| &***c == name) {
            Some(cluster) => Client::new(self.world.clone(), cluster.clone(), self.node.clone()),
            None => panic!("no cluster named {name:?} was declared; declared: {:?}", self.clusters),
        }
    }
    /// The declared clusters' names, in declaration order.
    pub fn cluster_names(&self) -> impl Iterator<Item = &str> {
        self.clusters.iter().map(|c| &**c)
    }
    /// The node these clients belong to.
    pub fn node(&self) -> &str {
        &self.node
    }
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

/// The shared, per-run state, behind one lock. Simulated tasks run on one thread, one at a time;
/// the lock is never held across an `.await`.
#[derive(Clone)]
pub(crate) struct World(Arc<Mutex<WorldState>>);

impl World {
    fn new(decisions: DecisionSource, keep_trace: bool, properties: Arc<[Arc<dyn Property>]>) -> Self {
        let (failure_tx, failure_rx) = futures::channel::oneshot::channel();
        let state = WorldState {
            clusters: BTreeMap::new(),
            decisions,
            trace: Trace::new(keep_trace),
            stats: RunStats::default(),
            next_call: 0,
            start: Instant::now(),
            last_write: Duration::ZERO,
            end_elapsed: None,
            last_seen: Duration::ZERO,
            properties,
            failure: None,
            failure_signal: Some(failure_rx),
            failure_tx: Some(failure_tx),
            progress: BTreeMap::new(),
            next_progress: 0,
            node_starts: BTreeMap::new(),
            faults: Box::new(NoFaults),
            reconcile_errors: BTreeMap::new(),
            injector: crate::faults::injector::Injector::default(),
            profile: crate::faults::profile::Profile::default(),
            queue_overflows: 0,
            live: BTreeMap::new(),
            epoch: jiff::Timestamp::from_second(EPOCH_UNIX_SECONDS).expect("the epoch is a valid timestamp"),
            first_cluster: None,
        };
        World(Arc::new(Mutex::new(state)))
    }

    /// Run `f` with the state locked. A panic while locked (a property, say) poisons nothing: the
    /// state is plain data and stays usable.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut WorldState) -> R) -> R {
        let mut guard: MutexGuard<'_, WorldState> = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&self) -> Duration {
        self.with(|w| w.elapsed())
    }

    fn elapsed_millis(&self) -> u64 {
        u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn finish(&self, scenario: String, seed: u64, verdict: Verdict) -> RunReport {
        self.with(|w| {
            let virtual_time = w.end_elapsed.unwrap_or(w.last_seen);
            w.stats.virtual_millis = u64::try_from(virtual_time.as_millis()).unwrap_or(u64::MAX);
            let trace = std::mem::take(&mut w.trace);
            // Drop the servers and the parked wakers now, so nothing of the run outlives it.
            w.clusters.clear();
            w.progress.clear();
            let (plan, unfired) = (w.injector.plan(), w.injector.unfired());
            let digest = trace.digest();
            // A replay that left its recording is not the recorded run: its verdict means nothing
            // about the scenario, and the divergence is what the user must see.
            let verdict = match w.decisions.finish_replay() {
                Err(choice) => Verdict::Nondeterminism {
                    first: String::new(),
                    second: digest.clone(),
                    choice: Some(choice),
                },
                Ok(()) => verdict,
            };
            let choices = w.decisions.choices();
            let stats = w.stats.clone();
            let profile = std::mem::take(&mut w.profile);
            RunReport { scenario, seed, verdict, digest, trace, stats, plan, unfired, choices, profile }
        })
    }
}

/// What a registered informer or controller reports to the liveness phase.
#[derive(Clone, Debug)]
pub(crate) enum Progress {
    /// An informer of `cluster` that has applied every event up to `seen`.
    Informer { cluster: Arc<str>, name: Arc<str>, seen: Option<Revision> },
    /// A controller with `running` reconciles in flight, its earliest queued request due at
    /// `next_due` and its earliest awaited one (not an idle requeue) at `next_awaited_due`
    /// (virtual times since start).
    Controller {
        name: Arc<str>,
        running: usize,
        next_due: Option<Duration>,
        next_awaited_due: Option<Duration>,
    },
}

/// One cluster: its server, and the wakers of informers waiting for its revision to move.
pub(crate) struct ClusterState {
    pub(crate) server: ApiServer,
    /// Woken in registration order whenever the revision moves. Bounded: drained at every move,
    /// and a task registers at most once between moves.
    pub(crate) watchers: Vec<Waker>,
    /// Per-object creation and deletion counts over the whole run (the server's history is
    /// bounded; these are not).
    pub(crate) lifecycles: Lifecycles,
}

/// The per-run state.
pub(crate) struct WorldState {
    pub(crate) clusters: BTreeMap<Arc<str>, ClusterState>,
    pub(crate) decisions: DecisionSource,
    pub(crate) trace: Trace,
    pub(crate) stats: RunStats,
    pub(crate) next_call: u64,
    pub(crate) start: Instant,
    /// Virtual time of the last write that moved a revision.
    pub(crate) last_write: Duration,
    /// Virtual time when the main task ended.
    end_elapsed: Option<Duration>,
    /// The latest virtual time the engine saw (for reports of runs that ended in a panic).
    last_seen: Duration,
    properties: Arc<[Arc<dyn Property>]>,
    /// The first failure (crash or broken safety property); it ends the run.
    pub(crate) failure: Option<Verdict>,
    failure_signal: Option<futures::channel::oneshot::Receiver<()>>,
    failure_tx: Option<futures::channel::oneshot::Sender<()>>,
    progress: BTreeMap<u64, Progress>,
    next_progress: u64,
    node_starts: BTreeMap<Arc<str>, u64>,
    pub(crate) faults: Box<dyn FaultHook>,
    /// Per controller: its last failed reconcile (object, error) and how many in a row failed,
    /// so that a liveness verdict names the error a controller keeps hitting.
    reconcile_errors: BTreeMap<Arc<str>, (String, String, u64)>,
    /// The fault plan in force and its state (see `faults::injector`).
    pub(crate) injector: crate::faults::injector::Injector,
    /// What each node did (informers and their list semantics, calls, reconciles), for the
    /// report: swarm selection and guided points read it to plan only faults that can act.
    pub(crate) profile: crate::faults::profile::Profile,
    /// How often a work queue hit its bound.
    pub(crate) queue_overflows: u64,
    /// The clusters of a live run ([`SimBuilder::run_live`]); empty in a simulated run.
    pub(crate) live: BTreeMap<Arc<str>, live::LiveCluster>,
    /// The wall clock at the start of the run: [`EPOCH_UNIX_SECONDS`], or in a live run the real
    /// clock's reading when it started.
    pub(crate) epoch: jiff::Timestamp,
    /// The first declared cluster, which [`Clients::default_cluster`] reaches (`None` before the
    /// clusters are installed, and in a live run).
    first_cluster: Option<Arc<str>>,
}

impl WorldState {
    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&mut self) -> Duration {
        let elapsed = Instant::now().saturating_duration_since(self.start);
        self.last_seen = self.last_seen.max(elapsed);
        elapsed
    }

    /// The virtual wall clock: the fixed epoch plus the virtual time elapsed.
    pub(crate) fn now(&mut self) -> jiff::Timestamp {
        let elapsed = self.elapsed();
        let span = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
        self.epoch.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
    }

    /// How many informers of every cluster are behind its current revision (a compaction now
    /// expires their watches).
    pub(crate) fn informers_behind(&self) -> usize {
        self.progress
            .values()
            .filter(|p| match p {
                Progress::Informer { cluster, seen: Some(seen), .. } => {
                    self.clusters.get(cluster).is_some_and(|c| *seen < c.server.revision())
                }
                _ => false,
            })
            .count()
    }

    /// Append to the trace at the current virtual time.
    pub(crate) fn trace(&mut self, node: &Arc<str>, event: TraceEvent) {
        let at = u64::try_from(self.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.trace.push(at, node, event);
    }

    /// Record the run's first failure and wake the main task so that the run ends.
    pub(crate) fn fail(&mut self, verdict: Verdict) {
        if self.failure.is_none() {
            tracing::debug!(?verdict, "run failed");
            self.failure = Some(verdict);
            if let Some(tx) = self.failure_tx.take() {
                let _ = tx.send(());
            }
        }
    }

    /// Create every cluster's server with its namespaces and CRDs.
    fn install_clusters(&mut self, specs: &[ClusterSpec], config: &ServerConfig) {
        let now = self.now();
        let crd_resource = kube_core::ApiResource {
            group: "apiextensions.k8s.io".to_owned(),
            version: "v1".to_owned(),
            api_version: "apiextensions.k8s.io/v1".to_owned(),
            kind: "CustomResourceDefinition".to_owned(),
            plural: "customresourcedefinitions".to_owned(),
        };
        for spec in specs {
            let mut ids = crate::transport::StreamIds(self.decisions.stream("ids"));
            let mut ctx = model_apiserver::Context::new(now, &mut ids);
            let mut server = ApiServer::with_config(config.clone()).with_default_namespaces(&mut ctx);
            for crd in &spec.crds {
                let request = model_apiserver::Request::create(
                    &crd_resource,
                    None,
                    (**crd).clone(),
                    kube_core::params::PostParams::default(),
                );
                if let Err(status) = server.handle(request, &mut ctx) {
                    let name = crd.metadata.name.clone().unwrap_or_default();
                    panic!("installing CRD {name} in cluster {}: {}", spec.name, status.message);
                }
            }
            let lifecycles = Lifecycles::new(&server, Duration::ZERO);
            self.clusters
                .insert(spec.name.clone(), ClusterState { server, watchers: Vec::new(), lifecycles });
        }
        self.first_cluster = specs.first().map(|spec| spec.name.clone());
    }

    /// The model server of the first declared cluster (the one [`Clients::default_cluster`]
    /// reaches), once the clusters are installed.
    pub(crate) fn default_server(&self) -> Option<&ApiServer> {
        let name = self.first_cluster.as_ref()?;
        self.clusters.get(name).map(|cluster| &cluster.server)
    }

    /// Every cluster's current state.
    pub(crate) fn snapshots(&self) -> BTreeMap<Arc<str>, Snapshot> {
        self.clusters.iter().map(|(name, c)| (name.clone(), c.server.snapshot())).collect()
    }

    /// Check the safety properties after a write to `cluster`.
    pub(crate) fn check_step(&mut self, cluster: &str) {
        if self.properties.is_empty() || self.failure.is_some() {
            return;
        }
        let clusters = self.snapshots();
        let at = self.elapsed();
        let view = crate::property::StepView { clusters: &clusters, written_cluster: cluster, at };
        let properties = self.properties.clone();
        for property in properties.iter() {
            if let Err(message) = property.check_step(&view) {
                let at_millis = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
                self.fail(Verdict::Correctness { property: property.name().to_owned(), message, at_millis });
                return;
            }
        }
    }

    /// Check the end-state properties.
    fn check_end(&mut self) -> Verdict {
        let clusters = self.snapshots();
        let lifecycles = self.clusters.iter().map(|(name, c)| (name.clone(), c.lifecycles.clone())).collect();
        let at = self.elapsed();
        let view = crate::property::EndView { clusters: &clusters, lifecycles: &lifecycles, at };
        for property in self.properties.iter() {
            if let Err(message) = property.check_end(&view) {
                let at_millis = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
                return Verdict::Correctness { property: property.name().to_owned(), message, at_millis };
            }
        }
        Verdict::Pass
    }

    /// Register an informer or a controller for the quiescence check.
    pub(crate) fn register(&mut self, progress: Progress) -> u64 {
        let id = self.next_progress;
        self.next_progress += 1;
        self.progress.insert(id, progress);
        id
    }

    /// Update a registration.
    pub(crate) fn update(&mut self, id: u64, progress: Progress) {
        self.progress.insert(id, progress);
    }

    /// Drop a registration (its node died or it stopped).
    pub(crate) fn unregister(&mut self, id: u64) {
        self.progress.remove(&id);
    }

    /// The sum of every cluster's revision: it moves whenever any write changes anything.
    pub(crate) fn revisions(&self) -> u64 {
        self.clusters.values().map(|c| c.server.revision()).sum()
    }

    /// The earliest awaited requeue of any controller (a request that is not idle), and whose.
    fn awaited_requeue(&self) -> Option<(Duration, Arc<str>)> {
        self.progress
            .values()
            .filter_map(|p| match p {
                Progress::Controller { name, next_awaited_due: Some(due), .. } => Some((*due, name.clone())),
                _ => None,
            })
            .min()
    }

    /// A controller's reconcile of `object` ended, with `error` if it failed.
    pub(crate) fn note_reconcile(&mut self, controller: &Arc<str>, object: &str, error: Option<&str>) {
        match error {
            None => {
                self.reconcile_errors.remove(controller);
            }
            Some(error) => {
                let entry = self.reconcile_errors.entry(controller.clone()).or_default();
                entry.2 += 1;
                (entry.0, entry.1) = (object.to_owned(), error.to_owned());
            }
        }
    }

    /// What keeps `controller` busy beyond its queue: the error its reconciles keep failing with.
    fn failing(&self, controller: &Arc<str>) -> String {
        match self.reconcile_errors.get(controller) {
            Some((object, error, times)) => {
                format!(" (its last {times} reconciles failed; the last, of {object}: {error})")
            }
            None => String::new(),
        }
    }

    /// A terminating object whose grace period outlasts the liveness phase, if any: its deletion
    /// waits on the clock, not on a controller.
    fn grace_outlasting(&self, now: Duration) -> Option<String> {
        let now_wall = self.epoch.checked_add(jiff::SignedDuration::try_from(now).ok()?).ok()?;
        for (cluster, state) in &self.clusters {
            let snapshot = state.server.snapshot();
            for (key, object) in snapshot.iter_resource("pods", None) {
                let (Some(deleting), Some(grace)) =
                    (&object.metadata.deletion_timestamp, object.metadata.deletion_grace_period_seconds)
                else {
                    continue;
                };
                // The deletion timestamp is the end of the grace period.
                if deleting.0 > now_wall {
                    let place = if self.clusters.len() > 1 {
                        format!(" in cluster {cluster}")
                    } else {
                        String::new()
                    };
                    return Some(format!(
                        "pod {}/{}{place} is terminating with a {grace}s grace period, which ends after the liveness wait \
                         (raise SimBuilder::liveness_wait, or delete with a shorter gracePeriodSeconds)",
                        key.namespace, key.name
                    ));
                }
            }
        }
        None
    }

    /// `None` if the world is quiet at `now`; otherwise what keeps it busy.
    fn busy(&mut self, now: Duration, quiet: Duration) -> Option<String> {
        if let Some(busy) = self.injector.busy() {
            return Some(busy);
        }
        if now.saturating_sub(self.last_write) < quiet {
            return Some(format!("last write at {}ms", self.last_write.as_millis()));
        }
        for progress in self.progress.values() {
            match progress {
                Progress::Informer { cluster, name, seen } => {
                    let revision = self.clusters.get(cluster).map_or(0, |c| c.server.revision());
                    if seen.is_none_or(|seen| seen < revision) {
                        return Some(format!("informer {name} behind revision {revision}"));
                    }
                }
                Progress::Controller { name, running, next_due, .. } => {
                    if *running > 0 {
                        return Some(format!("controller {name} reconciling{}", self.failing(name)));
                    }
                    // A request due within the coming quiet period may still write: wait for it.
                    if next_due.is_some_and(|due| due <= now + quiet) {
                        return Some(format!("controller {name} has a request due{}", self.failing(name)));
                    }
                }
            }
        }
        None
    }
}

/// A registration that disappears when its owner is dropped (for instance when its node is
/// killed), so a dead informer never holds the liveness phase up.
pub(crate) struct Registration {
    world: World,
    id: u64,
}

impl Registration {
    /// Register `progress`.
    pub(crate) fn new(world: &World, progress: Progress) -> Self {
        let id = world.with(|w| w.register(progress));
        Registration { world: world.clone(), id }
    }
    /// Report new progress.
    pub(crate) fn update(&self, progress: Progress) {
        self.world.with(|w| w.update(self.id, progress));
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.world.with(|w| w.unregister(self.id));
    }
}
