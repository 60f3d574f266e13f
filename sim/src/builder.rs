//! The builder: [`SimBuilder`] declares a world (clusters, CRDs, controllers, a workload,
//! properties, faults and bounds). Running a seed of it is [`crate::run`]'s.

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::LocalBoxFuture;
use kube_core::DynamicObject;
use model_apiserver::ServerConfig;

use crate::client::Clients;
use crate::decision::{ChoiceMode, Choices};
use crate::faults::hook::FaultHook;
use crate::generate::{GenerateError, GeneratedWorkload, WorkloadSource};
use crate::property::Property;
use crate::workload::{Workload, WorkloadError};

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

pub(crate) type ControllerFactory = Arc<dyn Fn(Clients) -> LocalBoxFuture<'static, ()> + Send + Sync>;
pub(crate) type FaultHookFactory = Arc<dyn Fn(u64) -> Box<dyn FaultHook> + Send + Sync>;
pub(crate) type WorkloadFactory =
    Arc<dyn Fn(Workload) -> LocalBoxFuture<'static, Result<(), WorkloadError>> + Send + Sync>;

/// One declared cluster.
#[derive(Clone)]
pub(crate) struct ClusterSpec {
    pub(crate) name: Arc<str>,
    /// CRDs installed at start, as API objects (serialized once, shared by every seed).
    pub(crate) crds: Vec<Arc<DynamicObject>>,
}

/// One declared controller.
#[derive(Clone)]
pub(crate) struct ControllerSpec {
    pub(crate) name: Arc<str>,
    pub(crate) factory: ControllerFactory,
}

/// Declares a world; [`SimBuilder::run`] runs one seed of it. Reusable across seeds and threads.
#[derive(Clone)]
pub struct SimBuilder {
    pub(crate) scenario: String,
    pub(crate) clusters: Vec<ClusterSpec>,
    pub(crate) controllers: Vec<ControllerSpec>,
    pub(crate) workload: Option<WorkloadFactory>,
    pub(crate) properties: Vec<Arc<dyn Property>>,
    pub(crate) time_limit: Duration,
    pub(crate) liveness_wait: Duration,
    pub(crate) quiet_period: Duration,
    pub(crate) keep_trace: bool,
    pub(crate) server_config: ServerConfig,
    pub(crate) faults: crate::faults::FaultSource,
    /// Start the fault supervisor even without faults (leader-elected replicas need it).
    pub(crate) supervised: bool,
    pub(crate) fault_hook: Option<FaultHookFactory>,
    /// Whether runs record their choices or replay a recording.
    pub(crate) choices: ChoiceMode,
    /// The generated workload, when the workload is one (the shrinker shortens it).
    pub(crate) generated: Option<WorkloadSource>,
    /// The world's fault profile, measured once on a fault-free run (shared by clones; a change
    /// to what the world runs starts a new one).
    pub(crate) profile: Arc<OnceLock<Arc<crate::faults::profile::Profile>>>,
    /// The clusters as every run starts them, installed once (shared by clones; a change to the
    /// clusters, their CRDs or the server config starts a new one).
    pub(crate) installed: Arc<OnceLock<Arc<[crate::cluster::InstalledCluster]>>>,
}

impl Default for SimBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Defaults chosen so that a small world converges well within them, and a stuck one is reported
/// in milliseconds of wall time. The time limit leaves room for kube-controller-manager's own
/// default timers to run in the liveness phase: a Deployment whose rollout is stuck (its Pods
/// crash-loop, or wait for a claim that never binds) is looked at again 600 s after its last
/// progress and marked `ProgressDeadlineExceeded`, which the end checks then see (with a limit of
/// 600 s that requeue was past it, and every such world a liveness verdict).
const TIME_LIMIT_DEFAULT: Duration = Duration::from_secs(1800);
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
            installed: Arc::default(),
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
        self.installed = Arc::default();
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

    /// The virtual time after which the run is stopped with a liveness verdict (30 minutes unless
    /// set).
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

    /// The settings of every cluster's model server (a short history makes watches expire: 410).
    /// They replace every earlier setting, those that added controllers turned on included (the
    /// storage protection controllers' admission plugin): set them before adding controllers, or
    /// change one with [`Self::server_config_with`].
    pub fn server_config(mut self, config: ServerConfig) -> Self {
        self.server_config = config;
        self.installed = Arc::default();
        self
    }

    /// Change some settings of every cluster's model server, keeping the others (a controller
    /// turns on the admission plugin that goes with it).
    pub fn server_config_with(mut self, change: impl FnOnce(&mut ServerConfig)) -> Self {
        change(&mut self.server_config);
        self.installed = Arc::default();
        self
    }

    /// Run controller `node`'s API calls under RBAC as the ServiceAccount `namespace`/`name`,
    /// as its Deployment would run in a cluster: a call no (Cluster)RoleBinding allows is 403
    /// Forbidden in kube-apiserver's words ([`model_apiserver::rbac`]). Give the world the
    /// controller's Roles and bindings (its manifests, as initial objects or applied by the
    /// workload); nodes not named here (the built-ins, the workload) are not checked.
    pub fn service_account(self, node: impl Into<String>, namespace: &str, name: &str) -> Self {
        let account = model_apiserver::rbac::ServiceAccount::new(namespace, name);
        let node = node.into();
        self.server_config_with(move |config| {
            config.service_accounts.insert(node, account);
        })
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
}
