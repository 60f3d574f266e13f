//! The world of one run: a thin aggregate of components, behind one lock.
//!
//! [`World`] is the handle every simulated task holds; [`WorldState`] is what it locks. Each part
//! is a component in a module of its own that owns its state and never imports the world:
//! - the cluster set ([`crate::cluster`]): the model servers, their watchers and lifecycles;
//! - the recorder ([`crate::recorder`]): the clock, the trace and the counters;
//! - quiescence ([`crate::quiescence`]): the informers' and controllers' progress, for the
//!   liveness phase;
//! - the fault injector ([`crate::faults`]), which acts on a [`FaultCtx`] the world lends it;
//! - the decision source, the user's fault hook, the fault profile, the properties.
//!
//! What a world is made of is declared with [`crate::SimBuilder`] (`crate::builder`); one seed
//! of it runs in `crate::run`.

pub mod live;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use crate::cluster::Clusters;
use crate::decision::DecisionSource;
use crate::faults::ctx::{FaultCtx, Host};
use crate::faults::hook::{FaultHook, NoFaults};
use crate::faults::injector::Injector;
use crate::faults::profile::Profile;
use crate::property::Property;
use crate::quiescence::{Progress, Quiescence};
use crate::recorder::Recorder;
use crate::trace::TraceEvent;
use crate::verdict::{RunReport, Verdict};

pub use crate::quiescence::{CRASH_LOOP_BACKOFF_INITIAL, CRASH_LOOP_BACKOFF_MAX, LIVENESS_REQUEUES_MAX};

/// The virtual wall clock at the start of every run: 2026-01-01T00:00:00Z. Objects get
/// `creationTimestamp`s from this epoch plus the virtual time elapsed, so they are the same on
/// every machine and every replay.
pub const EPOCH_UNIX_SECONDS: i64 = 1_767_225_600;

/// The name of the cluster a builder declares when none is declared.
pub const DEFAULT_CLUSTER: &str = "default";

/// The name of the workload's node.
pub const WORKLOAD_NODE: &str = "workload";

/// The shared, per-run state, behind one lock. Simulated tasks run on one thread, one at a time;
/// the lock is never held across an `.await`.
#[derive(Clone)]
pub(crate) struct World(Arc<Mutex<WorldState>>);

impl World {
    /// A world for one run: `decisions` answers its choices, `keep_trace` keeps every trace
    /// entry, `properties` are checked at every write and at the end.
    pub(crate) fn new(
        decisions: DecisionSource,
        keep_trace: bool,
        properties: Arc<[Arc<dyn Property>]>,
    ) -> Self {
        let (failure_tx, failure_rx) = futures::channel::oneshot::channel();
        let epoch = jiff::Timestamp::from_second(EPOCH_UNIX_SECONDS).expect("the epoch is a valid timestamp");
        let state = WorldState {
            clusters: Clusters::default(),
            recorder: Recorder::new(keep_trace, epoch),
            quiescence: Quiescence::default(),
            injector: Injector::default(),
            decisions,
            profile: Profile::default(),
            hook: Box::new(NoFaults),
            properties,
            failure: None,
            failure_signal: Some(failure_rx),
            failure_tx: Some(failure_tx),
            node_starts: BTreeMap::new(),
            live: BTreeMap::new(),
            typed_views: Default::default(),
        };
        World(Arc::new(Mutex::new(state)))
    }

    /// Run `f` with the state locked. A panic while locked (a property, say) poisons nothing: the
    /// state is plain data and stays usable.
    ///
    /// The run's tasks share one thread, so the lock is only ever found held when code running
    /// under it (a fault hook, a property) calls back into the simulation: that panics, naming the
    /// mistake, where waiting would hang the run for good.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut WorldState) -> R) -> R {
        let mut guard: MutexGuard<'_, WorldState> = match self.0.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => panic!(
                "the simulation was called from inside a fault hook or a property (sim::time, a \
                 client, ...), which run with the world locked: use what they are shown \
                 (CallInfo::elapsed, the request, the objects)"
            ),
        };
        f(&mut guard)
    }

    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&self) -> Duration {
        self.with(|w| w.elapsed())
    }

    /// Virtual milliseconds since the start of the run.
    pub(crate) fn elapsed_millis(&self) -> u64 {
        u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Close the run: its report, with the trace and counters, and nothing of the run kept
    /// (servers and parked wakers are dropped now).
    pub(crate) fn finish(&self, scenario: String, seed: u64, verdict: Verdict) -> RunReport {
        self.with(|w| {
            let (trace, stats) = w.recorder.finish();
            if let Some(server) = w.clusters.default_server() {
                let snapshot = server.snapshot();
                w.profile.kube_nodes =
                    snapshot.iter_resource("nodes", None).map(|(k, _)| k.name.to_string()).collect();
            }
            w.clusters.clear();
            w.quiescence.clear();
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
            let profile = std::mem::take(&mut w.profile);
            RunReport { scenario, seed, verdict, digest, trace, stats, plan, unfired, choices, profile }
        })
    }
}

impl Host for World {
    fn with_faults<R>(&self, f: impl FnOnce(&mut FaultCtx<'_>) -> R) -> R {
        self.with(|w| f(&mut w.fault_ctx()))
    }
}

/// The per-run state: the components, and the run's outcome so far.
pub(crate) struct WorldState {
    clusters: Clusters,
    recorder: Recorder,
    quiescence: Quiescence,
    /// The fault plan in force and its state (see `faults::injector`).
    injector: Injector,
    decisions: DecisionSource,
    /// What each node did (informers and their list semantics, calls, reconciles), for the
    /// report: swarm selection and guided points read it to plan only faults that can act.
    profile: Profile,
    /// The user's fault hook ([`crate::SimBuilder::fault_hook`]).
    hook: Box<dyn FaultHook>,
    properties: Arc<[Arc<dyn Property>]>,
    /// The first failure (crash or broken safety property); it ends the run.
    failure: Option<Verdict>,
    failure_signal: Option<futures::channel::oneshot::Receiver<()>>,
    failure_tx: Option<futures::channel::oneshot::Sender<()>>,
    /// How often each node started (a start after the first is a restart).
    node_starts: BTreeMap<Arc<str>, u64>,
    /// The clusters of a live run (`SimBuilder::run_live`); empty in a simulated run.
    live: BTreeMap<Arc<str>, live::LiveCluster>,
    /// Stored objects decoded as the types watchers and callers read them, shared.
    typed_views: crate::typed_cache::TypedViews,
}

impl WorldState {
    /// The typed views of stored objects decoded so far in this run.
    pub(crate) fn typed_views(&mut self) -> &mut crate::typed_cache::TypedViews {
        &mut self.typed_views
    }

    /// The cluster set.
    pub(crate) fn clusters(&self) -> &Clusters {
        &self.clusters
    }

    /// The cluster set, to change.
    pub(crate) fn clusters_mut(&mut self) -> &mut Clusters {
        &mut self.clusters
    }

    /// The cluster set, to change, with the decisions that draw uids and generated names.
    pub(crate) fn clusters_and_decisions(&mut self) -> (&mut Clusters, &mut DecisionSource) {
        (&mut self.clusters, &mut self.decisions)
    }

    /// The clock, trace and counters.
    pub(crate) fn recorder(&mut self) -> &mut Recorder {
        &mut self.recorder
    }

    /// The registrations the liveness phase reads.
    pub(crate) fn quiescence(&mut self) -> &mut Quiescence {
        &mut self.quiescence
    }

    /// The fault state.
    pub(crate) fn injector(&mut self) -> &mut Injector {
        &mut self.injector
    }

    /// The run's decisions.
    pub(crate) fn decisions(&mut self) -> &mut DecisionSource {
        &mut self.decisions
    }

    /// What each node did, for the report.
    pub(crate) fn profile(&mut self) -> &mut Profile {
        &mut self.profile
    }

    /// The user's fault hook.
    pub(crate) fn hook(&mut self) -> &mut dyn FaultHook {
        &mut *self.hook
    }

    /// Install the user's fault hook for this run.
    pub(crate) fn set_hook(&mut self, hook: Box<dyn FaultHook>) {
        self.hook = hook;
    }

    /// The faults' view of the world at the current virtual time.
    pub(crate) fn fault_ctx(&mut self) -> FaultCtx<'_> {
        let now = self.recorder.elapsed();
        let epoch = self.recorder.epoch();
        FaultCtx::new(
            &mut self.injector,
            &mut self.clusters,
            &mut self.decisions,
            &self.quiescence,
            self.recorder.trace_mut(),
            now,
            epoch,
        )
    }

    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&mut self) -> Duration {
        self.recorder.elapsed()
    }

    /// The virtual wall clock: the fixed epoch plus the virtual time elapsed.
    pub(crate) fn now(&mut self) -> jiff::Timestamp {
        self.recorder.now()
    }

    /// Append to the trace at the current virtual time.
    pub(crate) fn trace(&mut self, node: &Arc<str>, event: TraceEvent) {
        self.recorder.trace(node, event);
    }

    /// [`WorldState::trace`] of a borrowed event: the hot paths' form (see [`crate::trace::EventRef`]).
    pub(crate) fn trace_ref(&mut self, node: &Arc<str>, event: crate::trace::EventRef<'_>) {
        self.recorder.trace_ref(node, event);
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

    /// Whether the run has failed.
    pub(crate) fn has_failed(&self) -> bool {
        self.failure.is_some()
    }

    /// The run's failure, taken (once, by the run loop).
    pub(crate) fn take_failure(&mut self) -> Option<Verdict> {
        self.failure.take()
    }

    /// The signal that the run failed (taken once, by the run loop).
    pub(crate) fn take_failure_signal(&mut self) -> Option<futures::channel::oneshot::Receiver<()>> {
        self.failure_signal.take()
    }

    /// Node `node` starts: trace it, and say whether it is a restart.
    pub(crate) fn node_started(&mut self, node: &Arc<str>) {
        let starts = self.node_starts.entry(node.clone()).or_insert(0);
        *starts += 1;
        let restart = *starts > 1;
        self.recorder.trace(node, TraceEvent::NodeStart { restart });
    }

    /// Controller `node`'s main future returned at `now`, `ran_for` after it started: trace
    /// the exit, and answer the CrashLoopBackOff its restart waits.
    pub(crate) fn container_exited(&mut self, node: &Arc<str>, ran_for: Duration, now: Duration) -> Duration {
        let (backoff, exits) = self.quiescence.container_exited(node, now);
        let reason = format!(
            "its main future returned after {}ms (the container exited, {exits} so far): CrashLoopBackOff, restart in {}s",
            ran_for.as_millis(),
            backoff.as_secs()
        );
        self.recorder.trace(node, TraceEvent::NodeKill { reason });
        backoff
    }

    /// Controller `node` restarts after its CrashLoopBackOff.
    pub(crate) fn container_restarting(&mut self, node: &Arc<str>) {
        self.quiescence.container_restarting(node);
    }

    /// Start every cluster from its installed state (namespaces and CRDs, see
    /// [`crate::cluster::InstalledCluster`]).
    pub(crate) fn install_clusters(&mut self, installed: &[crate::cluster::InstalledCluster]) {
        for cluster in installed {
            self.clusters.install(cluster);
        }
    }

    /// A write that moved `cluster`'s revision happened: it is progress unless it was a
    /// heartbeat (a Lease renewal), and the safety properties are checked.
    pub(crate) fn wrote(&mut self, cluster: &str, heartbeat: bool) {
        if !heartbeat {
            let at = self.recorder.elapsed();
            self.quiescence.wrote(at);
        }
        self.check_step(cluster);
    }

    /// Check the safety properties after a write to `cluster`.
    pub(crate) fn check_step(&mut self, cluster: &str) {
        if self.properties.is_empty() || self.failure.is_some() {
            return;
        }
        let clusters = self.clusters.snapshots();
        let at = self.recorder.elapsed();
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
    pub(crate) fn check_end(&mut self) -> Verdict {
        let clusters = self.clusters.snapshots();
        let lifecycles = self.clusters.lifecycles();
        let at = self.recorder.elapsed();
        let view = crate::property::EndView { clusters: &clusters, lifecycles: &lifecycles, at };
        for property in self.properties.iter() {
            if let Err(message) = property.check_end(&view) {
                let at_millis = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
                return Verdict::Correctness { property: property.name().to_owned(), message, at_millis };
            }
        }
        Verdict::Pass
    }

    /// `None` if the world is quiet at `now`; otherwise what keeps it busy.
    pub(crate) fn busy(&self, now: Duration, quiet: Duration) -> Option<crate::quiescence::Busy> {
        let faults = (self.injector.busy(), self.injector.released_at());
        self.quiescence.busy(&self.clusters, faults, now, quiet)
    }

    /// A terminating object whose grace period outlasts the liveness phase, if any.
    pub(crate) fn grace_outlasting(&self, now: Duration) -> Option<String> {
        let now_wall = self.recorder.epoch().checked_add(jiff::SignedDuration::try_from(now).ok()?).ok()?;
        crate::quiescence::grace_outlasting(&self.clusters, now_wall)
    }

    /// The leader of `name` (a replica group, or one of its replica nodes), as the model says:
    /// the `holderIdentity` of the group's Lease as the server stores it now, whoever wrote it last
    /// and whether or not it has expired (a paused leader whose lease ran out still holds it until
    /// another replica takes it over). `None` while no Lease of the group exists.
    pub(crate) fn current_leader(&self, name: &str) -> Option<Arc<str>> {
        self.clusters.lease_holder(self.injector.group_of(name))
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
        let id = world.with(|w| w.quiescence.register(progress));
        Registration { world: world.clone(), id }
    }
    /// Report new progress.
    pub(crate) fn update(&self, progress: Progress) {
        self.world.with(|w| w.quiescence.update(self.id, progress));
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.world.with(|w| w.quiescence.unregister(self.id));
    }
}
