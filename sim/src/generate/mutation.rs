//! Changes to a custom resource, valid and invalid, drawn from its schema and its current body.
//!
//! A [`Mutation`] sets (or removes) the value at one JSON pointer of the body and is sent as a
//! JSON merge patch. Pointers go through objects only: an array is always replaced whole (a merge
//! patch cannot address one item), and an object that exists is never set whole (a merge patch
//! would merge it, not replace it); its fields are mutated instead.
//!
//! Valid mutations change a scalar or an array to another valid value, grow or shrink an array
//! within its bounds, add or remove an optional field, and add a map entry. Invalid ones are
//! each labelled with the rejection the server must answer (422 Invalid, the field path and the
//! cause's reason): a wrong type (of the field, or of an array's first item), a number out of
//! range, a value not in the enum, a string too long or too short or not matching its pattern,
//! too many or too few items, and a required field removed. Boundary values come first, as in
//! Acto: the first integer past `maximum`, a string one character longer than `maxLength`.

use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use model_apiserver::schema::compiled_pattern;
use proptest::prelude::*;
use proptest::strategy::Union;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::schema::{
    BOUNDARY_LEN_MAX, DEPTH_MAX, Options, is_int_or_string, is_not_generated_root_key, item_counts,
    items_schema, map_values_schema, node,
};

/// Most places of one body considered for a mutation (fields, absent fields, new map keys).
pub const SITES_MAX: usize = 256;

/// A change to one field of a custom resource's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mutation {
    /// A JSON pointer from the object's root through objects only: `/spec/replicas`.
    pub path: String,
    /// The new value; `null` removes the field.
    pub value: Option<Value>,
    /// What kind of change it is.
    pub kind: MutationKind,
    /// How the server must answer it.
    pub expect: Expectation,
}

/// The kinds of mutation: the first six are valid, the others invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MutationKind {
    /// A scalar or an array set to another valid value.
    SetValue,
    /// An absent optional field added with a valid value.
    AddField,
    /// An optional field removed.
    RemoveField,
    /// A map (`additionalProperties`) entry added.
    AddKey,
    /// An array grown by one valid item, within `maxItems`.
    GrowArray,
    /// An array shrunk by one item, within `minItems`.
    ShrinkArray,
    /// A value of another JSON type.
    WrongType,
    /// A number just past `minimum` or `maximum`.
    OutOfRange,
    /// A value outside the `enum`.
    NotInEnum,
    /// A string one character longer than `maxLength`.
    TooLong,
    /// A string one character shorter than `minLength`.
    TooShort,
    /// A string that does not match the `pattern`.
    PatternMismatch,
    /// An array one item longer than `maxItems`.
    TooManyItems,
    /// An array one item shorter than `minItems`.
    TooFewItems,
    /// A required field (without a default) removed.
    MissingRequired,
    /// An array whose first item has another JSON type than its items' schema allows.
    WrongItemType,
}

impl MutationKind {
    /// The reason of the `StatusCause` that the server reports for an invalid kind.
    pub fn cause_reason(self) -> Option<&'static str> {
        Some(match self {
            MutationKind::SetValue
            | MutationKind::AddField
            | MutationKind::RemoveField
            | MutationKind::AddKey
            | MutationKind::GrowArray
            | MutationKind::ShrinkArray => return None,
            MutationKind::WrongType | MutationKind::WrongItemType => "FieldValueTypeInvalid",
            MutationKind::NotInEnum => "FieldValueNotSupported",
            MutationKind::TooLong => "FieldValueTooLong",
            MutationKind::TooManyItems => "FieldValueTooMany",
            MutationKind::MissingRequired => "FieldValueRequired",
            MutationKind::OutOfRange
            | MutationKind::TooShort
            | MutationKind::PatternMismatch
            | MutationKind::TooFewItems => "FieldValueInvalid",
        })
    }
}

/// How the server must answer a mutation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Expectation {
    /// Accepted.
    Accept,
    /// Rejected with 422 Invalid and a cause for `field` with reason `cause`.
    #[serde(rename_all = "camelCase")]
    Reject {
        /// The field path the cause names: `spec.replicas`.
        field: String,
        /// The cause's reason: `FieldValueTypeInvalid`.
        cause: String,
    },
}

impl Mutation {
    fn new(segments: &[String], value: Option<Value>, kind: MutationKind) -> Self {
        let field = match kind {
            // The cause names the item: `spec.tags[0]`.
            MutationKind::WrongItemType => format!("{}[0]", segments.join(".")),
            _ => segments.join("."),
        };
        let expect = match kind.cause_reason() {
            None => Expectation::Accept,
            Some(cause) => Expectation::Reject { field, cause: cause.to_owned() },
        };
        Mutation { path: pointer(segments), value, kind, expect }
    }

    /// Whether the server must accept it.
    pub fn is_valid(&self) -> bool {
        self.expect == Expectation::Accept
    }

    /// The pointer's segments, unescaped (`~1` is `/`, `~0` is `~`).
    pub fn segments(&self) -> Vec<String> {
        self.path.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~")).collect()
    }

    /// The JSON merge patch that makes the change: the value nested under the pointer's
    /// segments (`null` to remove).
    pub fn merge_patch(&self) -> Value {
        let leaf = self.value.clone().unwrap_or(Value::Null);
        self.segments()
            .into_iter()
            .rev()
            .fold(leaf, |inner, key| Value::Object(Map::from_iter([(key, inner)])))
    }

    /// `body` with the merge patch applied (before the server's pruning and defaulting).
    pub fn applied_to(&self, body: &Value) -> Value {
        let mut result = body.clone();
        json_patch::merge(&mut result, &self.merge_patch());
        result
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = serde_json::to_value(self.kind).ok().and_then(|k| k.as_str().map(str::to_owned));
        let kind = kind.unwrap_or_default();
        let value = self.value.as_ref().map_or_else(|| "removed".to_owned(), Value::to_string);
        match &self.expect {
            Expectation::Accept => write!(f, "{kind} {} = {value} (valid)", self.path),
            Expectation::Reject { field, cause } => {
                write!(f, "{kind} {} = {value} (invalid: expect 422 Invalid, {cause} at {field})", self.path)
            }
        }
    }
}

/// RFC 6901 pointer of `segments`.
fn pointer(segments: &[String]) -> String {
    segments.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
}

/// A place in the body where a mutation can go.
struct Site<'a> {
    segments: Vec<String>,
    schema: &'a JSONSchemaProps,
    state: SiteState<'a>,
    /// Whether the parent object may lose a field (it has more than `minProperties`).
    removable: bool,
}

enum SiteState<'a> {
    /// The field exists with this value.
    Present { value: &'a Value, required: bool },
    /// A property the schema declares, absent.
    Absent,
    /// A new key of a map (`additionalProperties`), not yet chosen.
    NewKey,
}

/// Every site of `body` under `schema` (the resource root), objects walked depth first, at most
/// [`SITES_MAX`].
fn sites<'a>(schema: &'a JSONSchemaProps, body: &'a Value) -> Vec<Site<'a>> {
    let mut out = Vec::new();
    if let Value::Object(map) = body {
        collect(schema, map, &[], 0, &mut out);
    }
    out.truncate(SITES_MAX);
    out
}

fn collect<'a>(
    schema: &'a JSONSchemaProps,
    map: &'a Map<String, Value>,
    segments: &[String],
    depth: usize,
    out: &mut Vec<Site<'a>>,
) {
    if depth > DEPTH_MAX || out.len() >= SITES_MAX {
        return;
    }
    let at = |key: &str| {
        let mut s = segments.to_vec();
        s.push(key.to_owned());
        s
    };
    let required: Vec<&str> = schema.required.iter().flatten().map(String::as_str).collect();
    let len = i64::try_from(map.len()).unwrap_or(i64::MAX);
    let removable = schema.min_properties.is_none_or(|m| len > m);
    // A parent at `maxProperties` takes no new field: adding one is left out altogether.
    let growable = schema.max_properties.is_none_or(|m| len < m);
    let site = |segments: Vec<String>, schema: &'a JSONSchemaProps, state: SiteState<'a>| Site {
        segments,
        schema,
        state,
        removable,
    };
    for (key, prop) in schema.properties.iter().flatten() {
        if depth == 0 && is_not_generated_root_key(key) {
            continue;
        }
        match map.get(key) {
            Some(value) => {
                let required = required.contains(&key.as_str());
                out.push(site(at(key), prop, SiteState::Present { value, required }));
                if let Value::Object(inner) = value {
                    collect(prop, inner, &at(key), depth + 1, out);
                }
            }
            None if growable => out.push(site(at(key), prop, SiteState::Absent)),
            None => {}
        }
    }
    if let Some(values) = map_values_schema(schema) {
        for (key, value) in map {
            out.push(site(at(key), values, SiteState::Present { value, required: false }));
            if let Value::Object(inner) = value {
                collect(values, inner, &at(key), depth + 1, out);
            }
        }
        if growable {
            out.push(site(segments.to_vec(), values, SiteState::NewKey));
        }
    }
}

/// Valid values for mutations: never null (a merge patch would remove the field instead).
const VALUES: Options = Options { nulls: false };

/// Mutations of `body` (the current body of an object, under the resource root `schema`) that
/// the server must accept; `None` when there is none to make.
pub fn valid_mutations(schema: &JSONSchemaProps, body: &Value) -> Option<BoxedStrategy<Mutation>> {
    let mut choices = Vec::new();
    for site in sites(schema, body) {
        valid_at(&site, body, &mut choices);
    }
    (!choices.is_empty()).then(|| Union::new(choices).boxed())
}

/// Mutations of `body` that the server must reject with 422 Invalid, each labelled with the
/// field path and cause; `None` when the schema constrains nothing that can be broken.
pub fn invalid_mutations(schema: &JSONSchemaProps, body: &Value) -> Option<BoxedStrategy<Mutation>> {
    let mut choices = Vec::new();
    for site in sites(schema, body) {
        invalid_at(&site, &mut choices);
    }
    (!choices.is_empty()).then(|| Union::new(choices).boxed())
}

/// Both: valid mutations of `body`, and invalid ones about a third of the time (when there are
/// both); `None` when there is neither.
pub fn mutations(schema: &JSONSchemaProps, body: &Value) -> Option<BoxedStrategy<Mutation>> {
    match (valid_mutations(schema, body), invalid_mutations(schema, body)) {
        (Some(valid), Some(invalid)) => Some(prop_oneof![2 => valid, 1 => invalid].boxed()),
        (valid, invalid) => valid.or(invalid),
    }
}

fn depth_of(segments: &[String]) -> usize {
    segments.len()
}

fn valid_at(site: &Site<'_>, body: &Value, out: &mut Vec<BoxedStrategy<Mutation>>) {
    let segments = site.segments.clone();
    let depth = depth_of(&segments);
    match &site.state {
        SiteState::Present { value, required } => {
            if !value.is_object() {
                let s = segments.clone();
                let set = node(site.schema, VALUES, depth);
                out.push(set.prop_map(move |v| Mutation::new(&s, Some(v), MutationKind::SetValue)).boxed());
            }
            if let Value::Array(items) = value {
                resize_array(site, items, out);
            }
            if !required && site.removable {
                out.push(Just(Mutation::new(&segments, None, MutationKind::RemoveField)).boxed());
            }
        }
        SiteState::Absent => {
            let add = node(site.schema, VALUES, depth);
            out.push(
                add.prop_map(move |v| Mutation::new(&segments, Some(v), MutationKind::AddField)).boxed(),
            );
        }
        SiteState::NewKey => {
            let existing = lookup(body, &segments).and_then(Value::as_object).cloned().unwrap_or_default();
            let key = proptest::string::string_regex("[a-z][a-z0-9]{0,7}")
                .map(|s| s.boxed())
                .unwrap_or_else(|_| Just("key".to_owned()).boxed())
                .prop_filter("a new key", move |k| !existing.contains_key(k));
            let value = node(site.schema, VALUES, depth + 1);
            out.push(
                (key, value)
                    .prop_map(move |(k, v)| {
                        let mut s = segments.clone();
                        s.push(k);
                        Mutation::new(&s, Some(v), MutationKind::AddKey)
                    })
                    .boxed(),
            );
        }
    }
}

/// The value at `segments` of `body`.
fn lookup<'a>(body: &'a Value, segments: &[String]) -> Option<&'a Value> {
    segments.iter().try_fold(body, |v, key| v.get(key))
}

/// Grow by one valid item at the end, or drop one item, within `minItems`/`maxItems`.
fn resize_array(site: &Site<'_>, items: &[Value], out: &mut Vec<BoxedStrategy<Mutation>>) {
    let Some(item_schema) = items_schema(site.schema) else {
        return;
    };
    let (min, max) = item_counts(site.schema);
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    if max.is_none_or(|m| len < m) && len < BOUNDARY_LEN_MAX {
        let (segments, items) = (site.segments.clone(), items.to_vec());
        let item = node(item_schema, VALUES, depth_of(&segments) + 1);
        out.push(
            item.prop_map(move |v| {
                let mut grown = items.clone();
                grown.push(v);
                Mutation::new(&segments, Some(Value::Array(grown)), MutationKind::GrowArray)
            })
            .boxed(),
        );
    }
    if len > min {
        let (segments, items) = (site.segments.clone(), items.to_vec());
        out.push(
            (0..items.len())
                .prop_map(move |i| {
                    let mut shrunk = items.clone();
                    shrunk.remove(i);
                    Mutation::new(&segments, Some(Value::Array(shrunk)), MutationKind::ShrinkArray)
                })
                .boxed(),
        );
    }
}

/// The segments of an invalid mutation at `site`: a new map key gets a fixed one.
fn invalid_segments(site: &Site<'_>) -> Vec<String> {
    let mut segments = site.segments.clone();
    if let SiteState::NewKey = site.state {
        segments.push("invalidkey".to_owned());
    }
    segments
}

fn invalid_at(site: &Site<'_>, out: &mut Vec<BoxedStrategy<Mutation>>) {
    let schema = site.schema;
    let segments = invalid_segments(site);
    let mut push = |value: Value, kind: MutationKind| {
        out.push(Just(Mutation::new(&segments, Some(value), kind)).boxed());
    };
    if let Some(value) = wrong_type(schema) {
        push(value, MutationKind::WrongType);
    }
    for value in out_of_range(schema) {
        push(value, MutationKind::OutOfRange);
    }
    if let Some(value) = not_in_enum(schema) {
        push(value, MutationKind::NotInEnum);
    }
    let stringy = schema.type_.as_deref() == Some("string") || is_int_or_string(schema);
    if stringy && schema.enum_.is_none() {
        if let Some(max) = schema.max_length.filter(|m| *m < BOUNDARY_LEN_MAX * 64) {
            push(Value::String("a".repeat(usize::try_from(max + 1).unwrap_or(0))), MutationKind::TooLong);
        }
        if let Some(min) = schema.min_length.filter(|m| *m > 0 && *m <= BOUNDARY_LEN_MAX * 64) {
            push(Value::String("a".repeat(usize::try_from(min - 1).unwrap_or(0))), MutationKind::TooShort);
        }
        if let Some(value) = schema.pattern.as_deref().and_then(pattern_mismatch) {
            push(Value::String(value), MutationKind::PatternMismatch);
        }
    }
    if schema.type_.as_deref() == Some("array") {
        items_out_of_bounds(schema, &segments, out);
        if let Some(bad) = items_schema(schema).and_then(wrong_type) {
            // The current items after a bad first one, so that only the item's type is wrong.
            let mut items = match site.state {
                SiteState::Present { value: Value::Array(items), .. } => items.clone(),
                _ => Vec::new(),
            };
            match items.first_mut() {
                Some(first) => *first = bad,
                None => items.push(bad),
            }
            out.push(
                Just(Mutation::new(&segments, Some(Value::Array(items)), MutationKind::WrongItemType))
                    .boxed(),
            );
        }
    }
    if let SiteState::Present { required: true, .. } = site.state
        && schema.default.is_none()
    {
        out.push(Just(Mutation::new(&site.segments, None, MutationKind::MissingRequired)).boxed());
    }
}

/// A value of a JSON type the node does not allow (none for untyped nodes).
fn wrong_type(schema: &JSONSchemaProps) -> Option<Value> {
    if is_int_or_string(schema) {
        return Some(Value::Bool(true));
    }
    Some(match schema.type_.as_deref()? {
        "string" => Value::from(12345),
        "integer" => Value::from("not-an-integer"),
        "number" => Value::from("not-a-number"),
        "boolean" => Value::from("not-a-boolean"),
        "array" => Value::from("not-an-array"),
        "object" => Value::from("not-an-object"),
        _ => return None,
    })
}

/// The first values past each bound: just below `minimum`, just above `maximum`.
fn out_of_range(schema: &JSONSchemaProps) -> Vec<Value> {
    let integral = schema.type_.as_deref() == Some("integer") || is_int_or_string(schema);
    if !integral && schema.type_.as_deref() != Some("number") {
        return Vec::new();
    }
    let limit = (1_i64 << 53) as f64;
    let mut values = Vec::new();
    if let Some(min) = schema.minimum.filter(|m| m.abs() < limit) {
        let exclusive = schema.exclusive_minimum == Some(true);
        let below = if integral {
            Value::from(if exclusive { min.floor() as i64 } else { min.ceil() as i64 - 1 })
        } else {
            Value::from(if exclusive { min } else { min - 1.0 })
        };
        values.push(below);
    }
    if let Some(max) = schema.maximum.filter(|m| m.abs() < limit) {
        let exclusive = schema.exclusive_maximum == Some(true);
        let above = if integral {
            Value::from(if exclusive { max.ceil() as i64 } else { max.floor() as i64 + 1 })
        } else {
            Value::from(if exclusive { max } else { max + 1.0 })
        };
        values.push(above);
    }
    values
}

/// A value of the node's type that is not in its `enum`.
fn not_in_enum(schema: &JSONSchemaProps) -> Option<Value> {
    let allowed: Vec<&Value> = schema.enum_.as_ref()?.iter().map(|v| &v.0).collect();
    let candidate = match schema.type_.as_deref() {
        Some("string") => {
            let mut s = "not-in-enum".to_owned();
            // Each round makes a longer string, so at most `allowed.len()` rounds collide.
            for _ in 0..=allowed.len() {
                if !allowed.iter().any(|v| v.as_str() == Some(s.as_str())) {
                    break;
                }
                s.push('x');
            }
            Value::String(s)
        }
        Some("integer") => {
            let max = allowed.iter().filter_map(|v| v.as_i64()).max().unwrap_or(0);
            Value::from(max.saturating_add(1))
        }
        _ => return None,
    };
    (!allowed.contains(&&candidate)).then_some(candidate)
}

/// A string that does not match `pattern` (none when the pattern is invalid, which the server
/// answers differently, or when every candidate matches).
fn pattern_mismatch(pattern: &str) -> Option<String> {
    let regex = compiled_pattern(pattern).ok()?;
    const CANDIDATES: [&str; 8] = ["", "-", "!", "A", "0", " ", "~not matching~", "ZZ__99"];
    CANDIDATES.iter().find(|c| !regex.is_match(c)).map(|c| (*c).to_owned())
}

/// Arrays one item past `maxItems` or short of `minItems`, of valid items.
fn items_out_of_bounds(
    schema: &JSONSchemaProps,
    segments: &[String],
    out: &mut Vec<BoxedStrategy<Mutation>>,
) {
    let Some(item_schema) = items_schema(schema) else {
        return;
    };
    let (min, max) = item_counts(schema);
    let item = node(item_schema, VALUES, depth_of(segments) + 1);
    let mut push = |len: i64, kind: MutationKind| {
        let segments = segments.to_vec();
        let len = usize::try_from(len).unwrap_or(0);
        out.push(
            proptest::collection::vec(item.clone(), len)
                .prop_map(move |items| Mutation::new(&segments, Some(Value::Array(items)), kind))
                .boxed(),
        );
    };
    if let Some(max) = max.filter(|m| *m < BOUNDARY_LEN_MAX) {
        push(max + 1, MutationKind::TooManyItems);
    }
    if min > 0 {
        push(min - 1, MutationKind::TooFewItems);
    }
}
