//! `kube-sim serve --replay FILE --at STEP`: the simulated cluster's state at one step of a
//! recorded run, served read only.
//!
//! The regression file is rerun under madsim exactly as `kube-sim replay` reruns it (its
//! scenario, seed and fault plan), on its own thread and before any tokio runtime starts, with
//! one more property: `CaptureAt`, whose `check_step` counts the steps (a step is a successful
//! write, as [`sim::property::StepView`] sees them) and keeps every cluster's snapshot at step
//! STEP. That snapshot becomes a [`model_apiserver::ApiServer`] of its own
//! ([`ApiServer::from_snapshot`]: the objects keep the run's uids, resourceVersions and
//! timestamps), and the [`Live`] around it refuses every write with 405 MethodNotAllowed.
//!
//! The capture is the run's first property ([`sim::SimBuilder::property_first`]), so it also
//! sees the write at which a safety property fails: that write is the run's last step.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use model_apiserver::{ApiServer, Revision, ServerConfig, Snapshot};
use sim::{
    property::{Property, StepView},
    scenario::Registry,
    trace::{TraceEntry, TraceEvent},
};

use super::Live;

/// Operational failures of `--replay` (each one exits 2).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file is missing, corrupt, of an unknown format or names an unknown scenario.
    #[error("cannot replay {file}: {message}")]
    Load {
        /// The regression file.
        file: PathBuf,
        /// Why (the loader's message names the field).
        message: String,
    },
    /// The rerun panicked outside the engine's own crash handling.
    #[error("replaying {file} crashed: {message}")]
    Crashed {
        /// The regression file.
        file: PathBuf,
        /// The panic message.
        message: String,
    },
    /// `--at` is past the run's last step.
    #[error("{file}: the run has {steps} steps; --at {at} is past its end (use 1 to {steps}); {verdict}")]
    PastEnd {
        /// The regression file.
        file: PathBuf,
        /// The step asked for.
        at: u64,
        /// The run's verdict.
        verdict: String,
        /// The steps the run had.
        steps: u64,
    },
    /// `--cluster` names no cluster of the scenario, or the scenario has several and none was named.
    #[error("{file}: {message}; the run's clusters: {clusters}")]
    Cluster {
        /// The regression file.
        file: PathBuf,
        /// What is wrong.
        message: String,
        /// The cluster names, comma-separated.
        clusters: String,
    },
}

/// What to replay.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// The regression file.
    pub file: PathBuf,
    /// The step (1-based: step 1 is the state right after the run's first successful write).
    pub at: u64,
    /// The cluster to serve (default: the one named `default`, or the only one).
    pub cluster: Option<String>,
}

/// A run's state at one step, ready to serve.
#[derive(Debug)]
pub struct Captured {
    /// The regression file.
    pub file: PathBuf,
    /// Its scenario.
    pub scenario: String,
    /// Its seed.
    pub seed: u64,
    /// The step served.
    pub step: u64,
    /// How many steps the run had.
    pub steps: u64,
    /// The cluster served.
    pub cluster: String,
    /// The cluster's state at the step.
    pub snapshot: Snapshot,
    /// The step's write in words (`create ConfigMap default/app`), if it was to this cluster.
    pub write: Option<String>,
    /// The run's verdict, in words (`the run failed: correctness: property ...`).
    pub verdict: String,
}

impl Captured {
    /// The one line `serve` prints at start.
    pub fn summary(&self) -> String {
        let write = match &self.write {
            Some(write) => format!("the step's write: {write}"),
            None => "the step's write went to another cluster".to_owned(),
        };
        format!(
            "serving {} (scenario {}, seed {}) at step {} of {} on cluster {}, read only; {write}; {}",
            self.file.display(),
            self.scenario,
            self.seed,
            self.step,
            self.steps,
            self.cluster,
            self.verdict
        )
    }

    /// The message of the 405 every write gets.
    pub fn read_only_message(&self) -> String {
        format!(
            "kube-sim serve is serving a replay of {} at step {} of {}: it is read only",
            self.file.display(),
            self.step,
            self.steps
        )
    }

    /// A live model holding the captured state, refusing writes.
    pub fn into_live(self) -> Live {
        let message = self.read_only_message();
        let server = ApiServer::from_snapshot(ServerConfig::default(), self.snapshot);
        Live::new(server, self.seed).read_only(message)
    }
}

/// Every cluster's state at one step, by cluster name.
// `pub` (hidden from the docs) for its test in tests/it/serve/replay.rs only.
#[doc(hidden)]
pub type Clusters = BTreeMap<Arc<str>, Snapshot>;

/// The clusters' states around the step asked for, filled in by [`CaptureAt`] during the run.
#[derive(Default)]
struct Capture {
    /// Steps seen so far.
    steps: u64,
    /// Every cluster's state at the step before the one asked for.
    before: Option<Clusters>,
    /// Every cluster's state at the step asked for, and the cluster its write went to.
    at: Option<(Clusters, Arc<str>)>,
}

/// The property that counts steps and keeps the snapshots of step `at` (and of the step before,
/// to name a deletion). It never fails.
struct CaptureAt {
    at: u64,
    capture: Arc<Mutex<Capture>>,
}

impl Property for CaptureAt {
    fn name(&self) -> &str {
        "serve-replay-capture"
    }
    fn check_step(&self, view: &StepView<'_>) -> Result<(), String> {
        let mut capture = self.capture.lock().unwrap_or_else(|p| p.into_inner());
        capture.steps += 1;
        if capture.steps + 1 == self.at {
            capture.before = Some(view.clusters.clone());
        } else if capture.steps == self.at {
            capture.at = Some((view.clusters.clone(), Arc::from(view.written_cluster)));
        }
        Ok(())
    }
}

/// The stack of the rerun's thread: as large as `kube-sim replay` gives its runs.
const RUN_THREAD_STACK_BYTES: usize = 4 << 20;

/// Rerun `config.file` and capture its cluster state at `config.at`.
pub fn capture(config: &ReplayConfig, registry: &Registry) -> Result<Captured, ReplayError> {
    let path = config.file.as_path();
    let load_error = |message: String| {
        // The loader's messages start with the path already.
        let prefix = format!("{}: ", path.display());
        let message = message.strip_prefix(&prefix).map(str::to_owned).unwrap_or(message);
        ReplayError::Load { file: path.to_owned(), message }
    };
    let (file, scenario) =
        sim::explore::replay::load(path, registry).map_err(|e| load_error(e.to_string()))?;
    let shared = Arc::new(Mutex::new(Capture::default()));
    // The file's plan, and its generated workload and recorded choices if it holds them: the
    // same world `kube-sim replay` runs. The capture goes first, so that it sees the write at
    // which another property fails.
    let builder = sim::explore::replay::world_of(scenario, &file)
        .property_first(CaptureAt { at: config.at, capture: shared.clone() })
        // The trace names who made the step's write, and with which verb.
        .keep_trace(true);
    let seed = file.seed;
    // A fresh thread per run, as every replay gets: madsim's runtime and std's HashMap order
    // are deterministic only then.
    let run = std::thread::Builder::new()
        .name(format!("sim-seed-{seed}"))
        .stack_size(RUN_THREAD_STACK_BYTES)
        .spawn(move || builder.run(seed))
        .map_err(|e| ReplayError::Crashed { file: path.to_owned(), message: e.to_string() })?
        .join();
    let report = match run {
        Ok(report) => report,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic with a non-string payload".to_owned());
            return Err(ReplayError::Crashed { file: path.to_owned(), message });
        }
    };
    let capture = std::mem::take(&mut *shared.lock().unwrap_or_else(|p| p.into_inner()));
    let steps = capture.steps;
    let Some((clusters, written)) = capture.at else {
        let verdict = run_verdict(&report.verdict);
        return Err(ReplayError::PastEnd { file: path.to_owned(), at: config.at, steps, verdict });
    };
    let cluster = pick_cluster(path, &clusters, config.cluster.as_deref())?;
    let snapshot = clusters[cluster.as_str()].clone();
    let write = (*written == *cluster).then(|| {
        let before = capture.before.as_ref().and_then(|b| b.get(cluster.as_str()));
        let removed = before.and_then(|b| removed_object(b, &snapshot));
        let call = (clusters.len() == 1)
            .then(|| traced_write(report.trace.entries(), snapshot.revision, removed.as_ref()));
        call.flatten().unwrap_or_else(|| describe_write(before, &snapshot))
    });
    Ok(Captured {
        file: path.to_owned(),
        scenario: file.scenario,
        seed,
        step: config.at,
        steps,
        cluster,
        snapshot,
        write,
        verdict: run_verdict(&report.verdict),
    })
}

/// The run's verdict in words.
fn run_verdict(verdict: &sim::Verdict) -> String {
    match verdict {
        sim::Verdict::Pass => "the run passed".to_owned(),
        _ => format!("the run failed: {verdict}"),
    }
}

/// The cluster to serve: the one asked for, else `default`, else the only one.
// `pub` (hidden from the docs) for its test in tests/it/serve/replay.rs only.
#[doc(hidden)]
pub fn pick_cluster(file: &Path, clusters: &Clusters, asked: Option<&str>) -> Result<String, ReplayError> {
    let names = || clusters.keys().map(|k| &**k).collect::<Vec<_>>().join(", ");
    let error = |message: String| ReplayError::Cluster { file: file.to_owned(), message, clusters: names() };
    match asked {
        Some(name) if clusters.contains_key(name) => Ok(name.to_owned()),
        Some(name) => Err(error(format!("the scenario has no cluster named {name}"))),
        None if clusters.contains_key("default") => Ok("default".to_owned()),
        None if clusters.len() == 1 => Ok(clusters.keys().next().map(|k| k.to_string()).unwrap_or_default()),
        None => Err(error("the scenario has several clusters: name one with --cluster".to_owned())),
    }
}

/// The one write call of the trace answered with resourceVersion `revision`, in words
/// (`zk-operator create persistentvolumeclaims/default/data-zk-0 (resourceVersion 12)`): who made
/// it and with which verb. `None` when no call or several match (several clusters count
/// revisions apart).
///
/// A delete that removes its object answers with the object as it was last stored (its older
/// resourceVersion, as kube-apiserver answers), so the write of a step that `removed` an object
/// is the one delete of that object's trace target answered at its last resourceVersion.
fn traced_write(entries: &[TraceEntry], revision: Revision, removed: Option<&Removed>) -> Option<String> {
    let rv = revision.to_string();
    let mut requests = BTreeMap::new();
    let mut matches = Vec::new();
    let mut deletes = Vec::new();
    for entry in entries {
        match &entry.event {
            TraceEvent::ApiRequest { call, verb, target } => {
                requests.insert(*call, (entry.node.clone(), *verb, target.as_str()));
            }
            TraceEvent::ApiResponse { call, result: Ok(answered) } => {
                let Some((node, verb, target)) = requests.get(call) else { continue };
                if matches!(*verb, "get" | "list" | "watch") {
                    continue;
                }
                if *answered == rv {
                    matches.push(format!("{node} {verb} {target} (resourceVersion {rv})"));
                } else if let Some(removed) = removed
                    && *verb == "delete"
                    && *target == removed.target
                    && *answered == removed.resource_version
                {
                    deletes.push(format!("{node} {verb} {target} (resourceVersion {rv})"));
                }
            }
            _ => {}
        }
    }
    match (matches.as_slice(), deletes.as_slice()) {
        ([only], _) | ([], [only]) => Some(only.clone()),
        _ => None,
    }
}

/// An object the step's write removed: its trace target (`plural[/namespace]/name`, as the
/// transport names requests) and its last resourceVersion.
struct Removed {
    target: String,
    resource_version: String,
}

fn removed_object(before: &Snapshot, after: &Snapshot) -> Option<Removed> {
    let (key, object) = before.objects.iter().find(|(key, _)| after.get(key).is_none())?;
    let plural = key.resource.rsplit('/').next().unwrap_or_default();
    let target = if key.namespace.is_empty() {
        format!("{plural}/{}", key.name)
    } else {
        format!("{plural}/{}/{}", key.namespace, key.name)
    };
    Some(Removed { target, resource_version: object.metadata.resource_version.clone()? })
}

/// The write that made `after` from `before`: the object whose resourceVersion is the
/// snapshot's revision was created or updated; otherwise an object of `before` is gone.
// `pub` (hidden from the docs) for its test in tests/it/serve/replay.rs only.
#[doc(hidden)]
pub fn describe_write(before: Option<&Snapshot>, after: &Snapshot) -> String {
    let revision = after.revision.to_string();
    let written =
        after.objects.iter().find(|(_, o)| o.metadata.resource_version.as_deref() == Some(revision.as_str()));
    if let Some((key, object)) = written {
        let verb = match before.map(|b| b.get(key).is_some()) {
            _ if object.metadata.deletion_timestamp.is_some() => "start deleting",
            Some(false) => "create",
            Some(true) => "update",
            // Step 1: the state before it is not kept (the run's setup is no step).
            None => "create or update",
        };
        return format!("{verb} {} (resourceVersion {revision})", object_name(key, object));
    }
    let removed = before.and_then(|b| b.objects.iter().find(|(key, _)| after.get(key).is_none()));
    match removed {
        Some((key, object)) => format!("delete {}", object_name(key, object)),
        None => format!("a write at resourceVersion {revision}"),
    }
}

/// `Kind namespace/name` (or `Kind name` when cluster-scoped).
fn object_name(key: &model_apiserver::ObjectKey, object: &kube_core::DynamicObject) -> String {
    let kind = object.types.as_ref().map_or(&*key.resource, |t| t.kind.as_str());
    if key.namespace.is_empty() {
        format!("{kind} {}", key.name)
    } else {
        format!("{kind} {}/{}", key.namespace, key.name)
    }
}
