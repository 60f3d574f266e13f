//! The end-state properties a world running the built-ins should pass on every cluster:
//! `no_orphans` (the garbage collector collected every dependent of an absent owner) and
//! `no_stuck_deletions` (every deletion finished), from the `properties` crate.

use sim::FnProperty;

/// `no_orphans` and `no_stuck_deletions` over every cluster, checked at the end of a run.
pub fn garbage_collected() -> FnProperty {
    FnProperty::at_end("no_orphans and no_stuck_deletions", |view| {
        for snapshot in view.clusters.values() {
            let mut violations = properties::no_orphans(snapshot);
            violations.extend(properties::no_stuck_deletions(snapshot));
            properties::summarize(&violations)?;
        }
        Ok(())
    })
}
