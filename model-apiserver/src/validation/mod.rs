//! Validation of built-in kinds: label and annotation syntax, the spec validation of the kinds
//! controllers write (one module per API group, after `pkg/apis/<group>/validation`), and the
//! immutability rules of the real strategies (pod spec, workload selectors, Job templates,
//! StatefulSet spec, claims, immutable ConfigMaps and Secrets).

mod apps;
mod autoscaling;
mod batch;
mod coordination;
pub(crate) mod core;
mod field;
mod networking;
mod policy;
pub(crate) mod scheduling;

use std::collections::BTreeMap;

use kube_core::{DynamicObject, ObjectMeta, response::StatusCause};
use serde_json::Value;

use crate::{
    decode::{self, Typed},
    errors, metadata,
    resources::ResourceType,
};
use field::Path;

/// Longest label value and name part of a qualified name.
const LABEL_VALUE_LEN_MAX: usize = 63;
/// Longest prefix of a qualified name (a DNS-1123 subdomain).
const QUALIFIED_NAME_PREFIX_LEN_MAX: usize = 253;
/// Total size of all annotations, keys and values.
const ANNOTATIONS_BYTES_MAX: usize = 256 * 1024;

const QUALIFIED_NAME_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const PREFIX_ERR: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const POD_UPDATE_ERR: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
const STATEFULSET_UPDATE_ERR: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
const IMMUTABLE_SET_ERR: &str = "field is immutable when `immutable` is set";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, without the length limit.
fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// The errors of a qualified name (`prefix/name` or `name`), as apimachinery's
/// IsQualifiedName words them.
fn qualified_name_errors(key: &str) -> Vec<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let mut errs = Vec::new();
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_owned());
        } else {
            if p.len() > QUALIFIED_NAME_PREFIX_LEN_MAX {
                errs.push(format!(
                    "prefix part must be no more than {QUALIFIED_NAME_PREFIX_LEN_MAX} characters"
                ));
            }
            if !metadata::is_dns1123_subdomain(p) {
                errs.push(PREFIX_ERR.to_owned());
            }
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > LABEL_VALUE_LEN_MAX {
            errs.push(format!("name part must be no more than {LABEL_VALUE_LEN_MAX} characters"));
        }
        if !is_label_token(name) {
            errs.push(QUALIFIED_NAME_ERR.to_owned());
        }
    }
    errs
}

/// The errors of a label value, as IsValidLabelValue words them.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_LEN_MAX {
        errs.push(format!("must be no more than {LABEL_VALUE_LEN_MAX} characters"));
    }
    if !value.is_empty() && !is_label_token(value) {
        errs.push(LABEL_VALUE_ERR.to_owned());
    }
    errs
}

/// Finalizer names ([`metadata::validate_finalizers`]), the Kubernetes rules with `builtin`.
pub(crate) fn validate_finalizers(meta: &ObjectMeta, builtin: bool) -> Vec<StatusCause> {
    metadata::validate_finalizers(meta, builtin, qualified_name_errors)
}

/// Label keys and values, annotation keys and their total size.
pub(crate) fn validate_labels_and_annotations(meta: &ObjectMeta) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (key, value) in meta.labels.iter().flatten() {
        for err in qualified_name_errors(key) {
            causes.push(metadata::invalid_value("metadata.labels", key, &err));
        }
        for err in label_value_errors(value) {
            causes.push(metadata::invalid_value("metadata.labels", value, &err));
        }
    }
    let mut total = 0usize;
    for (key, value) in meta.annotations.iter().flatten() {
        for err in qualified_name_errors(key) {
            causes.push(metadata::invalid_value("metadata.annotations", key, &err));
        }
        total = total.saturating_add(key.len()).saturating_add(value.len());
    }
    if total > ANNOTATIONS_BYTES_MAX {
        causes.push(errors::cause(
            "FieldValueTooLong",
            "metadata.annotations",
            format!("Too long: may not be more than {ANNOTATIONS_BYTES_MAX} bytes"),
        ));
    }
    causes
}

/// The immutability rules of built-in kinds on an update of the main resource.
pub(crate) fn validate_builtin_update(
    ty: &ResourceType,
    old: &DynamicObject,
    new: &DynamicObject,
) -> Vec<StatusCause> {
    if ty.custom {
        return Vec::new();
    }
    match (ty.api.group.as_str(), ty.api.kind.as_str()) {
        ("", "Pod") => pod_update(old, new),
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => immutable(old, new, &["spec", "selector"]),
        ("apps", "StatefulSet") => {
            let mut causes = immutable(old, new, &["spec", "selector"]);
            if causes.is_empty() {
                causes.extend(statefulset_update(old, new));
            }
            causes
        }
        ("batch", "Job") => job_update(old, new),
        ("", "PersistentVolume") => persistent_volume_update(old, new),
        ("storage.k8s.io", "StorageClass") => storage_class_update(old, new),
        ("", "PersistentVolumeClaim") => claim_update(ty, old, new),
        ("", "ConfigMap") => immutable_data(old, new),
        // ValidateSecretUpdate: the type first (ValidateImmutableField), then `immutable`.
        ("", "Secret") => {
            let mut causes = immutable(old, new, &["type"]);
            causes.extend(immutable_data(old, new));
            causes
        }
        ("", "Service") => service_cluster_ip(old, new),
        ("scheduling.k8s.io", "PriorityClass") => scheduling::priority_class_update(old, new),
        _ => Vec::new(),
    }
}

/// The volume sources of a PersistentVolume's spec (`PersistentVolumeSource`).
const VOLUME_SOURCES: [&str; 22] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// `ValidatePersistentVolumeUpdate`: the volume source is fixed once made (but a CSI volume may
/// gain a `controllerExpandSecretRef`), and so are `volumeMode` and a node affinity once set.
fn persistent_volume_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let source = |o: &DynamicObject, drop_expand_secret: bool| -> BTreeMap<&str, Value> {
        let mut source: BTreeMap<&str, Value> = VOLUME_SOURCES
            .iter()
            .filter_map(|k| Some((*k, at(&o.data, &["spec", k])?.clone())))
            .filter(|(_, v)| !v.is_null())
            .collect();
        if drop_expand_secret && let Some(csi) = source.get_mut("csi").and_then(Value::as_object_mut) {
            csi.remove("controllerExpandSecretRef");
        }
        source
    };
    let old_csi_secret = at(&old.data, &["spec", "csi", "controllerExpandSecretRef"]);
    let mut causes = Vec::new();
    if source(old, false) != source(new, old_csi_secret.is_none_or(Value::is_null)) {
        causes.push(metadata::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    let mut immutable_at = |path: &[&str], field: &str| {
        let (before, after) = (at(&old.data, path), at(&new.data, path));
        if before != after {
            let shown = after.filter(|v| !v.is_null()).map_or_else(|| "null".to_owned(), Value::to_string);
            causes.push(errors::cause(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {shown}: field is immutable"),
            ));
        }
    };
    immutable_at(&["spec", "volumeMode"], "volumeMode");
    if at(&old.data, &["spec", "nodeAffinity"]).is_some_and(|a| !a.is_null()) {
        immutable_at(&["spec", "nodeAffinity"], "nodeAffinity");
    }
    causes
}

/// `ValidateStorageClassUpdate`: `parameters`, `provisioner` and `reclaimPolicy` may not change
/// (Forbidden, in upstream's words), nor `volumeBindingMode` (immutable). Absent and empty
/// parameters count as the same.
fn storage_class_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let parameters = |o: &DynamicObject| {
        o.data.get("parameters").filter(|p| p.as_object().is_some_and(|p| !p.is_empty())).cloned()
    };
    let mut causes = Vec::new();
    if parameters(old) != parameters(new) {
        causes.push(metadata::forbidden("parameters", "updates to parameters are forbidden."));
    }
    for field in ["provisioner", "reclaimPolicy"] {
        if old.data.get(field) != new.data.get(field) {
            causes.push(metadata::forbidden(field, &format!("updates to {field} are forbidden.")));
        }
    }
    causes.extend(immutable_even_unset(old, new, &["volumeBindingMode"]));
    causes
}

/// `ValidateJobSpecUpdate`: `completions` (an Indexed Job's may change with `parallelism`, the
/// elastic Indexed Jobs of 1.31), the selector, the template (but its scheduling directives
/// while the Job is suspended and never started), and the fields fixed at creation.
fn job_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let mut causes = job_completions_update(old, new);
    causes.extend(immutable(old, new, &["spec", "selector"]));
    causes.extend(job_template_update(old, new));
    causes.extend(immutable(old, new, &["spec", "completionMode"]));
    for field in ["podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"] {
        causes.extend(immutable_even_unset(old, new, &["spec", field]));
    }
    causes
}

/// `validateCompletions`: immutable, but an Indexed Job's may change when it equals the new
/// `parallelism` (an Indexed Job must set it; that is checked on its own).
fn job_completions_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let path = ["spec", "completions"];
    let indexed = at(&new.data, &["spec", "completionMode"]).and_then(Value::as_str) == Some("Indexed");
    if !indexed {
        return immutable_even_unset(old, new, &path);
    }
    let completions = at(&new.data, &path);
    if at(&old.data, &path) == completions || completions.is_none_or(Value::is_null) {
        return Vec::new();
    }
    if completions == at(&new.data, &["spec", "parallelism"]) {
        return Vec::new();
    }
    let shown = completions.map(Value::to_string).unwrap_or_default();
    vec![errors::cause(
        "FieldValueInvalid",
        "spec.completions",
        format!("Invalid value: {shown}: can only be modified in tandem with spec.parallelism"),
    )]
}

/// `validatePodTemplateUpdate`: the template is immutable, but while the Job is suspended and
/// has never started (`AllowMutableSchedulingDirectives`: queueing controllers such as Kueue
/// place a Job this way) its labels, annotations, `nodeSelector`, `tolerations`,
/// `schedulingGates` and node affinity may change.
fn job_template_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let suspended = at(&old.data, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let started = at(&old.data, &["status", "startTime"]).is_some_and(|t| !t.is_null());
    if !suspended || started {
        return immutable(old, new, &["spec", "template"]);
    }
    let (Some(old_template), Some(new_template)) =
        (at(&old.data, &["spec", "template"]), at(&new.data, &["spec", "template"]))
    else {
        return immutable(old, new, &["spec", "template"]);
    };
    let mut allowed = old_template.clone();
    let copy = |allowed: &mut Value, section: &str, field: &str| {
        let value = new_template.get(section).and_then(|s| s.get(field)).cloned();
        if !allowed.get(section).is_some_and(Value::is_object) {
            if value.is_none() {
                return;
            }
            allowed[section] = Value::Object(serde_json::Map::new());
        }
        let section = allowed[section].as_object_mut().expect("made an object");
        match value {
            Some(value) => section.insert(field.to_owned(), value),
            None => section.remove(field),
        };
    };
    for (section, field) in [
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("spec", "nodeSelector"),
        ("spec", "tolerations"),
        ("spec", "schedulingGates"),
    ] {
        copy(&mut allowed, section, field);
    }
    let new_affinity = new_template.get("spec").and_then(|s| s.get("affinity"));
    let old_affinity = allowed.get("spec").and_then(|s| s.get("affinity")).cloned();
    let node_affinity = new_affinity.and_then(|a| a.get("nodeAffinity")).cloned();
    let affinity = match (new_affinity, old_affinity) {
        (None, None) => None,
        // Cleared: allowed if node affinity was all it held.
        (None, Some(mut old)) => {
            if let Some(old) = old.as_object_mut() {
                old.remove("nodeAffinity");
            }
            Some(old).filter(|a| a.as_object().is_none_or(|a| !a.is_empty()))
        }
        (Some(_), None) => Some(match node_affinity {
            Some(node) => serde_json::json!({ "nodeAffinity": node }),
            None => serde_json::json!({}),
        }),
        (Some(_), Some(mut old)) => {
            if let Some(old) = old.as_object_mut() {
                match node_affinity {
                    Some(node) => old.insert("nodeAffinity".to_owned(), node),
                    None => old.remove("nodeAffinity"),
                };
            }
            Some(old)
        }
    };
    if let Some(spec) = allowed.get_mut("spec").and_then(Value::as_object_mut) {
        match affinity {
            Some(affinity) => spec.insert("affinity".to_owned(), affinity),
            None => spec.remove("affinity"),
        };
    }
    if &allowed == new_template {
        return Vec::new();
    }
    vec![errors::cause(
        "FieldValueInvalid",
        "spec.template",
        format!("Invalid value: {new_template}: field is immutable"),
    )]
}

/// `path` may not change, set from unset or unset either (`ValidateImmutableField` of a pointer).
fn immutable_even_unset(old: &DynamicObject, new: &DynamicObject, path: &[&str]) -> Vec<StatusCause> {
    let before = at(&old.data, path).filter(|v| !v.is_null());
    let after = at(&new.data, path).filter(|v| !v.is_null());
    if before == after {
        return Vec::new();
    }
    let shown = after.map_or_else(|| "null".to_owned(), Value::to_string);
    vec![errors::cause(
        "FieldValueInvalid",
        &path.join("."),
        format!("Invalid value: {shown}: field is immutable"),
    )]
}

fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// `path` may not change once set.
fn immutable(old: &DynamicObject, new: &DynamicObject, path: &[&str]) -> Vec<StatusCause> {
    let (before, after) = (at(&old.data, path), at(&new.data, path));
    if before.is_none() || before == after {
        return Vec::new();
    }
    let shown = match after {
        None | Some(Value::Null) => "null".to_owned(),
        Some(selector) if path.last() == Some(&"selector") => {
            go_label_selector(selector).unwrap_or_else(|| selector.to_string())
        }
        Some(value) => value.to_string(),
    };
    vec![errors::cause(
        "FieldValueInvalid",
        &path.join("."),
        format!("Invalid value: {shown}: field is immutable"),
    )]
}

/// A `metav1.LabelSelector` as Go's `%#v` prints it, which is how apimachinery's field errors
/// show a struct value: `v1.LabelSelector{MatchLabels:map[string]string{"app":"web"},
/// MatchExpressions:[]v1.LabelSelectorRequirement(nil)}` (map keys sorted, a missing map or list
/// `(nil)`). `None` when `v` is not shaped as one.
fn go_label_selector(v: &Value) -> Option<String> {
    use crate::errors::go_quote as quote;
    fn strings(v: Option<&Value>) -> Option<String> {
        match v {
            None | Some(Value::Null) => Some("[]string(nil)".to_owned()),
            Some(Value::Array(items)) => {
                let quoted: Option<Vec<String>> = items.iter().map(|i| i.as_str().map(quote)).collect();
                Some(format!("[]string{{{}}}", quoted?.join(", ")))
            }
            Some(_) => None,
        }
    }
    let selector = v.as_object()?;
    let labels = match selector.get("matchLabels") {
        None | Some(Value::Null) => "map[string]string(nil)".to_owned(),
        Some(Value::Object(map)) => {
            // Go's fmt prints a map's keys sorted.
            let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let pairs: Option<Vec<String>> = sorted
                .iter()
                .map(|(k, v)| v.as_str().map(|v| format!("{}:{}", quote(k), quote(v))))
                .collect();
            format!("map[string]string{{{}}}", pairs?.join(", "))
        }
        Some(_) => return None,
    };
    let expressions = match selector.get("matchExpressions") {
        None | Some(Value::Null) => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(Value::Array(items)) => {
            let shown: Option<Vec<String>> = items
                .iter()
                .map(|r| {
                    let r = r.as_object()?;
                    let field = |k: &str| match r.get(k) {
                        None | Some(Value::Null) => Some(quote("")),
                        Some(v) => v.as_str().map(quote),
                    };
                    Some(format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        field("key")?,
                        field("operator")?,
                        strings(r.get("values"))?
                    ))
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", shown?.join(", "))
        }
        Some(_) => return None,
    };
    Some(format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"))
}

/// `ValidatePodEphemeralContainersUpdate`'s own part: a Pod's ephemeral containers may be added,
/// never removed or changed (the containers themselves are validated with the Pod's spec). A
/// static Pod takes none.
pub(crate) fn ephemeral_containers_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let mirror = "kubernetes.io/config.mirror";
    if old.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(mirror)) {
        return vec![metadata::forbidden("", "static pods do not support ephemeral containers")];
    }
    let list = |o: &DynamicObject| -> Vec<Value> {
        o.data.pointer("/spec/ephemeralContainers").and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let name = |c: &Value| c.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let new_list = list(new);
    let mut out = Vec::new();
    for before in list(old) {
        let named = name(&before);
        match new_list.iter().find(|c| name(c) == named) {
            None => out.push(metadata::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {} may not be removed\n", field::q(&named)),
            )),
            // Upstream appends a `cmp.Diff` of the two, which no other implementation prints
            // alike.
            Some(after) if after != &before => out.push(metadata::forbidden(
                &format!("spec.ephemeralContainers[{named}]"),
                &format!("existing ephemeral containers {} may not be changed\n", field::q(&named)),
            )),
            Some(_) => {}
        }
    }
    out
}

/// What `ValidatePodResize` answers beyond the Pod's own validation: a refusal that stands alone
/// (the rest of the validation dropped, as upstream returns it by itself), or causes to add.
pub(crate) enum Resize {
    Alone(StatusCause),
    And(Vec<StatusCause>),
}

/// `ValidatePodResize`: a write of a Pod's `/resize` (the strategy kept all but its containers'
/// `resources` and `resizePolicy`, [`crate::strategy::keep_stored_pod_but_resize`]) may change
/// only the cpu and memory of its containers and sidecars, keeping the Pod's QoS class, removing
/// no request or limit, and lowering or adding a memory limit only with a `RestartContainer`
/// policy for memory. Pods with pod-level resources, static and Windows Pods are not resized.
pub(crate) fn pod_resize(old: &DynamicObject, new: &DynamicObject) -> Resize {
    let pod_level = |o: &DynamicObject| {
        ["requests", "limits"].iter().any(|k| {
            o.data
                .pointer(&format!("/spec/resources/{k}"))
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
        })
    };
    if pod_level(old) || pod_level(new) {
        return Resize::Alone(metadata::forbidden("", "pods with pod-level resources cannot be resized"));
    }
    if old.metadata.annotations.as_ref().is_some_and(|a| a.contains_key("kubernetes.io/config.mirror")) {
        return Resize::Alone(metadata::forbidden("", "static pods cannot be resized"));
    }
    if old.data.pointer("/spec/os/name").and_then(Value::as_str) == Some("windows") {
        return Resize::Alone(metadata::forbidden("", "windows pods cannot be resized"));
    }
    let mut out = Vec::new();
    let old_qos = old
        .data
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .filter(|q| !q.is_empty())
        .unwrap_or_else(|| crate::strategy::qos_class(&old.data));
    if old_qos != crate::strategy::qos_class(&new.data) {
        let shown = new.data.pointer("/status/qosClass").and_then(Value::as_str).unwrap_or_default();
        out.push(metadata::invalid_value(
            "spec",
            shown,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    let statuses = old.data.pointer("/status/containerStatuses").and_then(Value::as_array);
    if let Some(running) = statuses.into_iter().flatten().find(|s| s.pointer("/state/running").is_some())
        && running.get("resources").is_none_or(Value::is_null)
    {
        out.push(metadata::forbidden("spec", "Pod running on node without support for resize"));
    }
    let list = |o: &DynamicObject, key: &str| -> Vec<Value> {
        o.data.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let ordering_before = out.len();
    let mut pairs = Vec::new();
    for (key, shown) in [("containers", "containers"), ("initContainers", "initContainers")] {
        let (before, after) = (list(old, key), list(new, key));
        if before.len() != after.len() {
            out.push(metadata::forbidden(
                &format!("spec.{key}"),
                &format!("{shown} may not be added or removed on resize"),
            ));
            continue;
        }
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            if b.get("name") != a.get("name") {
                out.push(metadata::forbidden(
                    &format!("spec.{key}[{i}].name"),
                    &format!("{shown} may not be renamed or reordered on resize"),
                ));
            }
        }
        pairs.push((key, before, after));
    }
    if out.len() > ordering_before {
        return Resize::And(out);
    }
    for (key, before, after) in &pairs {
        for (i, (b, a)) in before.iter().zip(after).enumerate() {
            let sidecar = a.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            if *key == "containers" || sidecar {
                out.extend(container_resize(b, a, &format!("spec.{key}[{i}].resources")));
            }
        }
    }
    for (key, before, after) in &pairs {
        for (b, a) in before.iter().zip(after) {
            let sidecar = a.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            let detail = match (*key, sidecar) {
                ("containers", _) => "only cpu and memory resources are mutable",
                (_, true) => "only cpu and memory resources for sidecar containers are mutable",
                (_, false) => "resources for non-sidecar init containers are immutable",
            };
            let same = if *key == "containers" || sidecar {
                same_but_cpu_and_memory(b, a)
            } else {
                same_container(b, a)
            };
            if !same {
                out.push(metadata::forbidden("spec", detail));
            }
        }
    }
    Resize::And(out)
}

/// `validateContainerResize`: no request or limit removed, and without a `RestartContainer`
/// policy for memory, no memory limit lowered or added.
fn container_resize(old: &Value, new: &Value, path: &str) -> Vec<StatusCause> {
    let mut out = Vec::new();
    for which in ["requests", "limits"] {
        let (before, after) = (resource_list(old, which), resource_list(new, which));
        if after.len() < before.len() || before.keys().any(|k| !after.contains_key(k)) {
            out.push(metadata::forbidden(
                &format!("{path}.{which}"),
                &format!("resource {which} cannot be removed"),
            ));
        }
    }
    let memory_policy = new
        .get("resizePolicy")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("resourceName").and_then(Value::as_str) == Some("memory"))
        .and_then(|p| p.get("restartPolicy").and_then(Value::as_str));
    if memory_policy.is_none_or(|p| p == "NotRequired") {
        let (before, after) = (resource_list(old, "limits"), resource_list(new, "limits"));
        let at = format!("{path}.limits[memory]");
        match (before.get("memory"), after.get("memory")) {
            (Some(b), Some(a)) if a < b => out.push(metadata::forbidden(
                &at,
                "memory limits cannot be decreased unless resizePolicy is RestartContainer",
            )),
            (None, Some(_)) => out.push(metadata::forbidden(
                &at,
                "memory limits cannot be added unless resizePolicy is RestartContainer",
            )),
            _ => {}
        }
    }
    out
}

/// Whether two containers are alike but for their cpu and memory requests and limits
/// (`dropCPUMemoryResourcesFromContainer`, then a semantic comparison: quantities by value, an
/// empty list as an absent one). A list the stored container lacks must stay absent.
fn same_but_cpu_and_memory(old: &Value, new: &Value) -> bool {
    for which in ["requests", "limits"] {
        let before = resource_list(old, which);
        let present = old.pointer(&format!("/resources/{which}")).is_some_and(|v| !v.is_null());
        let mut munged = if present { resource_list(new, which) } else { Default::default() };
        if present {
            for name in ["cpu", "memory"] {
                munged.remove(name);
                if let Some(v) = before.get(name) {
                    munged.insert(name.to_owned(), *v);
                }
            }
        }
        if munged != before {
            return false;
        }
    }
    without_resources(old) == without_resources(new)
}

/// Whether two containers are alike, their resource lists compared by value.
fn same_container(old: &Value, new: &Value) -> bool {
    ["requests", "limits"].iter().all(|w| resource_list(old, w) == resource_list(new, w))
        && without_resources(old) == without_resources(new)
}

/// A container's `resources.requests` or `resources.limits` (`which`), the amounts that parse.
fn resource_list(c: &Value, which: &str) -> crate::quota::ResourceList {
    crate::quota::list_at(c, &format!("/resources/{which}"))
}

/// A container without its resource lists (its claims kept), an empty `resizePolicy` as none.
fn without_resources(c: &Value) -> Value {
    let mut c = c.clone();
    if let Some(m) = c.as_object_mut() {
        let claims = m.remove("resources").and_then(|mut r| r.get_mut("claims").map(Value::take));
        if let Some(claims) = claims.filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
            m.insert("resources".to_owned(), serde_json::json!({ "claims": claims }));
        }
        if m.get("resizePolicy").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            m.remove("resizePolicy");
        }
    }
    c
}

/// A pod's spec may change only in container images, activeDeadlineSeconds, added
/// tolerations, terminationGracePeriodSeconds and removed scheduling gates
/// (`validateOnlyDeletedSchedulingGates`: a gate added is Forbidden). `spec.nodeName` is set by
/// `pods/binding` ([`crate::binding`]), never by an update.
fn pod_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let (Some(old_spec), Some(new_spec)) = (old.data.get("spec"), new.data.get("spec")) else {
        return Vec::new();
    };
    let mut mutable = new_spec.clone();
    let Some(m) = mutable.as_object_mut() else { return Vec::new() };
    for list in ["containers", "initContainers"] {
        let old_images: Vec<Option<&Value>> = old_spec
            .get(list)
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(|c| c.get("image")).collect())
            .unwrap_or_default();
        if let Some(cs) = m.get_mut(list).and_then(Value::as_array_mut) {
            for (c, image) in cs.iter_mut().zip(old_images) {
                if let (Some(c), Some(image)) = (c.as_object_mut(), image) {
                    c.insert("image".to_owned(), image.clone());
                }
            }
        }
    }
    if let Some(deadline) = active_deadline_update(old_spec, new_spec) {
        return vec![deadline];
    }
    let mut causes = only_added_tolerations(old_spec, new_spec);
    // `terminationGracePeriodSeconds` may only go from a negative value to 1.
    let grace = |spec: &Value| spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    let mut mutable_fields = vec!["activeDeadlineSeconds", "tolerations"];
    if grace(old_spec).is_some_and(|g| g < 0) && grace(new_spec) == Some(1) {
        mutable_fields.push("terminationGracePeriodSeconds");
    }
    for field in mutable_fields {
        match old_spec.get(field) {
            Some(v) => m.insert(field.to_owned(), v.clone()),
            None => m.remove(field),
        };
    }
    causes.extend(added_scheduling_gates(old_spec, new_spec));
    if old_spec.get("schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
        causes.extend(gated_pod_directives(old_spec, new_spec, m));
    }
    match old_spec.get("schedulingGates") {
        Some(v) => m.insert("schedulingGates".to_owned(), v.clone()),
        None => m.remove("schedulingGates"),
    };
    if &mutable != old_spec {
        causes.push(metadata::forbidden("spec", POD_UPDATE_ERR));
    }
    causes
}

/// `validateOnlyDeletedSchedulingGates`: each gate of `new_spec` that `old_spec` lacks.
fn added_scheduling_gates(old_spec: &Value, new_spec: &Value) -> Vec<StatusCause> {
    let names = |spec: &Value| -> Vec<String> {
        let gates = spec.get("schedulingGates").and_then(Value::as_array);
        gates
            .into_iter()
            .flatten()
            .map(|g| g.get("name").and_then(Value::as_str).unwrap_or_default().to_owned())
            .collect()
    };
    let old = names(old_spec);
    // Upstream walks a Go map, in no set order: the gates' order here is the spec's.
    names(new_spec)
        .into_iter()
        .enumerate()
        .filter(|(_, name)| !old.contains(name))
        .map(|(i, name)| {
            metadata::forbidden(
                &format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            )
        })
        .collect()
}

/// A Pod's `activeDeadlineSeconds` may be set, or lowered, never raised or unset (upstream
/// reports only this error then).
fn active_deadline_update(old_spec: &Value, new_spec: &Value) -> Option<StatusCause> {
    let path = Path::new("spec").child("activeDeadlineSeconds");
    let old = old_spec.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match new_spec.get("activeDeadlineSeconds").filter(|v| !v.is_null()) {
        Some(new) => {
            let value = new.as_i64()?;
            if !(0..=i64::from(i32::MAX)).contains(&value) {
                return Some(field::invalid(
                    &path,
                    value,
                    &format!("must be between 0 and {}, inclusive", i32::MAX),
                ));
            }
            old.filter(|old| *old < value)
                .map(|_| field::invalid(&path, value, "must be less than or equal to previous value"))
        }
        None => {
            old.map(|_| field::invalid(&path, "null", "must not update from a positive integer to nil value"))
        }
    }
}

/// `validateOnlyAddedTolerations`: each existing toleration stays, but for its
/// `tolerationSeconds`.
fn only_added_tolerations(old_spec: &Value, new_spec: &Value) -> Vec<StatusCause> {
    let list = |spec: &Value| spec.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(t) = t.as_object_mut() {
            t.remove("tolerationSeconds");
        }
        t
    };
    let new: Vec<Value> = list(new_spec).iter().map(without_seconds).collect();
    if list(old_spec).iter().all(|old| new.contains(&without_seconds(old))) {
        return Vec::new();
    }
    vec![metadata::forbidden(
        "spec.tolerations",
        "existing toleration can not be modified except its tolerationSeconds",
    )]
}

/// The scheduling directives a gated Pod may change (`ValidatePodUpdate` for a Pod with
/// scheduling gates, GA in 1.30): `nodeSelector` may gain entries (`validateNodeSelectorMutation`)
/// and the required node affinity may be set when there was none, or narrowed by more
/// requirements in each of its terms (`validateNodeAffinityMutation`). What passes is written
/// back into `munged` as the old value, so that the rest of the spec is compared alone.
fn gated_pod_directives(
    old_spec: &Value,
    new_spec: &Value,
    munged: &mut serde_json::Map<String, Value>,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let old_selector = old_spec.get("nodeSelector");
    let new_selector = new_spec.get("nodeSelector");
    if old_selector != new_selector {
        let old_entries = old_selector.and_then(Value::as_object).cloned().unwrap_or_default();
        let kept = old_entries.iter().all(|(k, v)| new_selector.and_then(|s| s.get(k)) == Some(v));
        if !kept {
            let shown = new_selector.map_or_else(|| "map[string]string(nil)".to_owned(), field::go);
            causes.push(field::invalid(
                &Path::new("spec").child("nodeSelector"),
                shown,
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            ));
        }
        match old_selector {
            Some(v) => munged.insert("nodeSelector".to_owned(), v.clone()),
            None => munged.remove("nodeSelector"),
        };
    }
    let node_affinity = |spec: &Value| spec.get("affinity").and_then(|a| a.get("nodeAffinity")).cloned();
    let (old_node, new_node) = (node_affinity(old_spec), node_affinity(new_spec));
    if old_node != new_node {
        causes.extend(node_affinity_mutation(old_node.as_ref(), new_node.as_ref()));
        let affinity = munged.get_mut("affinity").and_then(Value::as_object_mut);
        match (affinity, old_node) {
            (Some(affinity), Some(old)) => {
                affinity.insert("nodeAffinity".to_owned(), old);
            }
            (Some(affinity), None) => {
                affinity.remove("nodeAffinity");
                if affinity.is_empty() && old_spec.get("affinity").is_none() {
                    munged.remove("affinity");
                }
            }
            (None, Some(old)) => {
                munged.insert("affinity".to_owned(), serde_json::json!({ "nodeAffinity": old }));
            }
            (None, None) => {}
        }
    }
    causes
}

/// `validateNodeAffinityMutation`: with no required terms before, anything goes; else the same
/// number of terms, each keeping its requirements and only adding to them.
fn node_affinity_mutation(old: Option<&Value>, new: Option<&Value>) -> Vec<StatusCause> {
    let terms = |node: Option<&Value>| -> Vec<Value> {
        let required = node.and_then(|n| n.get("requiredDuringSchedulingIgnoredDuringExecution"));
        required
            .and_then(|r| r.get("nodeSelectorTerms"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let path = Path::new("spec")
        .child("affinity")
        .child("nodeAffinity")
        .child("requiredDuringSchedulingIgnoredDuringExecution")
        .child("nodeSelectorTerms");
    let old_required = old.and_then(|n| n.get("requiredDuringSchedulingIgnoredDuringExecution"));
    if old_required.is_none_or(Value::is_null) {
        return Vec::new();
    }
    let (old_terms, new_terms) = (terms(old), terms(new));
    if !old_terms.is_empty() && old_terms.len() != new_terms.len() {
        return vec![field::invalid(
            &path,
            Value::Array(new_terms),
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        )];
    }
    let only_additions = |old: &Value, new: &Value| {
        ["matchExpressions", "matchFields"].iter().all(|list| {
            let items = |term: &Value| term.get(*list).and_then(Value::as_array).cloned().unwrap_or_default();
            let (old_items, new_items) = (items(old), items(new));
            new_items.len() >= old_items.len() && old_items.iter().zip(&new_items).all(|(a, b)| a == b)
        })
    };
    old_terms
        .iter()
        .zip(&new_terms)
        .enumerate()
        .filter(|(_, (old, new))| !only_additions(old, new))
        .map(|(i, (_, new))| {
            field::invalid(&path.index(i), new, "only additions are allowed (no mutations or deletions)")
        })
        .collect()
}

/// A StatefulSet's spec may change only in the fields its strategy allows.
fn statefulset_update(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    const MUTABLE: [&str; 6] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let strip = |spec: Option<&Value>| -> Value {
        let mut spec = spec.cloned().unwrap_or(Value::Null);
        if let Some(m) = spec.as_object_mut() {
            for f in MUTABLE {
                m.remove(f);
            }
        }
        spec
    };
    if strip(old.data.get("spec")) == strip(new.data.get("spec")) {
        return Vec::new();
    }
    vec![metadata::forbidden("spec", STATEFULSET_UPDATE_ERR)]
}

/// A ConfigMap or Secret marked `immutable: true` keeps its data and the mark.
fn immutable_data(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    if old.data.get("immutable") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let mut causes = Vec::new();
    if new.data.get("immutable") != Some(&Value::Bool(true)) {
        causes.push(metadata::forbidden("immutable", IMMUTABLE_SET_ERR));
    }
    for field in ["data", "binaryData"] {
        if old.data.get(field) != new.data.get(field) {
            causes.push(metadata::forbidden(field, IMMUTABLE_SET_ERR));
        }
    }
    causes
}

/// A Service's allocated cluster IP may not change (an update that leaves it empty keeps it).
fn service_cluster_ip(old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let before = old.data.pointer("/spec/clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty());
    let after = new.data.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or_default();
    match before {
        Some(ip) if ip != after => {
            vec![metadata::invalid_value("spec.clusterIPs[0]", after, "may not change once set")]
        }
        _ => Vec::new(),
    }
}

/// The validation a built-in kind's strategy runs on create only (a PriorityClass's: on update
/// it runs only [`validate_builtin_update`]'s rules).
pub(crate) fn validate_builtin_create(ty: &ResourceType, object: &DynamicObject) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if !ty.custom && ty.api.group == "scheduling.k8s.io" && ty.api.kind == "PriorityClass" {
        scheduling::priority_class(object, &mut out);
    }
    // ValidatePodCreate: ephemeral containers come only through `pods/ephemeralcontainers`.
    let ephemeral = object.data.pointer("/spec/ephemeralContainers").and_then(Value::as_array);
    if !ty.custom
        && ty.api.group.is_empty()
        && ty.api.kind == "Pod"
        && ephemeral.is_some_and(|e| !e.is_empty())
    {
        out.push(metadata::forbidden("spec.ephemeralContainers", "cannot be set on create"));
    }
    // ValidateCronJobCreate: the controller names a CronJob's Jobs `<name>-<11 characters>`,
    // which must fit a 63-character label.
    let name = object.metadata.name.as_deref().unwrap_or_default();
    if !ty.custom && ty.api.group == "batch" && ty.api.kind == "CronJob" && name.len() > CRON_JOB_NAME_LEN_MAX
    {
        let why = format!("must be no more than {CRON_JOB_NAME_LEN_MAX} characters");
        out.push(metadata::invalid_value("metadata.name", name, &why));
    }
    out
}

/// The longest CronJob name (DNS1035LabelMaxLength - 11).
const CRON_JOB_NAME_LEN_MAX: usize = 52;

/// The spec validation of a built-in kind, on create and on every update (`pkg/apis/*/validation`):
/// the per-group modules check the typed object. A body that does not decode was refused
/// before (see [`crate::decode`]); one that admission hooks broke is not checked here.
pub(crate) fn validate_builtin(ty: &ResourceType, object: &DynamicObject) -> Vec<StatusCause> {
    if ty.custom {
        return Vec::new();
    }
    if ty.api.group.is_empty() && ty.api.kind == "ResourceQuota" {
        let mut out = Vec::new();
        core::resource_quota(&object.data, &mut out);
        return out;
    }
    let Some(typed) = decode::decode_typed(ty, object) else { return Vec::new() };
    let mut out = Vec::new();
    match &typed {
        Typed::Pod(pod) => match &pod.spec {
            Some(spec) => core::pod_spec(spec, &Path::new("spec"), &mut out),
            None => out.push(field::required(&Path::new("spec").child("containers"), "")),
        },
        Typed::ConfigMap(cm) => core::config_map(cm, &mut out),
        Typed::Secret(s) => core::secret(s, &mut out),
        Typed::Service(s) => core::service(s, &mut out),
        Typed::ServiceAccount(sa) => core::service_account(sa, &mut out),
        Typed::PersistentVolumeClaim(pvc) => core::persistent_volume_claim(pvc, &mut out),
        Typed::Deployment(d) => apps::deployment(d, &mut out),
        Typed::ReplicaSet(rs) => apps::replica_set(rs, &mut out),
        Typed::StatefulSet(sts) => apps::stateful_set(sts, &mut out),
        Typed::DaemonSet(ds) => apps::daemon_set(ds, &mut out),
        Typed::Job(job) => batch::job(job, &mut out),
        Typed::CronJob(cj) => batch::cron_job(cj, &mut out),
        Typed::Ingress(ing) => networking::ingress(ing, &mut out),
        Typed::PodDisruptionBudget(pdb) => policy::pod_disruption_budget(pdb, &mut out),
        Typed::Lease(lease) => coordination::lease(lease, &mut out),
        Typed::HorizontalPodAutoscaler(hpa) => autoscaling::horizontal_pod_autoscaler(hpa, &mut out),
    }
    out
}

/// A claim's spec may change only in its storage request.
fn claim_update(ty: &ResourceType, old: &DynamicObject, new: &DynamicObject) -> Vec<StatusCause> {
    let typed = |o: &DynamicObject| match decode::decode_typed(ty, o)? {
        Typed::PersistentVolumeClaim(pvc) => Some(pvc),
        _ => None,
    };
    let (Some(old), Some(new)) = (typed(old), typed(new)) else { return Vec::new() };
    let mut out = Vec::new();
    core::persistent_volume_claim_update(&old, &new, &mut out);
    out
}
