//! Values valid under a structural schema, as proptest strategies.
//!
//! Every keyword that `model_apiserver::schema::validate` checks is honoured: `type`, `enum`,
//! `nullable`, `minimum`/`maximum` (and their exclusive forms), `multipleOf`,
//! `minLength`/`maxLength`, `pattern`, `items`/`minItems`/`maxItems`, `properties`/`required`,
//! `additionalProperties`, `minProperties`/`maxProperties`, `x-kubernetes-int-or-string`,
//! `x-kubernetes-preserve-unknown-fields` (small arbitrary JSON) and
//! `x-kubernetes-embedded-resource`. As Acto does, boundary values (the minimum, the maximum, the
//! shortest and the longest allowed) are drawn more often than their share of the range.
//!
//! An unsatisfiable schema (`minimum` above `maximum`, an invalid `pattern`) gives values that
//! fail validation, which is what the server does with every value for it.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use model_apiserver::schema::compiled_pattern;
use proptest::prelude::*;
use proptest::strategy::Union;
use serde_json::{Map, Number, Value};

/// Deepest object/array nesting generated; below it, objects get only their required
/// properties and arrays only their minimum number of items.
pub const DEPTH_MAX: usize = 6;
/// Longest generated string beyond `minLength` (unless `maxLength` is the boundary drawn).
pub const STRING_LEN_SPAN: i64 = 12;
/// A `maxLength` (or `maxItems`) above this is not drawn as a boundary value: values stay small.
pub const BOUNDARY_LEN_MAX: i64 = 64;
/// Most items in a generated array beyond `minItems` (unless `maxItems` is the boundary drawn).
pub const ARRAY_LEN_SPAN: i64 = 3;
/// Most keys in a generated map (`additionalProperties`) or in preserved unknown fields.
pub const MAP_LEN_MAX: usize = 3;
/// Half the width of the integer range drawn when the schema sets no bound.
pub const INTEGER_SPAN: i64 = 1_000;
/// Numbers are drawn on a grid of 1/4 (exact in binary, so JSON round-trips them unchanged).
const NUMBER_GRID: f64 = 4.0;
/// Integers stay within what a float64 (Kubernetes' JSON decoding) holds exactly.
const SAFE_INTEGER_MAX: i64 = (1 << 53) - 1;
/// The keys of a resource's root that the server governs itself, and `status`, which a write to
/// the main resource does not set when the status subresource is on.
const NOT_GENERATED_ROOT_KEYS: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

/// How values are drawn.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Whether `nullable` values may be null. A JSON merge patch turns a null into "remove the
    /// field", so the values of mutations never hold one.
    pub nulls: bool,
}

/// Values valid under `schema` (one node of a structural schema), nulls included where the
/// schema is `nullable`.
pub fn value_strategy(schema: &JSONSchemaProps) -> BoxedStrategy<Value> {
    node(schema, Options { nulls: true }, 0)
}

/// The body of a custom resource valid under its version's `openAPIV3Schema` (`schema` is the
/// root): every root property except `apiVersion`, `kind`, `metadata` and `status`, which the
/// caller or the server set.
pub fn body_strategy(schema: &JSONSchemaProps) -> BoxedStrategy<Value> {
    body(schema, Options { nulls: true })
}

pub(crate) fn body(schema: &JSONSchemaProps, options: Options) -> BoxedStrategy<Value> {
    object(schema, options, 0, &NOT_GENERATED_ROOT_KEYS)
}

/// Whether `key` at the root of a resource is left out of generated bodies and mutations.
pub(crate) fn is_not_generated_root_key(key: &str) -> bool {
    NOT_GENERATED_ROOT_KEYS.contains(&key)
}

pub(crate) fn node(schema: &JSONSchemaProps, options: Options, depth: usize) -> BoxedStrategy<Value> {
    let strategy = non_null(schema, options, depth);
    if options.nulls && schema.nullable == Some(true) {
        prop_oneof![1 => Just(Value::Null), 9 => strategy].boxed()
    } else {
        strategy
    }
}

fn non_null(schema: &JSONSchemaProps, options: Options, depth: usize) -> BoxedStrategy<Value> {
    if let Some(allowed) = schema.enum_.as_ref().filter(|e| !e.is_empty()) {
        // A null member is drawn only where nulls are (a merge patch would remove the field).
        let values: Vec<Value> =
            allowed.iter().map(|v| v.0.clone()).filter(|v| options.nulls || !v.is_null()).collect();
        if values.is_empty() {
            return Just(Value::Null).boxed();
        }
        return proptest::sample::select(values).boxed();
    }
    if is_int_or_string(schema) {
        return prop_oneof![integer(schema).prop_map(Value::from), string(schema).prop_map(Value::from)]
            .boxed();
    }
    match schema.type_.as_deref() {
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("integer") => integer(schema).prop_map(Value::from).boxed(),
        Some("number") => number(schema),
        Some("string") => string(schema).prop_map(Value::String).boxed(),
        Some("array") => array(schema, options, depth),
        Some("object") => object(schema, options, depth, &[]),
        // Untyped: only valid under x-kubernetes-preserve-unknown-fields, where anything goes.
        _ if schema.properties.is_some() => object(schema, options, depth, &[]),
        _ => arbitrary_json(options),
    }
}

/// Whether the node is `x-kubernetes-int-or-string`.
pub(crate) fn is_int_or_string(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_int_or_string == Some(true)
}

/// The schema of an array's items (structural schemas have exactly one).
pub(crate) fn items_schema(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.items.as_ref()? {
        JSONSchemaPropsOrArray::Schema(s) => Some(s),
        JSONSchemaPropsOrArray::Schemas(v) => v.first(),
    }
}

/// The schema of a map's values (`additionalProperties` with a schema).
pub(crate) fn map_values_schema(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.additional_properties.as_ref()? {
        JSONSchemaPropsOrBool::Schema(s) => Some(s),
        JSONSchemaPropsOrBool::Bool(_) => None,
    }
}

/// The valid integers, inclusive; `lo > hi` when there are none.
fn integer_bounds(schema: &JSONSchemaProps) -> (i64, i64) {
    let exclusive_min = schema.exclusive_minimum == Some(true);
    let exclusive_max = schema.exclusive_maximum == Some(true);
    // `as` saturates float-to-integer conversions, so huge bounds clamp instead of wrapping.
    let lo = schema.minimum.map(|m| if exclusive_min { m.floor() as i64 + 1 } else { m.ceil() as i64 });
    let hi = schema.maximum.map(|m| if exclusive_max { m.ceil() as i64 - 1 } else { m.floor() as i64 });
    let (lo, hi) = match (lo, hi) {
        (Some(lo), Some(hi)) => (lo, hi),
        (Some(lo), None) => (lo, lo.saturating_add(2 * INTEGER_SPAN)),
        (None, Some(hi)) => (hi.saturating_sub(2 * INTEGER_SPAN), hi),
        (None, None) => (-INTEGER_SPAN, INTEGER_SPAN),
    };
    (lo.max(-SAFE_INTEGER_MAX), hi.min(SAFE_INTEGER_MAX))
}

/// Integers within the bounds (and multiples of `multipleOf`), boundaries preferred.
fn integer(schema: &JSONSchemaProps) -> BoxedStrategy<i64> {
    let (lo, hi) = integer_bounds(schema);
    if lo > hi {
        return Just(lo).boxed();
    }
    match schema.multiple_of.filter(|f| *f > 0.0) {
        Some(factor) if factor.fract() == 0.0 && factor <= SAFE_INTEGER_MAX as f64 => {
            let factor = factor as i64;
            let (k_lo, k_hi) =
                (lo.div_euclid(factor) + i64::from(lo.rem_euclid(factor) != 0), hi.div_euclid(factor));
            if k_lo > k_hi {
                return Just(lo).boxed();
            }
            prop_oneof![1 => Just(k_lo), 1 => Just(k_hi), 4 => k_lo..=k_hi]
                .prop_map(move |k| k * factor)
                .boxed()
        }
        Some(factor) => (lo..=hi)
            .prop_filter("a multiple of multipleOf", move |n| (*n as f64 / factor).fract() == 0.0)
            .boxed(),
        None => prop_oneof![1 => Just(lo), 1 => Just(hi), 4 => lo..=hi].boxed(),
    }
}

/// Numbers within the bounds on a grid of 1/4 (or multiples of `multipleOf`), boundaries
/// preferred.
fn number(schema: &JSONSchemaProps) -> BoxedStrategy<Value> {
    let grid = match schema.multiple_of.filter(|f| *f > 0.0) {
        Some(factor) => factor,
        None => 1.0 / NUMBER_GRID,
    };
    let exclusive_min = schema.exclusive_minimum == Some(true);
    let exclusive_max = schema.exclusive_maximum == Some(true);
    let span = (2 * INTEGER_SPAN) as f64 / grid;
    let lo = schema.minimum.map(|m| if exclusive_min { (m / grid).floor() + 1.0 } else { (m / grid).ceil() });
    let hi = schema.maximum.map(|m| if exclusive_max { (m / grid).ceil() - 1.0 } else { (m / grid).floor() });
    let (lo, hi) = match (lo, hi) {
        (Some(lo), Some(hi)) => (lo, hi),
        (Some(lo), None) => (lo, lo + span),
        (None, Some(hi)) => (hi - span, hi),
        (None, None) => (-span / 2.0, span / 2.0),
    };
    let limit = SAFE_INTEGER_MAX as f64;
    let (lo, hi) = (lo.max(-limit) as i64, hi.min(limit) as i64);
    let to_value = move |k: i64| Number::from_f64(k as f64 * grid).map_or(Value::Null, Value::Number);
    if lo > hi {
        return Just(to_value(lo)).boxed();
    }
    let steps = prop_oneof![1 => Just(lo), 1 => Just(hi), 4 => lo..=hi];
    match schema.multiple_of.filter(|f| *f > 0.0) {
        // k * factor need not divide back exactly in floating point; keep the ones that do.
        Some(factor) => steps
            .prop_map(to_value)
            .prop_filter("a multiple of multipleOf", move |v| {
                v.as_f64().is_some_and(|n| (n / factor).fract() == 0.0)
            })
            .boxed(),
        None => steps.prop_map(to_value).boxed(),
    }
}

/// The allowed string lengths in characters: (minimum, maximum if bounded).
fn string_lengths(schema: &JSONSchemaProps) -> (i64, Option<i64>) {
    (schema.min_length.unwrap_or(0).max(0), schema.max_length)
}

/// Strings of the allowed lengths matching `pattern`, shortest and longest preferred.
fn string(schema: &JSONSchemaProps) -> BoxedStrategy<String> {
    let (lo, max) = string_lengths(schema);
    let hi = max.unwrap_or(i64::MAX).min(lo.saturating_add(STRING_LEN_SPAN));
    if let Some(pattern) = &schema.pattern {
        return patterned(pattern, lo, max);
    }
    if lo > hi {
        return Just(String::new()).boxed();
    }
    let plain = |lo: i64, hi: i64| {
        proptest::string::string_regex(&format!("[a-z0-9]{{{lo},{hi}}}"))
            .map(|s| s.boxed())
            .unwrap_or_else(|_| Just(String::new()).boxed())
    };
    let mut choices = vec![(1, plain(lo, lo)), (4, plain(lo, hi))];
    if let Some(max) = max.filter(|m| *m > hi && *m <= BOUNDARY_LEN_MAX) {
        choices.push((1, plain(max, max)));
    }
    Union::new_weighted(choices).boxed()
}

/// `pattern` with its leading `^` and trailing `$` removed: proptest cannot generate anchors,
/// and a string that matches the rest whole matches the anchored pattern too.
fn unanchored(pattern: &str) -> &str {
    let pattern = pattern.strip_prefix('^').unwrap_or(pattern);
    match pattern.strip_suffix('$') {
        Some(rest) if !rest.ends_with('\\') => rest,
        _ => pattern,
    }
}

/// Strings matching `pattern` (checked with the server's own compiled regex, which is compiled
/// once for the process: this runs for every seed of a generated workload) within the length
/// bounds.
fn patterned(pattern: &str, lo: i64, max: Option<i64>) -> BoxedStrategy<String> {
    let Ok(regex) = compiled_pattern(pattern) else {
        // No value is valid: the server fails every value against an invalid pattern.
        return Just(String::new()).boxed();
    };
    let source = match proptest::string::string_regex(unanchored(pattern)) {
        Ok(strategy) => strategy.boxed(),
        // Lookarounds or inner anchors: draw plain strings and keep the matching ones.
        Err(_) => proptest::string::string_regex("[a-zA-Z0-9._-]{0,16}")
            .map(|s| s.boxed())
            .unwrap_or_else(|_| Just(String::new()).boxed()),
    };
    source
        .prop_filter("matches the pattern within the length bounds", move |s| {
            let len = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
            len >= lo && max.is_none_or(|m| len <= m) && regex.is_match(s)
        })
        .boxed()
}

/// The allowed item counts: (minimum, maximum if bounded).
pub(crate) fn item_counts(schema: &JSONSchemaProps) -> (i64, Option<i64>) {
    (schema.min_items.unwrap_or(0).max(0), schema.max_items)
}

/// Arrays of valid items, of the allowed lengths, shortest and longest preferred.
fn array(schema: &JSONSchemaProps, options: Options, depth: usize) -> BoxedStrategy<Value> {
    let (lo, max) = item_counts(schema);
    let item = match items_schema(schema) {
        Some(items) => node(items, options, depth + 1),
        None => arbitrary_json(options),
    };
    let hi =
        if depth >= DEPTH_MAX { lo } else { max.unwrap_or(i64::MAX).min(lo.saturating_add(ARRAY_LEN_SPAN)) };
    let sized = |lo: i64, hi: i64| {
        let (lo, hi) = (usize::try_from(lo).unwrap_or(0), usize::try_from(hi).unwrap_or(0));
        proptest::collection::vec(item.clone(), lo..=hi.max(lo)).prop_map(Value::Array).boxed()
    };
    let mut choices = vec![(1, sized(lo, lo)), (4, sized(lo, hi))];
    if let Some(max) = max.filter(|m| *m > hi && *m <= BOUNDARY_LEN_MAX && depth < DEPTH_MAX) {
        choices.push((1, sized(max, max)));
    }
    Union::new_weighted(choices).boxed()
}

/// Keys of generated maps and unknown fields: short, lowercase, never a known property.
fn map_key() -> BoxedStrategy<String> {
    proptest::string::string_regex("[a-z][a-z0-9]{0,7}")
        .map(|s| s.boxed())
        .unwrap_or_else(|_| Just("key".to_owned()).boxed())
}

/// Objects with every required property, some optional ones, map entries under
/// `additionalProperties` and, under `x-kubernetes-preserve-unknown-fields`, some unknown fields.
/// `skipped` keys are never generated (the resource root's own keys).
fn object(
    schema: &JSONSchemaProps,
    options: Options,
    depth: usize,
    skipped: &'static [&'static str],
) -> BoxedStrategy<Value> {
    let required: Vec<&str> = schema.required.iter().flatten().map(String::as_str).collect();
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (key, prop) in schema.properties.iter().flatten() {
        if skipped.contains(&key.as_str()) {
            continue;
        }
        let key_owned = key.clone();
        let value = node(prop, options, depth + 1).prop_map(move |v| Some((key_owned.clone(), v)));
        if required.contains(&key.as_str()) {
            fields.push(value.boxed());
        } else if depth < DEPTH_MAX {
            fields.push(prop_oneof![1 => Just(None), 1 => value].boxed());
        }
    }
    let extra_values = if depth >= DEPTH_MAX {
        None
    } else if let Some(values) = map_values_schema(schema) {
        Some(node(values, options, depth + 1))
    } else if schema.x_kubernetes_preserve_unknown_fields == Some(true)
        || schema.additional_properties == Some(JSONSchemaPropsOrBool::Bool(true))
    {
        Some(arbitrary_json(options))
    } else {
        None
    };
    let extras = match extra_values {
        Some(values) => proptest::collection::btree_map(map_key(), values, 0..=MAP_LEN_MAX).boxed(),
        None => Just(BTreeMap::new()).boxed(),
    };
    let embedded = schema.x_kubernetes_embedded_resource == Some(true);
    let (min_props, max_props) = (schema.min_properties, schema.max_properties);
    (fields, extras)
        .prop_map(move |(fields, extras)| {
            let mut map = Map::new();
            if embedded {
                // An embedded resource needs a non-empty apiVersion and kind.
                map.insert("apiVersion".to_owned(), Value::from("v1"));
                map.insert("kind".to_owned(), Value::from("ConfigMap"));
            }
            for (key, value) in fields.into_iter().flatten() {
                map.insert(key, value);
            }
            for (key, value) in extras {
                map.entry(key).or_insert(value);
            }
            Value::Object(map)
        })
        .prop_filter("within minProperties and maxProperties", move |v| {
            let len = v.as_object().map_or(0, Map::len) as i64;
            min_props.is_none_or(|m| len >= m) && max_props.is_none_or(|m| len <= m)
        })
        .boxed()
}

/// Small arbitrary JSON (for `x-kubernetes-preserve-unknown-fields`): two levels at most.
fn arbitrary_json(options: Options) -> BoxedStrategy<Value> {
    let mut leaves = vec![
        any::<bool>().prop_map(Value::Bool).boxed(),
        (-INTEGER_SPAN..=INTEGER_SPAN).prop_map(Value::from).boxed(),
        proptest::string::string_regex("[a-z0-9]{0,8}")
            .map(|s| s.prop_map(Value::String).boxed())
            .unwrap_or_else(|_| Just(Value::from("")).boxed()),
    ];
    if options.nulls {
        leaves.push(Just(Value::Null).boxed());
    }
    let leaf = Union::new(leaves);
    leaf.prop_recursive(2, 8, MAP_LEN_MAX as u32, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..=MAP_LEN_MAX).prop_map(Value::Array),
            proptest::collection::btree_map(map_key(), inner, 0..=MAP_LEN_MAX)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}
