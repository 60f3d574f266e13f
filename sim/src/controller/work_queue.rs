//! The work queue of a controller: kube-runtime's scheduler and runner rules, over plain data.
//!
//! - A request is deduplicated by object reference: scheduling an object that is already queued
//!   keeps the EARLIER of the two due times (kube-runtime's `scheduler_dedupe_should_keep_earlier_item`).
//!   With a debounce, a request made before the queued one falls due resets it to the new request's
//!   time plus the debounce, as kube-runtime's scheduler does: bursts merge into one reconcile.
//! - At most one reconcile per object runs at a time: a request that falls due while its object is
//!   in flight stays queued until the reconcile finishes, then runs.
//! - The queue is bounded by `len_max`; a request beyond it is refused and reported.
//! - A request is a requeue or a trigger, and a requeue is awaited or idle. A request is a
//!   requeue if it was asked by a finished reconcile ([`WorkQueue::schedule_requeue`]) and no
//!   trigger merged with it. It is idle if, moreover, the reconcile that asked for it was itself
//!   started by a requeue and changed nothing: a periodic requeue that found nothing to do last
//!   time. The liveness phase waits for every request but idle ones (see
//!   [`WorkQueue::next_awaited_due`]). Merging two requests keeps a flag only if both have it.
//!
//! Time is a type parameter so the rules are testable without a runtime.
//!
//! Each queued object is held once, behind an `Arc` shared by the three indexes and the in-flight
//! set: an object reference is two `String`s, and cloning it for every index update cost about a
//! tenth of a small seed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What [`WorkQueue::schedule`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduled {
    /// The object was not queued; now it is.
    Added,
    /// The object was queued, and the new request replaced its due time (earlier, or later by
    /// the debounce).
    Replaced,
    /// The object was already queued for the same time or earlier; its due time stays (its
    /// origin may merge).
    Kept,
    /// The queue is full (`len_max` objects): the request was dropped.
    Full,
}

/// Where a request came from (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A trigger (a watch event, a mapper), or anything a trigger merged with.
    Trigger,
    /// A requeue asked by a finished reconcile; `idle` if that reconcile was started by a requeue
    /// and changed nothing.
    Requeue {
        /// Whether the liveness phase may leave it pending.
        idle: bool,
    },
}

impl Origin {
    /// The origin of two merged requests: a flag survives only if both have it.
    fn merge(self, other: Origin) -> Origin {
        match (self, other) {
            (Origin::Requeue { idle: a }, Origin::Requeue { idle: b }) => Origin::Requeue { idle: a && b },
            _ => Origin::Trigger,
        }
    }
    fn is_idle(self) -> bool {
        self == Origin::Requeue { idle: true }
    }
}

/// Requests keyed by object, each with a due time, plus the set of objects in flight.
#[derive(Clone, Debug)]
pub struct WorkQueue<T: Ord + Clone, Tm: Ord + Copy> {
    due: BTreeMap<Arc<T>, (Tm, Origin)>,
    /// The same requests ordered by (due time, object): ties break by object, deterministically.
    order: BTreeSet<(Tm, Arc<T>)>,
    /// The requests that are not idle, ordered as `order`, so that the earliest is found without
    /// walking past idle ones.
    awaited: BTreeSet<(Tm, Arc<T>)>,
    in_flight: BTreeSet<Arc<T>>,
    len_max: usize,
}

impl<T: Ord + Clone, Tm: Ord + Copy> WorkQueue<T, Tm> {
    /// An empty queue holding at most `len_max` queued objects.
    pub fn new(len_max: usize) -> Self {
        WorkQueue {
            due: BTreeMap::new(),
            order: BTreeSet::new(),
            awaited: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            len_max,
        }
    }

    /// Ask for `item` to be reconciled at `at`; an earlier request for it wins.
    pub fn schedule(&mut self, item: T, at: Tm) -> Scheduled {
        self.schedule_debounced(item, at, at)
    }

    /// A trigger made at `requested` for a reconcile at `due` (`requested` plus the debounce). If
    /// the object is queued for `requested` or later, the new request replaces the queued one;
    /// if it is queued earlier, the queued one stays.
    pub fn schedule_debounced(&mut self, item: T, requested: Tm, due: Tm) -> Scheduled {
        self.merge(item, requested, due, Origin::Trigger)
    }

    /// A requeue asked by a finished reconcile, with the same merging rules as
    /// [`WorkQueue::schedule_debounced`]; `idle` if that reconcile was started by a requeue and
    /// changed nothing.
    pub fn schedule_requeue(&mut self, item: T, requested: Tm, due: Tm, idle: bool) -> Scheduled {
        self.merge(item, requested, due, Origin::Requeue { idle })
    }

    /// [`WorkQueue::schedule_debounced`] (`requeue: None`) or [`WorkQueue::schedule_requeue`]
    /// (`Some(idle)`) of an object the caller already shares: a reconcile's object, handed back
    /// by [`WorkQueue::pop_due_shared`], is queued again without a copy.
    pub fn schedule_shared(
        &mut self,
        item: Arc<T>,
        requested: Tm,
        due: Tm,
        requeue: Option<bool>,
    ) -> Scheduled {
        let origin = match requeue {
            Some(idle) => Origin::Requeue { idle },
            None => Origin::Trigger,
        };
        self.merge(item, requested, due, origin)
    }

    /// Whether a request for `item` would be refused: it is not queued and the queue is full.
    pub fn refuses(&self, item: &T) -> bool {
        self.due.len() >= self.len_max && !self.due.contains_key(item)
    }

    /// Queue or merge a request of `origin`.
    fn merge(
        &mut self,
        item: impl Into<Arc<T>> + std::borrow::Borrow<T>,
        requested: Tm,
        due: Tm,
        origin: Origin,
    ) -> Scheduled {
        let (key, scheduled, at, origin) = match self.due.get_key_value(item.borrow()) {
            Some((key, &(queued, queued_origin))) => {
                let key = key.clone();
                let merged = queued_origin.merge(origin);
                let queued_entry = (queued, key);
                self.order.remove(&queued_entry);
                self.awaited.remove(&queued_entry);
                let (_, key) = queued_entry;
                if queued < requested || queued == due {
                    (key, Scheduled::Kept, queued, merged)
                } else {
                    (key, Scheduled::Replaced, due, merged)
                }
            }
            None if self.due.len() >= self.len_max => return Scheduled::Full,
            None => (item.into(), Scheduled::Added, due, origin),
        };
        self.order.insert((at, key.clone()));
        if !origin.is_idle() {
            self.awaited.insert((at, key.clone()));
        }
        self.due.insert(key, (at, origin));
        self.debug_check();
        scheduled
    }

    /// The paired invariants of the three indexes: `order` holds exactly the requests of `due`,
    /// `awaited` exactly the ones that are not idle, and the queue stays within its bound. Checked
    /// in debug builds after every change (a full walk: too costly for release sweeps).
    fn debug_check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        assert!(self.due.len() <= self.len_max, "the queue holds more than len_max requests");
        assert_eq!(self.order.len(), self.due.len(), "order and due list different requests");
        for (at, item) in &self.order {
            let (due_at, origin) = self.due.get(item).expect("every ordered request is due");
            assert!(due_at == at, "a request is ordered at another time than it is due");
            assert_eq!(
                self.awaited.contains(&(*at, item.clone())),
                !origin.is_idle(),
                "awaited is the non-idle requests"
            );
        }
        assert_eq!(self.awaited.len(), self.due.values().filter(|(_, o)| !o.is_idle()).count());
    }

    /// Take the earliest request due at `now` whose object is not in flight, and mark the object
    /// in flight.
    pub fn pop_due(&mut self, now: Tm) -> Option<T> {
        self.pop_due_request(now).map(|(item, _)| item)
    }

    /// As [`WorkQueue::pop_due`], with the request's origin.
    pub fn pop_due_request(&mut self, now: Tm) -> Option<(T, Origin)> {
        self.pop_due_shared(now).map(|(item, origin)| (T::clone(&item), origin))
    }

    /// [`WorkQueue::pop_due_request`], handing out the queue's own shared object (the one its
    /// in-flight set holds) instead of a copy.
    pub fn pop_due_shared(&mut self, now: Tm) -> Option<(Arc<T>, Origin)> {
        let entry = self
            .order
            .iter()
            .take_while(|(at, _)| *at <= now)
            .find(|(_, item)| !self.in_flight.contains(&**item))
            .cloned()?;
        self.order.remove(&entry);
        self.awaited.remove(&entry);
        let (_, key) = entry;
        let (_, origin) = self.due.remove(&*key)?;
        let first_flight = self.in_flight.insert(key.clone());
        assert!(first_flight, "no object is reconciled twice at once");
        self.debug_check();
        Some((key, origin))
    }

    /// The reconcile of `item` finished: a request that fell due meanwhile may now run.
    pub fn finish(&mut self, item: &T) {
        self.in_flight.remove(item);
    }

    /// The earliest due time among requests whose object is not in flight.
    pub fn next_due(&self) -> Option<Tm> {
        self.order.iter().find(|(_, item)| !self.in_flight.contains(&**item)).map(|(at, _)| *at)
    }

    /// The earliest due time among requests that are not idle and whose object is not in flight:
    /// what the liveness phase waits for.
    pub fn next_awaited_due(&self) -> Option<Tm> {
        self.awaited.iter().find(|(_, item)| !self.in_flight.contains(&**item)).map(|(at, _)| *at)
    }

    /// The origin of `item`'s queued request, if queued.
    pub fn origin(&self, item: &T) -> Option<Origin> {
        self.due.get(item).map(|(_, origin)| *origin)
    }

    /// How many reconciles are in flight.
    pub fn running(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether `item` is being reconciled.
    pub fn is_running(&self, item: &T) -> bool {
        self.in_flight.contains(item)
    }

    /// How many objects are queued (not counting those only in flight).
    pub fn len(&self) -> usize {
        self.due.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// When `item` is due, if queued.
    pub fn due_at(&self, item: &T) -> Option<Tm> {
        self.due.get(item).map(|(at, _)| *at)
    }
}
