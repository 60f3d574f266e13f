//! The yugabyte operator's fixed variant under time travel: restarted, right after its finalizer
//! ran, onto an API-server replica from before the finalizer was added.

use controllers::zoo::{self, yugabyte};
use sim::faults::{Fault, FaultPlan, PlannedFault, Trigger};

/// The operator crashes right after the patch that removes its finalizer (the cluster is then
/// gone) and restarts onto a replica 5 revisions behind: its cache shows the cluster without the
/// finalizer, then replays it with the finalizer and not yet deleted while the watch catches up.
/// A record created from that replay has no cluster left to remove it. Without the quorum read
/// before the create, 23 of these 40 seeds end with the record present.
#[test]
fn the_fixed_operator_creates_no_record_for_a_cluster_a_lagging_replica_replays() {
    let scenarios = zoo::scenarios();
    let fixed =
        scenarios.iter().find(|s| s.name() == "yugabyte:fixed").expect("yugabyte:fixed is a zoo scenario");
    let restart = PlannedFault {
        trigger: Trigger::NthWrite {
            controller: yugabyte::NODE.to_owned(),
            n: 2,
            kind: Some("YBCluster".to_owned()),
            verb: Some("patch".to_owned()),
        },
        fault: Fault::StaleReplica {
            controller: yugabyte::NODE.to_owned(),
            lag_revisions: 5,
            restart_after_ms: 2,
        },
    };
    let world = fixed.builder().clone().faults(FaultPlan { faults: vec![restart] }).keep_trace(true);
    for seed in 0..40 {
        let report = world.run(seed);
        assert!(report.verdict.is_pass(), "seed {seed}: {}", report.verdict);
        let replayed = report.trace.entries().iter().any(|e| {
            matches!(&e.event, sim::TraceEvent::FaultEffect { description } if description.contains("from the lagging replica"))
        });
        assert!(replayed, "seed {seed}: the restarted operator never listed from the lagging replica");
    }
}
