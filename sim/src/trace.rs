//! The trace of one run: every API request and response, every watch delivery, every reconcile,
//! every node start, kill and restart, every fault, with virtual times. It has a stable digest.
//!
//! Each entry has one line for people (its `Display`, e.g. `[    12.345ms] ctrl  reconcile start
//! ...`) and one canonical encoding for the digest: the entry's full-precision virtual time, its
//! node and its event's variant and fields, each string with its length in front, all integers
//! little-endian (see [`TraceEntry`]'s `encode`). The digest is XXH3-128 over the encodings of
//! every entry. XXH3 and the encoding are fixed, so equal runs have equal digests on every
//! machine and toolchain; encoding the fields directly instead of formatting the line, and XXH3
//! instead of SHA-256, made the digest a small cost of a seed instead of a tenth of it. A sweep
//! keeps only the running digest; single-seed runs and replays keep the entries too.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

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

/// Appends the canonical encoding of the parts of an entry to a byte buffer (see the module doc).
struct Encoder<'a>(&'a mut Vec<u8>);

impl Encoder<'_> {
    fn u64(&mut self, value: u64) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn str(&mut self, value: &str) -> &mut Self {
        self.u64(value.len() as u64);
        self.0.extend_from_slice(value.as_bytes());
        self
    }
    fn tag(&mut self, tag: u8) -> &mut Self {
        self.0.push(tag);
        self
    }
}

/// A [`TraceEvent`] whose texts are borrowed: the engine's hot paths (every API call and answer,
/// delivery and reconcile) push this form, so that a sweep, which keeps no entries, hashes their
/// texts without first copying them into owned strings. The canonical encoding is defined here,
/// once, for both forms.
#[derive(Clone, Copy, Debug)]
pub(crate) enum EventRef<'a> {
    NodeStart { restart: bool },
    NodeKill { reason: &'a str },
    ApiRequest { call: u64, verb: &'static str, target: &'a str },
    ApiResponse { call: u64, result: Result<&'a str, (u16, &'a str)> },
    WatchDelivery { watch: &'a str, kind: &'static str, object: &'a str, resource_version: &'a str },
    Relist { watch: &'a str, resource_version: &'a str, items: usize },
    ReconcileStart { controller: &'a str, object: &'a str },
    ReconcileEnd { controller: &'a str, object: &'a str, result: &'a str },
    Fault { description: &'a str },
    FaultEffect { description: &'a str },
    Note { text: &'a str },
}

impl EventRef<'_> {
    /// The event's canonical encoding: a tag per variant (and per `Ok`/`Err`), then every field in
    /// declaration order.
    fn encode(self, out: &mut Encoder<'_>) {
        match self {
            EventRef::NodeStart { restart } => out.tag(0).tag(u8::from(restart)),
            EventRef::NodeKill { reason } => out.tag(1).str(reason),
            EventRef::ApiRequest { call, verb, target } => out.tag(2).u64(call).str(verb).str(target),
            EventRef::ApiResponse { call, result: Ok(rv) } => out.tag(3).u64(call).tag(0).str(rv),
            EventRef::ApiResponse { call, result: Err((code, reason)) } => {
                out.tag(3).u64(call).tag(1).u64(u64::from(code)).str(reason)
            }
            EventRef::WatchDelivery { watch, kind, object, resource_version } => {
                out.tag(4).str(watch).str(kind).str(object).str(resource_version)
            }
            EventRef::Relist { watch, resource_version, items } => {
                out.tag(5).str(watch).str(resource_version).u64(items as u64)
            }
            EventRef::ReconcileStart { controller, object } => out.tag(6).str(controller).str(object),
            EventRef::ReconcileEnd { controller, object, result } => {
                out.tag(7).str(controller).str(object).str(result)
            }
            EventRef::Fault { description } => out.tag(8).str(description),
            EventRef::FaultEffect { description } => out.tag(9).str(description),
            EventRef::Note { text } => out.tag(10).str(text),
        };
    }

    /// The owned event, for a trace that keeps its entries.
    fn to_event(self) -> TraceEvent {
        match self {
            EventRef::NodeStart { restart } => TraceEvent::NodeStart { restart },
            EventRef::NodeKill { reason } => TraceEvent::NodeKill { reason: reason.to_owned() },
            EventRef::ApiRequest { call, verb, target } => {
                TraceEvent::ApiRequest { call, verb, target: target.to_owned() }
            }
            EventRef::ApiResponse { call, result } => TraceEvent::ApiResponse {
                call,
                result: result.map(str::to_owned).map_err(|(code, reason)| (code, reason.to_owned())),
            },
            EventRef::WatchDelivery { watch, kind, object, resource_version } => TraceEvent::WatchDelivery {
                watch: watch.to_owned(),
                kind,
                object: object.to_owned(),
                resource_version: resource_version.to_owned(),
            },
            EventRef::Relist { watch, resource_version, items } => TraceEvent::Relist {
                watch: watch.to_owned(),
                resource_version: resource_version.to_owned(),
                items,
            },
            EventRef::ReconcileStart { controller, object } => {
                TraceEvent::ReconcileStart { controller: controller.to_owned(), object: object.to_owned() }
            }
            EventRef::ReconcileEnd { controller, object, result } => TraceEvent::ReconcileEnd {
                controller: controller.to_owned(),
                object: object.to_owned(),
                result: result.to_owned(),
            },
            EventRef::Fault { description } => TraceEvent::Fault { description: description.to_owned() },
            EventRef::FaultEffect { description } => {
                TraceEvent::FaultEffect { description: description.to_owned() }
            }
            EventRef::Note { text } => TraceEvent::Note { text: text.to_owned() },
        }
    }
}

impl TraceEvent {
    /// The same event, borrowed.
    fn borrowed(&self) -> EventRef<'_> {
        match self {
            TraceEvent::NodeStart { restart } => EventRef::NodeStart { restart: *restart },
            TraceEvent::NodeKill { reason } => EventRef::NodeKill { reason },
            TraceEvent::ApiRequest { call, verb, target } => {
                EventRef::ApiRequest { call: *call, verb, target }
            }
            TraceEvent::ApiResponse { call, result } => EventRef::ApiResponse {
                call: *call,
                result: result.as_deref().map_err(|(code, reason)| (*code, reason.as_str())),
            },
            TraceEvent::WatchDelivery { watch, kind, object, resource_version } => {
                EventRef::WatchDelivery { watch, kind, object, resource_version }
            }
            TraceEvent::Relist { watch, resource_version, items } => {
                EventRef::Relist { watch, resource_version, items: *items }
            }
            TraceEvent::ReconcileStart { controller, object } => {
                EventRef::ReconcileStart { controller, object }
            }
            TraceEvent::ReconcileEnd { controller, object, result } => {
                EventRef::ReconcileEnd { controller, object, result }
            }
            TraceEvent::Fault { description } => EventRef::Fault { description },
            TraceEvent::FaultEffect { description } => EventRef::FaultEffect { description },
            TraceEvent::Note { text } => EventRef::Note { text },
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

/// Bytes of entry encodings gathered before they are fed to the digest (see `Trace::pending`).
const HASH_BLOCK_BYTES: usize = 4096;

/// The trace of a run.
#[derive(Clone, Default)]
pub struct Trace {
    keep_entries: bool,
    entries: Vec<TraceEntry>,
    len: usize,
    hasher: Xxh3,
    // The canonical encodings of the entries not yet fed to `hasher`, fed in blocks of about
    // `HASH_BLOCK_BYTES`: XXH3's streaming digest depends only on the bytes, not on how they are
    // split, and one update per block costs less than one per entry.
    pending: Vec<u8>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("len", &self.len)
            .field("digest", &self.digest())
            .field("entries", &self.entries)
            .finish()
    }
}

impl Trace {
    /// An empty trace that keeps its entries (`keep_entries`) or only the running digest (sweeps).
    pub fn new(keep_entries: bool) -> Self {
        // Room for a block and the entry that completes it, so the buffer grows once per run.
        Trace { keep_entries, pending: Vec::with_capacity(HASH_BLOCK_BYTES * 2), ..Trace::default() }
    }

    /// Whether this trace keeps its entries.
    pub fn keeps_entries(&self) -> bool {
        self.keep_entries
    }

    /// Append an entry (and fold it into the digest).
    pub fn push(&mut self, at_nanos: u64, node: &Arc<str>, event: TraceEvent) {
        self.fold(at_nanos, node, event.borrowed());
        if self.keep_entries {
            self.entries.push(TraceEntry { at_nanos, node: Arc::clone(node), event });
        }
    }

    /// [`Trace::push`] of a borrowed event: its texts are copied only if the entries are kept.
    pub(crate) fn push_ref(&mut self, at_nanos: u64, node: &Arc<str>, event: EventRef<'_>) {
        self.fold(at_nanos, node, event);
        if self.keep_entries {
            self.entries.push(TraceEntry { at_nanos, node: Arc::clone(node), event: event.to_event() });
        }
    }

    /// Fold an entry into the digest and count it.
    fn fold(&mut self, at_nanos: u64, node: &Arc<str>, event: EventRef<'_>) {
        // The exact time (the line shows only microseconds), the node and the event.
        let mut encoder = Encoder(&mut self.pending);
        encoder.u64(at_nanos).str(node);
        event.encode(&mut encoder);
        if self.pending.len() >= HASH_BLOCK_BYTES {
            self.hasher.update(&self.pending);
            self.pending.clear();
        }
        self.len += 1;
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
        let digest = if self.pending.is_empty() {
            self.hasher.digest128()
        } else {
            let mut hasher = self.hasher.clone();
            hasher.update(&self.pending);
            hasher.digest128()
        };
        format!("{digest:032x}")
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
