//! CRD validation rules (`x-kubernetes-validations`): the CEL expressions apiextensions-apiserver
//! evaluates on every write of a custom resource (`apiserver/schema/cel/validation.go`).
//!
//! - The rules run after the schema's own checks, unless one of those found a wrong type, an
//!   unsupported value, a missing required field or a value past `maxLength`, `maxItems` or
//!   `maxProperties`: then one cause says the rules were not checked ([`not_checked`]).
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
//!   evaluate (no such key, a wrong type, `quantity('x')`) is an Invalid cause.
//! - A rule that fails to evaluate prints upstream's error before ` evaluating rule: `, then the
//!   rule's `message` if it has one, else the rule (`ruleErrorString`).
//! - An object's properties are read under apiserver's escaped names ([`escape`]): a reserved
//!   word as `__namespace__`, `.`, `-`, `/` and `__` as `__dot__`, `__dash__`, `__slash__` and
//!   `__underscores__`; a property that cannot be escaped is not there. A map's keys stay as
//!   written.
//! - A string property with `format: date-time` or `date` is a CEL `timestamp`, `format: duration`
//!   a `duration` and `format: byte` `bytes`, wherever the schema puts it under `self` (a string
//!   that does not parse as its format stays a string).
//!
//! # The language
//!
//! The libraries of kube-apiserver's base environment (1.33 and later), on the `cel` crate
//! (cel-rust):
//! - CEL's standard library, with `duration()` and `timestamp()` and their accessors, and the
//!   optional syntax and `optional.*`;
//! - cel-go's strings extension (`lowerAscii`, `split`, `replace`, `indexOf`, ...) and sets
//!   extension (`sets.contains`, `sets.equivalent`, `sets.intersects`);
//! - cel-go's two-variable comprehensions (`all(k, v, p)`, `exists`, `existsOne`,
//!   `transformList`, `transformMap`, `transformMapEntry`; `cel/comprehensions.rs`);
//! - Kubernetes' libraries, in the representation `cel/library.rs` explains: lists (`isSorted`, `sum`, `min`,
//!   `max`, `indexOf`, `lastIndexOf`), regex (`find`, `findAll`), URLs (`url`, `isURL`,
//!   `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`), quantity
//!   (`quantity`, `isQuantity`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`, `add`,
//!   `sub`, `mul`, `isLessThan`, `isGreaterThan`, `compareTo`), IP and CIDR (`ip`, `isIP`,
//!   `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`,
//!   `isLinkLocalUnicast`, `isGlobalUnicast`, `cidr`, `isCIDR`, `containsIP`, `containsCIDR`,
//!   `ip()`, `masked`, `prefixLength`, `string()`), format (`format.named`, `format.<name>()`,
//!   `validate`) and semver (`semver`, `isSemver`, with or without normalization, `major`,
//!   `minor`, `patch`, `isLessThan`, `isGreaterThan`, `compareTo`). Parsers are ports of the Go
//!   code upstream calls (`resource.ParseQuantity`, `net/url`, `net/netip`, blang/semver), so that
//!   what they accept and their error messages are kube-apiserver's.
//!
//! Not modelled: the authz and authz-selector libraries (no authorizer), the image library
//! (1.33), the lists library's `includes`, quantity's `div` and `divInt`, static type checking
//! against the schema (a rule comparing a string with an int compiles and fails when it runs),
//! and cost limits. A quantity is exact up
//! to 38 significant digits (`cel/quantity.rs`).
//!
//! Compiled programs are kept for the process (a pure cache, like the schema patterns): which
//! thread or seed compiled a rule changes no answer.

mod comprehensions;
mod format;
mod library;
mod lists;
mod net;
mod quantity;
mod semver;
mod url;

/// `resource.ParseQuantity`, exact (the quota system's quantities are parsed with it too).
pub(crate) use quantity::parse as parse_quantity;
/// `url.ParseRequestURI`, for the `uri` format.
pub(crate) use url::parse_request_uri;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, Value as CelValue};
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

/// The environment every rule and admission-policy expression is compiled and run in: the
/// standard library, the strings extension and Kubernetes' libraries, declared once per process
/// (the overloads are plain functions: no per-run state).
pub(crate) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        let declared = cel::extensions::strings(&mut env)
            .and_then(|()| lists::register(&mut env))
            .and_then(|()| url::register(&mut env))
            .and_then(|()| quantity::register(&mut env))
            .and_then(|()| net::register(&mut env))
            .and_then(|()| format::register(&mut env))
            .and_then(|()| semver::register(&mut env))
            .and_then(|()| comprehensions::register(&mut env));
        // Our own declarations, fixed at compile time: a conflict is a bug (tests/it/cel_rules.rs
        // evaluates every library, so it would fail there first).
        assert_eq!(declared, Ok(()), "the CEL libraries declare without conflict");
        Arc::new(env)
    })
}

/// How a failed evaluation reads in a cause, as cel-go prints its errors: a library function's
/// message alone (`quantities must match the regular expression ...`), a missing key in lower
/// case (`no such key: x`), a string that is not a number as `type conversion error from
/// 'string' to 'int'`.
pub(crate) fn error_text(error: &ExecutionError) -> String {
    match error {
        // A string that does not parse as a number: cel-go's `String.ConvertToType` words it by
        // the types alone, where the crate gives Rust's parse error.
        ExecutionError::FunctionError { function, message }
            if matches!(function.as_str(), "int" | "uint" | "double")
                && message.starts_with("string parse error") =>
        {
            format!("type conversion error from 'string' to '{function}'")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        // cel-go's words for arithmetic and indexing errors (`errIntOverflow`, ...).
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(_, CelValue::UInt(_), _) => "unsigned integer overflow".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(CelValue::Int(i)) => format!("index out of bounds: {i}"),
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        other => other.to_string(),
    }
}

/// `program` run in `ctx` with cel-go's errors for its logical operators: of `a || b` (`a && b`)
/// where neither side is `true` (`false`), cel-go's `evalOr` (`evalAnd`) reports the first
/// side's error, where the `cel` crate reports the second's (`size(self.a) > 0 || size(self.b) >
/// 0` with both absent is `no such key: a` on kube-apiserver). Applied to the expression's
/// logical skeleton (`||`, `&&`, `!` and `? :` from the top); what lies below, the crate runs.
pub(crate) fn execute(program: &Program, ctx: &Context<'_, '_>) -> cel::ResolveResult {
    run_logical(program.expression(), ctx)
}

fn run_logical(expr: &cel::IdedExpr, ctx: &Context<'_, '_>) -> cel::ResolveResult {
    use cel::common::ast::{Expr, operators};
    let Expr::Call(call) = &expr.expr else { return CelValue::resolve(expr, ctx) };
    match (call.func_name.as_str(), call.args.as_slice(), &call.target) {
        (name @ (operators::LOGICAL_OR | operators::LOGICAL_AND), [left, right], None) => {
            // `true` decides an `||`, `false` an `&&`, whatever errs beside it.
            let decisive = name == operators::LOGICAL_OR;
            let left = run_logical(left, ctx);
            if matches!(left, Ok(CelValue::Bool(b)) if b == decisive) {
                return left;
            }
            let right = run_logical(right, ctx);
            match (left, right) {
                (_, right @ Ok(CelValue::Bool(b))) if b == decisive => right,
                (Err(e), _) | (Ok(CelValue::Bool(_)), Err(e)) => Err(e),
                (Ok(CelValue::Bool(_)), Ok(CelValue::Bool(_))) => Ok(CelValue::Bool(!decisive)),
                // A side that is not a bool: the crate's own error for it.
                _ => CelValue::resolve(expr, ctx),
            }
        }
        (operators::CONDITIONAL, [condition, then, otherwise], None) => match run_logical(condition, ctx) {
            Ok(CelValue::Bool(true)) => run_logical(then, ctx),
            Ok(CelValue::Bool(false)) => run_logical(otherwise, ctx),
            Err(e) => Err(e),
            Ok(_) => CelValue::resolve(expr, ctx),
        },
        (operators::LOGICAL_NOT, [operand], None) => match run_logical(operand, ctx) {
            Ok(CelValue::Bool(b)) => Ok(CelValue::Bool(!b)),
            Err(e) => Err(e),
            Ok(_) => CelValue::resolve(expr, ctx),
        },
        _ => CelValue::resolve(expr, ctx),
    }
}

/// `source` evaluated with no variables, in the rules' environment: what a rule's library call
/// answers (`evaluate("quantity('1Gi').isGreaterThan(quantity('1G'))")` is `Ok(Bool(true))`), or
/// its error as a cause would print it. For tests and tools; rules run through [`validate`].
pub fn evaluate(source: &str) -> Result<CelValue, String> {
    let program = compile(source)?;
    execute(&program, &Context::with_env(env().clone())).map_err(|e| error_text(&e))
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
        ctx.add_variable_from_value("self", to_cel_typed(value, Some(schema)));
        if transition {
            ctx.add_variable_from_value(
                "oldSelf",
                old.map_or(CelValue::Null, |o| to_cel_typed(o, Some(schema))),
            );
        }
        let ty = schema.type_.as_deref().unwrap_or_default();
        let rule_text = rule.rule.trim();
        // `ruleErrorString`: an evaluation error names the rule by its message, if it has one.
        let rule_error_string =
            rule.message.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(rule_text);
        let field =
            match rule.field_path.as_deref().map(|p| p.trim_start_matches('.')).filter(|p| !p.is_empty()) {
                Some(relative) => child(path, relative),
                None => path.map_or_else(|| "<nil>".to_owned(), str::to_owned),
            };
        match execute(&program, &ctx) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => {
                let message = message_of(rule, &ctx).unwrap_or_else(|| format!("failed rule: {rule_text}"));
                self.causes.push(cause_for_reason(rule.reason.as_deref(), &field, ty, &message));
            }
            Ok(other) => {
                let message = format!(
                    "rule did not evaluate to a bool: {other:?} evaluating rule: {rule_error_string}"
                );
                self.causes.push(invalid(&field, ty, &message));
            }
            Err(e) => {
                let message = format!("{} evaluating rule: {rule_error_string}", error_text(&e));
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

/// JSON as CEL sees it under `schema` (`UnstructuredToVal`): as [`to_cel`], except that a string
/// of `format: date-time` or `date` is a timestamp, of `format: duration` a duration and of
/// `format: byte` bytes, at any depth the schema describes.
fn to_cel_typed(value: &Value, schema: Option<&JSONSchemaProps>) -> CelValue {
    let Some(schema) = schema else { return to_cel(value) };
    match value {
        Value::String(s) => {
            schema.format.as_deref().and_then(|f| typed_string(s, f)).unwrap_or_else(|| to_cel(value))
        }
        // A `number` is a CEL double even when written whole (`1`, not `1.0`).
        Value::Number(n) if schema.type_.as_deref() == Some("number") => {
            CelValue::Float(n.as_f64().unwrap_or_default())
        }
        Value::Array(items) => {
            let item_schema = match &schema.items {
                Some(JSONSchemaPropsOrArray::Schema(s)) => Some(&**s),
                _ => None,
            };
            CelValue::List(Arc::new(items.iter().map(|v| to_cel_typed(v, item_schema)).collect()))
        }
        Value::Object(map) => {
            let additional = match &schema.additional_properties {
                Some(JSONSchemaPropsOrBool::Schema(s)) => Some(&**s),
                _ => None,
            };
            // An object type (a schema with properties) names its fields as CEL identifiers:
            // escaped, and without the fields that cannot be (a reserved word is read as written
            // too, as `cel.Unescape` finds it); a null field is absent (`has()` is false). A map
            // keeps its keys and its nulls.
            let object = schema.properties.as_ref().is_some_and(|p| !p.is_empty());
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map {
                let sub = schema.properties.as_ref().and_then(|p| p.get(k)).or(additional);
                if !object {
                    entries.push((Key::String(Arc::new(k.clone())), to_cel_typed(v, sub)));
                    continue;
                }
                let Some(name) = escape(k).filter(|_| !v.is_null()) else { continue };
                let value = to_cel_typed(v, sub);
                if CEL_RESERVED.contains(&k.as_str()) {
                    entries.push((Key::String(Arc::new(k.clone())), value.clone()));
                }
                entries.push((Key::String(Arc::new(name.into_owned())), value));
            }
            CelValue::Map(Map { map: Arc::new(entries.into_iter().collect()) })
        }
        _ => to_cel(value),
    }
}

/// The words CEL reserves, which a field of that name is escaped from (`__namespace__`).
const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as a rule reads it, apiserver's `cel.Escape`: a reserved word is
/// `__<word>__`; `__`, `.`, `-` and `/` are `__underscores__`, `__dot__`, `__dash__` and
/// `__slash__`; a name that starts with a digit or holds any other character is not
/// accessible (`None`), as upstream leaves it out of the object's type.
pub fn escape(name: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    let first = name.bytes().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if CEL_RESERVED.contains(&name) {
        return Some(Cow::Owned(format!("__{name}__")));
    }
    let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if name.bytes().all(plain) && !name.contains("__") {
        return Some(Cow::Borrowed(name));
    }
    let mut escaped = String::with_capacity(name.len() + 16);
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            escaped.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => escaped.push_str("__dot__"),
            '-' => escaped.push_str("__dash__"),
            '/' => escaped.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => escaped.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(Cow::Owned(escaped))
}

/// A string of a CEL-typed `format`, or `None` to keep it a string (another format, or a value
/// that does not parse as its format).
fn typed_string(s: &str, format: &str) -> Option<CelValue> {
    match format {
        "date-time" => parse_date_time(s).map(CelValue::Timestamp),
        "date" => {
            let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10)?;
            Some(CelValue::Timestamp(day.and_time(chrono::NaiveTime::MIN).and_utc().fixed_offset()))
        }
        "duration" => parse_duration(s).map(CelValue::Duration),
        "byte" => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
            Some(CelValue::Bytes(Arc::new(bytes)))
        }
        _ => None,
    }
}

/// strfmt's `ParseDateTime`: RFC 3339 (any fraction), an offset without a colon, or no zone (UTC).
fn parse_date_time(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    if let Ok(t) = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Some(t);
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|layout| chrono::NaiveDateTime::parse_from_str(s, layout).ok())
        .map(|t| t.and_utc().fixed_offset())
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration` (`1h30m`, `1.5s`, `-2m`), else a sum of
/// `<int> <unit>` with units up to weeks (`3 days`, `1w 2d`).
pub(crate) fn parse_duration(s: &str) -> Option<chrono::Duration> {
    go_duration(s).or_else(|| {
        let mut total = chrono::Duration::zero();
        let mut found = false;
        let mut rest = s.trim_start();
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            let n: i64 = rest[..digits].parse().ok()?;
            let after = rest[digits..].trim_start();
            let unit_len = after.find(|c: char| !(c.is_alphabetic())).unwrap_or(after.len());
            let unit = after[..unit_len].to_lowercase();
            let nanos: i64 = match unit.trim_end_matches('s') {
                "n" | "nano" => 1,
                "u" | "µ" | "micro" => 1_000,
                "m" | "milli" => 1_000_000,
                "" | "sec" => 1_000_000_000,
                "min" => 60_000_000_000,
                "h" | "hr" | "hour" => 3_600_000_000_000,
                "d" | "day" => 86_400_000_000_000,
                "w" | "wk" | "week" => 604_800_000_000_000,
                _ => return None,
            };
            let nanos = match unit.as_str() {
                "m" => 60_000_000_000,
                "ms" => 1_000_000,
                _ => nanos,
            };
            total = total.checked_add(&chrono::Duration::nanoseconds(n.checked_mul(nanos)?))?;
            found = true;
            rest = after[unit_len..].trim_start();
        }
        found.then_some(total)
    })
}

/// Go's `time.ParseDuration`.
fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let nanos: f64 = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * nanos;
        rest = &rest[unit_len..];
    }
    if total > i64::MAX as f64 {
        return None;
    }
    let nanos = total.round() as i64;
    Some(chrono::Duration::nanoseconds(if negative { -nanos } else { nanos }))
}
