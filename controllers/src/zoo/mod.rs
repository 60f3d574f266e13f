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

pub mod cassandra;
pub mod casskop;
pub mod common;
pub mod mongodb;
pub mod nifikop;
pub mod oracle;
pub mod rabbitmq;
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
    all
}
