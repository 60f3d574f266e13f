//! Serving custom resources: a CustomResourceDefinition's served versions become resource
//! types when it is created (its status gets the NamesAccepted and Established conditions at
//! once, where the real server's controllers take a moment), and stop being served when it is
//! deleted, which also deletes their objects. Custom resources are defaulted, pruned and
//! validated against their version's structural schema.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{DynamicObject, response::StatusCause};

use crate::{
    context::Context,
    crd, errors, metadata, schema,
    server::{ApiServer, Target},
    store::{ObjectKey, StoredEventType},
    write::{set_status, status_of},
};

/// The group of CustomResourceDefinitions.
const APIEXTENSIONS_GROUP: &str = "apiextensions.k8s.io";
/// How many custom resources deleting one CRD removes at most (one revision each).
const CRD_CLEANUP_ITEMS_MAX: usize = 1_000_000;

/// Whether `t` is the built-in CustomResourceDefinition type.
fn is_crd_type(t: &Target) -> bool {
    !t.ty.custom && t.ty.api.group == APIEXTENSIONS_GROUP && t.ty.api.kind == "CustomResourceDefinition"
}

/// Decode a stored object as a CRD.
fn as_crd(object: &DynamicObject) -> Result<CustomResourceDefinition, serde_json::Error> {
    serde_json::to_value(object).and_then(serde_json::from_value)
}

impl ApiServer {
    /// Custom-resource defaulting and pruning, on the object's content: `apiVersion`, `kind`
    /// and `metadata` live outside `data`, so they are never pruned (`schema::prune` itself
    /// honours `x-kubernetes-preserve-unknown-fields`).
    pub(crate) fn default_and_prune(&self, t: &Target, object: &mut DynamicObject) {
        let Some(schema) = t.ty.schema.as_deref().filter(|_| t.ty.custom) else { return };
        schema::apply_defaults(schema, &mut object.data);
        schema::prune(schema, &mut object.data);
    }

    /// Type-specific validation: structural schemas for custom resources, and the CRD rules
    /// for CustomResourceDefinitions.
    pub(crate) fn validate_custom(&self, t: &Target, object: &DynamicObject) -> Vec<StatusCause> {
        if let Some(schema) = t.ty.schema.as_deref().filter(|_| t.ty.custom) {
            return schema::validate(schema, &object.data);
        }
        if is_crd_type(t) {
            return match as_crd(object) {
                Ok(crd) => crd::validate_crd(&crd),
                Err(e) => vec![errors::cause("FieldValueInvalid", "spec", format!("Invalid value: {e}"))],
            };
        }
        Vec::new()
    }

    /// Side effects of a committed create or update: a CRD's versions become served.
    pub(crate) fn after_commit(&mut self, t: &Target, stored: &Arc<DynamicObject>, ctx: &mut Context<'_>) {
        if !is_crd_type(t) || stored.metadata.deletion_timestamp.is_some() {
            return;
        }
        let Ok(crd) = as_crd(stored) else { return };
        self.unserve(&crd.spec.group, &crd.spec.names.plural);
        for ty in crd::resource_types(&crd) {
            self.types.insert(ty);
        }
        let established = established_status(&crd, stored, ctx);
        if status_of(stored).as_ref() != Some(&established) {
            let mut new = DynamicObject::clone(stored);
            set_status(&mut new, Some(established));
            let name = stored.metadata.name.clone().unwrap_or_default();
            self.commit(StoredEventType::Modified, t, &name, new);
        }
    }

    /// Side effects of a removal: a deleted CRD stops being served and its objects are deleted.
    pub(crate) fn after_delete(&mut self, t: &Target, stored: &Arc<DynamicObject>, ctx: &mut Context<'_>) {
        let _ = ctx;
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
            self.store.commit(StoredEventType::Deleted, key, Arc::new(last));
        }
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
