//! scheduling.k8s.io/v1 validation, after `pkg/apis/scheduling/validation`: a PriorityClass
//! named `system-*` must be one of the two the API server creates at start, with their value and
//! `globalDefault`; any other class's value is at most [`HIGHEST_USER_DEFINABLE_PRIORITY`]; an
//! update may change neither `value` nor `preemptionPolicy`.

use kube_core::{DynamicObject, response::StatusCause};
use serde_json::Value;

use super::field::{Path, forbidden, not_supported, required};

/// `scheduling.HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// `scheduling.SystemCriticalPriority`: twice the highest user-definable priority.
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
/// The prefix reserved for the system's classes.
const SYSTEM_PREFIX: &str = "system-";

/// The PriorityClasses every kube-apiserver creates at start (`SystemPriorityClasses`): name,
/// value and description. Neither is a global default.
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// `value` as Go decodes the int32 (absent is 0).
fn value(object: &DynamicObject) -> i64 {
    object.data.get("value").and_then(Value::as_i64).unwrap_or(0)
}

/// ValidatePriorityClass (on create only, as the strategy calls it).
pub(crate) fn priority_class(object: &DynamicObject, out: &mut Vec<StatusCause>) {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    let value = value(object);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Err(why) = known_system_class(name, value, object) {
            out.push(forbidden(
                &Path::new("metadata").child("name"),
                &format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {why}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        out.push(forbidden(
            &Path::new("value"),
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    // ValidatePreemptionPolicy (defaulting set it, so it is there unless sent as "").
    if let Some(policy) = object.data.get("preemptionPolicy").and_then(Value::as_str) {
        let path = Path::new("preemptionPolicy");
        match policy {
            "PreemptLowerPriority" | "Never" => {}
            "" => out.push(required(&path, "")),
            other => out.push(not_supported(&path, other, &["PreemptLowerPriority", "Never"])),
        }
    }
}

/// IsKnownSystemPriorityClass, with its words.
fn known_system_class(name: &str, value: i64, object: &DynamicObject) -> Result<(), String> {
    let Some((_, expected, _)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, ..)| *n == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if value != *expected {
        return Err(format!("value of {name} PriorityClass must be {expected}"));
    }
    if object.data.get("globalDefault").and_then(Value::as_bool).unwrap_or(false) {
        return Err(format!("globalDefault of {name} PriorityClass must be false"));
    }
    Ok(())
}

/// ValidatePriorityClassUpdate: `value` and `preemptionPolicy` are immutable.
pub(crate) fn priority_class_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if value(old) != value(new) {
        out.push(forbidden(&Path::new("value"), "may not be changed in an update."));
    }
    let policy = |o: &DynamicObject| o.data.get("preemptionPolicy").cloned().filter(|v| !v.is_null());
    if policy(old) != policy(new) {
        let shown = policy(new).map_or_else(|| "null".to_owned(), |v| v.to_string());
        out.push(crate::errors::cause(
            "FieldValueInvalid",
            "preemptionPolicy",
            format!("Invalid value: {shown}: field is immutable"),
        ));
    }
    out
}
