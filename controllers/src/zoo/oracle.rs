//! The general properties every zoo scenario is checked against, and the scenario constructor
//! that wires them in.
//!
//! None of them knows any operator's bug:
//! - [`properties::no_orphans`] and [`properties::no_stuck_deletions`], at the end;
//! - [`properties::hooks::matches_reference`] (Sieve's differential oracle): the end state and
//!   the per-object creation and deletion counts equal those of a fault-free run of the same
//!   scenario, under the built-in mask and what two fault-free runs teach; counts are not
//!   compared for objects the reference itself deletes (see [`reference`]);
//! - the engine's own liveness verdict: the world must quiesce (an error loop never does);
//! - [`data_volumes_kept`], a safety contract every zoo data store states: a PVC that a live
//!   cluster lists in `status.dataVolumes` is never deleted.
//! - [`children_within_spec`], the "never more than N" contract: a resource never owns more
//!   children of a kind than its spec asks for.

use std::sync::Arc;

use model_apiserver::{ResourceTypes, Snapshot};
use properties::hooks::Reference;
use sim::faults::SwarmConfig;
use sim::scenario::Scenario;
use sim::{FnProperty, SimBuilder};

use super::common::NAMESPACE;
use crate::zoo::common::INSTANCE;

/// The cluster every zoo world runs in.
const CLUSTER: &str = sim::world::DEFAULT_CLUSTER;
/// The seeds of the two fault-free reference runs: the first gives the end state and counts,
/// the pair the learned masks.
pub const REFERENCE_SEEDS: [u64; 2] = [0, 1];
/// How long a zoo world may take to quiesce after its workload: ample for these small worlds, and
/// short enough that an error loop is reported quickly.
pub const LIVENESS_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
/// The name [`data_volumes_kept`] reports under.
pub const DATA_VOLUMES_KEPT: &str = "data_volumes_kept";

fn cluster(clusters: &std::collections::BTreeMap<Arc<str>, Snapshot>) -> Result<&Snapshot, String> {
    clusters.get(CLUSTER).ok_or_else(|| format!("no cluster {CLUSTER}"))
}

/// `no_orphans` at the end, with the custom resources of the snapshot.
pub fn no_orphans() -> FnProperty {
    FnProperty::at_end(properties::NO_ORPHANS, |view| {
        let snapshot = cluster(view.clusters)?;
        properties::summarize(&properties::no_orphans_with(snapshot, &ResourceTypes::builtin()))
    })
}

/// `no_stuck_deletions` at the end.
pub fn no_stuck_deletions() -> FnProperty {
    FnProperty::at_end(properties::NO_STUCK_DELETIONS, |view| {
        properties::summarize(&properties::no_stuck_deletions(cluster(view.clusters)?))
    })
}

/// The data-store contract, checked after every write: for every custom resource of `resource`
/// (its storage key, e.g. `zookeeper.pravega.io/zookeeperclusters`) that is not being deleted,
/// every PVC named in its `status.dataVolumes` exists and carries the cluster's instance label.
/// A cluster lists a volume once data is on it, and unlists it before it lets it go.
pub fn data_volumes_kept(resource: &'static str) -> FnProperty {
    FnProperty::always(DATA_VOLUMES_KEPT, move |view| {
        let snapshot = cluster(view.clusters)?;
        for (key, object) in snapshot.iter_resource(resource, Some(NAMESPACE)) {
            if object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let volumes = object.data.pointer("/status/dataVolumes").and_then(|v| v.as_array());
            for volume in volumes.into_iter().flatten().filter_map(|v| v.as_str()) {
                let pvc = snapshot
                    .iter_resource("persistentvolumeclaims", Some(NAMESPACE))
                    .find(|(k, _)| &*k.name == volume)
                    .map(|(_, o)| o);
                let labelled = pvc.and_then(|p| p.metadata.labels.as_ref()?.get(INSTANCE).cloned());
                if labelled.as_deref() != Some(&*key.name) {
                    return Err(format!(
                        "{resource} {}/{}: data volume {volume} of the live cluster was deleted",
                        key.namespace, key.name
                    ));
                }
            }
        }
        Ok(())
    })
}

/// The fault-free reference of `builder`: its runs at [`REFERENCE_SEEDS`], their end state
/// and per-object counts, and the masks they teach (see [`Reference::compute`]).
///
/// Counts are compared for every object except those the reference run deletes
/// ([`Reference::mask_counts_of_deleted`]): the zoo's swarms restart operators onto stale
/// replicas, and a correct operator that sees the past replays its own deletions: with strict
/// counts, six of the seven fixed operators recreated a claim of a scaled-down or deleted
/// cluster, the StatefulSet they replace, or a deleted cluster's record, and deleted it again,
/// in 0.8 to 4.3% of 3,000 seeds, each time after a restart onto a stale replica.
///
/// # Panics
///
/// If a fault-free run does not pass: a zoo scenario must work without faults.
pub fn reference(builder: &SimBuilder) -> Reference {
    Reference::compute(builder, REFERENCE_SEEDS)
        .unwrap_or_else(|e| panic!("a zoo scenario must pass without faults: {e}"))
        .mask_counts_of_deleted()
}

/// Run one seed of `builder` on a fresh thread, as sweeps do (madsim's per-thread state starts
/// clean), from code that is not itself a seed's thread: references, benchmarks, shrinking.
///
/// # Panics
///
/// If the OS refuses a thread, or the engine itself panics.
pub fn run_on_fresh_thread(builder: &SimBuilder, seed: u64) -> sim::RunReport {
    /// As the sweep's seed threads.
    const STACK_BYTES: usize = 4 << 20;
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("zoo-seed-{seed}"))
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || builder.run(seed))
            .expect("the OS refused a thread")
            .join()
            .expect("the engine panicked")
    })
}

/// The properties a zoo failure may be reported by: every one is general (none knows a bug).
pub const GENERAL_PROPERTIES: [&str; 5] = [
    properties::NO_ORPHANS,
    properties::NO_STUCK_DELETIONS,
    properties::MATCHES_REFERENCE,
    DATA_VOLUMES_KEPT,
    CHILDREN_WITHIN_SPEC,
];

/// Whether `verdict` is a correctness verdict from a [`GENERAL_PROPERTIES`] property, or a
/// liveness verdict (the world did not converge).
pub fn is_general_failure(verdict: &sim::Verdict) -> bool {
    match verdict {
        sim::Verdict::Liveness { .. } => true,
        sim::Verdict::Correctness { property, .. } => GENERAL_PROPERTIES.contains(&property.as_str()),
        _ => false,
    }
}

/// Whether two verdicts are the same failure: the same kind, and for correctness the same
/// property (what a shrink must preserve).
pub fn same_failure(a: &sim::Verdict, b: &sim::Verdict) -> bool {
    match (a, b) {
        (sim::Verdict::Correctness { property: p, .. }, sim::Verdict::Correctness { property: q, .. }) => {
            p == q
        }
        _ => a.kind() == b.kind() && !a.is_pass(),
    }
}

/// A zoo scenario: `base` with the general properties, the differential oracle
/// ([`properties::hooks::matches_reference`]) against its own fault-free [`reference`], and swarm
/// faults drawn from `swarm`.
///
/// The reference runs when the scenario is first run, not when it is declared, so that listing
/// the zoo or running one of its scenarios does not run every scenario's reference.
pub fn scenario(name: &str, description: &str, base: SimBuilder, swarm: SwarmConfig) -> Scenario {
    scenario_with_liveness_wait(name, description, base, swarm, LIVENESS_WAIT)
}

/// How long a zoo world with the built-in controllers on may take to quiesce: a Pod the operator
/// did not give a grace period takes Kubernetes' default 30 s to terminate, and an OrderedReady
/// StatefulSet scaled down by two (cassandra's 3 → 1) terminates its Pods one after the other.
pub const LIVENESS_WAIT_WITH_BUILTINS: std::time::Duration = std::time::Duration::from_secs(120);

/// [`scenario`] with another bound on quiescence (see [`LIVENESS_WAIT_WITH_BUILTINS`]).
pub fn scenario_with_liveness_wait(
    name: &str,
    description: &str,
    base: SimBuilder,
    swarm: SwarmConfig,
    liveness_wait: std::time::Duration,
) -> Scenario {
    Scenario::lazy(name, description, move || {
        let base =
            base.clone().liveness_wait(liveness_wait).property(no_orphans()).property(no_stuck_deletions());
        let reference = Arc::new(reference(&base));
        base.property(properties::hooks::matches_reference(reference)).swarm(swarm.clone())
    })
}

/// The name [`children_within_spec`] reports under.
pub const CHILDREN_WITHIN_SPEC: &str = "children_within_spec";

/// The "never more than N" contract, checked after every write: every custom resource of
/// `owner_resource` has at most as many objects of `child_resource` owned by it (by uid) as the
/// number at `spec_pointer` asks for.
pub fn children_within_spec(
    owner_resource: &'static str,
    child_resource: &'static str,
    spec_pointer: &'static str,
) -> FnProperty {
    FnProperty::always(CHILDREN_WITHIN_SPEC, move |view| {
        let snapshot = cluster(view.clusters)?;
        for (key, owner) in snapshot.iter_resource(owner_resource, None) {
            let (Some(uid), Some(wanted)) =
                (owner.metadata.uid.as_deref(), owner.data.pointer(spec_pointer).and_then(|v| v.as_u64()))
            else {
                continue;
            };
            let owned = snapshot
                .iter_resource(child_resource, Some(&key.namespace))
                .filter(|(_, child)| child.metadata.owner_references.iter().flatten().any(|r| r.uid == uid))
                .count();
            if owned as u64 > wanted {
                return Err(format!(
                    "{owner_resource} {}/{}: {owned} {child_resource} owned, the spec asks for {wanted}",
                    key.namespace, key.name
                ));
            }
        }
        Ok(())
    })
}
