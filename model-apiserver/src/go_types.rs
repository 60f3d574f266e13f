//! A built-in object as its Go type encodes it.
//!
//! kube-apiserver decodes every written built-in object into its Go struct, and every answer,
//! watch event and stored copy is that struct encoded by encoding/json. So what a client reads
//! follows each field's Go declaration, not what it wrote:
//! - a field tagged `omitempty` is left out when empty: `""`, `0`, `false`, an empty or `null`
//!   list or map, a `null` pointer (a ConfigMap written with `data: {}` reads back without
//!   `data`, a container with `args: []` without `args`, a Pod with `hostNetwork: false` without
//!   `hostNetwork`);
//! - a field without `omitempty` is there even when empty: `null` for a list, map or pointer
//!   never set (a Role without rules reads `rules: null`), the zero of a number, string or bool;
//! - a struct that is not a pointer is always there, `{}` at least (`lastState: {}` of a
//!   container status, `status: {loadBalancer: {}}` of a Service);
//! - a zero `metav1.Time` is `null` (a pod template's `metadata: {creationTimestamp: null}`, a
//!   condition's `lastProbeTime: null`), as is an empty `runtime.RawExtension`.
//!
//! A controller that writes `Some(vec![])` and compares what it reads back with what it wrote
//! sees `None` on a cluster, and updates again forever; here too. Go's own comparison
//! (`equality.Semantic.DeepEqual`) takes nil and empty as equal, so the built-ins never notice.
//!
//! The facts come from the Go sources (`json` tags and field types of k8s.io/api,
//! apimachinery's meta/v1 and apiextensions-apiserver), read by `tools/go_types.py` into
//! `go_types/table.rs`. Values of types with their own JSON encoding (quantities, int-or-strings, raw
//! JSON) are left as written; a field the Go type does not have is left too (decoding drops or
//! refuses unknown fields before this runs). Custom resources are not Go types and keep what
//! was written.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::cmp::Ordering;

use serde_json::{Map, Value};

mod table;

/// A scalar's JSON type, for its zero value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scalar {
    /// `string` and the named string types: `""`.
    Str,
    /// `bool`: `false`.
    Bool,
    /// The integer and float types: `0`.
    Num,
}

/// What one value of a field is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Scalar(Scalar),
    /// `[]byte`: a base64 string, empty when nil.
    Bytes,
    /// `metav1.Time` and `MicroTime`: `null` when zero.
    Time,
    /// `runtime.RawExtension`: `null` when empty.
    Raw,
    /// A type with its own encoding whose zero is not known here (`resource.Quantity`,
    /// `intstr.IntOrString`, apiextensions' `JSON`) or a nested container: left as it is.
    Opaque,
    /// A struct, by its index in [`table::STRUCTS`].
    Struct(u16),
}

/// A field's Go type: its shape, or a pointer, slice or map of it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Go {
    Value(Shape),
    Ptr(Shape),
    Slice(Shape),
    Map(Shape),
}

/// One field of a struct.
#[derive(Debug)]
pub(crate) struct Field {
    /// Its JSON name.
    json: &'static str,
    /// Whether its tag says `omitempty`.
    omitempty: bool,
    /// Its type.
    go: Go,
}

/// How much of the encoding to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// What a decoded body keeps: the empty `omitempty` fields go, nothing is added. Defaulting,
    /// validation and field ownership then see what the Go struct holds (absent and zero are
    /// one there) without the zeros that only encoding writes, which they would take for set.
    Drop,
    /// What the stored object and every answer hold: the zeros of fields that always encode too.
    Full,
}

/// Deepest nesting walked (a JSON schema inside a CRD nests as deep as its author wrote): below
/// it values are left as written rather than overflowing the stack.
const DEPTH_MAX: usize = 256;

/// The Go struct of a built-in kind, by group and kind; `None` for a custom resource.
pub(crate) fn root(group: &str, kind: &str) -> Option<u16> {
    table::ROOTS.iter().find(|(g, k, _)| *k == kind && *g == group).map(|&(_, _, id)| id)
}

/// Encodes `object` (a built-in kind's whole object but its `apiVersion`, `kind` and
/// `metadata`, as [`kube_core::DynamicObject::data`] holds it) as its Go struct `root` would.
pub(crate) fn encode(root: u16, object: &mut Value, mode: Mode) {
    if let Value::Object(map) = object {
        encode_struct(root, map, mode, 0);
    }
}

/// Encodes a built-in object (by the type it names) as kube-apiserver stores and answers it:
/// [`encode`] and [`encode_metadata`]. Objects of other types are left alone.
pub(crate) fn encode_object(object: &mut kube_core::DynamicObject, mode: Mode) {
    let Some(types) = &object.types else { return };
    let group = types.api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let Some(id) = root(group, &types.kind) else { return };
    encode(id, &mut object.data, mode);
    encode_metadata(&mut object.metadata);
}

/// Encodes `object`, the JSON of a built-in kind's object or of part of one (`{"status": ..}`;
/// its `metadata` is not walked), as kube-apiserver stores and answers it. False, and nothing
/// done, for a kind that is not built in. A controller that decides whether to write by
/// comparing what it would write with what it read compares both encoded, as Go's
/// `equality.Semantic.DeepEqual` compares the decoded structs: `readyReplicas: 0` and no
/// `readyReplicas` are the same ReplicaSet status.
pub fn encode_builtin(group: &str, kind: &str, object: &mut Value) -> bool {
    let Some(id) = root(group, kind) else { return false };
    // The root struct has no `metadata` field: the object's metadata is left as it is.
    encode(id, object, Mode::Full);
    true
}

/// Encodes `value`, the JSON of the top-level field `field` of a built-in kind's object
/// (`status`), as [`encode_builtin`] encodes it inside the object, without building the
/// object's other fields. False, and nothing done, for a kind that is not built in or a field
/// its type does not have.
pub fn encode_builtin_field(group: &str, kind: &str, field: &str, value: &mut Value) -> bool {
    let Some(id) = root(group, kind) else { return false };
    let fields = table::STRUCTS[usize::from(id)];
    let Ok(i) = fields.binary_search_by(|f| f.json.cmp(field)) else { return false };
    if !encode_field(&fields[i], value, Mode::Full, 0) {
        *value = Value::Null;
    }
    true
}

/// The object metadata's fields that `omitempty` leaves out when empty, for the typed
/// [`ObjectMeta`] a [`kube_core::DynamicObject`] carries (its other fields are set by the
/// server, or pointers).
pub(crate) fn encode_metadata(meta: &mut ObjectMeta) {
    fn clear_empty<T, F: Fn(&T) -> bool>(field: &mut Option<T>, empty: F) {
        if field.as_ref().is_some_and(empty) {
            *field = None;
        }
    }
    clear_empty(&mut meta.labels, |m| m.is_empty());
    clear_empty(&mut meta.annotations, |m| m.is_empty());
    clear_empty(&mut meta.finalizers, |v| v.is_empty());
    clear_empty(&mut meta.owner_references, |v| v.is_empty());
    clear_empty(&mut meta.managed_fields, |v| v.is_empty());
    clear_empty(&mut meta.generate_name, |s| s.is_empty());
    clear_empty(&mut meta.generation, |g| *g == 0);
}

fn encode_struct(id: u16, map: &mut Map<String, Value>, mode: Mode, depth: usize) {
    if depth > DEPTH_MAX {
        return;
    }
    // The object's keys and the struct's fields are both sorted by name: one walk over the two
    // pairs each key with its field and finds the fields the object lacks. An object already
    // encoded (every stored one) allocates nothing here.
    let fields = table::STRUCTS[usize::from(id)];
    let mut next = 0;
    let mut dropped: Vec<String> = Vec::new();
    let mut missing: Vec<&Field> = Vec::new();
    let lacking = |field: &'static Field, missing: &mut Vec<&'static Field>| {
        if mode == Mode::Full && always_encoded(field) {
            missing.push(field);
        }
    };
    for (key, value) in map.iter_mut() {
        while let Some(field) = fields.get(next) {
            match name_order(field.json, key) {
                Ordering::Less => {
                    lacking(field, &mut missing);
                    next += 1;
                }
                Ordering::Equal => {
                    if !encode_field(field, value, mode, depth) {
                        dropped.push(key.clone());
                    }
                    next += 1;
                    break;
                }
                // A key that is not the type's field is left: decoding has answered it already.
                Ordering::Greater => break,
            }
        }
    }
    for field in fields.get(next..).unwrap_or_default() {
        lacking(field, &mut missing);
    }
    for key in dropped {
        map.remove(&key);
    }
    for field in missing {
        if let Some(zero) = absent(field) {
            map.insert(field.json.to_owned(), zero);
        }
    }
}

/// The order of two field names, as a `BTreeMap<String, _>` sorts its keys (bytewise). Written
/// out because field names are short and mostly differ in their first bytes, where `str::cmp`
/// calls `memcmp` for each comparison: a walk compares every key of every written object.
fn name_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Encodes one present field's value; false when encoding leaves the field out.
fn encode_field(field: &Field, value: &mut Value, mode: Mode, depth: usize) -> bool {
    match field.go {
        Go::Value(Shape::Scalar(scalar)) => {
            if field.omitempty && is_zero(value) {
                return false;
            }
            if value.is_null() && mode == Mode::Full {
                // Decoding `null` leaves the zero.
                *value = zero(scalar);
            }
            true
        }
        Go::Value(Shape::Bytes) => !(field.omitempty && (value.is_null() || value.as_str() == Some(""))),
        Go::Value(Shape::Struct(id)) => {
            match value {
                Value::Object(map) => encode_struct(id, map, mode, depth + 1),
                Value::Null if mode == Mode::Full => *value = zero_struct(id),
                _ => {}
            }
            true
        }
        Go::Value(Shape::Time | Shape::Raw | Shape::Opaque) => true,
        Go::Ptr(shape) => {
            if value.is_null() {
                return !field.omitempty;
            }
            encode_element(shape, value, mode, depth);
            true
        }
        Go::Slice(shape) => match value {
            Value::Array(items) if !items.is_empty() => {
                // Only structs have anything to encode (a list of strings is left as it is).
                if let Shape::Struct(_) = shape {
                    for item in items {
                        encode_element(shape, item, mode, depth);
                    }
                }
                true
            }
            Value::Array(_) | Value::Null => !field.omitempty,
            _ => true,
        },
        Go::Map(shape) => match value {
            Value::Object(entries) if !entries.is_empty() => {
                // Labels, annotations and a ConfigMap's data hold strings: nothing to walk.
                if let Shape::Struct(_) = shape {
                    for entry in entries.values_mut() {
                        encode_element(shape, entry, mode, depth);
                    }
                }
                true
            }
            Value::Object(_) | Value::Null => !field.omitempty,
            _ => true,
        },
    }
}

/// One element of a slice or map, or a pointer's target: a struct is walked; a `null` struct
/// element decodes to the zero struct.
fn encode_element(shape: Shape, value: &mut Value, mode: Mode, depth: usize) {
    if let Shape::Struct(id) = shape {
        match value {
            Value::Object(map) => encode_struct(id, map, mode, depth + 1),
            Value::Null if mode == Mode::Full => *value = zero_struct(id),
            _ => {}
        }
    }
}

/// Whether encoding writes `field` when the object does not have it ([`absent`], without
/// building the value).
fn always_encoded(field: &Field) -> bool {
    match field.go {
        Go::Value(Shape::Struct(_) | Shape::Time | Shape::Raw) => true,
        Go::Value(Shape::Scalar(_) | Shape::Bytes) | Go::Ptr(_) | Go::Slice(_) | Go::Map(_) => {
            !field.omitempty
        }
        Go::Value(Shape::Opaque) => false,
    }
}

/// What encoding writes for a field the object does not have, if anything.
fn absent(field: &Field) -> Option<Value> {
    match field.go {
        Go::Value(Shape::Struct(id)) => Some(zero_struct(id)),
        Go::Value(Shape::Time | Shape::Raw) => Some(Value::Null),
        Go::Value(Shape::Scalar(scalar)) if !field.omitempty => Some(zero(scalar)),
        Go::Value(Shape::Bytes) | Go::Ptr(_) | Go::Slice(_) | Go::Map(_) if !field.omitempty => {
            Some(Value::Null)
        }
        _ => None,
    }
}

/// A struct's zero value, encoded.
fn zero_struct(id: u16) -> Value {
    let map: Map<String, Value> = table::STRUCTS[usize::from(id)]
        .iter()
        .filter_map(|f| Some((f.json.to_owned(), absent(f)?)))
        .collect();
    Value::Object(map)
}

fn zero(scalar: Scalar) -> Value {
    match scalar {
        Scalar::Str => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        Scalar::Num => Value::from(0),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::Array(_) | Value::Object(_) => false,
    }
}
