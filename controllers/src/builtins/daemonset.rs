//! The DaemonSet controller: one Pod per Node that the DaemonSet selects, rolled from one
//! template revision to the next, as kube-controller-manager's `DaemonSetsController`
//! (`pkg/controller/daemon`).
//!
//! - Nodes are the model's Node objects (the kubelet-lite's own, those a scenario declares or
//!   kubectl creates): a Node runs the DaemonSet's Pod when it fits the template's
//!   `nodeSelector` and required node affinity and has no `NoSchedule` or `NoExecute` taint the
//!   Pod does not tolerate (upstream's `predicates`), counting the tolerations every daemon Pod
//!   gets ([`DAEMON_TOLERATIONS`], added to the Pods it creates as `CreatePodTemplate` adds them),
//!   so a cordoned or not-ready Node keeps its daemons. A Pod already on a Node stays while the
//!   Node's `NoExecute` taints are tolerated (`shouldContinueRunning`): a `NoSchedule` taint it
//!   does not tolerate (the node lifecycle controller's `not-ready` one) only keeps new Pods off.
//! - Pods are pinned with `spec.nodeName` (upstream sets a node affinity and lets the scheduler
//!   bind; the kubelet-lite runs Pods by `nodeName` either way), named `<ds>-<random>` and
//!   labelled `controller-revision-hash` (the revision's hash) and `pod-template-generation`.
//! - Per Node: a missing Pod is created, surplus Pods are deleted (the oldest one stays), a
//!   Failed Pod is deleted (and so recreated), and a Pod on a Node that should not run one, nor
//!   keep one, is deleted.
//! - Revisions: ControllerRevisions `<ds>-<hash>` ([`super::controller_revisions`]), the hash
//!   being the template's; old ones no Pod uses are deleted beyond `revisionHistoryLimit`
//!   (default 10).
//! - RollingUpdate with `maxSurge` 0 (the default): old Pods that are not available are deleted
//!   at once; available ones while fewer than `maxUnavailable` (default 1; a percentage of the
//!   desired number, rounded up) are unavailable, Nodes in name order. With `maxSurge` (a number or
//!   a percentage, rounded up): a Node's new Pod is made beside its old one, at once where the old
//!   one is not available, else while fewer than `maxSurge` new Pods are not available yet; the
//!   old Pod goes once the new one is available (or once it is not ready itself), so a Node keeps
//!   an available Pod through the update. `OnDelete`: Pods are replaced only when deleted.
//! - Status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`,
//!   `numberReady`, `updatedNumberScheduled`, `numberAvailable`, `numberUnavailable`,
//!   `observedGeneration`: what `kubectl rollout status ds/<name>` reads. Available is ready for
//!   more than `minReadySeconds` (virtual clock), in the status and the rolling update alike;
//!   while some Pods are ready but not available, the DaemonSet is synced again that much later.
//! - Events: `SuccessfulCreate` ("Created pod: x"), `SuccessfulDelete` ("Deleted pod: x") and the
//!   Warnings `FailedCreate` / `FailedDelete` ([`super::pod_control`]).
//! - Nodes and Pods are read from the controller's informer caches, as upstream reads its
//!   listers, and the create and delete steps (per Node and the rolling update) wait on
//!   [`expectations`](super::expectations) as upstream's do: a sync that runs before the Pod cache
//!   shows the Pods the previous one created or deleted writes the status only. Syncs start once
//!   the caches have their first list. ControllerRevisions are read from a cache too
//!   ([`super::controller_revisions`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::events::Recorder;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, Toleration};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::versions::WorkloadSpec;
use sim::api::{Api, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::controller_revisions::{self, History, NewRevision};
use super::error::Error;
use super::expectations::{Expectations, Wait};
use super::pod_control::{self, Created};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::statefulset::REVISION_LABEL;
use super::templates::{PodName, pod_from_template};
use super::{events, labels, owners, pod_state, scheduler};

/// The DaemonSet controller's node.
pub const NODE: &str = "daemonset-controller";
/// The label holding the DaemonSet generation a Pod was made at.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// `revisionHistoryLimit` when unset.
pub const REVISION_HISTORY_LIMIT_DEFAULT: i32 = 10;
/// At most this many Pods are created or deleted in one sync (upstream's burst).
pub const POD_WRITES_PER_SYNC_MAX: usize = 250;

/// Add the DaemonSet controller to a world, on node [`NODE`].
pub fn daemonset_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every reconcile gets.
pub struct Context {
    client: sim::Client,
    recorder: Recorder,
    /// The Pod informer's cache, which syncs read.
    pods: Store<Pod>,
    /// The Node informer's cache, which syncs read.
    nodes: Store<Node>,
    /// The ControllerRevision informer's cache, which the history reads.
    revisions: Store<ControllerRevision>,
    /// What earlier syncs created and deleted that `pods` may not show yet.
    expectations: Expectations,
}

/// The DaemonSet controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let (pods, nodes, revisions) = futures::join!(
        super::synced_cache::<Pod>(&client),
        super::synced_cache::<Node>(&client),
        super::synced_cache::<ControllerRevision>(&client)
    );
    let (Some((pods, pod_changes)), Some((nodes, node_changes)), Some((revisions, _))) =
        (pods, nodes, revisions)
    else {
        return;
    };
    let controller = Controller::new(Api::<DaemonSet>::all(client.clone()), watcher::Config::default());
    let sets = controller.store();
    let ctx = Arc::new(Context {
        recorder: events::recorder(&client, NODE),
        client,
        pods,
        nodes,
        revisions,
        expectations: Expectations::default(),
    });
    controller
        .owns_shared_stream(pod_changes)
        .watches_shared_stream(node_changes, move |_node: Arc<Node>| every_daemon_set(&sets))
        .run_limited_by(RateLimiter::default(), reconcile, ctx)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A Node changed: every DaemonSet may want a Pod on it, or one fewer.
fn every_daemon_set(sets: &Store<DaemonSet>) -> Vec<ObjectRef<DaemonSet>> {
    sets.state().iter().map(|ds| ObjectRef::from_obj(&**ds)).collect()
}

/// The tolerations upstream adds to every daemon Pod (`AddOrUpdateDaemonPodTolerations`): key,
/// effect; each with operator `Exists`. A `hostNetwork` Pod also tolerates
/// [`NETWORK_UNAVAILABLE`].
pub const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
/// The taint a `hostNetwork` daemon Pod tolerates besides [`DAEMON_TOLERATIONS`].
pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// `spec`'s tolerations with the daemon ones added after them, each unless an equal one is there
/// (`AddOrUpdateTolerationInPodSpec`).
pub fn daemon_tolerations(spec: &PodSpec) -> Vec<Toleration> {
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    let host_network = spec.host_network == Some(true);
    let network = host_network.then_some((NETWORK_UNAVAILABLE, "NoSchedule"));
    for (key, effect) in DAEMON_TOLERATIONS.into_iter().chain(network) {
        let toleration = Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some(effect.to_owned()),
            ..Toleration::default()
        };
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    tolerations
}

/// Whether `node` should run a Pod of `ds` (upstream's `predicates`): the template's node
/// selector and required node affinity match it, and it has no `NoSchedule` or `NoExecute` taint
/// the daemon Pod would not tolerate.
pub fn should_run(ds: &DaemonSet, node: &Node) -> bool {
    let Some(spec) = ds.spec().template.spec.as_ref() else { return true };
    scheduler::spec_matches_affinity(spec, node)
        && scheduler::untolerated_taint(daemon_tolerations(spec).iter(), node).is_none()
}

/// Whether a Pod of `ds` already on `node` may stay there (upstream's `shouldContinueRunning`):
/// the node selector and affinity match, and every `NoExecute` taint is tolerated (a `NoSchedule`
/// one only keeps new Pods off).
pub fn should_continue_running(ds: &DaemonSet, node: &Node) -> bool {
    let Some(spec) = ds.spec().template.spec.as_ref() else { return true };
    let no_execute = super::taint_eviction::no_execute_taints(node);
    scheduler::spec_matches_affinity(spec, node)
        && super::taint_eviction::matching_tolerations(&no_execute, &daemon_tolerations(spec)).is_some()
}

fn is_on_delete(ds: &DaemonSet) -> bool {
    ds.spec().update_strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("OnDelete")
}

/// `maxUnavailable` against the desired number (percentages round up, as upstream); at least 1
/// unless the update surges (`updatedDesiredNodeCounts`).
// `pub` (hidden from the docs) for its test in tests/it/builtins/daemonset.rs only.
#[doc(hidden)]
pub fn max_unavailable(ds: &DaemonSet, desired: usize) -> usize {
    let rolling = ds.spec().update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    let n = match rolling.and_then(|r| r.max_unavailable.clone()) {
        None => 1,
        Some(value) => scaled(&value, desired),
    };
    if max_surge(ds, desired) == 0 { n.max(1) } else { n }
}

/// `maxSurge` against the desired number (percentages round up); 0 by default.
pub fn max_surge(ds: &DaemonSet, desired: usize) -> usize {
    let rolling = ds.spec().update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    rolling.and_then(|r| r.max_surge.as_ref()).map_or(0, |value| scaled(value, desired))
}

/// An `IntOrString` count: the integer, or the percentage of `of`, rounded up
/// (`GetScaledValueFromIntOrPercent` with `roundUp`).
fn scaled(value: &IntOrString, of: usize) -> usize {
    match value {
        IntOrString::Int(n) => usize::try_from(*n).unwrap_or(0),
        IntOrString::String(s) => {
            let percent: usize = s.strip_suffix('%').and_then(|p| p.parse().ok()).unwrap_or(0);
            (percent * of).div_ceil(100)
        }
    }
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

/// Sync one DaemonSet.
pub async fn reconcile(ds: Arc<DaemonSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = ds.name_any();
    let namespace =
        ds.namespace().ok_or(Error::MissingNamespace { kind: "DaemonSet", name: name.clone() })?;
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if labels::is_empty(&ds.spec().selector) {
        let reason = "empty selector is invalid for daemonset".to_owned();
        return Err(Error::InvalidSpec { kind: "DaemonSet", name, reason });
    }
    let uid = ds.uid().unwrap_or_default();
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let nodes = ctx.nodes.state();
    let history = History::new(&ctx.client, &namespace, &ctx.revisions);
    let revisions = history.list(&uid);
    let (revision, hash, collision_count) = current_revision(&ds, &history, &revisions).await?;
    let wait = ctx.expectations.check(&uid, &namespace, &ctx.pods, sim::time::now());
    let mut pods = ctx.pods.state_filter(|p| {
        p.metadata.namespace.as_deref() == Some(namespace.as_str())
            && owners::is_controlled_by(&p.metadata, &uid)
    });
    pods.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref(), a.metadata.name.as_ref())
            .cmp(&(b.metadata.creation_timestamp.as_ref(), b.metadata.name.as_ref()))
    });
    let mut by_node: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in &pods {
        by_node.entry(node_of(pod).unwrap_or_default().to_owned()).or_default().push(pod);
    }
    let sync = Sync { ds: &ds, uid: &uid, ctx: &ctx, api: &pods_api, hash: &hash };
    let now = sim::time::now();
    let status = status_of(&ds, &nodes, &by_node, &hash, collision_count, now);
    let recheck = available_recheck(&ds, &status);
    if let Wait::Pending(expire) = wait {
        // Earlier creates or deletes not in the cache yet: the status only (`syncDaemonSet`).
        update_status(&ds, status, &ctx.client, &namespace).await?;
        return Ok(Action::requeue(recheck.map_or(expire, |r| r.min(expire))));
    }
    let mut writes = 0;
    let surging =
        !is_on_delete(&ds) && max_surge(&ds, nodes.iter().filter(|n| should_run(&ds, n)).count()) > 0;
    // manage: one running Pod on each Node that should run one, none elsewhere.
    for node in &nodes {
        let node_name = node.name_any();
        let on_node: Vec<&Pod> = by_node
            .get(&node_name)
            .into_iter()
            .flatten()
            .filter(|p| !pod_state::is_terminating(p))
            .copied()
            .collect();
        let run = should_run(&ds, node);
        if !run && !should_continue_running(&ds, node) {
            for pod in on_node {
                writes += sync.delete(pod).await?;
            }
            continue;
        }
        // A Node that should not run a new Pod but tolerates the one there (a `NoSchedule` taint
        // such as `not-ready`'s) keeps it: only failed and surplus Pods go.
        let (failed, running): (Vec<&Pod>, Vec<&Pod>) =
            on_node.into_iter().partition(|p| pod_state::phase(p) == pod_state::PHASE_FAILED);
        for pod in failed {
            writes += sync.delete(pod).await?;
        }
        match running.split_first() {
            None if !run => {}
            None if !by_node.get(&node_name).into_iter().flatten().any(|p| pod_state::is_terminating(p)) => {
                writes += sync.create(&node_name).await?;
            }
            None => {}
            Some((_oldest, surplus)) if !surging => {
                for pod in surplus {
                    writes += sync.delete(pod).await?;
                }
            }
            Some(_) => {
                for pod in surge_surplus(&running, &hash, ds.spec().min_ready_seconds, now) {
                    writes += sync.delete(pod).await?;
                }
            }
        }
        if writes >= POD_WRITES_PER_SYNC_MAX {
            break;
        }
    }
    if surging {
        sync.surge_update(&nodes, &by_node, now).await?;
    } else if !is_on_delete(&ds) {
        sync.rolling_update(&nodes, &by_node, now).await?;
    }
    let live: Vec<&str> =
        pods.iter().filter_map(|p| p.labels().get(REVISION_LABEL).map(String::as_str)).collect();
    let kept = |r: &ControllerRevision| {
        r.labels().get(REVISION_LABEL).is_some_and(|h| live.contains(&h.as_str()))
            || r.name_any() == revision.name_any()
    };
    let limit = ds.spec().revision_history_limit.unwrap_or(REVISION_HISTORY_LIMIT_DEFAULT);
    history.truncate(&revisions, kept, limit).await?;
    update_status(&ds, status, &ctx.client, &namespace).await?;
    Ok(recheck.map_or_else(Action::await_change, Action::requeue))
}

/// The running Pods of one Node to delete while the update surges (`podsShouldBeOnNode`): all
/// but the oldest Pod of the current revision and the oldest of another; of those two, the old
/// one once it is not ready, or once the new one is available. `running` is oldest first.
fn surge_surplus<'a>(
    running: &[&'a Pod],
    hash: &str,
    min_ready: Option<i32>,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<&'a Pod> {
    let (mut oldest_new, mut oldest_old, mut surplus) = (None, None, Vec::new());
    for pod in running {
        let slot = if pod.labels().get(REVISION_LABEL).map(String::as_str) == Some(hash) {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(*pod);
        } else {
            surplus.push(*pod);
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old)
        && (!pod_state::is_ready(old) || pod_state::is_available_at(new, min_ready, now))
    {
        surplus.push(old);
    }
    surplus
}

/// When to look again for Pods ready but not yet available: `minReadySeconds` later, while
/// some are (upstream's `updateDaemonSetStatus`); no Pod event marks the moment they become so.
fn available_recheck(ds: &DaemonSet, status: &DaemonSetStatus) -> Option<Duration> {
    let min_ready = ds.spec().min_ready_seconds.unwrap_or(0);
    (min_ready > 0 && status.number_ready != status.number_available.unwrap_or(0))
        .then(|| Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)))
}

/// The revision of the current template (created or moved up as needed), its hash, and the
/// collision count used.
async fn current_revision(
    ds: &DaemonSet,
    history: &History<'_>,
    revisions: &[ControllerRevision],
) -> Result<(ControllerRevision, String, Option<i32>), Error> {
    let mut collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
    let template_bytes = serde_json::to_vec(&ds.spec().template).unwrap_or_default();
    let hash_for = |count: Option<i32>| controller_revisions::hash(&template_bytes, count);
    let namespace = ds.namespace().unwrap_or_default();
    let new = NewRevision {
        owner: owners::controller_ref(ds),
        namespace: &namespace,
        labels: ds.spec().template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default(),
        hash_label: REVISION_LABEL,
        data: controller_revisions::revision_data(&ds.spec().template),
        hash_for: &hash_for,
    };
    let revision = history.update_revision(revisions, new, &mut collision_count).await?;
    let hash = revision.labels().get(REVISION_LABEL).cloned().unwrap_or_else(|| hash_for(collision_count));
    Ok((revision, hash, collision_count))
}

/// What one sync writes through.
struct Sync<'a> {
    ds: &'a DaemonSet,
    /// The DaemonSet's uid, which its expectations are kept under.
    uid: &'a str,
    ctx: &'a Context,
    api: &'a Api<Pod>,
    hash: &'a str,
}

impl Sync<'_> {
    /// Create the Pod of `node`; 1 write.
    async fn create(&self, node: &str) -> Result<usize, Error> {
        let ds = self.ds;
        let namespace = ds.namespace().unwrap_or_default();
        let mut pod = pod_from_template(
            &ds.spec().template,
            PodName::Generate(format!("{}-", ds.name_any())),
            &namespace,
            owners::controller_ref(ds),
        );
        let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(REVISION_LABEL.to_owned(), self.hash.to_owned());
        labels.insert(TEMPLATE_GENERATION_LABEL.to_owned(), ds.metadata.generation.unwrap_or(0).to_string());
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.tolerations = Some(daemon_tolerations(spec));
        spec.node_name = Some(node.to_owned());
        match pod_control::create(self.api, &pod, ds, &self.ctx.recorder).await? {
            Created::Pod(created) => {
                self.ctx.expectations.created(self.uid, created.name_any(), sim::time::now());
                Ok(1)
            }
            // Refused as every create in the namespace will be: nothing to do, as upstream.
            Created::NamespaceTerminating => Ok(0),
        }
    }

    /// Delete `pod` (uid precondition); 1 write.
    async fn delete(&self, pod: &Pod) -> Result<usize, Error> {
        let deleted = pod_control::delete(self.api, pod, self.ds, &self.ctx.recorder).await?;
        // Gone or going either way: the cache is to show it.
        let (name, uid) = (pod.name_any(), pod.uid().unwrap_or_default());
        self.ctx.expectations.deleted(self.uid, name, uid, sim::time::now());
        Ok(usize::from(deleted))
    }

    /// The Nodes that should run the DaemonSet's Pod, in name order.
    fn desired<'n>(&self, nodes: &'n [Arc<Node>]) -> Vec<&'n Node> {
        nodes.iter().map(|n| &**n).filter(|n| should_run(self.ds, n)).collect()
    }

    /// RollingUpdate with `maxSurge` 0 (`rollingUpdate`): delete old Pods that are not available,
    /// and available ones within the `maxUnavailable` budget. Upstream walks `nodeToDaemonPods`
    /// once `updatedDesiredNodeCounts` added the Nodes that should run a Pod: every Node with a
    /// daemon Pod is rolled too, one kept on a Node that should not run a new one (not Ready,
    /// tainted `NoSchedule`) among them; here in name order (upstream walks a map).
    async fn rolling_update(
        &self,
        nodes: &[Arc<Node>],
        by_node: &BTreeMap<String, Vec<&Pod>>,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<(), Error> {
        let min_ready = self.ds.spec().min_ready_seconds;
        let desired = self.desired(nodes);
        let budget = max_unavailable(self.ds, desired.len());
        let names: BTreeSet<String> = desired
            .iter()
            .map(|node| node.name_any())
            .chain(by_node.keys().filter(|name| !name.is_empty()).cloned())
            .collect();
        let mut unavailable = 0;
        let mut replace_now: Vec<&Pod> = Vec::new();
        let mut candidates: Vec<&Pod> = Vec::new();
        for name in &names {
            let pods: Vec<&Pod> = by_node.get(name).into_iter().flatten().copied().collect();
            let is_new = |p: &&Pod| p.labels().get(REVISION_LABEL).map(String::as_str) == Some(self.hash);
            let new = pods.iter().find(|p| is_new(p) && !pod_state::is_terminating(p));
            let old = pods.iter().find(|p| !is_new(p) && !pod_state::is_terminating(p));
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !pod_state::is_available_at(new, min_ready, now) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !pod_state::is_available_at(old, min_ready, now) {
                        replace_now.push(old);
                    } else if unavailable < budget {
                        candidates.push(old);
                    }
                }
            }
        }
        let remaining = budget.saturating_sub(unavailable).min(candidates.len());
        for pod in replace_now.into_iter().chain(candidates.into_iter().take(remaining)) {
            self.delete(pod).await?;
        }
        Ok(())
    }
}

impl Sync<'_> {
    /// RollingUpdate with `maxSurge` (`rollingUpdate`'s surge path): a Node whose old Pod is not
    /// available gets its new Pod at once; others get theirs while fewer than `maxSurge` new
    /// Pods are not available yet, Nodes in name order (upstream walks a map); an old Pod goes
    /// once the new one beside it is available, so every Node keeps an available Pod.
    async fn surge_update(
        &self,
        nodes: &[Arc<Node>],
        by_node: &BTreeMap<String, Vec<&Pod>>,
        now: k8s_openapi::jiff::Timestamp,
    ) -> Result<(), Error> {
        let min_ready = self.ds.spec().min_ready_seconds;
        let desired = self.desired(nodes);
        let max_surge = max_surge(self.ds, desired.len());
        let (mut surging, mut allowed, mut candidates, mut old_to_delete) =
            (0, Vec::new(), Vec::new(), Vec::new());
        for node in desired {
            let name = node.name_any();
            let live: Vec<&Pod> = by_node
                .get(&name)
                .into_iter()
                .flatten()
                .filter(|p| !pod_state::is_terminating(p) && pod_state::phase(p) != pod_state::PHASE_FAILED)
                .copied()
                .collect();
            let is_new = |p: &&Pod| p.labels().get(REVISION_LABEL).map(String::as_str) == Some(self.hash);
            let (new, old): (Vec<&Pod>, Vec<&Pod>) = live.into_iter().partition(is_new);
            if new.len() > 1 || old.len() > 1 {
                // `findUpdatedPodsOnNode` fails: the manage step cleans the Node up first.
                surging += 1;
                continue;
            }
            match (new.first(), old.first()) {
                (_, None) => {}
                (None, Some(old)) if !pod_state::is_available_at(old, min_ready, now) => allowed.push(name),
                (None, Some(_)) => {
                    if surging < max_surge {
                        candidates.push(name);
                    }
                }
                (Some(new), Some(old)) => {
                    if pod_state::is_available_at(new, min_ready, now) {
                        old_to_delete.push(*old);
                    } else {
                        surging += 1;
                    }
                }
            }
        }
        let remaining = max_surge.saturating_sub(surging).min(candidates.len());
        for pod in old_to_delete {
            self.delete(pod).await?;
        }
        for node in allowed.iter().chain(candidates.iter().take(remaining)) {
            self.create(node).await?;
        }
        Ok(())
    }
}

/// The status the Nodes and Pods give (`updateDaemonSetStatus`).
fn status_of(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    by_node: &BTreeMap<String, Vec<&Pod>>,
    hash: &str,
    collision_count: Option<i32>,
    now: k8s_openapi::jiff::Timestamp,
) -> DaemonSetStatus {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (mut desired, mut current, mut misscheduled, mut ready, mut updated, mut available) =
        (0, 0, 0, 0, 0, 0);
    for node in nodes {
        let pods: Vec<&Pod> = by_node
            .get(&node.name_any())
            .into_iter()
            .flatten()
            .filter(|p| !pod_state::is_terminating(p))
            .copied()
            .collect();
        let Some(pod) = pods.first() else {
            desired += usize::from(should_run(ds, node));
            continue;
        };
        if !should_run(ds, node) {
            misscheduled += 1;
            continue;
        }
        desired += 1;
        current += 1;
        if pod_state::is_ready(pod) {
            ready += 1;
        }
        if pod_state::is_available_at(pod, ds.spec().min_ready_seconds, now) {
            available += 1;
        }
        if pods.iter().any(|p| p.labels().get(REVISION_LABEL).map(String::as_str) == Some(hash)) {
            updated += 1;
        }
    }
    DaemonSetStatus {
        desired_number_scheduled: count(desired),
        current_number_scheduled: count(current),
        number_misscheduled: count(misscheduled),
        number_ready: count(ready),
        updated_number_scheduled: Some(count(updated)),
        number_available: Some(count(available)),
        number_unavailable: Some(count(desired.saturating_sub(available))),
        observed_generation: ds.metadata.generation,
        collision_count,
        conditions: ds.status.as_ref().and_then(|s| s.conditions.clone()),
    }
}

async fn update_status(
    ds: &DaemonSet,
    status: DaemonSetStatus,
    client: &sim::Client,
    namespace: &str,
) -> Result<(), Error> {
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    super::status_patch::write(&api, &ds.name_any(), ds.status.as_ref(), &status).await
}
