//! The inputs from outside the state machine: virtual time and deterministic entropy.

/// A deterministic source of entropy for uids and generated names.
///
/// The simulator implements this on its seeded decision source; tests use [`SeqIds`].
pub trait IdSource {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// A counter-based [`IdSource`]: deterministic, for tests and examples.
#[derive(Debug, Default, Clone)]
pub struct SeqIds {
    next: u64,
}

impl IdSource for SeqIds {
    fn next_u64(&mut self) -> u64 {
        // splitmix64: cheap and well-spread, so generated names look random but are reproducible.
        self.next = self.next.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.next;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// What one request may use from the outside world.
pub struct Context<'a> {
    /// The current (virtual) time: creationTimestamp, deletionTimestamp and managedFields use it.
    pub now: jiff::Timestamp,
    /// Entropy for uids and `generateName` suffixes.
    pub ids: &'a mut dyn IdSource,
    /// The warnings the request earned (an unknown field dropped under `fieldValidation=Warn`,
    /// for example), in order: the HTTP front sends each as a `Warning: 299 - "..."` header, as
    /// kube-apiserver does. The caller clears them between requests ([`Context::take_warnings`]).
    pub warnings: Vec<String>,
}

impl<'a> Context<'a> {
    /// A context at `now` drawing ids from `ids`.
    pub fn new(now: jiff::Timestamp, ids: &'a mut dyn IdSource) -> Self {
        Context { now, ids, warnings: Vec::new() }
    }
    /// The warnings collected since the last call, leaving none.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}
