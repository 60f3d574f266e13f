//! Discovery for the controllers that act on every resource type (the garbage collector and
//! the namespace controller): the built-in kinds every model server serves, plus one kind per
//! CustomResourceDefinition.
// The list mirrors model-apiserver's built-ins by hand. `sim::discovery::Discovery` (kube's
// `Discovery`) now lists the served resources; using it here would watch every served kind
// (Events and Leases too), an informer each, and change every built-in world's traces.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::ApiResource;

/// A served resource type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kind {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

impl Kind {
    /// The key owner references are resolved by: (group, kind). Versions of one kind share their
    /// objects, so an owner reference names its owner whatever version it was written with.
    pub fn key(&self) -> (String, String) {
        (self.resource.group.clone(), self.resource.kind.clone())
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → the core group, empty).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn kind(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Kind {
    let api_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    Kind {
        resource: ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version,
            kind: kind.to_owned(),
            plural: plural.to_owned(),
        },
        namespaced,
    }
}

/// The built-in kinds a model server serves (model-apiserver's `resources::BUILTINS`).
pub fn builtin_kinds() -> Vec<Kind> {
    vec![
        kind("", "v1", "Namespace", "namespaces", false),
        kind("", "v1", "Pod", "pods", true),
        kind("", "v1", "ConfigMap", "configmaps", true),
        kind("", "v1", "Secret", "secrets", true),
        kind("", "v1", "Service", "services", true),
        kind("", "v1", "ServiceAccount", "serviceaccounts", true),
        kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true),
        kind("apps", "v1", "Deployment", "deployments", true),
        kind("apps", "v1", "ReplicaSet", "replicasets", true),
        kind("apps", "v1", "StatefulSet", "statefulsets", true),
        kind("batch", "v1", "Job", "jobs", true),
        kind("", "v1", "Node", "nodes", false),
        kind("", "v1", "PersistentVolume", "persistentvolumes", false),
        kind("", "v1", "Endpoints", "endpoints", true),
        kind("", "v1", "ResourceQuota", "resourcequotas", true),
        kind("", "v1", "LimitRange", "limitranges", true),
        kind("apps", "v1", "DaemonSet", "daemonsets", true),
        kind("apps", "v1", "ControllerRevision", "controllerrevisions", true),
        kind("batch", "v1", "CronJob", "cronjobs", true),
        kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true),
        kind("networking.k8s.io", "v1", "Ingress", "ingresses", true),
        kind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true),
        kind("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false),
        kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true),
        kind("storage.k8s.io", "v1", "StorageClass", "storageclasses", false),
        kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true),
        kind("", "v1", "PodTemplate", "podtemplates", true),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
        ),
        kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
        ),
        kind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false),
        kind("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
        kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
        kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
        kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
        kind("coordination.k8s.io", "v1", "Lease", "leases", true),
        kind("", "v1", "Event", "events", true),
        kind("events.k8s.io", "v1", "Event", "events", true),
        kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false),
    ]
}

/// The kind a CRD serves, at its storage version (or its first served one); `None` if it serves
/// no version.
pub fn crd_kind(crd: &CustomResourceDefinition) -> Option<Kind> {
    let spec = &crd.spec;
    let served = spec.versions.iter().filter(|v| v.served);
    let version = spec.versions.iter().find(|v| v.served && v.storage).or_else(|| served.clone().next())?;
    Some(kind(&spec.group, &version.name, &spec.names.kind, &spec.names.plural, spec.scope == "Namespaced"))
}
