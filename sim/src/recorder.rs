//! The recorder: the run's clock, its trace and its counters.
//!
//! A component of the [world](crate::world): it owns its state and knows nothing of the world.
//! Time is madsim's virtual time, read through `std::time::Instant` (madsim answers it), so the
//! same seed reads the same times.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::trace::{EventRef, Trace, TraceEvent};
use crate::verdict::RunStats;

/// The clock a run reads: madsim's, held once the code is inside its runtime, so that reading it
/// answers what `Instant::now()` answers there (madsim's `clock_gettime` reads the same clock)
/// without that path's thread-local lookup and two reference-count round trips on every read.
/// Outside madsim (a live run) it is the real clock.
#[derive(Clone)]
pub(crate) struct RunClock(Option<madsim::time::TimeHandle>);

impl RunClock {
    /// The clock of the runtime the caller is in, if any.
    pub(crate) fn current() -> Self {
        RunClock(madsim::time::TimeHandle::try_current())
    }

    /// The clock's reading now.
    pub(crate) fn now(&self) -> Instant {
        match &self.0 {
            Some(clock) => clock.now_instant(),
            None => Instant::now(),
        }
    }

    /// madsim's own elapsed time since its runtime began (`None` outside madsim): differences of
    /// it are differences of [`RunClock::now`] without the two `Instant` conversions.
    fn advance(&self) -> Option<Duration> {
        self.0.as_ref().map(madsim::time::TimeHandle::elapsed)
    }
}

/// The run's clock, trace and counters.
pub(crate) struct Recorder {
    trace: Trace,
    /// The run's counters (API calls, deliveries, reconciles, virtual time).
    pub(crate) stats: RunStats,
    /// The number of the last API call.
    next_call: u64,
    start: Instant,
    /// [`RunClock::advance`] at `start`: inside a run, the elapsed time is the advance now minus
    /// this, the same duration as `now() - start` without the two `Instant` conversions (about
    /// 2 % of a small seed's instructions, read on every trace entry and call).
    start_advance: Duration,
    clock: RunClock,
    /// The latest virtual time the engine saw (for reports of runs that ended in a panic).
    last_seen: Duration,
    /// Virtual time when the main task ended.
    end_elapsed: Option<Duration>,
    /// The wall clock at the start of the run.
    epoch: jiff::Timestamp,
}

impl Recorder {
    /// A recorder whose wall clock starts at `epoch`; `keep_trace` keeps every entry (otherwise
    /// only the digest).
    pub(crate) fn new(keep_trace: bool, epoch: jiff::Timestamp) -> Self {
        let mut recorder = Recorder {
            trace: Trace::new(keep_trace),
            stats: RunStats::default(),
            next_call: 0,
            start: Instant::now(),
            start_advance: Duration::ZERO,
            clock: RunClock(None),
            last_seen: Duration::ZERO,
            end_elapsed: None,
            epoch,
        };
        recorder.restart_clock();
        recorder
    }

    /// Start the clock now (the run's main task began).
    pub(crate) fn restart_clock(&mut self) {
        self.clock = RunClock::current();
        self.start = self.clock.now();
        self.start_advance = self.clock.advance().unwrap_or_default();
    }

    /// The instant the run started, on madsim's clock.
    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// Set the wall clock at the start of the run (a live run reads the real clock).
    pub(crate) fn set_epoch(&mut self, epoch: jiff::Timestamp) {
        self.epoch = epoch;
    }

    /// The wall clock at the start of the run.
    pub(crate) fn epoch(&self) -> jiff::Timestamp {
        self.epoch
    }

    /// Virtual time since the start of the run.
    pub(crate) fn elapsed(&mut self) -> Duration {
        let elapsed = match self.clock.advance() {
            Some(advance) => advance.saturating_sub(self.start_advance),
            None => self.clock.now().saturating_duration_since(self.start),
        };
        self.last_seen = self.last_seen.max(elapsed);
        elapsed
    }

    /// The virtual wall clock: the epoch plus the virtual time elapsed.
    pub(crate) fn now(&mut self) -> jiff::Timestamp {
        let elapsed = self.elapsed();
        wall_clock(self.epoch, elapsed)
    }

    /// Append to the trace at the current virtual time.
    pub(crate) fn trace(&mut self, node: &Arc<str>, event: TraceEvent) {
        let at = u64::try_from(self.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.trace.push(at, node, event);
    }

    /// [`Recorder::trace`] of a borrowed event (see [`EventRef`]).
    pub(crate) fn trace_ref(&mut self, node: &Arc<str>, event: EventRef<'_>) {
        let at = u64::try_from(self.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.trace.push_ref(at, node, event);
    }

    /// The trace, to append at a time the caller read (see [`Recorder::elapsed`]).
    pub(crate) fn trace_mut(&mut self) -> &mut Trace {
        &mut self.trace
    }

    /// Number the next API call.
    pub(crate) fn next_call(&mut self) -> u64 {
        self.next_call += 1;
        self.next_call
    }

    /// The main task ended now.
    pub(crate) fn end(&mut self) {
        self.end_elapsed = Some(self.elapsed());
    }

    /// Close the run: its trace and counters, with the virtual time it took (up to the main
    /// task's end, or the last time seen if it ended in a panic).
    pub(crate) fn finish(&mut self) -> (Trace, RunStats) {
        let virtual_time = self.end_elapsed.unwrap_or(self.last_seen);
        self.stats.virtual_millis = u64::try_from(virtual_time.as_millis()).unwrap_or(u64::MAX);
        (std::mem::take(&mut self.trace), self.stats.clone())
    }
}

/// The wall clock `elapsed` after `epoch`.
pub(crate) fn wall_clock(epoch: jiff::Timestamp, elapsed: Duration) -> jiff::Timestamp {
    let span = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
    epoch.checked_add(span).unwrap_or(jiff::Timestamp::MAX)
}
