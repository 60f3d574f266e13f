//! kube-apiserver's `PodSecurity` admission plugin with every built-in: a Deployment in a
//! namespace that enforces the `restricted` level is created, its ReplicaSet's Pods are refused
//! (`FailedCreate`, in upstream's words), and a hardened template rolls out.

use crate::builtins_deployment::{failed_step, rolled_out, web};
use controllers::builtins;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace};
use sim::api::{Api, Patch};
use sim::{Sim, SweepConfig, sweep};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);

#[test]
fn a_deployment_in_a_restricted_namespace_gets_no_pods_until_its_template_is_hardened() {
    let world = builtins::all(Sim::builder().scenario("builtins-pod-security")).workload(|w| async move {
        let namespaces: Api<Namespace> = Api::all(w.client());
        let deployments: Api<Deployment> = Api::namespaced(w.client(), "default");
        let events: Api<Event> = Api::namespaced(w.client(), "default");
        let label = serde_json::json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
        w.patch(&namespaces, "default", &Patch::Merge(label)).await?;
        w.apply(&deployments, &web("nginx:1.27", None)).await?;
        let refused = |events: &[Event]| {
            events.iter().any(|e| {
                e.reason.as_deref() == Some("FailedCreate")
                    && e.message.as_deref().is_some_and(|m| {
                        m.contains(r#"is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set securityContext.allowPrivilegeEscalation=false)"#)
                    })
            })
        };
        w.wait_for_all(&events, refused, WAIT).await?;
        let stuck = deployments.get("web").await.map_err(|e| failed_step("read", e.to_string()))?;
        if stuck.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0) != 0 {
            return Err(failed_step("refused", format!("{:?}", stuck.status)));
        }
        let hardened = serde_json::json!({"spec": {"template": {"spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "web", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}}});
        w.patch(&deployments, "web", &Patch::Strategic(hardened)).await?;
        w.wait_for(&deployments, "web", rolled_out, WAIT).await
    });
    let report = sweep(&SweepConfig::new("builtins-pod-security").seeds(20), |seed, options| {
        world.run_with(seed, options)
    });
    report.assert_all_passed();
}
