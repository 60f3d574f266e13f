//! kube-apiserver's `Priority` admission plugin (`plugin/pkg/admission/priority`):
//!
//! - On the create of a Pod, its `priorityClassName` resolves to `spec.priority` and, when the
//!   class has one, `spec.preemptionPolicy`. A Pod that names no class gets the `globalDefault`
//!   class's name, value and policy (the lowest-valued, should there be several), else priority
//!   0 and `PreemptLowerPriority`. An unknown class is 403 Forbidden `no PriorityClass with name
//!   <name> was found`; a Pod that sets a `priority` or `preemptionPolicy` other than the class's
//!   is 403 too.
//! - On an update of a Pod, a `priority` or `preemptionPolicy` the new object lacks is kept from
//!   the stored one (validation forbids changing them), so that a client that rebuilds a Pod
//!   from its own spec can still update it.
//! - On the create or update of a PriorityClass that is `globalDefault`, another default class
//!   is 403 Forbidden `PriorityClass <other> is already marked as default. Only one default can
//!   exist` (the plugin's `Validate`).
//!
//! The system classes it resolves (`system-node-critical`, `system-cluster-critical`) are the
//! ones the server's bootstrap stores ([`crate::ApiServer::with_bootstrap_objects`]).

use kube_core::{DynamicObject, Status};
use serde_json::{Value, json};

use crate::errors;

/// A Pod's priority when no class is named and none is the default
/// (`scheduling.DefaultPriorityWhenNoDefaultClassExists`).
const PRIORITY_WITHOUT_DEFAULT_CLASS: i64 = 0;
/// The preemption policy of a Pod without a class, and the PriorityClass default.
const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// What a Pod takes from a class: its name (empty for none), value and preemption policy.
struct Resolved<'c> {
    class: &'c str,
    priority: i64,
    preemption_policy: Option<&'c str>,
}

/// The plugin's `admitPod` on a create: `classes` are every stored PriorityClass, `name` the
/// Pod's as refusals give it.
pub(crate) fn admit_create(
    pod: &mut DynamicObject,
    name: &str,
    classes: &[&DynamicObject],
) -> Result<(), Status> {
    let forbidden = |why: String| errors::forbidden("", "pods", name, &why);
    let spec = super::pod_spec(pod);
    let named = spec.get("priorityClassName").and_then(Value::as_str).filter(|n| !n.is_empty());
    let resolved = match named {
        None => default_priority(classes),
        Some(wanted) => {
            let Some(class) = classes.iter().find(|c| c.metadata.name.as_deref() == Some(wanted)) else {
                return Err(forbidden(format!("no PriorityClass with name {wanted} was found")));
            };
            resolve(class)
        }
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != resolved.priority
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission \
             controller computed {} from the given PriorityClass name",
            resolved.priority
        )));
    }
    if named.is_none() && !resolved.class.is_empty() {
        spec.insert("priorityClassName".to_owned(), json!(resolved.class));
    }
    spec.insert("priority".to_owned(), json!(resolved.priority));
    if let Some(policy) = resolved.preemption_policy {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && given != policy
        {
            return Err(forbidden(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority \
                 admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        spec.insert("preemptionPolicy".to_owned(), json!(policy));
    }
    Ok(())
}

/// The plugin's `admitPod` on an update: what the new Pod lacks of the stored priority and
/// preemption policy is kept.
pub(crate) fn admit_update(old: &DynamicObject, pod: &mut DynamicObject) {
    let Some(old_spec) = old.data.get("spec") else { return };
    let spec = super::pod_spec(pod);
    for field in ["priority", "preemptionPolicy"] {
        let lacks = spec.get(field).is_none_or(Value::is_null);
        if let Some(stored) = old_spec.get(field).filter(|v| lacks && !v.is_null()) {
            spec.insert(field.to_owned(), stored.clone());
        }
    }
}

/// The plugin's `Validate` of a PriorityClass create or update: at most one `globalDefault`.
/// `name` is the class's as refusals give it.
pub(crate) fn validate_class(
    operation: &str,
    class: &DynamicObject,
    name: &str,
    classes: &[&DynamicObject],
) -> Result<(), Status> {
    if class.data.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let Some(default) = default_class(classes) else { return Ok(()) };
    let default_name = default.metadata.name.as_deref().unwrap_or_default();
    if operation == "create" || default_name != class.metadata.name.as_deref().unwrap_or_default() {
        let why =
            format!("PriorityClass {default_name} is already marked as default. Only one default can exist");
        return Err(errors::forbidden("scheduling.k8s.io", "priorityclasses", name, &why));
    }
    Ok(())
}

/// `getDefaultPriorityClass`: the `globalDefault` class of the lowest value (the first in name
/// order among equals, where upstream takes its lister's first).
fn default_class<'c>(classes: &[&'c DynamicObject]) -> Option<&'c DynamicObject> {
    let defaults =
        classes.iter().filter(|c| c.data.get("globalDefault").and_then(Value::as_bool) == Some(true));
    defaults.min_by_key(|c| value(c)).copied()
}

/// `getDefaultPriority`: the default class's, else no class, priority 0 and
/// `PreemptLowerPriority`.
fn default_priority<'c>(classes: &[&'c DynamicObject]) -> Resolved<'c> {
    match default_class(classes) {
        Some(class) => resolve(class),
        None => Resolved {
            class: "",
            priority: PRIORITY_WITHOUT_DEFAULT_CLASS,
            preemption_policy: Some(PREEMPT_LOWER_PRIORITY),
        },
    }
}

fn resolve(class: &DynamicObject) -> Resolved<'_> {
    Resolved {
        class: class.metadata.name.as_deref().unwrap_or_default(),
        priority: value(class),
        preemption_policy: class.data.get("preemptionPolicy").and_then(Value::as_str),
    }
}

fn value(class: &DynamicObject) -> i64 {
    class.data.get("value").and_then(Value::as_i64).unwrap_or_default()
}
