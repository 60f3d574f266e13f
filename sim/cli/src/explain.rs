//! `kube-sim explain FILE`: the story of a failing run in plain words (which fault fired when,
//! which reads saw what, which write broke which property), and the end state diffed against a
//! fault-free reference run of the same scenario and seed. `--perfetto OUT.json` also writes the
//! run as a Chrome trace-event file.
//!
//! The diff is a plain one done here, not `properties::matches_reference`: `properties` depends on
//! `sim`, so `sim` cannot call it. It masks what differs between any two runs (uid,
//! resourceVersion, timestamps, managedFields) and lists objects only in one run and fields that
//! differ.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use model_apiserver::Snapshot;
use serde_json::Value;

use crate::{CliError, EXIT_FAILURE, EXIT_PASS, perfetto};
use sim::explore::replay;
use sim::faults::FaultPlan;
use sim::property::FnProperty;
use sim::scenario::Scenario;
use sim::trace::TraceEvent;
use sim::verdict::{RunReport, Verdict};

/// Lines of a story; the rest is summarized in one line (`replay --trace` shows every entry).
const STORY_LINES_MAX: usize = 150;
/// Reads listed in a story: only those after the first fault, which are the ones that can be stale.
const STORY_READS_MAX: usize = 30;
/// Lines of an end-state diff.
const DIFF_LINES_MAX: usize = 60;
/// Depth to which the diff descends into an object before it reports a whole subtree.
const DIFF_DEPTH_MAX: usize = 12;
/// Metadata fields that differ between any two runs, masked in the diff.
const MASKED_METADATA: [&str; 6] =
    ["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "managedFields", "generation"];

/// Arguments of `kube-sim explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The regression file.
    pub file: PathBuf,
    /// Also write the run as a Chrome trace-event JSON file (open it in ui.perfetto.dev).
    #[arg(long, value_name = "OUT.json")]
    pub perfetto: Option<PathBuf>,
}

/// `kube-sim explain`: exit 1 if the file's run fails (the usual case), 0 if it passes now.
pub fn explain(args: &ExplainArgs, registry: &sim::scenario::Registry) -> Result<u8, CliError> {
    let (file, scenario) = replay::load(&args.file, registry)?;
    let (report, end) = run_capturing(scenario, file.seed, &file.fault_plan);
    let (reference, reference_end) = run_capturing(scenario, file.seed, &FaultPlan::none());
    print!("{file}");
    println!("verdict now: {}\n", report.verdict);
    print!("{}", story(&report));
    println!("\nEnd state against a fault-free run of the same scenario and seed ({}):", reference.verdict);
    let diff = match (&end, &reference_end) {
        (Some(end), Some(reference_end)) => end_state_diff(reference_end, end),
        _ => vec!["(no end state: the run made no write)".to_owned()],
    };
    if diff.is_empty() {
        println!(
            "  the same (under the mask of uid, resourceVersion, timestamps, managedFields, generation)"
        );
    }
    for line in &diff {
        println!("  {line}");
    }
    if let Some(out) = &args.perfetto {
        perfetto::write(&report, out)?;
        println!("\nwrote {} (open it in https://ui.perfetto.dev)", out.display());
    }
    Ok(if report.verdict.is_pass() { EXIT_PASS } else { EXIT_FAILURE })
}

type EndStates = BTreeMap<Arc<str>, Snapshot>;

/// Run with the trace kept and the end state of every cluster captured (by an extra end property
/// that always holds).
fn run_capturing(scenario: &Scenario, seed: u64, plan: &FaultPlan) -> (RunReport, Option<EndStates>) {
    let captured: Arc<Mutex<Option<EndStates>>> = Arc::default();
    let (at_step, at_end) = (Arc::clone(&captured), Arc::clone(&captured));
    // After every write too: end checks stop at the first failing property, which may come before
    // this one, and the state after the last write is the end state (snapshots clone in O(1)).
    let step = FnProperty::always("explain: capture state", move |view| {
        *at_step.lock().unwrap_or_else(|p| p.into_inner()) = Some(view.clusters.clone());
        Ok(())
    });
    let end = FnProperty::at_end("explain: capture end state", move |view| {
        *at_end.lock().unwrap_or_else(|p| p.into_inner()) = Some(view.clusters.clone());
        Ok(())
    });
    let builder = scenario.builder().clone().property(step).property(end);
    let with_capture = Scenario::new(scenario.name(), scenario.description(), builder);
    let report = replay::run_plan(&with_capture, seed, plan, true);
    let end = captured.lock().unwrap_or_else(|p| p.into_inner()).take();
    (report, end)
}

/// Seconds and milliseconds of a virtual time, as the story prints it.
fn at(nanos: u64) -> String {
    let millis = nanos / 1_000_000;
    format!("{}.{:03}s", millis / 1000, millis % 1000)
}

fn is_read(verb: &str) -> bool {
    matches!(verb, "get" | "list" | "watch")
}

/// The story of a run, one plain sentence per line: faults, kills and restarts, relists after the
/// first, reads after the first fault, every write and its answer, failed reconciles, and at the
/// end the verdict with the last write before it.
pub fn story(report: &RunReport) -> String {
    let entries = report.trace.entries();
    let mut lines: Vec<String> = Vec::new();
    // Call number -> (node, verb, target) of the request, to tell answers apart.
    let mut calls: BTreeMap<u64, (Arc<str>, &'static str, &str)> = BTreeMap::new();
    let mut relisted: BTreeMap<(Arc<str>, &str), usize> = BTreeMap::new();
    let mut fault_seen = false;
    let mut reads = 0usize;
    let mut last_write: Option<String> = None;
    let violation_nanos = match &report.verdict {
        Verdict::Correctness { at_millis, .. } => Some(at_millis.saturating_mul(1_000_000)),
        _ => None,
    };
    let mut write_before_violation: Option<String> = None;
    // The newest revision the trace has shown: a write answered with one no newer changed
    // nothing, or is a delete, answered with the object as it was last stored.
    let mut newest: u64 = 0;
    for entry in entries {
        let (t, node) = (at(entry.at_nanos), &entry.node);
        if let Some(v) = violation_nanos
            && entry.at_nanos > v
            && write_before_violation.is_none()
        {
            write_before_violation = last_write.clone();
        }
        match &entry.event {
            TraceEvent::Fault { description } => {
                fault_seen = true;
                lines.push(format!("{t} FAULT on {node}: {description}"));
            }
            TraceEvent::FaultEffect { description } => {
                lines.push(format!("{t}   the fault's effect on {node}: {description}"));
            }
            TraceEvent::NodeKill { reason } => lines.push(format!("{t} {node} was killed: {reason}")),
            TraceEvent::NodeStart { restart: true } => {
                lines.push(format!("{t} {node} restarted, its caches, queue and memory empty"));
            }
            TraceEvent::Relist { watch, resource_version, items } => {
                let count = relisted.entry((Arc::clone(node), watch.as_str())).or_default();
                *count += 1;
                if *count > 1 {
                    lines.push(format!(
                        "{t} {node} relisted {watch}: {items} objects at rv {resource_version} (events in between were never seen one by one)"
                    ));
                }
            }
            TraceEvent::ApiRequest { call, verb, target } => {
                calls.insert(*call, (Arc::clone(node), verb, target.as_str()));
            }
            TraceEvent::WatchDelivery { resource_version, .. } => {
                newest = newest.max(resource_version.parse().unwrap_or(0));
            }
            TraceEvent::ApiResponse { call, result } => {
                let Some((who, verb, target)) = calls.get(call) else { continue };
                match result {
                    Ok(rv) if is_read(verb) => {
                        if *verb != "watch" {
                            // A watch's answer counts its events: no revision.
                            newest = newest.max(rv.parse().unwrap_or(0));
                        }
                        if fault_seen && reads < STORY_READS_MAX {
                            reads += 1;
                            lines.push(format!("{t} {who} read ({verb}) {target} and saw rv {rv}"));
                        }
                    }
                    Ok(rv) => {
                        let revision = rv.parse::<u64>().ok();
                        let outcome = match revision {
                            Some(r) if r <= newest && verb.starts_with("delete") => {
                                format!("deleted (last stored at rv {rv})")
                            }
                            Some(r) if r <= newest => format!("unchanged at rv {rv}"),
                            _ => format!("now rv {rv}"),
                        };
                        newest = newest.max(revision.unwrap_or(0));
                        let line = format!("{t} {who} wrote ({verb}) {target}: ok, {outcome}");
                        last_write = Some(line.clone());
                        lines.push(line);
                    }
                    Err((code, reason)) => {
                        lines.push(format!("{t} {who} {verb} {target} was answered {code} {reason}"));
                    }
                }
            }
            TraceEvent::ReconcileEnd { controller, object, result } if result.starts_with("error") => {
                lines.push(format!("{t} {controller} failed to reconcile {object}: {result}"));
            }
            _ => {}
        }
    }
    if violation_nanos.is_some() && write_before_violation.is_none() {
        write_before_violation = last_write;
    }
    let mut out = String::new();
    let total = lines.len();
    for line in lines.iter().take(STORY_LINES_MAX) {
        let _ = writeln!(out, "{line}");
    }
    if total > STORY_LINES_MAX {
        let _ = writeln!(
            out,
            "... {} more lines (replay --trace prints every trace entry)",
            total - STORY_LINES_MAX
        );
    }
    if total == 0 && !report.trace.keeps_entries() {
        let _ = writeln!(out, "(the trace was not kept)");
    }
    match &report.verdict {
        Verdict::Pass => {
            let _ = writeln!(out, "Then every property held and the world converged.");
        }
        Verdict::Correctness { property, message, at_millis } => {
            let _ = writeln!(
                out,
                "At {}.{:03}s property \"{property}\" broke: {message}",
                at_millis / 1000,
                at_millis % 1000
            );
            if let Some(write) = write_before_violation {
                let _ = writeln!(out, "The last write before it: {write}");
            }
        }
        other => {
            let _ = writeln!(out, "Then: {other}");
        }
    }
    if !report.unfired.is_empty() {
        let _ = writeln!(out, "{} planned faults never fired:", report.unfired.len());
        let controllers = controllers_of(report);
        for fault in &report.unfired {
            let why = sim::explore::unfired::why_unfired(fault, report.trace.entries(), &controllers);
            let _ = writeln!(out, "  {fault}\n    why: {why}");
        }
    }
    out
}

/// The controller nodes that ran, as the trace shows them starting (the workload's node aside).
fn controllers_of(report: &RunReport) -> Vec<String> {
    let mut nodes: Vec<String> = report
        .trace
        .entries()
        .iter()
        .filter(|e| matches!(e.event, TraceEvent::NodeStart { .. }) && &*e.node != sim::world::WORKLOAD_NODE)
        .map(|e| e.node.to_string())
        .collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// The differences between the reference end state and a run's, one line each (at most
/// [`DIFF_LINES_MAX`]): `- kind ns/name` only in the reference, `+ kind ns/name` only in the run,
/// `~ kind ns/name: path: reference X, this run Y` for a field that differs.
pub fn end_state_diff(reference: &EndStates, run: &EndStates) -> Vec<String> {
    let mut lines = Vec::new();
    let clusters: std::collections::BTreeSet<&Arc<str>> = reference.keys().chain(run.keys()).collect();
    let multi = clusters.len() > 1;
    for cluster in clusters {
        let prefix = if multi { format!("[{cluster}] ") } else { String::new() };
        let empty = Snapshot::default();
        let (a, b) = (reference.get(cluster).unwrap_or(&empty), run.get(cluster).unwrap_or(&empty));
        let keys: std::collections::BTreeSet<_> = a.objects.keys().chain(b.objects.keys()).collect();
        for key in keys {
            let name = if key.namespace.is_empty() {
                format!("{} {}", key.resource, key.name)
            } else {
                format!("{} {}/{}", key.resource, key.namespace, key.name)
            };
            match (a.objects.get(key), b.objects.get(key)) {
                (Some(_), None) => lines.push(format!("{prefix}- {name}: only in the reference run")),
                (None, Some(_)) => lines.push(format!("{prefix}+ {name}: only in this run")),
                (Some(x), Some(y)) => {
                    let (x, y) = (masked(x), masked(y));
                    let mut fields = Vec::new();
                    diff_values("", &x, &y, 0, &mut fields);
                    for (path, expected, found) in fields {
                        lines.push(format!(
                            "{prefix}~ {name}: {path}: reference {expected}, this run {found}"
                        ));
                    }
                }
                (None, None) => {}
            }
        }
    }
    if lines.len() > DIFF_LINES_MAX {
        let more = lines.len() - DIFF_LINES_MAX;
        lines.truncate(DIFF_LINES_MAX);
        lines.push(format!("... {more} more differences"));
    }
    lines
}

fn masked(object: &kube_core::DynamicObject) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in MASKED_METADATA {
            metadata.remove(field);
        }
        if let Some(owners) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
            for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
                owner.remove("uid");
            }
        }
    }
    value
}

fn diff_values(path: &str, a: &Value, b: &Value, depth: usize, out: &mut Vec<(String, String, String)>) {
    if a == b {
        return;
    }
    let shown = |v: Option<&Value>| v.map_or_else(|| "absent".to_owned(), Value::to_string);
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if depth < DIFF_DEPTH_MAX => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let sub = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => diff_values(&sub, p, q, depth + 1, out),
                    (p, q) => out.push((sub, shown(p), shown(q))),
                }
            }
        }
        _ => out.push((
            if path.is_empty() { ".".to_owned() } else { path.to_owned() },
            a.to_string(),
            b.to_string(),
        )),
    }
}
