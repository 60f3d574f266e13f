//! The server-side apply verb: a PATCH with `application/apply-patch+yaml`, computed by
//! [`crate::apply::apply`] and then written through the ordinary pipeline (create when the
//! object does not exist yet).

use kube_core::{DynamicObject, Status, params::PatchParams};

use crate::{
    apply::{self, Manager},
    context::Context,
    errors, metadata,
    request::{Response, Subresource},
    server::{ApiServer, Target},
    write::WriteOpts,
};

impl ApiServer {
    /// PATCH with a server-side apply body.
    pub(crate) fn apply_patch(
        &mut self,
        t: &Target,
        name: &str,
        body: &serde_json::Value,
        params: &PatchParams,
        subresource: Option<Subresource>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let Some(manager_name) = params.field_manager.as_deref().filter(|m| !m.is_empty()) else {
            return Err(errors::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![metadata::required("fieldManager", "is required for apply patch")],
            ));
        };
        let manager = Manager {
            name: manager_name,
            api_version: &t.ty.api.api_version,
            subresource: (subresource == Some(Subresource::Status)).then_some("status"),
            now: ctx.now,
        };
        crate::decode::check_apply_body(t, name, body)?;
        let live = self.store.current().get(&t.key(name)).cloned();
        if live.is_none() && subresource.is_some() {
            return Err(t.not_found(name));
        }
        let live_value = live
            .as_deref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| errors::internal_error(&format!("encoding the stored object: {e}")))?;
        let merged = apply::apply_with_schema(
            live_value.as_ref(),
            body,
            &t.ty.api,
            t.ty.custom_schema(),
            &manager,
            params.force,
            t.ty.status_subresource,
        )?;
        let object: DynamicObject = crate::patch::object_from_value(merged)
            .map_err(|e| errors::bad_request(&format!("the applied object is not valid: {e}")))?;
        let opts = WriteOpts::patch(params, true);
        match live {
            Some(old) => self.write_patched(t, name, &old, object, subresource, opts, ctx),
            None => self.create_applied(t, name, object, opts, ctx),
        }
    }

    /// An apply to an absent object creates it, named by the URL.
    fn create_applied(
        &mut self,
        t: &Target,
        name: &str,
        mut object: DynamicObject,
        opts: WriteOpts<'_>,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        if let Some(body_name) = object.metadata.name.as_deref().filter(|n| !n.is_empty() && *n != name) {
            return Err(errors::bad_request(&format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        object.metadata.name = Some(name.to_owned());
        object.metadata.generate_name = None;
        self.create_with(t, object, opts, ctx)
    }
}
