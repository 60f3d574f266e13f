//! Quiescence: what the liveness phase waits for. Informers and controllers register their
//! progress here; the liveness phase asks [`Quiescence::busy`] whether anything may still write.
//!
//! A component of the [world](crate::world): it owns its state and reads the cluster set, never
//! the world.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use model_apiserver::Revision;

use crate::cluster::{Clusters, WatchScope};

/// At most this many requeues that are not idle are waited for in one liveness phase: a
/// controller that changes something on every periodic requeue never settles, and is reported
/// once it has done so this often.
pub const LIVENESS_REQUEUES_MAX: u32 = 100;
const _: () = assert!(LIVENESS_REQUEUES_MAX > 0);

/// The kubelet's CrashLoopBackOff: the first restart of an exited container waits this long, and
/// each one after it twice as long as the one before, up to [`CRASH_LOOP_BACKOFF_MAX`]
/// (kubelet's `initialBackOff` and `MaxContainerBackOff`).
pub const CRASH_LOOP_BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// See [`CRASH_LOOP_BACKOFF_INITIAL`].
pub const CRASH_LOOP_BACKOFF_MAX: Duration = Duration::from_secs(300);
const _: () = assert!(CRASH_LOOP_BACKOFF_INITIAL.as_millis() <= CRASH_LOOP_BACKOFF_MAX.as_millis());

/// One controller's restarts after its main future returned.
#[derive(Clone, Debug)]
struct CrashLoop {
    /// How often it exited.
    exits: u32,
    /// The back-off its last exit got.
    backoff: Duration,
    /// When it last exited.
    exited_at: Duration,
    /// Its restart is due then, if it is waiting for one.
    restart_at: Option<Duration>,
}

/// What a registered informer or controller reports to the liveness phase.
#[derive(Clone, Debug)]
pub(crate) enum Progress {
    /// An informer of `cluster` that has applied every event up to `seen`.
    /// Only writes into `scope` (its type and namespace; `None`: any write) concern it.
    Informer { cluster: Arc<str>, name: Arc<str>, scope: Option<WatchScope>, seen: Option<Revision> },
    /// A controller with `running` reconciles in flight, its earliest queued request due at
    /// `next_due` and its earliest awaited one (not an idle requeue) at `next_awaited_due`
    /// (virtual times since start).
    Controller {
        name: Arc<str>,
        running: usize,
        next_due: Option<Duration>,
        next_awaited_due: Option<Duration>,
    },
}

/// The registrations and the last write.
#[derive(Default)]
pub(crate) struct Quiescence {
    progress: BTreeMap<u64, Progress>,
    next_progress: u64,
    /// Per controller: its last failed reconcile (object, error) and how many in a row failed,
    /// so that a liveness verdict names the error a controller keeps hitting.
    reconcile_errors: BTreeMap<Arc<str>, (String, String, u64)>,
    /// Virtual time of the last write that moved a revision (heartbeats left out).
    last_write: Duration,
    /// Per controller whose main future returned: its CrashLoopBackOff.
    crash_loops: BTreeMap<Arc<str>, CrashLoop>,
    /// Counts every change of `progress`, for [`InformerScan`].
    changes: u64,
    /// The last scan of the informers by [`Quiescence::busy`], reused while neither a
    /// registration nor a revision changed since.
    informer_scan: Cell<Option<InformerScan>>,
}

/// What the informers looked like at one check: the first (by registration) behind its scope's
/// last write, with that write's revision. An informer's answer changes only when its
/// registration changes or a write moves a revision, so while `changes` and `revisions` (the sum
/// of the clusters' revisions) are the same, so is the scan's.
#[derive(Clone, Copy)]
struct InformerScan {
    changes: u64,
    revisions: u64,
    behind: Option<(u64, Revision)>,
}

impl Quiescence {
    /// Register an informer or a controller.
    pub(crate) fn register(&mut self, progress: Progress) -> u64 {
        let id = self.next_progress;
        self.next_progress += 1;
        self.progress.insert(id, progress);
        self.changes += 1;
        id
    }

    /// Update a registration.
    pub(crate) fn update(&mut self, id: u64, progress: Progress) {
        self.progress.insert(id, progress);
        self.changes += 1;
    }

    /// Drop a registration (its node died or it stopped).
    pub(crate) fn unregister(&mut self, id: u64) {
        self.progress.remove(&id);
        self.changes += 1;
    }

    /// Drop every registration (the run is over).
    pub(crate) fn clear(&mut self) {
        self.progress.clear();
        self.changes += 1;
    }

    /// A write that is progress (not a heartbeat) happened at `at`.
    pub(crate) fn wrote(&mut self, at: Duration) {
        self.last_write = at;
    }

    /// Something that counts as activity happened at `at` (a fault ended, a node restarted or
    /// resumed): the quiet period starts over, as after a write.
    pub(crate) fn activity(&mut self, at: Duration) {
        self.last_write = self.last_write.max(at);
    }

    /// Controller `name`'s main future returned at `now`: its container exited. The back-off
    /// before its restart, as the kubelet's: 10 s, doubling with each exit up to 5 min, and
    /// 10 s again once the last exit is more than twice the maximum ago.
    pub(crate) fn container_exited(&mut self, name: &Arc<str>, now: Duration) -> (Duration, u32) {
        let entry = self.crash_loops.entry(name.clone()).or_insert(CrashLoop {
            exits: 0,
            backoff: Duration::ZERO,
            exited_at: now,
            restart_at: None,
        });
        let expired = now.saturating_sub(entry.exited_at) > CRASH_LOOP_BACKOFF_MAX * 2;
        entry.backoff = if entry.exits == 0 || expired {
            CRASH_LOOP_BACKOFF_INITIAL
        } else {
            (entry.backoff * 2).min(CRASH_LOOP_BACKOFF_MAX)
        };
        entry.exits = entry.exits.saturating_add(1);
        entry.exited_at = now;
        entry.restart_at = Some(now + entry.backoff);
        (entry.backoff, entry.exits)
    }

    /// Controller `name`'s container restarts now.
    pub(crate) fn container_restarting(&mut self, name: &str) {
        if let Some(entry) = self.crash_loops.get_mut(name) {
            entry.restart_at = None;
        }
    }

    /// A controller waiting in CrashLoopBackOff, if any: it is down until its restart.
    fn crash_looping(&self) -> Option<String> {
        self.crash_loops.iter().find_map(|(name, c)| {
            let at = c.restart_at?;
            let times = if c.exits == 1 { "once".to_owned() } else { format!("{} times", c.exits) };
            Some(format!(
                "controller {name} is in CrashLoopBackOff: its main future returned (the container exited) {times}, \
                 the next restart is due at {}ms",
                at.as_millis()
            ))
        })
    }

    /// Virtual time of the last write.
    pub(crate) fn last_write(&self) -> Duration {
        self.last_write
    }

    /// How many informers have not seen the last write into their scope (a compaction now
    /// expires their watches: they resume from a revision before it).
    pub(crate) fn informers_behind(&self, clusters: &Clusters) -> usize {
        self.progress
            .values()
            .filter(|p| match p {
                Progress::Informer { cluster, scope, seen: Some(seen), .. } => {
                    *seen < clusters.scope_revision(cluster, scope.as_ref())
                }
                _ => false,
            })
            .count()
    }

    /// The earliest awaited requeue of any controller (a request that is not idle), and whose.
    pub(crate) fn awaited_requeue(&self) -> Option<(Duration, Arc<str>)> {
        self.progress
            .values()
            .filter_map(|p| match p {
                Progress::Controller { name, next_awaited_due: Some(due), .. } => Some((*due, name.clone())),
                _ => None,
            })
            .min()
    }

    /// A controller's reconcile of `object` ended, with `error` if it failed.
    pub(crate) fn note_reconcile(&mut self, controller: &Arc<str>, object: &str, error: Option<&str>) {
        match error {
            None => {
                self.reconcile_errors.remove(controller);
            }
            Some(error) => {
                let entry = self.reconcile_errors.entry(controller.clone()).or_default();
                entry.2 += 1;
                (entry.0, entry.1) = (object.to_owned(), error.to_owned());
            }
        }
    }

    /// What keeps `controller` busy beyond its queue: the error its reconciles keep failing with.
    pub(crate) fn failing(&self, controller: &Arc<str>) -> String {
        match self.reconcile_errors.get(controller) {
            Some((object, error, times)) => {
                format!(" (its last {times} reconciles failed; the last, of {object}: {error})")
            }
            None => String::new(),
        }
    }

    /// `None` if the world is quiet at `now`; otherwise what keeps it busy. `faults_busy` is what
    /// keeps the faults' side busy (a node down, a task in a gate), if anything, and `released_at`
    /// when a task last left a fault's gate.
    pub(crate) fn busy(
        &self,
        clusters: &Clusters,
        (faults_busy, released_at): (Option<String>, Duration),
        now: Duration,
        quiet: Duration,
    ) -> Option<Busy> {
        if let Some(busy) = faults_busy.or_else(|| self.crash_looping()) {
            return Some(Busy::Described(busy));
        }
        // A task a fault held (a watch pull, a reconcile's start) acts on what it was held from
        // only once released: as after a write, it gets a quiet period to do so. Without it, a
        // controller partitioned past the last write (whose informers then catch up at once) was
        // judged quiet before it could act, e.g. a garbage collector before its next scan.
        let last_activity = self.last_write.max(released_at);
        if now.saturating_sub(last_activity) < quiet {
            return Some(Busy::LastWrite(last_activity));
        }
        // The first registration (by id) that is busy. The liveness phase asks every 10 ms of a
        // busy stretch, and an informer's check is a revision lookup by resource name: the
        // informers' part is scanned once per change of a registration or a revision
        // ([`InformerScan`]), the controllers' (integer checks) every time. The answer is the one
        // a single scan in id order gives.
        let behind = self.first_informer_behind(clusters);
        for (id, progress) in &self.progress {
            if let Some((behind_id, revision)) = behind
                && behind_id == *id
                && let Progress::Informer { name, .. } = progress
            {
                return Some(Busy::InformerBehind { name: name.clone(), revision });
            }
            if let Progress::Controller { name, running, next_due, .. } = progress {
                if *running > 0 {
                    return Some(Busy::Reconciling { name: name.clone(), failing: self.failing(name) });
                }
                // A request due within the coming quiet period may still write: wait for it.
                if next_due.is_some_and(|due| due <= now + quiet) {
                    return Some(Busy::RequestDue { name: name.clone(), failing: self.failing(name) });
                }
            }
        }
        None
    }

    /// The first informer (by id) that has not seen the last write into its scope, with that
    /// write's revision; from the last scan when nothing it depends on changed.
    fn first_informer_behind(&self, clusters: &Clusters) -> Option<(u64, Revision)> {
        let revisions = clusters.revisions();
        if let Some(scan) = self.informer_scan.get()
            && scan.changes == self.changes
            && scan.revisions == revisions
        {
            return scan.behind;
        }
        let behind = self.progress.iter().find_map(|(id, progress)| match progress {
            Progress::Informer { cluster, scope, seen, .. } => {
                let revision = clusters.scope_revision(cluster, scope.as_ref());
                seen.is_none_or(|seen| seen < revision).then_some((*id, revision))
            }
            Progress::Controller { .. } => None,
        });
        self.informer_scan.set(Some(InformerScan { changes: self.changes, revisions, behind }));
        behind
    }
}

/// What keeps a world busy ([`Quiescence::busy`]), as its `Display` says it. The liveness phase
/// asks several times per seed and shows the text only when the world never quiets, so the text
/// is written only then.
#[derive(Debug)]
pub(crate) enum Busy {
    /// Already a text: the faults' side, or a controller in CrashLoopBackOff.
    Described(String),
    /// A write less than a quiet period ago, at this virtual time.
    LastWrite(Duration),
    /// An informer that has not seen `revision` (the last write into its scope).
    InformerBehind { name: Arc<str>, revision: Revision },
    /// A controller with a reconcile in flight; `failing` is [`Quiescence::failing`]'s note.
    Reconciling { name: Arc<str>, failing: String },
    /// A controller with a request due within the coming quiet period.
    RequestDue { name: Arc<str>, failing: String },
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Busy::Described(text) => f.write_str(text),
            Busy::LastWrite(at) => write!(f, "last write at {}ms", at.as_millis()),
            Busy::InformerBehind { name, revision } => {
                write!(f, "informer {name} behind revision {revision}")
            }
            Busy::Reconciling { name, failing } => write!(f, "controller {name} reconciling{failing}"),
            Busy::RequestDue { name, failing } => write!(f, "controller {name} has a request due{failing}"),
        }
    }
}

/// A terminating Pod whose grace period outlasts the liveness phase, if any: its deletion waits
/// on the clock, not on a controller. `now_wall` is the virtual wall clock.
pub(crate) fn grace_outlasting(clusters: &Clusters, now_wall: jiff::Timestamp) -> Option<String> {
    for (cluster, state) in clusters.iter() {
        let snapshot = state.server.snapshot();
        for (key, object) in snapshot.iter_resource("pods", None) {
            let (Some(deleting), Some(grace)) =
                (&object.metadata.deletion_timestamp, object.metadata.deletion_grace_period_seconds)
            else {
                continue;
            };
            // The deletion timestamp is the end of the grace period.
            if deleting.0 > now_wall {
                let place = if clusters.len() > 1 { format!(" in cluster {cluster}") } else { String::new() };
                return Some(format!(
                    "pod {}/{}{place} is terminating with a {grace}s grace period, which ends after the liveness wait \
                     (raise SimBuilder::liveness_wait, or delete with a shorter gracePeriodSeconds)",
                    key.namespace, key.name
                ));
            }
        }
    }
    None
}
