//! delete and deletecollection: preconditions, finalizers, propagation policies, graceful pod
//! deletion, and namespace termination.

use std::sync::Arc;

use kube_core::{
    DynamicObject, Status,
    params::{DeleteParams, ListParams, PostParams, PropagationPolicy},
};

use crate::{
    admission::AdmissionRequest,
    context::Context,
    errors,
    filter::ObjectFilter,
    metadata,
    request::{ListResponse, Response},
    server::{ApiServer, Target},
    store::StoredEventType,
    strategy::NAMESPACE_FINALIZER,
    write::{RvCheck, check_body_name, check_body_namespace, should_delete_during_update},
};

/// The finalizer the foreground propagation policy adds (the garbage collector removes it).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer the orphan propagation policy adds (the garbage collector removes it).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// How many objects one deletecollection deletes at most; a larger collection is cut short
/// (the client repeats the request), as the real server pages its deletes.
const DELETE_COLLECTION_ITEMS_MAX: usize = 100_000;

impl ApiServer {
    /// DELETE one object.
    pub(crate) fn delete(
        &mut self,
        t: &Target,
        name: &str,
        params: &DeleteParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        refuse_protected_delete(t, name)?;
        self.delete_with(t, name, params, true, ctx)
    }

    /// DELETE one object, through the validating admission hooks (`admitted`) or, for a
    /// registry's own delete (an eviction's), without them.
    pub(crate) fn delete_with(
        &mut self,
        t: &Target,
        name: &str,
        params: &DeleteParams,
        admitted: bool,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let old = self.current_object(t, name)?;
        check_preconditions(t, name, &old, params)?;
        if admitted {
            let request = AdmissionRequest {
                operation: "delete",
                resource: &t.ty,
                subresource: None,
                old: Some(&old),
                user: t.user.as_deref(),
            };
            let mut scratch = DynamicObject::clone(&old);
            for hook in &self.validating {
                hook(&request, &mut scratch)?;
            }
            self.check_admission_policies(t, &request, None)?;
        }
        let grace = self.grace_period_seconds(t, &old, params);
        let mut new = DynamicObject::clone(&old);
        set_garbage_collector_finalizers(&mut new, params.propagation_policy.as_ref());
        let deleting = old.metadata.deletion_timestamp.is_some();
        if deleting {
            // A second delete can only shorten a pending grace period (the kubelet's final
            // delete with grace 0); otherwise it answers the object unchanged.
            let pending = old.metadata.deletion_grace_period_seconds.unwrap_or(0);
            if grace < pending {
                new.metadata.deletion_timestamp = Some(metadata::timestamp_after(ctx.now, grace));
                new.metadata.deletion_grace_period_seconds = Some(grace);
            }
        } else if is_namespace(t) || crate::crd_serving::is_crd_type(t) {
            // Namespaces and CRDs have a Delete of their own in their registries: it sets the
            // deletionTimestamp (and the Terminating phase or condition) in one update, with
            // no grace period and no generation bump.
            new.metadata.deletion_timestamp = Some(metadata::timestamp_after(ctx.now, 0));
            if is_namespace(t) {
                crate::strategy::set_status(&mut new, Some(serde_json::json!({"phase": "Terminating"})));
            } else {
                crate::crd_serving::mark_deletion_pending(&mut new, ctx.now);
            }
        } else {
            new.metadata.deletion_timestamp = Some(metadata::timestamp_after(ctx.now, grace));
            new.metadata.deletion_grace_period_seconds = Some(grace);
            if let Some(g) = new.metadata.generation.filter(|g| *g > 0) {
                new.metadata.generation = Some(g + 1);
            }
        }
        let gone = should_delete_during_update(&new);
        let graceful = is_pod(t);
        if gone && !deleting && !graceful {
            // An immediate deletion removes the object as it was stored: the DELETED event
            // carries no deletionTimestamp, as the real store's non-graceful path.
            new = DynamicObject::clone(&old);
        }
        let marked = !metadata::is_noop(&old, &new);
        if !gone && !marked {
            return Ok(Response::Object(t.present(&old)));
        }
        if params.dry_run {
            return Ok(deleted_or_kept(t, name, gone, Arc::new(new)));
        }
        if gone && graceful && marked {
            // A kind with a graceful delete strategy (Pods) deleted with no grace left, say an
            // unscheduled pod: the real store first writes the deletion mark
            // (deletionTimestamp, deletionGracePeriodSeconds 0), then removes what it wrote.
            // Watches see MODIFIED then DELETED, and the answer is the marked object.
            let marked = self.commit(StoredEventType::Modified, t, name, new);
            let stored =
                self.commit_admitted(StoredEventType::Deleted, t, name, DynamicObject::clone(&marked));
            self.after_delete(t, &stored, ctx);
            return Ok(deleted_or_kept(t, name, true, t.present(&marked)));
        }
        if gone {
            // The store's delete answers what it removed, at the revision it was stored with;
            // only the DELETED event carries the deletion's revision.
            let stored = self.commit(StoredEventType::Deleted, t, name, new);
            self.after_delete(t, &stored, ctx);
            return Ok(deleted_or_kept(t, name, true, t.present(&old)));
        }
        let stored = self.commit(StoredEventType::Modified, t, name, new);
        self.after_commit(t, &stored, ctx);
        Ok(deleted_or_kept(t, name, false, t.present(&stored)))
    }

    /// The grace period of this deletion: only Pods are deleted gracefully. The request's
    /// value wins, then the pod's `terminationGracePeriodSeconds`, then the server default; a
    /// pod that never ran on a node, or has finished, goes at once.
    fn grace_period_seconds(&self, t: &Target, old: &DynamicObject, params: &DeleteParams) -> i64 {
        if t.ty.custom || !t.ty.api.group.is_empty() || t.ty.api.kind != "Pod" {
            return 0;
        }
        let unscheduled =
            old.data.pointer("/spec/nodeName").and_then(|n| n.as_str()).is_none_or(str::is_empty);
        let finished = matches!(
            old.data.pointer("/status/phase").and_then(|p| p.as_str()),
            Some("Succeeded" | "Failed")
        );
        if unscheduled || finished {
            return 0;
        }
        let from_spec = old.data.pointer("/spec/terminationGracePeriodSeconds").and_then(|g| g.as_i64());
        params
            .grace_period_seconds
            .map(i64::from)
            .or(from_spec)
            .unwrap_or(self.config.pod_grace_period_seconds_default)
            .max(0)
    }

    /// DELETE a collection: every selected object, deleted one by one (one revision each).
    pub(crate) fn delete_collection(
        &mut self,
        t: &Target,
        list: &ListParams,
        params: &DeleteParams,
        ctx: &mut Context<'_>,
    ) -> Result<ListResponse, Status> {
        let filter = ObjectFilter::parse(
            list.label_selector.as_deref(),
            list.field_selector.as_deref(),
            &t.ty.selectable_fields,
        )?;
        let namespace = t.namespace_filter();
        let targets: Vec<(Arc<str>, Arc<str>)> = self
            .store
            .current()
            .iter_resource(&t.resource, namespace)
            .filter(|(k, o)| filter.matches(k, o))
            .take(DELETE_COLLECTION_ITEMS_MAX)
            .map(|(k, _)| (k.namespace.clone(), k.name.clone()))
            .collect();
        let mut items = Vec::with_capacity(targets.len());
        for (ns, name) in targets {
            let target = Target { namespace: ns, ..t.clone() };
            // The registry's collection delete deletes each item through the store, past the
            // REST Delete that refuses a system PriorityClass.
            match self.delete_with(&target, &name, params, true, ctx)? {
                Response::Object(o)
                | Response::Deleted { object: o, .. }
                | Response::Completed { object: o, .. } => items.push(o),
                Response::List(_) | Response::Watch(_) => {}
            }
        }
        Ok(ListResponse {
            items,
            resource_version: self.store.revision().to_string(),
            continue_token: None,
            remaining_item_count: None,
        })
    }

    /// Remove the `kubernetes` finalizer from a Namespace's `spec.finalizers`, as the
    /// namespace controller does through the `/finalize` subresource once the namespace is
    /// empty; a terminating namespace with no finalizers left is then removed. The same as a
    /// [`crate::Subresource::Finalize`] update without a resourceVersion.
    pub fn finalize_namespace(&mut self, name: &str, ctx: &mut Context<'_>) -> Result<Response, Status> {
        self.advance_clock(ctx.now);
        let ns_type = self.types.get("", "v1", "namespaces").expect("namespaces are built in").clone();
        let t = Target {
            resource: ns_type.storage_key(),
            ty: ns_type,
            namespace: Arc::from(""),
            user: None,
            field_validation: Default::default(),
        };
        let old = self.current_object(&t, name)?;
        let mut new = DynamicObject::clone(&old);
        if let Some(f) = new.data.pointer_mut("/spec/finalizers").and_then(|f| f.as_array_mut()) {
            f.retain(|f| f != NAMESPACE_FINALIZER);
        }
        self.write_finalize(&t, name, &old, new, false, ctx)
    }

    /// PUT `/finalize`: the body's `spec.finalizers` replace the Namespace's; nothing else
    /// changes.
    pub(crate) fn update_finalize(
        &mut self,
        t: &Target,
        name: &str,
        body: DynamicObject,
        params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let old = self.current_object(t, name)?;
        check_body_name(name, &body.metadata)?;
        check_body_namespace(t, &body.metadata)?;
        self.check_resource_version(
            t,
            name,
            &old,
            body.metadata.resource_version.as_deref(),
            RvCheck::Patch,
        )?;
        let mut new = DynamicObject::clone(&old);
        let finalizers = body.data.pointer("/spec/finalizers").cloned();
        if let Some(map) = new.data.as_object_mut() {
            let spec = map.entry("spec").or_insert_with(|| serde_json::json!({}));
            match (spec.as_object_mut(), finalizers) {
                (Some(spec), Some(f)) => {
                    spec.insert("finalizers".to_owned(), f);
                }
                (Some(spec), None) => {
                    spec.remove("finalizers");
                }
                (None, _) => {}
            }
        }
        self.write_finalize(t, name, &old, new, params.dry_run, ctx)
    }

    /// Store a finalize: no-op, removal (terminating and no finalizers left) or update.
    fn write_finalize(
        &mut self,
        t: &Target,
        name: &str,
        old: &Arc<DynamicObject>,
        mut new: DynamicObject,
        dry_run: bool,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        // Emptied finalizers are left out, as every write's are (`omitempty`).
        crate::go_types::encode_object(&mut new, crate::go_types::Mode::Full);
        if metadata::is_noop(old, &new) {
            return Ok(Response::Object(old.clone()));
        }
        if dry_run {
            return Ok(Response::Object(Arc::new(new)));
        }
        if should_delete_during_update(&new) {
            return Ok(Response::Object(self.delete_during_update(t, name, old, new, ctx)));
        }
        Ok(Response::Object(self.commit_admitted(StoredEventType::Modified, t, name, new)))
    }
}

/// Whether `t` is the built-in Pod type, the one kind served here whose registry deletes
/// gracefully (`podStrategy.CheckGracefulDelete`).
fn is_pod(t: &Target) -> bool {
    !t.ty.custom && t.ty.api.group.is_empty() && t.ty.api.kind == "Pod"
}

fn is_namespace(t: &Target) -> bool {
    !t.ty.custom && t.ty.api.group.is_empty() && t.ty.api.kind == "Namespace"
}

/// Kinds whose real storage answers a completed delete with the deleted object rather than a
/// Status (`ReturnDeletedObject: true` in their registries): Pods and ServiceAccounts.
fn returns_deleted_object(t: &Target) -> bool {
    !t.ty.custom && t.ty.api.group.is_empty() && matches!(t.ty.api.kind.as_str(), "Pod" | "ServiceAccount")
}

/// A DELETE the real server refuses, before looking the object up: an immortal namespace's
/// (the NamespaceLifecycle admission plugin's `default`, `kube-system` and `kube-public`) and a
/// system PriorityClass's (its REST `Delete`), each with their 403.
fn refuse_protected_delete(t: &Target, name: &str) -> Result<(), Status> {
    if is_namespace(t) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(errors::forbidden("", "namespaces", name, "this namespace may not be deleted"));
    }
    let priority_class =
        !t.ty.custom && t.ty.api.group == "scheduling.k8s.io" && t.ty.api.kind == "PriorityClass";
    if priority_class
        && crate::validation::scheduling::SYSTEM_PRIORITY_CLASSES.iter().any(|(n, ..)| *n == name)
    {
        return Err(errors::forbidden(
            "scheduling.k8s.io",
            "priorityclasses",
            name,
            "this is a system priority class and cannot be deleted",
        ));
    }
    Ok(())
}

/// The namespaces the NamespaceLifecycle admission plugin never lets go.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The answer of a delete: a Success Status when the object is gone (but for the kinds that
/// answer the deleted object), the object otherwise.
fn deleted_or_kept(t: &Target, name: &str, gone: bool, object: Arc<DynamicObject>) -> Response {
    if gone && !returns_deleted_object(t) {
        let uid = object.metadata.uid.clone().unwrap_or_default();
        Response::Deleted { status: errors::deleted(&t.ty.api.group, &t.ty.api.plural, name, &uid), object }
    } else {
        Response::Object(object)
    }
}

/// uid and resourceVersion preconditions: 409 Conflict as the registry's `BeforeDelete` answers
/// it, before the storage layer sees the delete. It names the kind, not the resource
/// (`ConfigMap "a"`, `Deployment.apps "web"`), in the message and the details.
pub(crate) fn check_preconditions(
    t: &Target,
    name: &str,
    old: &DynamicObject,
    params: &DeleteParams,
) -> Result<(), Status> {
    let Some(pre) = &params.preconditions else { return Ok(()) };
    let conflict = |why: String| errors::conflict_with(&t.ty.api.group, &t.ty.api.kind, name, &why);
    let uid = old.metadata.uid.as_deref().unwrap_or_default();
    if let Some(want) = pre.uid.as_deref().filter(|u| *u != uid) {
        return Err(conflict(format!(
            "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )));
    }
    let rv = old.metadata.resource_version.as_deref().unwrap_or_default();
    if let Some(want) = pre.resource_version.as_deref().filter(|r| *r != rv) {
        return Err(conflict(format!(
            "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
        )));
    }
    Ok(())
}

/// Foreground and orphan propagation are carried out by the garbage collector through a
/// finalizer, which every delete (of an object already deleting too) sets as the store's
/// `deletionFinalizersForGarbageCollection` does: both are dropped, then `orphan` is added back
/// when the policy is Orphan (or, with none, when the object had it) and `foregroundDeletion`
/// when the policy is Foreground (or, with none, when the object had it). A delete that leaves
/// the same set keeps the finalizers as they were. (Every kind the model serves deletes its
/// dependents by default; core/v1 ReplicationControllers, which orphan, are not served.)
fn set_garbage_collector_finalizers(object: &mut DynamicObject, policy: Option<&PropagationPolicy>) {
    let finalizers = object.metadata.finalizers.as_deref().unwrap_or_default();
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    // shouldOrphanDependents: the policy, then the first of the two finalizers the object has.
    let first_gc_finalizer = finalizers.iter().find(|f| *f == ORPHAN_FINALIZER || *f == FOREGROUND_FINALIZER);
    let orphan = match policy {
        Some(p) => matches!(p, PropagationPolicy::Orphan),
        None => first_gc_finalizer.is_some_and(|f| f == ORPHAN_FINALIZER),
    };
    // shouldDeleteDependents: the policy, then the finalizer.
    let foreground = match policy {
        Some(p) => matches!(p, PropagationPolicy::Foreground),
        None => has(FOREGROUND_FINALIZER),
    };
    let mut wanted: Vec<String> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if orphan {
        wanted.push(ORPHAN_FINALIZER.to_owned());
    }
    if foreground {
        wanted.push(FOREGROUND_FINALIZER.to_owned());
    }
    let same_set =
        wanted.iter().all(|f| finalizers.contains(f)) && finalizers.iter().all(|f| wanted.contains(f));
    if !same_set {
        object.metadata.finalizers = Some(wanted);
    }
}
