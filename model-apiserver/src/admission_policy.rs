//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`): the CEL admission policies a
//! cluster's administrators bind, evaluated on every create, update and delete as
//! kube-apiserver's `ValidatingAdmissionPolicy` plugin evaluates them
//! (`apiserver/pkg/admission/plugin/policy/validating`).
//!
//! - A policy applies through each ValidatingAdmissionPolicyBinding naming it
//!   (`spec.policyName`) whose `validationActions` hold `Deny`, to a request that the policy's
//!   `matchConstraints` and the binding's `matchResources` both match: `resourceRules` (API
//!   groups, versions, resources with `*`, `resource/subresource` and `*/status`, operations
//!   `CREATE`/`UPDATE`/`DELETE`, scope), `excludeResourceRules`, `namespaceSelector` (the
//!   Namespace's labels; a Namespace's own) and `objectSelector` (the object's, or the old one's).
//! - Then its `matchConditions` must all be true, and each of its `validations` must evaluate to
//!   `true`, with `object` (null on delete), `oldObject` (null on create), `request`
//!   (`operation`, `name`, `namespace`, `userInfo.username`, `kind`, `resource`, `subResource`),
//!   `namespaceObject` and `variables` (the policy's `variables`, in order) bound.
//! - The first validation that fails refuses the request as the plugin does: `<resource> "<name>"
//!   is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request:
//!   <message>`, the message being `message`, `messageExpression`'s string or `failed
//!   expression: <expression>`; its reason is the validation's `reason` (default `Invalid`, 422;
//!   `Forbidden` 403, `Unauthorized` 401, `RequestEntityTooLarge` 413), with the message as the one
//!   cause. An expression that fails to evaluate refuses with `expression '<expression>' resulted
//!   in error: <error>` unless the policy's `failurePolicy` is `Ignore`.
//!
//! Not modelled: `paramKind` and `paramRef` (a policy with a `paramKind` is skipped), the `Warn`
//! and `Audit` actions (no effect), `auditAnnotations`, the `authorizer` variable, type checking
//! and the policies' status.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context as CelContext, Value as CelValue};
use kube_core::{DynamicObject, Status};
use serde_json::{Value, json};

use crate::admission::AdmissionRequest;
use crate::errors;
use crate::selector::LabelSelector;
use crate::server::{ApiServer, Target};

const GROUP: &str = "admissionregistration.k8s.io";

impl ApiServer {
    /// Refuse the request if a bound policy denies it (see the module); `object` is the new
    /// object (`None` on delete).
    pub(crate) fn check_admission_policies(
        &self,
        t: &Target,
        request: &AdmissionRequest<'_>,
        object: Option<&DynamicObject>,
    ) -> Result<(), Status> {
        let Some(policies_type) =
            self.types().get_with_storage_key(GROUP, "v1", "validatingadmissionpolicies")
        else {
            return Ok(());
        };
        let policies: Vec<Arc<DynamicObject>> =
            self.snapshot().iter_resource(policies_type.1, None).map(|(_, o)| o.clone()).collect();
        if policies.is_empty() {
            return Ok(());
        }
        let Some((_, bindings_key)) =
            self.types().get_with_storage_key(GROUP, "v1", "validatingadmissionpolicybindings")
        else {
            return Ok(());
        };
        let bindings: Vec<Arc<DynamicObject>> =
            self.snapshot().iter_resource(bindings_key, None).map(|(_, o)| o.clone()).collect();
        let facts = Facts::new(self, t, request, object);
        for policy in &policies {
            let policy_name = policy.metadata.name.as_deref().unwrap_or_default();
            let spec = &policy.data["spec"];
            if !spec["paramKind"].is_null() || !facts.matches(&spec["matchConstraints"]) {
                continue;
            }
            for binding in &bindings {
                let binding_spec = &binding.data["spec"];
                let denies = binding_spec["validationActions"]
                    .as_array()
                    .is_some_and(|actions| actions.iter().any(|a| a == "Deny"));
                if binding_spec["policyName"] != policy_name || !denies {
                    continue;
                }
                if !binding_spec["matchResources"].is_null()
                    && !facts.matches(&binding_spec["matchResources"])
                {
                    continue;
                }
                let binding_name = binding.metadata.name.as_deref().unwrap_or_default();
                if let Some((message, reason)) = facts.evaluate(spec) {
                    let message = format!(
                        "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {message}"
                    );
                    return Err(denied(t, &facts.name, &message, &reason));
                }
            }
        }
        Ok(())
    }
}

/// 403 Forbidden's message and details, with the validation's reason and its code.
fn denied(t: &Target, name: &str, message: &str, reason: &str) -> Status {
    let mut status = errors::forbidden(&t.ty.api.group, &t.ty.api.plural, name, message);
    status.code = match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    status.reason = reason.to_owned();
    if let Some(details) = status.details.as_mut() {
        details.causes.push(errors::cause("", "", message));
    }
    status
}

/// What the policies see of one request.
struct Facts {
    operation: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    namespaced: bool,
    namespace: String,
    name: String,
    object: Value,
    old_object: Value,
    namespace_object: Value,
    user: String,
    kind: String,
}

impl Facts {
    fn new(
        server: &ApiServer,
        t: &Target,
        request: &AdmissionRequest<'_>,
        object: Option<&DynamicObject>,
    ) -> Facts {
        let json = |o: &DynamicObject| {
            let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
            v["apiVersion"] = json!(t.ty.api.api_version);
            v["kind"] = json!(t.ty.api.kind);
            v
        };
        let object_value = object.map_or(Value::Null, json);
        let old_value = request.old.map_or(Value::Null, json);
        let named = object.or(request.old);
        let name = named.and_then(|o| o.metadata.name.clone()).unwrap_or_default();
        let namespace = t.namespace.to_string();
        let namespace_object = if namespace.is_empty() {
            Value::Null
        } else {
            server
                .snapshot()
                .get(&server.namespace_key(&namespace))
                .cloned()
                .map_or(Value::Null, |o| serde_json::to_value(&*o).unwrap_or(Value::Null))
        };
        Facts {
            operation: match request.operation {
                "create" => "CREATE",
                "delete" => "DELETE",
                _ => "UPDATE",
            },
            group: t.ty.api.group.clone(),
            version: t.ty.api.version.clone(),
            resource: t.ty.api.plural.clone(),
            subresource: request.subresource.unwrap_or_default().to_owned(),
            namespaced: t.ty.namespaced,
            namespace,
            name,
            object: object_value,
            old_object: old_value,
            namespace_object,
            user: request.user.unwrap_or_default().to_owned(),
            kind: t.ty.api.kind.clone(),
        }
    }

    /// Whether `constraints` (a `MatchResources`) match the request.
    fn matches(&self, constraints: &Value) -> bool {
        let rules = constraints["resourceRules"].as_array().map(Vec::as_slice).unwrap_or_default();
        if !rules.iter().any(|r| self.rule_matches(r)) {
            return false;
        }
        let excluded = constraints["excludeResourceRules"].as_array().map(Vec::as_slice).unwrap_or_default();
        if excluded.iter().any(|r| self.rule_matches(r)) {
            return false;
        }
        let labels_of = |v: &Value| -> BTreeMap<String, String> {
            v.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                .unwrap_or_default()
        };
        if self.namespaced || self.resource == "namespaces" {
            let subject = if self.resource == "namespaces" { self.subject() } else { &self.namespace_object };
            if !selects(&constraints["namespaceSelector"], &labels_of(subject)) {
                return false;
            }
        }
        let object_selector = &constraints["objectSelector"];
        selects(object_selector, &labels_of(&self.object))
            || selects(object_selector, &labels_of(&self.old_object))
    }

    /// The object the request is about: the new one, or the old one on delete.
    fn subject(&self) -> &Value {
        if self.object.is_null() { &self.old_object } else { &self.object }
    }

    /// `NamedRuleWithOperations` against the request.
    fn rule_matches(&self, rule: &Value) -> bool {
        let has = |key: &str, value: &str| {
            rule[key].as_array().is_some_and(|l| l.iter().any(|v| v == "*" || v.as_str() == Some(value)))
        };
        if !has("apiGroups", &self.group)
            || !has("apiVersions", &self.version)
            || !has("operations", self.operation)
        {
            return false;
        }
        let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
            "Cluster" => !self.namespaced,
            "Namespaced" => self.namespaced,
            _ => true,
        };
        let resources = rule["resources"].as_array().map(Vec::as_slice).unwrap_or_default();
        let resource_ok = resources.iter().filter_map(Value::as_str).any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == self.resource)
                && (sub == self.subresource || (sub == "*" && !self.subresource.is_empty()))
        });
        let names = rule["resourceNames"].as_array().map(Vec::as_slice).unwrap_or_default();
        let name_ok = names.is_empty() || names.iter().any(|n| n.as_str() == Some(self.name.as_str()));
        scope_ok && resource_ok && name_ok
    }

    /// The first failing validation's (message, reason), or `None` if the policy admits the
    /// request.
    fn evaluate(&self, spec: &Value) -> Option<(String, String)> {
        let ignore = spec["failurePolicy"] == "Ignore";
        let mut ctx = CelContext::with_env(crate::cel::env().clone());
        ctx.add_variable_from_value("object", crate::cel::to_cel(&self.object));
        ctx.add_variable_from_value("oldObject", crate::cel::to_cel(&self.old_object));
        ctx.add_variable_from_value("namespaceObject", crate::cel::to_cel(&self.namespace_object));
        let request = json!({
            "operation": self.operation,
            "name": self.name,
            "namespace": self.namespace,
            "subResource": self.subresource,
            "userInfo": {"username": self.user},
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.resource},
        });
        ctx.add_variable_from_value("request", crate::cel::to_cel(&request));
        // In definition order; a later variable may read the earlier ones. (cel's map is a hash map,
        // only looked up by key.)
        let mut variables: Vec<(String, CelValue)> = Vec::new();
        let as_value = |v: &[(String, CelValue)]| {
            let entries = v.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), v.clone()));
            CelValue::Map(Map { map: Arc::new(entries.collect()) })
        };
        ctx.add_variable_from_value("variables", as_value(&variables));
        for variable in spec["variables"].as_array().into_iter().flatten() {
            let (Some(name), Some(expression)) = (variable["name"].as_str(), variable["expression"].as_str())
            else {
                continue;
            };
            let value = run(expression, &ctx).unwrap_or(CelValue::Null);
            variables.push((name.to_owned(), value));
            ctx.add_variable_from_value("variables", as_value(&variables));
        }
        for condition in spec["matchConditions"].as_array().into_iter().flatten() {
            let expression = condition["expression"].as_str().unwrap_or_default();
            match run(expression, &ctx) {
                Ok(CelValue::Bool(true)) => {}
                Ok(_) => return None,
                Err(_) if ignore => return None,
                Err(e) => {
                    return Some((
                        format!("expression '{expression}' resulted in error: {e}"),
                        "Invalid".into(),
                    ));
                }
            }
        }
        for validation in spec["validations"].as_array().into_iter().flatten() {
            let expression = validation["expression"].as_str().unwrap_or_default();
            let reason =
                validation["reason"].as_str().filter(|r| !r.is_empty()).unwrap_or("Invalid").to_owned();
            match run(expression, &ctx) {
                Ok(CelValue::Bool(true)) => {}
                Ok(_) => {
                    let from_expression =
                        validation["messageExpression"].as_str().and_then(|e| match run(e, &ctx) {
                            Ok(CelValue::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                            _ => None,
                        });
                    let message = from_expression
                        .or_else(|| {
                            validation["message"].as_str().filter(|m| !m.is_empty()).map(str::to_owned)
                        })
                        .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
                    return Some((message, reason));
                }
                Err(_) if ignore => {}
                Err(e) => return Some((format!("expression '{expression}' resulted in error: {e}"), reason)),
            }
        }
        None
    }
}

/// `expression` compiled (from the cache) and run.
fn run(expression: &str, ctx: &CelContext<'_, '_>) -> Result<CelValue, String> {
    let program = crate::cel::compile(expression)?;
    crate::cel::execute(&program, ctx).map_err(|e| crate::cel::error_text(&e))
}

/// Whether a label selector (null or empty: everything) selects `labels`.
fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    if selector.is_null() || selector.as_object().is_some_and(serde_json::Map::is_empty) {
        return true;
    }
    let Ok(parsed) = serde_json::from_value(selector.clone()) else { return false };
    LabelSelector::from_label_selector(&parsed).is_ok_and(|s| s.matches(labels))
}
