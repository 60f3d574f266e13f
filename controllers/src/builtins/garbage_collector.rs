//! The garbage collector: deletes objects whose owners are gone, and carries out foreground and
//! orphan propagation, as kube-controller-manager's `GarbageCollector`.
//!
//! ## What it does
//!
//! - **Background.** An object whose owner references all point to absent owners is deleted
//!   (with its uid as precondition, and with the propagation its own finalizers ask for). An
//!   owner is absent when no object of the referenced kind and name exists where the reference
//!   resolves, *or one exists with another uid*: owners are matched by uid, so an owner deleted
//!   and recreated under the same name does not keep the old one's dependents.
//! - **Partial ownership.** An object that still has a live owner loses only its references to
//!   absent owners (and to owners being deleted in the foreground).
//! - **Foreground.** An owner being deleted with the `foregroundDeletion` finalizer has its
//!   dependents deleted (a dependent that has dependents of its own is deleted in the
//!   foreground too); once none of its dependents with `blockOwnerDeletion: true` is left, the
//!   finalizer is removed and the owner goes. Dependents without `blockOwnerDeletion` do not
//!   hold the owner up; they are collected as orphans afterwards.
//! - **Orphan.** An owner being deleted with the `orphan` finalizer has its references removed
//!   from every dependent, then the finalizer removed.
//!
//! ## Cross-namespace owner references
//!
//! As the real collector since Kubernetes 1.20: an owner reference carries no namespace, so a
//! namespaced dependent's reference to a namespaced kind resolves in the dependent's own
//! namespace, and one to a cluster-scoped kind resolves cluster-wide. An owner of that name and
//! uid in *another* namespace is therefore not found: the reference counts as absent and the
//! dependent is collected. A cluster-scoped dependent cannot have a namespaced owner: such a
//! reference is unresolvable and likewise counts as absent. (The real collector also records an
//! `OwnerRefInvalidNamespace` event; this one does not.) A reference to a kind that is not served
//! cannot be checked and keeps the dependent, as the real collector retries it forever.
//!
//! ## How
//!
//! The real collector keeps a graph fed by a dynamic informer per resource type. This one keeps
//! an informer cache per built-in kind and per CRD kind (discovered by watching CRDs), and every
//! [`SCAN_INTERVAL`] rebuilds the graph (uids, owners, dependents) from the caches. Caches may be
//! stale, so before acting on an object it re-reads the object and any owner the cache does not
//! show from the server, as the real collector does before it deletes.
//!
//! A scan that finds every cache as the last scan left it, when that scan decided everything
//! from the caches alone (no request, no error), is skipped: it would decide the same again, as
//! the real collector, driven by events, does nothing while none arrive.
// NEEDS(sim): a dynamic, multi-kind watch with event callbacks (kube-runtime's `metadata_watcher`
// over every discovered resource, or `Controller::reconcile_on(stream)`), so that the collector
// is event-driven instead of rescanning its caches.
// Not modelled: the real collector's cycle breaking (unblocking owner references of a dependent
// that is itself deleting dependents), and Events.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_core::DynamicObject;
use sim::api::{Api, DeleteParams, Patch, PatchParams, Preconditions, PropagationPolicy};
use sim::runtime::reflector::{self, Store};
use sim::runtime::watcher;
use sim::{Clients, SimBuilder};

use super::error::has_code;
use super::kinds::{self, Kind};

/// The garbage collector's node.
pub const NODE: &str = "garbage-collector";
/// How often the graph is rebuilt from the caches and acted on: well under the world's quiet
/// period, so a collection due is never mistaken for quiescence.
pub const SCAN_INTERVAL: Duration = Duration::from_millis(100);
/// The finalizer of foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer of orphan deletion.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// Add the garbage collector to a world, on node [`NODE`].
pub fn garbage_collector(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// The garbage collector's main future: runs for the node's lifetime (killing the node stops
/// it), one scan per [`SCAN_INTERVAL`].
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let crds =
        reflector::informer(Api::<CustomResourceDefinition>::all(client.clone()), watcher::Config::default());
    let mut graph = Graph { client, watched: Vec::new(), settled: false };
    for kind in kinds::builtin_kinds() {
        graph.watch(kind);
    }
    // The CRD cache's change count when its kinds were last looked at: a new kind comes with a
    // change, so an unchanged cache has none to watch.
    let mut crds_seen = None;
    loop {
        madsim::time::sleep(SCAN_INTERVAL).await;
        let crds_now = Some(crds.changes());
        if crds_seen != crds_now {
            crds_seen = crds_now;
            for crd in crds.state() {
                if let Some(kind) = kinds::crd_kind(&crd) {
                    graph.watch(kind);
                }
            }
        }
        graph.scan().await;
    }
}

/// One watched kind.
struct Watched {
    kind: Arc<Kind>,
    store: Store<DynamicObject>,
    /// The store's [`Store::changes`] when the last snapshot was taken.
    seen: Option<u64>,
}

/// One object of the graph.
struct Node {
    kind: Arc<Kind>,
    object: Arc<DynamicObject>,
}

impl Node {
    fn meta(&self) -> &ObjectMeta {
        &self.object.metadata
    }
    fn uid(&self) -> &str {
        self.meta().uid.as_deref().unwrap_or_default()
    }
    fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or_default()
    }
    fn owners(&self) -> &[OwnerReference] {
        self.meta().owner_references.as_deref().unwrap_or_default()
    }
}

/// What an owner reference points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// An owner that exists and is not being deleted in the foreground.
    Solid,
    /// An owner being deleted in the foreground: its dependents go first.
    Waiting,
    /// No such owner where the reference resolves (or one with another uid).
    Dangling,
}

/// How a scan decided what an object needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decided {
    /// From the caches alone, without a request: nothing to do.
    FromCache,
    /// With requests to the server (reads or writes), whatever they answered.
    WithRequests,
}

fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

fn owner_state(object: &DynamicObject) -> Owner {
    let meta = &object.metadata;
    if meta.deletion_timestamp.is_some() && has_finalizer(meta, FOREGROUND_FINALIZER) {
        Owner::Waiting
    } else {
        Owner::Solid
    }
}

/// The graph of one scan: every cached object, by uid, and each owner uid's dependents.
///
/// The indexes are sorted index lists into `nodes`, searched by the uids the nodes hold, instead
/// of maps keyed by copies of those uids: a scan runs every [`SCAN_INTERVAL`] over every cached
/// object, and copying each uid into a map was most of what it cost.
struct Snapshot {
    nodes: Vec<Node>,
    /// Every node's index, by uid (stably: among equal uids the last node is the one found).
    by_uid: Vec<usize>,
    /// `(node, reference)` for every owner reference of every node, by the owner's uid (stably:
    /// a uid's dependents in node order).
    dependents: Vec<(usize, usize)>,
}

impl Snapshot {
    fn new(nodes: Vec<Node>) -> Self {
        let mut by_uid: Vec<usize> = (0..nodes.len()).collect();
        by_uid.sort_by(|&a, &b| nodes[a].uid().cmp(nodes[b].uid()));
        let mut dependents: Vec<(usize, usize)> = nodes
            .iter()
            .enumerate()
            .flat_map(|(index, node)| (0..node.owners().len()).map(move |reference| (index, reference)))
            .collect();
        dependents.sort_by(|&a, &b| Self::owner_uid_in(&nodes, a).cmp(Self::owner_uid_in(&nodes, b)));
        Snapshot { nodes, by_uid, dependents }
    }

    fn owner_uid_in(nodes: &[Node], (index, reference): (usize, usize)) -> &str {
        &nodes[index].owners()[reference].uid
    }

    /// The node with this uid (the last, should two share it).
    fn node_by_uid(&self, uid: &str) -> Option<&Node> {
        let end = self.by_uid.partition_point(|&i| self.nodes[i].uid() <= uid);
        let last = *self.by_uid[..end].last()?;
        (self.nodes[last].uid() == uid).then(|| &self.nodes[last])
    }

    /// The indexes of the nodes with an owner reference to `uid`, once per such reference, in
    /// node order.
    fn dependents_of<'a>(&'a self, uid: &'a str) -> impl Iterator<Item = usize> + 'a {
        let start = self.dependents.partition_point(|&d| Self::owner_uid_in(&self.nodes, d) < uid);
        self.dependents[start..]
            .iter()
            .take_while(move |&&d| Self::owner_uid_in(&self.nodes, d) == uid)
            .map(|&(index, _)| index)
    }
}

struct Graph {
    client: sim::Client,
    /// The watched kinds, sorted by group, then kind: the key owner references resolve by
    /// (searched with the strings a reference holds), and the order a snapshot lists objects in.
    /// A sorted `Vec` rather than nested maps: every scan walks it twice before it knows whether
    /// anything changed, and walking nested maps was a third of a sweep's time when built
    /// unoptimized (the `ci` profile's level for this crate).
    watched: Vec<Watched>,
    /// Whether the last scan saw the caches as they are and decided everything from them alone
    /// (no request sent, none failed): then a scan of the same caches would only repeat it.
    settled: bool,
}

impl Graph {
    /// Start watching `kind`, unless it is watched already.
    fn watch(&mut self, kind: Kind) {
        let Err(at) = self.position(&kind.resource.group, &kind.resource.kind) else { return };
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &kind.resource);
        let store = reflector::informer(api, watcher::Config::default());
        // Never seen, so the next snapshot rebuilds (see `snapshot`).
        self.watched.insert(at, Watched { kind: Arc::new(kind), store, seen: None });
    }

    /// Where the kind `group`/`kind` is in [`Graph::watched`] (`Err`: where it would go).
    fn position(&self, group: &str, kind: &str) -> Result<usize, usize> {
        self.watched.binary_search_by(|w| {
            (w.kind.resource.group.as_str(), w.kind.resource.kind.as_str()).cmp(&(group, kind))
        })
    }

    fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if kind.namespaced => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            _ => Api::all_with(self.client.clone(), &kind.resource),
        }
    }

    /// The graph from the caches; `None` until every cache has done its initial list (acting
    /// on a partial graph would take present owners for absent ones), and `None` when the caches
    /// are as the last scan saw them and it settled everything from them. (A kind watched since
    /// has never been seen, so its first snapshot is always built.)
    fn snapshot(&mut self) -> Option<Snapshot> {
        if !self.watched.iter().all(|w| w.store.is_ready()) {
            return None;
        }
        let unchanged = self.watched.iter().all(|w| w.seen == Some(w.store.changes()));
        if unchanged && self.settled {
            return None;
        }
        let mut nodes = Vec::new();
        for watched in &mut self.watched {
            // Counted before the read: a change after it moves the count again.
            watched.seen = Some(watched.store.changes());
            for object in watched.store.state() {
                nodes.push(Node { kind: watched.kind.clone(), object });
            }
        }
        Some(Snapshot::new(nodes))
    }

    /// One pass over the graph. Failed actions are retried by the next scan.
    async fn scan(&mut self) {
        let Some(graph) = self.snapshot() else { return };
        let mut settled = true;
        for node in &graph.nodes {
            let meta = node.meta();
            let result = if meta.deletion_timestamp.is_some() {
                if has_finalizer(meta, ORPHAN_FINALIZER) {
                    self.orphan_dependents(node, &graph).await
                } else if has_finalizer(meta, FOREGROUND_FINALIZER) {
                    self.process_deleting_dependents(node, &graph).await
                } else {
                    // Being deleted: a one-way trip; its dependents are looked at once it is gone.
                    Ok(Decided::FromCache)
                }
            } else if meta.owner_references.as_ref().is_some_and(|r| !r.is_empty()) {
                self.attempt_to_delete(node, &graph).await
            } else {
                Ok(Decided::FromCache)
            };
            match result {
                Ok(Decided::FromCache) => {}
                Ok(Decided::WithRequests) => settled = false,
                Err(error) => {
                    settled = false;
                    tracing::debug!(%error, object = node.name(), "garbage collection failed; next scan retries");
                }
            }
        }
        self.settled = settled;
    }

    /// Where `reference` of a dependent in `namespace` resolves: `Err(())` when it cannot
    /// (a cluster-scoped dependent naming a namespaced kind); `Ok(None)` for an unknown kind.
    fn resolve<'a>(
        &'a self,
        reference: &OwnerReference,
        namespace: Option<&'a str>,
    ) -> Result<Option<(&'a Kind, Option<&'a str>)>, ()> {
        let group = kinds::group_of(&reference.api_version);
        let Ok(at) = self.position(group, &reference.kind) else { return Ok(None) };
        let watched = &self.watched[at];
        let kind = &*watched.kind;
        match (kind.namespaced, namespace) {
            (true, Some(ns)) => Ok(Some((kind, Some(ns)))),
            (true, None) => Err(()),
            (false, _) => Ok(Some((kind, None))),
        }
    }

    /// The owner's state as the cache shows it, if the cache shows it where it resolves.
    fn cached_owner(
        &self,
        reference: &OwnerReference,
        namespace: Option<&str>,
        graph: &Snapshot,
    ) -> Option<Owner> {
        let Ok(Some((kind, lookup_ns))) = self.resolve(reference, namespace) else { return None };
        let node = graph.node_by_uid(&reference.uid)?;
        // One `Kind` per watched key, so the same one is the same key.
        let same_place = std::ptr::eq(&*node.kind, kind)
            && node.name() == reference.name
            && node.meta().namespace.as_deref().filter(|_| kind.namespaced) == lookup_ns;
        same_place.then(|| owner_state(&node.object))
    }

    /// The owner's state, from the cache or else from the server.
    async fn owner(
        &self,
        reference: &OwnerReference,
        namespace: Option<&str>,
        graph: &Snapshot,
    ) -> Result<Owner, sim::Error> {
        if let Some(state) = self.cached_owner(reference, namespace, graph) {
            return Ok(state);
        }
        let (kind, lookup_ns) = match self.resolve(reference, namespace) {
            Err(()) => return Ok(Owner::Dangling),
            // Not a served kind: cannot be checked, so it keeps the dependent.
            Ok(None) => return Ok(Owner::Solid),
            Ok(Some(found)) => found,
        };
        match self.api(kind, lookup_ns).get_opt(&reference.name).await? {
            Some(owner) if owner.metadata.uid.as_deref() == Some(reference.uid.as_str()) => {
                Ok(owner_state(&owner))
            }
            _ => Ok(Owner::Dangling),
        }
    }

    /// A dependent with owner references: delete it if every owner is absent (or waiting for
    /// its dependents), or drop its references to absent owners if another owner remains.
    async fn attempt_to_delete(&self, node: &Node, graph: &Snapshot) -> Result<Decided, sim::Error> {
        let namespace = node.meta().namespace.as_deref();
        let refs = node.meta().owner_references.clone().unwrap_or_default();
        if refs.iter().all(|r| self.cached_owner(r, namespace, graph) == Some(Owner::Solid)) {
            return Ok(Decided::FromCache);
        }
        // Act on the object as the server has it now, not as the cache had it.
        let api = self.api(&node.kind, namespace);
        let Some(latest) = api.get_opt(node.name()).await? else { return Ok(Decided::WithRequests) };
        if latest.metadata.uid.as_deref() != Some(node.uid()) || latest.metadata.deletion_timestamp.is_some()
        {
            return Ok(Decided::WithRequests);
        }
        let mut solid = 0;
        let mut gone = Vec::new();
        let mut waiting = 0;
        for reference in latest.metadata.owner_references.iter().flatten() {
            match self.owner(reference, namespace, graph).await? {
                Owner::Solid => solid += 1,
                Owner::Waiting => {
                    waiting += 1;
                    gone.push(reference.uid.clone());
                }
                Owner::Dangling => gone.push(reference.uid.clone()),
            }
        }
        if solid > 0 {
            if gone.is_empty() {
                return Ok(Decided::WithRequests);
            }
            let kept: Vec<&OwnerReference> = latest
                .metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| !gone.contains(&r.uid))
                .collect();
            let patch = serde_json::json!({ "metadata": {
                "ownerReferences": kept, "resourceVersion": latest.metadata.resource_version } });
            return tolerate_gone(
                api.patch(node.name(), &PatchParams::default(), &Patch::Merge(&patch)).await,
            );
        }
        let has_dependents = graph.dependents_of(node.uid()).next().is_some();
        let policy = if waiting > 0 && has_dependents {
            PropagationPolicy::Foreground
        } else if has_finalizer(&latest.metadata, ORPHAN_FINALIZER) {
            PropagationPolicy::Orphan
        } else if has_finalizer(&latest.metadata, FOREGROUND_FINALIZER) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        let params = DeleteParams {
            propagation_policy: Some(policy),
            preconditions: Some(Preconditions { uid: latest.metadata.uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        tolerate_gone(api.delete(node.name(), &params).await)
    }

    /// Remove `finalizer` from the owner (conditional on the cached resourceVersion).
    async fn remove_finalizer(&self, node: &Node, finalizer: &str) -> Result<Decided, sim::Error> {
        let kept: Vec<&String> =
            node.meta().finalizers.iter().flatten().filter(|f| *f != finalizer).collect();
        let patch = serde_json::json!({ "metadata": {
            "finalizers": kept, "resourceVersion": node.meta().resource_version } });
        let api = self.api(&node.kind, node.meta().namespace.as_deref());
        tolerate_gone(api.patch(node.name(), &PatchParams::default(), &Patch::Merge(&patch)).await)
    }

    /// Orphan propagation: drop the owner's references from its dependents, then its finalizer.
    async fn orphan_dependents(&self, owner: &Node, graph: &Snapshot) -> Result<Decided, sim::Error> {
        for index in graph.dependents_of(owner.uid()) {
            let dependent = &graph.nodes[index];
            let kept: Vec<&OwnerReference> =
                dependent.meta().owner_references.iter().flatten().filter(|r| r.uid != owner.uid()).collect();
            let patch = serde_json::json!({ "metadata": {
                "ownerReferences": kept, "resourceVersion": dependent.meta().resource_version } });
            let api = self.api(&dependent.kind, dependent.meta().namespace.as_deref());
            match api.patch(dependent.name(), &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => {}
                Err(e) if has_code(&e, 404) => {}
                // The cache was stale: keep the finalizer until the next scan has orphaned it.
                Err(e) if has_code(&e, 409) => return Ok(Decided::WithRequests),
                Err(e) => return Err(e),
            }
        }
        self.remove_finalizer(owner, ORPHAN_FINALIZER).await
    }

    /// Foreground propagation: once no dependent blocks the owner, remove its finalizer. (The
    /// dependents themselves are deleted by [`Graph::attempt_to_delete`], which sees their owner
    /// waiting.)
    async fn process_deleting_dependents(
        &self,
        owner: &Node,
        graph: &Snapshot,
    ) -> Result<Decided, sim::Error> {
        let blocking = graph.dependents_of(owner.uid()).any(|index| {
            graph.nodes[index]
                .meta()
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == owner.uid() && r.block_owner_deletion == Some(true))
        });
        if blocking {
            return Ok(Decided::FromCache);
        }
        self.remove_finalizer(owner, FOREGROUND_FINALIZER).await
    }
}

/// An object gone (404) or changed meanwhile (409 on its resourceVersion or uid) needs nothing
/// more now: the next scan sees the new state.
fn tolerate_gone<T>(result: Result<T, sim::Error>) -> Result<Decided, sim::Error> {
    match result {
        Ok(_) => Ok(Decided::WithRequests),
        Err(e) if has_code(&e, 404) || has_code(&e, 409) => Ok(Decided::WithRequests),
        Err(e) => Err(e),
    }
}
