//! The fields of a JSON body that a type ignores, found during its one deserialization.
//!
//! [`crate::decode`] names a built-in object's unknown fields by deserializing the body into
//! its k8s-openapi type, serializing that back and walking both: every field of the body the
//! round trip lost is unknown. That serializes a second copy of the object on every write. The
//! types ignore exactly those fields while deserializing (k8s-openapi reads an unknown key as
//! `IgnoredAny`), so a deserializer over the body that notes every ignored value, with its path,
//! finds them in the one pass.
//!
//! The two agree because k8s-openapi serializes back every field it read (an `Option` when
//! set, any other field always) and no field it ignored. This deserializer stands in for the
//! round trip only where nothing else can differ, and says so ([`deserialize`] answers `None`
//! otherwise, and the caller does the round trip); `tests/it/unknown_fields.rs` checks it
//! against the round trip over randomly changed bodies of every decoded kind:
//! - No `null` anywhere it reads: a type keeps some null fields (a required list read as
//!   `Option` and defaulted) and drops others, which only the round trip tells apart.
//! - Every value is read through this deserializer. It mirrors serde_json's own deserializer of
//!   a borrowed [`Value`] call for call (the same visitor calls, the same checks of unread
//!   entries), so a type reads the same object from both; a route that would read nested values
//!   behind its back (an enum, bytes from an array, a map key read as anything but a string)
//!   gives up.
//! - The deserialization succeeds.
//!
//! A body that does not fit its type fails here as it fails serde_json (the same calls give the
//! same error), and the deserializer notes where: the path of the innermost value whose reading
//! failed (`spec.template.spec.containers[0].ports[0].containerPort`, `.` for the whole body), as
//! `serde_path_to_error` names it. That crate wraps a second deserialization, which compiled
//! every type's `Deserialize` once more just to name where a refused body went wrong. The path is
//! exactly that crate's wherever this deserializer follows the reading ([`Failure::followed`]);
//! under a route it leaves to serde_json (see above) it is the innermost value it did follow, a
//! prefix of that crate's path. No k8s-openapi type takes such a route: none has an enum, bytes
//! read from an array or a map key that is not a string.
//!
//! Why not the `serde_ignored` crate: it wraps any deserializer generically and records each
//! key as an owned `String` on the way (an allocation per field, what made `serde_path_to_error`
//! expensive), and it reports an ignored `null` like any other field while a known field's
//! `null` goes unreported, so it could not tell the nulls the walk drops.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;

use kube_core::DynamicObject;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Error, Map, Value};

/// Deserialize `value` as `T`, and name the paths of the fields `T` ignored (`spec.foo`,
/// `spec.containers[0].bar`), in the body's order: exactly the fields a round trip through `T`
/// loses, or `None` where that is not certain (see the module doc). A `value` that does not fit
/// `T` fails with serde_json's error and its path.
pub(crate) fn deserialize<T: DeserializeOwned>(value: &Value) -> Result<(T, Option<Vec<String>>), Failure> {
    let state = State::default();
    match T::deserialize(Tracked { value, path: &Path::Root, state: &state }) {
        Ok(object) => Ok((object, state.into_ignored())),
        Err(error) => Err(state.into_failure(error)),
    }
}

/// A value that does not fit its type: serde_json's error, and where.
#[derive(Debug)]
pub(crate) struct Failure {
    /// serde_json's error, as deserializing the `&Value` itself gives it.
    pub(crate) error: Error,
    /// The path of the innermost value whose reading failed, as `serde_path_to_error` displays
    /// it: `spec.containers[0].image`, `metadata.labels.app`, `.` for the whole value.
    pub(crate) path: String,
    /// Every value was read through this deserializer, so `path` is exactly
    /// `serde_path_to_error`'s; else it is the innermost value this deserializer followed (see
    /// the module doc).
    pub(crate) followed: bool,
}

/// Deserialize `object` as `T` as from `serde_json::to_value(object)`, without building that
/// copy of the object: its content is read where it is. Like [`deserialize`], with the ignored
/// fields' paths where they are certain (`Ok((_, None))` otherwise).
///
/// The metadata is not read, and `T`'s is the default: being typed already, it converts to JSON
/// and back as itself, so it can neither hold an unknown field nor fail to deserialize; a
/// caller that needs it sets it. `Err` where this cannot tell: the object does not deserialize,
/// or does not look like `to_value`'s object (content that is no JSON object, or that holds
/// `apiVersion`, `kind` or `metadata`, which would overwrite the typed ones); the caller then
/// converts it.
pub(crate) fn deserialize_object<T: DeserializeOwned>(
    object: &DynamicObject,
) -> Result<(T, Option<Vec<String>>), ()> {
    const TYPED: [&str; 3] = ["apiVersion", "kind", "metadata"];
    let data = match &object.data {
        Value::Object(map) if !TYPED.iter().any(|k| map.contains_key(*k)) => Some(map),
        Value::Null => None,
        _ => return Err(()),
    };
    let types =
        object.types.as_ref().map(|t| (Value::String(t.api_version.clone()), Value::String(t.kind.clone())));
    // The entries of `to_value`'s map but metadata, in its order (serde_json's Map is sorted
    // by key).
    let mut entries: Vec<(&str, &Value)> = Vec::with_capacity(2 + data.map_or(0, Map::len));
    if let Some((api_version, kind)) = &types {
        entries.extend([("apiVersion", api_version), ("kind", kind)]);
    }
    entries.extend(data.into_iter().flatten().map(|(k, v)| (k.as_str(), v)));
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let state = State::default();
    let object = T::deserialize(Root { entries: &entries, state: &state }).map_err(|_| ())?;
    Ok((object, state.into_ignored()))
}

/// What one deserialization found.
#[derive(Default)]
struct State {
    /// The paths of the ignored values.
    ignored: RefCell<Vec<String>>,
    /// A null was read, or a value was read by a route this deserializer does not follow.
    inexact: Cell<bool>,
    /// A value was read by a route this deserializer does not follow: serde_json read some
    /// nested values itself, whose failure it could not place.
    untracked: Cell<bool>,
    /// The path of the first value whose reading failed (the innermost: an error passes every
    /// enclosing value on its way out), as [`Failure::path`].
    failed_at: RefCell<Option<String>>,
}

impl State {
    /// The ignored fields' paths, where they are certain.
    fn into_ignored(self) -> Option<Vec<String>> {
        (!self.inexact.get()).then(|| self.ignored.into_inner())
    }

    /// Reading the value at `path` failed with `error`; the first failure noted is the
    /// innermost, as `serde_path_to_error`'s `Track` keeps its first.
    #[cold]
    fn failed(&self, path: &Path<'_>, error: Error) -> Error {
        let mut failed_at = self.failed_at.borrow_mut();
        if failed_at.is_none() {
            *failed_at = Some(path.error_path());
        }
        error
    }

    /// The deserialization failed with `error`: where. Nothing noted is the root (the root
    /// value's own visitor failed, or a scalar root).
    #[cold]
    fn into_failure(self, error: Error) -> Failure {
        let path = self.failed_at.into_inner().unwrap_or_else(|| Path::Root.error_path());
        Failure { error, path, followed: !self.untracked.get() }
    }
}

/// Where a value is, as a chain of borrowed steps: nothing is allocated unless a value is
/// ignored.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// Append this path to `out` as [`crate::decode::unknown_fields`] spells it.
    fn render(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.render(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Index(parent, i) => {
                parent.render(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }

    /// This path as `serde_path_to_error`'s `Path` displays it: its segments joined by `.`, an
    /// index as `[0]` without one before it, and `.` for no segment. (Unlike [`Path::render`],
    /// the root is `.`, and an empty first key is a segment: `x` under it is `.x`.)
    fn error_path(&self) -> String {
        let mut out = String::new();
        if !self.render_segments(&mut out) {
            out.push('.');
        }
        out
    }

    /// Append the segments to `out`; whether there were any.
    fn render_segments(&self, out: &mut String) -> bool {
        match self {
            Path::Root => false,
            Path::Key(parent, key) => {
                if parent.render_segments(out) {
                    out.push('.');
                }
                out.push_str(key);
                true
            }
            Path::Index(parent, i) => {
                parent.render_segments(out);
                let _ = write!(out, "[{i}]");
                true
            }
        }
    }
}

/// A borrowed value at a path: serde_json's deserializer of `&Value`, noting what is ignored.
struct Tracked<'a, 'de> {
    value: &'de Value,
    path: &'a Path<'a>,
    state: &'a State,
}

impl Tracked<'_, '_> {
    /// A null, or a container read by serde_json itself (which would read its nested values
    /// untracked), makes the result inexact.
    fn note_leaf(&self) {
        if matches!(self.value, Value::Null | Value::Array(_) | Value::Object(_)) {
            self.state.inexact.set(true);
        }
    }

    /// Bytes from an array: serde_json reads the items itself, untracked.
    fn note_bytes(&self) {
        self.note_leaf();
        if self.value.is_array() {
            self.state.untracked.set(true);
        }
    }
}

/// Methods that read a scalar: serde_json's own, after [`Tracked::note_leaf`].
macro_rules! leaf {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.note_leaf();
                self.value.$method(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Tracked<'_, 'de> {
    type Error = Error;

    leaf! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_unit deserialize_identifier
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.note_bytes();
        self.value.deserialize_bytes(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.note_bytes();
        self.value.deserialize_byte_buf(visitor)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visit_array(items, self.path, self.state, visitor),
            Value::Object(map) => visit_object(map, self.path, self.state, visitor),
            _ => {
                self.note_leaf();
                self.value.deserialize_any(visitor)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => {
                self.state.inexact.set(true);
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.note_leaf();
        self.value.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visit_array(items, self.path, self.state, visitor),
            _ => {
                self.note_leaf();
                self.value.deserialize_seq(visitor)
            }
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(map) => visit_object(map, self.path, self.state, visitor),
            _ => {
                self.note_leaf();
                self.value.deserialize_map(visitor)
            }
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::Array(items) => visit_array(items, self.path, self.state, visitor),
            Value::Object(map) => visit_object(map, self.path, self.state, visitor),
            _ => {
                self.note_leaf();
                self.value.deserialize_struct(name, fields, visitor)
            }
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde_json reads the variant's content itself: untracked.
        self.state.inexact.set(true);
        self.state.untracked.set(true);
        self.value.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.value.is_null() {
            self.state.inexact.set(true);
        }
        let mut path = String::new();
        self.path.render(&mut path);
        self.state.ignored.borrow_mut().push(path);
        self.value.deserialize_ignored_any(visitor)
    }
}

/// serde_json's `visit_array_ref`, with each item tracked at its index.
fn visit_array<'de, V: Visitor<'de>>(
    items: &'de [Value],
    path: &Path<'_>,
    state: &State,
    visitor: V,
) -> Result<V::Value, Error> {
    let len = items.len();
    let mut seq = Items { iter: items.iter().enumerate(), path, state };
    let out = visitor.visit_seq(&mut seq)?;
    if seq.iter.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

/// serde_json's `Map::deserialize_any` of a borrowed map, with each value tracked at its key.
fn visit_object<'de, V: Visitor<'de>>(
    map: &'de Map<String, Value>,
    path: &Path<'_>,
    state: &State,
    visitor: V,
) -> Result<V::Value, Error> {
    visit_entries(map.iter().map(|(k, v)| (k.as_str(), v)), path, state, visitor)
}

/// [`visit_object`] over the entries `iter` yields.
fn visit_entries<'de, I, V>(iter: I, path: &Path<'_>, state: &State, visitor: V) -> Result<V::Value, Error>
where
    I: ExactSizeIterator<Item = (&'de str, &'de Value)>,
    V: Visitor<'de>,
{
    let len = iter.len();
    let mut entries = Entries { iter, value: None, path, state };
    let out = visitor.visit_map(&mut entries)?;
    if entries.iter.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

/// Methods of [`Root`] it does not follow.
macro_rules! not_followed {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
                Err(not_followed())
            }
        )*
    };
}

/// The root of an object as [`deserialize_object`] presents it: a map of borrowed entries.
/// Anything but reading it as a map is not followed (an error, so that the caller converts).
struct Root<'a, 'de> {
    entries: &'a [(&'de str, &'de Value)],
    state: &'a State,
}

impl<'de> Deserializer<'de> for Root<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_entries(self.entries.iter().copied(), &Path::Root, self.state, visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    not_followed! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit deserialize_seq
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value, Error> {
        Err(not_followed())
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Error> {
        Err(not_followed())
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value, Error> {
        Err(not_followed())
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Error> {
        Err(not_followed())
    }
}

fn not_followed() -> Error {
    de::Error::custom("not followed: read the converted object")
}

/// serde_json's `SeqRefDeserializer`.
struct Items<'a, 'de> {
    iter: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    path: &'a Path<'a>,
    state: &'a State,
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.iter.next() {
            Some((i, value)) => {
                let path = Path::Index(self.path, i);
                match seed.deserialize(Tracked { value, path: &path, state: self.state }) {
                    Ok(item) => Ok(Some(item)),
                    Err(e) => Err(self.state.failed(&path, e)),
                }
            }
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.iter.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

/// serde_json's `MapRefDeserializer`.
struct Entries<'a, 'de, I> {
    iter: I,
    /// The entry whose key was just read.
    value: Option<(&'de str, &'de Value)>,
    path: &'a Path<'a>,
    state: &'a State,
}
impl<'de, I: Iterator<Item = (&'de str, &'de Value)>> MapAccess<'de> for Entries<'_, 'de, I> {
    type Error = Error;

    fn next_key_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.iter.next() {
            Some((key, value)) => {
                self.value = Some((key, value));
                match seed.deserialize(Key { key, state: self.state }) {
                    Ok(read) => Ok(Some(read)),
                    // `serde_path_to_error` names a key that fails by the key.
                    Err(e) => Err(self.state.failed(&Path::Key(self.path, key), e)),
                }
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        match self.value.take() {
            Some((key, value)) => {
                let path = Path::Key(self.path, key);
                match seed.deserialize(Tracked { value, path: &path, state: self.state }) {
                    Ok(read) => Ok(read),
                    Err(e) => Err(self.state.failed(&path, e)),
                }
            }
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.iter.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

/// A map key: serde_json's `MapKeyDeserializer` for a key read as a string (field names, the
/// keys of string maps). A key read as a number, a bool or an enum, which serde_json parses,
/// makes the result inexact, and a failure untracked (serde_json's error could differ).
struct Key<'a, 'de> {
    key: &'de str,
    state: &'a State,
}

/// Methods serde_json parses the key for: not followed.
macro_rules! parsed_key {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.state.inexact.set(true);
                self.state.untracked.set(true);
                visitor.visit_borrowed_str(self.key)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Key<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.key)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.state.inexact.set(true);
        self.state.untracked.set(true);
        visitor.visit_borrowed_str(self.key)
    }

    parsed_key! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}
