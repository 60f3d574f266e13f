//! Why a planned fault never fired, told from the run's trace: the controller does not exist,
//! it made writes of which none matched (and which it did make), the object was written by
//! another node, or the run ended before the time.

use std::collections::BTreeMap;

use crate::faults::{ObjectChange, PlannedFault, Trigger};
use crate::trace::{TraceEntry, TraceEvent};

/// The verbs that count as writes, as audit logs spell them.
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// At most this many kinds of write are listed in one explanation.
const WRITE_SHAPES_LISTED_MAX: usize = 6;

/// One line saying why `planned` did not fire in the run whose trace is `entries`, in a scenario
/// whose controllers are `controllers`.
pub fn why_unfired(planned: &PlannedFault, entries: &[TraceEntry], controllers: &[String]) -> String {
    let missing = [planned.trigger.controller(), planned.fault.controller()]
        .into_iter()
        .flatten()
        .find(|c| !controllers.iter().any(|known| known == c));
    if let Some(controller) = missing {
        return format!(
            "the scenario has no controller \"{controller}\" (its controllers: {})",
            controllers.join(", ")
        );
    }
    match &planned.trigger {
        Trigger::NthWrite { controller, n, kind, verb } => {
            let writes = writes_of(entries, controller);
            let matching = writes
                .iter()
                .filter(|(v, resource, _)| {
                    kind.as_deref().is_none_or(|k| names_plural(k, resource))
                        && verb.as_deref().is_none_or(|want| want.eq_ignore_ascii_case(v))
                })
                .count();
            let wanted = match (verb, kind) {
                (Some(v), Some(k)) => format!("{v} of {k}"),
                (Some(v), None) => v.clone(),
                (None, Some(k)) => format!("write of {k}"),
                (None, None) => "write".to_owned(),
            };
            let mut why = format!(
                "the trigger waits for {controller}'s write number {n} that is a {wanted}; {controller} made {} writes{}, of which {matching} matched",
                writes.len(),
                shapes(&writes),
            );
            // A write of that kind done by another node (a Deployment deleted by the garbage
            // collector, not by the controller) is the usual reason: name who did it.
            let by_others = others_matching(entries, controller, kind.as_deref(), verb.as_deref());
            if !by_others.is_empty() {
                why.push_str("; ");
                why.push_str(&by_others.join(", "));
            }
            why
        }
        Trigger::OnObject { kind, namespace, name, change } => {
            let object = if namespace.is_empty() { name.clone() } else { format!("{namespace}/{name}") };
            let verbs: &[&str] = match change {
                ObjectChange::Create => &["create"],
                ObjectChange::Update => &["update", "patch"],
                ObjectChange::Delete => &["delete", "deletecollection"],
            };
            let by: Vec<String> = entries
                .iter()
                .filter_map(|e| match &e.event {
                    TraceEvent::ApiRequest { verb, target, .. } if WRITE_VERBS.contains(verb) => {
                        let (resource, ns, n) = split_target(target);
                        (names_plural(kind, resource) && ns == namespace.as_str() && n == name.as_str())
                            .then(|| format!("{verb} by {}", e.node))
                    }
                    _ => None,
                })
                .collect();
            let want = format!("{change:?}").to_lowercase();
            if by.is_empty() {
                format!("no node wrote {kind} {object}; the trigger waits for its {want}")
            } else {
                let done: Vec<&String> =
                    by.iter().filter(|w| verbs.iter().any(|v| w.starts_with(v))).collect();
                let note = if done.is_empty() {
                    format!("none was a {want}")
                } else {
                    format!("{} looked like a {want} but did not take effect as one", done.len())
                };
                format!("{kind} {object} was written {} times ({}); {note}", by.len(), by.join(", "))
            }
        }
        Trigger::AtTime { at_ms } => {
            let end_ms = entries.last().map_or(0, |e| e.at_nanos / 1_000_000);
            format!(
                "the run's faults stopped (the liveness phase began) before {at_ms} ms; its trace ends at {end_ms} ms"
            )
        }
        Trigger::Rate { controller, per_mille, .. } => {
            let calls = entries
                .iter()
                .filter(|e| {
                    &*e.node == controller.as_str() && matches!(e.event, TraceEvent::ApiRequest { .. })
                })
                .count();
            format!("none of {controller}'s {calls} calls drew the {per_mille}/1000 chance")
        }
    }
}

/// At most this many writes by other nodes are named in one explanation.
const OTHERS_NAMED_MAX: usize = 4;

/// The writes of other nodes than `controller` that the trigger's kind and verb filters match,
/// as `deployments/ns/nginx was deleted by garbage-collector`, distinct, in order of first
/// occurrence (at most [`OTHERS_NAMED_MAX`], then `...`). None without a filter: every node
/// writes something.
fn others_matching(
    entries: &[TraceEntry],
    controller: &str,
    kind: Option<&str>,
    verb: Option<&str>,
) -> Vec<String> {
    if kind.is_none() && verb.is_none() {
        return Vec::new();
    }
    let mut named: Vec<String> = Vec::new();
    let mut more = false;
    for entry in entries.iter().filter(|e| &*e.node != controller) {
        let TraceEvent::ApiRequest { verb: v, target, .. } = &entry.event else { continue };
        let resource = split_target(target).0;
        let matches = WRITE_VERBS.contains(v)
            && kind.is_none_or(|k| names_plural(k, resource))
            && verb.is_none_or(|want| want.eq_ignore_ascii_case(v));
        if !matches {
            continue;
        }
        let line = format!("{target} was {} by {}", past_tense(v), entry.node);
        if named.contains(&line) {
            continue;
        }
        if named.len() == OTHERS_NAMED_MAX {
            more = true;
            break;
        }
        named.push(line);
    }
    if more {
        named.push("...".to_owned());
    }
    named
}

/// `deleted` for `delete`: how an explanation says what another node did.
fn past_tense(verb: &str) -> String {
    match verb {
        "deletecollection" => "deleted as part of a collection".to_owned(),
        v if v.ends_with('e') => format!("{v}d"),
        v => format!("{v}ed"),
    }
}

/// `controller`'s writes: (verb, resource, target), in order.
fn writes_of<'a>(entries: &'a [TraceEntry], controller: &str) -> Vec<(&'static str, &'a str, &'a str)> {
    entries
        .iter()
        .filter(|e| &*e.node == controller)
        .filter_map(|e| match &e.event {
            TraceEvent::ApiRequest { verb, target, .. } if WRITE_VERBS.contains(verb) => {
                Some((*verb, split_target(target).0, target.as_str()))
            }
            _ => None,
        })
        .collect()
}

/// ` (12 patch configmaps, 2 create statefulsets)`: the writes by verb and resource.
fn shapes(writes: &[(&'static str, &str, &str)]) -> String {
    if writes.is_empty() {
        return String::new();
    }
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (verb, resource, _) in writes {
        *counts.entry((*verb, *resource)).or_default() += 1;
    }
    let mut listed: Vec<String> =
        counts.iter().take(WRITE_SHAPES_LISTED_MAX).map(|((v, r), n)| format!("{n} {v} {r}")).collect();
    if counts.len() > WRITE_SHAPES_LISTED_MAX {
        listed.push("...".to_owned());
    }
    format!(" ({})", listed.join(", "))
}

/// `resource[/namespace][/name]` as (resource, namespace, name); a cluster-scoped target's
/// namespace is empty. Ambiguous for a cluster-scoped named object (`namespaces/x`): read as a
/// name, as the engine writes cluster-scoped targets.
fn split_target(target: &str) -> (&str, &str, &str) {
    let mut parts = target.splitn(3, '/');
    let resource = parts.next().unwrap_or("");
    match (parts.next(), parts.next()) {
        (Some(namespace), Some(name)) => (resource, namespace, name),
        (Some(name), None) => (resource, "", name),
        _ => (resource, "", ""),
    }
}

/// Whether a trigger's kind filter (`Deployment`, `deployments`) names the resource `plural`.
fn names_plural(filter: &str, plural: &str) -> bool {
    let filter = filter.to_ascii_lowercase();
    if filter == plural {
        return true;
    }
    let stem = filter.strip_suffix('y').unwrap_or(&filter);
    plural.starts_with(stem) && plural.len() <= filter.len() + 3
}
