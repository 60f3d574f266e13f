//! kube-apiserver's `LimitRanger` admission plugin (`plugin/pkg/admission/limitranger`), on in
//! every cluster: the defaults of a namespace's LimitRanges applied to the Pods created in it.
//!
//! - For each LimitRange of the Pod's namespace (in name order, where upstream takes its
//!   lister's), the default limits (`default`) and requests (`defaultRequest`) of its items of
//!   type `Container` (a later item's value for a resource replacing an earlier one's,
//!   `defaultContainerResourceRequirements`) are written into every container, then every init
//!   container, that lacks a limit or request of that resource (`mergeContainerResources`). A
//!   LimitRange holds its defaulted items ([`crate::defaults`]: a `max` gives a default limit, a
//!   default limit a default request), so a LimitRange with only a `max` sets both.
//! - The Pod is annotated `kubernetes.io/limit-ranger` with what was set: `LimitRanger plugin
//!   set: cpu, memory request for container app; cpu limit for container app; memory request for
//!   init container setup` (resources sorted, requests before limits, containers in order, init
//!   containers after), by the last LimitRange that set anything.
//! - Creates only: a Pod's containers cannot change afterwards (`SupportsAttributes`).
//! - On with the Pod plugins ([`crate::ServerConfig::pod_admission_plugins`]), off by default as
//!   on the server the conformance corpus was recorded on.
//!
//! Not modelled: the plugin's validation (`min`, `max`, `maxLimitRequestRatio` of Container,
//! Pod and PersistentVolumeClaim items, refused with 403), which needs quantity comparison as
//! upstream's `MilliValue`.

use std::collections::BTreeMap;

use kube_core::DynamicObject;
use serde_json::{Map, Value};

/// The annotation that records what the plugin set.
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The default (limits, requests) of `range`'s Container items.
fn container_defaults(range: &DynamicObject) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
    let (mut limits, mut requests) = (BTreeMap::new(), BTreeMap::new());
    let items =
        range.data.pointer("/spec/limits").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for item in items.iter().filter(|i| i.get("type").and_then(Value::as_str) == Some("Container")) {
        for (key, into) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
            for (resource, value) in item.get(key).and_then(Value::as_object).into_iter().flatten() {
                into.insert(resource.clone(), value.clone());
            }
        }
    }
    (limits, requests)
}

/// Write the defaults a container lacks into its `resources`; the annotation parts that say so.
fn merge_container(
    container: &mut Map<String, Value>,
    (limits, requests): &(BTreeMap<String, Value>, BTreeMap<String, Value>),
    kind: &str,
    notes: &mut Vec<String>,
) {
    let name = container.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let resources = crate::defaults::object_at(container, "resources");
    let mut set = |key: &str, defaults: &BTreeMap<String, Value>| {
        let mut names = Vec::new();
        for (resource, value) in defaults {
            let map = crate::defaults::object_at(resources, key);
            if !map.contains_key(resource) {
                map.insert(resource.clone(), value.clone());
                names.push(resource.clone());
            }
        }
        if resources.get(key).and_then(Value::as_object).is_some_and(Map::is_empty) {
            resources.remove(key);
        }
        names
    };
    let set_limits = set("limits", limits);
    let set_requests = set("requests", requests);
    if !set_requests.is_empty() {
        notes.push(format!("{} request for {kind} {name}", set_requests.join(", ")));
    }
    if !set_limits.is_empty() {
        notes.push(format!("{} limit for {kind} {name}", set_limits.join(", ")));
    }
}

/// The plugin's `Admit` of the create of `pod`, `ranges` being its namespace's LimitRanges in
/// name order.
pub(crate) fn admit_create(pod: &mut DynamicObject, ranges: &[&DynamicObject]) {
    for range in ranges {
        let defaults = container_defaults(range);
        if defaults.0.is_empty() && defaults.1.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        let spec = super::pod_spec(pod);
        for (list, kind) in [("containers", "container"), ("initContainers", "init container")] {
            let containers = spec.get_mut(list).and_then(Value::as_array_mut);
            for container in containers.into_iter().flatten().filter_map(Value::as_object_mut) {
                merge_container(container, &defaults, kind, &mut notes);
            }
        }
        if !notes.is_empty() {
            let value = format!("LimitRanger plugin set: {}", notes.join("; "));
            pod.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(LIMIT_RANGER_ANNOTATION.to_owned(), value);
        }
    }
}
