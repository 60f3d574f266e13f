//! The `/scale` subresource: an `autoscaling/v1` Scale view of an object's replica count.

use std::sync::Arc;

use kube_core::{DynamicObject, Status, TypeMeta, params::Patch};

use crate::{
    context::Context,
    errors,
    request::Response,
    resources::ScalePaths,
    server::{ApiServer, Target},
};

/// A `.spec.replicas` path as a JSON pointer (`/spec/replicas`).
fn pointer(path: &str) -> String {
    path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |mut p, s| {
        p.push('/');
        p.push_str(s);
        p
    })
}

/// A LabelSelector object in its string form, requirements sorted by key as apimachinery
/// prints them; a string is taken as is.
fn selector_string(value: &serde_json::Value) -> Option<String> {
    if let Some(s) = value.as_str() {
        return Some(s.to_owned());
    }
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(labels) = value.get("matchLabels").and_then(|m| m.as_object()) {
        for (k, v) in labels {
            parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    if let Some(exprs) = value.get("matchExpressions").and_then(|m| m.as_array()) {
        for e in exprs {
            let key = e.get("key").and_then(|k| k.as_str()).unwrap_or_default();
            let mut values: Vec<&str> = e
                .get("values")
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            values.sort_unstable();
            let text = match e.get("operator").and_then(|o| o.as_str()) {
                Some("In") => format!("{key} in ({})", values.join(",")),
                Some("NotIn") => format!("{key} notin ({})", values.join(",")),
                Some("Exists") => key.to_owned(),
                Some("DoesNotExist") => format!("!{key}"),
                _ => continue,
            };
            parts.push((key.to_owned(), text));
        }
    }
    parts.sort();
    Some(parts.into_iter().map(|(_, p)| p).collect::<Vec<_>>().join(","))
}

impl ApiServer {
    /// The Scale view of `object`.
    pub(crate) fn scale_view(&self, t: &Target, object: &DynamicObject) -> Result<DynamicObject, Status> {
        let paths = t.ty.scale.as_ref().ok_or_else(crate::server::resource_not_found)?;
        Ok(scale_of(paths, object))
    }

    /// PUT `/scale`: set the replica count from a Scale.
    pub(crate) fn update_scale(
        &mut self,
        t: &Target,
        name: &str,
        scale: DynamicObject,
        params: &kube_core::params::PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let old = self.current_object(t, name)?;
        self.apply_scale(t, name, &old, scale, params.dry_run, params.field_manager.as_deref(), ctx)
    }

    /// PATCH `/scale`: the patch applies to the Scale view.
    pub(crate) fn patch_scale(
        &mut self,
        t: &Target,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &kube_core::params::PatchParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let old = self.current_object(t, name)?;
        let view = self.scale_view(t, &old)?;
        let scale_type = crate::resources::ResourceType { custom: t.ty.custom, ..(*t.ty).clone() };
        let patched = crate::patch::apply_to_object(&scale_type, &view, patch)?;
        self.apply_scale(t, name, &old, patched, params.dry_run, params.field_manager.as_deref(), ctx)
    }

    /// Write the Scale's replicas into the object; managedFields record the write as the
    /// client's, on the `scale` subresource.
    #[allow(clippy::too_many_arguments)] // one request's parts, all needed
    fn apply_scale(
        &mut self,
        t: &Target,
        name: &str,
        old: &Arc<DynamicObject>,
        scale: DynamicObject,
        dry_run: bool,
        field_manager: Option<&str>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let paths = t.ty.scale.clone().ok_or_else(crate::server::resource_not_found)?;
        let rv = scale.metadata.resource_version.as_deref().filter(|rv| !rv.is_empty());
        if rv.is_some_and(|rv| Some(rv) != old.metadata.resource_version.as_deref()) {
            return Err(errors::conflict(&t.ty.api.group, &t.ty.api.plural, name));
        }
        let replicas = scale.data.pointer("/spec/replicas").and_then(|r| r.as_i64()).unwrap_or(0);
        if replicas < 0 {
            return Err(errors::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![errors::cause(
                    "FieldValueInvalid",
                    "spec.replicas",
                    format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                )],
            ));
        }
        let mut new = DynamicObject::clone(old);
        set_pointer(&mut new.data, &pointer(&paths.spec_replicas), serde_json::json!(replicas));
        let opts = crate::write::WriteOpts { dry_run, via_scale: true, field_manager, ..Default::default() };
        let response = self.write_update(t, old, new, None, opts, ctx)?;
        let object = response.object().cloned().unwrap_or_else(|| old.clone());
        Ok(Response::Object(Arc::new(scale_of(&paths, &object))))
    }
}

/// Build the Scale of `object`.
fn scale_of(paths: &ScalePaths, object: &DynamicObject) -> DynamicObject {
    let spec_replicas =
        object.data.pointer(&pointer(&paths.spec_replicas)).and_then(|r| r.as_i64()).unwrap_or(0);
    let status_replicas =
        object.data.pointer(&pointer(&paths.status_replicas)).and_then(|r| r.as_i64()).unwrap_or(0);
    let selector = paths
        .label_selector
        .as_deref()
        .and_then(|p| object.data.pointer(&pointer(p)))
        .and_then(selector_string);
    let mut status = serde_json::json!({ "replicas": status_replicas });
    if let Some(sel) = selector {
        status["selector"] = serde_json::json!(sel);
    }
    let m = &object.metadata;
    DynamicObject {
        types: Some(TypeMeta { api_version: "autoscaling/v1".to_owned(), kind: "Scale".to_owned() }),
        metadata: kube_core::ObjectMeta {
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            creation_timestamp: m.creation_timestamp.clone(),
            ..Default::default()
        },
        data: serde_json::json!({ "spec": { "replicas": spec_replicas }, "status": status }),
    }
}

/// Set the value at a JSON pointer, creating objects on the way.
fn set_pointer(root: &mut serde_json::Value, pointer: &str, value: serde_json::Value) {
    let mut at = root;
    let parts: Vec<&str> = pointer.split('/').skip(1).collect();
    let Some((last, path)) = parts.split_last() else { return };
    for part in path {
        if !at.is_object() {
            *at = serde_json::json!({});
        }
        at = at
            .as_object_mut()
            .expect("just made an object")
            .entry(*part)
            .or_insert_with(|| serde_json::json!({}));
    }
    if !at.is_object() {
        *at = serde_json::json!({});
    }
    at.as_object_mut().expect("just made an object").insert((*last).to_owned(), value);
}
