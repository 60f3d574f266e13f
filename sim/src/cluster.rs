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

impl ClusterState {
    /// A write moved the revision at virtual time `at`: count creations and deletions, and wake
    /// every waiting informer, in registration order (deterministic, each registered at most once).
    pub(crate) fn revision_moved(&mut self, at: Duration) {
        self.lifecycles.observe(&self.server, at);
        for waker in self.watchers.drain(..) {
            waker.wake();
        }
    }

    /// Park `waker` until the revision moves (once: a task polled twice registers once).
    pub(crate) fn wake_on_move(&mut self, waker: &Waker) {
        if !self.watchers.iter().any(|w| w.will_wake(waker)) {
            self.watchers.push(waker.clone());
        }
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

impl Clusters {
    /// Create cluster `name`'s server with the default namespaces and `crds`, at `ctx`'s time.
    ///
    /// # Panics
    ///
    /// If a CRD is refused: the builder validated them, so that is the engine's bug.
    pub(crate) fn install(
        &mut self,
        name: &Arc<str>,
        crds: &[Arc<DynamicObject>],
        config: &ServerConfig,
        ctx: &mut model_apiserver::Context<'_>,
    ) {
        let crd_resource = kube_core::ApiResource {
            group: "apiextensions.k8s.io".to_owned(),
            version: "v1".to_owned(),
            api_version: "apiextensions.k8s.io/v1".to_owned(),
            kind: "CustomResourceDefinition".to_owned(),
            plural: "customresourcedefinitions".to_owned(),
        };
        let mut server = ApiServer::with_config(config.clone()).with_default_namespaces(ctx);
        for crd in crds {
            let request = model_apiserver::Request::create(
                &crd_resource,
                None,
                (**crd).clone(),
                kube_core::params::PostParams::default(),
            );
            if let Err(status) = server.handle(request, ctx) {
                let crd_name = crd.metadata.name.clone().unwrap_or_default();
                panic!("installing CRD {crd_name} in cluster {name}: {}", status.message);
            }
        }
        let lifecycles = Lifecycles::new(&server, Duration::ZERO);
        self.clusters.insert(name.clone(), ClusterState { server, watchers: Vec::new(), lifecycles });
        if self.first.is_none() {
            self.first = Some(name.clone());
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

    /// The model server of the first declared cluster, once the clusters are installed.
    pub(crate) fn default_server(&self) -> Option<&ApiServer> {
        let name = self.first.as_ref()?;
        self.clusters.get(name).map(|cluster| &cluster.server)
    }

    /// Cluster `name`'s current revision (0 if there is none).
    pub(crate) fn revision(&self, name: &str) -> Revision {
        self.clusters.get(name).map_or(0, |c| c.server.revision())
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
