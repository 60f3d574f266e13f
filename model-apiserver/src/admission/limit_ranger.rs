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
//! - Defaults on creates only: a Pod's containers change afterwards only through `/resize`, which
//!   may remove no request or limit, so a default would only fill what the Pod never had.
//! - Then, after the object's validation, its `Validate`: each LimitRange item's `min`, `max` and
//!   `maxLimitRequestRatio` against every container and init container (`Container` items), the
//!   Pod's containers together (`Pod` items: summed, the init containers' peak and the sidecars
//!   counted as the scheduler counts them, without `overhead`), and a PersistentVolumeClaim's
//!   storage request on its create and on an update that changes it (`PersistentVolumeClaim`
//!   items), and a Pod's `/resize` as its create (`SupportsAttributes` takes that one
//!   subresource). A violation is 403 Forbidden in upstream's words (`pods "p" is forbidden: maximum
//!   memory usage per Container is 512Mi, but limit is 1Gi`; several as `[a, b]`), for the first
//!   LimitRange (in name order) that has one.
//! - On with the Pod plugins ([`crate::ServerConfig::pod_admission_plugins`]), off by default as
//!   on the server the conformance corpus was recorded on.
//!
//! Not modelled: the defaults a `/resize` would fill in a container that had no request or limit
//! of a resource (upstream mutates the resize too), pod-level `resources`.

use std::collections::BTreeMap;

use kube_core::DynamicObject;
use serde_json::{Map, Value};

use crate::quantity::Amount;
use crate::quota;

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

/// The plugin's `Validate` (`PodValidateLimitFunc`, `PersistentVolumeClaimValidateLimitFunc`) of a
/// Pod's create or a claim's create or update against `ranges`, its namespace's LimitRanges in
/// name order: the refusal's text for the first range that refuses (several violations of one
/// range aggregated as `[a, b]`), as kube-apiserver stops at the first. `old` is the stored
/// claim of an update (a request it already holds is not checked again).
pub(crate) fn validate(
    plural: &str,
    object: &DynamicObject,
    old: Option<&DynamicObject>,
    ranges: &[&DynamicObject],
) -> Result<(), String> {
    for range in ranges {
        let items = range.data.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten();
        let mut errors = Vec::new();
        for item in items {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
            let constraints = Constraints::of(item);
            match (plural, kind) {
                ("pods", "Container") => {
                    for list in ["containers", "initContainers"] {
                        let containers =
                            object.data.pointer(&format!("/spec/{list}")).and_then(Value::as_array);
                        for container in containers.into_iter().flatten() {
                            let requests = quota::list_at(container, "/resources/requests");
                            let limits = quota::list_at(container, "/resources/limits");
                            constraints.check(kind, &requests, &limits, &mut errors);
                        }
                    }
                }
                ("pods", "Pod") => {
                    let requests = quota::containers_total(&object.data, "requests");
                    let limits = quota::containers_total(&object.data, "limits");
                    constraints.check(kind, &requests, &limits, &mut errors);
                }
                ("persistentvolumeclaims", "PersistentVolumeClaim") => {
                    let requests = quota::list_at(&object.data, "/spec/resources/requests");
                    let old_requests =
                        old.map(|o| quota::list_at(&o.data, "/spec/resources/requests")).unwrap_or_default();
                    let changed =
                        |name: &str| requests.get(name).is_none_or(|r| old_requests.get(name) != Some(r));
                    for (name, min) in constraints.min.iter().filter(|(name, _)| changed(name)) {
                        errors.extend(min_constraint(
                            kind,
                            name,
                            min,
                            &requests,
                            &quota::ResourceList::new(),
                        ));
                    }
                    for (name, max) in constraints.max.iter().filter(|(name, _)| changed(name)) {
                        errors.extend(max_request_constraint(kind, name, max, &requests));
                    }
                }
                _ => {}
            }
        }
        if let Some(message) = aggregate(errors) {
            return Err(message);
        }
    }
    Ok(())
}

/// A LimitRange item's `min`, `max` and `maxLimitRequestRatio`, those that parse.
struct Constraints {
    min: Vec<(String, Amount)>,
    max: Vec<(String, Amount)>,
    ratio: Vec<(String, Amount)>,
}

impl Constraints {
    fn of(item: &Value) -> Constraints {
        let list = |key: &str| quota::list_of(item.get(key)).into_iter().collect();
        Constraints { min: list("min"), max: list("max"), ratio: list("maxLimitRequestRatio") }
    }

    /// A container's or a Pod's requests and limits against every constraint.
    fn check(
        &self,
        kind: &str,
        requests: &quota::ResourceList,
        limits: &quota::ResourceList,
        errors: &mut Vec<String>,
    ) {
        for (name, min) in &self.min {
            errors.extend(min_constraint(kind, name, min, requests, limits));
        }
        for (name, max) in &self.max {
            errors.extend(max_constraint(kind, name, max, requests, limits));
        }
        for (name, ratio) in &self.ratio {
            errors.extend(ratio_constraint(kind, name, ratio, requests, limits));
        }
    }
}

/// `minConstraint`.
fn min_constraint(
    kind: &str,
    name: &str,
    min: &Amount,
    requests: &quota::ResourceList,
    limits: &quota::ResourceList,
) -> Option<String> {
    let Some(request) = requests.get(name) else {
        return Some(format!("minimum {name} usage per {kind} is {min}.  No request is specified"));
    };
    if min > request {
        return Some(format!("minimum {name} usage per {kind} is {min}, but request is {request}"));
    }
    match limits.get(name) {
        Some(limit) if min > limit => {
            Some(format!("minimum {name} usage per {kind} is {min}, but limit is {limit}"))
        }
        _ => None,
    }
}

/// `maxRequestConstraint` (a claim's: it has requests only).
fn max_request_constraint(
    kind: &str,
    name: &str,
    max: &Amount,
    requests: &quota::ResourceList,
) -> Option<String> {
    match requests.get(name) {
        None => Some(format!("maximum {name} usage per {kind} is {max}.  No request is specified")),
        Some(request) if request > max => {
            Some(format!("maximum {name} usage per {kind} is {max}, but request is {request}"))
        }
        Some(_) => None,
    }
}

/// `maxConstraint`.
fn max_constraint(
    kind: &str,
    name: &str,
    max: &Amount,
    requests: &quota::ResourceList,
    limits: &quota::ResourceList,
) -> Option<String> {
    let Some(limit) = limits.get(name) else {
        return Some(format!("maximum {name} usage per {kind} is {max}.  No limit is specified"));
    };
    if limit > max {
        return Some(format!("maximum {name} usage per {kind} is {max}, but limit is {limit}"));
    }
    match requests.get(name) {
        Some(request) if request > max => {
            Some(format!("maximum {name} usage per {kind} is {max}, but request is {request}"))
        }
        _ => None,
    }
}

/// `limitRequestRatioConstraint`: the limit may be at most `ratio` times the request; the
/// refusal shows the ratio to six decimals, rounded half to even.
fn ratio_constraint(
    kind: &str,
    name: &str,
    ratio: &Amount,
    requests: &quota::ResourceList,
    limits: &quota::ResourceList,
) -> Option<String> {
    let prefix = format!("{name} max limit to request ratio per {kind} is {ratio}");
    let Some(request) = requests.get(name).filter(|r| !r.is_zero()) else {
        return Some(format!("{prefix}, but no request is specified or request is 0"));
    };
    let Some(limit) = limits.get(name).filter(|l| !l.is_zero()) else {
        return Some(format!("{prefix}, but no limit is specified or limit is 0"));
    };
    let (limit, request, ratio) = (limit.nanos().abs(), request.nanos().abs(), ratio.nanos());
    // limit > request × ratio, in billionths: limit × 10^9 against request × ratio.
    let exceeds = match (limit.checked_mul(1_000_000_000), request.checked_mul(ratio)) {
        (Some(l), Some(r)) => l > r,
        _ => (limit as f64) * 1e9 > (request as f64) * (ratio as f64),
    };
    exceeds.then(|| format!("{prefix}, but provided ratio is {}", six_decimals(limit, request)))
}

/// `limit / request` to six decimals, rounded half to even (`inf.Dec.QuoRound`).
fn six_decimals(limit: i128, request: i128) -> String {
    let scaled = limit.checked_mul(1_000_000).map(|l| (l / request, l % request));
    let Some((mut quotient, remainder)) = scaled else {
        return format!("{:.6}", limit as f64 / request as f64);
    };
    let twice = remainder * 2;
    if twice > request || (twice == request && quotient % 2 == 1) {
        quotient += 1;
    }
    format!("{}.{:06}", quotient / 1_000_000, quotient % 1_000_000)
}

/// `utilerrors.NewAggregate(errs).Error()`: one message alone, several (repeats dropped) as
/// `[a, b]`; `None` for none.
fn aggregate(errors: Vec<String>) -> Option<String> {
    let mut unique: Vec<String> = Vec::new();
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}
