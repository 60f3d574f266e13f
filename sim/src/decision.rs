//! The decision source: every choice the engine makes beyond madsim's task order.
//!
//! One seed gives one [`DecisionSource`]; it splits into named [`Stream`]s (ChaCha8 each, keyed
//! by the seed and the stream's name) so that adding draws to one concern (say, watch latency)
//! does not shift the choices of another (say, fault triggers).
//!
//! Stream derivation is portable: every stream starts from `ChaCha8Rng::seed_from_u64(seed)`
//! (rand_core's documented, platform-independent seed expansion) and then selects the ChaCha
//! stream (the 64-bit nonce) given by the FNV-1a hash of the stream's name. Nothing depends on
//! the Rust version, the platform's endianness or std's hasher keys.
//!
//! A source can record the choices it makes ([`DecisionSource::recording`]) and a recorded
//! [`Choices`] replays exactly ([`DecisionSource::replaying`]). A replay that asks for a
//! different choice than was recorded (another stream, a value out of range, more draws than
//! recorded) is a divergence: the source keeps the first one as a [`DecisionError`], which the
//! engine turns into a nondeterminism verdict, and carries on with the seeded stream.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// The version of the [`Choices`] encoding, stored in each recording.
pub const CHOICES_FORMAT: u32 = 1;

/// Rejection rounds that [`Stream::below`] allows before declaring the generator broken. Each
/// round rejects with probability below 1/2, so 64 rejections in a row mean a broken generator.
const BELOW_REJECTIONS_MAX: u32 = 64;

/// Why a replayed run asked for a choice that the recording does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The run drew from another stream than the recording did at this point: the code or the
    /// scenario changed, or the run is not deterministic.
    #[error("choice {index}: drawn from stream \"{found}\", but the recording has stream \"{expected}\"")]
    StreamMismatch {
        /// The position of the choice in the recording.
        index: usize,
        /// The stream the recording holds.
        expected: String,
        /// The stream the run drew from.
        found: String,
    },
    /// The recorded value does not fit the draw the run asked for (say, `below(3)` replaying 7).
    #[error("choice {index} on stream \"{stream}\": recorded value {value} does not fit {wanted}")]
    OutOfRange {
        /// The position of the choice in the recording.
        index: usize,
        /// The stream.
        stream: String,
        /// The recorded value.
        value: u64,
        /// The draw the run asked for, e.g. `below(3)`.
        wanted: String,
    },
    /// The run drew more choices than were recorded.
    #[error("choice {index} on stream \"{stream}\": the recording holds only {index} choices")]
    Exhausted {
        /// The position of the choice (the recording's length).
        index: usize,
        /// The stream the run drew from.
        stream: String,
    },
    /// The run ended without drawing every recorded choice.
    #[error("the run drew {consumed} of {recorded} recorded choices")]
    Unconsumed {
        /// Choices drawn.
        consumed: usize,
        /// Choices recorded.
        recorded: usize,
    },
    /// The recording was made with another seed than the run replaying it: madsim's task order
    /// comes from the seed, so the choices cannot mean the same run.
    #[error("the recording was made with seed {recorded}, but the run has seed {run}")]
    SeedMismatch {
        /// The recording's seed.
        recorded: u64,
        /// The run's seed.
        run: u64,
    },
}

impl DecisionError {
    /// The first divergent choice as (stream, index), when the divergence is at one choice
    /// (`Unconsumed` and `SeedMismatch` are not).
    pub fn choice(&self) -> Option<(&str, usize)> {
        match self {
            DecisionError::StreamMismatch { index, found, .. } => Some((found, *index)),
            DecisionError::OutOfRange { index, stream, .. } | DecisionError::Exhausted { index, stream } => {
                Some((stream, *index))
            }
            DecisionError::Unconsumed { .. } | DecisionError::SeedMismatch { .. } => None,
        }
    }
}

/// What a run does with its choices: draw them from the seed (the default), also record them,
/// or replay a recording (see [`crate::SimBuilder::record_choices`] and
/// [`crate::SimBuilder::replay_choices`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ChoiceMode {
    /// Draw from the seed; record nothing (no cost).
    #[default]
    Off,
    /// Draw from the seed and record every choice.
    Record,
    /// Replay these choices; the first divergence is kept.
    Replay(Arc<Choices>),
}

impl ChoiceMode {
    /// The decision source of a run of `seed` in this mode. Replaying a recording of another
    /// seed starts diverged ([`DecisionError::SeedMismatch`]) and draws from `seed`.
    pub fn source(&self, seed: u64) -> DecisionSource {
        match self {
            ChoiceMode::Off => DecisionSource::new(seed),
            ChoiceMode::Record => DecisionSource::recording(seed),
            ChoiceMode::Replay(choices) if choices.seed != seed => {
                let source = DecisionSource::replaying(Choices { seed, ..(**choices).clone() });
                if let Some(log) = &source.log {
                    let mut log = log.lock().unwrap_or_else(|poison| poison.into_inner());
                    if let Log::Replaying { divergence, .. } = &mut *log {
                        *divergence = Some(DecisionError::SeedMismatch { recorded: choices.seed, run: seed });
                    }
                }
                source
            }
            ChoiceMode::Replay(choices) => DecisionSource::replaying((**choices).clone()),
        }
    }
}

/// One recorded choice: the stream it came from and the value the draw returned (the result of
/// `below`/`duration_ms` in its unit, 0 or 1 for `chance`, the raw bits for `next_u64`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The stream's name.
    pub stream: String,
    /// The value returned.
    pub value: u64,
}

/// A recorded sequence of choices, in the order the run made them, across all streams.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choices {
    /// The encoding version ([`CHOICES_FORMAT`]).
    pub format: u32,
    /// The seed of the recorded run (the replay falls back to it after a divergence).
    pub seed: u64,
    /// The choices, in order.
    pub choices: Vec<Choice>,
}

/// The shared log of a recording or replaying source, in draw order across all streams.
#[derive(Debug)]
enum Log {
    Recording(Vec<Choice>),
    Replaying { choices: Vec<Choice>, next: usize, divergence: Option<DecisionError> },
}

/// Seeded, named streams of choices.
#[derive(Debug)]
pub struct DecisionSource {
    seed: u64,
    // A BTreeMap rather than a hash map: the set of streams is small and never iterated in a way
    // that matters, but the workspace bans hash maps outright.
    streams: BTreeMap<&'static str, Stream>,
    // Present only when recording or replaying, so that plain runs pay nothing for it. A mutex
    // rather than a RefCell because the source is shared with madsim tasks, which must be Send.
    log: Option<Arc<Mutex<Log>>>,
}

impl DecisionSource {
    /// The source for `seed`.
    pub fn new(seed: u64) -> Self {
        DecisionSource { seed, streams: BTreeMap::new(), log: None }
    }

    /// The source for `seed`, recording every choice it makes (see [`DecisionSource::choices`]).
    pub fn recording(seed: u64) -> Self {
        DecisionSource {
            seed,
            streams: BTreeMap::new(),
            log: Some(Arc::new(Mutex::new(Log::Recording(Vec::new())))),
        }
    }

    /// A source that returns the recorded `choices`, in order, and records the first divergence
    /// (see [`DecisionSource::divergence`]).
    pub fn replaying(choices: Choices) -> Self {
        DecisionSource {
            seed: choices.seed,
            streams: BTreeMap::new(),
            log: Some(Arc::new(Mutex::new(Log::Replaying {
                choices: choices.choices,
                next: 0,
                divergence: None,
            }))),
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream called `name` (created on first use, deterministically from seed and name).
    pub fn stream(&mut self, name: &'static str) -> &mut Stream {
        let (seed, log) = (self.seed, &self.log);
        self.streams.entry(name).or_insert_with(|| Stream::new(seed, name, log.clone()))
    }

    /// The choices recorded so far, if this source records.
    pub fn choices(&self) -> Option<Choices> {
        let log = self.log.as_ref()?.lock().unwrap_or_else(|poison| poison.into_inner());
        match &*log {
            Log::Recording(choices) => {
                Some(Choices { format: CHOICES_FORMAT, seed: self.seed, choices: choices.clone() })
            }
            Log::Replaying { .. } => None,
        }
    }

    /// The first divergence of a replay from its recording, if any.
    pub fn divergence(&self) -> Option<DecisionError> {
        let log = self.log.as_ref()?.lock().unwrap_or_else(|poison| poison.into_inner());
        match &*log {
            Log::Replaying { divergence, .. } => divergence.clone(),
            Log::Recording(_) => None,
        }
    }

    /// Whether a replay followed its recording exactly: no divergence and every choice drawn.
    /// Sources that do not replay always succeed.
    pub fn finish_replay(&self) -> Result<(), DecisionError> {
        let Some(log) = &self.log else { return Ok(()) };
        let log = log.lock().unwrap_or_else(|poison| poison.into_inner());
        match &*log {
            Log::Replaying { divergence: Some(error), .. } => Err(error.clone()),
            Log::Replaying { choices, next, .. } if *next != choices.len() => {
                Err(DecisionError::Unconsumed { consumed: *next, recorded: choices.len() })
            }
            _ => Ok(()),
        }
    }
}

/// One named stream of choices.
#[derive(Debug)]
pub struct Stream {
    name: &'static str,
    rng: ChaCha8Rng,
    log: Option<Arc<Mutex<Log>>>,
}

/// The FNV-1a hash of `bytes`: a fixed, portable function, so that a stream's identity never
/// depends on the toolchain (std's hashers make no such promise).
// `pub` (hidden from the docs) for its tests in tests/it/decision.rs only.
#[doc(hidden)]
pub const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

impl Stream {
    fn new(seed: u64, name: &'static str, log: Option<Arc<Mutex<Log>>>) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(fnv1a(name.as_bytes()));
        Stream { name, rng, log }
    }

    /// The stream's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let fresh = self.rng.next_u64();
        self.choose(fresh, |_| true, || "next_u64()".to_owned())
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Stream::below(0) on stream \"{}\": the range is empty", self.name);
        let fresh = self.below_fresh(n);
        self.choose(fresh, |v| v < n, || format!("below({n})"))
    }

    /// True with probability `p` (0.0..=1.0; NaN counts as 0). Always draws once, whatever `p`,
    /// so that changing a probability does not shift later choices of the stream.
    pub fn chance(&mut self, p: f64) -> bool {
        // 53 random bits make a uniform float in [0, 1) exactly.
        let unit = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let fresh = u64::from(unit < p);
        self.choose(fresh, |v| v <= 1, || format!("chance({p})")) == 1
    }

    /// A duration uniform in `[lo_ms, hi_ms]` milliseconds (both ends included; `lo_ms <= hi_ms`).
    pub fn duration_ms(&mut self, lo_ms: u64, hi_ms: u64) -> Duration {
        assert!(lo_ms <= hi_ms, "Stream::duration_ms({lo_ms}, {hi_ms}) on stream \"{}\"", self.name);
        let fresh = match (hi_ms - lo_ms).checked_add(1) {
            Some(width) => lo_ms + self.below_fresh(width),
            None => self.rng.next_u64(),
        };
        let ms =
            self.choose(fresh, |v| (lo_ms..=hi_ms).contains(&v), || format!("duration_ms({lo_ms}, {hi_ms})"));
        Duration::from_millis(ms)
    }

    /// Lemire's nearly-divisionless unbiased bounded draw from the generator itself.
    fn below_fresh(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        for _ in 0..BELOW_REJECTIONS_MAX {
            let product = u128::from(self.rng.next_u64()) * u128::from(n);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
        panic!("stream \"{}\": {BELOW_REJECTIONS_MAX} rejections in a row for below({n})", self.name)
    }

    /// The value a draw returns: `fresh` (from the generator), recorded if recording, or the
    /// recorded value if replaying and it fits (`fits`), else `fresh` with the divergence kept.
    fn choose(&mut self, fresh: u64, fits: impl Fn(u64) -> bool, wanted: impl Fn() -> String) -> u64 {
        let Some(log) = &self.log else { return fresh };
        let mut log = log.lock().unwrap_or_else(|poison| poison.into_inner());
        match &mut *log {
            Log::Recording(choices) => {
                choices.push(Choice { stream: self.name.to_owned(), value: fresh });
                fresh
            }
            Log::Replaying { choices, next, divergence } => {
                if divergence.is_some() {
                    return fresh;
                }
                let index = *next;
                let Some(choice) = choices.get(index) else {
                    *divergence = Some(DecisionError::Exhausted { index, stream: self.name.to_owned() });
                    return fresh;
                };
                if choice.stream != self.name {
                    *divergence = Some(DecisionError::StreamMismatch {
                        index,
                        expected: choice.stream.clone(),
                        found: self.name.to_owned(),
                    });
                    return fresh;
                }
                if !fits(choice.value) {
                    *divergence = Some(DecisionError::OutOfRange {
                        index,
                        stream: self.name.to_owned(),
                        value: choice.value,
                        wanted: wanted(),
                    });
                    return fresh;
                }
                *next += 1;
                choice.value
            }
        }
    }
}

/// Uids and generated names drawn from a decision stream (the model server's id source).
pub(crate) struct StreamIds<'a>(pub(crate) &'a mut Stream);

impl model_apiserver::IdSource for StreamIds<'_> {
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}
