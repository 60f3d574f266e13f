//! Fault plans: which faults fire, and when.
//!
//! A plan is data, not a seed: it is what regression files persist, so that a found bug survives
//! changes to the engine's random choices (proptest's lesson: persist the decoded case).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which side of an API call a crash lands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CallSide {
    /// Before the request reaches the server: the write never happens.
    Before,
    /// After the server applied it, before the controller sees the answer.
    After,
}

/// An API error a fault can answer with instead of the server's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InjectedError {
    /// 409 Conflict (contention).
    Conflict,
    /// 429 TooManyRequests with retryAfterSeconds (throttling).
    TooManyRequests,
    /// 500 InternalError.
    InternalError,
    /// 504 Timeout, the request never applied.
    Timeout,
}

impl InjectedError {
    /// The HTTP code.
    pub fn code(self) -> u16 {
        match self {
            InjectedError::Conflict => 409,
            InjectedError::TooManyRequests => 429,
            InjectedError::InternalError => 500,
            InjectedError::Timeout => 504,
        }
    }
}

/// What happens when a fault fires.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Fault {
    /// Kill the controller's node (caches, queue and memory lost), restart it after
    /// `restart_after_ms`. With an API-call trigger, `side` says whether the call happened.
    #[serde(rename_all = "camelCase")]
    Crash {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// Before or after the triggering call.
        side: CallSide,
        /// Virtual milliseconds until the node restarts.
        restart_after_ms: u64,
    },
    /// After the controller's next restart its informers list and watch from a lagging API-server
    /// replica, `lag_revisions` behind storage (time travel: kubernetes#59848). Writes still go to
    /// storage with real RV checks.
    #[serde(rename_all = "camelCase")]
    StaleReplica {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// How many revisions the replica lags behind storage.
        lag_revisions: u64,
        /// Virtual milliseconds until the node restarts.
        restart_after_ms: u64,
    },
    /// Reconciles of the controller are held for `duration_ms` while its caches keep advancing,
    /// so intermediate states go unobserved.
    #[serde(rename_all = "camelCase")]
    PauseReconciles {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// Virtual milliseconds the fault lasts.
        duration_ms: u64,
    },
    /// Watch deliveries to the controller's informers are held for `duration_ms`, then the watch
    /// expires (410) and the informer relists: the events in between are never seen one by one.
    #[serde(rename_all = "camelCase")]
    SkipByRelist {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// Virtual milliseconds the fault lasts.
        duration_ms: u64,
    },
    /// Extra delay on one informer's watch pulls (reorders across informers), for `duration_ms`
    /// after the fault fires. Bounded, as Sieve's delays are: an open-ended delay on every pull
    /// of every informer keeps a world from ever catching up before the liveness phase.
    #[serde(rename_all = "camelCase")]
    DelayWatch {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// The informer's resource (plural), or empty for every informer of the node (each
        /// informer then draws its own delay in `0..=extra_ms`).
        resource: String,
        /// Extra virtual milliseconds per pull.
        extra_ms: u64,
        /// Virtual milliseconds the fault stays in force after it fires: a pull that starts
        /// within them is delayed. Plans written without it get
        /// [`DELAY_WATCH_DURATION_MS_DEFAULT`].
        #[serde(default = "delay_watch_duration_ms_default")]
        duration_ms: u64,
    },
    /// The triggering API call fails with `error` without reaching the server.
    #[serde(rename_all = "camelCase")]
    ApiError {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// The error answered.
        error: InjectedError,
    },
    /// The triggering write is applied by the server, but the client sees 504 Timeout.
    #[serde(rename_all = "camelCase")]
    Ambiguous {
        /// The controller (node name) the fault acts on.
        controller: String,
    },
    /// Every watch of the controller is cut; informers re-watch (and relist on 410).
    #[serde(rename_all = "camelCase")]
    WatchDisconnect {
        /// The controller (node name) the fault acts on.
        controller: String,
    },
    /// The server compacts its history up to the current revision: watches behind it get 410.
    Compact,
    /// Calls between the controller and the API server fail (timeouts) for `duration_ms`.
    #[serde(rename_all = "camelCase")]
    Partition {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// Virtual milliseconds the fault lasts.
        duration_ms: u64,
    },
    /// The controller's current leader replica is paused for `duration_ms`: its Lease expires, the
    /// other replica takes over, and the old leader wakes still believing it leads.
    #[serde(rename_all = "camelCase")]
    PauseLeader {
        /// The controller (node name) the fault acts on.
        controller: String,
        /// Virtual milliseconds the fault lasts.
        duration_ms: u64,
    },
    /// The kubelet of Node `node` (a Node object of the first declared cluster) goes silent for
    /// `duration_ms`: its `Ready`, `MemoryPressure`, `DiskPressure` and `PIDPressure` conditions
    /// turn `Unknown` (as kube-controller-manager's node lifecycle controller writes them once the
    /// kubelet's heartbeats stop), then the kubelet posts its status again. Exposes controllers
    /// that take an unready Pod for a failed one, or readiness for monotonic.
    #[serde(rename_all = "camelCase")]
    LoseNode {
        /// The Node's name; empty: the first Node by name when the fault fires.
        node: String,
        /// Virtual milliseconds until the kubelet posts its status again.
        duration_ms: u64,
    },
}

/// How long a [`Fault::DelayWatch`] stays in force when its plan does not say (plans written
/// before the field existed, [`Fault::delay_watch`]).
pub const DELAY_WATCH_DURATION_MS_DEFAULT: u64 = 10_000;

fn delay_watch_duration_ms_default() -> u64 {
    DELAY_WATCH_DURATION_MS_DEFAULT
}

impl Fault {
    /// A [`Fault::DelayWatch`] in force for [`DELAY_WATCH_DURATION_MS_DEFAULT`].
    pub fn delay_watch(controller: impl Into<String>, resource: impl Into<String>, extra_ms: u64) -> Self {
        Fault::DelayWatch {
            controller: controller.into(),
            resource: resource.into(),
            extra_ms,
            duration_ms: DELAY_WATCH_DURATION_MS_DEFAULT,
        }
    }

    /// The controller the fault acts on, if it acts on one.
    pub fn controller(&self) -> Option<&str> {
        match self {
            Fault::Crash { controller, .. }
            | Fault::StaleReplica { controller, .. }
            | Fault::PauseReconciles { controller, .. }
            | Fault::SkipByRelist { controller, .. }
            | Fault::DelayWatch { controller, .. }
            | Fault::ApiError { controller, .. }
            | Fault::Ambiguous { controller }
            | Fault::WatchDisconnect { controller }
            | Fault::Partition { controller, .. }
            | Fault::PauseLeader { controller, .. } => Some(controller),
            Fault::Compact | Fault::LoseNode { .. } => None,
        }
    }

    /// The fault's kind, as swarm selection and reports name it.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Crash { .. } => FaultKind::Crash,
            Fault::StaleReplica { .. } => FaultKind::StaleReplica,
            Fault::PauseReconciles { .. } => FaultKind::PauseReconciles,
            Fault::SkipByRelist { .. } => FaultKind::SkipByRelist,
            Fault::DelayWatch { .. } => FaultKind::DelayWatch,
            Fault::ApiError { .. } => FaultKind::ApiError,
            Fault::Ambiguous { .. } => FaultKind::Ambiguous,
            Fault::WatchDisconnect { .. } => FaultKind::WatchDisconnect,
            Fault::Compact => FaultKind::Compact,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::PauseLeader { .. } => FaultKind::PauseLeader,
            Fault::LoseNode { .. } => FaultKind::LoseNode,
        }
    }
}

/// The fault kinds of DESIGN.md section 6, for swarm selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FaultKind {
    /// [`Fault::Crash`].
    Crash,
    /// [`Fault::StaleReplica`].
    StaleReplica,
    /// [`Fault::PauseReconciles`].
    PauseReconciles,
    /// [`Fault::SkipByRelist`].
    SkipByRelist,
    /// [`Fault::DelayWatch`].
    DelayWatch,
    /// [`Fault::ApiError`].
    ApiError,
    /// [`Fault::Ambiguous`].
    Ambiguous,
    /// [`Fault::WatchDisconnect`].
    WatchDisconnect,
    /// [`Fault::Compact`].
    Compact,
    /// [`Fault::Partition`].
    Partition,
    /// [`Fault::PauseLeader`].
    PauseLeader,
    /// [`Fault::LoseNode`].
    LoseNode,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 12] = [
        FaultKind::Crash,
        FaultKind::StaleReplica,
        FaultKind::PauseReconciles,
        FaultKind::SkipByRelist,
        FaultKind::DelayWatch,
        FaultKind::ApiError,
        FaultKind::Ambiguous,
        FaultKind::WatchDisconnect,
        FaultKind::Compact,
        FaultKind::Partition,
        FaultKind::PauseLeader,
        FaultKind::LoseNode,
    ];
}

/// A change to an object that a trigger can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ObjectChange {
    /// The object was created.
    Create,
    /// The object was updated (any write that changed it).
    Update,
    /// The object was deleted, or its deletion started.
    Delete,
}

/// When a fault fires.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Trigger {
    /// At the controller's k-th API write (1-based), optionally counting only writes of one kind
    /// and/or verb. Crash faults use `side` to land before or after that call.
    #[serde(rename_all = "camelCase")]
    NthWrite {
        /// The controller (node name) whose writes are counted.
        controller: String,
        /// Which write (1-based).
        n: u32,
        /// Count only writes of this kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        /// Count only writes of this verb (`create`, `update`, `patch`, `delete`, `deletecollection`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verb: Option<String>,
    },
    /// When anyone's write changes object `namespace/name` of `kind` in the given way.
    #[serde(rename_all = "camelCase")]
    OnObject {
        /// The object's kind.
        kind: String,
        /// The object's namespace (empty for cluster-scoped).
        namespace: String,
        /// The object's name.
        name: String,
        /// The change that fires the trigger.
        change: ObjectChange,
    },
    /// At virtual time `at_ms` after the start of the run.
    #[serde(rename_all = "camelCase")]
    AtTime {
        /// Virtual milliseconds after the start of the run.
        at_ms: u64,
    },
    /// On each API call of the controller, with probability `per_mille`/1000 (drawn from the
    /// decision source), at most `max` times.
    #[serde(rename_all = "camelCase")]
    Rate {
        /// The controller (node name) whose calls may fire it.
        controller: String,
        /// The probability per call, in thousandths.
        per_mille: u32,
        /// At most this many firings.
        max: u32,
    },
}

impl Trigger {
    /// The controller whose calls the trigger counts or watches, if it names one.
    pub fn controller(&self) -> Option<&str> {
        match self {
            Trigger::NthWrite { controller, .. } | Trigger::Rate { controller, .. } => Some(controller),
            _ => None,
        }
    }
}

/// One planned fault.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlannedFault {
    /// When.
    pub trigger: Trigger,
    /// What.
    pub fault: Fault,
}

/// A list of triggered faults. Order matters only for faults with the same trigger point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// The faults.
    pub faults: Vec<PlannedFault>,
}

impl FaultPlan {
    /// A plan with no faults (the reference run).
    pub fn none() -> Self {
        FaultPlan::default()
    }
    /// Whether the plan has no faults.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::NthWrite { controller, n, kind, verb } => {
                write!(f, "at write #{n} by {controller}")?;
                if let Some(v) = verb {
                    write!(f, " ({v}")?;
                    if let Some(k) = kind {
                        write!(f, " {k}")?;
                    }
                    write!(f, ")")?;
                } else if let Some(k) = kind {
                    write!(f, " (of {k})")?;
                }
                Ok(())
            }
            Trigger::OnObject { kind, namespace, name, change } => {
                write!(f, "on {change:?} of {kind} {namespace}/{name}")
            }
            Trigger::AtTime { at_ms } => write!(f, "at {at_ms}ms"),
            Trigger::Rate { controller, per_mille, max } => {
                write!(f, "on {per_mille}‰ of {controller}'s calls (at most {max})")
            }
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Crash { controller, side, restart_after_ms } => {
                let side = match side {
                    CallSide::Before => "before",
                    CallSide::After => "after",
                };
                write!(f, "crash {controller} {side} the call, restart after {restart_after_ms}ms")
            }
            Fault::StaleReplica { controller, lag_revisions, restart_after_ms } => write!(
                f,
                "restart {controller} after {restart_after_ms}ms onto a replica {lag_revisions} revisions behind"
            ),
            Fault::PauseReconciles { controller, duration_ms } => {
                write!(f, "pause {controller}'s reconciles for {duration_ms}ms")
            }
            Fault::SkipByRelist { controller, duration_ms } => {
                write!(f, "hold {controller}'s watches {duration_ms}ms, then force a 410 relist")
            }
            Fault::DelayWatch { controller, resource, extra_ms, duration_ms } => {
                let watches =
                    if resource.is_empty() { "watches".to_owned() } else { format!("{resource} watch") };
                write!(f, "delay {controller}'s {watches} by {extra_ms}ms for {duration_ms}ms")
            }
            Fault::ApiError { controller, error } => {
                write!(f, "fail {controller}'s call with {} {error:?}", error.code())
            }
            Fault::Ambiguous { controller } => {
                write!(f, "apply {controller}'s write but answer 504 Timeout")
            }
            Fault::WatchDisconnect { controller } => write!(f, "disconnect {controller}'s watches"),
            Fault::Compact => write!(f, "compact the server's history"),
            Fault::Partition { controller, duration_ms } => {
                write!(f, "partition {controller} from the API server for {duration_ms}ms")
            }
            Fault::PauseLeader { controller, duration_ms } => {
                write!(f, "pause {controller}'s leader for {duration_ms}ms")
            }
            Fault::LoseNode { node, duration_ms } => {
                let node = if node.is_empty() { "the first Node" } else { node };
                write!(f, "lose {node}'s kubelet for {duration_ms}ms")
            }
        }
    }
}

impl fmt::Display for PlannedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}", self.fault, self.trigger)
    }
}
