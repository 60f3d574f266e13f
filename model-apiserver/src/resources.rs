//! The served resource types: the built-in kinds, and kinds added by CustomResourceDefinitions.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kube_core::ApiResource;

use crate::fields::SelectableFields;

/// How the name of an object of this kind is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, at most 253 characters.
    Subdomain,
    /// DNS-1123 label: lowercase alphanumerics and `-`, at most 63 characters (Namespace).
    Label,
    /// DNS-1035 label: a DNS-1123 label that starts with a letter (Service,
    /// `ValidateServiceName`).
    Dns1035Label,
    /// A path segment: anything but `.` and `..`, without `/` or `%` (the RBAC kinds,
    /// `ValidateRBACName`).
    PathSegment,
}

/// The `/scale` subresource's paths into the object (from a CRD's `subresources.scale`, or the
/// fixed ones of Deployment, ReplicaSet and StatefulSet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// e.g. `.status.replicas`.
    pub status_replicas: String,
    /// e.g. `.status.selector`, if any.
    pub label_selector: Option<String>,
}

/// One served resource type.
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// Group, version, apiVersion, kind and plural.
    pub api: ApiResource,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names kubectl knows (`cm`, `deploy`, ...).
    pub short_names: Vec<String>,
    /// Whether `/status` is a subresource: then the main resource ignores `.status` changes and
    /// `/status` ignores everything but `.status`.
    pub status_subresource: bool,
    /// The `/scale` subresource, if served.
    pub scale: Option<ScalePaths>,
    /// Whether generation is tracked (`metadata.generation`): true for kinds with a spec.
    pub tracks_generation: bool,
    /// Name validation.
    pub name_rule: NameRule,
    /// True for custom resources: an update with an empty resourceVersion gets 422, and strategic
    /// merge patch gets 415.
    pub custom: bool,
    /// The structural schema of a custom resource's version, used for validation, pruning and
    /// defaulting.
    pub schema: Option<Arc<JSONSchemaProps>>,
    /// The fields a field selector may name, and their values.
    pub selectable_fields: SelectableFields,
}

impl ResourceType {
    /// The schema of a custom resource's version (`None` for a built-in kind): what validates,
    /// prunes and defaults its objects and says how server-side apply owns its fields.
    pub fn custom_schema(&self) -> Option<&JSONSchemaProps> {
        self.schema.as_deref().filter(|_| self.custom)
    }

    /// The storage prefix of this type: `group/plural`, or `plural` for the core group. All
    /// versions of one group/plural share storage.
    ///
    /// The events.k8s.io Event is stored under the core `events` prefix, as kube-apiserver
    /// keeps both Event APIs over one store.
    pub fn storage_key(&self) -> Arc<str> {
        if self.custom {
            Arc::from(format!("{}/{}", self.api.group, self.api.plural))
        } else {
            Arc::from(crate::events::builtin_storage_key(&self.api.group, &self.api.kind, &self.api.plural))
        }
    }

    /// A stored object as this type's version presents it (what a read through this type
    /// answers): a custom resource's versions share storage, so only `apiVersion` differs; an
    /// Event stored through the other Event API is converted field by field.
    pub fn present(&self, obj: &Arc<kube_core::DynamicObject>) -> Arc<kube_core::DynamicObject> {
        match &obj.types {
            Some(t) if t.api_version == self.api.api_version => obj.clone(),
            _ => {
                let mut o = kube_core::DynamicObject::clone(obj);
                if !self.custom && crate::events::is_event_kind(&self.api.group, &self.api.kind) {
                    crate::events::convert(&mut o.data, &self.api.api_version);
                }
                o.types = Some(kube_core::TypeMeta {
                    api_version: self.api.api_version.clone(),
                    kind: self.api.kind.clone(),
                });
                Arc::new(o)
            }
        }
    }
}

/// The table of served types, keyed by (group, version, plural). Iteration order is the key order.
///
/// Nested maps, so that a lookup by `&str` parts allocates nothing; each entry also holds its
/// type's storage key, shared by every [`crate::ObjectKey`] of the type. The table and each
/// group's part are shared until changed (copy on write), so that every server shares the
/// built-in table and serving a CRD's group copies only the list of groups: cloning the whole
/// table was a fifth of starting a server with its default namespaces, and a simulated run
/// starts one per seed. (A persistent map made serving a CRD's first type costlier, and every
/// lookup slower.)
#[derive(Clone, Debug, Default)]
pub struct ResourceTypes {
    by_gvr: Arc<BTreeMap<String, Arc<Versions>>>,
}

/// One group's types: by version, then plural.
type Versions = BTreeMap<String, BTreeMap<String, Served>>;

/// One served type and its storage key.
#[derive(Clone, Debug)]
struct Served {
    ty: Arc<ResourceType>,
    storage_key: Arc<str>,
}

/// Order a group's versions as kube-apiserver lists them: highest Kubernetes version priority
/// first (`v2`, `v1`, `v1beta1`, `v1alpha1`), so that the first is the preferred version
/// (apiextensions' `sortGroupDiscoveryByKubeAwareVersion` for a CRD's group).
pub fn sort_by_version_priority<T>(items: &mut [T], version: impl Fn(&T) -> &str) {
    items.sort_by_cached_key(|item| std::cmp::Reverse(kube_core::Version::parse(version(item)).priority()));
}

impl ResourceTypes {
    /// The built-in kinds: Namespace, Pod, ConfigMap, Secret, Service, ServiceAccount,
    /// PersistentVolumeClaim, Deployment, ReplicaSet, StatefulSet, Job, Lease, Event (core/v1 and
    /// events.k8s.io/v1, one store)
    /// and CustomResourceDefinition, with their real group, version, plural and scope.
    ///
    /// Which kinds track `metadata.generation` follows the real server: Deployment, ReplicaSet,
    /// StatefulSet, Job, CustomResourceDefinition and every custom resource; also Pod, which has
    /// set it since Kubernetes 1.33 (pod observed-generation tracking). ConfigMap, Secret,
    /// Service, ServiceAccount, PersistentVolumeClaim, Namespace, Lease and Event do not.
    ///
    /// The table is built once per process and cloned: a clone shares it, and building it (each
    /// kind's schema and strategy) was 7 % of a direct model operation's cost when every new
    /// server rebuilt it.
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::OnceLock<ResourceTypes> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut types = ResourceTypes::default();
                for b in BUILTINS {
                    types.insert(b.to_type());
                }
                types
            })
            .clone()
    }
    /// Serve `ty` (replacing an earlier type of the same group, version and plural).
    pub fn insert(&mut self, ty: ResourceType) {
        let storage_key = ty.storage_key();
        let (group, version, plural) = (ty.api.group.clone(), ty.api.version.clone(), ty.api.plural.clone());
        let served = Served { ty: Arc::new(ty), storage_key };
        let versions = Arc::make_mut(Arc::make_mut(&mut self.by_gvr).entry(group).or_default());
        versions.entry(version).or_default().insert(plural, served);
    }
    /// Stop serving (group, version, plural).
    pub fn remove(&mut self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.get(group, version, plural)?;
        let groups = Arc::make_mut(&mut self.by_gvr);
        let versions = Arc::make_mut(groups.get_mut(group)?);
        let plurals = versions.get_mut(version)?;
        let removed = plurals.remove(plural)?;
        // Drop emptied levels so that iteration and lookups stay proportional to what is served.
        if plurals.is_empty() {
            versions.remove(version);
        }
        if versions.is_empty() {
            groups.remove(group);
        }
        Some(removed.ty)
    }
    /// Whether any type is served in the group version (`""` for core).
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.by_gvr.get(group).is_some_and(|versions| versions.contains_key(version))
    }
    /// The type served at (group, version, plural).
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceType>> {
        self.served(group, version, plural).map(|s| &s.ty)
    }
    /// The type served at (group, version, plural) and its shared storage key.
    pub(crate) fn get_with_storage_key(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<(&Arc<ResourceType>, &Arc<str>)> {
        self.served(group, version, plural).map(|s| (&s.ty, &s.storage_key))
    }
    fn served(&self, group: &str, version: &str, plural: &str) -> Option<&Served> {
        self.by_gvr.get(group)?.get(version)?.get(plural)
    }
    /// The type with this apiVersion and kind.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceType>> {
        self.iter().find(|t| t.api.api_version == api_version && t.api.kind == kind)
    }
    /// Every served type, in (group, version, plural) order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.by_gvr
            .values()
            .flat_map(|versions| versions.values())
            .flat_map(|plurals| plurals.values())
            .map(|s| &s.ty)
    }
}

/// A compact description of one built-in kind; expanded by [`Builtin::to_type`].
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status_subresource: bool,
    scale: bool,
    tracks_generation: bool,
    name_rule: NameRule,
}

impl Builtin {
    fn to_type(&self) -> ResourceType {
        let api_version = if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        };
        ResourceType {
            api: ApiResource {
                group: self.group.to_owned(),
                version: self.version.to_owned(),
                api_version,
                kind: self.kind.to_owned(),
                plural: self.plural.to_owned(),
            },
            namespaced: self.namespaced,
            short_names: self.short_names.iter().map(|s| (*s).to_owned()).collect(),
            status_subresource: self.status_subresource,
            // The apps kinds expose `.spec.selector` (a LabelSelector object); the scale view
            // serializes it to the string form, as the real server does.
            scale: self.scale.then(|| ScalePaths {
                spec_replicas: ".spec.replicas".to_owned(),
                status_replicas: ".status.replicas".to_owned(),
                label_selector: Some(".spec.selector".to_owned()),
            }),
            tracks_generation: self.tracks_generation,
            name_rule: self.name_rule,
            custom: false,
            schema: None,
            selectable_fields: SelectableFields::builtin(self.group, self.kind),
        }
    }
}

const fn builtin(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced: true,
        short_names,
        status_subresource: false,
        scale: false,
        tracks_generation: false,
        name_rule: NameRule::Subdomain,
    }
}

impl Builtin {
    const fn cluster(mut self) -> Self {
        self.namespaced = false;
        self
    }
    const fn status(mut self) -> Self {
        self.status_subresource = true;
        self
    }
    const fn scale(mut self) -> Self {
        self.scale = true;
        self
    }
    const fn generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }
    const fn name_rule(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }
}

/// The built-in kinds served by every model server.
const BUILTINS: &[Builtin] = &[
    builtin("", "v1", "Namespace", "namespaces", &["ns"]).cluster().status().name_rule(NameRule::Label),
    builtin("", "v1", "Pod", "pods", &["po"]).status().generation(),
    builtin("", "v1", "ConfigMap", "configmaps", &["cm"]),
    builtin("", "v1", "Secret", "secrets", &[]),
    builtin("", "v1", "Service", "services", &["svc"]).status().name_rule(NameRule::Dns1035Label),
    builtin("", "v1", "ServiceAccount", "serviceaccounts", &["sa"]),
    builtin("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", &["pvc"]).status(),
    builtin("apps", "v1", "Deployment", "deployments", &["deploy"]).status().scale().generation(),
    builtin("apps", "v1", "ReplicaSet", "replicasets", &["rs"]).status().scale().generation(),
    builtin("apps", "v1", "StatefulSet", "statefulsets", &["sts"]).status().scale().generation(),
    builtin("batch", "v1", "Job", "jobs", &[]).status().generation(),
    builtin("", "v1", "Node", "nodes", &["no"]).cluster().status(),
    builtin("", "v1", "PersistentVolume", "persistentvolumes", &["pv"]).cluster().status(),
    builtin("", "v1", "Endpoints", "endpoints", &["ep"]),
    builtin("", "v1", "ResourceQuota", "resourcequotas", &["quota"]).status(),
    builtin("", "v1", "LimitRange", "limitranges", &["limits"]),
    builtin("apps", "v1", "DaemonSet", "daemonsets", &["ds"]).status().generation(),
    builtin("apps", "v1", "ControllerRevision", "controllerrevisions", &[]),
    builtin("batch", "v1", "CronJob", "cronjobs", &["cj"]).status().generation(),
    builtin("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", &["pdb"]).status().generation(),
    builtin("networking.k8s.io", "v1", "Ingress", "ingresses", &["ing"]).status().generation(),
    builtin("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", &["netpol"]).generation(),
    builtin("networking.k8s.io", "v1", "IngressClass", "ingressclasses", &[]).cluster().generation(),
    builtin("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", &["hpa"]).status(),
    builtin("storage.k8s.io", "v1", "StorageClass", "storageclasses", &["sc"]).cluster(),
    // Its generation moves with its endpoints and ports, as kube-apiserver's strategy bumps it
    // (the EndpointSlice controller tracks its own writes by generation).
    builtin("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", &[]).generation(),
    builtin("", "v1", "PodTemplate", "podtemplates", &[]),
    builtin(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        &[],
    )
    .cluster()
    .generation(),
    builtin(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        &[],
    )
    .cluster()
    .generation(),
    builtin(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        &[],
    )
    .cluster()
    .status()
    .generation(),
    builtin(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        &[],
    )
    .cluster()
    .generation(),
    builtin("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", &["pc"]).cluster(),
    builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", &[]).name_rule(NameRule::PathSegment),
    builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", &[])
        .name_rule(NameRule::PathSegment),
    builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", &[])
        .cluster()
        .name_rule(NameRule::PathSegment),
    builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", &[])
        .cluster()
        .name_rule(NameRule::PathSegment),
    builtin("coordination.k8s.io", "v1", "Lease", "leases", &[]),
    builtin("", "v1", "Event", "events", &["ev"]),
    builtin("events.k8s.io", "v1", "Event", "events", &["ev"]),
    builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
    )
    .cluster()
    .status()
    .generation(),
];
