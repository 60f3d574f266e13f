//! Failures as exploration keeps them: deduplicated as they arrive, by what the failure is
//! (scenario, verdict kind, property and message shape), one representative each.

use std::collections::BTreeMap;

use crate::faults::FaultPlan;
use crate::regression::RecordedViolation;
use crate::verdict::Verdict;

use super::replay;

/// Distinct failures kept (one failing run each); failures of further shapes are only counted,
/// so a scenario that fails in endless ways still explores in flat memory.
pub const DISTINCT_FAILURES_KEPT_MAX: usize = 10_000;

/// One failing run, as kept for deduplication (exploration runs keep no trace).
#[derive(Clone, Debug)]
pub struct Failure {
    /// The scenario's index in the exploration.
    pub scenario: usize,
    /// The run's seed.
    pub seed: u64,
    /// Which run of the scenario's planned runs (0 where seeds differ, as in random mode).
    pub run: u64,
    /// How it failed.
    pub verdict: Verdict,
    /// The fault plan the run had (drawn or given).
    pub plan: FaultPlan,
}

impl Failure {
    /// The order that picks a key's representative: the same whatever order the runs finished in.
    fn order(&self) -> (usize, u64, u64) {
        (self.scenario, self.seed, self.run)
    }

    /// The violation this failure records.
    pub fn violation(&self) -> RecordedViolation {
        violation_of(&self.verdict)
    }
}

/// The deduplication key: scenario, verdict kind, property and message shape.
pub type Key = (usize, &'static str, String, String);

/// The deduplication key of a failure. A property that found several violations reports the
/// first with a tally (`... (and 2 more violations)`, as `properties::summarize` writes it); the
/// tally is left out, so one bug that leaves one or two extra objects is one failure.
pub fn key(failure: &Failure) -> Key {
    let violation = failure.violation();
    let message = without_tally(&violation.message);
    (failure.scenario, failure.verdict.kind(), violation.property, message_shape(message))
}

/// `message` without a trailing ` (and N more violation[s])`.
// `pub` (hidden from the docs) for its test in tests/it/explore/findings.rs only.
#[doc(hidden)]
pub fn without_tally(message: &str) -> &str {
    let Some(head) =
        message.strip_suffix(" more violations)").or_else(|| message.strip_suffix(" more violation)"))
    else {
        return message;
    };
    match head.rsplit_once(" (and ") {
        Some((first, count)) if !count.is_empty() && count.chars().all(|c| c.is_ascii_digit()) => first,
        _ => message,
    }
}

/// The violation a verdict records (a pass, which exploration never keeps, records nothing).
fn violation_of(verdict: &Verdict) -> RecordedViolation {
    replay::recorded_violation(verdict).unwrap_or_else(|| RecordedViolation {
        kind: verdict.kind().to_owned(),
        property: String::new(),
        message: String::new(),
    })
}

/// Failures deduplicated as they arrive: per key, the failure that comes first in
/// (scenario, seed, run) order and how many runs shared the key.
#[derive(Default)]
pub struct Findings {
    groups: BTreeMap<Key, (Failure, u64)>,
}

impl Findings {
    /// Count `failure` under its key, keeping it if it comes first.
    pub fn add(&mut self, failure: Failure) {
        let key = key(&failure);
        if let Some((kept, count)) = self.groups.get_mut(&key) {
            *count += 1;
            if failure.order() < kept.order() {
                *kept = failure;
            }
        } else if self.groups.len() < DISTINCT_FAILURES_KEPT_MAX {
            self.groups.insert(key, (failure, 1));
        }
    }

    /// One failure per key with its count, in the order of their representatives.
    pub fn into_groups(self) -> Vec<(Failure, u64)> {
        let mut groups: Vec<(Failure, u64)> = self.groups.into_values().collect();
        groups.sort_by_key(|(failure, _)| failure.order());
        groups
    }
}

/// The characters Kubernetes draws generated name suffixes and hash suffixes from
/// (`k8s.io/apimachinery/pkg/util/rand`: no vowels, no 0, 1 or 3, so no words and no look-alikes).
const GENERATED_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Whether `word`, which follows a `-`, is a suffix Kubernetes generated: a generateName suffix
/// (5 characters) or a hash suffix (a ReplicaSet's pod-template-hash, a ControllerRevision's:
/// 6 to 10), drawn from [`GENERATED_ALPHABET`].
fn is_generated_suffix(word: &str) -> bool {
    let from_alphabet = word.chars().all(|c| GENERATED_ALPHABET.contains(c));
    let len = word.chars().count();
    from_alphabet && (len == 5 || ((6..=10).contains(&len) && word.chars().any(|c| c.is_ascii_digit())))
}

/// The shape of a failure message, what deduplication compares: every generated name suffix
/// (`backup-x7k2p`) and hash suffix (`web-5d4f8b9c7d`) becomes `*`, and every number, uid and
/// hex digest `#`, so that the same bug with other generated names, counts or digests is one
/// failure.
pub fn message_shape(message: &str) -> String {
    let mut shape = String::with_capacity(message.len());
    let mut word = String::new();
    // The character before the current word (a generated suffix follows a `-`).
    let mut before = ' ';
    let flush = |word: &mut String, shape: &mut String, before: char| {
        if word.is_empty() {
            return;
        }
        let all_hex = word.chars().all(|c| c.is_ascii_hexdigit());
        if before == '-' && is_generated_suffix(word) {
            shape.push('*');
        } else if all_hex && word.chars().any(|c| c.is_ascii_digit()) {
            shape.push('#');
        } else {
            let mut in_digits = false;
            for c in word.chars() {
                if c.is_ascii_digit() {
                    if !in_digits {
                        shape.push('#');
                    }
                    in_digits = true;
                } else {
                    shape.push(c);
                    in_digits = false;
                }
            }
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut shape, before);
            shape.push(c);
            before = c;
        }
    }
    flush(&mut word, &mut shape, before);
    shape
}
