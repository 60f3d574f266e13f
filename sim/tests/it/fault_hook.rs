//! The places where faults act: a `FaultHook` consulted around every API call and before every
//! watch delivery.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::Status;
use model_apiserver::Request;
use sim::api::Api;
use sim::transport::{CallInfo, Delivery, DeliveryInfo, FaultHook};
use sim::{Sim, TraceEvent, Verdict};

use common::*;

/// Answers the first create with 500 InternalError, without applying it.
#[derive(Default)]
struct FailFirstCreate {
    fired: bool,
}

impl FaultHook for FailFirstCreate {
    fn before_call(&mut self, call: &CallInfo<'_>, _request: &Request) -> Option<Status> {
        if call.verb == "create" && !self.fired {
            self.fired = true;
            return Some(model_apiserver::errors::internal_error("injected"));
        }
        None
    }
}

#[test]
fn a_hook_that_fails_a_call_fails_it_without_applying_it() {
    let report = Sim::builder()
        .fault_hook(|_seed| FailFirstCreate::default())
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("a", "1")).await?;
            Ok(())
        })
        .keep_trace(true)
        .run(1);
    assert_eq!(
        report.verdict,
        Verdict::Correctness {
            property: "workload".to_owned(),
            message:
                "step 1: apply ConfigMap default/a: 500 InternalError: Internal error occurred: injected"
                    .to_owned(),
            at_millis: report.stats.virtual_millis,
        }
    );
    let faults: Vec<&str> = entries(&report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Fault { description } => Some(description.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(faults, ["call 2 create configmaps/default/a: answered 500 InternalError"]);
}

/// Breaks the watch (410) before the first ADDED event it would deliver.
#[derive(Default)]
struct ExpireFirstAdded {
    fired: bool,
}

impl FaultHook for ExpireFirstAdded {
    fn on_delivery(&mut self, delivery: &DeliveryInfo<'_>) -> Delivery {
        if delivery.kind == "ADDED" && !self.fired {
            self.fired = true;
            return Delivery::Expire;
        }
        Delivery::Deliver
    }
}

#[test]
fn a_hook_that_expires_a_watch_makes_the_informer_relist() {
    let report = Sim::builder()
        .fault_hook(|_seed| ExpireFirstAdded::default())
        .controller("reader", |clients: sim::Clients| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(clients.default_cluster());
            let store = sim::runtime::reflector::informer(api, sim::runtime::watcher::Config::default());
            store.wait_until_ready().await.expect("listed");
            futures::future::pending::<()>().await;
        })
        .workload(|w| async move {
            w.sleep(Duration::from_millis(100)).await;
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("a", "1")).await?;
            Ok(())
        })
        .keep_trace(true)
        .run(3);
    assert_eq!(report.verdict, Verdict::Pass);
    let story: Vec<String> = entries(&report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Fault { description } => Some(format!("fault: {description}")),
            TraceEvent::Relist { items, .. } => Some(format!("relist: {items} items")),
            TraceEvent::WatchDelivery { kind, object, .. } => Some(format!("delivery: {kind} {object}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        story,
        [
            "relist: 0 items",
            "fault: watch default/configmaps/default expired before ADDED default/a",
            "relist: 1 items",
        ]
    );
}

/// Records the virtual time of every call it sees, then (if `reentrant`) asks `sim::time` too,
/// which a hook must not do.
struct Clocked {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
    reentrant: bool,
}

impl FaultHook for Clocked {
    fn before_call(&mut self, call: &CallInfo<'_>, _request: &Request) -> Option<Status> {
        self.seen.lock().unwrap().push(call.elapsed);
        if self.reentrant {
            let _ = sim::time::elapsed();
        }
        None
    }
}

/// A hook reads the time from what it is shown; one that calls back into the simulation (the
/// world is locked while it runs) fails the run with a message saying so, instead of hanging it.
#[test]
fn a_hook_is_shown_the_time_and_one_that_calls_the_simulation_fails_the_run_naming_why() {
    let run = |reentrant: bool| {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let hook_seen = seen.clone();
        let report = Sim::builder()
            .fault_hook(move |_seed| Clocked { seen: hook_seen.clone(), reentrant })
            .workload(|w| async move {
                let api: Api<ConfigMap> = Api::default_namespaced(w.client());
                w.apply(&api, &config_map("a", "1")).await?;
                w.sleep(Duration::from_secs(1)).await;
                w.apply(&api, &config_map("a", "2")).await?;
                Ok(())
            })
            .run(1);
        let seen = seen.lock().unwrap().clone();
        (report, seen)
    };
    let (report, seen) = run(false);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    assert!(seen.len() >= 4, "two applies, each a read and a write: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(seen[seen.len() - 1] - seen[0] >= Duration::from_secs(1), "{seen:?}");

    let (report, _) = run(true);
    let text = report.verdict.to_string();
    assert!(!report.verdict.is_pass() && text.contains("from inside a fault hook"), "{text}");
}
