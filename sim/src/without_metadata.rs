//! `serde_json::to_value` of a typed object, without its top-level `metadata` field.
//!
//! [`crate::client::to_dynamic`] turns a typed object into a `DynamicObject`: the JSON of its
//! content, and its metadata cloned as it is (the typed `ObjectMeta` is the `DynamicObject`'s). The
//! JSON of the metadata, with a `String` per key of every owner reference, label and annotation,
//! was built only to be thrown away: it was most of a create's or an update's conversion.
//!
//! [`to_value`] serializes through serde_json's own value serializer, and only the outermost
//! struct is wrapped, to skip its field named `metadata`: every value is serialized as
//! `serde_json::to_value` serializes it, so the map is `to_value`'s map without that one entry. A
//! type that serializes itself as a map (a flattened struct, `DynamicObject`) is not wrapped: it
//! gets `to_value`'s map with its `metadata`, and the caller removes it as before.
//!
//! By hand because no crate does this: serde's attributes skip a field for every serialization of
//! a type, and these are other crates' types (k8s-openapi's, kube-derive's).

use serde::Serialize;
use serde::ser;
use serde_json::{Error, Value};

type Inner = serde_json::value::Serializer;
const INNER: Inner = serde_json::value::Serializer;

/// `serde_json::to_value(object)`, except that an object serialized as a struct has no `metadata`
/// entry (see the module doc).
pub(crate) fn to_value<T: Serialize + ?Sized>(object: &T) -> Result<Value, Error> {
    object.serialize(Outermost)
}

/// The serializer of the outermost value: every call but `serialize_struct` is serde_json's.
struct Outermost;

/// The outermost struct: its fields but `metadata`, into serde_json's map.
struct StructWithoutMetadata(<Inner as ser::Serializer>::SerializeStruct);

impl ser::SerializeStruct for StructWithoutMetadata {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        if key == "metadata" {
            return Ok(());
        }
        self.0.serialize_field(key, value)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        self.0.skip_field(key)
    }
    fn end(self) -> Result<Value, Error> {
        self.0.end()
    }
}

impl ser::Serializer for Outermost {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = <Inner as ser::Serializer>::SerializeSeq;
    type SerializeTuple = <Inner as ser::Serializer>::SerializeTuple;
    type SerializeTupleStruct = <Inner as ser::Serializer>::SerializeTupleStruct;
    type SerializeTupleVariant = <Inner as ser::Serializer>::SerializeTupleVariant;
    type SerializeMap = <Inner as ser::Serializer>::SerializeMap;
    type SerializeStruct = StructWithoutMetadata;
    type SerializeStructVariant = <Inner as ser::Serializer>::SerializeStructVariant;

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<StructWithoutMetadata, Error> {
        INNER.serialize_struct(name, len).map(StructWithoutMetadata)
    }

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        INNER.serialize_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        INNER.serialize_i8(v)
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        INNER.serialize_i16(v)
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        INNER.serialize_i32(v)
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        INNER.serialize_i64(v)
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        INNER.serialize_i128(v)
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        INNER.serialize_u8(v)
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        INNER.serialize_u16(v)
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        INNER.serialize_u32(v)
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        INNER.serialize_u64(v)
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        INNER.serialize_u128(v)
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        INNER.serialize_f32(v)
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        INNER.serialize_f64(v)
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        INNER.serialize_char(v)
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        INNER.serialize_str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        INNER.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<Value, Error> {
        INNER.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        INNER.serialize_some(value)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        INNER.serialize_unit()
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<Value, Error> {
        INNER.serialize_unit_struct(name)
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        INNER.serialize_unit_variant(name, index, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        INNER.serialize_newtype_struct(name, value)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        INNER.serialize_newtype_variant(name, index, variant, value)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        INNER.serialize_seq(len)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Error> {
        INNER.serialize_tuple(len)
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        INNER.serialize_tuple_struct(name, len)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        INNER.serialize_tuple_variant(name, index, variant, len)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        INNER.serialize_map(len)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        INNER.serialize_struct_variant(name, index, variant, len)
    }
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<Value, Error> {
        INNER.collect_str(value)
    }
    fn is_human_readable(&self) -> bool {
        true
    }
}
