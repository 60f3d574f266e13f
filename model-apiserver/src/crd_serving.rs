//! Serving custom resources: a CustomResourceDefinition's served versions become resource
//! types when it is created (its status gets the NamesAccepted and Established conditions at
//! once, where the real server's controllers take a moment) and the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer. Deleting a CRD makes it Terminating:
//! creates of its objects get 405, every object is deleted through the normal deletion (so
//! their finalizers hold them), and once the last is gone the CRD goes and its versions stop
//! being served. Custom resources are defaulted, pruned and validated against their version's
//! structural schema.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{DynamicObject, Status, params::DeleteParams, response::StatusCause};

use crate::{
    context::Context,
    crd, errors, metadata, schema,
    server::{ApiServer, Target},
    store::{ObjectKey, StoredEventType},
    strategy::{set_status, status_of},
    write::should_delete_during_update,
};

/// The group of CustomResourceDefinitions.
const APIEXTENSIONS_GROUP: &str = "apiextensions.k8s.io";
/// How many custom resources deleting one CRD removes at most (one revision each).
const CRD_CLEANUP_ITEMS_MAX: usize = 1_000_000;
/// The finalizer that holds a CRD until its objects are gone.
const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `t` is the built-in CustomResourceDefinition type.
pub(crate) fn is_crd_type(t: &Target) -> bool {
    !t.ty.custom && t.ty.api.group == APIEXTENSIONS_GROUP && t.ty.api.kind == "CustomResourceDefinition"
}

/// Decode a stored object as a CRD: read where it is ([`crate::ignored::deserialize_object`],
/// with the object's own metadata), else converted to JSON first, whose error words a refusal.
fn as_crd(object: &DynamicObject) -> Result<CustomResourceDefinition, serde_json::Error> {
    if let Ok((mut crd, _)) = crate::ignored::deserialize_object::<CustomResourceDefinition>(object) {
        crd.metadata = object.metadata.clone();
        return Ok(crd);
    }
    serde_json::to_value(object).and_then(serde_json::from_value)
}

impl ApiServer {
    /// Custom-resource defaulting and pruning, on the object's content: `apiVersion`, `kind`
    /// and `metadata` live outside `data`, so they are never pruned (`schema::prune` itself
    /// honours `x-kubernetes-preserve-unknown-fields`).
    pub(crate) fn default_and_prune(&self, t: &Target, object: &mut DynamicObject) {
        let Some(schema) = t.ty.custom_schema() else { return };
        schema::apply_defaults(schema, &mut object.data);
        schema::prune(schema, &mut object.data);
    }

    /// Type-specific validation: structural schemas and their validation rules
    /// ([`crate::cel`], with the stored object `old` on an update) for custom resources, and the
    /// CRD rules for CustomResourceDefinitions.
    pub(crate) fn validate_custom(
        &self,
        t: &Target,
        old: Option<&DynamicObject>,
        object: &DynamicObject,
        subresource: Option<&str>,
    ) -> Vec<StatusCause> {
        if let Some(schema) = t.ty.custom_schema() {
            let status_schema = schema.properties.as_ref().and_then(|p| p.get("status"));
            let mut causes = match (subresource, status_schema) {
                // `ValidateStatusUpdate`: a status write is checked against the status schema
                // alone, when it has a status: kube-openapi's paths (in the messages) start
                // below `status`, the causes' fields under it.
                (Some("status"), Some(status_schema)) => match object.data.get("status") {
                    Some(status) => schema::validate_node(status_schema, status)
                        .into_iter()
                        .map(|mut cause| {
                            cause.field = match cause.field.as_str() {
                                "" | "<nil>" => "status".to_owned(),
                                field => format!("status.{field}"),
                            };
                            cause
                        })
                        .collect(),
                    None => Vec::new(),
                },
                _ => schema::validate(schema, &object.data),
            };
            causes.extend(schema::validate_list_types(schema, &object.data));
            if crate::cel::has_rules(schema) {
                // customResourceStrategy.Validate: a wrong type, an unsupported value, a missing
                // required field, a string past `maxLength` or a list or map past `maxItems` /
                // `maxProperties` blocks the rules (`hasBlockingErr`), with one more cause saying so.
                let blocking = causes.iter().any(|c| {
                    matches!(
                        c.reason.as_str(),
                        "FieldValueTypeInvalid"
                            | "FieldValueNotSupported"
                            | "FieldValueRequired"
                            | "FieldValueTooLong"
                            | "FieldValueTooMany"
                    )
                });
                if blocking {
                    causes.push(crate::cel::not_checked());
                } else {
                    let json = |o: &DynamicObject| serde_json::to_value(o).unwrap_or_default();
                    causes.extend(crate::cel::validate(schema, &json(object), old.map(json).as_ref()));
                }
            }
            return causes;
        }
        if is_crd_type(t) {
            return match as_crd(object) {
                Ok(crd) => crd::validate_crd(&crd),
                Err(e) => vec![errors::cause("FieldValueInvalid", "spec", format!("Invalid value: {e}"))],
            };
        }
        Vec::new()
    }

    /// Side effects of a committed create, update or deletion start: a CRD's versions become
    /// served (and it gets its status and cleanup finalizer); a CRD whose deletion started
    /// deletes its objects.
    pub(crate) fn after_commit(&mut self, t: &Target, stored: &Arc<DynamicObject>, ctx: &mut Context<'_>) {
        if !is_crd_type(t) {
            return;
        }
        if stored.metadata.deletion_timestamp.is_some() {
            self.clean_up_crd(t, stored, ctx);
            return;
        }
        let Ok(mut crd) = as_crd(stored) else { return };
        self.unserve(&crd.spec.group, &crd.spec.names.plural);
        // The schemas go to the types; what follows reads the names, versions and status.
        for ty in crd::take_resource_types(&mut crd) {
            self.types.insert(ty);
        }
        let established = established_status(&crd, stored, ctx);
        let has_finalizer = stored.metadata.finalizers.iter().flatten().any(|f| f == CRD_CLEANUP_FINALIZER);
        if status_of(stored).as_ref() != Some(&established) || !has_finalizer {
            let mut new = DynamicObject::clone(stored);
            set_status(&mut new, Some(established));
            record_controller_status_write(t, stored, &mut new, ctx);
            if !has_finalizer {
                new.metadata.finalizers.get_or_insert_with(Vec::new).push(CRD_CLEANUP_FINALIZER.to_owned());
            }
            let name = stored.metadata.name.clone().unwrap_or_default();
            self.commit(StoredEventType::Modified, t, &name, new);
        }
    }

    /// A terminating CRD: mark it Terminating, delete every custom resource through the normal
    /// deletion (so their finalizers hold them), and finish once none is left.
    fn clean_up_crd(&mut self, t: &Target, stored: &Arc<DynamicObject>, ctx: &mut Context<'_>) {
        let Ok(crd) = as_crd(stored) else { return };
        let (group, plural) = (crd.spec.group.clone(), crd.spec.names.plural.clone());
        let name = stored.metadata.name.clone().unwrap_or_default();
        let mut new = DynamicObject::clone(stored);
        mark_terminating(&mut new, ctx);
        if new.data != stored.data {
            record_controller_status_write(t, stored, &mut new, ctx);
            self.commit(StoredEventType::Modified, t, &name, new);
        }
        let Some(cr_type) = self.served_custom_type(&group, &plural) else {
            self.finish_crd_cleanup(&group, &plural, ctx);
            return;
        };
        let resource = cr_type.storage_key();
        let live: Vec<ObjectKey> = self
            .store
            .current()
            .iter_resource(&resource, None)
            .filter(|(_, o)| o.metadata.deletion_timestamp.is_none())
            .take(CRD_CLEANUP_ITEMS_MAX)
            .map(|(k, _)| k.clone())
            .collect();
        for key in live {
            let target = Target {
                ty: cr_type.clone(),
                resource: resource.clone(),
                namespace: key.namespace,
                user: None,
                field_validation: Default::default(),
            };
            // A failure (say, a validating hook refusing) leaves the object, as the real
            // finalizer controller would retry later; the CRD then stays terminating.
            let _ = self.delete(&target, &key.name, &DeleteParams::default(), ctx);
        }
        self.finish_crd_cleanup(&group, &plural, ctx);
    }

    /// Once a terminating CRD has no objects left, drop its cleanup finalizer (removing it
    /// unless other finalizers remain).
    fn finish_crd_cleanup(&mut self, group: &str, plural: &str, ctx: &mut Context<'_>) {
        let crd_key = ObjectKey {
            resource: Arc::from(format!("{APIEXTENSIONS_GROUP}/customresourcedefinitions")),
            namespace: Arc::from(""),
            name: Arc::from(format!("{plural}.{group}")),
        };
        let Some(crd) = self.store.current().get(&crd_key).cloned() else { return };
        if crd.metadata.deletion_timestamp.is_none() {
            return;
        }
        let resource = format!("{group}/{plural}");
        if self.store.current().iter_resource(&resource, None).next().is_some() {
            return;
        }
        let mut new = DynamicObject::clone(&crd);
        if let Some(f) = new.metadata.finalizers.as_mut() {
            f.retain(|f| f != CRD_CLEANUP_FINALIZER);
        }
        if new.metadata.finalizers == crd.metadata.finalizers {
            return;
        }
        let Some(crd_type) = self.types.get(APIEXTENSIONS_GROUP, "v1", "customresourcedefinitions").cloned()
        else {
            return;
        };
        let t = Target {
            resource: crd_key.resource.clone(),
            ty: crd_type,
            namespace: Arc::from(""),
            user: None,
            field_validation: Default::default(),
        };
        if should_delete_during_update(&new) {
            self.delete_during_update(&t, &crd_key.name, &crd, new, ctx);
        } else {
            self.commit(StoredEventType::Modified, &t, &crd_key.name, new);
        }
    }

    /// 405 for a create of a custom resource whose CRD is terminating, as the real server.
    pub(crate) fn check_crd_accepts_creates(&self, t: &Target) -> Result<(), Status> {
        if !t.ty.custom {
            return Ok(());
        }
        let crd_key = ObjectKey {
            resource: Arc::from(format!("{APIEXTENSIONS_GROUP}/customresourcedefinitions")),
            namespace: Arc::from(""),
            name: Arc::from(format!("{}.{}", t.ty.api.plural, t.ty.api.group)),
        };
        match self.store.current().get(&crd_key) {
            Some(crd) if crd.metadata.deletion_timestamp.is_some() => {
                Err(errors::method_not_allowed(&format!(
                    "create is not supported on resources of kind \"{}\"",
                    errors::group_resource(&t.ty.api.group, &t.ty.api.plural)
                )))
            }
            _ => Ok(()),
        }
    }

    /// Side effects of a removal: a removed CRD stops being served (any object it still has is
    /// removed with it); the last custom resource of a terminating CRD lets the CRD go.
    pub(crate) fn after_delete(&mut self, t: &Target, stored: &Arc<DynamicObject>, ctx: &mut Context<'_>) {
        if t.ty.custom {
            let (group, plural) = (t.ty.api.group.clone(), t.ty.api.plural.clone());
            self.finish_crd_cleanup(&group, &plural, ctx);
            return;
        }
        if !is_crd_type(t) {
            return;
        }
        let Ok(crd) = as_crd(stored) else { return };
        let Some(ty) = self.unserve(&crd.spec.group, &crd.spec.names.plural) else { return };
        let resource = ty.storage_key();
        let keys: Vec<ObjectKey> = self
            .store
            .current()
            .iter_resource(&resource, None)
            .take(CRD_CLEANUP_ITEMS_MAX)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            let Some(object) = self.store.current().get(&key).cloned() else { continue };
            let mut last = DynamicObject::clone(&object);
            last.metadata.resource_version = Some(self.store.next_revision().to_string());
            self.store.commit(StoredEventType::Deleted, key, Arc::new(last), self.clock);
        }
    }

    /// Any served version of a custom resource type.
    fn served_custom_type(&self, group: &str, plural: &str) -> Option<Arc<crate::resources::ResourceType>> {
        self.types.iter().find(|ty| ty.custom && ty.api.group == group && ty.api.plural == plural).cloned()
    }

    /// Stop serving every version of group/plural; returns one of the removed types.
    fn unserve(&mut self, group: &str, plural: &str) -> Option<Arc<crate::resources::ResourceType>> {
        let versions: Vec<String> = self
            .types
            .iter()
            .filter(|ty| ty.custom && ty.api.group == group && ty.api.plural == plural)
            .map(|ty| ty.api.version.clone())
            .collect();
        let mut removed = None;
        for v in versions {
            removed = self.types.remove(group, &v, plural).or(removed);
        }
        removed
    }
}

/// The field manager of the apiextensions-apiserver's own controllers (naming, establishing,
/// finalizing), which write a CRD's status through the loopback client. The manager is the
/// client's User-Agent up to its first `/`: the recorded kube-apiserver's loopback client sent
/// Go's default, `Go-http-client/1.1` (one built and run as `kube-apiserver` sends its binary
/// name instead).
const CRD_CONTROLLERS_MANAGER: &str = "Go-http-client";

/// Record a status write of the CRD controllers in managedFields, as their UpdateStatus calls
/// are recorded (an `Update` entry for subresource `status`). The stored versions are the
/// registry's, set when the CRD was created, so the controllers do not own them.
fn record_controller_status_write(
    t: &Target,
    stored: &DynamicObject,
    new: &mut DynamicObject,
    ctx: &Context<'_>,
) {
    // An object without managedFields records none (skip-non-applied): nothing to convert.
    if stored.metadata.managed_fields.as_ref().is_none_or(|m| m.is_empty()) {
        return;
    }
    let Ok(mut old) = serde_json::to_value(stored) else { return };
    if let (Some(versions), Some(old_map)) = (new.data.pointer("/status/storedVersions"), old.as_object_mut())
    {
        let status = old_map.entry("status").or_insert_with(|| serde_json::json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("storedVersions".to_owned(), versions.clone());
        }
    }
    let manager = crate::apply::Manager {
        name: CRD_CONTROLLERS_MANAGER,
        api_version: &t.ty.api.api_version,
        subresource: Some("status"),
        now: ctx.now,
    };
    crate::write::record_update(t, Some(&old), new, &manager);
}

/// The status a CRD has once established: names accepted, Established, stored versions.
fn established_status(
    crd: &CustomResourceDefinition,
    stored: &DynamicObject,
    ctx: &Context<'_>,
) -> serde_json::Value {
    // Keep the transition times of conditions that are already true, so that an update of an
    // established CRD does not look like a new transition.
    let since = |kind: &str| {
        stored
            .data
            .pointer("/status/conditions")
            .and_then(|c| c.as_array())
            .and_then(|c| c.iter().find(|c| c["type"] == kind && c["status"] == "True"))
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| serde_json::to_value(metadata::timestamp(ctx.now)).unwrap_or_default())
    };
    let storage: Vec<&str> =
        crd.spec.versions.iter().filter(|v| v.storage).map(|v| v.name.as_str()).collect();
    let mut stored_versions: Vec<String> =
        crd.status.as_ref().and_then(|s| s.stored_versions.clone()).unwrap_or_default();
    for v in storage {
        if !stored_versions.iter().any(|s| s == v) {
            stored_versions.push(v.to_owned());
        }
    }
    serde_json::json!({
        "acceptedNames": crd.spec.names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": since("NamesAccepted"),
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": since("Established"),
            },
        ],
        "storedVersions": stored_versions,
    })
}

/// The CRD cleanup controller's Terminating condition while the objects go.
fn mark_terminating(crd: &mut DynamicObject, ctx: &Context<'_>) {
    set_terminating_condition(
        crd,
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        ctx.now,
    );
}

/// What the CRD registry's Delete writes: the Terminating condition (deletion pending) and the
/// cleanup finalizer, in the same update as the deletionTimestamp.
pub(crate) fn mark_deletion_pending(crd: &mut DynamicObject, now: jiff::Timestamp) {
    set_terminating_condition(
        crd,
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
    let finalizers = crd.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
        finalizers.push(CRD_CLEANUP_FINALIZER.to_owned());
    }
}

/// Set the Terminating condition to True with `reason` and `message`, as apiextensions'
/// SetCRDCondition does: an existing True condition keeps its lastTransitionTime.
fn set_terminating_condition(crd: &mut DynamicObject, reason: &str, message: &str, now: jiff::Timestamp) {
    let Some(map) = crd.data.as_object_mut() else { return };
    let status = map.entry("status").or_insert_with(|| serde_json::json!({}));
    let Some(status) = status.as_object_mut() else { return };
    let conditions = status.entry("conditions").or_insert_with(|| serde_json::json!([]));
    let Some(list) = conditions.as_array_mut() else { return };
    if let Some(existing) = list.iter_mut().find(|c| c["type"] == "Terminating") {
        existing["reason"] = serde_json::json!(reason);
        existing["message"] = serde_json::json!(message);
        return;
    }
    list.push(serde_json::json!({
        "type": "Terminating",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": serde_json::to_value(metadata::timestamp(now)).unwrap_or_default(),
    }));
}
