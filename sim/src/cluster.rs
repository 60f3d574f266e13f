//! The cluster set: each declared cluster's model server, the wakers of the informers waiting for
//! its revision to move, and its per-object lifecycle counts.
//!
//! A component of the [world](crate::world): it owns its state and knows nothing of the world,
//! the transport or the faults. The transport applies requests to a server here, the quiescence
//! check reads revisions, and properties see snapshots.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use kube_core::DynamicObject;
use model_apiserver::{ApiServer, ObjectKey, Revision, ServerConfig, Snapshot};

use crate::lifecycles::Lifecycles;

/// The namespace of the Leases that leader election uses, as client-go's default.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// What a watcher waits for: writes to one resource type (its storage key, so that every version
/// and every alias of a type is one scope), in one namespace or in all of them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WatchScope {
    /// [`model_apiserver::ResourceType::storage_key`].
    pub(crate) resource: Arc<str>,
    /// `None`: every namespace (and a cluster-scoped type).
    pub(crate) namespace: Option<Arc<str>>,
}

/// A parked watcher: woken by the first write into its scope (`None`: by any write).
struct Waiter {
    id: u64,
    scope: Option<WatchScope>,
    waker: Waker,
}

/// One cluster: its server, the watchers parked until a write reaches their scope, and its
/// per-object lifecycle counts.
pub(crate) struct ClusterState {
    pub(crate) server: ApiServer,
    /// Parked watchers, in registration order. A write wakes (and removes) those whose scope it
    /// touched; the others stay parked, so a write costs nothing to the watchers of other types.
    waiters: Vec<Waiter>,
    /// Woken waiters, by id, with the revision just before the write that woke them: nothing in
    /// their scope changed from the revision they parked at up to that one, so their watch may
    /// resume from there (a bookmark, in effect). Taken by the waiter's next poll.
    woken: BTreeMap<u64, Revision>,
    next_waiter: u64,
    /// The last revision that wrote each resource type, and each namespace of it.
    written: BTreeMap<Arc<str>, Revision>,
    written_in: BTreeMap<(Arc<str>, Arc<str>), Revision>,
    /// Writes whose objects are unknown (compacted before they were read) count for every scope.
    written_any: Revision,
    /// Per-object creation and deletion counts over the whole run (the server's history is
    /// bounded; these are not).
    pub(crate) lifecycles: Lifecycles,
}

impl ClusterState {
    fn new(server: ApiServer, lifecycles: Lifecycles) -> Self {
        ClusterState {
            server,
            waiters: Vec::new(),
            woken: BTreeMap::new(),
            next_waiter: 0,
            written: BTreeMap::new(),
            written_in: BTreeMap::new(),
            written_any: 0,
            lifecycles,
        }
    }

    /// A write moved the revision from `before`, at virtual time `at`: count creations and
    /// deletions, note which scopes it wrote, and wake the waiters of those scopes in
    /// registration order (deterministic, each registered at most once).
    pub(crate) fn revision_moved(&mut self, before: Revision, at: Duration) {
        self.lifecycles.observe(&self.server, at);
        let revision = self.server.revision();
        // Usually one object; a few for a write that cascades (a namespace, a collection).
        let mut touched: Vec<(Arc<str>, Arc<str>)> = Vec::new();
        let (complete, changes) = self.server.retained_changes_after(before);
        for change in changes {
            let key = (change.key.resource.clone(), change.key.namespace.clone());
            if !touched.contains(&key) {
                touched.push(key);
            }
        }
        if !complete {
            // Some of its changes are gone already: wake every watcher, as any of them may care.
            self.written_any = revision;
        }
        for (resource, namespace) in &touched {
            self.written.insert(resource.clone(), revision);
            self.written_in.insert((resource.clone(), namespace.clone()), revision);
        }
        let every = self.written_any == revision;
        let reached = |scope: &Option<WatchScope>| match scope {
            None => true,
            Some(_) if every => true,
            Some(scope) => touched.iter().any(|(resource, namespace)| {
                *resource == scope.resource && scope.namespace.as_ref().is_none_or(|ns| ns == namespace)
            }),
        };
        // In place, in parking order (the order the woken tasks are scheduled in).
        let woken = &mut self.woken;
        self.waiters.retain(|waiter| {
            if !reached(&waiter.scope) {
                return true;
            }
            woken.insert(waiter.id, before);
            waiter.waker.wake_by_ref();
            false
        });
    }

    /// The last revision that wrote into `scope` (`None`: the current revision).
    pub(crate) fn scope_revision(&self, scope: Option<&WatchScope>) -> Revision {
        let Some(scope) = scope else { return self.server.revision() };
        let written = match &scope.namespace {
            None => self.written.get(&scope.resource),
            Some(ns) => self.written_in.get(&(scope.resource.clone(), ns.clone())),
        };
        written.copied().unwrap_or(0).max(self.written_any)
    }

    /// Park waiter `id` (a new one if `None`) until a write reaches `scope`; returns its id.
    /// A waiter parked again before it is woken keeps its place and takes the newer waker.
    pub(crate) fn park(&mut self, id: Option<u64>, scope: Option<&WatchScope>, waker: &Waker) -> u64 {
        if let Some(id) = id
            && let Some(waiter) = self.waiters.iter_mut().find(|w| w.id == id)
        {
            if !waiter.waker.will_wake(waker) {
                waiter.waker = waker.clone();
            }
            return id;
        }
        let id = self.next_waiter;
        self.next_waiter += 1;
        self.waiters.push(Waiter { id, scope: scope.cloned(), waker: waker.clone() });
        id
    }

    /// If waiter `id` was woken: the revision just before the write that woke it.
    pub(crate) fn take_woken(&mut self, id: u64) -> Option<Revision> {
        self.woken.remove(&id)
    }

    /// Forget waiter `id` (its watch went on without being woken).
    pub(crate) fn unpark(&mut self, id: u64) {
        self.waiters.retain(|w| w.id != id);
        self.woken.remove(&id);
    }

    /// The scope of a watch of `resource` in `namespace` (`None` for every namespace), if the
    /// server serves that type.
    pub(crate) fn watch_scope(
        &self,
        resource: &kube_core::ApiResource,
        namespace: Option<&str>,
    ) -> Option<WatchScope> {
        let served = self.server.types().get(&resource.group, &resource.version, &resource.plural)?;
        Some(WatchScope { resource: served.storage_key(), namespace: namespace.map(Arc::from) })
    }
}

/// Every cluster of a run, by name, and which one was declared first.
#[derive(Default)]
pub(crate) struct Clusters {
    clusters: BTreeMap<Arc<str>, ClusterState>,
    /// The first declared cluster, the one `Clients::default_cluster` reaches (`None` before the
    /// clusters are installed, and in a live run).
    first: Option<Arc<str>>,
}

/// A cluster as every run starts it: its server with the default namespaces and the declared
/// CRDs, and the lifecycle counts of those objects. Built once per builder (see
/// `SimBuilder::installed`) and cloned into each run: a server clone is a few pointer copies
/// (persistent maps), where installing anew cost a fifth of a small seed (four namespaces and the
/// CRDs decoded, validated and served on every run).
#[derive(Clone)]
pub(crate) struct InstalledCluster {
    name: Arc<str>,
    server: ApiServer,
    lifecycles: Lifecycles,
}

impl InstalledCluster {
    /// Create cluster `name`'s server with the default namespaces and `crds`, at `now` (the
    /// run's epoch).
    /// Their uids come from a source of their own, seeded with the cluster's position `index`
    /// (so that two clusters' namespaces differ), not from the run's seed: every run of the
    /// builder starts from the same objects.
    ///
    /// # Panics
    ///
    /// If a CRD is refused: the builder validated them, so that is the engine's bug.
    pub(crate) fn new(
        index: usize,
        name: &Arc<str>,
        crds: &[Arc<DynamicObject>],
        config: &ServerConfig,
        now: jiff::Timestamp,
    ) -> Self {
        let crd_resource = kube_core::ApiResource {
            group: "apiextensions.k8s.io".to_owned(),
            version: "v1".to_owned(),
            api_version: "apiextensions.k8s.io/v1".to_owned(),
            kind: "CustomResourceDefinition".to_owned(),
            plural: "customresourcedefinitions".to_owned(),
        };
        let mut decisions = crate::decision::DecisionSource::new(index as u64);
        let mut ids = crate::decision::StreamIds(decisions.stream("cluster-install-ids"));
        let mut ctx = model_apiserver::Context::new(now, &mut ids);
        let mut server = ApiServer::with_config(config.clone()).with_bootstrap_objects(&mut ctx);
        for crd in crds {
            let request = model_apiserver::Request::create(
                &crd_resource,
                None,
                (**crd).clone(),
                kube_core::params::PostParams::default(),
            );
            if let Err(status) = server.handle(request, &mut ctx) {
                let crd_name = crd.metadata.name.clone().unwrap_or_default();
                panic!("installing CRD {crd_name} in cluster {name}: {}", status.message);
            }
        }
        let lifecycles = Lifecycles::new(&server, Duration::ZERO);
        InstalledCluster { name: name.clone(), server, lifecycles }
    }
}

impl Clusters {
    /// Start a cluster from its installed state (declaration order: the first is the default).
    pub(crate) fn install(&mut self, installed: &InstalledCluster) {
        let state = ClusterState::new(installed.server.clone(), installed.lifecycles.clone());
        self.clusters.insert(installed.name.clone(), state);
        if self.first.is_none() {
            self.first = Some(installed.name.clone());
        }
    }

    /// Cluster `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&ClusterState> {
        self.clusters.get(name)
    }

    /// Cluster `name`, to change.
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut ClusterState> {
        self.clusters.get_mut(name)
    }

    /// Every cluster, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &ClusterState)> {
        self.clusters.iter()
    }

    /// Every cluster, to change.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut ClusterState> {
        self.clusters.values_mut()
    }

    /// How many clusters there are.
    pub(crate) fn len(&self) -> usize {
        self.clusters.len()
    }

    /// Drop every server and parked waker (the run is over).
    pub(crate) fn clear(&mut self) {
        self.clusters.clear();
    }

    /// The name of the first declared cluster, once the clusters are installed.
    pub(crate) fn first(&self) -> Option<&Arc<str>> {
        self.first.as_ref()
    }

    /// The model server of the first declared cluster, once the clusters are installed.
    pub(crate) fn default_server(&self) -> Option<&ApiServer> {
        let name = self.first.as_ref()?;
        self.clusters.get(name).map(|cluster| &cluster.server)
    }

    /// The last revision of cluster `name` that wrote into `scope` (`None`: its current revision).
    pub(crate) fn scope_revision(&self, name: &str, scope: Option<&WatchScope>) -> Revision {
        self.clusters.get(name).map_or(0, |c| c.scope_revision(scope))
    }

    /// Every cluster's current state.
    pub(crate) fn snapshots(&self) -> BTreeMap<Arc<str>, Snapshot> {
        self.clusters.iter().map(|(name, c)| (name.clone(), c.server.snapshot())).collect()
    }

    /// Every cluster's lifecycle counts.
    pub(crate) fn lifecycles(&self) -> BTreeMap<Arc<str>, Lifecycles> {
        self.clusters.iter().map(|(name, c)| (name.clone(), c.lifecycles.clone())).collect()
    }

    /// The sum of every cluster's revision: it moves whenever any write changes anything.
    pub(crate) fn revisions(&self) -> u64 {
        self.clusters.values().map(|c| c.server.revision()).sum()
    }

    /// Who holds Lease `group` in [`LEASE_NAMESPACE`] of the first cluster: the model's answer to
    /// who leads a leader-elected group, as client-go reads it.
    pub(crate) fn lease_holder(&self, group: &str) -> Option<Arc<str>> {
        let server = self.default_server()?;
        let leases = server.types().get("coordination.k8s.io", "v1", "leases")?;
        let key = ObjectKey {
            resource: leases.storage_key(),
            namespace: Arc::from(LEASE_NAMESPACE),
            name: Arc::from(group),
        };
        let snapshot = server.snapshot();
        let holder = snapshot.get(&key)?.data.get("spec")?.get("holderIdentity")?.as_str()?;
        Some(Arc::from(holder))
    }
}
