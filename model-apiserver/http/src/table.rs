//! `as=Table` answers for `kubectl get`: a `meta.k8s.io/v1` Table whose columns are the ones
//! kube-apiserver prints.
//!
//! - A custom resource gets its CRD's `additionalPrinterColumns` for the served version, after
//!   Name; a CRD that lists none gets Age, as apiextensions-apiserver serves it.
//! - The built-in kinds get the columns of kube-apiserver's printers
//!   (`pkg/printers/internalversion/printers.go`), computed from the stored object.
//! - Every other kind (the CustomResourceDefinitions themselves, events.k8s.io Events) gets the
//!   default convertor's Name and Created At (an RFC 3339 time), as kube-apiserver serves them.
//!
//! Each row's `object` is what the request's `includeObject` asks for (`TableOptions`,
//! apiserver's `transformObject`): `Metadata` (the default) the object's `PartialObjectMetadata`,
//! which `kubectl get -o name` reads; `Object` the whole object, which `kubectl get --sort-by`
//! sorts on; `None` nothing. A watch asked for a Table gets one Table of one row per event, with
//! the column definitions only on the first ([`Watch`]), as kube-apiserver sends them.

use std::sync::Arc;

use hyper::header::HeaderMap;
use kube_core::{DynamicObject, Status};
use model_apiserver::ResourceType;
use serde_json::{Map, Value, json};

/// Whether the client asked for a Table (kubectl's `Accept: application/json;as=Table;...`).
pub fn wanted(headers: &HeaderMap) -> bool {
    super::handler::accept(headers).split(',').next().is_some_and(|first| first.contains("as=Table"))
}

/// What each row carries as its `object` (`metav1.IncludeObjectPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    /// `includeObject=Object`: the whole object, with its apiVersion and kind.
    Object,
    /// `includeObject=Metadata`, the default: its `PartialObjectMetadata`.
    Metadata,
    /// `includeObject=None`: no object.
    None,
}

impl Include {
    /// The request's `includeObject`, read only when a Table is served (as the real server
    /// decodes `TableOptions` only then); an unknown value is 400 BadRequest.
    pub fn from_query(value: Option<&str>) -> Result<Include, Status> {
        match value.unwrap_or_default() {
            "Object" => Ok(Include::Object),
            "Metadata" | "" => Ok(Include::Metadata),
            "None" => Ok(Include::None),
            other => Err(model_apiserver::errors::bad_request(&format!(
                "unrecognized includeObject value: {other:?}"
            ))),
        }
    }
}

/// How a Table is made for one request: its kind's columns, what its rows carry, and (for a
/// watch) whether the column definitions are still to be sent.
pub struct Options<'a> {
    /// The type served.
    pub ty: &'a ResourceType,
    /// The CustomResourceDefinition serving `ty` when it is a custom resource (its columns are
    /// read from it).
    pub crd: Option<&'a DynamicObject>,
    /// What each row's `object` is.
    pub include: Include,
    /// Whether the Table carries its `columnDefinitions` (a watch's later events do not).
    pub headers: bool,
}

/// How a column's cell is computed from the object (as JSON).
enum Source {
    /// Computed by a built-in printer.
    Printer(fn(&Value, jiff::Timestamp) -> Value),
    /// A CRD column's JSONPath, converted by the column's type.
    Path(String),
}

/// One column: its definition as sent and how its cells are made.
struct Column {
    definition: Value,
    source: Source,
}

fn column(
    name: &str,
    kind: &str,
    priority: i64,
    description: &str,
    f: fn(&Value, jiff::Timestamp) -> Value,
) -> Column {
    let format = if name == "Name" { "name" } else { "" };
    Column {
        definition: json!({
            "name": name, "type": kind, "format": format, "description": description, "priority": priority,
        }),
        source: Source::Printer(f),
    }
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace.";
const AGE_DESCRIPTION: &str = "CreationTimestamp is the time the object was created.";

fn name_column() -> Column {
    column("Name", "string", 0, NAME_DESCRIPTION, |o, _| json!(text(o, &["metadata", "name"])))
}

fn age_column() -> Column {
    column("Age", "string", 0, AGE_DESCRIPTION, |o, now| json!(creation_age(o, now)))
}

/// The Table of `items`; `now` is the wall clock the ages are counted from.
pub fn table(
    options: &Options<'_>,
    items: &[Arc<DynamicObject>],
    metadata: Value,
    now: jiff::Timestamp,
) -> Value {
    let columns = columns(options.ty, options.crd);
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let value = serde_json::to_value(&**o).unwrap_or(Value::Null);
            let cells: Vec<Value> = columns.iter().map(|c| cell(c, &value, now)).collect();
            let object = match options.include {
                // Go's `RawExtension` of no object encodes as null.
                Include::None => Value::Null,
                Include::Object => whole_object(options.ty, value),
                Include::Metadata => {
                    let mut meta = serde_json::to_value(&o.metadata).unwrap_or(Value::Null);
                    if let Value::Object(m) = &mut meta {
                        m.remove("managedFields");
                    }
                    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
                }
            };
            json!({ "cells": cells, "object": object })
        })
        .collect();
    // Without headers the Go slice is nil: `null`, not left out.
    let definitions: Option<Vec<&Value>> =
        options.headers.then(|| columns.iter().map(|c| &c.definition).collect());
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// A row's whole object, typed with its served version and kind as the real server's embedded
/// encoder types it.
fn whole_object(ty: &ResourceType, mut value: Value) -> Value {
    if let Value::Object(m) = &mut value {
        m.insert("apiVersion".into(), json!(ty.api.api_version));
        m.insert("kind".into(), json!(ty.api.kind));
    }
    value
}

fn cell(column: &Column, object: &Value, now: jiff::Timestamp) -> Value {
    match &column.source {
        Source::Printer(f) => f(object, now),
        Source::Path(path) => {
            let kind = column.definition["type"].as_str().unwrap_or("string");
            typed_cell(kind, &jsonpath::find(object, path), now)
        }
    }
}

/// The columns of `ty`.
fn columns(ty: &ResourceType, crd: Option<&DynamicObject>) -> Vec<Column> {
    if ty.custom {
        return crd_columns(&ty.api.version, crd);
    }
    if ty.api.group.is_empty() && ty.api.kind == "Event" {
        // Events lead with when they were seen; their (generated) name is a wide column, last.
        let mut columns = printers::event();
        columns.push(Column { definition: with_priority(name_column().definition, 1), ..name_column() });
        return columns;
    }
    let mut columns = vec![name_column()];
    match (ty.api.group.as_str(), ty.api.kind.as_str()) {
        ("", "Pod") => columns.extend(printers::pod()),
        ("apps", "Deployment") => columns.extend(printers::deployment()),
        ("apps", "ReplicaSet") => columns.extend(printers::replica_set()),
        ("apps", "StatefulSet") => columns.extend(printers::stateful_set()),
        ("apps", "DaemonSet") => columns.extend(printers::daemon_set()),
        ("batch", "CronJob") => columns.extend(printers::cron_job()),
        ("", "Service") => columns.extend(printers::service()),
        ("", "Namespace") => columns.extend(printers::namespace()),
        ("", "ConfigMap") => columns.extend(printers::config_map()),
        ("", "Secret") => columns.extend(printers::secret()),
        ("batch", "Job") => columns.extend(printers::job()),
        ("", "PersistentVolumeClaim") => columns.extend(more::persistent_volume_claim()),
        ("policy", "PodDisruptionBudget") => columns.extend(more::pod_disruption_budget()),
        ("autoscaling", "HorizontalPodAutoscaler") => columns.extend(more::horizontal_pod_autoscaler()),
        ("networking.k8s.io", "Ingress") => columns.extend(more::ingress()),
        ("networking.k8s.io", "IngressClass") => columns.extend(more::ingress_class()),
        ("networking.k8s.io", "NetworkPolicy") => columns.extend(more::network_policy()),
        ("", "Node") => columns.extend(more::node()),
        ("", "PersistentVolume") => columns.extend(more::persistent_volume()),
        ("storage.k8s.io", "StorageClass") => {
            // The default class is marked on its name, so the Name column is the printer's own.
            columns = more::storage_class();
        }
        ("", "ServiceAccount") => columns.extend(more::service_account()),
        ("", "Endpoints") => columns.extend(more::endpoints()),
        ("discovery.k8s.io", "EndpointSlice") => columns.extend(more::endpoint_slice()),
        ("coordination.k8s.io", "Lease") => columns.extend(more::lease()),
        ("scheduling.k8s.io", "PriorityClass") => columns.extend(more::priority_class()),
        ("apps", "ControllerRevision") => columns.extend(more::controller_revision()),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            columns.extend(more::role_binding());
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => {
            columns.extend(more::webhook_configuration());
        }
        ("", "ResourceQuota") => columns.extend(more::resource_quota()),
        ("", "PodTemplate") => columns.extend(more::pod_template()),
        // kube-apiserver's default table convertor, for the kinds printers.go has no printer for.
        _ => columns.extend(more::created_at()),
    }
    columns
}

/// A column definition shown only in wide output.
fn with_priority(mut definition: Value, priority: i64) -> Value {
    definition["priority"] = json!(priority);
    definition
}

/// Name, then the served version's `additionalPrinterColumns`; Age alone when it lists none
/// (apiextensions-apiserver's default columns).
fn crd_columns(version: &str, crd: Option<&DynamicObject>) -> Vec<Column> {
    let listed: Vec<Value> = crd
        .and_then(|crd| crd.data.pointer("/spec/versions"))
        .and_then(Value::as_array)
        .and_then(|versions| versions.iter().find(|v| v["name"].as_str() == Some(version)))
        .and_then(|v| v["additionalPrinterColumns"].as_array())
        .cloned()
        .unwrap_or_default();
    let mut columns = vec![name_column()];
    if listed.is_empty() {
        columns.push(Column {
            definition: json!({"name": "Age", "type": "date", "format": "", "description": AGE_DESCRIPTION, "priority": 0}),
            source: Source::Path(".metadata.creationTimestamp".to_owned()),
        });
    }
    for c in listed {
        let Some(path) = c["jsonPath"].as_str() else { continue };
        let mut definition = Map::new();
        definition.insert("name".into(), json!(c["name"].as_str().unwrap_or("")));
        definition.insert("type".into(), json!(c["type"].as_str().unwrap_or("string")));
        definition.insert("format".into(), json!(c["format"].as_str().unwrap_or("")));
        definition.insert("description".into(), json!(c["description"].as_str().unwrap_or("")));
        definition.insert("priority".into(), json!(c["priority"].as_i64().unwrap_or(0)));
        columns.push(Column { definition: Value::Object(definition), source: Source::Path(path.to_owned()) });
    }
    columns
}

/// A CRD column's cell: nothing found is a null cell (kubectl prints `<none>`); one result is
/// converted by the column's type; several are joined with commas.
// `pub` (hidden from the docs) for its test in tests/it/table.rs only.
#[doc(hidden)]
pub fn typed_cell(kind: &str, found: &[&Value], now: jiff::Timestamp) -> Value {
    match found {
        [] => Value::Null,
        [one] => match (kind, one) {
            ("integer", Value::Number(n)) => n.as_i64().map_or(Value::Null, Value::from),
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
            ("boolean", Value::Bool(b)) => json!(b),
            ("date", Value::String(s)) => {
                json!(s.parse::<jiff::Timestamp>().map_or("<invalid>".to_owned(), |t| age(now, t)))
            }
            ("integer" | "number" | "boolean" | "date", _) => Value::Null,
            (_, Value::String(s)) => json!(s),
            (_, other) => json!(other.to_string()),
        },
        many => json!(many.iter().map(|v| plain(v)).collect::<Vec<_>>().join(",")),
    }
}

/// A JSON value as kubectl's JSONPath prints it: strings bare, everything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The string at `path`, or "".
fn text(object: &Value, path: &[&str]) -> String {
    at(object, path).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The value at `path`.
fn at<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, key| v.get(key))
}

/// The integer at `path`, or 0 (an unset count).
fn count(object: &Value, path: &[&str]) -> i64 {
    at(object, path).and_then(Value::as_i64).unwrap_or(0)
}

fn creation_age(object: &Value, now: jiff::Timestamp) -> String {
    since(object, &["metadata", "creationTimestamp"], now)
}

/// The age of the timestamp at `path`; `<unknown>` when unset, as kubectl prints it.
fn since(object: &Value, path: &[&str], now: jiff::Timestamp) -> String {
    at(object, path)
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map_or("<unknown>".to_owned(), |t| age(now, t))
}

/// An age as the printers write it (`translateTimestampSince`, apimachinery's
/// `duration.HumanDuration`): `90s`, `5m30s`, `42m`, `5h12m`, `20h`, `3d4h`, `30d`, `2y15d`.
pub fn age(now: jiff::Timestamp, created: jiff::Timestamp) -> String {
    let seconds = now.as_second().saturating_sub(created.as_second());
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let days = hours / 24;
    let either =
        |whole: String, part: i64, unit: &str| if part == 0 { whole } else { format!("{whole}{part}{unit}") };
    match seconds {
        s if s < 120 => format!("{s}s"),
        _ if minutes < 10 => either(format!("{minutes}m"), seconds % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => either(format!("{hours}h"), minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => either(format!("{days}d"), hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 => either(format!("{}y", days / 365), days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

/// The built-in kinds' columns after Name, as kube-apiserver's printers define them.
mod printers {
    use serde_json::{Value, json};

    use super::{Column, age_column, at, column, count, since, text};

    /// core/v1 Events: Last Seen, Type, Reason, Object, Message; wide: Subobject, Source, First
    /// Seen, Count (then Name), as kube-apiserver's event printer.
    pub(super) fn event() -> Vec<Column> {
        fn first_seen(o: &Value, now: jiff::Timestamp) -> String {
            match at(o, &["firstTimestamp"]).filter(|v| !v.is_null()) {
                Some(_) => super::since(o, &["firstTimestamp"], now),
                None => super::since(o, &["eventTime"], now),
            }
        }
        fn last_seen(o: &Value, now: jiff::Timestamp) -> String {
            if at(o, &["series", "lastObservedTime"]).is_some_and(Value::is_string) {
                return super::since(o, &["series", "lastObservedTime"], now);
            }
            match at(o, &["lastTimestamp"]).filter(|v| !v.is_null()) {
                Some(_) => super::since(o, &["lastTimestamp"], now),
                None => first_seen(o, now),
            }
        }
        vec![
            column("Last Seen", "string", 0, "", |o, now| json!(last_seen(o, now))),
            column("Type", "string", 0, "", |o, _| json!(text(o, &["type"]))),
            column("Reason", "string", 0, "", |o, _| json!(text(o, &["reason"]))),
            column("Object", "string", 0, "", |o, _| {
                let kind = text(o, &["involvedObject", "kind"]).to_lowercase();
                json!(format!("{kind}/{}", text(o, &["involvedObject", "name"])))
            }),
            column("Subobject", "string", 1, "", |o, _| json!(text(o, &["involvedObject", "fieldPath"]))),
            column("Source", "string", 1, "", |o, _| {
                let component = text(o, &["source", "component"]);
                let host = text(o, &["source", "host"]);
                json!(if host.is_empty() { component } else { format!("{component}, {host}") })
            }),
            column("Message", "string", 0, "", |o, _| json!(text(o, &["message"]))),
            column("First Seen", "string", 1, "", |o, now| json!(first_seen(o, now))),
            column("Count", "string", 1, "", |o, _| json!(count(o, &["count"]))),
        ]
    }

    /// Pods: Ready, Status, Restarts, Age; wide: IP, Node, Nominated Node, Readiness Gates
    /// (`printPod`).
    pub(super) fn pod() -> Vec<Column> {
        vec![
            column(
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
                |o, now| json!(pod_row(o, now).ready),
            ),
            column("Status", "string", 0, "The aggregate status of the containers in this pod.", |o, now| {
                json!(pod_row(o, now).status)
            }),
            column(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                |o, now| json!(pod_row(o, now).restarts),
            ),
            age_column(),
            column(
                "IP",
                "string",
                1,
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                |o, _| {
                    let first =
                        at(o, &["status", "podIPs"]).and_then(Value::as_array).and_then(|ips| ips.first());
                    json!(none_if_empty(first.map(|ip| text(ip, &["ip"])).unwrap_or_default()))
                },
            ),
            column("Node", "string", 1, "Name of the Node this pod is assigned to.", |o, _| {
                json!(none_if_empty(text(o, &["spec", "nodeName"])))
            }),
            column(
                "Nominated Node",
                "string",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
                |o, _| json!(none_if_empty(text(o, &["status", "nominatedNodeName"]))),
            ),
            column(
                "Readiness Gates",
                "string",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
                |o, _| json!(readiness_gates(o)),
            ),
        ]
    }

    /// What `printPod` prints of a Pod.
    struct PodRow {
        ready: String,
        status: String,
        restarts: String,
    }

    fn list<'a>(o: &'a Value, path: &[&str]) -> impl Iterator<Item = &'a Value> + Clone {
        at(o, path).and_then(Value::as_array).into_iter().flatten()
    }

    /// A container's last termination's `finishedAt`, if it restarted.
    fn last_restart(c: &Value) -> Option<jiff::Timestamp> {
        c.pointer("/lastState/terminated/finishedAt").and_then(Value::as_str).and_then(|t| t.parse().ok())
    }

    /// `printPod`: the ready containers (sidecars, `restartPolicy: Always` init containers,
    /// count), the status (an init container's progress `Init:1/3` or failure, else the last
    /// reason among the containers', `NotReady`, `Terminating`), and the restarts with how long
    /// ago the last one was.
    fn pod_row(o: &Value, now: jiff::Timestamp) -> PodRow {
        let phase = text(o, &["status", "phase"]);
        let mut reason = text(o, &["status", "reason"]);
        if reason.is_empty() {
            reason = phase.clone();
        }
        let conditions = list(o, &["status", "conditions"]);
        let condition_is = |type_: &str, status: &str| {
            conditions.clone().any(|c| text(c, &["type"]) == type_ && text(c, &["status"]) == status)
        };
        if conditions
            .clone()
            .any(|c| text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated")
        {
            reason = "SchedulingGated".to_owned();
        }
        let spec_inits: Vec<&Value> = list(o, &["spec", "initContainers"]).collect();
        let sidecar = |name: &str| {
            spec_inits.iter().any(|c| text(c, &["name"]) == name && text(c, &["restartPolicy"]) == "Always")
        };
        let mut total = list(o, &["spec", "containers"]).count();
        total += spec_inits.iter().filter(|c| text(c, &["restartPolicy"]) == "Always").count();
        let mut ready = 0;
        let mut restarts = 0;
        let mut last: Option<jiff::Timestamp> = None;
        let mut sidecar_restarts = 0;
        let mut sidecar_last: Option<jiff::Timestamp> = None;
        let state = |c: &Value, path: &str| c.pointer(path).cloned();
        let mut initializing = false;
        let inits: Vec<&Value> = list(o, &["status", "initContainerStatuses"]).collect();
        for (i, c) in inits.iter().enumerate() {
            let name = text(c, &["name"]);
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            last = last.max(last_restart(c));
            if sidecar(&name) {
                sidecar_restarts += c["restartCount"].as_i64().unwrap_or(0);
                sidecar_last = sidecar_last.max(last_restart(c));
            }
            let terminated = state(c, "/state/terminated");
            let waiting_reason = c.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or("");
            if terminated.as_ref().is_some_and(|t| t["exitCode"].as_i64() == Some(0)) {
                continue;
            }
            if sidecar(&name) && c["started"].as_bool() == Some(true) {
                if c["ready"].as_bool() == Some(true) {
                    ready += 1;
                }
                continue;
            }
            reason = match terminated {
                Some(t) => match t["reason"].as_str().filter(|r| !r.is_empty()) {
                    Some(r) => format!("Init:{r}"),
                    None => match t["signal"].as_i64().filter(|s| *s != 0) {
                        Some(signal) => format!("Init:Signal:{signal}"),
                        None => format!("Init:ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
                    },
                },
                None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                    format!("Init:{waiting_reason}")
                }
                None => format!("Init:{i}/{}", spec_inits.len()),
            };
            initializing = true;
            break;
        }
        if !initializing || condition_is("Initialized", "True") {
            restarts = sidecar_restarts;
            last = sidecar_last;
            let mut running = false;
            for c in list(o, &["status", "containerStatuses"]).collect::<Vec<_>>().into_iter().rev() {
                restarts += c["restartCount"].as_i64().unwrap_or(0);
                last = last.max(last_restart(c));
                let waiting_reason = c.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or("");
                let terminated = state(c, "/state/terminated");
                if !waiting_reason.is_empty() {
                    reason = waiting_reason.to_owned();
                } else if let Some(t) = terminated {
                    reason = match t["reason"].as_str().filter(|r| !r.is_empty()) {
                        Some(r) => r.to_owned(),
                        None => match t["signal"].as_i64().filter(|s| *s != 0) {
                            Some(signal) => format!("Signal:{signal}"),
                            None => format!("ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
                        },
                    };
                } else if c["ready"].as_bool() == Some(true) && c.pointer("/state/running").is_some() {
                    running = true;
                    ready += 1;
                }
            }
            if reason == "Completed" && running {
                reason = if condition_is("Ready", "True") { "Running" } else { "NotReady" }.to_owned();
            }
        }
        let deleting = at(o, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null());
        if deleting && text(o, &["status", "reason"]) == "NodeLost" {
            reason = "Unknown".to_owned();
        } else if deleting && phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_owned();
        }
        let restarts = match last {
            Some(at) if restarts != 0 => format!("{restarts} ({} ago)", super::age(now, at)),
            _ => restarts.to_string(),
        };
        PodRow { ready: format!("{ready}/{total}"), status: reason, restarts }
    }

    /// `<none>`, or how many of the readiness gates' conditions are `True`, of how many.
    fn readiness_gates(o: &Value) -> String {
        let gates: Vec<String> =
            list(o, &["spec", "readinessGates"]).map(|g| text(g, &["conditionType"])).collect();
        if gates.is_empty() {
            return "<none>".to_owned();
        }
        let conditions = list(o, &["status", "conditions"]);
        let met = gates
            .iter()
            .filter(|g| {
                conditions.clone().any(|c| text(c, &["type"]) == **g && text(c, &["status"]) == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    }

    fn none_if_empty(s: String) -> String {
        if s.is_empty() { "<none>".to_owned() } else { s }
    }

    /// Deployments: Ready, Up-to-date, Available, Age.
    pub(super) fn deployment() -> Vec<Column> {
        vec![
            column("Ready", "string", 0, "Number of the pod with ready state", |o, _| {
                json!(format!(
                    "{}/{}",
                    count(o, &["status", "readyReplicas"]),
                    count(o, &["spec", "replicas"])
                ))
            }),
            column(
                "Up-to-date",
                "string",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                |o, _| json!(count(o, &["status", "updatedReplicas"])),
            ),
            column(
                "Available",
                "string",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                |o, _| json!(count(o, &["status", "availableReplicas"])),
            ),
            age_column(),
        ]
    }

    /// ReplicaSets: Desired, Current, Ready, Age.
    pub(super) fn replica_set() -> Vec<Column> {
        vec![
            column("Desired", "integer", 0, "Number of desired pods.", |o, _| {
                json!(count(o, &["spec", "replicas"]))
            }),
            column("Current", "integer", 0, "Number of actual pods.", |o, _| {
                json!(count(o, &["status", "replicas"]))
            }),
            column("Ready", "integer", 0, "Number of ready pods.", |o, _| {
                json!(count(o, &["status", "readyReplicas"]))
            }),
            age_column(),
        ]
    }

    /// StatefulSets: Ready, Age.
    pub(super) fn stateful_set() -> Vec<Column> {
        vec![
            column("Ready", "string", 0, "Number of the pod with ready state", |o, _| {
                json!(format!(
                    "{}/{}",
                    count(o, &["status", "readyReplicas"]),
                    count(o, &["spec", "replicas"])
                ))
            }),
            age_column(),
        ]
    }

    /// Services: Type, Cluster-IP, External-IP, Port(s), Age.
    pub(super) fn service() -> Vec<Column> {
        vec![
            column("Type", "string", 0, "The type of the service.", |o, _| json!(text(o, &["spec", "type"]))),
            column("Cluster-IP", "string", 0, "The cluster IP of the service.", |o, _| {
                json!(none_if_empty(text(o, &["spec", "clusterIP"])))
            }),
            column("External-IP", "string", 0, "The external IP of the service.", |o, _| {
                json!(external_ip(o))
            }),
            column("Port(s)", "string", 0, "The ports of the service.", |o, _| {
                let ports: Vec<String> = at(o, &["spec", "ports"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        let protocol = p["protocol"].as_str().unwrap_or("TCP");
                        let port = p["port"].as_i64().unwrap_or(0);
                        match p["nodePort"].as_i64() {
                            Some(node) if node != 0 => format!("{port}:{node}/{protocol}"),
                            _ => format!("{port}/{protocol}"),
                        }
                    })
                    .collect();
                json!(none_if_empty(ports.join(",")))
            }),
            age_column(),
        ]
    }

    fn external_ip(o: &Value) -> String {
        let strings = |path: &[&str]| -> Vec<String> {
            at(o, path)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let external = strings(&["spec", "externalIPs"]);
        match text(o, &["spec", "type"]).as_str() {
            "ExternalName" => text(o, &["spec", "externalName"]),
            "LoadBalancer" => {
                let mut ips: Vec<String> = at(o, &["status", "loadBalancer", "ingress"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["ip"].as_str().or(i["hostname"].as_str()).map(str::to_owned))
                    .collect();
                ips.extend(external);
                if ips.is_empty() { "<pending>".to_owned() } else { ips.join(",") }
            }
            _ if !external.is_empty() => external.join(","),
            _ => "<none>".to_owned(),
        }
    }

    /// Namespaces: Status, Age.
    pub(super) fn namespace() -> Vec<Column> {
        vec![
            column("Status", "string", 0, "The status of the namespace", |o, _| {
                json!(text(o, &["status", "phase"]))
            }),
            age_column(),
        ]
    }

    fn entries(o: &Value, key: &str) -> usize {
        o.get(key).and_then(Value::as_object).map_or(0, serde_json::Map::len)
    }

    /// ConfigMaps: Data, Age.
    pub(super) fn config_map() -> Vec<Column> {
        vec![
            column("Data", "string", 0, "Data contains the configuration data.", |o, _| {
                json!(entries(o, "data") + entries(o, "binaryData"))
            }),
            age_column(),
        ]
    }

    /// Secrets: Type, Data, Age.
    pub(super) fn secret() -> Vec<Column> {
        vec![
            column("Type", "string", 0, "The type of the secret", |o, _| json!(text(o, &["type"]))),
            column("Data", "string", 0, "The number of entries in the secret", |o, _| {
                json!(entries(o, "data") + entries(o, "stringData"))
            }),
            age_column(),
        ]
    }

    /// DaemonSets: Desired, Current, Ready, Up-to-date, Available, Node Selector, Age.
    pub(super) fn daemon_set() -> Vec<Column> {
        vec![
            column(
                "Desired",
                "integer",
                0,
                "The number of nodes that should be running the daemon pod.",
                |o, _| json!(count(o, &["status", "desiredNumberScheduled"])),
            ),
            column(
                "Current",
                "integer",
                0,
                "The number of nodes running at least one daemon pod.",
                |o, _| json!(count(o, &["status", "currentNumberScheduled"])),
            ),
            column(
                "Ready",
                "integer",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
                |o, _| json!(count(o, &["status", "numberReady"])),
            ),
            column(
                "Up-to-date",
                "integer",
                0,
                "The total number of nodes that are running updated daemon pod",
                |o, _| json!(count(o, &["status", "updatedNumberScheduled"])),
            ),
            column(
                "Available",
                "integer",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
                |o, _| json!(count(o, &["status", "numberAvailable"])),
            ),
            column(
                "Node Selector",
                "string",
                0,
                "NodeSelector is a selector which must be true for the pod to fit on a node.",
                |o, _| {
                    let selector =
                        at(o, &["spec", "template", "spec", "nodeSelector"]).and_then(Value::as_object);
                    let pairs: Vec<String> = selector
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect();
                    json!(if pairs.is_empty() { "<none>".to_owned() } else { pairs.join(",") })
                },
            ),
            age_column(),
        ]
    }

    /// CronJobs: Schedule, Timezone, Suspend, Active, Last Schedule, Age.
    pub(super) fn cron_job() -> Vec<Column> {
        vec![
            column("Schedule", "string", 0, "The schedule in Cron format.", |o, _| {
                json!(text(o, &["spec", "schedule"]))
            }),
            column("Timezone", "string", 0, "The time zone name for the given schedule.", |o, _| {
                let zone = text(o, &["spec", "timeZone"]);
                json!(if zone.is_empty() { "<none>".to_owned() } else { zone })
            }),
            column(
                "Suspend",
                "boolean",
                0,
                "This flag tells the controller to suspend subsequent executions.",
                |o, _| {
                    let suspend = at(o, &["spec", "suspend"]).and_then(Value::as_bool).unwrap_or(false);
                    json!(if suspend { "True" } else { "False" })
                },
            ),
            column("Active", "integer", 0, "A list of pointers to currently running jobs.", |o, _| {
                json!(at(o, &["status", "active"]).and_then(Value::as_array).map_or(0, Vec::len))
            }),
            column(
                "Last Schedule",
                "date",
                0,
                "Information when was the last time the job was successfully scheduled.",
                |o, now| {
                    if at(o, &["status", "lastScheduleTime"]).is_some_and(|t| t.is_string()) {
                        json!(since(o, &["status", "lastScheduleTime"], now))
                    } else {
                        json!("<none>")
                    }
                },
            ),
            age_column(),
        ]
    }

    /// Jobs: Status, Completions, Duration, Age.
    pub(super) fn job() -> Vec<Column> {
        vec![
            column("Status", "string", 0, "Status of the job.", |o, _| json!(job_status(o))),
            column("Completions", "string", 0, "The completion status of the job.", |o, _| {
                let succeeded = count(o, &["status", "succeeded"]);
                let parallelism = count(o, &["spec", "parallelism"]);
                match at(o, &["spec", "completions"]).and_then(Value::as_i64) {
                    Some(completions) => json!(format!("{succeeded}/{completions}")),
                    None if parallelism > 1 => json!(format!("{succeeded}/1 of {parallelism}")),
                    None => json!(format!("{succeeded}/1")),
                }
            }),
            column("Duration", "string", 0, "Time required to complete the job.", |o, now| {
                let Some(start) = at(o, &["status", "startTime"]).and_then(Value::as_str) else {
                    return json!("");
                };
                let end = at(o, &["status", "completionTime"])
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                    .unwrap_or(now);
                match start.parse::<jiff::Timestamp>() {
                    Ok(start) => json!(super::age(end, start)),
                    Err(_) => json!(""),
                }
            }),
            age_column(),
        ]
    }

    /// The first true terminal condition, else Suspended, Terminating or Running.
    fn job_status(o: &Value) -> String {
        let conditions: Vec<&Value> =
            at(o, &["status", "conditions"]).and_then(Value::as_array).into_iter().flatten().collect();
        let holds = |kind: &str| conditions.iter().any(|c| c["type"] == kind && c["status"] == "True");
        for kind in ["Complete", "Failed", "SuccessCriteriaMet", "FailureTarget", "Suspended"] {
            if holds(kind) {
                return kind.to_owned();
            }
        }
        if at(o, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
            "Terminating".to_owned()
        } else {
            "Running".to_owned()
        }
    }
}

/// The printers of the kinds beyond the workloads: policy, autoscaling, networking, storage,
/// nodes, RBAC and admission (kube-apiserver's printers for them, cell for cell).
mod more;

/// The subset of Kubernetes JSONPath that printer columns use: `.field`, `['field']`, `[n]`
/// and `[*]`, optionally wrapped in `{...}`.
// `pub` (hidden from the docs) for its test in tests/it/table.rs only.
#[doc(hidden)]
pub mod jsonpath {
    use serde_json::Value;

    /// The most steps a path may have; a longer one finds nothing.
    const STEPS_MAX: usize = 64;

    enum Step {
        Field(String),
        Index(usize),
        All,
    }

    /// The values `path` selects in `object`; none when the path is malformed.
    pub fn find<'a>(object: &'a Value, path: &str) -> Vec<&'a Value> {
        let Some(steps) = parse(path) else { return Vec::new() };
        let mut found = vec![object];
        for step in &steps {
            found = found
                .into_iter()
                .flat_map(|v| -> Vec<&Value> {
                    match step {
                        Step::Field(f) => v.get(f.as_str()).into_iter().collect(),
                        Step::Index(i) => v.get(*i).into_iter().collect(),
                        Step::All => match v {
                            Value::Array(a) => a.iter().collect(),
                            Value::Object(m) => m.values().collect(),
                            _ => Vec::new(),
                        },
                    }
                })
                .collect();
        }
        found.retain(|v| !v.is_null());
        found
    }

    fn parse(path: &str) -> Option<Vec<Step>> {
        let mut rest = path.trim();
        if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            rest = inner.trim();
        }
        rest = rest.strip_prefix('$').unwrap_or(rest);
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if steps.len() >= STEPS_MAX {
                return None;
            }
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return None;
                }
                steps.push(Step::Field(r[..end].to_owned()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']')?;
                let inside = r[..end].trim();
                let quoted = inside
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                steps.push(match quoted {
                    Some(field) => Step::Field(field.to_owned()),
                    None if inside == "*" => Step::All,
                    None => Step::Index(inside.parse().ok()?),
                });
                rest = &r[end + 1..];
            } else {
                return None;
            }
        }
        Some(steps)
    }
}
