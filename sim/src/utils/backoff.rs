//! Backoff policies and the stream that applies them, as kube-runtime's `utils::{Backoff,
//! ResetTimerBackoff, StreamBackoff}` and `watcher::{DefaultBackoff, ExponentialBackoff}`.
//!
//! Every sleep is madsim's virtual time, and the jitter is a draw of the run's decision source
//! (stream [`JITTER_STREAM`]), so a backoff replays exactly with its seed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, TryStream};
use pin_project_lite::pin_project;

/// The decision stream the backoff jitter draws from (its own, so that a controller's other
/// draws do not shift when a backoff draws more or less).
pub const JITTER_STREAM: &str = "kube-runtime.backoff";

/// A backoff policy, as kube-runtime's `utils::Backoff`: the delays to wait after successive
/// errors (`None`: give up), and a reset after a success.
pub trait Backoff: Iterator<Item = Duration> + Send + Sync + Unpin {
    /// Start over from the first delay.
    fn reset(&mut self);
}

impl<B: Backoff + ?Sized> Backoff for Box<B> {
    fn reset(&mut self) {
        (**self).reset();
    }
}

/// An exponential backoff: `min_delay`, multiplied by `factor` after each error up to
/// `max_delay`, plus (with jitter) a uniform draw of up to the delay itself, as `backon`'s
/// exponential builder that kube-runtime uses.
#[derive(Clone, Debug)]
pub struct ExponentialBackoff {
    min_delay: Duration,
    max_delay: Duration,
    factor: f32,
    jitter: bool,
    /// The next delay before jitter; `None` before the first error.
    current: Option<Duration>,
}

impl ExponentialBackoff {
    /// A backoff from `min_delay` to `max_delay`, growing by `factor`, with or without jitter.
    pub fn new(min_delay: Duration, max_delay: Duration, factor: f32, enable_jitter: bool) -> Self {
        ExponentialBackoff { min_delay, max_delay, factor, jitter: enable_jitter, current: None }
    }
}

impl Iterator for ExponentialBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = match self.current {
            None => self.min_delay,
            Some(previous) => previous.mul_f32(self.factor).min(self.max_delay),
        };
        self.current = Some(delay);
        if !self.jitter {
            return Some(delay);
        }
        let extra = crate::random::in_stream(JITTER_STREAM).duration_between(Duration::ZERO, delay);
        Some(delay + extra)
    }
}

impl Backoff for ExponentialBackoff {
    fn reset(&mut self) {
        self.current = None;
    }
}

/// Resets the inner backoff when no error came for `reset_duration` (virtual time), as
/// kube-runtime's `ResetTimerBackoff`.
#[derive(Clone, Debug)]
pub struct ResetTimerBackoff<B: Backoff> {
    backoff: B,
    last_backoff: Option<Instant>,
    reset_duration: Duration,
}

impl<B: Backoff> ResetTimerBackoff<B> {
    /// Wrap `backoff`, resetting it after `reset_duration` without errors.
    pub fn new(backoff: B, reset_duration: Duration) -> Self {
        ResetTimerBackoff { backoff, last_backoff: None, reset_duration }
    }
}

impl<B: Backoff> Iterator for ResetTimerBackoff<B> {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        // Inside a run `Instant::now()` is madsim's virtual clock.
        let now = Instant::now();
        if self.last_backoff.is_some_and(|last| now > last + self.reset_duration) {
            self.backoff.reset();
        }
        self.last_backoff = Some(now);
        self.backoff.next()
    }
}

impl<B: Backoff> Backoff for ResetTimerBackoff<B> {
    fn reset(&mut self) {
        self.backoff.reset();
    }
}

/// kube-runtime's default watcher backoff (client-go's reflector parameters): 800 ms doubling
/// to 30 s with jitter, reset after 120 s without errors.
#[derive(Clone, Debug)]
pub struct DefaultBackoff(ResetTimerBackoff<ExponentialBackoff>);

impl Default for DefaultBackoff {
    fn default() -> Self {
        let exponential =
            ExponentialBackoff::new(Duration::from_millis(800), Duration::from_secs(30), 2.0, true);
        DefaultBackoff(ResetTimerBackoff::new(exponential, Duration::from_secs(120)))
    }
}

impl Iterator for DefaultBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.0.next()
    }
}

impl Backoff for DefaultBackoff {
    fn reset(&mut self) {
        self.0.reset();
    }
}

pin_project! {
    /// Applies a [`Backoff`] to a stream, as kube-runtime's `StreamBackoff`: after an `Err` item
    /// the inner stream is not polled until the backoff's delay has passed (virtual time); an `Ok`
    /// item resets the backoff; a backoff that gives up ends the stream.
    #[must_use = "streams do nothing unless polled"]
    pub struct StreamBackoff<S, B> {
        #[pin]
        stream: S,
        backoff: B,
        sleep: Option<madsim::time::Sleep>,
        given_up: bool,
    }
}

impl<S: TryStream, B: Backoff> StreamBackoff<S, B> {
    /// Apply `backoff` to `stream`.
    pub fn new(stream: S, backoff: B) -> Self {
        StreamBackoff { stream, backoff, sleep: None, given_up: false }
    }
}

impl<S: TryStream, B: Backoff> Stream for StreamBackoff<S, B> {
    type Item = Result<S::Ok, S::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        if *this.given_up {
            return Poll::Ready(None);
        }
        if let Some(sleep) = this.sleep.as_mut() {
            futures::ready!(Pin::new(sleep).poll(cx));
            *this.sleep = None;
        }
        let item = futures::ready!(this.stream.try_poll_next(cx));
        match &item {
            Some(Err(_)) => match this.backoff.next() {
                Some(delay) => *this.sleep = Some(madsim::time::sleep(delay)),
                None => *this.given_up = true,
            },
            Some(Ok(_)) => this.backoff.reset(),
            None => {}
        }
        Poll::Ready(item)
    }
}
