//! Defaulting of built-in kinds: the fields the real server fills in when it decodes an object
//! (`pkg/apis/*/v1/defaults.go`), on create and on every update, so that a controller that
//! compares its desired spec with the stored one meets the same defaulted fields it would meet
//! in a cluster.
//!
//! Covered: Pod specs (also inside workload templates) and their containers, Deployment,
//! ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, Service, PersistentVolume,
//! PersistentVolumeClaim, Secret, LimitRange,
//! CustomResourceDefinition names and conversion, the Namespace name label, PodTemplate,
//! HorizontalPodAutoscaler, NetworkPolicy, StorageClass, EndpointSlice and the admission webhook
//! configurations. Admission plugins' additions (service account token volumes, default tolerations,
//! priority) are no defaults: see [`crate::admission`].

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

/// Apply the defaults of `ty` to an object's content (everything but `metadata`).
pub(crate) fn apply(ty: &ResourceType, data: &mut Value) {
    if ty.custom {
        return;
    }
    let Some(obj) = data.as_object_mut() else { return };
    match (ty.api.group.as_str(), ty.api.kind.as_str()) {
        ("", "Pod") => {
            let spec = object_at(obj, "spec");
            pod_spec(spec);
            pod_only(spec);
        }
        ("apps", "Deployment") => {
            let spec = object_at(obj, "spec");
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            spec.entry("progressDeadlineSeconds").or_insert(json!(600));
            let strategy = object_at(spec, "strategy");
            strategy.entry("type").or_insert(json!("RollingUpdate"));
            if strategy.get("type") == Some(&json!("RollingUpdate")) {
                let rolling = object_at(strategy, "rollingUpdate");
                rolling.entry("maxUnavailable").or_insert(json!("25%"));
                rolling.entry("maxSurge").or_insert(json!("25%"));
            }
            template(spec);
        }
        ("apps", "ReplicaSet") => {
            let spec = object_at(obj, "spec");
            spec.entry("replicas").or_insert(json!(1));
            template(spec);
        }
        ("apps", "StatefulSet") => {
            let spec = object_at(obj, "spec");
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("podManagementPolicy").or_insert(json!("OrderedReady"));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            let strategy = object_at(spec, "updateStrategy");
            strategy.entry("type").or_insert(json!("RollingUpdate"));
            if strategy.get("type") == Some(&json!("RollingUpdate")) {
                object_at(strategy, "rollingUpdate").entry("partition").or_insert(json!(0));
            }
            let retention = object_at(spec, "persistentVolumeClaimRetentionPolicy");
            retention.entry("whenDeleted").or_insert(json!("Retain"));
            retention.entry("whenScaled").or_insert(json!("Retain"));
            if let Some(claims) = spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut) {
                // SetDefaults_PersistentVolumeClaim and SetDefaults_PersistentVolumeClaimSpec.
                for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
                    object_at(claim, "spec").entry("volumeMode").or_insert(json!("Filesystem"));
                    object_at(claim, "status").entry("phase").or_insert(json!("Pending"));
                }
            }
            template(spec);
        }
        ("batch", "Job") => {
            let spec = object_at(obj, "spec");
            if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
                spec.insert("completions".to_owned(), json!(1));
            }
            spec.entry("parallelism").or_insert(json!(1));
            let per_index = spec.get("backoffLimitPerIndex").is_some_and(|l| !l.is_null());
            spec.entry("backoffLimit").or_insert(json!(if per_index { i32::MAX } else { 6 }));
            spec.entry("completionMode").or_insert(json!("NonIndexed"));
            spec.entry("suspend").or_insert(json!(false));
            let failure_policy = spec.get("podFailurePolicy").is_some_and(|p| !p.is_null());
            let replacement = if failure_policy { "Failed" } else { "TerminatingOrFailed" };
            spec.entry("podReplacementPolicy").or_insert(json!(replacement));
            // Current SetDefaults_Job also sets `manualSelector: false` (kubernetes#120206,
            // 1.29); left out while the conformance corpus (1.24) has no drift entry for it.
            if let Some(policy) = spec.get_mut("podFailurePolicy").and_then(Value::as_object_mut) {
                for rule in objects_in(policy, "rules") {
                    for pattern in objects_in(rule, "onPodConditions") {
                        default_to(pattern, "status", json!("True"));
                    }
                }
            }
            template(spec);
        }
        ("apps", "DaemonSet") => {
            let spec = object_at(obj, "spec");
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            let strategy = object_at(spec, "updateStrategy");
            strategy.entry("type").or_insert(json!("RollingUpdate"));
            if strategy.get("type") == Some(&json!("RollingUpdate")) {
                let rolling = object_at(strategy, "rollingUpdate");
                rolling.entry("maxUnavailable").or_insert(json!(1));
                rolling.entry("maxSurge").or_insert(json!(0));
            }
            template(spec);
        }
        ("batch", "CronJob") => {
            let spec = object_at(obj, "spec");
            spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
            spec.entry("suspend").or_insert(json!(false));
            spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
            spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
            template(object_at(object_at(spec, "jobTemplate"), "spec"));
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let spec = object_at(obj, "spec");
            object_at(spec, "conversion").entry("strategy").or_insert(json!("None"));
            let names = object_at(spec, "names");
            if let Some(kind) = names.get("kind").and_then(Value::as_str).map(str::to_owned) {
                names.entry("singular").or_insert_with(|| json!(kind.to_lowercase()));
                names.entry("listKind").or_insert_with(|| json!(format!("{kind}List")));
            }
        }
        ("", "Service") => service(object_at(obj, "spec")),
        ("", "PersistentVolumeClaim") => {
            object_at(obj, "spec").entry("volumeMode").or_insert(json!("Filesystem"));
        }
        // SetDefaults_PersistentVolume (the phase is the strategy's).
        ("", "PersistentVolume") => {
            let spec = object_at(obj, "spec");
            spec.entry("persistentVolumeReclaimPolicy").or_insert(json!("Retain"));
            spec.entry("volumeMode").or_insert(json!("Filesystem"));
        }
        ("", "Secret") => {
            obj.entry("type").or_insert(json!("Opaque"));
        }
        ("", "PodTemplate") => template(obj),
        ("", "LimitRange") => limit_range(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler(object_at(obj, "spec")),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(object_at(obj, "spec")),
        ("storage.k8s.io", "StorageClass") => {
            obj.entry("reclaimPolicy").or_insert(json!("Delete"));
            obj.entry("volumeBindingMode").or_insert(json!("Immediate"));
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            obj.entry("preemptionPolicy").or_insert(json!("PreemptLowerPriority"));
        }
        ("", "Endpoints") => {
            // SetDefaults_Endpoints.
            for subset in objects_in(obj, "subsets") {
                for port in objects_in(subset, "ports") {
                    port.entry("protocol").or_insert(json!("TCP"));
                }
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            // SetDefaults_EndpointPort.
            for port in objects_in(obj, "ports") {
                port.entry("name").or_insert(json!(""));
                port.entry("protocol").or_insert(json!("TCP"));
            }
        }
        (
            "admissionregistration.k8s.io",
            kind @ ("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"),
        ) => {
            for webhook in objects_in(obj, "webhooks") {
                admission_webhook(webhook, kind == "MutatingWebhookConfiguration");
            }
        }
        _ => {}
    }
}

/// The objects of the list at `key` of `map` (none when it is absent or not a list).
pub(crate) fn objects_in<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'m mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler`: one replica at least, a CPU target of
/// 80 % when no metric is given, and a given `behavior`'s unset scaling rules filled from the
/// controller's historic ones (scale up by 4 pods or 100 % per 15 s, the larger; scale down by
/// 100 % per 15 s, with no stabilization window: the controller's flag decides it).
fn horizontal_pod_autoscaler(spec: &mut Map<String, Value>) {
    spec.entry("minReplicas").or_insert(json!(1));
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert(
            "metrics".to_owned(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) else { return };
    let scale_up = json!({
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}],
    });
    let scale_down = json!({
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    });
    for (key, defaults) in [("scaleUp", scale_up), ("scaleDown", scale_down)] {
        let rules = object_at(behavior, key);
        if let Value::Object(defaults) = defaults {
            for (field, value) in defaults {
                if rules.get(&field).is_none_or(Value::is_null) {
                    rules.insert(field, value);
                }
            }
        }
    }
}

/// networking/v1 `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`: a policy that
/// names no policy type is an Ingress policy, and an Egress one too when it has egress rules;
/// a port's protocol is TCP.
fn network_policy(spec: &mut Map<String, Value>) {
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|rules| !rules.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".to_owned(), types);
    }
    for direction in ["ingress", "egress"] {
        for rule in objects_in(spec, direction) {
            for port in objects_in(rule, "ports") {
                port.entry("protocol").or_insert(json!("TCP"));
            }
        }
    }
}

/// admissionregistration/v1 `SetDefaults_ValidatingWebhook` and `SetDefaults_MutatingWebhook`,
/// with `SetDefaults_Rule` and `SetDefaults_ServiceReference`.
fn admission_webhook(webhook: &mut Map<String, Value>, mutating: bool) {
    webhook.entry("failurePolicy").or_insert(json!("Fail"));
    webhook.entry("matchPolicy").or_insert(json!("Equivalent"));
    webhook.entry("namespaceSelector").or_insert(json!({}));
    webhook.entry("objectSelector").or_insert(json!({}));
    webhook.entry("timeoutSeconds").or_insert(json!(10));
    if mutating {
        webhook.entry("reinvocationPolicy").or_insert(json!("Never"));
    }
    for rule in objects_in(webhook, "rules") {
        rule.entry("scope").or_insert(json!("*"));
    }
    if let Some(service) =
        webhook.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(json!(443));
    }
}

/// The object at `key` of `map`, created (or replacing a non-object) as needed.
pub(crate) fn object_at<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let value = map.entry(key).or_insert_with(|| json!({}));
    if !value.is_object() {
        *value = json!({});
    }
    value.as_object_mut().expect("just made an object")
}

/// A workload's `spec.template.spec` gets the pod-spec defaults.
fn template(spec: &mut Map<String, Value>) {
    pod_spec(object_at(object_at(spec, "template"), "spec"));
}

/// SetObjectDefaults of a pod spec (`zz_generated.defaults.go`): SetDefaults_PodSpec, then each
/// volume and each container (init and ephemeral ones too) with what they hold.
fn pod_spec(spec: &mut Map<String, Value>) {
    spec.entry("restartPolicy").or_insert(json!("Always"));
    spec.entry("terminationGracePeriodSeconds").or_insert(json!(30));
    spec.entry("dnsPolicy").or_insert(json!("ClusterFirst"));
    spec.entry("securityContext").or_insert(json!({}));
    spec.entry("schedulerName").or_insert(json!("default-scheduler"));
    for v in objects_in(spec, "volumes") {
        volume(v);
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in objects_in(spec, list) {
            container(c);
        }
    }
}

/// SetDefaults_Pod, what a Pod gets and a template does not: requests default to the limits
/// they lack, service links are on, and with host networking a port's hostPort is its
/// containerPort (defaultHostNetworkPorts).
fn pod_only(spec: &mut Map<String, Value>) {
    let host_network = spec.get("hostNetwork") == Some(&json!(true));
    for list in ["containers", "initContainers"] {
        for c in objects_in(spec, list) {
            let resources = object_at(c, "resources");
            let limits =
                resources.get("limits").and_then(Value::as_object).filter(|l| !l.is_empty()).cloned();
            if let Some(limits) = limits {
                let requests = object_at(resources, "requests");
                for (name, quantity) in limits {
                    requests.entry(name).or_insert(quantity);
                }
            }
            if host_network {
                for port in objects_in(c, "ports") {
                    if unset(port.get("hostPort")) {
                        let container_port = port.get("containerPort").cloned().unwrap_or(json!(0));
                        port.insert("hostPort".to_owned(), container_port);
                    }
                }
            }
        }
    }
    spec.entry("enableServiceLinks").or_insert(json!(true));
}

/// Whether a defaulted Go field is at its zero value: absent, null, 0 or "".
fn unset(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// Set `key` to `default` when it is unset (the Go zero value counts as unset).
/// `SetDefaults_LimitRangeItem`, for each item of type `Container`: a resource with a `max` and
/// no `default` limit gets the max as its default limit; one with a default limit and no
/// `defaultRequest` gets the default limit as its default request; then one with a `min` and
/// still no default request gets the min. Empty maps stay absent, as Go's `omitempty` leaves
/// them.
fn limit_range(obj: &mut Map<String, Value>) {
    let Some(limits) = obj.get_mut("spec").and_then(|s| s.get_mut("limits")).and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits.iter_mut().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let map = |key: &str| item.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
        let (max, min) = (map("max"), map("min"));
        let mut default = map("default");
        let mut request = map("defaultRequest");
        for (resource, value) in &max {
            default.entry(resource.clone()).or_insert_with(|| value.clone());
        }
        for (resource, value) in default.iter().chain(&min) {
            request.entry(resource.clone()).or_insert_with(|| value.clone());
        }
        if !default.is_empty() {
            item.insert("default".to_owned(), Value::Object(default));
        }
        if !request.is_empty() {
            item.insert("defaultRequest".to_owned(), Value::Object(request));
        }
    }
}

fn default_to(map: &mut Map<String, Value>, key: &str, default: Value) {
    if unset(map.get(key)) {
        map.insert(key.to_owned(), default);
    }
}

/// The default file mode of secret, configMap, downwardAPI and projected volumes (0644).
const VOLUME_DEFAULT_MODE: u32 = 0o644;

/// SetDefaults_Volume (a volume with no source is an emptyDir) and the defaults of its source.
fn volume(v: &mut Map<String, Value>) {
    if v.iter().all(|(key, value)| key == "name" || value.is_null()) {
        v.insert("emptyDir".to_owned(), json!({}));
    }
    for (key, source) in v.iter_mut() {
        let Some(source) = source.as_object_mut() else { continue };
        match key.as_str() {
            "secret" | "configMap" => {
                source.entry("defaultMode").or_insert(json!(VOLUME_DEFAULT_MODE));
            }
            "downwardAPI" => {
                source.entry("defaultMode").or_insert(json!(VOLUME_DEFAULT_MODE));
                downward_api_items(source);
            }
            "projected" => {
                source.entry("defaultMode").or_insert(json!(VOLUME_DEFAULT_MODE));
                for projection in objects_in(source, "sources") {
                    if let Some(downward) = projection.get_mut("downwardAPI").and_then(Value::as_object_mut) {
                        downward_api_items(downward);
                    }
                    if let Some(token) =
                        projection.get_mut("serviceAccountToken").and_then(Value::as_object_mut)
                    {
                        token.entry("expirationSeconds").or_insert(json!(3600));
                    }
                }
            }
            "hostPath" => {
                source.entry("type").or_insert(json!(""));
            }
            "iscsi" => default_to(source, "iscsiInterface", json!("default")),
            "rbd" => {
                default_to(source, "pool", json!("rbd"));
                default_to(source, "user", json!("admin"));
                default_to(source, "keyring", json!("/etc/ceph/keyring"));
            }
            "azureDisk" => {
                source.entry("cachingMode").or_insert(json!("ReadWrite"));
                source.entry("kind").or_insert(json!("Shared"));
                source.entry("fsType").or_insert(json!("ext4"));
                source.entry("readOnly").or_insert(json!(false));
            }
            "scaleIO" => {
                default_to(source, "storageMode", json!("ThinProvisioned"));
                default_to(source, "fsType", json!("xfs"));
            }
            "ephemeral" => {
                if let Some(claim) = source.get_mut("volumeClaimTemplate").and_then(Value::as_object_mut) {
                    object_at(claim, "spec").entry("volumeMode").or_insert(json!("Filesystem"));
                }
            }
            _ => {}
        }
    }
}

/// SetDefaults_ObjectFieldSelector on the field references of downward API items.
fn downward_api_items(source: &mut Map<String, Value>) {
    for item in objects_in(source, "items") {
        if let Some(field_ref) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default_to(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// SetDefaults_Container and what a container holds: ports (TCP), env field references,
/// probes and lifecycle hooks.
fn container(c: &mut Map<String, Value>) {
    let pull = image_pull_policy(c.get("image").and_then(Value::as_str).unwrap_or_default());
    c.entry("imagePullPolicy").or_insert(json!(pull));
    c.entry("terminationMessagePath").or_insert(json!("/dev/termination-log"));
    c.entry("terminationMessagePolicy").or_insert(json!("File"));
    c.entry("resources").or_insert(json!({}));
    for p in objects_in(c, "ports") {
        p.entry("protocol").or_insert(json!("TCP"));
    }
    for env in objects_in(c, "env") {
        let field_ref =
            env.get_mut("valueFrom").and_then(|v| v.get_mut("fieldRef")).and_then(Value::as_object_mut);
        if let Some(field_ref) = field_ref {
            default_to(field_ref, "apiVersion", json!("v1"));
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(key).and_then(Value::as_object_mut) {
            probe(p);
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(get) =
                lifecycle.get_mut(hook).and_then(|h| h.get_mut("httpGet")).and_then(Value::as_object_mut)
            {
                http_get(get);
            }
        }
    }
}

/// SetDefaults_Probe, SetDefaults_HTTPGetAction of its handler, and a gRPC handler's service
/// (`+default=""`).
fn probe(p: &mut Map<String, Value>) {
    default_to(p, "timeoutSeconds", json!(1));
    default_to(p, "periodSeconds", json!(10));
    default_to(p, "successThreshold", json!(1));
    default_to(p, "failureThreshold", json!(3));
    if let Some(get) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
        http_get(get);
    }
    if let Some(grpc) = p.get_mut("grpc").and_then(Value::as_object_mut) {
        grpc.entry("service").or_insert(json!(""));
    }
}

/// SetDefaults_HTTPGetAction.
fn http_get(get: &mut Map<String, Value>) {
    default_to(get, "path", json!("/"));
    default_to(get, "scheme", json!("HTTP"));
}

/// `Always` for an image without a tag (or tagged `latest`), `IfNotPresent` otherwise; a digest
/// counts as a tag.
fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last ':' after the last '/' (a registry port is not a tag).
    let last_part = image.rsplit('/').next().unwrap_or(image);
    match last_part.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

/// SetDefaults_Service (clusterIP and node port allocation is the strategy's, with the id
/// source).
fn service(spec: &mut Map<String, Value>) {
    spec.entry("type").or_insert(json!("ClusterIP"));
    default_to(spec, "sessionAffinity", json!("None"));
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP")
            if spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .is_none_or(Value::is_null) =>
        {
            spec.insert("sessionAffinityConfig".to_owned(), json!({"clientIP": {"timeoutSeconds": 10800}}));
        }
        _ => {}
    }
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_owned();
    if kind != "ExternalName" {
        spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
    }
    if externally_accessible(spec) {
        default_to(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.entry("protocol").or_insert(json!("TCP"));
            if p.get("targetPort").is_none_or(|t| t == &json!(0)) {
                let port = p.get("port").cloned().unwrap_or(json!(0));
                p.insert("targetPort".to_owned(), port);
            }
        }
    }
}

/// `service.ExternallyAccessible`: a LoadBalancer, a NodePort, or a ClusterIP Service with
/// external IPs.
pub(crate) fn externally_accessible(spec: &Map<String, Value>) -> bool {
    match spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP") {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => spec.get("externalIPs").and_then(Value::as_array).is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}
