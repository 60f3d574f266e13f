//! Structural-schema validation, pruning and defaulting for custom resources.
//!
//! The apiserver decodes a custom resource, prunes unknown fields, applies defaults (dropping
//! non-nullable nulls first) and then validates against the version's `openAPIV3Schema`. The three
//! functions here are those steps; the server calls them in that order.
//!
//! Causes carry the reasons, field paths and messages that apiextensions-apiserver produces from
//! kube-openapi's validator (`spec.replicas: Invalid value: "string": spec.replicas in body must be
//! of type integer: "string"`), so that a test matching on them matches production.
//!
//! List types' uniqueness is [`validate_list_types`]. A string's `format` is checked as
//! kube-openapi's registry checks it (the formats a CRD keeps, `crate::formats`); `anyOf`,
//! `oneOf`, `allOf` and `not` as its `schemaPropsValidator` does, the causes of a failed
//! alternative chosen by how much it checked (its `MatchCount`, counted here as schema nodes).
//! Not modelled: `uniqueItems` (a structural schema may not set it). `x-kubernetes-validations` (CEL) rules run
//! after these checks ([`crate::cel`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube_core::response::StatusCause;
use regex::Regex;
use serde_json::{Map, Value};

use crate::errors;

/// Deepest nesting of a value that is validated, pruned or defaulted. Deeper values (which
/// serde_json's own recursion limit of 128 never produces) get one Invalid cause, and are left
/// alone by pruning and defaulting, instead of overflowing the stack.
const DEPTH_MAX: usize = 512;
/// Compiled `pattern`s kept at most (a bound, not a size a schema reaches: past it the cache
/// starts over).
const PATTERN_CACHE_MAX: usize = 256;

/// Compiled `pattern`s (or their compile errors), one cache for the process. It is a pure cache:
/// a pattern always compiles to the same automaton and error, so which thread or seed filled it
/// changes no answer and no trace. It is not per thread because every seed of a sweep runs on a
/// fresh thread: a thread's cache compiled each pattern of the schema again on every seed, about
/// 60 µs per seed for one pattern in the configmapgen scenario. The `Regex` is shared, not
/// cloned: a clone starts with an empty pool of match caches, which its first match fills again.
static PATTERNS: Mutex<BTreeMap<String, Result<Arc<Regex>, String>>> = Mutex::new(BTreeMap::new());

/// The compiled `pattern`, or its compile error on one line, from the process's cache: what the
/// server validates a value's `pattern` with, for whoever needs the same regex (the workload
/// generator, say) without compiling it again.
pub fn compiled_pattern(pattern: &str) -> Result<Arc<Regex>, String> {
    let cached = PATTERNS.lock().unwrap_or_else(PoisonError::into_inner).get(pattern).cloned();
    if let Some(compiled) = cached {
        return compiled;
    }
    // Compiled outside the lock: another thread may compile the same pattern meanwhile, to the
    // same result.
    let compiled = Regex::new(pattern).map(Arc::new).map_err(|e| regex_error_line(&e));
    let mut cache = PATTERNS.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= PATTERN_CACHE_MAX {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), compiled.clone());
    compiled
}

/// Whether `value` matches `pattern`; the compile error (on one line) when the pattern is not a
/// valid regular expression.
fn pattern_matches(pattern: &str, value: &str) -> Result<bool, String> {
    compiled_pattern(pattern).map(|re| re.is_match(value))
}

/// The regex crate's multi-line error message (pattern, caret, message) as its last line, the
/// message itself.
pub(crate) fn regex_error_line(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_owned()
}

/// The keys of a resource's root (and of an embedded resource) that its schema does not govern.
const RESOURCE_KEYS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The JSON type name kube-openapi infers for a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` of a float64 for the numbers in messages (`10`, `1.5`).
fn number_text(n: f64) -> String {
    format!("{n}")
}

/// How field errors print a bad value: strings quoted, numbers and booleans bare, `null` for nil.
/// Objects and arrays print as compact JSON (Go would print `%#v` of its map type).
fn value_text(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), as decoded JSON compares.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// `path.key`: built for every field a schema validates, so by `concat` (one allocation, no
/// formatting machinery) rather than `format!`.
pub(crate) fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { [path, ".", key].concat() }
}

fn items_schema(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.items.as_ref()? {
        JSONSchemaPropsOrArray::Schema(s) => Some(s),
        // Structural schemas forbid tuple items; the first schema is the best reading.
        JSONSchemaPropsOrArray::Schemas(v) => v.first(),
    }
}

/// The schema of map values, and whether unknown keys are kept as they are (`true`).
enum Additional<'a> {
    None,
    Any,
    Schema(&'a JSONSchemaProps),
}

fn additional(schema: &JSONSchemaProps) -> Additional<'_> {
    match schema.additional_properties.as_ref() {
        Some(JSONSchemaPropsOrBool::Schema(s)) => Additional::Schema(s),
        Some(JSONSchemaPropsOrBool::Bool(true)) => Additional::Any,
        Some(JSONSchemaPropsOrBool::Bool(false)) | None => Additional::None,
    }
}

fn preserves_unknown(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
}

fn is_embedded(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_embedded_resource == Some(true)
}

/// Collects causes while walking a value and its schema.
#[derive(Default)]
struct Validator {
    causes: Vec<StatusCause>,
    /// Schema nodes checked: kube-openapi's `MatchCount`, which picks whose causes a failed
    /// `anyOf` or `oneOf` reports (the alternative that checked the most).
    visited: usize,
}

/// An alternative of `anyOf`/`oneOf`/`allOf`/`not` checked on its own: its causes and how much it
/// checked.
struct Alternative {
    causes: Vec<StatusCause>,
    visited: usize,
}

impl Validator {
    /// `value` checked against one composed schema, apart from the causes gathered so far.
    fn alternative(
        schema: &JSONSchemaProps,
        value: &Value,
        path: &str,
        resource_root: bool,
        depth: usize,
    ) -> Alternative {
        let mut sub = Validator::default();
        sub.check(schema, value, path, resource_root, depth + 1);
        Alternative { causes: sub.causes, visited: sub.visited }
    }

    /// A composite failure, as apiextensions reports kube-openapi's: no field (`<nil>`), an empty
    /// value, the path quoted in the message.
    fn composite(&mut self, path: &str, message: &str) {
        let message = format!("Invalid value: \"\": {path:?} {message}");
        self.causes.push(errors::cause("FieldValueInvalid", "<nil>", message));
    }

    /// kube-openapi's `schemaPropsValidator`: `anyOf` needs one valid alternative (else its
    /// failure and the causes of the alternative that checked the most), `oneOf` exactly one (the
    /// same, with how many were valid), `allOf` all (every alternative's causes, then its
    /// failure), `not` none.
    fn check_composition(
        &mut self,
        schema: &JSONSchemaProps,
        value: &Value,
        path: &str,
        resource_root: bool,
        depth: usize,
    ) {
        let check = |alt: &JSONSchemaProps| Self::alternative(alt, value, path, resource_root, depth);
        // The failed alternative that checked the most (the first of equals), as `bestFailures`.
        let best = |failed: Vec<Alternative>| failed.into_iter().rev().max_by_key(|a| a.visited);
        if let Some(any_of) = schema.any_of.as_ref().filter(|a| !a.is_empty()) {
            let mut failed = Vec::new();
            for alt in any_of {
                let result = check(alt);
                if result.causes.is_empty() {
                    failed.clear();
                    break;
                }
                failed.push(result);
            }
            if let Some(best) = best(failed) {
                self.composite(path, "must validate at least one schema (anyOf)");
                self.causes.extend(best.causes);
            }
        }
        if let Some(one_of) = schema.one_of.as_ref().filter(|a| !a.is_empty()) {
            let results: Vec<Alternative> = one_of.iter().map(check).collect();
            let valid = results.iter().filter(|r| r.causes.is_empty()).count();
            if valid == 0 {
                self.composite(path, "must validate one and only one schema (oneOf). Found none valid");
                if let Some(best) = best(results) {
                    self.causes.extend(best.causes);
                }
            } else if valid > 1 {
                let message = format!(
                    "must validate one and only one schema (oneOf). Found {valid} valid alternatives"
                );
                self.composite(path, &message);
            }
        }
        if let Some(all_of) = schema.all_of.as_ref().filter(|a| !a.is_empty()) {
            let mut valid = 0;
            for alt in all_of {
                let result = check(alt);
                valid += usize::from(result.causes.is_empty());
                self.causes.extend(result.causes);
            }
            if valid != all_of.len() {
                let none = if valid == 0 { ". None validated" } else { "" };
                self.composite(path, &format!("must validate all the schemas (allOf){none}"));
            }
        }
        if let Some(not) = &schema.not
            && check(not).causes.is_empty()
        {
            self.composite(path, "must not validate the schema (not)");
        }
    }

    fn invalid(&mut self, path: &str, value: &Value, message: String) {
        let message = format!("Invalid value: {}: {message}", value_text(value));
        self.causes.push(errors::cause("FieldValueInvalid", path, message));
    }

    fn type_invalid(&mut self, path: &str, expected: &str, actual: &str) {
        let message =
            format!("Invalid value: {actual:?}: {path} in body must be of type {expected}: {actual:?}");
        self.causes.push(errors::cause("FieldValueTypeInvalid", path, message));
    }

    fn required(&mut self, path: &str, detail: &str) {
        let message =
            if detail.is_empty() { "Required value".to_owned() } else { format!("Required value: {detail}") };
        self.causes.push(errors::cause("FieldValueRequired", path, message));
    }

    /// Validate `value` at `path`; `resource_root` skips the keys the server validates itself.
    fn check(
        &mut self,
        schema: &JSONSchemaProps,
        value: &Value,
        path: &str,
        resource_root: bool,
        depth: usize,
    ) {
        if depth > DEPTH_MAX {
            self.invalid(path, &Value::Null, format!("nesting is deeper than {DEPTH_MAX} levels"));
            return;
        }
        // kube-openapi runs the enum check even on a value of the wrong type (both causes are
        // reported); the other keywords apply only to values of their own type.
        let type_ok = self.check_type(schema, value, path);
        self.visited += 1;
        self.check_composition(schema, value, path, resource_root, depth);
        if let Some(allowed) = &schema.enum_
            && !value.is_null()
            && !allowed.iter().any(|a| json_eq(&a.0, value))
        {
            let supported: Vec<String> = allowed
                .iter()
                .map(|a| match &a.0 {
                    Value::String(s) => format!("{s:?}"),
                    other => format!("{:?}", other.to_string()),
                })
                .collect();
            let message = format!(
                "Unsupported value: {}: supported values: {}",
                value_text(value),
                supported.join(", ")
            );
            self.causes.push(errors::cause("FieldValueNotSupported", path, message));
        }
        if !type_ok {
            return;
        }
        match value {
            Value::Number(n) => self.check_number(schema, value, n.as_f64().unwrap_or_default(), path),
            Value::String(s) => self.check_string(schema, value, s, path),
            Value::Array(items) => self.check_array(schema, items, path, depth),
            Value::Object(map) => self.check_object(schema, map, path, resource_root, depth),
            Value::Null | Value::Bool(_) => {}
        }
    }

    /// The `type`, `nullable` and `x-kubernetes-int-or-string` checks; false stops the checks
    /// below this value, as its other keywords do not apply to a value of the wrong type.
    fn check_type(&mut self, schema: &JSONSchemaProps, value: &Value, path: &str) -> bool {
        let int_or_string = schema.x_kubernetes_int_or_string == Some(true);
        let declared = schema.type_.as_deref().filter(|t| !t.is_empty());
        let expected = if int_or_string { Some("integer,string") } else { declared };
        let Some(expected) = expected else {
            return true; // untyped: x-kubernetes-preserve-unknown-fields or int-or-string alone
        };
        if value.is_null() {
            if schema.nullable == Some(true) {
                return false;
            }
            self.type_invalid(path, expected, "null");
            return false;
        }
        let actual = type_name(value);
        let integral_float = value.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite());
        let ok = match expected {
            "integer,string" => {
                actual == "integer" || actual == "string" || (actual == "number" && integral_float)
            }
            "integer" => actual == "integer" || (actual == "number" && integral_float),
            "number" => actual == "number" || actual == "integer",
            other => actual == other,
        };
        if !ok {
            self.type_invalid(path, expected, actual);
        }
        ok
    }

    fn check_number(&mut self, schema: &JSONSchemaProps, value: &Value, n: f64, path: &str) {
        if let Some(max) = schema.maximum {
            if schema.exclusive_maximum == Some(true) && n >= max {
                self.invalid(path, value, format!("{path} in body should be less than {}", number_text(max)));
            } else if n > max {
                let message = format!("{path} in body should be less than or equal to {}", number_text(max));
                self.invalid(path, value, message);
            }
        }
        if let Some(min) = schema.minimum {
            if schema.exclusive_minimum == Some(true) && n <= min {
                self.invalid(
                    path,
                    value,
                    format!("{path} in body should be greater than {}", number_text(min)),
                );
            } else if n < min {
                let message =
                    format!("{path} in body should be greater than or equal to {}", number_text(min));
                self.invalid(path, value, message);
            }
        }
        if let Some(factor) = schema.multiple_of.filter(|f| *f > 0.0)
            && (n / factor).fract() != 0.0
        {
            self.invalid(
                path,
                value,
                format!("{path} in body should be a multiple of {}", number_text(factor)),
            );
        }
    }

    fn check_string(&mut self, schema: &JSONSchemaProps, value: &Value, s: &str, path: &str) {
        let len = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = schema.max_length
            && len > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            let message = format!("Too long: may not be more than {max} {unit}");
            self.causes.push(errors::cause("FieldValueTooLong", path, message));
        }
        if let Some(min) = schema.min_length
            && len < min
        {
            self.invalid(path, value, format!("{path} in body should be at least {min} chars long"));
        }
        if let Some(pattern) = &schema.pattern {
            match pattern_matches(pattern, s) {
                Ok(true) => {}
                Ok(false) => self.invalid(path, value, format!("{path} in body should match '{pattern}'")),
                // A v1 CRD with such a pattern is rejected, but one stored before that check, or
                // an older schema, still gets kube-openapi's answer: the value fails.
                Err(e) => self.invalid(
                    path,
                    value,
                    format!("{path} in body should match '{pattern}, but pattern is invalid: {e}'"),
                ),
            }
        }
        // kube-openapi's format validator: a string in a format a CRD keeps
        // ([`crate::formats`]), as a type error (`... must be of type ipv4: "1.2.3.4:80"`).
        if let Some(format) = schema.format.as_deref()
            && crate::formats::validates(format, s) == Some(false)
        {
            let message = format!("Invalid value: {s:?}: {path} in body must be of type {format}: {s:?}");
            self.causes.push(errors::cause("FieldValueTypeInvalid", path, message));
        }
    }

    fn check_array(&mut self, schema: &JSONSchemaProps, items: &[Value], path: &str, depth: usize) {
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(max) = schema.max_items
            && len > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            let message = format!("Too many: {len}: must have at most {max} {unit}");
            self.causes.push(errors::cause("FieldValueTooMany", path, message));
        }
        if let Some(min) = schema.min_items
            && len < min
        {
            let message = format!("Invalid value: {len}: {path} in body should have at least {min} items");
            self.causes.push(errors::cause("FieldValueInvalid", path, message));
        }
        if let Some(item_schema) = items_schema(schema) {
            for (i, item) in items.iter().enumerate() {
                self.check(item_schema, item, &format!("{path}[{i}]"), false, depth + 1);
            }
        }
    }

    fn check_object(
        &mut self,
        schema: &JSONSchemaProps,
        map: &Map<String, Value>,
        path: &str,
        resource_root: bool,
        depth: usize,
    ) {
        let embedded = is_embedded(schema);
        let skip = |key: &str| (resource_root || embedded) && RESOURCE_KEYS.contains(&key);
        if embedded {
            for key in ["apiVersion", "kind"] {
                if map.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                    self.required(&child(path, key), "must not be empty");
                }
            }
        }
        let len = i64::try_from(map.len()).unwrap_or(i64::MAX);
        if let Some(max) = schema.max_properties
            && len > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            let message = format!("Too many: {len}: must have at most {max} {unit}");
            self.causes.push(errors::cause("FieldValueTooMany", path, message));
        }
        if let Some(min) = schema.min_properties
            && len < min
        {
            let message =
                format!("Invalid value: {len}: {path} in body should have at least {min} properties");
            self.causes.push(errors::cause("FieldValueInvalid", path, message));
        }
        for key in schema.required.iter().flatten() {
            if !skip(key) && !map.contains_key(key) {
                self.required(&child(path, key), "");
            }
        }
        // serde_json's map iterates in a fixed order (sorted, or insertion with `preserve_order`).
        for (key, v) in map {
            if skip(key) {
                continue;
            }
            let sub = child(path, key);
            if let Some(prop) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                self.check(prop, v, &sub, false, depth + 1);
            } else if let Additional::Schema(s) = additional(schema) {
                self.check(s, v, &sub, false, depth + 1);
            }
        }
    }
}

/// Validate a whole custom resource object against its version's `openAPIV3Schema` (whose root
/// describes the object). `apiVersion`, `kind` and `metadata` at the root are left to the server.
///
/// Returns the causes for a 422 Invalid, empty when the object is valid.
pub fn validate(schema: &JSONSchemaProps, value: &Value) -> Vec<StatusCause> {
    let mut v = Validator::default();
    v.check(schema, value, "", true, 0);
    v.causes
}

/// `x-kubernetes-list-type` invariants (`structurallisttype.ValidateListSetsAndMaps`): a `set`
/// holds no item twice, a `map` no two items with the same `x-kubernetes-list-map-keys` values and
/// only objects. A repeated item is reported once, at its second index, as `Duplicate value:`
/// with Go's `%#v` of the value (of the key for a map list). Properties are walked in key order
/// (upstream's map order is random).
pub fn validate_list_types(schema: &JSONSchemaProps, value: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    list_types(schema, value, "", 0, &mut causes);
    causes
}

fn list_types(
    schema: &JSONSchemaProps,
    value: &Value,
    path: &str,
    depth: usize,
    causes: &mut Vec<StatusCause>,
) {
    if depth > DEPTH_MAX {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if let Some(prop) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                    list_types(prop, v, &child(path, key), depth + 1, causes);
                } else if let Additional::Schema(add) = additional(schema) {
                    list_types(add, v, &format!("{path}[{key}]"), depth + 1, causes);
                }
            }
        }
        Value::Array(items) => {
            match schema.x_kubernetes_list_type.as_deref() {
                Some("set") => {
                    for i in second_occurrences(items) {
                        causes.push(duplicate(&format!("{path}[{i}]"), &items[i]));
                    }
                }
                Some("map") => list_map(schema, items, path, causes),
                _ => {}
            }
            if let Some(item_schema) = items_schema(schema) {
                for (i, item) in items.iter().enumerate() {
                    list_types(item_schema, item, &format!("{path}[{i}]"), depth + 1, causes);
                }
            }
        }
        _ => {}
    }
}

fn list_map(schema: &JSONSchemaProps, items: &[Value], path: &str, causes: &mut Vec<StatusCause>) {
    if let Some((i, item)) = items.iter().enumerate().find(|(_, x)| !x.is_null() && !x.is_object()) {
        let message =
            format!("Invalid value: {}: must be an object for an array of list-type map", go_value(item));
        causes.push(errors::cause("FieldValueInvalid", &format!("{path}[{i}]"), message));
        return;
    }
    let key_fields = schema.x_kubernetes_list_map_keys.as_deref().unwrap_or_default();
    // Each item's key: the object of its key fields that are set (an absent field stays absent).
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let fields = key_fields.iter().filter_map(|k| Some((k.clone(), x.get(k)?.clone())));
            Value::Object(fields.collect())
        })
        .collect();
    for i in second_occurrences(&keys) {
        causes.push(duplicate(&format!("{path}[{i}]"), &keys[i]));
    }
}

/// The indices where an item is seen for the second time (`validateListSet`).
fn second_occurrences(items: &[Value]) -> Vec<usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let times = seen.entry(canonical(item)).or_default();
        *times += 1;
        if *times == 2 {
            found.push(i);
        }
    }
    found
}

/// A value's identity for uniqueness: its JSON with numbers compared by value.
fn canonical(value: &Value) -> String {
    match value {
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f:?}")),
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k:?}:{}", canonical(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        other => other.to_string(),
    }
}

fn duplicate(path: &str, value: &Value) -> StatusCause {
    errors::cause("FieldValueDuplicate", path, format!("Duplicate value: {}", go_value(value)))
}

/// How `field.Error` prints a bad value of an unstructured object: scalars as `%v` (strings
/// quoted), maps and slices as Go's `%#v` of `map[string]interface {}` and `[]interface {}`.
fn go_value(value: &Value) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => go_sharp_v(value),
        other => value_text(other),
    }
}

fn go_sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            n.as_i64().map_or_else(|| number_text(n.as_f64().unwrap_or_default()), |i| i.to_string())
        }
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            format!("[]interface {{}}{{{}}}", items.iter().map(go_sharp_v).collect::<Vec<_>>().join(", "))
        }
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k:?}:{}", go_sharp_v(v))).collect();
            format!("map[string]interface {{}}{{{}}}", fields.join(", "))
        }
    }
}

/// Validate a value against one node of a schema (not a resource root), with field paths
/// relative to that node: how a CRD's `default` values are checked.
pub fn validate_node(schema: &JSONSchemaProps, value: &Value) -> Vec<StatusCause> {
    let mut v = Validator::default();
    v.check(schema, value, "", false, 0);
    v.causes
}

/// [`prune`] for a value at one node of a schema (not a resource root).
pub fn prune_node(schema: &JSONSchemaProps, value: &mut Value) {
    prune_value(Some(schema), value, false, 0);
}

/// Drop fields the schema does not know, as the apiserver prunes a custom resource before
/// storing it. Unknown fields under `x-kubernetes-preserve-unknown-fields` are kept (known ones
/// below them are still pruned); `apiVersion`, `kind` and `metadata` at the root and in embedded
/// resources are never pruned.
pub fn prune(schema: &JSONSchemaProps, value: &mut Value) {
    prune_value(Some(schema), value, true, 0);
}

fn prune_value(schema: Option<&JSONSchemaProps>, value: &mut Value, resource_root: bool, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    if let Some(s) = schema
        && preserves_unknown(s)
    {
        prune_known(s, value, resource_root, depth);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = schema else {
                map.clear();
                return;
            };
            let keep_resource_keys = resource_root || is_embedded(s);
            let add = additional(s);
            map.retain(|key, v| {
                if keep_resource_keys && RESOURCE_KEYS.contains(&key.as_str()) {
                    return true;
                }
                if let Some(prop) = s.properties.as_ref().and_then(|p| p.get(key)) {
                    prune_value(Some(prop), v, false, depth + 1);
                    return true;
                }
                match add {
                    Additional::Schema(a) => {
                        prune_value(Some(a), v, false, depth + 1);
                        true
                    }
                    Additional::Any => true,
                    Additional::None => false,
                }
            });
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(items_schema);
            for item in items {
                prune_value(item_schema, item, false, depth + 1);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: keep unknown keys, prune inside known ones.
fn prune_known(schema: &JSONSchemaProps, value: &mut Value, resource_root: bool, depth: usize) {
    match value {
        Value::Object(map) => {
            let keep_resource_keys = resource_root || is_embedded(schema);
            for (key, v) in map.iter_mut() {
                if keep_resource_keys && RESOURCE_KEYS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(prop) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                    prune_value(Some(prop), v, false, depth + 1);
                } else if let Additional::Schema(a) = additional(schema) {
                    prune_value(Some(a), v, false, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema) {
                for item in items {
                    if depth < DEPTH_MAX {
                        prune_known(item_schema, item, false, depth + 1);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The default to put in place of `value`, if the schema defaults it: an absent value, or a null
/// where null is not allowed.
fn default_for<'a>(schema: &'a JSONSchemaProps, value: Option<&Value>) -> Option<&'a Value> {
    let default = schema.default.as_ref().map(|d| &d.0)?;
    match value {
        None => Some(default),
        Some(Value::Null) if schema.nullable != Some(true) => Some(default),
        Some(_) => None,
    }
}

/// Apply the schema's `default` values as the apiserver does: absent properties (and non-nullable
/// nulls) of present objects get their default, then defaulting continues inside every value,
/// including defaulted ones, map values and array items. Non-nullable nulls without a default are
/// dropped first (apiextensions' `PruneNonNullableNullsWithoutDefaults`).
pub fn apply_defaults(schema: &JSONSchemaProps, value: &mut Value) {
    default_value(schema, value, 0);
}

fn default_value(schema: &JSONSchemaProps, value: &mut Value, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    match value {
        Value::Object(map) => {
            let add = additional(schema);
            map.retain(|key, v| {
                let sub = schema.properties.as_ref().and_then(|p| p.get(key)).or(match add {
                    Additional::Schema(a) => Some(a),
                    _ => None,
                });
                !(v.is_null() && sub.is_some_and(|s| s.nullable != Some(true) && s.default.is_none()))
            });
            for (key, prop) in schema.properties.iter().flatten() {
                if let Some(d) = default_for(prop, map.get(key)) {
                    map.insert(key.clone(), d.clone());
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(prop) = schema.properties.as_ref().and_then(|p| p.get(key)) {
                    default_value(prop, v, depth + 1);
                } else if let Additional::Schema(a) = add {
                    if let Some(d) = default_for(a, Some(v)) {
                        *v = d.clone();
                    }
                    default_value(a, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema) {
                for item in items.iter_mut() {
                    if let Some(d) = default_for(item_schema, Some(item)) {
                        *item = d.clone();
                    }
                    default_value(item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}
