//! Admission: hooks, as Rust closures (mutating hooks run first, then validating hooks), and the
//! few of kube-apiserver's own plugins the model has, each when its [`crate::ServerConfig`] flag is
//! on, in kube-apiserver's order (`AllOrderedPlugins`) and before the hooks, as its chain runs
//! them before `MutatingAdmissionWebhook`: [`limit_ranger`] (its defaults), [`service_account`],
//! [`priority`], [`default_toleration_seconds`] and, validating, [`pod_security`] (the Pod
//! plugins, [`crate::ServerConfig::pod_admission_plugins`]), [`default_storage_class`]
//! ([`crate::ServerConfig::default_storage_class`]), `StorageObjectInUseProtection`
//! ([`crate::ServerConfig::storage_object_in_use_protection`]) and, always, [`pvc_resize`]; last,
//! after the validating hooks, [`resource_quota`] ([`crate::ServerConfig::resource_quota`]).

use std::sync::Arc;

use kube_core::{DynamicObject, Status};

use crate::{
    context::IdSource,
    resources::ResourceType,
    server::{ApiServer, Target},
};

pub mod default_storage_class;
pub mod default_toleration_seconds;
pub mod limit_ranger;
pub mod pod_security;
pub mod priority;
pub mod pvc_resize;
pub mod resource_quota;
pub mod service_account;

/// What an admission hook sees.
#[derive(Debug)]
pub struct AdmissionRequest<'a> {
    /// `create`, `update`, `patch` (as update) or `delete`.
    pub operation: &'static str,
    /// The resource type.
    pub resource: &'a ResourceType,
    /// The subresource, if any (`status`).
    pub subresource: Option<&'static str>,
    /// The object before the change (update, delete).
    pub old: Option<&'a DynamicObject>,
    /// The requesting user, if known.
    pub user: Option<&'a str>,
}

/// A mutating or validating hook. A mutating hook may change `object`; a validating hook gets the
/// final object and may only refuse. Returning `Err(status)` refuses the request with that status
/// (use 403 Forbidden or 422 Invalid as a webhook would).
pub type AdmissionHook =
    Arc<dyn Fn(&AdmissionRequest<'_>, &mut DynamicObject) -> Result<(), Status> + Send + Sync>;

/// The finalizer that keeps a PersistentVolumeClaim while a Pod uses it
/// (`volumeutil.PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The finalizer that keeps a PersistentVolume while it is bound
/// (`volumeutil.PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// kube-apiserver's `StorageObjectInUseProtection` admission plugin
/// (`plugin/pkg/admission/storage/storageobjectinuseprotection`): the create of a core
/// PersistentVolumeClaim or PersistentVolume (not of a subresource) gets its protection
/// finalizer, after those it has, unless it has it already. Other operations and kinds pass.
pub(crate) fn protect_storage_object(request: &AdmissionRequest<'_>, object: &mut DynamicObject) {
    if request.operation != "create"
        || request.subresource.is_some()
        || !request.resource.api.group.is_empty()
    {
        return;
    }
    let finalizer = match request.resource.api.plural.as_str() {
        "persistentvolumeclaims" => PVC_PROTECTION_FINALIZER,
        "persistentvolumes" => PV_PROTECTION_FINALIZER,
        _ => return,
    };
    let finalizers = object.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_owned());
    }
}

/// What kube-apiserver's own plugins need of a write beyond the [`AdmissionRequest`] a hook sees.
pub(crate) struct PluginInput<'c> {
    /// Entropy for the names they generate (the service account token volume's).
    pub(crate) ids: &'c mut dyn IdSource,
    /// Whether the storage generated the object's name from its `generateName`: admission runs
    /// before it does upstream, so refusals name the object by its `generateName` then
    /// (`extractResourceName`).
    pub(crate) name_generated: bool,
    /// The request's warnings ([`crate::Context::warnings`]), which `PodSecurity` adds to.
    pub(crate) warnings: &'c mut Vec<String>,
}

impl ApiServer {
    /// kube-apiserver's own mutating plugins that are on, in its order. The Pod plugins refuse
    /// with their 403s.
    pub(crate) fn admit_with_plugins(
        &self,
        t: &Target,
        request: &AdmissionRequest<'_>,
        object: &mut DynamicObject,
        input: &mut PluginInput<'_>,
    ) -> Result<(), Status> {
        if self.config.pod_admission_plugins && request.operation == "create" && is_core(request, "pods") {
            let ranges = self.stored_in("", "limitranges", &t.namespace);
            limit_ranger::admit_create(object, &ranges);
        }
        if self.config.pod_admission_plugins && is_core(request, "pods") {
            let name = refusal_name(object, input.name_generated);
            match (request.operation, request.old) {
                ("create", _) => {
                    let account =
                        |account: &str| self.stored_object("", "serviceaccounts", &t.namespace, account);
                    service_account::admit_create(object, &t.namespace, &name, account, &mut *input.ids)?;
                    priority::admit_create(
                        object,
                        &name,
                        &self.stored_all("scheduling.k8s.io", "priorityclasses"),
                    )?;
                    default_toleration_seconds::admit(object);
                }
                ("update", Some(old)) => {
                    priority::admit_update(old, object);
                    default_toleration_seconds::admit(object);
                }
                _ => {}
            }
        }
        if self.config.default_storage_class
            && request.operation == "create"
            && is_core(request, "persistentvolumeclaims")
        {
            default_storage_class::admit_create(object, &self.stored_all("storage.k8s.io", "storageclasses"));
        }
        if self.config.storage_object_in_use_protection {
            protect_storage_object(request, object);
        }
        Ok(())
    }

    /// kube-apiserver's own validating plugins that are on (after the object's validation, before
    /// the validating hooks): the `Priority` plugin's one default PriorityClass, the
    /// `LimitRanger`'s minimums, maximums and ratios (with the Pod plugins), and
    /// `PersistentVolumeClaimResize` (always: it needs no controller).
    pub(crate) fn validate_with_plugins(
        &self,
        request: &AdmissionRequest<'_>,
        object: &DynamicObject,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        let api = &request.resource.api;
        let is_class = !request.resource.custom
            && api.group == "scheduling.k8s.io"
            && api.plural == "priorityclasses"
            && request.subresource.is_none();
        if self.config.pod_admission_plugins && is_class && matches!(request.operation, "create" | "update") {
            let name = object.metadata.name.as_deref().unwrap_or_default();
            let classes = self.stored_all("scheduling.k8s.io", "priorityclasses");
            priority::validate_class(request.operation, object, name, &classes)?;
        }
        let plural = request.resource.api.plural.as_str();
        // A Pod's create and its `/resize` (`SupportsAttributes`: the one subresource it takes).
        let resize = request.operation == "update" && request.subresource == Some("resize");
        let limited = match plural {
            "pods" => request.operation == "create" || resize,
            "persistentvolumeclaims" => matches!(request.operation, "create" | "update"),
            _ => false,
        };
        let deleting = request.old.is_some_and(|o| o.metadata.deletion_timestamp.is_some());
        let own = is_core(request, plural) || (resize && !request.resource.custom && api.group.is_empty());
        if self.config.pod_admission_plugins && limited && own && !deleting {
            let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
            let ranges = self.stored_in("", "limitranges", namespace);
            limit_ranger::validate(plural, object, request.old, &ranges).map_err(|why| {
                let name = object.metadata.name.as_deref().unwrap_or_default();
                crate::errors::forbidden("", plural, name, &why)
            })?;
        }
        if self.config.pod_admission_plugins {
            self.pod_security(request, object, warnings)?;
        }
        if let ("update", Some(old)) = (request.operation, request.old)
            && is_core(request, "persistentvolumeclaims")
        {
            let class = |name: &str| self.stored_object("storage.k8s.io", "storageclasses", "", name);
            pvc_resize::validate_update(old, object, class)?;
        }
        Ok(())
    }

    /// The `ResourceQuota` plugin ([`resource_quota`]), after every other admission step: refuse
    /// the write with 403, or charge the namespace's quotas it counts against (each a `/status`
    /// write, before the object is stored; none for a dry run).
    #[allow(clippy::too_many_arguments)] // one write's parts, all needed
    pub(crate) fn charge_quota(
        &mut self,
        t: &Target,
        operation: &'static str,
        subresource: Option<&'static str>,
        old: Option<&DynamicObject>,
        object: &DynamicObject,
        dry_run: bool,
        ctx: &mut crate::Context<'_>,
    ) -> Result<(), Status> {
        if !self.config.resource_quota || !t.ty.namespaced || t.namespace.is_empty() {
            return Ok(());
        }
        let api = &t.ty.api;
        let Some(evaluator) = crate::quota::Evaluator::of(&api.group, &api.plural) else { return Ok(()) };
        if !evaluator.handles(operation, subresource) {
            return Ok(());
        }
        let Some((quota_ty, quota_resource)) = self.types.get_with_storage_key("", "v1", "resourcequotas")
        else {
            return Ok(());
        };
        let quotas: Vec<Arc<DynamicObject>> = self
            .store
            .current()
            .iter_resource(quota_resource, Some(&t.namespace))
            .map(|(_, q)| q.clone())
            .collect();
        if quotas.is_empty() {
            return Ok(());
        }
        let name = object.metadata.name.as_deref().unwrap_or_default();
        let charges = resource_quota::check(&evaluator, subresource, object, old, &quotas, ctx.now)
            .map_err(|why| crate::errors::forbidden(&api.group, &api.plural, name, &why))?;
        if dry_run {
            return Ok(());
        }
        let quota_t = Target {
            ty: quota_ty.clone(),
            resource: quota_resource.clone(),
            namespace: t.namespace.clone(),
            user: Some(Arc::from(crate::eviction::LOOPBACK_USER)),
            field_validation: crate::FieldValidation::default(),
        };
        for (index, used) in charges {
            let mut charged = DynamicObject::clone(&quotas[index]);
            let quota_name = charged.metadata.name.clone().unwrap_or_default();
            if let Some(status) = charged.data.get_mut("status").and_then(serde_json::Value::as_object_mut) {
                status.insert("used".to_owned(), crate::quota::list_to_value(&used));
            }
            let params = kube_core::params::PostParams {
                dry_run: false,
                field_manager: Some(crate::eviction::LOOPBACK_MANAGER.to_owned()),
            };
            self.update(&quota_t, &quota_name, charged, &params, Some(crate::Subresource::Status), ctx)?;
        }
        Ok(())
    }

    /// The `PodSecurity` plugin ([`pod_security`]) on a create or update: a Pod that violates its
    /// namespace's `enforce` level is refused, Pods and the Pod controllers' templates that
    /// violate its `warn` level earn a warning, a namespace's labels are validated, and an
    /// update that tightens `enforce` warns about the Pods already there.
    fn pod_security(
        &self,
        request: &AdmissionRequest<'_>,
        object: &DynamicObject,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        use pod_security::{Level, PodView, Policy};
        if request.resource.custom || !matches!(request.operation, "create" | "update") {
            return Ok(());
        }
        let api = &request.resource.api;
        let template = match (api.group.as_str(), api.plural.as_str()) {
            ("", "namespaces") => return self.pod_security_namespace(request, object, warnings),
            ("", "pods") => None,
            ("", "podtemplates") => Some(&["template"][..]),
            ("", "replicationcontrollers")
            | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
            | ("batch", "jobs") => Some(&["spec", "template"][..]),
            ("batch", "cronjobs") => Some(&["spec", "jobTemplate", "spec", "template"][..]),
            _ => return Ok(()),
        };
        let ignored_pod_subresource = matches!(
            request.subresource,
            Some("exec" | "attach" | "binding" | "eviction" | "log" | "portforward" | "proxy" | "status")
        );
        if (template.is_some() && request.subresource.is_some()) || ignored_pod_subresource {
            return Ok(());
        }
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        let Some(ns) = self.stored_object("", "namespaces", "", namespace) else { return Ok(()) };
        let (policy, errors) = Policy::of(ns.metadata.labels.as_ref());
        let Some(path) = template else {
            // A Pod.
            if errors.is_empty() && policy.fully_privileged() {
                return Ok(());
            }
            let pod = PodView::of(object.metadata.annotations.as_ref(), &object.data);
            if let ("update", Some(old)) = (request.operation, request.old) {
                let significant = pod_security::significant_pod_update(
                    pod.annotations,
                    pod.spec,
                    old.metadata.annotations.as_ref(),
                    pod_security::spec_of(&old.data),
                );
                if !significant {
                    return Ok(());
                }
            }
            let enforced = pod_security::evaluate(policy.enforce, &pod);
            if !enforced.is_empty() {
                let name = object.metadata.name.as_deref().unwrap_or_default();
                let why = format!(
                    "violates PodSecurity {}: {}",
                    crate::errors::go_quote(&policy.enforce.to_string()),
                    pod_security::forbidden_detail(&enforced)
                );
                return Err(crate::errors::forbidden("", "pods", name, &why));
            }
            pod_security::warn(policy.warn, &pod, warnings);
            return Ok(());
        };
        if errors.is_empty()
            && policy.warn.level == Level::Privileged
            && policy.audit.level == Level::Privileged
        {
            return Ok(());
        }
        let mut template = Some(&object.data);
        for key in path {
            template = template.and_then(|t| t.get(*key)).filter(|t| !t.is_null());
        }
        let Some(template) = template else { return Ok(()) };
        let annotations: Option<std::collections::BTreeMap<String, String>> = template
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| serde_json::from_value(a.clone()).ok());
        pod_security::warn(policy.warn, &PodView::of(annotations.as_ref(), template), warnings);
        Ok(())
    }

    /// `PodSecurity` on a namespace: labels that do not parse are 422 on a create, and on an
    /// update that changes what they say; an update that tightens `enforce` warns about the Pods
    /// already there that the new level would refuse.
    fn pod_security_namespace(
        &self,
        request: &AdmissionRequest<'_>,
        object: &DynamicObject,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        use pod_security::{Level, PodView, Policy};
        if request.subresource.is_some() {
            return Ok(());
        }
        let name = object.metadata.name.as_deref().unwrap_or_default();
        let (policy, errors) = Policy::of(object.metadata.labels.as_ref());
        let Some(old) = request.old else {
            if !errors.is_empty() {
                return Err(crate::errors::invalid("", "Namespace", name, errors));
            }
            return Ok(());
        };
        let (old_policy, old_errors) = Policy::of(old.metadata.labels.as_ref());
        if !errors.is_empty() && (old_errors.is_empty() || errors != old_errors) {
            return Err(crate::errors::invalid("", "Namespace", name, errors));
        }
        let (new, before) = (policy.enforce, old_policy.enforce);
        if new == before
            || new.level == Level::Privileged
            || (new.version == before.version && new.level <= before.level)
        {
            return Ok(());
        }
        let pods = self.stored_in("", "pods", name);
        let views: Vec<PodView<'_>> =
            pods.iter().map(|p| PodView::of(p.metadata.annotations.as_ref(), &p.data)).collect();
        let names: Vec<&str> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap_or_default()).collect();
        warnings.extend(pod_security::existing_pod_warnings(name, new, &views, &names));
        Ok(())
    }

    /// The stored object `name` of a built-in v1 resource in `namespace`, if any.
    fn stored_object(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        let (_, resource) =
            self.types.get_with_storage_key(group, "v1", plural).filter(|(ty, _)| !ty.custom)?;
        let key = crate::store::ObjectKey {
            resource: resource.clone(),
            namespace: Arc::from(namespace),
            name: Arc::from(name),
        };
        self.store.current().get(&key).cloned()
    }

    /// Every stored object of a built-in v1 resource in `namespace`, in name order.
    fn stored_in<'a>(&'a self, group: &str, plural: &str, namespace: &'a str) -> Vec<&'a DynamicObject> {
        let Some((_, resource)) =
            self.types.get_with_storage_key(group, "v1", plural).filter(|(ty, _)| !ty.custom)
        else {
            return Vec::new();
        };
        self.store.current().iter_resource(resource, Some(namespace)).map(|(_, o)| o.as_ref()).collect()
    }

    /// Every stored object of a built-in, cluster-scoped v1 resource, in name order.
    fn stored_all(&self, group: &str, plural: &str) -> Vec<&DynamicObject> {
        let Some((_, resource)) =
            self.types.get_with_storage_key(group, "v1", plural).filter(|(ty, _)| !ty.custom)
        else {
            return Vec::new();
        };
        self.store.current().iter_resource(resource, None).map(|(_, o)| o.as_ref()).collect()
    }
}

/// Whether the request is for the core resource `plural` itself (not a subresource).
fn is_core(request: &AdmissionRequest<'_>, plural: &str) -> bool {
    let api = &request.resource.api;
    !request.resource.custom && api.group.is_empty() && api.plural == plural && request.subresource.is_none()
}

/// The name a plugin's refusal gives the object (`extractResourceName`): its name, or its
/// `generateName` when the storage generated the name.
fn refusal_name(object: &DynamicObject, name_generated: bool) -> String {
    let generate_name = object.metadata.generate_name.as_deref().filter(|g| name_generated && !g.is_empty());
    generate_name.or(object.metadata.name.as_deref()).unwrap_or_default().to_owned()
}

/// A Pod's `spec`, made an object if it is not one (a decoded Pod's always is).
fn pod_spec(pod: &mut DynamicObject) -> &mut serde_json::Map<String, serde_json::Value> {
    if !pod.data.is_object() {
        pod.data = serde_json::json!({});
    }
    let content = pod.data.as_object_mut().expect("just made an object");
    crate::defaults::object_at(content, "spec")
}
