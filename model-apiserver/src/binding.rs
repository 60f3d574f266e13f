//! The `binding` subresource of Pods (`POST pods/{name}/binding`), as kube-apiserver's
//! `BindingREST.Create` (pkg/registry/core/pod/storage/storage.go): a `v1` Binding assigns its pod
//! to the node it names, as kube-scheduler and custom schedulers bind pods.
//!
//! In order:
//! 1. the body decodes as a Binding (kind and apiVersion may be left out; unknown fields by
//!    `fieldValidation`), its namespace is the URL's and its name the URL's pod (400 otherwise:
//!    `name in URL does not match name in Binding object`); mutating admission sees it before,
//!    validating admission after, as `pods/binding` `create`;
//! 2. `ValidatePodBinding`: `target.kind` is empty or `Node`, `target.name` is set. Upstream
//!    returns these as a plain error, not an API status, so they are a 500 with no reason
//!    (`target.name: Required value`), as the real server answers;
//! 3. the pod must exist (404), and the Binding's `metadata.uid` and `resourceVersion`, when set,
//!    are preconditions on it (409, in the storage's words);
//! 4. a pod being deleted, already assigned to a node, or with `schedulingGates` left is a 409
//!    `Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n"`;
//! 5. the pod's storage is written directly, past the pod strategy and its validation (which
//!    forbid changing `spec.nodeName` by an update): `spec.nodeName`, the Binding's annotations
//!    merged over the pod's, and the `PodScheduled` condition True (`UpdatePodCondition`: its
//!    transition time kept if it was already True). Its managedFields stay as they were: the
//!    field manager tracks the Binding, not the pod.
//!
//! The answer is a `Success` Status with code 201 ([`Response::Completed`], with the pod as bound);
//! a dry run checks everything and stores nothing. Not modelled: the `PodTopologyLabelsAdmission`
//! copy of the node's topology labels (alpha) and clearing `status.nominatedNodeName` (beta in
//! newer releases than the conformance corpus's).

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use kube_core::{DynamicObject, Status, params::PostParams};
use serde_json::{Value, json};

use crate::context::Context;
use crate::errors;
use crate::eviction::SubresourceBody;
use crate::metadata;
use crate::request::Response;
use crate::resources::ResourceType;
use crate::server::{ApiServer, Target};
use crate::store::StoredEventType;
use crate::strategy;

/// Whether `ty` serves `/binding`: the built-in Pod.
pub(crate) fn serves(ty: &ResourceType) -> bool {
    crate::eviction::serves(ty)
}

/// A Binding: `v1` only.
const BINDING_BODY: SubresourceBody = SubresourceBody {
    subresource: "binding",
    kind: "Binding",
    api_versions: &["v1"],
    // `BindingREST.Create` prints the object it got with `%#v`.
    other: |kind| format!("&core.{kind}{{...}}"),
    structs: &["target"],
};

/// The group resource binding conflicts name (`api.Resource("pods/binding")`).
const BINDING_RESOURCE: &str = "pods/binding";

impl ApiServer {
    /// `BindingREST.Create` (see the module).
    pub(crate) fn bind(
        &mut self,
        t: &Target,
        name: &str,
        body: DynamicObject,
        params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let mut body = self.begin_subresource_create::<core::Binding>(t, body, params, &BINDING_BODY, ctx)?;
        if body.metadata.name.as_deref() != Some(name) {
            return Err(errors::bad_request("name in URL does not match name in Binding object"));
        }
        validate_binding(&body.data)?;
        self.validate_subresource_create(t, &mut body, BINDING_BODY.subresource)?;
        let pod = self.current_object(t, name)?;
        check_preconditions(t, name, &pod, &body)?;
        let refusal = |why: String| errors::conflict_with("", BINDING_RESOURCE, name, &why);
        if pod.metadata.deletion_timestamp.is_some() {
            return Err(refusal(format!("pod {name} is being deleted, cannot be assigned to a host")));
        }
        let spec = pod.data.get("spec");
        let assigned = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).unwrap_or_default();
        if !assigned.is_empty() {
            return Err(refusal(format!("pod {name} is already assigned to node {}", Value::from(assigned))));
        }
        let gates = spec.and_then(|s| s.get("schedulingGates")).and_then(Value::as_array);
        if gates.is_some_and(|g| !g.is_empty()) {
            return Err(refusal(format!("pod {name} has non-empty .spec.schedulingGates")));
        }
        let node = body.data.pointer("/target/name").and_then(Value::as_str).unwrap_or_default();
        let mut bound = DynamicObject::clone(&pod);
        match bound.data.get_mut("spec").and_then(Value::as_object_mut) {
            Some(spec) => {
                spec.insert("nodeName".to_owned(), json!(node));
            }
            None => bound.data["spec"] = json!({ "nodeName": node }),
        }
        if let Some(annotations) = body.metadata.annotations.as_ref().filter(|a| !a.is_empty()) {
            let merged = bound.metadata.annotations.get_or_insert_with(Default::default);
            merged.extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        update_pod_condition(&mut bound, json!({ "type": "PodScheduled", "status": "True" }), ctx.now);
        let answer = |object| Response::Completed { status: Status::success().with_code(201), object };
        if params.dry_run {
            return Ok(answer(Arc::new(bound)));
        }
        let stored = self.commit(StoredEventType::Modified, t, name, bound);
        Ok(answer(t.present(&stored)))
    }
}

/// `ValidatePodBinding`, as the plain error upstream returns (a 500 without a reason).
fn validate_binding(body: &Value) -> Result<(), Status> {
    let target =
        |key: &str| body.pointer(&format!("/target/{key}")).and_then(Value::as_str).unwrap_or_default();
    let mut errors = Vec::new();
    let kind = target("kind");
    if !kind.is_empty() && kind != "Node" {
        errors.push(format!(
            "target.kind: Unsupported value: {}: supported values: \"Node\", \"<empty>\"",
            Value::from(kind)
        ));
    }
    if target("name").is_empty() {
        errors.push("target.name: Required value".to_owned());
    }
    // A Go aggregate error prints one error as itself, more as `[a, b]`.
    let message = match errors.len() {
        0 => return Ok(()),
        1 => errors.remove(0),
        _ => format!("[{}]", errors.join(", ")),
    };
    Err(Status::failure(&message, "").with_code(500))
}

/// The Binding's uid and resourceVersion as the storage's preconditions on the pod
/// (`PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate`), refused in the storage's words.
fn check_preconditions(
    t: &Target,
    name: &str,
    pod: &DynamicObject,
    body: &DynamicObject,
) -> Result<(), Status> {
    let failed = |what: &str, wanted: &str, stored: &str| {
        errors::conflict_with(
            "",
            "pods",
            name,
            &format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: \
                 Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {stored}",
                t.etcd_key(name)
            ),
        )
    };
    let stored_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    if let Some(uid) = body.metadata.uid.as_deref().filter(|u| !u.is_empty())
        && uid != stored_uid
    {
        return Err(failed("UID", uid, stored_uid));
    }
    let stored_rv = pod.metadata.resource_version.as_deref().unwrap_or_default();
    if let Some(rv) = body.metadata.resource_version.as_deref().filter(|rv| !rv.is_empty())
        && rv != stored_rv
    {
        return Err(failed("ResourceVersion", rv, stored_rv));
    }
    Ok(())
}

/// `UpdatePodCondition`: set `condition` (a JSON PodCondition with its type and status) among the
/// pod's status conditions, its `lastProbeTime` null and its `lastTransitionTime` now, or the old
/// condition's when the status did not change.
pub(crate) fn update_pod_condition(pod: &mut DynamicObject, mut condition: Value, now: jiff::Timestamp) {
    let now = serde_json::to_value(metadata::timestamp(now)).unwrap_or(Value::Null);
    condition["lastProbeTime"] = Value::Null;
    condition["lastTransitionTime"] = now;
    let ty = condition.get("type").cloned().unwrap_or(Value::Null);
    let mut status = strategy::status_of(pod).filter(Value::is_object).unwrap_or_else(|| json!({}));
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    if let Some(conditions) = status["conditions"].as_array_mut() {
        match conditions.iter_mut().find(|c| c.get("type") == Some(&ty)) {
            Some(existing) => {
                if existing.get("status") == condition.get("status") {
                    condition["lastTransitionTime"] =
                        existing.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
                }
                *existing = condition;
            }
            None => conditions.push(condition),
        }
    }
    strategy::set_status(pod, Some(status));
}
