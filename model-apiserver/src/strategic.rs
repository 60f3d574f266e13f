//! Strategic merge patch for the built-in kinds, as apimachinery's `strategicpatch` applies it.
//!
//! A strategic merge patch is a JSON merge patch whose lists are merged element by element when
//! the Go type declares a merge key (`patchStrategy:"merge" patchMergeKey:"name"` on
//! `PodSpec.Containers`), and replaced whole otherwise. The merge keys come from the Kubernetes
//! API types' `patchMergeKey`/`patchStrategy` struct tags; [`FIELDS`] is the table of them for the
//! served built-in kinds. Lists without a tag are atomic (replaced), maps merge key by key, and
//! `null` deletes a key.
//!
//! Directives: `$patch: replace | delete` on a map, `$patch: replace | delete | merge` in a list
//! element, `$retainKeys`, `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>`.
//!
//! Custom resources have no Go type and so no patch tags: the real server answers 415 for them,
//! and that is the caller's decision ([`crate::patch`]); this module treats unknown kinds as having
//! no merge keys.

use kube_core::{ApiResource, Status};
use serde_json::{Map, Value};

use crate::errors;

/// How a field merges, from the Go type's `patchStrategy` and `patchMergeKey` tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// No tag: a map merges key by key, a list is replaced whole (atomic).
    Default,
    /// `patchStrategy:"merge"`: a list of objects merges by the merge key; a list of scalars
    /// (merge key `""`) is a set, and the patch's values are added to it.
    Merge(&'static str),
    /// `patchStrategy:"retainKeys"`: a union; keys not in `$retainKeys` are cleared.
    RetainKeys,
    /// `patchStrategy:"merge,retainKeys"` with a merge key (`PodSpec.Volumes`).
    MergeRetainKeys(&'static str),
}

impl Strategy {
    /// The merge key of a list merged element by element (`""` for a set of scalars).
    pub fn merge_key(self) -> Option<&'static str> {
        match self {
            Strategy::Merge(k) | Strategy::MergeRetainKeys(k) => Some(k),
            Strategy::Default | Strategy::RetainKeys => None,
        }
    }
}

/// One tagged field: in Go type `parent`, field `field` has Go type (or list element type) `ty`
/// (`""` when nothing below it is tagged) and merges by `strategy`.
#[derive(Debug)]
pub struct FieldMeta {
    /// The Go type holding the field (the kinds are named after themselves).
    pub parent: &'static str,
    /// The JSON field name.
    pub field: &'static str,
    /// The Go type of the field, or of its elements for a list.
    pub ty: &'static str,
    /// How it merges.
    pub strategy: Strategy,
}

const fn f(parent: &'static str, field: &'static str, ty: &'static str, strategy: Strategy) -> FieldMeta {
    FieldMeta { parent, field, ty, strategy }
}

use Strategy::{Default as Plain, Merge, MergeRetainKeys, RetainKeys};

/// The `patchStrategy`/`patchMergeKey` tags of the built-in kinds' Go types (k8s.io/api 1.33),
/// plus the plain fields that lead to tagged ones. Conditions of the workload kinds merge by
/// `type`; CustomResourceDefinition conditions carry no patch tag and are atomic.
pub const FIELDS: &[FieldMeta] = &[
    // metav1.ObjectMeta
    f("ObjectMeta", "ownerReferences", "", Merge("uid")),
    f("ObjectMeta", "finalizers", "", Merge("")),
    // core/v1
    f("Pod", "metadata", "ObjectMeta", Plain),
    f("Pod", "spec", "PodSpec", Plain),
    f("Pod", "status", "PodStatus", Plain),
    f("PodTemplateSpec", "metadata", "ObjectMeta", Plain),
    f("PodTemplateSpec", "spec", "PodSpec", Plain),
    f("PodSpec", "containers", "Container", Merge("name")),
    f("PodSpec", "initContainers", "Container", Merge("name")),
    f("PodSpec", "ephemeralContainers", "Container", Merge("name")),
    f("PodSpec", "volumes", "", MergeRetainKeys("name")),
    f("PodSpec", "imagePullSecrets", "", Merge("name")),
    f("PodSpec", "hostAliases", "", Merge("ip")),
    f("PodSpec", "topologySpreadConstraints", "", Merge("topologyKey")),
    f("PodSpec", "schedulingGates", "", Merge("name")),
    f("PodSpec", "resourceClaims", "", MergeRetainKeys("name")),
    f("Container", "env", "", Merge("name")),
    f("Container", "ports", "", Merge("containerPort")),
    f("Container", "volumeMounts", "", Merge("mountPath")),
    f("Container", "volumeDevices", "", Merge("devicePath")),
    f("PodStatus", "conditions", "", Merge("type")),
    f("PodStatus", "podIPs", "", Merge("ip")),
    f("PodStatus", "hostIPs", "", Merge("ip")),
    f("PodStatus", "resourceClaimStatuses", "", MergeRetainKeys("name")),
    f("Service", "metadata", "ObjectMeta", Plain),
    f("Service", "spec", "ServiceSpec", Plain),
    f("Service", "status", "ServiceStatus", Plain),
    f("ServiceSpec", "ports", "", Merge("port")),
    f("ServiceStatus", "conditions", "", Merge("type")),
    f("Namespace", "metadata", "ObjectMeta", Plain),
    f("Namespace", "status", "NamespaceStatus", Plain),
    f("NamespaceStatus", "conditions", "", Merge("type")),
    f("PersistentVolumeClaim", "metadata", "ObjectMeta", Plain),
    f("PersistentVolumeClaim", "status", "PersistentVolumeClaimStatus", Plain),
    f("PersistentVolumeClaimStatus", "conditions", "", Merge("type")),
    f("ServiceAccount", "metadata", "ObjectMeta", Plain),
    f("ServiceAccount", "secrets", "", Merge("name")),
    f("ConfigMap", "metadata", "ObjectMeta", Plain),
    f("Secret", "metadata", "ObjectMeta", Plain),
    // apps/v1
    f("Deployment", "metadata", "ObjectMeta", Plain),
    f("Deployment", "spec", "DeploymentSpec", Plain),
    f("Deployment", "status", "WorkloadStatus", Plain),
    f("DeploymentSpec", "template", "PodTemplateSpec", Plain),
    f("DeploymentSpec", "strategy", "", RetainKeys),
    f("ReplicaSet", "metadata", "ObjectMeta", Plain),
    f("ReplicaSet", "spec", "WorkloadSpec", Plain),
    f("ReplicaSet", "status", "WorkloadStatus", Plain),
    f("StatefulSet", "metadata", "ObjectMeta", Plain),
    f("StatefulSet", "spec", "WorkloadSpec", Plain),
    f("StatefulSet", "status", "WorkloadStatus", Plain),
    f("WorkloadSpec", "template", "PodTemplateSpec", Plain),
    f("WorkloadStatus", "conditions", "", Merge("type")),
    f("DaemonSet", "metadata", "ObjectMeta", Plain),
    f("DaemonSet", "spec", "WorkloadSpec", Plain),
    f("DaemonSet", "status", "WorkloadStatus", Plain),
    // batch/v1
    f("Job", "metadata", "ObjectMeta", Plain),
    f("Job", "spec", "WorkloadSpec", Plain),
    f("Job", "status", "WorkloadStatus", Plain),
    f("CronJob", "metadata", "ObjectMeta", Plain),
    f("CronJob", "spec", "CronJobSpec", Plain),
    f("CronJobSpec", "jobTemplate", "JobTemplateSpec", Plain),
    f("JobTemplateSpec", "spec", "WorkloadSpec", Plain),
    // policy/v1
    f("PodDisruptionBudget", "metadata", "ObjectMeta", Plain),
    f("PodDisruptionBudget", "spec", "PodDisruptionBudgetSpec", Plain),
    f("PodTemplate", "metadata", "ObjectMeta", Plain),
    f("PodTemplate", "template", "PodTemplateSpec", Plain),
    // autoscaling/v2
    f("HorizontalPodAutoscaler", "metadata", "ObjectMeta", Plain),
    f("HorizontalPodAutoscaler", "status", "HorizontalPodAutoscalerStatus", Plain),
    f("HorizontalPodAutoscalerStatus", "conditions", "", Merge("type")),
    // admissionregistration.k8s.io/v1
    f("ValidatingWebhookConfiguration", "metadata", "ObjectMeta", Plain),
    f("ValidatingWebhookConfiguration", "webhooks", "", Merge("name")),
    f("MutatingWebhookConfiguration", "metadata", "ObjectMeta", Plain),
    f("MutatingWebhookConfiguration", "webhooks", "", Merge("name")),
    // the rest: only metadata is tagged
    f("NetworkPolicy", "metadata", "ObjectMeta", Plain),
    f("IngressClass", "metadata", "ObjectMeta", Plain),
    f("StorageClass", "metadata", "ObjectMeta", Plain),
    f("EndpointSlice", "metadata", "ObjectMeta", Plain),
    f("Lease", "metadata", "ObjectMeta", Plain),
    f("Event", "metadata", "ObjectMeta", Plain),
    f("CustomResourceDefinition", "metadata", "ObjectMeta", Plain),
    // No patch tag below (a strategic merge replaces the conditions), but server-side apply
    // keys them by type (`+listType=map`, see `apply::list_keys`).
    f("CustomResourceDefinition", "status", "CustomResourceDefinitionStatus", Plain),
];

/// A position in the Go type tree: the Go type name (`""` = untagged, nothing below is known).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeRef(pub &'static str);

impl TypeRef {
    /// The root type of a kind: built-in kinds are named after themselves; custom resources and
    /// unknown kinds get an untagged root whose `metadata` is still ObjectMeta.
    pub fn root(resource: &ApiResource) -> TypeRef {
        match FIELDS.iter().find(|m| m.parent == resource.kind && is_builtin_group(&resource.group)) {
            Some(m) => TypeRef(m.parent),
            None => TypeRef(UNTAGGED_ROOT),
        }
    }
    /// The type and strategy of field `name` of this type.
    pub fn field(self, name: &str) -> (TypeRef, Strategy) {
        if self.0 == UNTAGGED_ROOT && name == "metadata" {
            return (TypeRef("ObjectMeta"), Strategy::Default);
        }
        FIELDS
            .iter()
            .find(|m| m.parent == self.0 && m.field == name)
            .map_or((TypeRef(""), Strategy::Default), |m| (TypeRef(m.ty), m.strategy))
    }
}

/// The root of a kind without Go types (custom resources): only `metadata` is known.
const UNTAGGED_ROOT: &str = "$untagged";

/// Whether `group` is one of the groups whose kinds [`FIELDS`] describes.
pub(crate) fn is_builtin_group(group: &str) -> bool {
    matches!(
        group,
        "" | "apps"
            | "batch"
            | "policy"
            | "autoscaling"
            | "networking.k8s.io"
            | "storage.k8s.io"
            | "discovery.k8s.io"
            | "admissionregistration.k8s.io"
            | "coordination.k8s.io"
            | "events.k8s.io"
            | "apiextensions.k8s.io"
    )
}

/// The directive key of a map or list element.
const PATCH_DIRECTIVE: &str = "$patch";
/// The keys a union (`retainKeys`) keeps.
const RETAIN_KEYS: &str = "$retainKeys";
/// Prefix of the order hint of a merged list.
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
/// Prefix of the values to remove from a merged list of scalars.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Apply the strategic merge patch `patch` to `original` (both whole objects of kind `resource`).
///
/// A patch that is not a JSON object, an unknown `$patch` directive, or a list element without
/// its declared merge key gets 400 BadRequest with apimachinery's message; nothing panics.
pub fn strategic_merge(original: &Value, patch: &Value, resource: &ApiResource) -> Result<Value, Status> {
    let Value::Object(patch) = patch else {
        return Err(errors::bad_request(&format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(patch)
        )));
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch, TypeRef::root(resource)).map(Value::Object)
}

/// Go's name for a JSON value's type in unmarshal errors.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Merge `patch` into the map `original` of Go type `ty`.
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    ty: TypeRef,
) -> Result<Map<String, Value>, Status> {
    match patch.get(PATCH_DIRECTIVE) {
        None => {}
        Some(Value::String(d)) if d == "replace" => return Ok(strip_directives(patch)),
        Some(Value::String(d)) if d == "delete" => return Ok(Map::new()),
        Some(other) => return Err(bad_patch_type(other)),
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(keep) = retain else {
            return Err(errors::bad_request("invalid patch: $retainKeys must be a list of strings"));
        };
        original.retain(|k, _| keep.iter().any(|kept| kept.as_str() == Some(k)));
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            delete_from_primitive_list(&mut original, field, value)?;
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            original.remove(key);
            continue;
        }
        let (field_ty, strategy) = ty.field(key);
        let merged = match (original.remove(key), value) {
            (Some(Value::Object(o)), Value::Object(p)) => Value::Object(merge_map(o, p, field_ty)?),
            (None, Value::Object(p)) => Value::Object(merge_map(Map::new(), p, field_ty)?),
            (Some(Value::Array(o)), Value::Array(p)) => Value::Array(merge_list(o, p, field_ty, strategy)?),
            (None, Value::Array(p)) => Value::Array(merge_list(Vec::new(), p, field_ty, strategy)?),
            (_, v) => v.clone(),
        };
        original.insert(key.clone(), merged);
    }
    for (key, order) in patch {
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            let merge_key = ty.field(field).1.merge_key().unwrap_or("");
            if let Some(Value::Array(list)) = original.get_mut(field) {
                reorder(list, order, merge_key);
            }
        }
    }
    Ok(original)
}

/// Merge the list `patch` into `original` by `strategy`.
fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    ty: TypeRef,
    strategy: Strategy,
) -> Result<Vec<Value>, Status> {
    let Some(merge_key) = strategy.merge_key() else {
        return Ok(patch.iter().map(strip_value).collect());
    };
    if merge_key.is_empty() || !patch.iter().all(Value::is_object) {
        // A set of scalars: add what the patch has and the list lacks.
        let mut merged = original;
        for v in patch {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        return Ok(merged);
    }
    // `{"$patch": "replace"}` as an element replaces the whole list with the other elements.
    if patch.iter().any(|e| e.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("replace")) {
        return Ok(patch.iter().filter(|e| e.get(PATCH_DIRECTIVE).is_none()).map(strip_value).collect());
    }
    let mut merged = original;
    for element in patch {
        let Value::Object(element) = element else { continue };
        let directive = element.get(PATCH_DIRECTIVE);
        if directive.is_some_and(|d| d.as_str() == Some("merge")) && element.len() == 1 {
            continue;
        }
        let Some(key_value) = element.get(merge_key) else {
            return Err(errors::bad_request(&format!(
                "map: {} does not contain declared merge key: {merge_key}",
                go_map(element)
            )));
        };
        let position = merged.iter().position(|o| o.get(merge_key) == Some(key_value));
        match directive.and_then(Value::as_str) {
            Some("delete") => merged.retain(|o| o.get(merge_key) != Some(key_value)),
            None | Some("merge") => match position {
                Some(i) => {
                    let existing = match merged[i].take() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    merged[i] = Value::Object(merge_map(existing, element, ty)?);
                }
                None => merged.push(Value::Object(merge_map(Map::new(), element, ty)?)),
            },
            Some(_) => return Err(bad_patch_type(&element[PATCH_DIRECTIVE])),
        }
    }
    Ok(merged)
}

/// `$deleteFromPrimitiveList/<field>`: remove these scalars from the list `field`.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    values: &Value,
) -> Result<(), Status> {
    let Value::Array(values) = values else {
        return Err(errors::bad_request("invalid patch: $deleteFromPrimitiveList must be a list"));
    };
    if let Some(Value::Array(list)) = original.get_mut(field) {
        list.retain(|v| !values.contains(v));
    }
    Ok(())
}

/// `$setElementOrder/<field>`: the elements the order names come first, in that order; the rest
/// (elements only the server has) keep their relative order after them.
fn reorder(list: &mut Vec<Value>, order: &Value, merge_key: &str) {
    let Value::Array(order) = order else { return };
    let identity = |v: &Value| -> Value {
        if merge_key.is_empty() { v.clone() } else { v.get(merge_key).cloned().unwrap_or(Value::Null) }
    };
    let mut rest = std::mem::take(list);
    for wanted in order {
        let wanted = identity(wanted);
        if let Some(i) = rest.iter().position(|v| identity(v) == wanted) {
            list.push(rest.remove(i));
        }
    }
    list.append(&mut rest);
}

/// A value with every directive removed (for parts that replace rather than merge).
fn strip_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip_directives(m)),
        Value::Array(a) => Value::Array(a.iter().map(strip_value).collect()),
        other => other.clone(),
    }
}

fn strip_directives(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, v)| !k.starts_with('$') && !v.is_null())
        .map(|(k, v)| (k.clone(), strip_value(v)))
        .collect()
}

/// 400 for a `$patch` value apimachinery does not know.
fn bad_patch_type(value: &Value) -> Status {
    errors::bad_request(&format!("Unknown patch type: {}", value.as_str().unwrap_or(&value.to_string())))
}

/// A map as Go's `%v` prints it (`map[image:nginx]`), for error messages.
fn go_map(m: &Map<String, Value>) -> String {
    let parts: Vec<String> = m
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}:{s}"),
            other => format!("{k}:{other}"),
        })
        .collect();
    format!("map[{}]", parts.join(" "))
}
