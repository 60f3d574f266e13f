//! # The operator zoo: real-world operators with planted bugs
//!
//! Each module is a small operator modelled on a real one and on a bug that Sieve (OSDI'22,
//! "Automatic Reliability Testing for Cluster Management Controllers") or Acto found in it. Each
//! comes as named scenarios: `<operator>:fixed` and `<operator>:<bug>`. The module doc says which
//! real bug it mirrors and by what mechanism.
//!
//! Every scenario is checked by the same general properties ([`oracle`]): no orphans, no stuck
//! deletions, convergence, the differential oracle against a fault-free run, and the data-store
//! contract that a live cluster's data volumes are never deleted. No property knows a bug.
//!
//! | scenario | bug class | mirrors |
//! |---|---|---|
//! | `rabbitmq:resize-crash` | intermediate state | rabbitmq/cluster-operator#782 |
//! | `zookeeper:stale-delete` | stale state | pravega/zookeeper-operator#312 |
//! | `cassandra:missed-scale-down` | unobserved state | instaclustr/cassandra-operator#398 |
//! | `casskop:lost-flag` | in-memory state lost on restart: error loop | Orange-OpenSource/casskop#370 |
//! | `mongodb:stale-delete` | stale state | Percona K8SPSMDB-430 |
//! | `mongodb:duplicate-backup` | non-idempotent create under an ambiguous write | Percona backups made with generateName |
//! | `yugabyte:missed-delete` | unobserved state (missed delete event) | yugabyte/yugabyte-operator#39 |
//! | `nifikop:config-crash` | intermediate state | konpyutaika/nifikop#49 |
//! | `carina:notready-migration` | a Node taken for gone while it is only NotReady (a lost kubelet) | carina-io/carina#128 |
//!
//! `carina` runs with every built-in controller on, as `webapp`: its data store is a
//! StatefulSet whose Pods and claims the built-ins make.
//!
//! `webapp:fixed` has no planted bug: an operator that owns a Deployment, with every built-in
//! controller on, is the differential oracle's false-alarm check (ReplicaSets, Pods and Events
//! it never names, with hash and random names and a history that depends on what it saw).
//! [`fixed_with_builtins`] gives every other fixed variant with the built-in controllers on, for
//! the same check.

pub mod carina;
pub mod cassandra;
pub mod casskop;
pub mod common;
pub mod mongodb;
pub mod nifikop;
pub mod oracle;
pub mod rabbitmq;
pub mod webapp;
pub mod yugabyte;
pub mod zookeeper;

use sim::scenario::Scenario;

/// Every zoo scenario, fixed variants first within each operator.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    all.extend(rabbitmq::scenarios());

    all.extend(zookeeper::scenarios());
    all.extend(cassandra::scenarios());
    all.extend(casskop::scenarios());
    all.extend(mongodb::scenarios());
    all.extend(yugabyte::scenarios());
    all.extend(nifikop::scenarios());
    all.extend(webapp::scenarios());
    all.extend(carina::scenarios());
    all
}

/// Every operator's fixed variant (but `webapp`, which always has them) with every built-in
/// controller on ([`crate::builtins::all`]: the StatefulSet controller makes Pods and claims
/// from the operators' StatefulSets, the kubelet runs them, Events are published), under the
/// same swarm faults as the plain variant: `<operator>:fixed-with-builtins`. Not among
/// [`scenarios`]; they pass every seed a correct operator passes, and the differential oracle
/// must not flag the built-ins' generated objects.
pub fn fixed_with_builtins() -> Vec<Scenario> {
    let fixed: [(&str, sim::SimBuilder, sim::faults::SwarmConfig); 7] = [
        ("rabbitmq", rabbitmq::fixed_world(), rabbitmq::swarm()),
        ("zookeeper", zookeeper::fixed_world(), zookeeper::swarm()),
        ("cassandra", cassandra::fixed_world(), cassandra::swarm()),
        ("casskop", casskop::fixed_world(), casskop::swarm()),
        ("mongodb", mongodb::fixed_world(), mongodb::swarm()),
        ("yugabyte", yugabyte::fixed_world(), yugabyte::swarm()),
        ("nifikop", nifikop::fixed_world(), nifikop::swarm()),
    ];
    fixed
        .into_iter()
        .map(|(operator, world, swarm)| {
            oracle::scenario_with_liveness_wait(
                &format!("{operator}:fixed-with-builtins"),
                &format!("{operator}:fixed with every built-in controller on"),
                crate::builtins::all(world),
                swarm,
                oracle::LIVENESS_WAIT_WITH_BUILTINS,
            )
        })
        .collect()
}
