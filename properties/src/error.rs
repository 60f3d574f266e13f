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
    /// A count mask target is not `*`, a resource, or `resource namespace/name`. Returned by
    /// [`crate::Mask::user_counts`].
    #[error("invalid count mask target {target:?}: {reason}")]
    InvalidCountTarget {
        /// The target as given.
        target: String,
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
    /// A fault-free reference run's history was compacted before the engine counted its
    /// creations and deletions (a `history_revisions_max` shorter than one write's events), so
    /// its per-object counts are incomplete. Returned by [`crate::hooks::Reference::compute`].
    #[error(
        "the fault-free reference run with seed {seed} lost {missed} of its revisions of cluster {cluster} to compaction before counting them; raise ServerConfig::history_revisions_max"
    )]
    ReferenceCounts {
        /// The reference run's seed.
        seed: u64,
        /// The cluster whose counts are incomplete.
        cluster: String,
        /// How many revisions were not counted.
        missed: u64,
    },
}
