//! The `eviction` subresource of Pods (`POST pods/{name}/eviction`), as kube-apiserver's
//! `EvictionREST.Create` (pkg/registry/core/pod/storage/eviction.go): a `policy/v1` (or
//! `v1beta1`) `Eviction` deletes its pod if the one PodDisruptionBudget selecting it allows a
//! disruption.
//!
//! In order:
//! 1. the body decodes as an Eviction (as the create handler decodes it: kind and apiVersion,
//!    unknown fields by `fieldValidation`), names the URL's namespace and pod (400 otherwise), and
//!    its `deleteOptions` take the request's `dryRun` (a contradiction is 500); mutating admission
//!    sees it before, validating admission after, as `pods/eviction` `create`;
//! 2. a pod that has finished, is Pending or is already being deleted is deleted at once,
//!    whatever the budgets say;
//! 3. otherwise the budgets of its namespace whose selector matches its labels (a null or empty
//!    selector matches nothing): more than one is 500; a pod that is not Ready is deleted without
//!    touching the budget when the budget says `unhealthyPodEvictionPolicy: AlwaysAllow`, or when
//!    it is healthy (`currentHealthy >= desiredHealthy > 0`); else `checkAndDecrement`: a budget
//!    whose status is behind its spec (observedGeneration < generation) is 429, a negative
//!    `disruptionsAllowed` or more than [`DISRUPTED_PODS_MAX`] `disruptedPods` 403, none allowed 429
//!    with a `DisruptionBudget` cause; else the budget's status is written through `/status`
//!    (one fewer allowed, the pod in `disruptedPods` at the virtual now, the `DisruptionAllowed`
//!    condition False when none is left), as the real handler's loopback client does;
//! 4. the pod gets the `DisruptionTarget` condition (a status write of the pod's storage, no
//!    admission), then is deleted with the Eviction's delete options (graceful as any pod
//!    delete), through the delete path without admission, as the registry's store does it.
//!
//! Every write is an ordinary revision with its watch event. The answer is a `Success` Status with
//! code 201 ([`Response::Deleted`], with the pod as the delete left it), as the create handler
//! fills in a Status without a code. The handler's conflict retries never fire here: a request is
//! handled atomically, so the budget and the pod it read are still current when it writes them.

use std::sync::Arc;

use k8s_openapi::{
    api::policy::v1 as policy,
    apimachinery::pkg::apis::meta::v1::{
        DeleteOptions as ApiDeleteOptions, LabelSelector as ApiLabelSelector,
    },
};
use kube_core::{
    DynamicObject, Status, TypeMeta,
    params::{DeleteParams, PostParams, Preconditions, PropagationPolicy},
    response::StatusCause,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    context::Context,
    decode, errors, metadata,
    request::{Response, Subresource},
    resources::ResourceType,
    server::{ApiServer, Target, method_not_allowed},
    strategy,
    write::{WriteOpts, check_body_namespace, check_subresource, validate_field_manager},
};

/// How many pods a budget's `status.disruptedPods` may hold before evictions under it are
/// refused (403): evictions the disruption controller has not seen yet (`MaxDisruptedPodSize`).
pub const DISRUPTED_PODS_MAX: usize = 2000;
/// The cause type of an eviction refused by a budget (policy/v1 `DisruptionBudgetCause`).
pub const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";
/// The message of an eviction refused by a budget (429).
pub const BUDGET_VIOLATION_MESSAGE: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";
/// The message of an eviction of a pod that more than one budget selects (500).
pub const MULTIPLE_BUDGETS_MESSAGE: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
/// The admission attributes of a POST to `subresource` of `t`'s type.
fn subresource_create<'a>(t: &'a Target, subresource: &'static str) -> crate::AdmissionRequest<'a> {
    crate::AdmissionRequest {
        operation: "create",
        resource: &t.ty,
        subresource: Some(subresource),
        old: None,
        user: t.user.as_deref(),
    }
}

/// What a subresource's POST body must be (see [`ApiServer::decode_subresource_body`]).
pub(crate) struct SubresourceBody {
    /// The subresource's name (`eviction`, `binding`).
    pub(crate) subresource: &'static str,
    /// The kind (`Eviction`, `Binding`).
    pub(crate) kind: &'static str,
    /// The apiVersions it takes (`AcceptsGroupVersion`); the first when the body names none.
    pub(crate) api_versions: &'static [&'static str],
    /// How the registry's type check names another kind it got (Go's `%T` or `%#v` of it).
    pub(crate) other: fn(&str) -> String,
    /// Top-level struct fields Go decodes as zero values when they are missing.
    pub(crate) structs: &'static [&'static str],
}

/// An Eviction: `policy/v1` or `v1beta1` (`AcceptsGroupVersion`).
const EVICTION_BODY: SubresourceBody = SubresourceBody {
    subresource: "eviction",
    kind: "Eviction",
    api_versions: &["policy/v1", "policy/v1beta1"],
    other: |kind| format!("*policy.{kind}"),
    structs: &[],
};
/// The user the real handler's loopback client writes the budget as.
pub(crate) const LOOPBACK_USER: &str = "system:apiserver";
/// The field manager of that write (the loopback client's user agent is kube-apiserver's own).
pub(crate) const LOOPBACK_MANAGER: &str = "kube-apiserver";

/// Whether `ty` serves `/eviction`: the built-in Pod.
pub(crate) fn serves(ty: &ResourceType) -> bool {
    !ty.custom && ty.api.group.is_empty() && ty.api.kind == "Pod"
}

impl ApiServer {
    /// POST to a subresource: `pods/{name}/eviction`; the other subresources take no POST (405),
    /// and one the type lacks is 404.
    pub(crate) fn create_subresource(
        &mut self,
        t: &Target,
        name: &str,
        subresource: Subresource,
        object: DynamicObject,
        params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        match subresource {
            Subresource::Eviction if serves(&t.ty) => self.evict(t, name, object, params, ctx),
            Subresource::Eviction => Err(t.unserved_subresource(name)),
            Subresource::Token if crate::token::serves(&t.ty) => {
                self.token_request(t, name, object, params, ctx)
            }
            Subresource::Token => Err(t.unserved_subresource(name)),
            Subresource::Binding if crate::binding::serves(&t.ty) => self.bind(t, name, object, params, ctx),
            Subresource::Binding => Err(t.unserved_subresource(name)),
            Subresource::Status
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::EphemeralContainers
            | Subresource::Resize => {
                check_subresource(t, name, Some(subresource))?;
                Err(method_not_allowed())
            }
        }
    }

    /// `EvictionREST.Create` (see the module).
    fn evict(
        &mut self,
        t: &Target,
        name: &str,
        body: DynamicObject,
        params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let mut body =
            self.begin_subresource_create::<policy::Eviction>(t, body, params, &EVICTION_BODY, ctx)?;
        let eviction = typed_eviction(&body)?;
        if eviction.metadata.name.as_deref() != Some(name) {
            return Err(errors::bad_request("name in URL does not match name in Eviction object"));
        }
        let options = propagate_dry_run(eviction.delete_options, params.dry_run)?;
        self.validate_subresource_create(t, &mut body, EVICTION_BODY.subresource)?;
        let original = delete_params(&options);
        let pod = self.current_object(t, name)?;
        let rv_unset = resource_version_unset(&original);
        if can_ignore_budgets(&pod) {
            let mut params = original;
            if should_enforce_resource_version(&pod) && rv_unset {
                set_resource_version(&mut params, &pod);
            }
            return self.add_condition_and_delete(t, name, params, ctx).map(evicted);
        }
        let budgets = self.budgets_selecting(&pod, &t.namespace)?;
        let (budget_t, budget) = match <[_; 1]>::try_from(budgets) {
            Ok([one]) => one,
            Err(budgets) if budgets.is_empty() => {
                return self.add_condition_and_delete(t, name, original, ctx).map(evicted);
            }
            Err(_) => return Err(Status::failure(MULTIPLE_BUDGETS_MESSAGE, "").with_code(500)),
        };
        let budget_name = budget.metadata.name.clone().unwrap_or_default();
        // A pod that is not Ready counts towards no budget's health: evicting it spends nothing,
        // when the budget lets unhealthy pods go or the application is healthy without it.
        let unhealthy_goes = !is_ready(&pod)
            && (always_allows_unhealthy(&budget) || {
                let (current, desired) =
                    (int_at(&budget, "currentHealthy"), int_at(&budget, "desiredHealthy"));
                current >= desired && desired > 0
            });
        let mut params = original.clone();
        if unhealthy_goes {
            // Pinned to the pod as read: a pod that became Ready since would count.
            set_resource_version(&mut params, &pod);
        } else {
            self.check_and_decrement(&budget_t, &budget, name, original.dry_run, ctx)?;
        }
        match self.add_condition_and_delete(t, name, params, ctx) {
            Err(conflict) if conflict.code == 409 && unhealthy_goes && rv_unset => {
                Err(budget_still_processing(&budget_name))
            }
            answer => answer.map(evicted),
        }
    }

    /// The start of a POST to a subresource, as the create handler runs it: the field manager
    /// checked, the body decoded as `expected` ([`ApiServer::decode_subresource_body`]) in the
    /// URL's namespace, then mutating admission as `<resource>/<subresource>` `create`.
    pub(crate) fn begin_subresource_create<T: serde::de::DeserializeOwned + serde::Serialize>(
        &self,
        t: &Target,
        body: DynamicObject,
        params: &PostParams,
        expected: &SubresourceBody,
        ctx: &mut Context<'_>,
    ) -> Result<DynamicObject, Status> {
        validate_field_manager("CreateOptions", params.field_manager.as_deref())?;
        let mut body = self.decode_subresource_body::<T>(t, body, expected, ctx)?;
        check_body_namespace(t, &body.metadata)?;
        body.metadata.namespace = Some(t.namespace.to_string());
        let request = subresource_create(t, expected.subresource);
        for hook in &self.mutating {
            hook(&request, &mut body)?;
        }
        Ok(body)
    }

    /// Validating admission of a subresource POST's body (after the registry's own checks).
    pub(crate) fn validate_subresource_create(
        &self,
        t: &Target,
        body: &mut DynamicObject,
        subresource: &'static str,
    ) -> Result<(), Status> {
        let request = subresource_create(t, subresource);
        for hook in &self.validating {
            hook(&request, body)?;
        }
        Ok(())
    }

    /// A subresource's POST body as `T`, the kind `expected` names, as the create handler decodes
    /// it: kind and apiVersion may be left out; another registered kind of an accepted version is
    /// "not a <kind>", one of another version is that version's mismatch, an unregistered kind a
    /// decoding error; a wrong JSON type is 400; unknown fields follow `fieldValidation`. The
    /// body keeps the apiVersion it named (the first accepted one when it named none).
    pub(crate) fn decode_subresource_body<T: serde::de::DeserializeOwned + serde::Serialize>(
        &self,
        t: &Target,
        mut body: DynamicObject,
        expected: &SubresourceBody,
        ctx: &mut Context<'_>,
    ) -> Result<DynamicObject, Status> {
        let given = body.types.take().unwrap_or_default();
        let kind = if given.kind.is_empty() { expected.kind.to_owned() } else { given.kind };
        let api_version = if given.api_version.is_empty() {
            expected.api_versions[0].to_owned()
        } else {
            given.api_version
        };
        let version = api_version.rsplit_once('/').map_or(api_version.as_str(), |(_, v)| v).to_owned();
        let accepted = expected.api_versions.contains(&api_version.as_str());
        let registered = kind == expected.kind && accepted
            || self.types.by_kind(&api_version, &kind).is_some_and(|ty| !ty.custom);
        if !registered {
            let why = format!(
                "no kind {} is registered for version {} in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
                Value::String(kind.clone()),
                Value::String(api_version.clone())
            );
            return Err(decode::cannot_handle(&kind, &version, expected.kind, &why));
        }
        if !accepted {
            return Err(errors::bad_request(&format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                expected.api_versions[0]
            )));
        }
        if kind != expected.kind {
            return Err(errors::bad_request(&format!(
                "not a {} object: {}",
                expected.kind,
                (expected.other)(&kind)
            )));
        }
        body.types = Some(TypeMeta {
            api_version: expected.api_versions[0].to_owned(),
            kind: expected.kind.to_owned(),
        });
        let mut value = serde_json::to_value(&body)
            .map_err(|e| errors::internal_error(&format!("encoding the {}: {e}", expected.kind)))?;
        // Go decodes a missing struct as its zero value (validation then says what it lacks);
        // serde would refuse the typed form for it.
        for field in expected.structs {
            if value.get(*field).is_none_or(Value::is_null) {
                value[*field] = json!({});
            }
        }
        let decoded = decode::check::<T>(&value).map_err(|e| {
            decode::cannot_handle(expected.kind, &version, expected.kind, &e.go_message(&value))
        })?;
        decode::remove_paths(&mut body.data, &decoded.nulls);
        if !decoded.unknown.is_empty() {
            match t.field_validation {
                crate::FieldValidation::Strict => {
                    let why = decode::strict_error_message(&decoded.unknown);
                    return Err(decode::cannot_handle(expected.kind, &version, expected.kind, &why));
                }
                crate::FieldValidation::Warn => {
                    ctx.warnings.extend(decoded.unknown.iter().map(|p| decode::unknown_field_message(p)));
                }
                crate::FieldValidation::Ignore => {}
            }
            decode::remove_paths(&mut body.data, &decoded.unknown);
        }
        body.types = Some(TypeMeta { api_version, kind });
        Ok(body)
    }

    /// The PodDisruptionBudgets of `namespace` that select `pod`, in name order, each with its
    /// target (written as the loopback client).
    fn budgets_selecting(
        &self,
        pod: &DynamicObject,
        namespace: &Arc<str>,
    ) -> Result<Vec<(Target, Arc<DynamicObject>)>, Status> {
        let Some((ty, resource)) = self.types.get_with_storage_key("policy", "v1", "poddisruptionbudgets")
        else {
            return Ok(Vec::new());
        };
        let budget_t = Target {
            ty: ty.clone(),
            resource: resource.clone(),
            namespace: namespace.clone(),
            user: Some(Arc::from(LOOPBACK_USER)),
            field_validation: crate::FieldValidation::default(),
        };
        let no_labels = std::collections::BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&no_labels);
        let mut selecting = Vec::new();
        for (_, stored) in self.store.current().iter_resource(resource, Some(namespace)) {
            let budget = budget_t.present(stored);
            // A selector that does not compile, or a null or empty one, matches nothing.
            let Some(selector) = budget.data.pointer("/spec/selector").filter(|s| !s.is_null()) else {
                continue;
            };
            let Ok(selector) = ApiLabelSelector::deserialize(selector) else { continue };
            let Ok(selector) = crate::selector::LabelSelector::from_label_selector(&selector) else {
                continue;
            };
            if !selector.is_everything() && selector.matches(labels) {
                selecting.push((budget_t.clone(), budget));
            }
        }
        Ok(selecting)
    }

    /// `checkAndDecrement`: refuse the eviction as the budget's status says, or spend one of its
    /// disruptions and record the pod, through `/status` (nothing is written for a dry run).
    fn check_and_decrement(
        &mut self,
        budget_t: &Target,
        budget: &Arc<DynamicObject>,
        pod_name: &str,
        dry_run: bool,
        ctx: &mut Context<'_>,
    ) -> Result<(), Status> {
        let name = budget.metadata.name.clone().unwrap_or_default();
        let observed_generation = int_at(budget, "observedGeneration");
        if observed_generation < budget.metadata.generation.unwrap_or(0) {
            return Err(budget_still_processing(&name));
        }
        let forbidden = |why: &str| errors::forbidden("policy", "poddisruptionbudget", &name, why);
        let disruptions_allowed = int_at(budget, "disruptionsAllowed");
        if disruptions_allowed < 0 {
            return Err(forbidden("pdb disruptions allowed is negative"));
        }
        let disrupted = budget.data.pointer("/status/disruptedPods").and_then(Value::as_object);
        if disrupted.is_some_and(|p| p.len() > DISRUPTED_PODS_MAX) {
            return Err(forbidden(
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if disruptions_allowed == 0 {
            let why = format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int_at(budget, "desiredHealthy"),
                int_at(budget, "currentHealthy")
            );
            return Err(budget_refusal(0, why));
        }
        if dry_run {
            return Ok(());
        }
        let allowed = disruptions_allowed - 1;
        let mut new = DynamicObject::clone(budget);
        let mut written = strategy::status_of(&new).filter(Value::is_object).unwrap_or_else(|| json!({}));
        written["disruptionsAllowed"] = json!(allowed);
        if allowed == 0 {
            set_insufficient_pods(&mut written, observed_generation, ctx.now);
        }
        let now = serde_json::to_value(metadata::timestamp(ctx.now)).unwrap_or(Value::Null);
        if !written.get("disruptedPods").is_some_and(Value::is_object) {
            written["disruptedPods"] = json!({});
        }
        written["disruptedPods"][pod_name] = now;
        strategy::set_status(&mut new, Some(written));
        let params = PostParams { dry_run: false, field_manager: Some(LOOPBACK_MANAGER.to_owned()) };
        self.update(budget_t, &name, new, &params, Some(Subresource::Status), ctx).map(|_| ())
    }

    /// `addConditionAndDeletePod`: the pod's `DisruptionTarget` condition (unless a dry run),
    /// written as its storage writes (no admission, preconditions checked first), then the
    /// delete; a resourceVersion precondition follows the condition's write. The pod as the
    /// delete answered it.
    fn add_condition_and_delete(
        &mut self,
        t: &Target,
        name: &str,
        mut params: DeleteParams,
        ctx: &mut Context<'_>,
    ) -> Result<Arc<DynamicObject>, Status> {
        if !params.dry_run {
            let latest = self.current_object(t, name)?;
            crate::deletion::check_preconditions(t, name, &latest, &params)?;
            let mut new = DynamicObject::clone(&latest);
            set_disruption_target(&mut new, ctx.now);
            let opts = WriteOpts { internal: true, ..WriteOpts::default() };
            let written = self.write_update(t, &latest, new, Some(Subresource::Status), opts, ctx)?;
            if let (Some(pre), Some(written)) = (params.preconditions.as_mut(), written.object())
                && pre.resource_version.is_some()
            {
                pre.resource_version = written.metadata.resource_version.clone();
            }
        }
        let answer = self.delete_with(t, name, &params, false, ctx)?;
        answer.object().cloned().ok_or_else(|| errors::internal_error("the delete answered no pod"))
    }
}

/// A successful eviction's answer.
fn evicted(pod: Arc<DynamicObject>) -> Response {
    Response::Deleted { status: Status::success().with_code(201), object: pod }
}

/// The body as the typed Eviction (it decoded as one already).
fn typed_eviction(body: &DynamicObject) -> Result<policy::Eviction, Status> {
    let mut value = serde_json::to_value(body)
        .map_err(|e| errors::internal_error(&format!("encoding the eviction: {e}")))?;
    // Either accepted version is the same Go type; the typed form checks policy/v1's.
    value["apiVersion"] = json!("policy/v1");
    value["kind"] = json!("Eviction");
    serde_json::from_value(value).map_err(|e| errors::bad_request(&format!("decoding the eviction: {e}")))
}

/// `propagateDryRun`: the Eviction's delete options take the request's `dryRun` unless they
/// name their own; two different ones are an error that is no API status (500, reason unset).
fn propagate_dry_run(options: Option<ApiDeleteOptions>, dry_run: bool) -> Result<ApiDeleteOptions, Status> {
    let requested: Vec<String> = if dry_run { vec!["All".to_owned()] } else { Vec::new() };
    let mut options = options.unwrap_or_default();
    let own = options.dry_run.clone().unwrap_or_default();
    if own.is_empty() {
        options.dry_run = (!requested.is_empty()).then_some(requested);
    } else if !requested.is_empty() && own != requested {
        let message = format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            requested.join(" "),
            own.join(" ")
        );
        return Err(Status::failure(&message, "").with_code(500));
    }
    Ok(options)
}

/// The Eviction's delete options as the model's delete takes them. Any `dryRun` value makes the
/// store's delete a dry run; a negative grace period is 1 second, as the pod strategy makes it;
/// `orphanDependents` is the orphan policy when no policy is named (`false` the background one).
fn delete_params(options: &ApiDeleteOptions) -> DeleteParams {
    let policy = match options.propagation_policy.as_deref() {
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some("Background") => Some(PropagationPolicy::Background),
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        _ => match options.orphan_dependents {
            Some(true) => Some(PropagationPolicy::Orphan),
            Some(false) => Some(PropagationPolicy::Background),
            None => None,
        },
    };
    DeleteParams {
        dry_run: options.dry_run.as_ref().is_some_and(|d| !d.is_empty()),
        grace_period_seconds: options
            .grace_period_seconds
            .map(|g| if g < 0 { 1 } else { u32::try_from(g).unwrap_or(u32::MAX) }),
        propagation_policy: policy,
        preconditions: options
            .preconditions
            .as_ref()
            .map(|p| Preconditions { resource_version: p.resource_version.clone(), uid: p.uid.clone() }),
    }
}

fn resource_version_unset(params: &DeleteParams) -> bool {
    params.preconditions.as_ref().is_none_or(|p| p.resource_version.is_none())
}

fn set_resource_version(params: &mut DeleteParams, pod: &DynamicObject) {
    params.preconditions.get_or_insert_with(Preconditions::default).resource_version =
        pod.metadata.resource_version.clone();
}

fn phase(pod: &DynamicObject) -> &str {
    pod.data.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default()
}

/// `canIgnorePDB`: a finished or Pending pod, or one already being deleted, disrupts nothing
/// more by going.
fn can_ignore_budgets(pod: &DynamicObject) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || pod.metadata.deletion_timestamp.is_some()
}

/// `shouldEnforceResourceVersion`: a Pending pod's delete is pinned to the pod as read, lest it
/// become Ready meanwhile.
fn should_enforce_resource_version(pod: &DynamicObject) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// `IsPodReady`: the pod's Ready condition is True.
fn is_ready(pod: &DynamicObject) -> bool {
    pod.data.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|conditions| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    })
}

fn always_allows_unhealthy(budget: &DynamicObject) -> bool {
    budget.data.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str) == Some("AlwaysAllow")
}

/// An integer of a budget's status (0 when absent, as Go's zero value). The types' Rust forms
/// differ between Kubernetes versions (`i32` or `Option<i32>`), so the JSON is read.
fn int_at(budget: &DynamicObject, field: &str) -> i64 {
    budget.data.get("status").and_then(|s| s.get(field)).and_then(Value::as_i64).unwrap_or(0)
}

/// 429 TooManyRequests with a `DisruptionBudget` cause.
fn budget_refusal(retry_after_seconds: u32, why: String) -> Status {
    let mut status = errors::too_many_requests(retry_after_seconds);
    status.message = BUDGET_VIOLATION_MESSAGE.to_owned();
    if let Some(details) = status.details.as_mut() {
        details.causes.push(StatusCause {
            reason: DISRUPTION_BUDGET_CAUSE.to_owned(),
            message: why,
            field: String::new(),
        });
    }
    status
}

/// `createTooManyRequestsError`: the budget's status is not up to date yet (retry in 10 s).
fn budget_still_processing(name: &str) -> Status {
    budget_refusal(10, format!("The disruption budget {name} is still being processed by the server."))
}

/// `UpdateDisruptionAllowedCondition` once no disruption is left: the `DisruptionAllowed`
/// condition False with reason `InsufficientPods` (apimachinery's `SetStatusCondition`: the
/// transition time moves only when the status changes).
fn set_insufficient_pods(status: &mut Value, observed_generation: i64, now: jiff::Timestamp) {
    let now = serde_json::to_value(metadata::timestamp(now)).unwrap_or(Value::Null);
    let mut condition = json!({
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
        "lastTransitionTime": now,
    });
    if observed_generation != 0 {
        condition["observedGeneration"] = json!(observed_generation);
    }
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else { return };
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed")) {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) == Some("False") {
                condition["lastTransitionTime"] =
                    existing.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
}

/// `UpdatePodCondition` with the eviction's `DisruptionTarget` condition: added, or replacing
/// the one there (its transition time kept when its status was True already).
fn set_disruption_target(pod: &mut DynamicObject, now: jiff::Timestamp) {
    let condition = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    crate::binding::update_pod_condition(pod, condition, now);
}
