//! The webapp operator (a custom resource owning a Deployment, every built-in on): a planned
//! fault whose write another node makes is explained by who made it (issue 15).

use std::time::Duration;

use controllers::zoo::webapp::{self, WebApp};
use k8s_openapi::api::apps::v1::Deployment;
use sim::api::Api;
use sim::faults::{CallSide, Fault, FaultPlan, PlannedFault, Trigger};

/// The user's plan as a Sieve user wrote it: crash the operator right after it deletes
/// `deployment/default/nginx`. The operator never deletes it: the Deployment is owned by the
/// app, and the garbage collector deletes it once the app is gone.
#[test]
fn a_crash_planned_after_a_delete_the_garbage_collector_made_never_fires_and_says_so() {
    let world = webapp::operator().keep_trace(true).workload(|w| async move {
        let apps: Api<WebApp> = Api::namespaced(w.client(), "default");
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        w.apply(&apps, &webapp::app("nginx:1", 1)).await?;
        let made = |d: Option<&Deployment>| d.is_some();
        w.wait_for(&deployments, webapp::APP_NAME, made, Duration::from_secs(60)).await?;
        w.delete(&apps, webapp::APP_NAME).await?;
        let gone = |d: Option<&Deployment>| d.is_none();
        w.wait_for(&deployments, webapp::APP_NAME, gone, Duration::from_secs(60)).await?;
        Ok(())
    });
    let planned = PlannedFault {
        trigger: Trigger::NthWrite {
            controller: webapp::NODE.to_owned(),
            n: 1,
            kind: Some("Deployment".to_owned()),
            verb: Some("delete".to_owned()),
        },
        fault: Fault::Crash {
            controller: webapp::NODE.to_owned(),
            side: CallSide::After,
            restart_after_ms: 100,
        },
    };
    let controllers = world.controller_names();
    let report = world.faults(FaultPlan { faults: vec![planned.clone()] }).run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    assert_eq!(report.unfired, vec![planned.clone()]);
    let why = sim::explore::unfired::why_unfired(&planned, report.trace.entries(), &controllers);
    assert!(
        why.starts_with(
            "the trigger waits for webapp-operator's write number 1 that is a delete of Deployment; webapp-operator made "
        ),
        "{why}"
    );
    assert!(
        why.contains(", of which 0 matched; deployments/default/nginx was deleted by garbage-collector"),
        "{why}"
    );
}
