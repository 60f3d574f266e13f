//! Delaying and deduplicating stream items, as kube-runtime's `scheduler`: a [`Scheduler`] takes
//! [`ScheduleRequest`]s and yields each message once its `run_at` has passed (virtual time).
//!
//! kube-runtime's rules:
//! - a message scheduled twice before it is yielded runs once, at the EARLIER `run_at`; when the
//!   new request wins, its message replaces the queued one (equal messages may differ in what
//!   `Ord` ignores, as a `ReconcileRequest`'s reason);
//! - with a debounce ([`debounced_scheduler`]), each request's time is `run_at` plus the
//!   debounce, and a request for the same message made before the queued one falls due resets
//!   it, so a burst of requests runs once, `debounce` after the last of them;
//! - [`Scheduler::hold_unless`] keeps due messages that its predicate refuses *pending*, and
//!   yields them as soon as it accepts them; a request for a pending message is dropped (it
//!   already runs as soon as it can); [`Scheduler::hold`] keeps every due message pending;
//! - the scheduler ends as soon as its request stream ends, whatever is still queued.
//!
//! Unlike kube-runtime's (a hash map, a `DelayQueue`), messages are ordered (`T: Ord`, not
//! `Hash`): simultaneous due messages come out in (time, message) order, and pending ones in
//! message order, on every run.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::stream::{Fuse, Stream, StreamExt};
use pin_project_lite::pin_project;

/// A request to yield `message` at `run_at`, as kube-runtime's `scheduler::ScheduleRequest`.
#[derive(Debug)]
pub struct ScheduleRequest<T> {
    /// The message (for a controller, a
    /// [`ReconcileRequest`](crate::controller::ReconcileRequest)).
    pub message: T,
    /// When to yield it (madsim's virtual `Instant`, which `tokio::time::Instant` is in a
    /// simulation).
    pub run_at: Instant,
}

/// The furthest a message is scheduled: six months from now, as kube-runtime clamps it.
fn max_schedule_time() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 30 * 6)
}

pin_project! {
    /// A stream of due messages, as kube-runtime's `scheduler::Scheduler`; made by [`scheduler`]
    /// or [`debounced_scheduler`]. Pin it (`std::pin::pin!`, `Box::pin`) to use
    /// [`Scheduler::hold_unless`] and [`Scheduler::hold`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Scheduler<T, R> {
        queue: Queue<T>,
        #[pin]
        requests: Fuse<R>,
    }
}

/// What a [`Scheduler`] holds besides its request stream.
struct Queue<T> {
    /// When each queued message is due; the key is the canonical copy of the message.
    scheduled: BTreeMap<T, Instant>,
    /// The queued messages by (due time, message): the next one due comes first.
    by_time: BTreeSet<(Instant, T)>,
    /// Messages that fell due while a `hold_unless` refused them.
    pending: BTreeSet<T>,
    debounce: Duration,
    /// The timer for the earliest due time, so that the task is woken when it passes.
    timer: Option<Pin<Box<madsim::time::Sleep>>>,
}

impl<T, R: Stream> Scheduler<T, R> {
    fn new(requests: R, debounce: Duration) -> Self {
        let queue = Queue {
            scheduled: BTreeMap::new(),
            by_time: BTreeSet::new(),
            pending: BTreeSet::new(),
            debounce,
            timer: None,
        };
        Scheduler { queue, requests: requests.fuse() }
    }
}

impl<T: Ord + Clone> Queue<T> {
    /// Queue `request`, or merge it with the queued copy of its message (the earlier wins).
    fn schedule(&mut self, request: ScheduleRequest<T>) {
        if self.pending.contains(&request.message) {
            return;
        }
        let due = request
            .run_at
            .checked_add(self.debounce)
            .map_or_else(max_schedule_time, |at| at.min(max_schedule_time()));
        match self.scheduled.get(&request.message).copied() {
            // The queued one runs at or after the new request: the new one replaces it (a
            // debounce moves it later: the burst is not over).
            Some(queued) if queued >= request.run_at => {
                let (old, _) = self.scheduled.remove_entry(&request.message).expect("just found");
                self.by_time.remove(&(queued, old));
                self.by_time.insert((due, request.message.clone()));
                self.scheduled.insert(request.message, due);
            }
            // The queued one runs first: the new request adds nothing.
            Some(_) => {}
            None => {
                self.by_time.insert((due, request.message.clone()));
                self.scheduled.insert(request.message, due);
            }
        }
        debug_assert_eq!(self.by_time.len(), self.scheduled.len(), "every queued message has one due time");
    }

    /// Take in every request waiting; `false` once the request stream has ended.
    fn take_requests<R>(&mut self, mut requests: Pin<&mut Fuse<R>>, cx: &mut Context<'_>) -> bool
    where
        R: Stream<Item = ScheduleRequest<T>>,
    {
        // Bounded by what the request stream has ready.
        loop {
            match requests.as_mut().poll_next(cx) {
                Poll::Ready(Some(request)) => self.schedule(request),
                Poll::Ready(None) => return false,
                Poll::Pending => return true,
            }
        }
    }

    /// The earliest queued message due at `now`, removed from the queue.
    fn pop_due(&mut self, now: Instant) -> Option<T> {
        let (at, _) = self.by_time.first()?;
        if *at > now {
            return None;
        }
        let (_, message) = self.by_time.pop_first()?;
        self.scheduled.remove(&message);
        Some(message)
    }

    /// Arm the timer for the earliest queued time; `true` if that time has already passed.
    fn arm_timer(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(&(at, _)) = self.by_time.first() else {
            self.timer = None;
            return false;
        };
        match &mut self.timer {
            Some(timer) if timer.deadline() == at => {}
            Some(timer) => timer.as_mut().reset(at),
            None => self.timer = Some(Box::pin(madsim::time::sleep_until(at))),
        }
        let timer = self.timer.as_mut().expect("just armed");
        if timer.as_mut().poll(cx).is_ready() {
            self.timer = None;
            return true;
        }
        false
    }

    /// The next message `can_take` accepts: a pending one first, then due ones in order (those
    /// it refuses become pending).
    fn poll_take(&mut self, cx: &mut Context<'_>, can_take: &dyn Fn(&T) -> bool) -> Poll<T> {
        if let Some(message) = self.pending.iter().find(|m| can_take(m)).cloned() {
            self.pending.remove(&message);
            return Poll::Ready(message);
        }
        // Each round takes the due messages, then arms the timer; a timer that has already
        // passed means another message is due (bounded by the queue's length).
        loop {
            while let Some(message) = self.pop_due(Instant::now()) {
                if can_take(&message) {
                    return Poll::Ready(message);
                }
                self.pending.insert(message);
            }
            if !self.arm_timer(cx) {
                return Poll::Pending;
            }
        }
    }
}

impl<T: Ord + Clone, R: Stream<Item = ScheduleRequest<T>>> Scheduler<T, R> {
    /// A view of the scheduler that keeps due messages `can_take_message` refuses pending, and
    /// yields them as soon as it accepts them, as kube-runtime's `Scheduler::hold_unless` (a
    /// controller's runner holds messages whose object is being reconciled). Short-lived: make
    /// one per poll if the predicate borrows; no message is lost in between.
    pub fn hold_unless<C: Fn(&T) -> bool>(
        self: Pin<&mut Self>,
        can_take_message: C,
    ) -> HoldUnless<'_, T, R, C> {
        HoldUnless { scheduler: self, can_take_message }
    }

    /// A view of the scheduler that keeps every due message pending, as kube-runtime's
    /// `Scheduler::hold`: `hold_unless(|_| false)`, while the consumer is not ready.
    #[must_use]
    pub fn hold(self: Pin<&mut Self>) -> Hold<'_, T, R> {
        Hold { scheduler: self }
    }

    /// Whether `message` fell due and is held pending.
    pub fn contains_pending(&self, message: &T) -> bool {
        self.queue.pending.contains(message)
    }

    /// One poll: take in the requests, then the next message `can_take` accepts.
    fn poll_with(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        can_take: &dyn Fn(&T) -> bool,
    ) -> Poll<Option<T>> {
        let this = self.project();
        if !this.queue.take_requests(this.requests, cx) {
            return Poll::Ready(None);
        }
        this.queue.poll_take(cx, can_take).map(Some)
    }
}

impl<T: Ord + Clone, R: Stream<Item = ScheduleRequest<T>>> Stream for Scheduler<T, R> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.poll_with(cx, &|_| true)
    }
}

/// See [`Scheduler::hold_unless`].
pub struct HoldUnless<'a, T, R, C> {
    scheduler: Pin<&'a mut Scheduler<T, R>>,
    can_take_message: C,
}

impl<T, R, C> Stream for HoldUnless<'_, T, R, C>
where
    T: Ord + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
    C: Fn(&T) -> bool + Unpin,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        this.scheduler.as_mut().poll_with(cx, &this.can_take_message)
    }
}

/// See [`Scheduler::hold`].
pub struct Hold<'a, T, R> {
    scheduler: Pin<&'a mut Scheduler<T, R>>,
}

impl<T, R> Stream for Hold<'_, T, R>
where
    T: Ord + Clone,
    R: Stream<Item = ScheduleRequest<T>>,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // Every due message becomes pending; the timer wakes the task when the next falls due.
        match self.get_mut().scheduler.as_mut().poll_with(cx, &|_| false) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(_)) => unreachable!("hold takes no message"),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Delay and deduplicate `requests`, as kube-runtime's `scheduler()`: each message is yielded
/// once, at the earliest `run_at` requested for it. Ends as soon as `requests` does.
pub fn scheduler<T: Ord + Clone, S: Stream<Item = ScheduleRequest<T>>>(requests: S) -> Scheduler<T, S> {
    Scheduler::new(requests, Duration::ZERO)
}

/// As [`scheduler`], with each request delayed by `debounce`, as kube-runtime's
/// `debounced_scheduler`: a message is yielded once no request for it came for `debounce`.
pub fn debounced_scheduler<T: Ord + Clone, S: Stream<Item = ScheduleRequest<T>>>(
    requests: S,
    debounce: Duration,
) -> Scheduler<T, S> {
    Scheduler::new(requests, debounce)
}
