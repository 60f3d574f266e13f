//! create, update and patch (main resource and `/status`): the write pipeline that every
//! object-changing verb shares. In order: server-owned metadata, kind-specific preparation,
//! custom-resource defaulting and pruning, mutating admission, validation, validating
//! admission, generation, no-op detection, then one commit.

use std::sync::Arc;

use kube_core::{
    DynamicObject, ObjectMeta, Status,
    params::{Patch, PatchParams, PostParams},
};

use crate::{
    admission::{AdmissionRequest, PluginInput},
    context::Context,
    errors, metadata, patch,
    request::{Response, Subresource},
    server::{ApiServer, Target, is_namespace_type, method_not_allowed},
    store::StoredEventType,
    strategy, validation,
};

/// How an update's resourceVersion precondition is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RvCheck {
    /// PUT: the body's resourceVersion must match; an empty one is unconditional for
    /// built-ins and 422 for custom resources.
    Update,
    /// PATCH: the patched object keeps the stored resourceVersion unless the patch set one,
    /// which then must match.
    Patch,
}

/// The options of one write that the pipeline needs beyond the object.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WriteOpts<'a> {
    /// `dryRun=All`: validate fully, change nothing.
    pub(crate) dry_run: bool,
    /// The request's `fieldManager`.
    pub(crate) field_manager: Option<&'a str>,
    /// The object comes out of a server-side apply, which already set its managedFields.
    pub(crate) applied: bool,
    /// The write came through `/scale`.
    pub(crate) via_scale: bool,
    /// A registry's own write of its storage, as the eviction's status update of the pod: no
    /// admission (validation still runs) and no field-ownership bookkeeping, which the request
    /// handler does, not the store.
    pub(crate) internal: bool,
}

impl<'a> WriteOpts<'a> {
    /// The options of a POST or PUT.
    pub(crate) fn post(params: &'a PostParams) -> Self {
        WriteOpts {
            dry_run: params.dry_run,
            field_manager: params.field_manager.as_deref(),
            applied: false,
            via_scale: false,
            internal: false,
        }
    }
    /// The options of a PATCH.
    pub(crate) fn patch(params: &'a PatchParams, applied: bool) -> Self {
        WriteOpts {
            dry_run: params.dry_run,
            field_manager: params.field_manager.as_deref(),
            applied,
            via_scale: false,
            internal: false,
        }
    }
}

/// The cause type of a create refused because its namespace is terminating (core/v1
/// `NamespaceTerminatingCause`).
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

impl ApiServer {
    /// POST an object.
    pub(crate) fn create(
        &mut self,
        t: &Target,
        object: DynamicObject,
        params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        validate_field_manager("CreateOptions", params.field_manager.as_deref())?;
        self.create_with(t, object, WriteOpts::post(params), ctx)
    }

    /// POST an object, or create it through a server-side apply.
    pub(crate) fn create_with(
        &mut self,
        t: &Target,
        mut object: DynamicObject,
        opts: WriteOpts<'_>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        self.decode_body(t, &mut object, ctx)?;
        check_body_namespace(t, &object.metadata)?;
        self.check_crd_accepts_creates(t)?;
        let given = object.metadata.name.clone().filter(|n| !n.is_empty());
        let prefix = object.metadata.generate_name.clone().filter(|n| !n.is_empty());
        let name_generated = given.is_none();
        let name = match (given, prefix) {
            (Some(name), _) => name,
            (None, Some(prefix)) => self.generated_name(t, &prefix, ctx)?,
            (None, None) => {
                return Err(self.invalid(
                    t,
                    "",
                    vec![metadata::required("metadata.name", "name or generateName is required")],
                ));
            }
        };
        self.check_namespace_accepts(t, &name)?;
        let resource_version_set = object.metadata.resource_version.as_deref().is_some_and(sets_a_version);
        let meta = &mut object.metadata;
        meta.name = Some(name.clone());
        meta.namespace = t.meta_namespace();
        meta.uid = Some(metadata::new_uid(ctx.ids));
        meta.creation_timestamp = Some(metadata::timestamp(ctx.now));
        meta.deletion_timestamp = None;
        meta.deletion_grace_period_seconds = None;
        meta.generation = t.ty.tracks_generation.then_some(1);
        meta.resource_version = None;
        meta.self_link = None;
        object.types = Some(t.type_meta());
        strategy::decode_defaults(t, &mut object, self.config.builtin_defaults);
        // A custom resource's schema defaults are applied while decoding too (admission applies
        // them again, a no-op), so they are the creator's.
        self.default_and_prune(t, &mut object);
        // The creator owns what it wrote and what decoding defaulted, not what the registry sets
        // afterwards (a Service's cluster IP, a Job's selector, a Namespace's finalizer), as the
        // real handler records ownership before calling the store.
        if !opts.applied {
            self.track_managed_fields(t, None, &mut object, None, opts.field_manager, ctx);
        }
        let taken = self.services_taken(t, None);
        strategy::prepare_for_create(t, &mut object, ctx.ids, ctx.now, &taken);
        strategy::fill_status_zero_values(t, &mut object);
        let plugins = PluginInput { ids: &mut *ctx.ids, name_generated, warnings: &mut ctx.warnings };
        let object = self.admit(t, "create", None, None, object, plugins)?;
        if strategy::is_core(&t.ty, "Service") {
            crate::node_ports::check_taken(&name, &object, None, &taken)?;
        }
        self.charge_quota(t, "create", None, None, &object, opts.dry_run, ctx)?;
        // The storage's Create refuses a resourceVersion before it looks for the key (a dry
        // run never reaches it): an error that is no API status, so 500 without a reason.
        if resource_version_set && !opts.dry_run {
            return Err(Status::failure("resourceVersion should not be set on objects to be created", "")
                .with_code(500));
        }
        let key = t.key(&name);
        if self.store.current().get(&key).is_some() {
            return Err(errors::already_exists(&t.ty.api.group, &t.ty.api.plural, &name));
        }
        if opts.dry_run {
            return Ok(Response::Object(Arc::new(object)));
        }
        let created = self.commit_admitted(StoredEventType::Added, t, &name, object);
        self.after_commit(t, &created, ctx);
        Ok(Response::Object(t.present(&created)))
    }

    /// A free name for `generateName`: up to [`metadata::GENERATE_NAME_ATTEMPTS_MAX`] tries,
    /// then 409 AlreadyExists for the last one tried, as kube-apiserver with RetryGenerateName
    /// answers when all its attempts collide.
    fn generated_name(&self, t: &Target, prefix: &str, ctx: &mut Context<'_>) -> Result<String, Status> {
        let mut name = String::new();
        for _ in 0..metadata::GENERATE_NAME_ATTEMPTS_MAX {
            name = metadata::generate_name(prefix, ctx.ids);
            if self.store.current().get(&t.key(&name)).is_none() {
                return Ok(name);
            }
        }
        Err(errors::already_exists(&t.ty.api.group, &t.ty.api.plural, &name))
    }

    /// Namespaced objects need an existing namespace that is not terminating (the
    /// NamespaceLifecycle admission plugin).
    fn check_namespace_accepts(&self, t: &Target, name: &str) -> Result<(), Status> {
        if !t.ty.namespaced {
            return Ok(());
        }
        let key = self.namespace_key(&t.namespace);
        let ns = self
            .store
            .current()
            .get(&key)
            .ok_or_else(|| errors::not_found("", "namespaces", &t.namespace))?;
        if ns.metadata.deletion_timestamp.is_some() {
            let why = format!(
                "unable to create new content in namespace {} because it is being terminated",
                t.namespace
            );
            // The NamespaceLifecycle plugin names the cause, so that clients can tell this 403
            // from an authorization failure.
            let mut status = errors::forbidden(&t.ty.api.group, &t.ty.api.plural, name, &why);
            if let Some(details) = status.details.as_mut() {
                details.causes.push(errors::cause(
                    NAMESPACE_TERMINATING_CAUSE,
                    "metadata.namespace",
                    format!("namespace {} is being terminated", t.namespace),
                ));
            }
            return Err(status);
        }
        Ok(())
    }

    /// PUT an object or its `/status` (or `/scale`).
    pub(crate) fn update(
        &mut self,
        t: &Target,
        name: &str,
        mut object: DynamicObject,
        params: &PostParams,
        subresource: Option<Subresource>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        check_subresource(t, name, subresource)?;
        validate_field_manager("UpdateOptions", params.field_manager.as_deref())?;
        if subresource == Some(Subresource::Scale) {
            return self.update_scale(t, name, object, params, ctx);
        }
        if subresource == Some(Subresource::Finalize) {
            return self.update_finalize(t, name, object, params, ctx);
        }
        self.decode_body(t, &mut object, ctx)?;
        let old = self.current_object(t, name)?;
        check_body_name(name, &object.metadata)?;
        check_body_namespace(t, &object.metadata)?;
        check_uid_precondition(t, name, &old, &object)?;
        self.check_resource_version(
            t,
            name,
            &old,
            object.metadata.resource_version.as_deref(),
            RvCheck::Update,
        )?;
        object.metadata.name = Some(name.to_owned());
        self.write_update(t, &old, object, subresource, WriteOpts::post(params), ctx)
    }

    /// PATCH an object or its `/status` (or `/scale`).
    pub(crate) fn patch(
        &mut self,
        t: &Target,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
        subresource: Option<Subresource>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        check_subresource(t, name, subresource)?;
        validate_field_manager("PatchOptions", params.field_manager.as_deref())?;
        if subresource == Some(Subresource::Scale) {
            return self.patch_scale(t, name, patch, params, ctx);
        }
        if subresource == Some(Subresource::Finalize) {
            return Err(method_not_allowed());
        }
        if params.force && !matches!(patch, Patch::Apply(_)) {
            return Err(errors::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![metadata::forbidden("force", "may not be specified for non-apply patch")],
            ));
        }
        if let Patch::Apply(body) = patch {
            return self.apply_patch(t, name, body, params, subresource, ctx);
        }
        let old = self.current_object(t, name)?;
        let mut object = patch::apply_to_object(&t.ty, &old, patch)?;
        self.decode_patched(t, &mut object, ctx)?;
        self.write_patched(t, name, &old, object, subresource, WriteOpts::patch(params, false), ctx)
    }

    /// The tail of every patch: `object` is the patched stored object.
    #[allow(clippy::too_many_arguments)] // one request's parts, all needed
    pub(crate) fn write_patched(
        &mut self,
        t: &Target,
        name: &str,
        old: &Arc<DynamicObject>,
        object: DynamicObject,
        subresource: Option<Subresource>,
        opts: WriteOpts<'_>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        check_body_name(name, &object.metadata)?;
        check_body_namespace(t, &object.metadata)?;
        self.check_resource_version(
            t,
            name,
            old,
            object.metadata.resource_version.as_deref(),
            RvCheck::Patch,
        )?;
        self.write_update(t, old, object, subresource, opts, ctx)
    }

    /// The stored object as `t` presents it, or 404.
    /// What the cluster's other Services hold (cluster IPs, node ports) when `t` is the Service
    /// type, for the allocators; `except` is the Service being updated. Empty for other types.
    pub(crate) fn services_taken(&self, t: &Target, except: Option<&str>) -> crate::node_ports::Taken {
        if !strategy::is_core(&t.ty, "Service") {
            return crate::node_ports::Taken::default();
        }
        let snapshot = self.store.current();
        let others = snapshot
            .iter_resource(&t.resource, None)
            .filter(|(key, _)| !(except.is_some_and(|n| *key.name == *n) && key.namespace == t.namespace))
            .map(|(_, object)| &**object);
        crate::node_ports::Taken::of(others)
    }

    pub(crate) fn current_object(&self, t: &Target, name: &str) -> Result<Arc<DynamicObject>, Status> {
        // As the target's version shows it: a write through one Event API (or one version of a
        // custom resource) starts from the object in its own shape.
        self.store.current().get(&t.key(name)).map(|o| t.present(o)).ok_or_else(|| t.not_found(name))
    }

    /// The optimistic-concurrency check of an update.
    pub(crate) fn check_resource_version(
        &self,
        t: &Target,
        name: &str,
        old: &DynamicObject,
        rv: Option<&str>,
        check: RvCheck,
    ) -> Result<(), Status> {
        match rv.filter(|rv| !rv.is_empty()) {
            // The generic store's own check: its error names the resource where a validation
            // error names the kind (`widgets.example.com "w" is invalid`).
            None if check == RvCheck::Update && t.ty.custom => Err(errors::invalid(
                &t.ty.api.group,
                &t.ty.api.plural,
                name,
                vec![errors::cause(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )],
            )),
            None => Ok(()),
            Some(rv) if Some(rv) == old.metadata.resource_version.as_deref() => Ok(()),
            Some(_) => Err(errors::conflict(&t.ty.api.group, &t.ty.api.plural, name)),
        }
    }

    /// The shared tail of update, patch and their `/status` forms: `new` is the client's
    /// intended object (name and preconditions already checked).
    pub(crate) fn write_update(
        &mut self,
        t: &Target,
        old: &Arc<DynamicObject>,
        mut new: DynamicObject,
        subresource: Option<Subresource>,
        opts: WriteOpts<'_>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let name = old.metadata.name.clone().unwrap_or_default();
        let taken = self.services_taken(t, Some(&name));
        if subresource == Some(Subresource::Status) && t.ty.custom {
            // A custom resource's `/status` takes only `.status`; everything else, metadata
            // included, stays (but for the managedFields an apply computed), as the
            // apiextensions server's status strategy copies the stored object.
            let applied_fields = new.metadata.managed_fields.take().filter(|_| opts.applied);
            strategy::keep_stored_content_but_status(&mut new, old);
            new.types.clone_from(&old.types);
            new.metadata.clone_from(&old.metadata);
            if applied_fields.is_some() {
                new.metadata.managed_fields = applied_fields;
            }
        } else if subresource == Some(Subresource::Status) {
            // A built-in kind's status strategy keeps the stored content but for `.status`, and
            // takes the metadata from the request as any update does (the same fields are the
            // server's), but for what its kind resets ([`strategy::prepare_for_status_update`]).
            self.preserve_server_fields(t, old, &mut new, opts.applied)?;
            strategy::keep_stored_content_but_status(&mut new, old);
            strategy::prepare_for_status_update(t, old, &mut new, ctx.now);
        } else if let Some(part @ (Subresource::EphemeralContainers | Subresource::Resize)) = subresource {
            // The Pod's ephemeral containers and resize strategies: the stored Pod but for
            // `spec.ephemeralContainers`, or for its containers' `resources` and `resizePolicy`,
            // its metadata reset as a status write's. The request was defaulted as it was
            // decoded (requests from limits), so defaults apply first.
            self.preserve_server_fields(t, old, &mut new, opts.applied)?;
            if self.config.builtin_defaults {
                crate::defaults::apply(&t.ty, &mut new.data);
            }
            if part == Subresource::Resize {
                strategy::keep_stored_pod_but_resize(&mut new, old);
            } else {
                strategy::keep_stored_pod_but_ephemeral_containers(&mut new, old);
            }
        } else {
            self.preserve_server_fields(t, old, &mut new, opts.applied)?;
            strategy::prepare_for_update(t, old, &mut new, self.config.builtin_defaults, ctx.ids, &taken);
        }
        strategy::fill_status_zero_values(t, &mut new);
        let sub_name = subresource.map(Subresource::name);
        // A `/scale` write arrives here as a main-resource update of `.spec.replicas`; hooks
        // still see which subresource was written.
        let hook_sub_name = if opts.via_scale { Some("scale") } else { sub_name };
        let mut new = if opts.internal {
            self.validated(t, hook_sub_name, Some(old), new)?
        } else {
            let plugins =
                PluginInput { ids: &mut *ctx.ids, name_generated: false, warnings: &mut ctx.warnings };
            self.admit(t, "update", hook_sub_name, Some(old), new, plugins)?
        };
        if subresource.is_none() && strategy::is_core(&t.ty, "Service") {
            crate::node_ports::check_taken(&name, &new, Some(old), &taken)?;
        }
        if !opts.internal {
            self.charge_quota(t, "update", hook_sub_name, Some(old), &new, opts.dry_run, ctx)?;
        }
        if t.ty.tracks_generation && metadata::spec_changed(old, &new, t.ty.status_subresource) {
            new.metadata.generation = Some(old.metadata.generation.unwrap_or(0) + 1);
        }
        if metadata::is_noop(old, &new) {
            return Ok(Response::Object(t.present(old)));
        }
        if !opts.applied && !opts.internal {
            let managed_sub = if opts.via_scale { Some("scale") } else { sub_name };
            self.track_managed_fields(t, Some(old), &mut new, managed_sub, opts.field_manager, ctx);
        }
        if opts.dry_run {
            return Ok(Response::Object(Arc::new(new)));
        }
        if should_delete_during_update(&new) {
            let answer = self.delete_during_update(t, &name, old, new, ctx);
            return Ok(Response::Object(t.present(&answer)));
        }
        let stored = self.commit_admitted(StoredEventType::Modified, t, &name, new);
        if subresource.is_none() {
            self.after_commit(t, &stored, ctx);
        }
        Ok(Response::Object(t.present(&stored)))
    }

    /// Remove `old` from storage because the update to `new` leaves it deleting without
    /// finalizers, as the real store's `deleteWithoutFinalizers`: the delete removes what was
    /// stored, so the DELETED event carries `old` (at the deletion's revision, with the
    /// finalizer that was just removed), while the writer gets its own updated object back, at
    /// the resourceVersion it updated (the update itself is never stored).
    pub(crate) fn delete_during_update(
        &mut self,
        t: &Target,
        name: &str,
        old: &Arc<DynamicObject>,
        mut new: DynamicObject,
        ctx: &mut Context<'_>,
    ) -> Arc<DynamicObject> {
        let stored = self.commit_admitted(StoredEventType::Deleted, t, name, DynamicObject::clone(old));
        self.after_delete(t, &stored, ctx);
        new.metadata.resource_version = old.metadata.resource_version.clone();
        Arc::new(new)
    }

    /// Fields the client cannot change through an update: they keep the stored values.
    fn preserve_server_fields(
        &self,
        t: &Target,
        old: &DynamicObject,
        new: &mut DynamicObject,
        applied: bool,
    ) -> Result<(), Status> {
        let (o, n) = (&old.metadata, &mut new.metadata);
        match n.uid.as_deref().filter(|u| !u.is_empty()) {
            Some(uid) if Some(uid) != o.uid.as_deref() => {
                let name = o.name.clone().unwrap_or_default();
                return Err(self.invalid(
                    t,
                    &name,
                    vec![metadata::invalid_value("metadata.uid", uid, "field is immutable")],
                ));
            }
            _ => n.uid = o.uid.clone(),
        }
        n.namespace = o.namespace.clone();
        n.creation_timestamp = o.creation_timestamp.clone();
        n.deletion_timestamp = o.deletion_timestamp.clone();
        n.deletion_grace_period_seconds = o.deletion_grace_period_seconds;
        n.generation = o.generation;
        n.generate_name = n.generate_name.take().or_else(|| o.generate_name.clone());
        n.self_link = None;
        n.resource_version = o.resource_version.clone();
        // Ownership changes only through the server's bookkeeping (or an apply's result), not
        // through managedFields a client echoes back.
        if !applied {
            n.managed_fields = o.managed_fields.clone();
        }
        new.types = Some(t.type_meta());
        Ok(())
    }

    /// Record a non-apply write in managedFields ([`crate::apply::update_managed_fields`]).
    ///
    /// An update of an object without managedFields records none, as the real server's
    /// skip-non-applied manager does (it tracks ownership from an object's creation, or from
    /// its first apply; [`crate::apply::apply`] is not skipped). A create records the fields its
    /// manager set. Field ownership costs two JSON conversions per write, so a create that names
    /// no field manager records nothing here (over HTTP every request names one, from its
    /// User-Agent when not from `fieldManager`). Without a named manager an update's manager is
    /// the requesting user, else `unknown`.
    fn track_managed_fields(
        &self,
        t: &Target,
        old: Option<&DynamicObject>,
        new: &mut DynamicObject,
        subresource: Option<&'static str>,
        field_manager: Option<&str>,
        ctx: &Context<'_>,
    ) {
        let tracked = match old {
            Some(o) => o.metadata.managed_fields.as_ref().is_some_and(|m| !m.is_empty()),
            None => field_manager.is_some(),
        };
        if !tracked {
            return;
        }
        let name = field_manager.or(t.user.as_deref()).unwrap_or("unknown");
        let manager =
            crate::apply::Manager { name, api_version: &t.ty.api.api_version, subresource, now: ctx.now };
        let Ok(old_value) = old.map(serde_json::to_value).transpose() else { return };
        record_update(t, old_value.as_ref(), new, &manager);
    }

    /// Mutating admission, validation, then validating admission. Custom resources are
    /// defaulted and pruned first, as the real server does while decoding the request.
    pub(crate) fn admit(
        &self,
        t: &Target,
        operation: &'static str,
        subresource: Option<&'static str>,
        old: Option<&DynamicObject>,
        mut object: DynamicObject,
        mut plugins: PluginInput<'_>,
    ) -> Result<DynamicObject, Status> {
        self.default_and_prune(t, &mut object);
        let request =
            AdmissionRequest { operation, resource: &t.ty, subresource, old, user: t.user.as_deref() };
        let name_generated = plugins.name_generated;
        // The built-in plugins run before the webhooks, as kube-apiserver's admission chain
        // orders its plugins before `MutatingAdmissionWebhook`.
        self.admit_with_plugins(t, &request, &mut object, &mut plugins)?;
        for hook in &self.mutating {
            hook(&request, &mut object)?;
        }
        // What every mutation left, as its Go type encodes it: from here on the object is
        // compared with the stored one (immutable fields, no-op, generation) and then stored.
        crate::go_types::encode_object(&mut object, crate::go_types::Mode::Full);
        // RBAC's registries check escalation in the storage: after mutating admission, before
        // validation.
        self.check_rbac_escalation(t, old, &object, name_generated)?;
        let causes = self.validate(t, old, &object, subresource);
        if !causes.is_empty() {
            let name = object.metadata.name.clone().unwrap_or_default();
            return Err(self.invalid(t, &name, causes));
        }
        self.validate_with_plugins(&request, &object, plugins.warnings)?;
        for hook in &self.validating {
            hook(&request, &mut object)?;
        }
        self.check_admission_policies(t, &request, Some(&object))?;
        Ok(object)
    }

    /// What [`ApiServer::admit`] does without the admission hooks: a registry's own write, which
    /// no admission sees, is still validated by its strategy.
    pub(crate) fn validated(
        &self,
        t: &Target,
        subresource: Option<&'static str>,
        old: Option<&DynamicObject>,
        mut object: DynamicObject,
    ) -> Result<DynamicObject, Status> {
        self.default_and_prune(t, &mut object);
        crate::go_types::encode_object(&mut object, crate::go_types::Mode::Full);
        let causes = self.validate(t, old, &object, subresource);
        if !causes.is_empty() {
            let name = object.metadata.name.clone().unwrap_or_default();
            return Err(self.invalid(t, &name, causes));
        }
        Ok(object)
    }

    /// Every field error of `object` (empty when valid).
    ///
    /// A write of `/status` is validated as the real server's status strategies validate it
    /// (`ValidateDeploymentStatusUpdate`, `ValidatePodStatusUpdate`, ...): the metadata, not the
    /// kind's spec rules, which the object's own writes checked. The spec of a status write is the
    /// stored one (see `write_update`), so the spec rules could only refuse a status write for a
    /// spec stored before them.
    fn validate(
        &self,
        t: &Target,
        old: Option<&DynamicObject>,
        object: &DynamicObject,
        subresource: Option<&str>,
    ) -> Vec<kube_core::response::StatusCause> {
        let spec_rules = subresource != Some("status");
        let mut causes = Vec::new();
        if old.is_none() {
            if let Some(prefix) = object.metadata.generate_name.as_deref().filter(|p| !p.is_empty()) {
                causes.extend(metadata::validate_generate_name(t.ty.name_rule, prefix));
            }
            let name = object.metadata.name.as_deref().unwrap_or_default();
            causes.extend(metadata::validate_name(t.ty.name_rule, "metadata.name", name));
        }
        // ValidateObjectMeta's order: labels and annotations, owner references, finalizers.
        causes.extend(validation::validate_labels_and_annotations(&object.metadata));
        causes.extend(metadata::validate_owner_references(&object.metadata));
        // Only kube-apiserver's own groups validate with core's ValidateObjectMeta; CRDs
        // (apiextensions) and custom resources use apimachinery's alone.
        let kube_group = !t.ty.custom && t.ty.api.group != "apiextensions.k8s.io";
        causes.extend(validation::validate_finalizers(&object.metadata, kube_group));
        if spec_rules {
            causes.extend(validation::validate_builtin(&t.ty, object));
            if old.is_none() {
                causes.extend(validation::validate_builtin_create(&t.ty, object));
            }
        }
        if let Some(old) = old {
            causes.extend(metadata::validate_no_new_finalizers(&old.metadata, &object.metadata));
            if subresource == Some("ephemeralcontainers") {
                causes.extend(validation::ephemeral_containers_update(old, object));
            } else if subresource == Some("resize") {
                // `ValidatePodResize`: some refusals stand alone, dropping what came before.
                match validation::pod_resize(old, object) {
                    validation::Resize::Alone(cause) => return vec![cause],
                    validation::Resize::And(more) => causes.extend(more),
                }
            } else if spec_rules {
                causes.extend(validation::validate_builtin_update(&t.ty, old, object));
            }
        }
        causes.extend(self.validate_custom(t, old, object, subresource));
        causes
    }

    /// 422 Invalid for `name` of this type.
    pub(crate) fn invalid(
        &self,
        t: &Target,
        name: &str,
        causes: Vec<kube_core::response::StatusCause>,
    ) -> Status {
        errors::invalid(&t.ty.api.group, &t.ty.api.kind, name, causes)
    }

    /// Store `object` as a new revision (its resourceVersion set to that revision) and return
    /// the stored Arc.
    pub(crate) fn commit(
        &mut self,
        kind: StoredEventType,
        t: &Target,
        name: &str,
        mut object: DynamicObject,
    ) -> Arc<DynamicObject> {
        // What the registry itself changed (a binding, a deletion mark, a CRD's status) is
        // stored as its Go type encodes it.
        crate::go_types::encode_object(&mut object, crate::go_types::Mode::Full);
        self.commit_admitted(kind, t, name, object)
    }

    /// [`ApiServer::commit`] of an object already encoded: what admission ([`ApiServer::admit`]
    /// or [`ApiServer::validated`]) returned, or a stored object.
    pub(crate) fn commit_admitted(
        &mut self,
        kind: StoredEventType,
        t: &Target,
        name: &str,
        mut object: DynamicObject,
    ) -> Arc<DynamicObject> {
        object.metadata.resource_version = Some(self.store.next_revision().to_string());
        let object = Arc::new(object);
        self.store.commit(kind, t.key(name), object.clone(), self.clock);
        object
    }

    /// The key of namespace `name`.
    pub(crate) fn namespace_key(&self, name: &str) -> crate::store::ObjectKey {
        crate::store::ObjectKey {
            resource: Arc::from("namespaces"),
            namespace: Arc::from(""),
            name: Arc::from(name),
        }
    }
}

/// The longest field manager name (apimachinery's FieldManagerMaxLength).
pub(crate) const FIELD_MANAGER_BYTES_MAX: usize = 128;

/// ValidateFieldManager: at most 128 bytes of printable characters, else 422 Invalid on the
/// request's options (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub(crate) fn validate_field_manager(options: &str, manager: Option<&str>) -> Result<(), Status> {
    let Some(manager) = manager else { return Ok(()) };
    let mut causes = Vec::new();
    if manager.len() > FIELD_MANAGER_BYTES_MAX {
        causes.push(errors::cause(
            "FieldValueTooLong",
            "fieldManager",
            format!("Too long: may not be more than {FIELD_MANAGER_BYTES_MAX} bytes"),
        ));
    }
    for (i, c) in manager.chars().enumerate() {
        if c.is_control() {
            causes.push(errors::cause(
                "FieldValueInvalid",
                "fieldManager",
                format!(
                    "Invalid value: {manager:?}: invalid character U+{:04X} (at position {i})",
                    u32::from(c)
                ),
            ));
        }
    }
    if causes.is_empty() { Ok(()) } else { Err(errors::invalid("meta.k8s.io", options, "", causes)) }
}

/// The body may repeat the request's namespace but not contradict it. A cluster-scoped object's
/// namespace is cleared instead, as the real server's EnsureObjectNamespaceMatchesRequestNamespace.
pub(crate) fn check_body_namespace(t: &Target, meta: &ObjectMeta) -> Result<(), Status> {
    if !t.ty.namespaced {
        return Ok(());
    }
    match meta.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        Some(ns) if ns != &*t.namespace => Err(errors::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

/// A PUT body's uid is a precondition, as the real store takes it (defaultUpdatedObjectInfo):
/// replacing an object that was deleted and recreated under the same name is 409 Conflict.
fn check_uid_precondition(
    t: &Target,
    name: &str,
    old: &DynamicObject,
    body: &DynamicObject,
) -> Result<(), Status> {
    let stored = old.metadata.uid.as_deref().unwrap_or_default();
    match body.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
        Some(uid) if uid != stored => Err(errors::conflict_with(
            &t.ty.api.group,
            &t.ty.api.plural,
            name,
            // The etcd store's precondition check, as its `StorageError` prints itself.
            &format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: \
                 Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}",
                t.etcd_key(name)
            ),
        )),
        _ => Ok(()),
    }
}

/// The body may repeat the URL's name but not contradict it.
pub(crate) fn check_body_name(name: &str, meta: &ObjectMeta) -> Result<(), Status> {
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) if n != name => Err(errors::bad_request(&format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// An update that leaves a deleting object without finalizers (and with no grace period
/// pending) removes it, as the real store's ShouldDeleteDuringUpdate.
pub(crate) fn should_delete_during_update(object: &DynamicObject) -> bool {
    let meta = &object.metadata;
    let namespace_finalizers_left =
        object.data.pointer("/spec/finalizers").and_then(|f| f.as_array()).is_some_and(|f| !f.is_empty())
            && object.types.as_ref().is_some_and(|t| t.kind == "Namespace" && t.api_version == "v1");
    meta.deletion_timestamp.is_some()
        && meta.finalizers.as_deref().unwrap_or_default().is_empty()
        && meta.deletion_grace_period_seconds.unwrap_or(0) == 0
        && !namespace_finalizers_left
}

/// Record in `new`'s managedFields that `manager` wrote it over `old` (`None`: a create), with
/// [`crate::apply::update_managed_fields`] on the objects' JSON.
pub(crate) fn record_update(
    t: &Target,
    old: Option<&serde_json::Value>,
    new: &mut DynamicObject,
    manager: &crate::apply::Manager<'_>,
) {
    let Ok(mut new_value) = serde_json::to_value(&*new) else { return };
    let schema = t.ty.custom_schema();
    crate::apply::update_managed_fields_with_schema(
        old,
        &mut new_value,
        &t.ty.api,
        schema,
        manager,
        t.ty.status_subresource,
    );
    let entries = new_value
        .pointer_mut("/metadata/managedFields")
        .map(serde_json::Value::take)
        .map(serde_json::from_value);
    match entries {
        Some(Ok(entries)) => new.metadata.managed_fields = Some(entries),
        None => new.metadata.managed_fields = None,
        Some(Err(_)) => {}
    }
}

/// 404 for a subresource the type does not serve (see [`Target::unserved_subresource`]).
pub(crate) fn check_subresource(
    t: &Target,
    name: &str,
    subresource: Option<Subresource>,
) -> Result<(), Status> {
    let served = match subresource {
        None => true,
        Some(Subresource::Status) => t.ty.status_subresource,
        Some(Subresource::Scale) => t.ty.scale.is_some(),
        Some(Subresource::Finalize) => is_namespace_type(&t.ty),
        // Only POST takes it (`Verb::CreateSubresource`): every other verb is 405 on a pod.
        Some(Subresource::Eviction) if crate::eviction::serves(&t.ty) => {
            return Err(method_not_allowed());
        }
        Some(Subresource::Eviction) => false,
        Some(Subresource::Token) if crate::token::serves(&t.ty) => return Err(method_not_allowed()),
        Some(Subresource::Token) => false,
        Some(Subresource::Binding) if crate::binding::serves(&t.ty) => return Err(method_not_allowed()),
        Some(Subresource::Binding) => false,
        Some(Subresource::EphemeralContainers | Subresource::Resize) => strategy::is_core(&t.ty, "Pod"),
    };
    if served { Ok(()) } else { Err(t.unserved_subresource(name)) }
}

/// Whether a create's `metadata.resourceVersion` names a version for the storage
/// (`APIObjectVersioner.ObjectResourceVersion`: Go's ParseUint, not 0). One that does not parse
/// ("-1", "abc") is ignored, as the real storage ignores it.
fn sets_a_version(resource_version: &str) -> bool {
    !resource_version.is_empty()
        && resource_version.bytes().all(|b| b.is_ascii_digit())
        && resource_version.parse::<u64>().is_ok_and(|v| v != 0)
}
