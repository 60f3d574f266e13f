//! The decision source: every choice the engine makes beyond madsim's task order.
//!
//! One seed gives one [`DecisionSource`]; it splits into named [`Stream`]s (ChaCha8 each, keyed
//! by the seed and the stream's name) so that adding draws to one concern (say, watch latency)
//! does not shift the choices of another (say, fault triggers).
//!
//! INTERFACE STUB: filled by the sim-infrastructure work. Signatures are the contract.

use std::time::Duration;

/// Seeded, named streams of choices.
#[derive(Debug)]
pub struct DecisionSource {
    seed: u64,
}

impl DecisionSource {
    /// The source for `seed`.
    pub fn new(seed: u64) -> Self {
        DecisionSource { seed }
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The stream called `name` (created on first use, deterministically from seed and name).
    pub fn stream(&mut self, _name: &'static str) -> &mut Stream {
        todo!("sim infrastructure")
    }
}

/// One named stream of choices.
#[derive(Debug)]
pub struct Stream {
    _todo: (),
}

impl Stream {
    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        todo!("sim infrastructure")
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, _n: u64) -> u64 {
        todo!("sim infrastructure")
    }
    /// True with probability `p` (0.0..=1.0).
    pub fn chance(&mut self, _p: f64) -> bool {
        todo!("sim infrastructure")
    }
    /// A duration uniform in `[lo_ms, hi_ms]` milliseconds.
    pub fn duration_ms(&mut self, _lo_ms: u64, _hi_ms: u64) -> Duration {
        todo!("sim infrastructure")
    }
}
