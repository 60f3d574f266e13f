//! The trace of one run: every API request and response, every watch delivery, every reconcile,
//! every node start, kill and restart, every fault, with virtual times. It has a stable digest.
//!
//! Each entry has one canonical line (its `Display`, e.g. `[    12.345ms] ctrl  reconcile start
//! ...`), which is both what a person reads and what the digest hashes: SHA-256 over the lines,
//! each with the entry's full-precision virtual time in front. SHA-256 and the line format are
//! fixed, so equal runs have equal digests on every machine and toolchain. A sweep keeps only
//! the running digest; single-seed runs and replays keep the entries too.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A node (controller or workload) started, or restarted after a kill.
    NodeStart {
        /// Whether this is a restart after a kill.
        restart: bool,
    },
    /// A node was killed (crash fault or end of run).
    NodeKill {
        /// Why the node was killed.
        reason: String,
    },
    /// An API request left a client. `call` numbers calls per run; `target` is
    /// `resource[/namespace][/name]`.
    ApiRequest {
        /// The call's number in this run.
        call: u64,
        /// The verb, as audit logs spell it.
        verb: &'static str,
        /// `resource[/namespace][/name]`.
        target: String,
    },
    /// The answer to call `call`: `Ok(resourceVersion)` or `Err((code, reason))`.
    ApiResponse {
        /// The call's number in this run.
        call: u64,
        /// `Ok(resourceVersion)` or `Err((code, reason))`.
        result: Result<String, (u16, String)>,
    },
    /// A watch event reached an informer: `watch` names the informer's resource, `kind` is
    /// `ADDED`/`MODIFIED`/`DELETED`/`BOOKMARK`/`ERROR`, `object` is `namespace/name`.
    WatchDelivery {
        /// The informer's resource.
        watch: String,
        /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
        kind: &'static str,
        /// The object.
        object: String,
        /// The resourceVersion.
        resource_version: String,
    },
    /// An informer (re)listed: `resource_version` is the list's RV, `items` its size.
    Relist {
        /// The informer's resource.
        watch: String,
        /// The resourceVersion.
        resource_version: String,
        /// How many items the list held.
        items: usize,
    },
    /// A reconcile started for `object` (`kind namespace/name`).
    ReconcileStart {
        /// The controller.
        controller: String,
        /// The object.
        object: String,
    },
    /// A reconcile ended: `result` is `requeue 5s`, `await change` or `error: ...`.
    ReconcileEnd {
        /// The controller.
        controller: String,
        /// The object.
        object: String,
        /// The outcome.
        result: String,
    },
    /// A fault fired.
    Fault {
        /// What fired, in one line.
        description: String,
    },
    /// What a fired fault did, or that it did nothing and why (`staleReplica`'s lists, a
    /// partition that cut no call): so that no trace claims an effect that did not happen.
    FaultEffect {
        /// The effect, in one line.
        description: String,
    },
    /// A workload step, property check or other engine note.
    Note {
        /// The note.
        text: String,
    },
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceEvent::NodeStart { restart: false } => f.write_str("node start"),
            TraceEvent::NodeStart { restart: true } => f.write_str("node restart"),
            TraceEvent::NodeKill { reason } => write!(f, "node kill: {reason}"),
            TraceEvent::ApiRequest { call, verb, target } => write!(f, "api #{call} {verb} {target}"),
            TraceEvent::ApiResponse { call, result: Ok(rv) } => write!(f, "api #{call} ok rv={rv}"),
            TraceEvent::ApiResponse { call, result: Err((code, reason)) } => {
                write!(f, "api #{call} error {code} {reason}")
            }
            TraceEvent::WatchDelivery { watch, kind, object, resource_version } => {
                write!(f, "watch {watch} {kind} {object} rv={resource_version}")
            }
            TraceEvent::Relist { watch, resource_version, items } => {
                write!(f, "relist {watch} rv={resource_version} items={items}")
            }
            TraceEvent::ReconcileStart { controller, object } => {
                write!(f, "reconcile start {controller} {object}")
            }
            TraceEvent::ReconcileEnd { controller, object, result } => {
                write!(f, "reconcile end {controller} {object}: {result}")
            }
            TraceEvent::Fault { description } => write!(f, "fault: {description}"),
            TraceEvent::FaultEffect { description } => write!(f, "fault effect: {description}"),
            TraceEvent::Note { text } => write!(f, "note: {text}"),
        }
    }
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

/// Writes `[    12.345ms] ` for a virtual time, with integer arithmetic only, so that the text is
/// the same everywhere.
fn write_stamp(out: &mut impl fmt::Write, at_nanos: u64) -> fmt::Result {
    let millis = at_nanos / 1_000_000;
    let micros = (at_nanos / 1_000) % 1_000;
    write!(out, "[{millis:>8}.{micros:03}ms]")
}

/// The width the node column is padded to, so that events line up for the usual short names.
const NODE_COLUMN_WIDTH: usize = 10;

impl fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_stamp(f, self.at_nanos)?;
        write!(f, " {:<width$} {}", self.node, self.event, width = NODE_COLUMN_WIDTH)
    }
}

/// The trace of a run.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    keep_entries: bool,
    entries: Vec<TraceEntry>,
    len: usize,
    hasher: Sha256,
    // Reused for each entry's canonical line, so that a sweep (which keeps no entries) does not
    // allocate per entry.
    scratch: String,
}

impl Trace {
    /// An empty trace that keeps its entries (`keep_entries`) or only the running digest (sweeps).
    pub fn new(keep_entries: bool) -> Self {
        Trace { keep_entries, ..Trace::default() }
    }

    /// Whether this trace keeps its entries.
    pub fn keeps_entries(&self) -> bool {
        self.keep_entries
    }

    /// Append an entry (and fold it into the digest).
    pub fn push(&mut self, at_nanos: u64, node: &Arc<str>, event: TraceEvent) {
        self.scratch.clear();
        // The canonical encoding: the exact time (the line shows only microseconds), the node and
        // the event, one line per entry. Writing to a String cannot fail.
        let _ = writeln!(self.scratch, "{at_nanos} {node} {event}");
        self.hasher.update(self.scratch.as_bytes());
        self.len += 1;
        if self.keep_entries {
            self.entries.push(TraceEntry { at_nanos, node: Arc::clone(node), event });
        }
    }

    /// The entries, if kept.
    pub fn entries(&self) -> &[TraceEntry] {
        &self.entries
    }

    /// How many entries were pushed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stable digest: a hex string, equal for equal sequences of entries on any machine.
    pub fn digest(&self) -> String {
        let hash = self.hasher.clone().finalize();
        let mut hex = String::with_capacity(hash.len() * 2);
        for byte in hash {
            let _ = write!(hex, "{byte:02x}");
        }
        hex
    }

    /// The kept entries, one line each (empty when entries are not kept).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            let _ = writeln!(out, "{entry}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(trace: &mut Trace) {
        let ctrl: Arc<str> = Arc::from("ctrl");
        let api: Arc<str> = Arc::from("apiserver");
        trace.push(0, &ctrl, TraceEvent::NodeStart { restart: false });
        trace.push(
            12_345_678,
            &ctrl,
            TraceEvent::ApiRequest { call: 1, verb: "create", target: "configmaps/default/a".into() },
        );
        trace.push(13_000_000, &api, TraceEvent::ApiResponse { call: 1, result: Ok("5".into()) });
        trace.push(
            14_000_000,
            &api,
            TraceEvent::ApiResponse { call: 2, result: Err((409, "Conflict".into())) },
        );
    }

    #[test]
    fn an_entry_displays_as_virtual_time_node_and_event() {
        let mut trace = Trace::new(true);
        sample(&mut trace);
        assert_eq!(
            trace.entries()[1].to_string(),
            "[      12.345ms] ctrl       api #1 create configmaps/default/a"
        );
        assert_eq!(trace.entries()[3].to_string(), "[      14.000ms] apiserver  api #2 error 409 Conflict");
    }

    #[test]
    fn render_prints_one_line_per_entry() {
        let mut trace = Trace::new(true);
        sample(&mut trace);
        assert_eq!(
            trace.render(),
            "[       0.000ms] ctrl       node start\n\
             [      12.345ms] ctrl       api #1 create configmaps/default/a\n\
             [      13.000ms] apiserver  api #1 ok rv=5\n\
             [      14.000ms] apiserver  api #2 error 409 Conflict\n"
        );
    }

    #[test]
    fn the_digest_does_not_depend_on_keeping_entries() {
        let (mut kept, mut digest_only) = (Trace::new(true), Trace::new(false));
        sample(&mut kept);
        sample(&mut digest_only);
        assert_eq!(kept.digest(), digest_only.digest());
        assert_eq!((kept.len(), digest_only.len()), (4, 4));
        assert_eq!((kept.entries().len(), digest_only.entries().len()), (4, 0));
        assert_eq!(digest_only.render(), "");
    }

    #[test]
    fn the_digest_is_pinned() {
        // Pins the canonical encoding: a change here invalidates digests in regression files.
        let mut trace = Trace::new(false);
        assert_eq!(trace.digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        trace.push(1, &Arc::from("n"), TraceEvent::Note { text: "x".into() });
        // sha256("1 n note: x\n")
        assert_eq!(trace.digest(), "69fdcbd8876acf961c9af158100a5dc908cf27a84ea56b359c2a7d84a376a7cc");
    }

    #[test]
    fn a_different_time_node_or_event_changes_the_digest() {
        let node: Arc<str> = Arc::from("n");
        let other: Arc<str> = Arc::from("m");
        let digest = |at, node: &Arc<str>, text: &str| {
            let mut trace = Trace::new(false);
            trace.push(at, node, TraceEvent::Note { text: text.into() });
            trace.digest()
        };
        let base = digest(1, &node, "x");
        assert_ne!(base, digest(2, &node, "x"));
        assert_ne!(base, digest(1, &other, "x"));
        assert_ne!(base, digest(1, &node, "y"));
        assert_eq!(base, digest(1, &node, "x"));
    }
}
