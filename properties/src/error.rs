//! The crate's operational errors: mistakes in what a user hands to the checkers.

/// What can go wrong when setting up a check (never while checking: bad state is a
/// [`crate::Violation`], not an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A mask path is neither a JSON pointer (`/status/lastSeen`) nor a dotted path
    /// (`.status.lastSeen`), or it is malformed. Returned by [`crate::PathPattern::parse`] and
    /// [`crate::Mask::user`].
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A fault-free reference run did not pass, so there is no end state to compare against.
    /// Returned by [`crate::hooks::Reference::compute`].
    #[error("the fault-free reference run with seed {seed} did not pass: {verdict}")]
    ReferenceRun {
        /// The reference run's seed.
        seed: u64,
        /// Its verdict, as displayed.
        verdict: String,
    },
}
