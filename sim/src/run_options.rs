//! The options of one run that belong to whoever runs it (a sweep, a replay, a test), not to the
//! world's declaration: [`RunOptions`], passed to [`crate::SimBuilder::run_with`].
//!
//! A sweep's closure receives the options of each seed's run and hands them on, so that the
//! determinism self-check can record the first run's choices and replay them in the second, and a
//! `SIM_SEED` run keeps its whole trace:
//!
//! ```no_run
//! # let world = sim::Sim::builder();
//! let config = sim::SweepConfig::new("my-operator").seeds(500);
//! sim::sweep(&config, |seed, options| world.run_with(seed, options)).assert_all_passed();
//! ```

use crate::decision::ChoiceMode;

/// Per-run options, as values: what [`crate::sweep`] asks of one seed's run. The default is a
/// plain run: the builder's own trace and choice settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// Keep every trace entry in the report and let controller panics print, whatever
    /// [`crate::SimBuilder::keep_trace`] says (a sweep sets it for the one seed `SIM_SEED` asks
    /// for).
    pub keep_trace: bool,
    /// Record or replay the run's choices in place of the builder's own choice mode
    /// ([`crate::SimBuilder::record_choices`], [`crate::SimBuilder::replay_choices`]); `None`
    /// keeps the builder's. The determinism self-check records the first run and replays the
    /// recording in the second.
    pub choices: Option<ChoiceMode>,
}

impl RunOptions {
    /// Options that keep the whole trace (see [`RunOptions::keep_trace`]).
    pub fn keeping_trace(mut self, keep: bool) -> Self {
        self.keep_trace = keep;
        self
    }

    /// Options that record or replay the run's choices (see [`RunOptions::choices`]).
    pub fn with_choices(mut self, choices: ChoiceMode) -> Self {
        self.choices = Some(choices);
        self
    }
}
