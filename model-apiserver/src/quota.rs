//! The quota system's evaluators (`pkg/quota/v1/evaluator/core` and the generic object count
//! evaluator of `k8s.io/apiserver/pkg/quota/v1/generic`): what a Pod, Service,
//! PersistentVolumeClaim or any other object counts against a ResourceQuota, which quotas match
//! it, and the resource lists' arithmetic (`quota.Add`, `Mask`, `LessThanOrEqual`...).
//!
//! Shared by kube-apiserver's `ResourceQuota` admission plugin
//! ([`crate::admission::resource_quota`]) and the quota controller of the `controllers` crate,
//! as upstream's plugin and controller share one registry of evaluators.
//!
//! - Pods: `pods` and the compute resources (`cpu`, `memory`, `ephemeral-storage`, their
//!   `requests.` and `limits.` forms, `hugepages-*`, `requests.<extended>`) of a Pod that is not
//!   terminal and not past its deletion's grace period (`QuotaV1Pod`), from `PodRequests` and
//!   `PodLimits` (containers summed, init containers' peak, sidecars added, `overhead`; a
//!   container being resized in place counts the larger of its spec and what the kubelet reports,
//!   `UseStatusResources`), and `count/pods` for every Pod; a Pod's `/resize` is charged what it
//!   adds. Scopes `Terminating`, `NotTerminating`, `BestEffort`,
//!   `NotBestEffort`, `PriorityClass` (every operator) and `CrossNamespacePodAffinity`.
//! - Services: `services`, `count/services`, `services.loadbalancers`, `services.nodeports`.
//! - PersistentVolumeClaims: `persistentvolumeclaims`, `count/persistentvolumeclaims`,
//!   `requests.storage` and their `<class>.storageclass.storage.k8s.io/` forms.
//! - Any other resource: `count/<resource>[.<group>]`, and the legacy names `configmaps`,
//!   `secrets`, `resourcequotas` and `replicationcontrollers`. Events and the virtual review
//!   resources are not counted (`DefaultIgnoredResources`).
//!
//! Not modelled: the `VolumeAttributesClass` scope, a claim's `status.allocatedResources` (the
//! recovery from a failed expansion).

use std::collections::BTreeMap;

use jiff::Timestamp;
use kube_core::DynamicObject;
use serde_json::{Map, Value, json};

use crate::quantity::{Amount, Format};

/// Resource names and their amounts, in name order (`corev1.ResourceList`).
pub type ResourceList = BTreeMap<String, Amount>;

/// The resources counted for Pods, but for the prefixed ones (`podResources`).
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The resources whose quota requires every container to state them (`validationSet`).
const REQUIRED_OF_CONTAINERS: &[&str] =
    &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

/// The resources counted for Services.
const SERVICE_RESOURCES: &[&str] =
    &["count/services", "services", "services.loadbalancers", "services.nodeports"];

/// The resources counted for claims, but for the per-class ones.
const CLAIM_RESOURCES: &[&str] =
    &["persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage"];

/// A claim's per-class resources: `<class>` + this + `persistentvolumeclaims` or `requests.storage`.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The resources the quota system never counts (`DefaultIgnoredResources`).
const IGNORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("", "events"),
    ("events.k8s.io", "events"),
];

/// The core resources whose object counts have a name of their own (`legacyObjectCountAliases`).
const LEGACY_ALIASES: &[&str] = &["configmaps", "resourcequotas", "replicationcontrollers", "secrets"];

/// How the quota system measures one resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evaluator {
    /// Core Pods (`podEvaluator`).
    Pods,
    /// Core Services (`serviceEvaluator`).
    Services,
    /// Core PersistentVolumeClaims (`pvcEvaluator`).
    Claims,
    /// Any other resource: its object count (`objectCountEvaluator`).
    Count {
        /// The API group (empty for core).
        group: String,
        /// The resource (plural).
        plural: String,
    },
}

impl Evaluator {
    /// The evaluator of a resource; `None` for those the quota system ignores.
    pub fn of(group: &str, plural: &str) -> Option<Evaluator> {
        if IGNORED.contains(&(group, plural)) {
            return None;
        }
        Some(match (group, plural) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::Claims,
            _ => Evaluator::Count { group: group.to_owned(), plural: plural.to_owned() },
        })
    }

    /// The evaluator a quota's resource name belongs to: `count/<resource>[.<group>]`, a legacy
    /// object count or one of the Pod, Service and claim resources. `None` for a name none
    /// measures.
    pub fn of_resource_name(name: &str) -> Option<Evaluator> {
        if let Some(resource) = name.strip_prefix("count/") {
            let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
            return Evaluator::of(group, plural);
        }
        if LEGACY_ALIASES.contains(&name) {
            return Evaluator::of("", name);
        }
        [Evaluator::Pods, Evaluator::Services, Evaluator::Claims]
            .into_iter()
            .find(|e| !e.matching_resources([name]).is_empty())
    }

    /// The group and resource measured.
    pub fn group_resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::Claims => ("", "persistentvolumeclaims"),
            Evaluator::Count { group, plural } => (group, plural),
        }
    }

    /// Whether a write can change what this resource counts (`Handles`): a create, for Services
    /// and claims an update too, and a Pod's `/resize`; no other subresource's write.
    pub fn handles(&self, operation: &str, subresource: Option<&str>) -> bool {
        if let Some(subresource) = subresource {
            return matches!(self, Evaluator::Pods) && subresource == "resize" && operation == "update";
        }
        match self {
            Evaluator::Services | Evaluator::Claims => matches!(operation, "create" | "update"),
            Evaluator::Pods | Evaluator::Count { .. } => operation == "create",
        }
    }

    /// The names among `names` that this evaluator measures (`MatchingResources`).
    pub fn matching_resources<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Vec<String> {
        names.into_iter().filter(|name| self.measures(name)).map(str::to_owned).collect()
    }

    fn measures(&self, name: &str) -> bool {
        match self {
            Evaluator::Pods => {
                POD_RESOURCES.contains(&name)
                    || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || name.strip_prefix("requests.").is_some_and(|r| !is_native_resource(r))
            }
            Evaluator::Services => SERVICE_RESOURCES.contains(&name),
            Evaluator::Claims => {
                CLAIM_RESOURCES.contains(&name)
                    || name
                        .split_once(STORAGE_CLASS_SUFFIX)
                        .is_some_and(|(_, r)| r == "persistentvolumeclaims" || r == "requests.storage")
            }
            Evaluator::Count { group, plural } => {
                name == object_count_name(group, plural)
                    || (group.is_empty() && LEGACY_ALIASES.contains(&plural.as_str()) && name == plural)
            }
        }
    }

    /// What `object` counts (`Usage`) at `now` (a Pod past its deletion's grace period counts
    /// only as an object).
    pub fn usage(&self, object: &DynamicObject, now: Timestamp) -> ResourceList {
        match self {
            Evaluator::Pods => pod_usage(object, now),
            Evaluator::Services => service_usage(&object.data),
            Evaluator::Claims => claim_usage(object),
            Evaluator::Count { group, plural } => {
                let mut usage = ResourceList::new();
                usage.insert(object_count_name(group, plural), Amount::count(1));
                if group.is_empty() && LEGACY_ALIASES.contains(&plural.as_str()) {
                    usage.insert(plural.clone(), Amount::count(1));
                }
                usage
            }
        }
    }

    /// Whether `object` is in every scope of `quota` (`MatchingScopes` over all its selectors):
    /// only Pods have scopes, so a scoped quota matches no other object.
    pub fn in_scopes(&self, quota: &DynamicObject, object: &DynamicObject) -> bool {
        let selectors = scope_selectors(quota);
        match self {
            Evaluator::Pods => selectors.iter().all(|s| pod_in_scope(s, object)),
            _ => selectors.is_empty(),
        }
    }

    /// Whether `quota` limits `object` (`generic.Matches`): its status names a resource this
    /// evaluator measures, and the object is in its scopes.
    pub fn matches(&self, quota: &DynamicObject, object: &DynamicObject) -> bool {
        let hard = list_at(&quota.data, "/status/hard");
        !self.matching_resources(hard.keys().map(String::as_str)).is_empty() && self.in_scopes(quota, object)
    }

    /// A Pod's containers must state what a quota of `required` limits (`Constraints`): the
    /// refusal's text, `must specify limits.cpu for: app; requests.cpu for: app,init`.
    pub fn constraints(&self, required: &[String], object: &DynamicObject) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: Vec<&str> =
            required.iter().map(String::as_str).filter(|r| REQUIRED_OF_CONTAINERS.contains(r)).collect();
        let mut missing: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
        for container in
            containers(&object.data, "containers").chain(containers(&object.data, "initContainers"))
        {
            let usage = compute_usage(
                &list_at(container, "/resources/requests"),
                &list_at(container, "/resources/limits"),
            );
            let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
            for resource in required.iter().filter(|r| !usage.contains_key(**r)) {
                missing.entry(resource).or_default().insert(name.to_owned());
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(resource, names)| {
                format!("{resource} for: {}", names.iter().cloned().collect::<Vec<_>>().join(","))
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }

    /// The usage of `objects` that `quota` counts for `resources` (`UsageStats`): every named
    /// resource starts at zero, then each object in the quota's scopes adds its usage.
    pub fn usage_stats<'o>(
        &self,
        quota: &DynamicObject,
        resources: &[String],
        objects: impl IntoIterator<Item = &'o DynamicObject>,
        now: Timestamp,
    ) -> ResourceList {
        let mut used: ResourceList =
            resources.iter().map(|r| (r.clone(), Amount::zero(Format::DecimalSi))).collect();
        for object in objects {
            if self.in_scopes(quota, object) {
                used = add(&used, &mask(&self.usage(object, now), resources));
            }
        }
        used
    }
}

/// The object count name of a resource: `count/<resource>` for core, `count/<resource>.<group>`.
pub fn object_count_name(group: &str, plural: &str) -> String {
    if group.is_empty() { format!("count/{plural}") } else { format!("count/{plural}.{group}") }
}

/// Whether a resource name is Kubernetes' own (no domain, or a `kubernetes.io` one).
fn is_native_resource(name: &str) -> bool {
    match name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    }
}

/// Whether a request's resource is an extended one (`IsExtendedResourceName`): not native, not
/// prefixed `requests.`, with a domain.
fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name) && !name.starts_with("requests.") && name.contains('/')
}

/// One of a quota's scope selectors (`ScopedResourceSelectorRequirement`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSelector {
    /// `Terminating`, `BestEffort`, `PriorityClass`...
    pub scope: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In` and `NotIn`.
    pub values: Vec<String>,
}

/// A quota's scopes (each as `Exists`), then its `scopeSelector`'s expressions
/// (`getScopeSelectorsFromQuota`).
pub fn scope_selectors(quota: &DynamicObject) -> Vec<ScopeSelector> {
    let mut selectors: Vec<ScopeSelector> = quota
        .data
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|scope| ScopeSelector {
            scope: scope.to_owned(),
            operator: "Exists".to_owned(),
            values: Vec::new(),
        })
        .collect();
    let expressions = quota.data.pointer("/spec/scopeSelector/matchExpressions").and_then(Value::as_array);
    for expression in expressions.into_iter().flatten() {
        let text = |key: &str| expression.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let values = expression.get("values").and_then(Value::as_array).into_iter().flatten();
        selectors.push(ScopeSelector {
            scope: text("scopeName"),
            operator: text("operator"),
            values: values.filter_map(Value::as_str).map(str::to_owned).collect(),
        });
    }
    selectors
}

/// `podMatchesScopeFunc`.
fn pod_in_scope(selector: &ScopeSelector, pod: &DynamicObject) -> bool {
    let spec = pod.data.get("spec");
    let terminating =
        spec.and_then(|s| s.get("activeDeadlineSeconds")).and_then(Value::as_i64).is_some_and(|s| s >= 0);
    match selector.scope.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => is_best_effort(&pod.data),
        "NotBestEffort" => !is_best_effort(&pod.data),
        "PriorityClass" => {
            let class = spec
                .and_then(|s| s.get("priorityClassName"))
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty());
            match selector.operator.as_str() {
                "Exists" => class.is_some(),
                "DoesNotExist" => class.is_none(),
                "In" => class.is_some_and(|c| selector.values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| !selector.values.iter().any(|v| v == c)),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(&pod.data),
        _ => false,
    }
}

/// Whether a Pod's affinity or anti-affinity term names other namespaces.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term.get("namespaces").and_then(Value::as_array).is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(affinity) = pod.pointer(&format!("/spec/affinity/{kind}")) else { return false };
        let required =
            affinity.get("requiredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array);
        let preferred =
            affinity.get("preferredDuringSchedulingIgnoredDuringExecution").and_then(Value::as_array);
        required.into_iter().flatten().any(cross)
            || preferred.into_iter().flatten().filter_map(|w| w.get("podAffinityTerm")).any(cross)
    })
}

/// Whether a Pod is of the BestEffort QoS class: no container states a non-zero CPU or memory
/// request or limit (`GetPodQOS`).
fn is_best_effort(pod: &Value) -> bool {
    !containers(pod, "containers").chain(containers(pod, "initContainers")).any(|c| {
        ["/resources/requests", "/resources/limits"].iter().any(|at| {
            let list = list_at(c, at);
            ["cpu", "memory"].iter().any(|r| list.get(*r).is_some_and(|a| !a.is_zero()))
        })
    })
}

/// The containers of a Pod's spec at `key` (`containers`, `initContainers`).
fn containers<'p>(pod: &'p Value, key: &str) -> impl Iterator<Item = &'p Value> + 'p {
    pod.get("spec").and_then(|s| s.get(key)).and_then(Value::as_array).into_iter().flatten()
}

/// The quantities of the map at `pointer`, those that parse.
pub fn list_at(value: &Value, pointer: &str) -> ResourceList {
    list_of(value.pointer(pointer))
}

/// The quantities of a JSON map, those that parse.
pub fn list_of(map: Option<&Value>) -> ResourceList {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, v)| Some((name.clone(), Amount::parse(v.as_str()?)?)))
        .collect()
}

/// A resource list as JSON, each amount in canonical form.
pub fn list_to_value(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect::<Map<_, _>>())
}

/// `quota.Add`.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut sum = a.clone();
    for (name, amount) in b {
        sum.entry(name.clone()).and_modify(|s| *s = *s + *amount).or_insert(*amount);
    }
    sum
}

/// `quota.SubtractWithNonNegativeResult`.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut difference = ResourceList::new();
    for (name, amount) in a {
        let left = b.get(name).map_or(*amount, |other| *amount - *other);
        difference
            .insert(name.clone(), if left.is_negative() { Amount::zero(Format::DecimalSi) } else { left });
    }
    for name in b.keys() {
        difference.entry(name.clone()).or_insert(Amount::zero(Format::DecimalSi));
    }
    difference
}

/// `quota.Mask`: the entries of `list` named in `names`.
pub fn mask(list: &ResourceList, names: &[String]) -> ResourceList {
    list.iter().filter(|(k, _)| names.contains(k)).map(|(k, v)| (k.clone(), *v)).collect()
}

/// `quota.RemoveZeros`.
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter().filter(|(_, v)| !v.is_zero()).map(|(k, v)| (k.clone(), *v)).collect()
}

/// `quota.LessThanOrEqual`: the names whose amount in `a` exceeds the one in `b` (names `b` lacks
/// are not limited).
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    a.iter().filter(|(k, v)| b.get(*k).is_some_and(|limit| *v > limit)).map(|(k, _)| k.clone()).collect()
}

/// `prettyPrint`: `name=amount`, comma-separated, in name order.
pub fn pretty(list: &ResourceList) -> String {
    list.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `podComputeUsageHelper`: what requests and limits count.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("pods".to_owned(), Amount::count(1));
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(resource) {
            usage.insert(resource.to_owned(), *request);
            usage.insert(format!("requests.{resource}"), *request);
        }
        if let Some(limit) = limits.get(resource) {
            usage.insert(format!("limits.{resource}"), *limit);
        }
    }
    for (resource, request) in requests {
        if resource.starts_with("hugepages-") {
            usage.insert(resource.clone(), *request);
            usage.insert(format!("requests.{resource}"), *request);
        }
        if is_extended_resource(resource) {
            usage.insert(format!("requests.{resource}"), *request);
        }
    }
    usage
}

/// `PodUsageFunc`.
fn pod_usage(pod: &DynamicObject, now: Timestamp) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("count/pods".to_owned(), Amount::count(1));
    if !counts_compute(pod, now) {
        return usage;
    }
    let requests = pod_total(&pod.data, "requests");
    let limits = pod_total(&pod.data, "limits");
    add(&usage, &compute_usage(&requests, &limits))
}

/// Whether the kubelet found a Pod's resize infeasible (`IsPodResizeInfeasible`: its
/// `PodResizePending` condition's reason is `Infeasible`).
pub fn resize_infeasible(pod: &Value) -> bool {
    pod.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodResizePending")
            && c.get("reason").and_then(Value::as_str) == Some("Infeasible")
    })
}

/// What one container requests or limits (`which`) as the quota and the scheduler count it with
/// in-place resize (`PodResourcesOptions.UseStatusResources`): once the kubelet reports the
/// container's `resources`, the larger of the spec's, the reported and (for requests) the
/// allocated amounts, since a resize down frees nothing before the node has made it; a resize the
/// kubelet found infeasible counts only what the node holds. `status_key` is the status list the
/// container's status is in; `None` for a container whose status does not count (an init
/// container that is not a sidecar).
fn container_list(pod: &Value, container: &Value, which: &str, status_key: Option<&str>) -> ResourceList {
    let spec = list_at(container, &format!("/resources/{which}"));
    let name = container.get("name");
    let status = status_key.and_then(|key| {
        pod.pointer(&format!("/status/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|s| s.get("name") == name)
    });
    let Some(reported) = status.and_then(|s| s.get("resources")).filter(|r| r.is_object()) else {
        return spec;
    };
    let mut list = list_at(reported, &format!("/{which}"));
    if which == "requests" {
        max_into(&mut list, &list_of(status.and_then(|s| s.get("allocatedResources"))));
    }
    if !resize_infeasible(pod) {
        max_into(&mut list, &spec);
    }
    list
}

/// `QuotaV1Pod`: a Pod counts its compute resources unless it is terminal or its deletion's
/// grace period has passed.
fn counts_compute(pod: &DynamicObject, now: Timestamp) -> bool {
    let phase = pod.data.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let meta = &pod.metadata;
    if let (Some(deleted), Some(grace)) = (&meta.deletion_timestamp, meta.deletion_grace_period_seconds) {
        let ends = deleted.0.checked_add(jiff::SignedDuration::from_secs(grace));
        if ends.is_ok_and(|ends| now > ends) {
            return false;
        }
    }
    true
}

/// `PodRequests` or `PodLimits` (`which` is `requests` or `limits`): the containers' sum, sidecars
/// (init containers that restart) added to it, the peak of each init container (with the sidecars
/// started before it) taken if higher, and the Pod's `overhead` (to the limits it has only); a
/// container being resized counts as [`container_list`] says.
fn pod_total(pod: &Value, which: &str) -> ResourceList {
    let total = sum_containers(pod, which, true);
    let overhead = list_at(pod, "/spec/overhead");
    if which == "limits" {
        // Only to the limits the Pod has.
        let limited: Vec<String> = total.keys().cloned().collect();
        return add(&total, &mask(&overhead, &limited));
    }
    add(&total, &overhead)
}

/// What a Pod's containers request or limit together (`which` is `requests` or `limits`), as
/// [`Evaluator::usage`] counts it but without the `overhead`: the LimitRanger's `podRequests` and
/// `podLimits` for its `Pod` items.
pub fn containers_total(pod: &Value, which: &str) -> ResourceList {
    sum_containers(pod, which, false)
}

/// [`containers_total`], counting what the kubelet reports of a resize when `use_status`.
fn sum_containers(pod: &Value, which: &str, use_status: bool) -> ResourceList {
    let mut total = ResourceList::new();
    for container in containers(pod, "containers") {
        let key = use_status.then_some("containerStatuses");
        total = add(&total, &container_list(pod, container, which, key));
    }
    let (mut sidecars, mut init_peak) = (ResourceList::new(), ResourceList::new());
    for container in containers(pod, "initContainers") {
        let sidecar = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        let key = (use_status && sidecar).then_some("initContainerStatuses");
        let own = container_list(pod, container, which, key);
        let during = if sidecar {
            total = add(&total, &own);
            sidecars = add(&sidecars, &own);
            sidecars.clone()
        } else {
            add(&own, &sidecars)
        };
        max_into(&mut init_peak, &during);
    }
    max_into(&mut total, &init_peak);
    total
}

/// `maxResourceList`: each of `other`'s amounts replaces `list`'s when larger or missing.
fn max_into(list: &mut ResourceList, other: &ResourceList) {
    for (name, amount) in other {
        match list.get(name) {
            Some(current) if current >= amount => {}
            _ => {
                list.insert(name.clone(), *amount);
            }
        }
    }
}

/// The Service evaluator's usage.
fn service_usage(service: &Value) -> ResourceList {
    let spec = service.get("spec");
    let ports =
        spec.and_then(|s| s.get("ports")).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let count = |n: usize| Amount::count(i64::try_from(n).unwrap_or(i64::MAX));
    let mut usage = ResourceList::new();
    usage.insert("count/services".to_owned(), Amount::count(1));
    usage.insert("services".to_owned(), Amount::count(1));
    usage.insert("services.loadbalancers".to_owned(), Amount::zero(Format::DecimalSi));
    usage.insert("services.nodeports".to_owned(), Amount::zero(Format::DecimalSi));
    match spec.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("NodePort") => {
            usage.insert("services.nodeports".to_owned(), count(ports.len()));
        }
        Some("LoadBalancer") => {
            let allocates =
                spec.and_then(|s| s.get("allocateLoadBalancerNodePorts")).and_then(Value::as_bool);
            let node_ports = if allocates == Some(false) {
                ports
                    .iter()
                    .filter(|p| p.get("nodePort").and_then(Value::as_i64).is_some_and(|n| n != 0))
                    .count()
            } else {
                ports.len()
            };
            usage.insert("services.nodeports".to_owned(), count(node_ports));
            usage.insert("services.loadbalancers".to_owned(), Amount::count(1));
        }
        _ => {}
    }
    usage
}

/// The claim evaluator's usage: the claim, its storage request, both per class too.
fn claim_usage(claim: &DynamicObject) -> ResourceList {
    let mut usage = ResourceList::new();
    usage.insert("persistentvolumeclaims".to_owned(), Amount::count(1));
    usage.insert("count/persistentvolumeclaims".to_owned(), Amount::count(1));
    let beta =
        claim.metadata.annotations.as_ref().and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"));
    let class = beta
        .cloned()
        .or_else(|| claim.data.pointer("/spec/storageClassName").and_then(Value::as_str).map(str::to_owned))
        .filter(|c| !c.is_empty());
    if let Some(class) = &class {
        usage.insert(format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), Amount::count(1));
    }
    if let Some(storage) = list_at(&claim.data, "/spec/resources/requests").get("storage") {
        usage.insert("requests.storage".to_owned(), *storage);
        if let Some(class) = &class {
            usage.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), *storage);
        }
    }
    usage
}
