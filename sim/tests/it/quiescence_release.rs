//! The liveness phase gives a controller that a fault held a quiet period after its release: a
//! task partitioned past the last write acts on what it was held from only once released, and
//! the end checks must not run before it can.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, PostParams};
use sim::faults::{Fault, FaultPlan, PlannedFault, Trigger};
use sim::runtime::{reflector, watcher};
use sim::{Clients, FnProperty, Sim, Verdict};

use common::*;

/// How often the scanner looks at its cache: a periodic task outside any reconcile, as a
/// garbage collector's graph scan.
const SCAN: Duration = Duration::from_millis(100);

/// Looks at its ConfigMap cache every [`SCAN`] and answers `trigger` with `done`.
async fn scanner(clients: Clients) {
    let client = clients.default_cluster();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cache = reflector::informer(api.clone(), watcher::Config::default());
    loop {
        madsim::time::sleep(SCAN).await;
        let has = |name: &str| cache.state().iter().any(|c| c.metadata.name.as_deref() == Some(name));
        if has("trigger") && !has("done") {
            let _ = api.create(&PostParams::default(), &config_map("done", "1")).await;
        }
    }
}

#[test]
fn a_controller_held_by_a_partition_past_the_last_write_acts_before_the_end_checks() {
    // The scanner's watch is held from 50 ms to 5.05 s; the workload's one write comes at 100 ms
    // and the liveness phase starts right after it. Once the held pull is released, the scanner's
    // cache catches up at once, more than a quiet period after the last write.
    let partition = PlannedFault {
        trigger: Trigger::AtTime { at_ms: 50 },
        fault: Fault::Partition { controller: "scanner".into(), duration_ms: 5_000 },
    };
    let world = Sim::builder()
        .controller("scanner", scanner)
        .faults(FaultPlan { faults: vec![partition] })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(100)).await;
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("trigger", "1")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("the scanner answered the trigger", |view| {
            let snap = view.cluster("default").ok_or("no cluster")?;
            let done = snap.iter_resource("configmaps", Some("default")).any(|(k, _)| &*k.name == "done");
            if done { Ok(()) } else { Err("no done ConfigMap".to_owned()) }
        }));
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
    }
}
