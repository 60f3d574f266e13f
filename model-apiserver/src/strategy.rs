//! Kind-specific preparation of written objects, as the real registries' strategies
//! (PrepareForCreate, PrepareForUpdate) and decoding defaults do it: status reset on create,
//! status kept on main-resource updates, Namespace finalizer and name label, Secret
//! `stringData`, Service cluster IPs, Pod QoS class, and [`crate::defaults`].

use kube_core::DynamicObject;
use serde_json::{Value, json};

use crate::{context::IdSource, defaults, metadata, node_ports, resources::ResourceType, server::Target};

/// The finalizer the namespace lifecycle puts in a Namespace's `spec.finalizers`.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";
/// The label every Namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The object's `.status`, if any.
pub(crate) fn status_of(object: &DynamicObject) -> Option<Value> {
    object.data.get("status").cloned()
}

/// Replace (or remove, with `None`) the object's `.status`.
pub(crate) fn set_status(object: &mut DynamicObject, status: Option<Value>) {
    if !object.data.is_object() {
        object.data = Value::Object(Default::default());
    }
    if let Some(map) = object.data.as_object_mut() {
        match status {
            Some(s) => {
                map.insert("status".to_owned(), s);
            }
            None => {
                map.remove("status");
            }
        }
    }
}

/// Make `new`'s content the stored object's but for `.status`, which stays `new`'s (and absent if
/// `new` has none): what a built-in kind's status strategy keeps of a status write. The result is
/// exactly `old`'s content with `new`'s status set; a top-level field that `new` already holds
/// equal to the stored one is kept rather than copied again, since a status write (an update or a
/// merge patch of `/status`) usually carries the stored spec back unchanged, and comparing it is
/// cheaper than copying it and dropping `new`'s own copy.
pub(crate) fn keep_stored_content_but_status(new: &mut DynamicObject, old: &DynamicObject) {
    match (&mut new.data, &old.data) {
        (Value::Object(content), Value::Object(stored)) => {
            content.retain(|key, value| key == "status" || stored.get(key) == Some(value));
            for (key, value) in stored {
                if key != "status" && !content.contains_key(key) {
                    content.insert(key.clone(), value.clone());
                }
            }
        }
        _ => {
            let status = status_of(new);
            new.data = old.data.clone();
            set_status(new, status);
        }
    }
}

/// `dropNonEphemeralContainerUpdates`: a write of a Pod's `/ephemeralcontainers` keeps the stored
/// Pod (spec and status) but for `spec.ephemeralContainers`, and the stored labels, annotations,
/// finalizers and owner references (`ResetObjectMetaForStatus`).
pub(crate) fn keep_stored_pod_but_ephemeral_containers(new: &mut DynamicObject, old: &DynamicObject) {
    let ephemeral = new.data.pointer("/spec/ephemeralContainers").filter(|v| !v.is_null()).cloned();
    new.data = old.data.clone();
    if let Some(Value::Object(spec)) = new.data.get_mut("spec") {
        match ephemeral {
            Some(list) => spec.insert("ephemeralContainers".to_owned(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    reset_object_meta_for_status(new, old);
}

/// `ResetObjectMetaForStatus`: the stored labels, annotations, finalizers and owner references,
/// whatever the write sent (the Pod subresources that write one part of its spec).
fn reset_object_meta_for_status(new: &mut DynamicObject, old: &DynamicObject) {
    new.metadata.labels.clone_from(&old.metadata.labels);
    new.metadata.annotations.clone_from(&old.metadata.annotations);
    new.metadata.finalizers.clone_from(&old.metadata.finalizers);
    new.metadata.owner_references.clone_from(&old.metadata.owner_references);
}

/// Whether `ty` is the built-in core/v1 `kind`.
pub(crate) fn is_core(ty: &ResourceType, kind: &str) -> bool {
    !ty.custom && ty.api.group.is_empty() && ty.api.kind == kind
}

/// What decoding a new object does before the handler records field ownership: Secret
/// `stringData`, the defaults (when `builtin_defaults`) and the Namespace name label. What the
/// creating manager wrote plus these is what managedFields say it owns.
pub(crate) fn decode_defaults(t: &Target, object: &mut DynamicObject, builtin_defaults: bool) {
    merge_string_data(t, object);
    if builtin_defaults {
        defaults::apply(&t.ty, &mut object.data);
    } else if !t.ty.custom
        && t.ty.api.group == "apps"
        && let Some(spec) = object.data.get_mut("spec").and_then(|s| s.as_object_mut())
    {
        // Even without defaulting, workload controllers and `/scale` rely on `spec.replicas`.
        spec.entry("replicas").or_insert(json!(1));
    }
    if is_core(&t.ty, "Namespace") {
        ensure_namespace_label(object);
    }
}

/// Prepare a new object after [`decode_defaults`] and the field-ownership bookkeeping, as the
/// registry's PrepareForCreate and REST create do (so no manager owns what this sets): a
/// Service's cluster IPs and IP families, a Job's generated selector and labels, a Namespace's
/// finalizer, and the status a type with a status subresource starts with (empty; Pods Pending
/// with their QoS class, Namespaces Active, PersistentVolumeClaims Pending).
pub(crate) fn prepare_for_create(
    t: &Target,
    object: &mut DynamicObject,
    ids: &mut dyn IdSource,
    now: jiff::Timestamp,
    taken: &node_ports::Taken,
) {
    if is_core(&t.ty, "Service") {
        allocate_cluster_ip(object, ids, taken);
        node_ports::allocate(object, ids, taken);
    }
    if is_job(&t.ty) {
        generate_job_selector(object);
        copy_job_labels(object);
    }
    if is_core(&t.ty, "Namespace") {
        ensure_namespace_finalizer(object);
    }
    if !t.ty.status_subresource {
        return;
    }
    let status = if t.ty.custom {
        None
    } else {
        match (t.ty.api.group.as_str(), t.ty.api.kind.as_str()) {
            // `nodeStrategy.PrepareForCreate`: nodes allow every field, status included, to be
            // set on create (a kubelet registers its node with its status).
            ("", "Node") => return,
            ("", "Pod") => Some(json!({"phase": "Pending", "qosClass": qos_class(&object.data)})),
            ("", "Namespace") => Some(json!({"phase": "Active"})),
            ("", "PersistentVolumeClaim") => Some(json!({"phase": "Pending"})),
            // The PersistentVolumeLastPhaseTransitionTime gate is GA (1.31).
            ("", "PersistentVolume") => Some(json!({
                "phase": "Pending",
                "lastPhaseTransitionTime": metadata::timestamp(now),
            })),
            _ => None,
        }
    };
    set_status(object, status);
    if is_core(&t.ty, "Pod") {
        apply_scheduling_gated_condition(object, now);
        merge_affinity_label_keys(object);
    }
}

/// `mutatePodAffinity` (MatchLabelKeysInPodAffinity, GA in 1.33): each Pod affinity and
/// anti-affinity term's `matchLabelKeys` become `<key> In (<the Pod's value>)` and its
/// `mismatchLabelKeys` `<key> NotIn (<value>)` requirements appended to its `labelSelector`,
/// for the keys the Pod's labels have, so that the scheduler reads one selector. A term without
/// a `labelSelector` selects nothing and is left as it is. Only on create: an update keeps the
/// stored terms.
fn merge_affinity_label_keys(pod: &mut DynamicObject) {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let Some(affinity) = pod.data.pointer_mut("/spec/affinity").and_then(Value::as_object_mut) else {
        return;
    };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(rules) = affinity.get_mut(kind).and_then(Value::as_object_mut) else { continue };
        let lists = rules.iter_mut().filter_map(|(field, list)| Some((field.as_str(), list.as_array_mut()?)));
        let terms = lists.flat_map(|(field, list)| {
            list.iter_mut().filter_map(move |item| match field {
                "requiredDuringSchedulingIgnoredDuringExecution" => Some(item),
                "preferredDuringSchedulingIgnoredDuringExecution" => item.get_mut("podAffinityTerm"),
                _ => None,
            })
        });
        for term in terms.filter_map(Value::as_object_mut) {
            let keys = |field: &str| -> Vec<String> {
                let keys = term.get(field).and_then(Value::as_array).into_iter().flatten();
                keys.filter_map(Value::as_str).map(str::to_owned).collect()
            };
            let (matching, mismatching) = (keys("matchLabelKeys"), keys("mismatchLabelKeys"));
            let Some(selector) = term.get_mut("labelSelector").and_then(Value::as_object_mut) else {
                continue;
            };
            let added: Vec<Value> = (matching.iter().map(|k| (k, "In")))
                .chain(mismatching.iter().map(|k| (k, "NotIn")))
                .filter_map(|(key, operator)| {
                    let value = labels.get(key)?;
                    Some(json!({"key": key, "operator": operator, "values": [value]}))
                })
                .collect();
            if added.is_empty() {
                continue;
            }
            let expressions = selector.entry("matchExpressions").or_insert_with(|| json!([]));
            if expressions.is_null() {
                *expressions = json!([]);
            }
            if let Some(expressions) = expressions.as_array_mut() {
                expressions.extend(added);
            }
        }
    }
}

/// `applySchedulingGatedCondition`: a pod created with scheduling gates says why it waits
/// (`PodScheduled` False, reason `SchedulingGated`); the scheduler leaves it until they are gone.
fn apply_scheduling_gated_condition(pod: &mut DynamicObject, now: jiff::Timestamp) {
    let gates = pod.data.pointer("/spec/schedulingGates").and_then(Value::as_array);
    if gates.is_none_or(Vec::is_empty) {
        return;
    }
    let condition = json!({
        "type": "PodScheduled",
        "status": "False",
        "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates",
    });
    crate::binding::update_pod_condition(pod, condition, now);
}

/// A built-in object's `.status` as its Go type encodes it (a struct, never a pointer: `{}` at
/// least, its fields without `omitempty` at zero, so a new ReplicaSet answers `status:
/// {replicas: 0}`, a Service `status: {loadBalancer: {}}`), with the read-time defaults of the
/// status (`SetDefaults_NamespaceStatus`, `SetDefaults_PersistentVolume(Claim)`'s phase,
/// `SetDefaults_NodeStatus`'s allocatable). A typed client thus reads `Some(status)` with these
/// fields, as against a cluster, whatever the last status write sent. Called on every write of a
/// built-in kind that has a status, before admission; what is already there stays.
pub(crate) fn fill_status_zero_values(t: &Target, object: &mut DynamicObject) {
    if t.ty.custom || !t.ty.status_subresource {
        return;
    }
    let Some(data) = object.data.as_object_mut() else { return };
    let status = data.entry("status").or_insert(Value::Null);
    if !(status.is_null() || status.is_object()) {
        // Not an object: validation answers it.
        return;
    }
    crate::go_types::encode_builtin_field(&t.ty.api.group, &t.ty.api.kind, "status", status);
    let Value::Object(status) = status else { return };
    let zero = |status: &mut serde_json::Map<String, Value>, key: &str, value: Value| {
        if status.get(key).is_none_or(Value::is_null) {
            status.insert(key.to_owned(), value);
        }
    };
    match (t.ty.api.group.as_str(), t.ty.api.kind.as_str()) {
        ("", "Namespace") => zero(status, "phase", json!("Active")),
        ("", "PersistentVolumeClaim") | ("", "PersistentVolume") => zero(status, "phase", json!("Pending")),
        ("", "Node") => {
            if status.get("allocatable").is_none_or(Value::is_null)
                && let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned()
            {
                status.insert("allocatable".to_owned(), capacity);
            }
        }
        _ => {}
    }
}

/// Prepare an update of the main resource: defaults; with a status subresource the main
/// resource ignores `.status`; a Namespace's `spec.finalizers` change only through finalize
/// and its name label stays; a Service keeps its allocated cluster IP when the update leaves
/// it empty.
pub(crate) fn prepare_for_update(
    t: &Target,
    old: &DynamicObject,
    new: &mut DynamicObject,
    builtin_defaults: bool,
    ids: &mut dyn IdSource,
    taken: &node_ports::Taken,
) {
    merge_string_data(t, new);
    if builtin_defaults {
        defaults::apply(&t.ty, &mut new.data);
    }
    // Compare before copying: most updates leave the status alone, and a status can be large.
    if t.ty.status_subresource && new.data.get("status") != old.data.get("status") {
        set_status(new, status_of(old));
    }
    if is_core(&t.ty, "Namespace") {
        let finalizers = old.data.pointer("/spec/finalizers").cloned();
        if let Some(map) = new.data.as_object_mut() {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let (Some(spec), Some(f)) = (spec.as_object_mut(), finalizers) {
                spec.insert("finalizers".to_owned(), f);
            } else if let Some(spec) = spec.as_object_mut() {
                spec.remove("finalizers");
            }
        }
        ensure_namespace_label(new);
    }
    if is_core(&t.ty, "Service") {
        node_ports::drop_type_dependent_fields(old, new);
        keep_cluster_ip(old, new);
        node_ports::keep(old, new);
        node_ports::allocate(new, ids, taken);
    }
    if is_job(&t.ty) {
        copy_job_labels(new);
    }
}

/// What a built-in kind's status strategy resets in the metadata of a `/status` write (whose
/// content is already the stored object's but for `.status`). Most kinds reset nothing there,
/// so labels, annotations, finalizers and owner references sent with a status write persist, as
/// on kube-apiserver; a Deployment keeps its labels (`deploymentStatusStrategy`) and a Pod its
/// owner references (`podStatusStrategy`: old kubelets corrupted them). A CRD's strategy calls
/// `ResetObjectMetaForStatus` with the new object twice, which resets nothing.
///
/// A PersistentVolume whose phase changes gets `status.lastPhaseTransitionTime` set to now,
/// unless the write set a new one (`persistentvolumeStatusStrategy.PrepareForUpdate`).
pub(crate) fn prepare_for_status_update(
    t: &Target,
    old: &DynamicObject,
    new: &mut DynamicObject,
    now: jiff::Timestamp,
) {
    if t.ty.custom {
        return;
    }
    match (t.ty.api.group.as_str(), t.ty.api.kind.as_str()) {
        ("apps", "Deployment") => new.metadata.labels = old.metadata.labels.clone(),
        ("", "Pod") => new.metadata.owner_references = old.metadata.owner_references.clone(),
        ("", "PersistentVolume") => {
            let phase = |o: &DynamicObject| o.data.pointer("/status/phase").cloned();
            let transition = |o: &DynamicObject| o.data.pointer("/status/lastPhaseTransitionTime").cloned();
            let new_transition = transition(new);
            if phase(old) != phase(new)
                && (new_transition.as_ref().is_none_or(Value::is_null) || new_transition == transition(old))
                && let Some(Value::Object(status)) = new.data.get_mut("status")
            {
                status.insert("lastPhaseTransitionTime".to_owned(), json!(metadata::timestamp(now)));
            }
        }
        _ => {}
    }
}

/// Whether `ty` is batch/v1 Job.
fn is_job(ty: &ResourceType) -> bool {
    !ty.custom && ty.api.group == "batch" && ty.api.kind == "Job"
}

/// A Job without labels of its own carries its pod template's, as SetDefaults_Job gives it on
/// every read (the generated `job-name` and `controller-uid` labels among them).
fn copy_job_labels(object: &mut DynamicObject) {
    if object.metadata.labels.as_ref().is_some_and(|l| !l.is_empty()) {
        return;
    }
    let Some(labels) = object.data.pointer("/spec/template/metadata/labels").and_then(Value::as_object)
    else {
        return;
    };
    let labels: std::collections::BTreeMap<String, String> =
        labels.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect();
    if !labels.is_empty() {
        object.metadata.labels = Some(labels);
    }
}

/// A Job without `manualSelector: true` selects its pods by its own uid: the template gets
/// the job-name and controller-uid labels (legacy and `batch.kubernetes.io/` forms) and the
/// selector matches `batch.kubernetes.io/controller-uid`, as the real Job strategy generates.
fn generate_job_selector(object: &mut DynamicObject) {
    let (Some(name), Some(uid)) = (object.metadata.name.clone(), object.metadata.uid.clone()) else { return };
    let Some(spec) = object.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let labels = [
        ("job-name", &name),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("batch.kubernetes.io/controller-uid", &uid),
    ];
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if !template.is_object() {
        *template = json!({});
    }
    let template_meta =
        template.as_object_mut().expect("just made an object").entry("metadata").or_insert_with(|| json!({}));
    if !template_meta.is_object() {
        *template_meta = json!({});
    }
    let template_labels = template_meta
        .as_object_mut()
        .expect("just made an object")
        .entry("labels")
        .or_insert_with(|| json!({}));
    if let Some(template_labels) = template_labels.as_object_mut() {
        for (key, value) in labels {
            template_labels.entry(key).or_insert_with(|| json!(value));
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if !selector.is_object() {
        *selector = json!({});
    }
    let match_labels = selector
        .as_object_mut()
        .expect("just made an object")
        .entry("matchLabels")
        .or_insert_with(|| json!({}));
    if let Some(match_labels) = match_labels.as_object_mut() {
        match_labels.entry("batch.kubernetes.io/controller-uid").or_insert_with(|| json!(uid));
    }
}

/// A Namespace always starts with `spec.finalizers: ["kubernetes"]`.
fn ensure_namespace_finalizer(object: &mut DynamicObject) {
    let Some(map) = object.data.as_object_mut() else { return };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let finalizers =
        spec.as_object_mut().expect("spec is an object").entry("finalizers").or_insert(json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    let list = finalizers.as_array_mut().expect("finalizers is an array");
    if !list.iter().any(|f| f == NAMESPACE_FINALIZER) {
        list.push(json!(NAMESPACE_FINALIZER));
    }
}

/// A Namespace is labelled with its name (`kubernetes.io/metadata.name`), always.
fn ensure_namespace_label(object: &mut DynamicObject) {
    let Some(name) = object.metadata.name.clone() else { return };
    object.metadata.labels.get_or_insert_with(Default::default).insert(NAMESPACE_NAME_LABEL.to_owned(), name);
}

/// A Service that needs a cluster IP and names none gets one from the service range
/// 10.96.0.0/16 (drawn from the id source; the model does not track collisions), as the real
/// allocator assigns on create. `None` (headless) and ExternalName services get none.
fn allocate_cluster_ip(object: &mut DynamicObject, ids: &mut dyn IdSource, taken: &node_ports::Taken) {
    let Some(spec) = object.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let ip = match spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()) {
        Some(ip) => ip.to_owned(),
        None => {
            // Host part 2..=65534 of the /16: the first address is the `kubernetes` Service's
            // (crate::KUBERNETES_SERVICE_IP), as the real allocator reserves it. An address
            // another Service holds is drawn again (bounded: far fewer Services than addresses).
            let mut draw = || {
                let host = ids.next_u64() % 65_533 + 2;
                format!("10.96.{}.{}", host >> 8, host & 0xFF)
            };
            let mut ip = draw();
            for _ in 0..65_533 {
                if !taken.ips.contains(&ip) {
                    break;
                }
                ip = draw();
            }
            ip
        }
    };
    spec.insert("clusterIP".to_owned(), json!(ip));
    spec.entry("clusterIPs").or_insert_with(|| json!([ip]));
    // Headless Services get their families too (the single-stack cluster's IPv4), as the real
    // REST create defaults them.
    spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
    spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));
}

/// An update that leaves a Service's cluster IP fields empty keeps the allocated ones, as the
/// real Service REST does (a changed IP is refused by validation), unless it no longer needs
/// one (ExternalName).
fn keep_cluster_ip(old: &DynamicObject, new: &mut DynamicObject) {
    let Some(old_spec) = old.data.get("spec").and_then(Value::as_object) else { return };
    let Some(spec) = new.data.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let empty = spec.get(field).is_none_or(|v| v == &json!("") || v == &json!([]) || v.is_null());
        if let (true, Some(v)) = (empty, old_spec.get(field)) {
            spec.insert(field.to_owned(), v.clone());
        }
    }
}

/// A Pod's QoS class (`ComputePodQOS`) from its containers' (and init containers') positive cpu
/// and memory requests and limits, summed: BestEffort with none, Guaranteed when every container
/// limits both and the summed requests equal the summed limits, Burstable otherwise.
pub(crate) fn qos_class(data: &Value) -> &'static str {
    use crate::quota::{ResourceList, add, list_at};
    let positive = |list: ResourceList| -> ResourceList {
        list.into_iter()
            .filter(|(name, amount)| {
                matches!(name.as_str(), "cpu" | "memory") && !amount.is_zero() && !amount.is_negative()
            })
            .collect()
    };
    let (mut requests, mut limits) = (ResourceList::new(), ResourceList::new());
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| data.pointer(&format!("/spec/{l}")).and_then(Value::as_array))
        .flatten();
    for c in containers {
        requests = add(&requests, &positive(list_at(c, "/resources/requests")));
        let own_limits = positive(list_at(c, "/resources/limits"));
        guaranteed &= own_limits.contains_key("cpu") && own_limits.contains_key("memory");
        limits = add(&limits, &own_limits);
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    guaranteed &= requests.iter().all(|(name, request)| limits.get(name) == Some(request));
    if guaranteed && requests.len() == limits.len() { "Guaranteed" } else { "Burstable" }
}

/// `dropNonResizeUpdates`: a write of a Pod's `/resize` keeps the stored Pod (spec and status)
/// but for its containers' (and init containers') `resources` and `resizePolicy`, and the stored
/// labels, annotations, finalizers and owner references (`ResetObjectMetaForStatus`). A list whose
/// containers were added, removed, renamed or reordered is kept as sent, for validation to refuse.
pub(crate) fn keep_stored_pod_but_resize(new: &mut DynamicObject, old: &DynamicObject) {
    let mut lists = Vec::new();
    for list in ["containers", "initContainers"] {
        let pointer = format!("/spec/{list}");
        let sent = new.data.pointer(&pointer).and_then(Value::as_array).cloned().unwrap_or_default();
        let stored = old.data.pointer(&pointer).and_then(Value::as_array).cloned().unwrap_or_default();
        let name = |c: &Value| c.get("name").cloned();
        let aligned = sent.len() == stored.len() && sent.iter().zip(&stored).all(|(a, b)| name(a) == name(b));
        let merged: Vec<Value> = if aligned {
            stored
                .into_iter()
                .zip(&sent)
                .map(|(mut kept, sent)| {
                    if let Some(kept) = kept.as_object_mut() {
                        for field in ["resources", "resizePolicy"] {
                            match sent.get(field).filter(|v| !v.is_null()) {
                                Some(v) => kept.insert(field.to_owned(), v.clone()),
                                None => kept.remove(field),
                            };
                        }
                    }
                    kept
                })
                .collect()
        } else {
            sent
        };
        lists.push((list, merged));
    }
    new.data = old.data.clone();
    if let Some(Value::Object(spec)) = new.data.get_mut("spec") {
        for (list, merged) in lists {
            if merged.is_empty() {
                spec.remove(list);
            } else {
                spec.insert(list.to_owned(), Value::Array(merged));
            }
        }
    }
    reset_object_meta_for_status(new, old);
}

/// A Secret's `stringData` is write-only: its entries are base64-encoded into `data` (winning
/// over `data`'s entries of the same key) and it is never stored, as the real Secret strategy.
fn merge_string_data(t: &Target, object: &mut DynamicObject) {
    if !is_core(&t.ty, "Secret") {
        return;
    }
    let Some(map) = object.data.as_object_mut() else { return };
    let Some(string_data) = map.remove("stringData") else { return };
    let Some(entries) = string_data.as_object() else { return };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    let data = data.as_object_mut().expect("just made an object");
    for (key, value) in entries {
        let bytes = value.as_str().unwrap_or_default().as_bytes().to_vec();
        // ByteString serializes as base64, as `data` holds it: no base64 crate needed.
        if let Ok(encoded) = serde_json::to_value(k8s_openapi::ByteString(bytes)) {
            data.insert(key.clone(), encoded);
        }
    }
}
