//! Eventually-stable reconciliation (Anvil's ESR) over a finite run: once the desired state
//! stops changing, the current state comes to satisfy the user's predicate and keeps satisfying
//! it for a window.

use model_apiserver::Snapshot;

use crate::violation::Violation;

/// One observation of the state during a run.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The step (write count) the sample was taken at.
    pub step: u64,
    /// The virtual time of the sample, in milliseconds since the run started.
    pub at_millis: u64,
    /// The stored state.
    pub snapshot: Snapshot,
}

/// `eventually_stable`, reported under `property`.
///
/// `samples` are in time order. `desired` extracts the desired state (typically the specs the
/// user wrote) as a comparable value; `satisfied` says whether the current state matches it.
/// Anvil's ESR says that in every run where the desired state eventually stops changing, the
/// current state eventually satisfies the predicate forever. A run is finite, so "forever" is
/// read as "for `window_millis`": the property holds when, after the last change of the desired
/// state, there is a sample from which `satisfied` holds at every later sample and the last
/// sample is at least `window_millis` after it.
///
/// It fails when there are no samples, when the predicate is false at the last sample, or when
/// it has held for less than the window (it flapped after the desired state settled, it settled
/// too late, or the run ended too early to tell).
pub fn eventually_stable<D: PartialEq>(
    property: &str,
    samples: &[Sample],
    desired: impl Fn(&Snapshot) -> D,
    satisfied: impl Fn(&Snapshot) -> bool,
    window_millis: u64,
) -> Option<Violation> {
    let Some(last) = samples.last() else {
        return Some(Violation::new(
            property,
            "no samples: expected at least one state to judge, found none",
        ));
    };
    // The start of the final run of samples with one desired state.
    let desired_last = desired(&last.snapshot);
    let settled = samples.iter().rposition(|s| desired(&s.snapshot) != desired_last).map_or(0, |i| i + 1);
    let settled_at = &samples[settled];
    let since =
        format!("desired state unchanged since step {} at {} ms", settled_at.step, settled_at.at_millis);
    // The last sample, at or after `settled`, where the predicate failed.
    let last_failure = samples[settled..].iter().rposition(|s| !satisfied(&s.snapshot)).map(|i| settled + i);
    let holds_from = match last_failure {
        None => settled,
        Some(i) if i + 1 == samples.len() => {
            return Some(Violation::new(
                property,
                format!(
                    "{since}: expected the state to satisfy it by the end, found it unsatisfied at the last sample (step {} at {} ms)",
                    last.step, last.at_millis
                ),
            ));
        }
        Some(i) => i + 1,
    };
    let held_from = &samples[holds_from];
    let held_millis = last.at_millis.saturating_sub(held_from.at_millis);
    if held_millis >= window_millis {
        return None;
    }
    let why = match last_failure {
        Some(i) => format!("it failed at step {} at {} ms", samples[i].step, samples[i].at_millis),
        None => "the run ended".to_owned(),
    };
    Some(Violation::new(
        property,
        format!(
            "{since}: expected it satisfied for {window_millis} ms, found it satisfied only for {held_millis} ms (from step {} at {} ms; {why})",
            held_from.step, held_from.at_millis
        ),
    ))
}
