//! Helpers shared by the runtime-rule tests: small objects, and readers of a run's trace.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use sim::{RunReport, TraceEntry, TraceEvent};

/// A ConfigMap `name` in `default` with one data entry.
pub fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Every trace entry, asserting that the run kept them.
pub fn entries(report: &RunReport) -> &[TraceEntry] {
    let entries = report.trace.entries();
    assert!(!entries.is_empty(), "the run must keep its trace (keep_trace(true))");
    entries
}

/// (start, object) of every reconcile start, in order.
pub fn reconcile_starts(report: &RunReport) -> Vec<(Duration, String)> {
    entries(report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::ReconcileStart { object, .. } => {
                Some((Duration::from_nanos(e.at_nanos), object.clone()))
            }
            _ => None,
        })
        .collect()
}

/// (end, object) of every reconcile end, in order.
pub fn reconcile_ends(report: &RunReport) -> Vec<(Duration, String)> {
    entries(report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::ReconcileEnd { object, .. } => {
                Some((Duration::from_nanos(e.at_nanos), object.clone()))
            }
            _ => None,
        })
        .collect()
}

/// (time, watch, items) of every relist, in order.
pub fn relists(report: &RunReport) -> Vec<(Duration, String, usize)> {
    entries(report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Relist { watch, items, .. } => {
                Some((Duration::from_nanos(e.at_nanos), watch.clone(), *items))
            }
            _ => None,
        })
        .collect()
}

/// (watch, kind, object, resourceVersion) of every watch delivery, in order.
pub fn deliveries(report: &RunReport) -> Vec<(String, &'static str, String, u64)> {
    entries(report)
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::WatchDelivery { watch, kind, object, resource_version } => {
                Some((watch.clone(), *kind, object.clone(), resource_version.parse().unwrap_or(0)))
            }
            _ => None,
        })
        .collect()
}
