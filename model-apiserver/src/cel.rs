//! CRD validation rules (`x-kubernetes-validations`): the CEL expressions apiextensions-apiserver
//! evaluates on every write of a custom resource (`apiserver/schema/cel/validation.go`).
//!
//! - The rules run after the schema's own checks, unless one of those found a wrong type or an
//!   unsupported value: then one cause says the rules were not checked ([`not_checked`]).
//! - Each schema node's rules run with `self` bound to the value at that node (at the root, the
//!   object's content with `apiVersion`, `kind` and `metadata.name` / `generateName`, the only
//!   metadata a rule may read). A node whose value is absent or null runs none.
//! - A transition rule (one that reads `oldSelf`) runs only on an update, where the node has an
//!   old value: object properties and map entries correlate by key, items of a
//!   `x-kubernetes-list-type: map` list by their `x-kubernetes-list-map-keys`; other list items
//!   have no old value (`optionalOldSelf: true` runs the rule with `oldSelf` null instead).
//! - Ratcheting (`CRDValidationRatcheting`, on by default since 1.30): a rule that is not a
//!   transition rule does not run at a node whose value is unchanged from its old value, so an
//!   object stored before a rule was added can still be updated elsewhere.
//! - A rule that evaluates to `false` is a cause at the node's field path (`<nil>` at the root, as
//!   upstream's nil path prints), or at `fieldPath` below it: `Invalid value: "<schema type>":
//!   <message>`, where the message is `messageExpression`'s string, else `message`, else `failed
//!   rule: <rule>`; `reason` makes it `FieldValueForbidden` (`Forbidden: ...`),
//!   `FieldValueRequired` (`Required value: ...`) or `FieldValueDuplicate`. A rule that fails to
//!   evaluate (no such key, a wrong type) is an Invalid cause `<error> evaluating rule: <rule>`.
//! - The language is CEL's standard library with the strings extension (`lowerAscii`, `split`,
//!   `replace`, ...) and Kubernetes' list functions `isSorted`, `sum`, `min` and `max`, evaluated by the `cel` crate (cel-rust). Not modelled: Kubernetes'
//!   other libraries (`quantity`, `url`, `ip`, `cidr`, `format`, `authz`), static type checking
//!   against the schema (a rule comparing a string with an int compiles and fails when it runs)
//!   and cost limits.
//!
//! Compiled programs are kept for the process (a pure cache, like the schema patterns): which
//! thread or seed compiled a rule changes no answer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cel::objects::{Key, Map};
use cel::{Context, Env, Program, Value as CelValue};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};
use kube_core::response::StatusCause;
use serde_json::Value;

use crate::errors;

/// Compiled rules kept at most (past it the cache starts over).
const PROGRAM_CACHE_MAX: usize = 1024;
/// Deepest node whose rules run (deeper values are left to the structural validation's cause).
const DEPTH_MAX: usize = 512;

static PROGRAMS: Mutex<BTreeMap<String, Result<Arc<Program>, String>>> = Mutex::new(BTreeMap::new());

/// The environment every rule is compiled and run in.
pub(crate) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // The strings extension Kubernetes enables; a declaration error would be a bug of the
        // crate's own extension, and leaves the standard library usable.
        let _ = cel::extensions::strings(&mut env);
        Arc::new(env)
    })
}

/// `source` compiled, or the compiler's error (as CRD validation reports it), from the cache.
pub fn compile(source: &str) -> Result<Arc<Program>, String> {
    let mut cache = PROGRAMS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = cache.get(source) {
        return found.clone();
    }
    if cache.len() >= PROGRAM_CACHE_MAX {
        cache.clear();
    }
    let compiled = env().compile(source).map(Arc::new).map_err(|e| format!("compilation failed: {e}"));
    cache.insert(source.to_owned(), compiled.clone());
    compiled
}

/// Whether `schema` or a node below it has rules (most schemas have none: then nothing runs).
pub fn has_rules(schema: &JSONSchemaProps) -> bool {
    let own = schema.x_kubernetes_validations.as_ref().is_some_and(|r| !r.is_empty());
    own || schema.properties.iter().flatten().any(|(_, p)| has_rules(p))
        || matches!(&schema.items, Some(JSONSchemaPropsOrArray::Schema(s)) if has_rules(s))
        || matches!(&schema.additional_properties, Some(JSONSchemaPropsOrBool::Schema(s)) if has_rules(s))
}

/// The causes of the rules `object` (a custom resource as JSON, its `metadata` included) breaks,
/// `old` being the stored object on an update.
pub fn validate(schema: &JSONSchemaProps, object: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut walk = Walk { causes: Vec::new() };
    let root = |o: &Value| resource_view(o);
    let old_root = old.map(root);
    walk.node(schema, &root(object), old_root.as_ref(), None, 0);
    walk.causes
}

/// The cause that stands for the rules when the schema's own causes block them
/// (`hasBlockingErr`: a wrong type, an unsupported value).
pub fn not_checked() -> StatusCause {
    errors::cause(
        "FieldValueInvalid",
        "<nil>",
        "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct \
         the existing errors to complete validation",
    )
}

/// What a root rule sees of a resource: everything but the metadata beyond its name and
/// generateName.
fn resource_view(object: &Value) -> Value {
    let mut view = object.clone();
    if let Some(map) = view.as_object_mut()
        && let Some(Value::Object(meta)) = map.get_mut("metadata")
    {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    view
}

struct Walk {
    causes: Vec<StatusCause>,
}

/// `path.key` (a property; `key` at the root).
fn child(path: Option<&str>, key: &str) -> String {
    crate::schema::child(path.unwrap_or_default(), key)
}

impl Walk {
    fn node(
        &mut self,
        schema: &JSONSchemaProps,
        value: &Value,
        old: Option<&Value>,
        path: Option<&str>,
        depth: usize,
    ) {
        if value.is_null() || depth > DEPTH_MAX {
            return;
        }
        for rule in schema.x_kubernetes_validations.iter().flatten() {
            self.rule(schema, rule, value, old, path);
        }
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    let sub = child(path, key);
                    let old_v = old.and_then(|o| o.get(key));
                    if let Some(prop) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                        self.node(prop, v, old_v, Some(&sub), depth + 1);
                    } else if let Some(JSONSchemaPropsOrBool::Schema(add)) = &schema.additional_properties {
                        let sub = format!("{}[{key}]", path.unwrap_or_default());
                        self.node(add, v, old_v, Some(&sub), depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                let Some(JSONSchemaPropsOrArray::Schema(item_schema)) = &schema.items else { return };
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = old_items.and_then(|olds| correlated(schema, item, olds));
                    let sub = format!("{}[{i}]", path.unwrap_or_default());
                    self.node(item_schema, item, old_item, Some(&sub), depth + 1);
                }
            }
            _ => {}
        }
    }

    fn rule(
        &mut self,
        schema: &JSONSchemaProps,
        rule: &ValidationRule,
        value: &Value,
        old: Option<&Value>,
        path: Option<&str>,
    ) {
        // A rule that does not compile was refused with its CRD (`crd::validate_crd`).
        let Ok(program) = compile(&rule.rule) else { return };
        let transition = program.references().has_variable("oldSelf");
        let optional_old = rule.optional_old_self == Some(true);
        if transition && old.is_none() && !optional_old {
            return;
        }
        if !transition && old.is_some_and(|o| o == value) {
            return; // ratcheting: an unchanged value keeps whatever it was stored with
        }
        let mut ctx = Context::with_env(env().clone());
        ctx.add_variable_from_value("self", to_cel(value));
        if transition {
            ctx.add_variable_from_value("oldSelf", old.map_or(CelValue::Null, to_cel));
        }
        add_list_functions(&mut ctx);
        let ty = schema.type_.as_deref().unwrap_or_default();
        let rule_text = rule.rule.trim();
        let field =
            match rule.field_path.as_deref().map(|p| p.trim_start_matches('.')).filter(|p| !p.is_empty()) {
                Some(relative) => child(path, relative),
                None => path.map_or_else(|| "<nil>".to_owned(), str::to_owned),
            };
        match program.execute(&ctx) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => {
                let message = message_of(rule, &ctx).unwrap_or_else(|| format!("failed rule: {rule_text}"));
                self.causes.push(cause_for_reason(rule.reason.as_deref(), &field, ty, &message));
            }
            Ok(other) => {
                let message =
                    format!("rule did not evaluate to a bool: {other:?} evaluating rule: {rule_text}");
                self.causes.push(invalid(&field, ty, &message));
            }
            Err(e) => {
                // cel-go words a missing key in lower case.
                let error = e.to_string();
                let error = error
                    .strip_prefix("No such key")
                    .map_or(error.clone(), |rest| format!("no such key{rest}"));
                let message = format!("{error} evaluating rule: {rule_text}");
                self.causes.push(invalid(&field, ty, &message));
            }
        }
    }
}

/// `messageExpression`'s string when it gives a non-empty one line, else `message`.
fn message_of(rule: &ValidationRule, ctx: &Context<'_, '_>) -> Option<String> {
    let from_expression = rule.message_expression.as_deref().filter(|e| !e.trim().is_empty()).and_then(|e| {
        match compile(e).ok()?.execute(ctx).ok()? {
            CelValue::String(s) if !s.trim().is_empty() && !s.contains('\n') => Some(s.trim().to_owned()),
            _ => None,
        }
    });
    from_expression
        .or_else(|| rule.message.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(str::to_owned))
}

fn invalid(field: &str, ty: &str, message: &str) -> StatusCause {
    errors::cause("FieldValueInvalid", field, format!("Invalid value: {ty:?}: {message}"))
}

/// `fieldErrorForReason`.
fn cause_for_reason(reason: Option<&str>, field: &str, ty: &str, message: &str) -> StatusCause {
    match reason {
        Some("FieldValueForbidden") => {
            errors::cause("FieldValueForbidden", field, format!("Forbidden: {message}"))
        }
        Some("FieldValueRequired") => {
            errors::cause("FieldValueRequired", field, format!("Required value: {message}"))
        }
        Some("FieldValueDuplicate") => {
            errors::cause("FieldValueDuplicate", field, format!("Duplicate value: {ty:?}"))
        }
        _ => invalid(field, ty, message),
    }
}

/// The old item an item of a list correlates with: for a `map` list, the one with the same
/// values of the list's map keys; none for other lists.
fn correlated<'a>(schema: &JSONSchemaProps, item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    if schema.x_kubernetes_list_type.as_deref() != Some("map") {
        return None;
    }
    let keys = schema.x_kubernetes_list_map_keys.as_deref().unwrap_or_default();
    if keys.is_empty() {
        return None;
    }
    olds.iter().find(|old| keys.iter().all(|k| old.get(k) == item.get(k)))
}

/// JSON as CEL sees it: integers are `int` (as Kubernetes decodes them), not `uint`.
pub(crate) fn to_cel(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries = map.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)));
            CelValue::Map(Map { map: Arc::new(entries.collect()) })
        }
    }
}

/// Kubernetes' list library (`library.Lists`): `isSorted`, `sum`, `min`, `max` (its `indexOf`
/// and `lastIndexOf` would shadow the strings extension's).
pub(crate) fn add_list_functions(ctx: &mut Context<'_, '_>) {
    use cel::extractors::This;
    type List = This<Arc<Vec<CelValue>>>;
    let _ = ctx.add_function("isSorted", |This(list): List| list.windows(2).all(|w| w[0] <= w[1]));
    let _ = ctx.add_function("sum", |This(list): List| -> CelValue {
        let ints: Option<i64> = list.iter().try_fold(0i64, |acc, v| match v {
            CelValue::Int(i) => acc.checked_add(*i),
            _ => None,
        });
        match ints {
            Some(total) => CelValue::Int(total),
            None => CelValue::Float(
                list.iter()
                    .map(|v| match v {
                        CelValue::Int(i) => *i as f64,
                        CelValue::UInt(u) => *u as f64,
                        CelValue::Float(f) => *f,
                        _ => 0.0,
                    })
                    .sum(),
            ),
        }
    });
    let _ = ctx.add_function("min", |This(list): List| -> CelValue {
        list.iter().cloned().reduce(|a, b| if b < a { b } else { a }).unwrap_or(CelValue::Null)
    });
    let _ = ctx.add_function("max", |This(list): List| -> CelValue {
        list.iter().cloned().reduce(|a, b| if b > a { b } else { a }).unwrap_or(CelValue::Null)
    });
}
