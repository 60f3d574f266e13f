//! A run's trace as a Chrome trace-event JSON file, which ui.perfetto.dev (and chrome://tracing)
//! opens: one track (thread) per node, named by `thread_name` metadata; faults, kills, restarts,
//! relists and watch deliveries as instant events (`"ph": "i"`); reconciles and API calls as
//! complete events (`"ph": "X"`) from their start to their end. Timestamps are virtual
//! microseconds since the start of the run.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::CliError;
use crate::report::write_atomically;
use sim::trace::TraceEvent;
use sim::verdict::RunReport;

/// The one process every track belongs to.
const PID: u64 = 1;

/// Virtual microseconds, with the nanoseconds as a fraction (trace-event `ts` is in µs).
fn micros(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

/// The trace-event document of `report` (its trace must have kept its entries).
pub fn trace_events(report: &RunReport) -> Value {
    let mut tids: BTreeMap<Arc<str>, u64> = BTreeMap::new();
    let mut order: Vec<Arc<str>> = Vec::new();
    let mut tid_of = |node: &Arc<str>| -> u64 {
        if let Some(tid) = tids.get(node) {
            return *tid;
        }
        let tid = tids.len() as u64 + 1;
        tids.insert(Arc::clone(node), tid);
        order.push(Arc::clone(node));
        tid
    };
    let mut events: Vec<Value> = Vec::new();
    // Open spans: API calls by number, reconciles by (node, controller, object).
    let mut calls: BTreeMap<u64, (u64, u64, &'static str, &str)> = BTreeMap::new();
    let mut reconciles: BTreeMap<(u64, &str, &str), u64> = BTreeMap::new();
    let instant = |tid: u64, ts: u64, cat: &str, name: String| json!({ "ph": "i", "s": "t", "pid": PID, "tid": tid, "ts": micros(ts), "cat": cat, "name": name });
    for entry in report.trace.entries() {
        let tid = tid_of(&entry.node);
        let ts = entry.at_nanos;
        match &entry.event {
            TraceEvent::Fault { description } => {
                events.push(instant(tid, ts, "fault", format!("fault: {description}")))
            }
            TraceEvent::NodeKill { reason } => {
                events.push(instant(tid, ts, "node", format!("kill: {reason}")))
            }
            TraceEvent::NodeStart { restart } => {
                let name = if *restart { "restart" } else { "start" };
                events.push(instant(tid, ts, "node", name.to_owned()));
            }
            TraceEvent::Relist { watch, resource_version, items } => {
                events.push(instant(
                    tid,
                    ts,
                    "watch",
                    format!("relist {watch} rv={resource_version} items={items}"),
                ));
            }
            TraceEvent::WatchDelivery { watch, kind, object, resource_version } => {
                events.push(instant(
                    tid,
                    ts,
                    "watch",
                    format!("{kind} {watch} {object} rv={resource_version}"),
                ));
            }
            TraceEvent::Note { text } => events.push(instant(tid, ts, "note", text.clone())),
            TraceEvent::FaultEffect { description } => {
                events.push(instant(tid, ts, "fault effect", description.clone()));
            }
            TraceEvent::ApiRequest { call, verb, target } => {
                calls.insert(*call, (tid, ts, verb, target.as_str()));
            }
            TraceEvent::ApiResponse { call, result } => {
                let Some((caller, start, verb, target)) = calls.remove(call) else { continue };
                let answer = match result {
                    Ok(rv) => format!("ok rv={rv}"),
                    Err((code, reason)) => format!("{code} {reason}"),
                };
                events.push(json!({
                    "ph": "X", "pid": PID, "tid": caller, "ts": micros(start),
                    "dur": micros(ts.saturating_sub(start)), "cat": "api",
                    "name": format!("{verb} {target}"), "args": { "call": call, "answer": answer }
                }));
            }
            TraceEvent::ReconcileStart { controller, object } => {
                reconciles.insert((tid, controller.as_str(), object.as_str()), ts);
            }
            TraceEvent::ReconcileEnd { controller, object, result } => {
                let start = reconciles.remove(&(tid, controller.as_str(), object.as_str())).unwrap_or(ts);
                events.push(json!({
                    "ph": "X", "pid": PID, "tid": tid, "ts": micros(start),
                    "dur": micros(ts.saturating_sub(start)), "cat": "reconcile",
                    "name": format!("reconcile {object}"), "args": { "result": result }
                }));
            }
        }
    }
    let mut metadata = vec![json!({
        "ph": "M", "pid": PID, "name": "process_name",
        "args": { "name": format!("{} seed {}", report.scenario, report.seed) }
    })];
    for node in &order {
        let tid = tids[node];
        metadata.push(json!({ "ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": { "name": node.as_ref() } }));
        metadata.push(json!({ "ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": { "sort_index": tid } }));
    }
    metadata.extend(events);
    json!({
        "traceEvents": metadata,
        "displayTimeUnit": "ms",
        "otherData": { "scenario": report.scenario, "seed": report.seed, "verdict": report.verdict.to_string(), "digest": report.digest }
    })
}

/// Write `report`'s trace-event document to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<(), CliError> {
    let mut text = serde_json::to_string(&trace_events(report)).expect("trace events always serialize");
    text.push('\n');
    write_atomically(path, &text)
}
