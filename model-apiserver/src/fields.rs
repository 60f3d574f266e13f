//! Selectable fields per kind: which labels a field selector may name, and what an object's
//! value is for each.
//!
//! kube-apiserver decides this in two places, both followed here. The kind's field label
//! conversion (`AddFieldLabelConversionFunc` in `pkg/apis/<group>/<version>/conversion.go`, or
//! apimachinery's `DefaultMetaV1FieldSelectorConversion` for every kind without one) accepts or
//! rejects a label, with a message of its own, and may rename it (`spec.host`, the events.k8s.io
//! names of core Event fields). The registry's `GetAttrs`/`ToSelectableFields`
//! (`pkg/registry/...`) then gives each object's values: a string, `"true"`/`"false"` for a
//! bool, a decimal for a number, and `""` for an absent field.
//!
//! Services accept only `metadata.name` and `metadata.namespace` here: `spec.clusterIP` and
//! `spec.type` became selectable after the release the conformance corpus was recorded from
//! (and are not listed as drift in its `excluded.json`).

use std::borrow::Cow;

use kube_core::DynamicObject;
use serde_json::Value;

use crate::events;

/// The field selection rules of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SelectableFields {
    /// `metadata.name` and `metadata.namespace` only (apimachinery's default conversion, also
    /// for cluster-scoped kinds).
    #[default]
    Metadata,
    /// core/v1 Pod: node, restart policy, scheduler, service account, host network, phase, IP,
    /// nominated node.
    Pod,
    /// core/v1 Node: `metadata.name` and `spec.unschedulable` (no namespace).
    Node,
    /// core/v1 Namespace: `metadata.name` and `status.phase` (no namespace).
    Namespace,
    /// core/v1 Secret: `type`.
    Secret,
    /// core/v1 ReplicationController: `status.replicas`.
    ReplicationController,
    /// apps/v1 ReplicaSet: `status.replicas`.
    ReplicaSet,
    /// batch/v1 Job: `status.successful` (the count of succeeded pods).
    Job,
    /// core/v1 Event: `involvedObject.*`, `reason`, `reportingComponent`, `source`, `type`.
    CoreEvent,
    /// events.k8s.io/v1 Event: the same fields under their events.k8s.io names (`regarding.*`,
    /// `reportingController`), stored as core Events.
    EventsEvent,
    /// A custom resource: `metadata.name`, `metadata.namespace` when namespaced, and the
    /// version's `selectableFields` (labels without the JSON path's leading dot).
    Custom {
        /// Whether the kind is namespaced (`metadata.namespace` is selectable only then).
        namespaced: bool,
        /// The selectable labels, e.g. `spec.color`.
        labels: Vec<String>,
    },
}

/// The core Event fields both Event APIs select on (the `involvedObject.` suffixes).
const INVOLVED_OBJECT_FIELDS: &[&str] =
    &["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"];

/// The Pod labels the conversion accepts (`status.podIPs` is accepted but not in the field set,
/// so it selects as the empty string, as upstream).
const POD_LABELS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];

impl SelectableFields {
    /// The rules of the built-in kind `kind` of `group`.
    pub fn builtin(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "Pod") => SelectableFields::Pod,
            ("", "Node") => SelectableFields::Node,
            ("", "Namespace") => SelectableFields::Namespace,
            ("", "Secret") => SelectableFields::Secret,
            ("", "ReplicationController") => SelectableFields::ReplicationController,
            ("", "Event") => SelectableFields::CoreEvent,
            ("apps", "ReplicaSet") => SelectableFields::ReplicaSet,
            ("batch", "Job") => SelectableFields::Job,
            ("events.k8s.io", "Event") => SelectableFields::EventsEvent,
            _ => SelectableFields::Metadata,
        }
    }

    /// The field label conversion: the label the field set knows `label` by, or the message of
    /// the 400 the real server answers for it.
    pub fn convert<'a>(&self, label: &'a str) -> Result<Cow<'a, str>, String> {
        let not_supported = || format!("field label not supported: {label}");
        let accept = |ok: bool| if ok { Ok(Cow::Borrowed(label)) } else { Err(not_supported()) };
        match self {
            SelectableFields::Metadata => match label {
                "metadata.name" | "metadata.namespace" => Ok(Cow::Borrowed(label)),
                _ => Err(format!(
                    "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                )),
            },
            SelectableFields::Pod => match label {
                // Old v1 clients' name for spec.nodeName.
                "spec.host" => Ok(Cow::Borrowed("spec.nodeName")),
                _ => accept(POD_LABELS.contains(&label)),
            },
            SelectableFields::Node => accept(matches!(label, "metadata.name" | "spec.unschedulable")),
            SelectableFields::Namespace => accept(matches!(label, "metadata.name" | "status.phase")),
            SelectableFields::Secret => {
                accept(matches!(label, "metadata.name" | "metadata.namespace" | "type"))
            }
            SelectableFields::ReplicationController | SelectableFields::ReplicaSet => {
                accept(matches!(label, "metadata.name" | "metadata.namespace" | "status.replicas"))
            }
            SelectableFields::Job => match label {
                "metadata.name" | "metadata.namespace" | "status.successful" => Ok(Cow::Borrowed(label)),
                _ => Err(format!("field label {label:?} not supported for batchv1.Job")),
            },
            SelectableFields::CoreEvent => {
                let involved = label
                    .strip_prefix("involvedObject.")
                    .is_some_and(|f| INVOLVED_OBJECT_FIELDS.contains(&f));
                accept(
                    involved
                        || matches!(
                            label,
                            "metadata.name"
                                | "metadata.namespace"
                                | "reason"
                                | "reportingComponent"
                                | "source"
                                | "type"
                        ),
                )
            }
            SelectableFields::EventsEvent => {
                if let Some(f) = label.strip_prefix("regarding.") {
                    return if INVOLVED_OBJECT_FIELDS.contains(&f) {
                        Ok(Cow::Owned(format!("involvedObject.{f}")))
                    } else {
                        Err(not_supported())
                    };
                }
                match label {
                    "reportingController" => Ok(Cow::Borrowed("reportingComponent")),
                    "metadata.name" | "metadata.namespace" | "reason" | "source" | "type" => {
                        Ok(Cow::Borrowed(label))
                    }
                    _ => Err(not_supported()),
                }
            }
            SelectableFields::Custom { namespaced, labels } => accept(
                label == "metadata.name"
                    || (*namespaced && label == "metadata.namespace")
                    || labels.iter().any(|l| l == label),
            ),
        }
    }

    /// The object's value for `label` (a label [`SelectableFields::convert`] returned), as the
    /// registry's field set has it: `""` when the field is absent.
    pub fn value(&self, label: &str, object: &DynamicObject) -> String {
        let meta = &object.metadata;
        match label {
            "metadata.name" => return meta.name.clone().unwrap_or_default(),
            "metadata.namespace" => return meta.namespace.clone().unwrap_or_default(),
            _ => {}
        }
        let data = &object.data;
        let at = |pointer: &str| data.pointer(pointer).map(scalar).unwrap_or_default();
        match self {
            SelectableFields::Metadata => String::new(),
            SelectableFields::Pod => match label {
                "spec.hostNetwork" => bool_at(data, "/spec/hostNetwork"),
                // The internal type keeps only podIPs; a v1 object with podIP alone converts
                // into podIPs[0].
                "status.podIP" => data
                    .pointer("/status/podIPs/0/ip")
                    .or_else(|| data.pointer("/status/podIP"))
                    .map(scalar)
                    .unwrap_or_default(),
                "status.podIPs" => String::new(),
                other => at(&pointer_of(other)),
            },
            SelectableFields::Node => bool_at(data, "/spec/unschedulable"),
            SelectableFields::ReplicationController | SelectableFields::ReplicaSet => {
                number_at(data, "/status/replicas")
            }
            SelectableFields::Job => number_at(data, "/status/succeeded"),
            SelectableFields::CoreEvent | SelectableFields::EventsEvent => {
                let api_version = object.types.as_ref().map_or("v1", |t| t.api_version.as_str());
                core_event_value(label, data, api_version)
            }
            SelectableFields::Namespace | SelectableFields::Secret | SelectableFields::Custom { .. } => {
                at(&pointer_of(label))
            }
        }
    }
}

/// The value of an Event for a core label (the field set of both Event APIs is the core one),
/// the Event being stored in the shape of `api_version` (either API's).
fn core_event_value(label: &str, data: &Value, api_version: &str) -> String {
    let at = |label: &str| {
        data.pointer(&events::pointer_of_core_label(label, api_version)).map(scalar).unwrap_or_default()
    };
    match label {
        // The core registry's `source`: the old recorder's component, else the new one's
        // reporting controller.
        "source" => {
            let component = at("source.component");
            if component.is_empty() { at("reportingComponent") } else { component }
        }
        other => at(other),
    }
}

/// `a.b.c` as the JSON pointer `/a/b/c`.
fn pointer_of(label: &str) -> String {
    label.split('.').map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1"))).collect()
}

/// A scalar as a field set holds it: strings as they are, bools and numbers printed.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A bool field, `"false"` when absent (Go's zero value).
fn bool_at(data: &Value, pointer: &str) -> String {
    data.pointer(pointer).and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// An integer field, `"0"` when absent (Go's zero value).
fn number_at(data: &Value, pointer: &str) -> String {
    data.pointer(pointer).and_then(Value::as_i64).unwrap_or(0).to_string()
}
