//! The API server state machine.

use kube_core::Status;

use crate::{
    admission::AdmissionHook,
    context::Context,
    request::{Request, Response},
    resources::ResourceTypes,
    store::{Revision, Snapshot, StoredEvent},
};

/// Bounds and knobs of the model.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// How many past revisions (snapshots and events) are retained; older ones are compacted, and
    /// reads or watches from them get 410 Expired.
    pub history_revisions_max: usize,
    /// The grace period a Pod gets when neither the request nor the pod spec sets one.
    pub pod_grace_period_seconds_default: i64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { history_revisions_max: 10_000, pod_grace_period_seconds_default: 30 }
    }
}

/// The model API server.
pub struct ApiServer {
    _todo: (),
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ApiServer {
    /// A server with the built-in kinds and no objects (not even namespaces: see
    /// [`ApiServer::with_default_namespaces`]).
    pub fn new() -> Self {
        Self::with_config(ServerConfig::default())
    }
    /// A server with explicit bounds.
    pub fn with_config(_config: ServerConfig) -> Self {
        todo!("model-apiserver core")
    }
    /// Create `default`, `kube-system` and `kube-public`, as a fresh cluster has them.
    pub fn with_default_namespaces(self, _ctx: &mut Context<'_>) -> Self {
        todo!("model-apiserver core")
    }
    /// Handle one request at `ctx.now`.
    pub fn handle(&mut self, _request: Request, _ctx: &mut Context<'_>) -> Result<Response, Status> {
        todo!("model-apiserver core")
    }
    /// The current revision.
    pub fn revision(&self) -> Revision {
        todo!("model-apiserver core")
    }
    /// The oldest revision still readable (everything before it is compacted).
    pub fn oldest_revision(&self) -> Revision {
        todo!("model-apiserver core")
    }
    /// The current state; O(1).
    pub fn snapshot(&self) -> Snapshot {
        todo!("model-apiserver core")
    }
    /// The state at a retained revision; `None` if compacted or in the future.
    pub fn snapshot_at(&self, _revision: Revision) -> Option<Snapshot> {
        todo!("model-apiserver core")
    }
    /// The stored changes after `revision`, in order; 410 Expired if compacted.
    pub fn events_after(&self, _revision: Revision) -> Result<Vec<StoredEvent>, Status> {
        todo!("model-apiserver core")
    }
    /// Drop history before `revision` (as etcd compaction does).
    pub fn compact(&mut self, _revision: Revision) {
        todo!("model-apiserver core")
    }
    /// The served types (built-ins plus established CRDs).
    pub fn types(&self) -> &ResourceTypes {
        todo!("model-apiserver core")
    }
    /// Register a mutating admission hook (runs before validation, in registration order).
    pub fn add_mutating_hook(&mut self, _hook: AdmissionHook) {
        todo!("model-apiserver core")
    }
    /// Register a validating admission hook (runs after mutation, in registration order).
    pub fn add_validating_hook(&mut self, _hook: AdmissionHook) {
        todo!("model-apiserver core")
    }
}
