//! The carina migration controller (every built-in on): what its fixed variant still does. A Pod
//! that opts in moves off a lost Node (its claim is deleted and made again, its data left
//! behind, as the user asked); one that does not waits for its Node with its claim.

use std::time::Duration;

use controllers::builtins::{kubelet, pod_state};
use controllers::zoo::carina;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use sim::api::Api;
use sim::faults::{Fault, FaultPlan, PlannedFault, Trigger};
use sim::{FnProperty, SweepConfig, sweep};

/// node-1 (the kubelet-lite's Node, where both Pods run) lost from 20 s for 10 s; the Pods opt
/// in to migration if `migratable`; at the end each claim has been created `claims_made` times.
fn lost_node_world(migratable: bool, claims_made: u64) -> sim::SimBuilder {
    let lose = Fault::LoseNode { node: kubelet::NODE_NAME.to_owned(), duration_ms: 10_000 };
    let plan =
        FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms: 20_000 }, fault: lose }] };
    carina::controller(false)
        .faults(plan)
        .workload(move |w| async move {
            let statefulsets: Api<StatefulSet> = Api::namespaced(w.client(), "default");
            let pods: Api<Pod> = Api::namespaced(w.client(), "default");
            w.apply(&statefulsets, &carina::statefulset(migratable)).await?;
            let running =
                |pods: &[Pod]| pods.iter().filter(|p| pod_state::is_running_and_ready(p)).count() == 2;
            w.wait_for_all(&pods, running, Duration::from_secs(15)).await?;
            w.sleep(Duration::from_secs(20)).await;
            w.wait_for_all(&pods, running, Duration::from_secs(120)).await
        })
        .liveness_wait(Duration::from_secs(120))
        .property(FnProperty::at_end("each claim was made as often as expected", move |view| {
            let lifecycles = view.lifecycles.get("default").ok_or("no cluster")?;
            for claim in ["data-db-0", "data-db-1"] {
                let made = lifecycles
                    .iter()
                    .find(|(k, _)| &*k.resource == "persistentvolumeclaims" && &*k.name == claim)
                    .map_or(0, |(_, l)| l.created);
                if made != claims_made {
                    return Err(format!("{claim} made {made} times, expected {claims_made}"));
                }
            }
            Ok(())
        }))
}

#[test]
fn a_pod_that_opts_in_moves_off_a_lost_node_and_one_that_does_not_keeps_its_claim() {
    for (migratable, claims_made) in [(true, 2), (false, 1)] {
        let world = lost_node_world(migratable, claims_made);
        let report =
            sweep(&SweepConfig::new("carina-opt-in").seeds(5), |seed, options| world.run_with(seed, options));
        report.assert_all_passed();
    }
}

// What exploring `carina:fixed` found in the kubelet-lite's scheduler (its volume binding's
// PreBind, not carina): with its claim watch 37 ms late, a claim's provisioned volume, already
// bound to the claim, was bound again and marked `pv.kubernetes.io/bound-by-controller`, which a
// fault-free run's volume never is (upstream's GetBindVolumeToClaim writes nothing then). The
// shrunk plan, over the seeds around the one it was found at.
#[test]
fn a_late_claim_watch_does_not_mark_a_provisioned_volume_bound_by_controller() {
    let scenario =
        controllers::zoo::scenarios().into_iter().find(|s| s.name() == "carina:fixed").expect("carina:fixed");
    let delay = Fault::DelayWatch {
        controller: kubelet::NODE.to_owned(),
        resource: "persistentvolumeclaims".to_owned(),
        extra_ms: 37,
        duration_ms: 120,
    };
    let plan =
        FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms: 0 }, fault: delay }] };
    let world = scenario.builder().clone().faults(plan);
    let report = sweep(&SweepConfig::new("carina-late-claim-watch").seeds(60), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
