//! The trace of one run: every API request and response, every watch delivery, every reconcile,
//! every node start, kill and restart, every fault, with virtual times. It has a stable digest.
//!
//! INTERFACE STUB: filled by the sim-infrastructure work. Signatures are the contract.

use std::sync::Arc;

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A node (controller or workload) started, or restarted after a kill.
    NodeStart { restart: bool },
    /// A node was killed (crash fault or end of run).
    NodeKill { reason: String },
    /// An API request left a client. `call` numbers calls per run; `target` is
    /// `resource[/namespace][/name]`.
    ApiRequest { call: u64, verb: &'static str, target: String },
    /// The answer to call `call`: `Ok(resourceVersion)` or `Err((code, reason))`.
    ApiResponse { call: u64, result: Result<String, (u16, String)> },
    /// A watch event reached an informer: `watch` names the informer's resource, `kind` is
    /// `ADDED`/`MODIFIED`/`DELETED`/`BOOKMARK`/`ERROR`, `object` is `namespace/name`.
    WatchDelivery { watch: String, kind: &'static str, object: String, resource_version: String },
    /// An informer (re)listed: `resource_version` is the list's RV, `items` its size.
    Relist { watch: String, resource_version: String, items: usize },
    /// A reconcile started for `object` (`kind namespace/name`).
    ReconcileStart { controller: String, object: String },
    /// A reconcile ended: `result` is `requeue 5s`, `await change` or `error: ...`.
    ReconcileEnd { controller: String, object: String, result: String },
    /// A fault fired.
    Fault { description: String },
    /// A workload step, property check or other engine note.
    Note { text: String },
}

/// One trace entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// Virtual nanoseconds since the start of the run.
    pub at_nanos: u64,
    /// The node it happened on (`apiserver` for server-side entries, `engine` for the engine's own).
    pub node: Arc<str>,
    /// What happened.
    pub event: TraceEvent,
}

/// The trace of a run.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    _todo: (),
}

impl Trace {
    /// An empty trace that keeps its entries (`keep_entries`) or only the running digest (sweeps).
    pub fn new(_keep_entries: bool) -> Self {
        todo!("sim infrastructure")
    }
    /// Append an entry (and fold it into the digest).
    pub fn push(&mut self, _at_nanos: u64, _node: &Arc<str>, _event: TraceEvent) {
        todo!("sim infrastructure")
    }
    /// The entries, if kept.
    pub fn entries(&self) -> &[TraceEntry] {
        todo!("sim infrastructure")
    }
    /// How many entries were pushed.
    pub fn len(&self) -> usize {
        todo!("sim infrastructure")
    }
    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stable digest: a hex string, equal for equal sequences of entries on any machine.
    pub fn digest(&self) -> String {
        todo!("sim infrastructure")
    }
}
