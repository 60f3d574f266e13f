//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into the
//! JSON the model takes.
//!
//! kubectl's generator commands (`kubectl create deployment`, `create configmap`, `create job`,
//! ...) send built-in objects in protobuf. The body is the envelope kube-apiserver defines: the
//! magic `k8s\0`, then a `runtime.Unknown` message `{typeMeta, raw, contentEncoding,
//! contentType}` whose `raw` is the object's own message.
//!
//! Messages are read dynamically (`prost-reflect`) against a descriptor set of the Kubernetes
//! 1.36 protos (`model-apiserver/http/proto`), and one walker turns any of them into JSON: field names are
//! the JSON names already (the protos are generated from the Go structs' JSON tags). The types
//! whose JSON is not their message shape are special-cased: `Time` and `MicroTime` (seconds and
//! nanos) become RFC 3339 strings, `Duration` a Go duration string, `Quantity` its string,
//! `IntOrString` an int or a string, `RawExtension` and `FieldsV1` their embedded JSON, and
//! `bytes` base64 (as `Secret.data` is in JSON).
//!
//! Go's protobuf encoder writes every non-pointer field, set or not; Go's JSON leaves out the
//! empty ones. Empty strings and the zero `Time` are left out here; zero numbers and `false`
//! are kept, since the wire does not say which fields are pointers (`replicas: 0`,
//! `automountServiceAccountToken: false` mean something). The model's decoding then drops the
//! zeros of non-pointer `omitempty` fields (`nodePort: 0`, `stdin: false`), as it drops them from
//! a JSON body: the JSON of the same object, either way.

use std::{collections::BTreeMap, sync::LazyLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube_core::Status;
use model_apiserver::errors;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as PbValue,
};
use serde_json::{Map, Value};

/// The first bytes of a Kubernetes protobuf body.
pub const MAGIC: &[u8] = b"k8s\x00";

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The descriptor set of the built-in API groups (see `model-apiserver/http/proto/README.md`).
const DESCRIPTORS: &[u8] = include_bytes!("../proto/kubernetes-1.36.0.fds");

/// The descriptors, decoded once: immutable data, the same for every request and run.
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub static POOL: LazyLock<Result<DescriptorPool, String>> =
    LazyLock::new(|| DescriptorPool::decode(DESCRIPTORS).map_err(|e| e.to_string()));

/// How deep objects may nest: far beyond any built-in kind, and it keeps a hostile body from
/// exhausting the stack.
const NESTING_DEPTH_MAX: usize = 64;

/// The API groups the descriptor set covers, and each one's proto package segment.
const GROUP_PACKAGES: &[(&str, &str)] = &[
    ("", "core"),
    ("admissionregistration.k8s.io", "admissionregistration"),
    ("apps", "apps"),
    ("autoscaling", "autoscaling"),
    ("batch", "batch"),
    ("certificates.k8s.io", "certificates"),
    ("coordination.k8s.io", "coordination"),
    ("discovery.k8s.io", "discovery"),
    ("events.k8s.io", "events"),
    ("flowcontrol.apiserver.k8s.io", "flowcontrol"),
    ("networking.k8s.io", "networking"),
    ("node.k8s.io", "node"),
    ("policy", "policy"),
    ("rbac.authorization.k8s.io", "rbac"),
    ("scheduling.k8s.io", "scheduling"),
    ("storage.k8s.io", "storage"),
];

/// Message names of the types whose JSON is not their message shape.
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub mod names {
    pub const UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";
    pub const TIME: &str = "apimachinery.pkg.apis.meta.v1.Time";
    pub const MICRO_TIME: &str = "apimachinery.pkg.apis.meta.v1.MicroTime";
    pub const DURATION: &str = "apimachinery.pkg.apis.meta.v1.Duration";
    pub const FIELDS_V1: &str = "apimachinery.pkg.apis.meta.v1.FieldsV1";
    pub const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
    pub const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";
    pub const RAW_EXTENSION: &str = "apimachinery.pkg.runtime.RawExtension";
}

/// Go's zero `time.Time` (January 1 of year 1) as Unix seconds: what an unset non-pointer `Time`
/// (`creationTimestamp` of a new object) is written as.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Whether a body is protobuf: by its media type, or by its magic when the type is missing.
pub fn is_protobuf(content_type: &str, body: &[u8]) -> bool {
    let media = content_type.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case(MEDIA_TYPE) || body.starts_with(MAGIC)
}

/// Decode a protobuf object body into its JSON, `apiVersion` and `kind` included.
///
/// A body that is not a well-formed envelope or message is 400 BadRequest; a kind outside the
/// descriptor set (custom resources, CRDs, aggregated kinds) is 415 UnsupportedMediaType naming
/// the kind, so that the client can send JSON instead.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    let pool = POOL.as_ref().map_err(|e| errors::internal_error(&format!("protobuf descriptors: {e}")))?;
    let Some(payload) = body.strip_prefix(MAGIC) else {
        return Err(errors::bad_request(
            "the protobuf body does not start with the Kubernetes magic k8s\\0 (not a runtime.Unknown envelope)",
        ));
    };
    let unknown_desc = pool
        .get_message_by_name(names::UNKNOWN)
        .ok_or_else(|| errors::internal_error("protobuf descriptors lack runtime.Unknown"))?;
    let envelope = DynamicMessage::decode(unknown_desc, payload)
        .map_err(|e| errors::bad_request(&format!("error decoding the protobuf envelope: {e}")))?;
    let type_meta = message_field(&envelope, "typeMeta");
    let api_version = type_meta.as_ref().map(|t| string_field(t, "apiVersion")).unwrap_or_default();
    let kind = type_meta.as_ref().map(|t| string_field(t, "kind")).unwrap_or_default();
    let encoding = string_field(&envelope, "contentEncoding");
    if !encoding.is_empty() {
        return Err(errors::unsupported_media_type(&format!(
            "the protobuf body's content encoding {encoding:?} is not supported"
        )));
    }
    if kind.is_empty() || api_version.is_empty() {
        return Err(errors::bad_request("the protobuf envelope has no apiVersion or kind"));
    }
    let desc = message_for(pool, &api_version, &kind).ok_or_else(|| {
        errors::unsupported_media_type(&format!(
            "kube-sim serve cannot decode {kind} ({api_version}) from protobuf; send it as application/json"
        ))
    })?;
    let raw = match envelope.get_field_by_name("raw").as_deref() {
        Some(PbValue::Bytes(raw)) => raw.clone(),
        _ => bytes::Bytes::new(),
    };
    let message = DynamicMessage::decode(desc, raw)
        .map_err(|e| errors::bad_request(&format!("error decoding {kind} from protobuf: {e}")))?;
    let mut object = match to_json(&message, 0)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    object.insert("apiVersion".to_owned(), Value::String(api_version));
    object.insert("kind".to_owned(), Value::String(kind));
    Ok(Value::Object(object))
}

/// The message of `kind` in `apiVersion`, if the descriptor set has it.
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub fn message_for(pool: &DescriptorPool, api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    // Every group version carries meta/v1's option kinds (client-go encodes a DeleteOptions
    // body in the group version of the resource it deletes).
    if kind == "DeleteOptions" {
        return pool.get_message_by_name("apimachinery.pkg.apis.meta.v1.DeleteOptions");
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (_, package) = GROUP_PACKAGES.iter().find(|(g, _)| *g == group)?;
    // A kind is a Go identifier; anything else must not be spliced into a message name.
    if !kind.chars().all(|c| c.is_ascii_alphanumeric()) || !version.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return None;
    }
    pool.get_message_by_name(&format!("api.{package}.{version}.{kind}"))
}

/// The message-typed field `name`, if set.
fn message_field(message: &DynamicMessage, name: &str) -> Option<DynamicMessage> {
    match message.get_field_by_name(name).as_deref() {
        Some(PbValue::Message(m)) if message.has_field_by_name(name) => Some(m.clone()),
        _ => None,
    }
}

/// The string field `name` ("" if unset).
fn string_field(message: &DynamicMessage, name: &str) -> String {
    match message.get_field_by_name(name).as_deref() {
        Some(PbValue::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The integer field `name` (0 if unset).
fn int_field(message: &DynamicMessage, name: &str) -> i64 {
    match message.get_field_by_name(name).as_deref() {
        Some(PbValue::I64(n)) => *n,
        Some(PbValue::I32(n)) => i64::from(*n),
        _ => 0,
    }
}

/// The bytes field `name` (empty if unset).
fn bytes_field(message: &DynamicMessage, name: &str) -> bytes::Bytes {
    match message.get_field_by_name(name).as_deref() {
        Some(PbValue::Bytes(b)) => b.clone(),
        _ => bytes::Bytes::new(),
    }
}

/// Fields that are Go structs embedded with `json:",inline"`: one protobuf field each, whose
/// fields are the enclosing object's in JSON (message, field).
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub const INLINE_FIELDS: &[(&str, &str)] = &[
    ("api.core.v1.Volume", "volumeSource"),
    ("api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
    ("api.core.v1.Probe", "handler"),
    ("api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("api.networking.v1.IngressRule", "ingressRuleValue"),
    ("api.admissionregistration.v1.RuleWithOperations", "rule"),
    // `LocalObjectReference` (the `name`) embedded in the ConfigMap and Secret references.
    ("api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
    ("api.core.v1.ConfigMapProjection", "localObjectReference"),
    ("api.core.v1.ConfigMapKeySelector", "localObjectReference"),
    ("api.core.v1.SecretKeySelector", "localObjectReference"),
    ("api.core.v1.ConfigMapEnvSource", "localObjectReference"),
    ("api.core.v1.SecretEnvSource", "localObjectReference"),
    ("api.core.v1.SecretProjection", "localObjectReference"),
];

/// A message as JSON; `None` values (`Value::Null`) are fields Go's JSON leaves out.
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub fn to_json(message: &DynamicMessage, depth: usize) -> Result<Value, Status> {
    if depth > NESTING_DEPTH_MAX {
        return Err(errors::bad_request("the protobuf object nests too deeply"));
    }
    let name = message.descriptor().full_name().to_owned();
    match name.as_str() {
        names::TIME => return Ok(time_json(message, false)),
        names::MICRO_TIME => return Ok(time_json(message, true)),
        names::DURATION => return Ok(Value::String(go_duration(int_field(message, "duration")))),
        names::QUANTITY => return Ok(Value::String(string_field(message, "string"))),
        names::INT_OR_STRING => {
            return Ok(match int_field(message, "type") {
                0 => Value::from(int_field(message, "intVal")),
                _ => Value::String(string_field(message, "strVal")),
            });
        }
        names::RAW_EXTENSION => return embedded_json(&bytes_field(message, "raw"), "RawExtension"),
        names::FIELDS_V1 => return embedded_json(&bytes_field(message, "Raw"), "FieldsV1"),
        _ => {}
    }
    let mut object = Map::new();
    for (field, value) in message.fields() {
        let json = value_json(value, depth)?;
        if json.is_null() {
            continue;
        }
        let inline = INLINE_FIELDS.iter().any(|(m, f)| *m == name && *f == field.name());
        match json {
            // A Go struct embedded with `json:",inline"` is one protobuf field but no JSON key:
            // its fields belong to the enclosing object.
            Value::Object(fields) if inline => object.extend(fields),
            json => {
                object.insert(field.name().to_owned(), json);
            }
        }
    }
    Ok(Value::Object(object))
}

/// One field's value as JSON (`Null` for an empty string, which Go's JSON leaves out).
fn value_json(value: &PbValue, depth: usize) -> Result<Value, Status> {
    Ok(match value {
        PbValue::Bool(b) => Value::Bool(*b),
        PbValue::I32(n) => Value::from(*n),
        PbValue::I64(n) => Value::from(*n),
        PbValue::U32(n) => Value::from(*n),
        PbValue::U64(n) => Value::from(*n),
        PbValue::F32(n) => serde_json::Number::from_f64(f64::from(*n)).map_or(Value::Null, Value::Number),
        PbValue::F64(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
        PbValue::String(s) if s.is_empty() => Value::Null,
        PbValue::String(s) => Value::String(s.clone()),
        PbValue::Bytes(b) => serde_json::to_value(k8s_openapi::ByteString(b.to_vec()))
            .map_err(|e| errors::internal_error(&format!("encoding bytes: {e}")))?,
        PbValue::EnumNumber(n) => Value::from(*n),
        PbValue::Message(m) => to_json(m, depth + 1)?,
        PbValue::List(items) => {
            Value::Array(items.iter().map(|item| element_json(item, depth + 1)).collect::<Result<_, _>>()?)
        }
        PbValue::Map(entries) => {
            // Sorted by key: the decoded map's own order is a hash order.
            let mut sorted = BTreeMap::new();
            for (key, value) in entries {
                sorted.insert(map_key(key), element_json(value, depth + 1)?);
            }
            Value::Object(sorted.into_iter().collect())
        }
    })
}

/// A list item or map value as JSON: an empty string is kept there (a label's empty value).
fn element_json(value: &PbValue, depth: usize) -> Result<Value, Status> {
    match value {
        PbValue::String(s) if s.is_empty() => Ok(Value::String(String::new())),
        _ => value_json(value, depth),
    }
}

/// A map key as the JSON object key Go writes.
fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

/// `Time` (to the second) or `MicroTime` (to the microsecond) as RFC 3339; Go's zero time (an
/// empty message) is `Null` (left out, as Go's JSON writes `null`).
fn time_json(message: &DynamicMessage, micro: bool) -> Value {
    // Go writes its zero time as an empty message (and reads an empty one as zero).
    if message.fields().next().is_none() {
        return Value::Null;
    }
    let seconds = int_field(message, "seconds");
    let nanos = i32::try_from(int_field(message, "nanos")).unwrap_or_default();
    if seconds == GO_ZERO_TIME_SECONDS && nanos == 0 {
        return Value::Null;
    }
    let Ok(at) = jiff::Timestamp::new(seconds, if micro { nanos } else { 0 }) else {
        return Value::Null;
    };
    let json = if micro { serde_json::to_value(MicroTime(at)) } else { serde_json::to_value(Time(at)) };
    json.unwrap_or(Value::Null)
}

/// Embedded JSON bytes (`RawExtension.raw`, `FieldsV1.Raw`); empty is `Null`.
fn embedded_json(raw: &[u8], what: &str) -> Result<Value, Status> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw)
        .map_err(|e| errors::bad_request(&format!("the {what} in the protobuf body is not JSON: {e}")))
}

/// Nanoseconds as Go's `time.Duration.String()` writes them (`1h2m3.5s`, `1.5ms`, `0s`).
// `pub` (hidden from the docs) for its test in tests/it/protobuf.rs only.
#[doc(hidden)]
pub fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let fraction = |value: u64, unit: u64| {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.ilog10() as usize;
            let text = format!("{whole}.{rest:0digits$}");
            text.trim_end_matches('0').to_owned()
        }
    };
    const SECOND: u64 = 1_000_000_000;
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n, 1_000));
    }
    if n < SECOND {
        return format!("{sign}{}ms", fraction(n, 1_000_000));
    }
    let hours = n / (3600 * SECOND);
    let minutes = (n / (60 * SECOND)) % 60;
    let seconds = fraction(n % (60 * SECOND), SECOND);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}
