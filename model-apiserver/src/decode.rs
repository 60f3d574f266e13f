//! Decoding a written object as kube-apiserver's serializer does, before anything else looks at
//! it: the body's kind and apiVersion must be the URL's, a built-in object must fit its Go type
//! (a wrong JSON type is 400 BadRequest), and a field the type does not have follows the
//! request's `fieldValidation` directive (Strict refuses the write, Warn drops the field with a
//! warning, Ignore drops it silently). A built-in object never stores an unknown field; custom
//! resources get the same treatment from their structural schema's pruning.
//!
//! The Go types are k8s-openapi's: a body is deserialized into the kind's type (which tells a
//! type error and its path), serialized back, and every field of the body that the round trip
//! lost is unknown; where that is certain to name the same fields, the fields the type ignored
//! while deserializing ([`crate::ignored`]) stand in for the round trip, and the object is read
//! where it is instead of being converted to JSON first. [`crate::validation`] checks the object
//! as admission leaves it (defaulted, and changed by mutating hooks), so it deserializes that one
//! again ([`decode_typed`]), for the kinds it validates by type only.

use k8s_openapi::{Metadata, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use k8s_openapi::{
    api::{
        apps::v1 as apps, batch::v1 as batch, coordination::v1 as coordination, core::v1 as core,
        networking::v1 as networking, policy::v1 as policy,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions,
};
use kube_core::{DynamicObject, Status};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    context::Context,
    errors,
    request::FieldValidation,
    resources::{ResourceType, ResourceTypes},
    server::{ApiServer, Target},
};

/// A built-in object in its Go type, for the kinds that [`crate::validation`] checks.
#[allow(missing_docs)] // the variants are the kinds
pub(crate) enum Typed {
    Pod(Box<core::Pod>),
    ConfigMap(Box<core::ConfigMap>),
    Secret(Box<core::Secret>),
    Service(Box<core::Service>),
    ServiceAccount(Box<core::ServiceAccount>),
    PersistentVolumeClaim(Box<core::PersistentVolumeClaim>),
    Deployment(Box<apps::Deployment>),
    ReplicaSet(Box<apps::ReplicaSet>),
    StatefulSet(Box<apps::StatefulSet>),
    DaemonSet(Box<apps::DaemonSet>),
    Job(Box<batch::Job>),
    CronJob(Box<batch::CronJob>),
    Ingress(Box<networking::Ingress>),
    PodDisruptionBudget(Box<policy::PodDisruptionBudget>),
    Lease(Box<coordination::Lease>),
    HorizontalPodAutoscaler(Box<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>),
}

/// A built-in object that decoded: the paths of the fields its type lacks (`spec.foo`,
/// `spec.containers[0].bar`), in the body's order.
pub(crate) struct Decoded {
    /// The unknown fields, as the real strict decoder names them.
    pub(crate) unknown: Vec<String>,
    /// Unknown fields set to `null`: the decoder names none of them, and none is stored (a Go
    /// struct has nowhere to keep it).
    pub(crate) nulls: Vec<String>,
}

/// A body that does not fit its Go type: the JSON path of the offending value and serde's words.
#[derive(Debug)]
pub(crate) struct TypeError {
    /// Where: `spec.replicas`.
    pub(crate) path: String,
    /// What serde said: `invalid type: string "three", expected i32`.
    pub(crate) message: String,
}

impl TypeError {
    /// The error as encoding/json words it: `json: cannot unmarshal string into Go struct field
    /// .spec.replicas of type int32`, from the body's value and serde's expectation.
    pub(crate) fn go_message(&self, body: &Value) -> String {
        let found = value_at(body, &self.path).map_or("value", json_type_name);
        match self.message.split_once(", expected ") {
            Some((_, expected)) if self.message.starts_with("invalid type") => format!(
                "json: cannot unmarshal {found} into Go struct field .{} of type {}",
                self.path,
                go_type_name(expected)
            ),
            _ => format!("json: {} at .{}", self.message, self.path),
        }
    }
}

/// Decode `value` as `T` and name its unknown fields: the fields `T` ignored while
/// deserializing it, where that is certain to be what the round trip loses
/// ([`crate::ignored`]), else the round trip itself. A type error and its path are the ignored
/// fields' deserializer's, which fails as plain serde fails and notes where.
pub(crate) fn check<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Decoded, TypeError> {
    let untracked = match crate::ignored::deserialize::<T>(value) {
        Ok((_, Some(unknown))) => return Ok(Decoded { unknown, nulls: Vec::new() }),
        Ok((_, None)) => None,
        Err(failure) if failure.followed => return Err(TypeError::from(failure)),
        Err(failure) => Some(failure),
    };
    let known = round_trip::<T>(value, untracked)?;
    let (mut unknown, mut nulls) = (Vec::new(), Vec::new());
    unknown_fields(value, &known, &mut String::new(), &mut unknown, &mut nulls);
    Ok(Decoded { unknown, nulls })
}

/// Deserialize `value` as `T` and serialize it back. `untracked` is the failure of the ignored
/// fields' deserializer where a route it does not follow was taken: plain serde's error decides
/// then, named at the innermost value that deserializer followed.
fn round_trip<T: DeserializeOwned + Serialize>(
    value: &Value,
    untracked: Option<crate::ignored::Failure>,
) -> Result<Value, TypeError> {
    let object = T::deserialize(value).map_err(|e| type_error(&e, untracked))?;
    serde_json::to_value(&object).map_err(|e| TypeError { path: String::new(), message: e.to_string() })
}

/// The type error plain serde gave: where the ignored fields' deserializer failed.
#[cold]
fn type_error(plain: &serde_json::Error, untracked: Option<crate::ignored::Failure>) -> TypeError {
    // Without a failure there (not expected: both make the same calls), the whole body.
    let path = untracked.map_or_else(|| ".".to_owned(), |f| f.path);
    TypeError { path, message: plain.to_string() }
}

impl From<crate::ignored::Failure> for TypeError {
    fn from(failure: crate::ignored::Failure) -> Self {
        TypeError { path: failure.path, message: failure.error.to_string() }
    }
}

/// `object` in its Go type, for validation: `None` for a kind [`crate::validation`] does not
/// check by type (nothing is decoded then) and for an object that does not decode (admission
/// hooks broke it; decoding refused every body that did not before).
///
/// Validation checks the object's own metadata elsewhere, once for every kind, so the typed
/// value's metadata is left empty, except for a Secret, whose type-specific checks read its
/// annotations: every write of a built-in kind would otherwise copy its whole metadata
/// (managedFields included) once more.
pub(crate) fn decode_typed(ty: &ResourceType, object: &DynamicObject) -> Option<Typed> {
    if ty.custom {
        return None;
    }
    fn decode<T: DeserializeOwned + Metadata<Ty = ObjectMeta>>(
        object: &DynamicObject,
        with_metadata: bool,
    ) -> Option<Box<T>> {
        // Read where it is, else converted; no path is needed, so plain serde.
        if let Ok((mut typed, _)) = crate::ignored::deserialize_object::<T>(object) {
            if with_metadata {
                *typed.metadata_mut() = object.metadata.clone();
            }
            return Some(Box::new(typed));
        }
        let value = serde_json::to_value(object).ok()?;
        T::deserialize(&value).ok().map(Box::new)
    }
    fn typed<T: DeserializeOwned + Metadata<Ty = ObjectMeta>>(object: &DynamicObject) -> Option<Box<T>> {
        decode(object, false)
    }
    let typed = match (ty.api.group.as_str(), ty.api.kind.as_str()) {
        ("", "Pod") => Typed::Pod(typed(object)?),
        ("", "ConfigMap") => Typed::ConfigMap(typed(object)?),
        ("", "Secret") => Typed::Secret(decode(object, true)?),
        ("", "Service") => Typed::Service(typed(object)?),
        ("", "ServiceAccount") => Typed::ServiceAccount(typed(object)?),
        ("", "PersistentVolumeClaim") => Typed::PersistentVolumeClaim(typed(object)?),
        ("apps", "Deployment") => Typed::Deployment(typed(object)?),
        ("apps", "ReplicaSet") => Typed::ReplicaSet(typed(object)?),
        ("apps", "StatefulSet") => Typed::StatefulSet(typed(object)?),
        ("apps", "DaemonSet") => Typed::DaemonSet(typed(object)?),
        ("batch", "Job") => Typed::Job(typed(object)?),
        ("batch", "CronJob") => Typed::CronJob(typed(object)?),
        ("networking.k8s.io", "Ingress") => Typed::Ingress(typed(object)?),
        ("policy", "PodDisruptionBudget") => Typed::PodDisruptionBudget(typed(object)?),
        ("coordination.k8s.io", "Lease") => Typed::Lease(typed(object)?),
        ("autoscaling", "HorizontalPodAutoscaler") => Typed::HorizontalPodAutoscaler(typed(object)?),
        _ => return None,
    };
    Some(typed)
}

/// Decode `value` (a whole object) as the built-in kind `ty`, naming its unknown fields; `None`
/// for a kind the model has no Go type for (custom resources among them).
pub(crate) fn decode_builtin(ty: &ResourceType, value: &Value) -> Option<Result<Decoded, TypeError>> {
    by_kind(ty, FromValue(value))
}

/// [`decode_builtin`] of `object` without converting it to JSON first
/// ([`crate::ignored::deserialize_object`]): `Some` for an object that decodes and whose unknown
/// fields are certain, `None` otherwise (the caller converts it and decodes that).
fn decode_builtin_object(ty: &ResourceType, object: &DynamicObject) -> Option<Decoded> {
    by_kind(ty, FromObject(object)).flatten()
}

/// A decoding, generic over the kind's Go type.
trait DecodeAs {
    type Out;
    fn decode<T: DeserializeOwned + Serialize>(self) -> Self::Out;
}

struct FromValue<'a>(&'a Value);

impl DecodeAs for FromValue<'_> {
    type Out = Result<Decoded, TypeError>;
    fn decode<T: DeserializeOwned + Serialize>(self) -> Self::Out {
        check::<T>(self.0)
    }
}

struct FromObject<'a>(&'a DynamicObject);

impl DecodeAs for FromObject<'_> {
    type Out = Option<Decoded>;
    fn decode<T: DeserializeOwned + Serialize>(self) -> Self::Out {
        match crate::ignored::deserialize_object::<T>(self.0) {
            Ok((_, Some(unknown))) => Some(Decoded { unknown, nulls: Vec::new() }),
            _ => None,
        }
    }
}

/// `decoding` with the Go type of the built-in kind `ty`; `None` for a kind the model has no Go
/// type for (custom resources among them).
fn by_kind<D: DecodeAs>(ty: &ResourceType, decoding: D) -> Option<D::Out> {
    if ty.custom {
        return None;
    }
    macro_rules! decode {
        ($t:ty) => {
            decoding.decode::<$t>()
        };
    }
    use k8s_openapi::api::{events::v1 as events, rbac::v1 as rbac, scheduling::v1 as scheduling};
    let decoded = match (ty.api.group.as_str(), ty.api.kind.as_str()) {
        ("", "Pod") => decode!(core::Pod),
        ("", "ConfigMap") => decode!(core::ConfigMap),
        ("", "Secret") => decode!(core::Secret),
        ("", "Service") => decode!(core::Service),
        ("", "ServiceAccount") => decode!(core::ServiceAccount),
        ("", "PersistentVolumeClaim") => decode!(core::PersistentVolumeClaim),
        ("", "Namespace") => decode!(core::Namespace),
        ("", "Node") => decode!(core::Node),
        ("", "PersistentVolume") => decode!(core::PersistentVolume),
        ("", "Endpoints") => decode!(core::Endpoints),
        ("", "ResourceQuota") => decode!(core::ResourceQuota),
        ("", "LimitRange") => decode!(core::LimitRange),
        ("", "Event") => decode!(core::Event),
        ("apps", "Deployment") => decode!(apps::Deployment),
        ("apps", "ReplicaSet") => decode!(apps::ReplicaSet),
        ("apps", "StatefulSet") => decode!(apps::StatefulSet),
        ("apps", "DaemonSet") => decode!(apps::DaemonSet),
        ("batch", "Job") => decode!(batch::Job),
        ("batch", "CronJob") => decode!(batch::CronJob),
        ("networking.k8s.io", "Ingress") => decode!(networking::Ingress),
        ("networking.k8s.io", "NetworkPolicy") => decode!(networking::NetworkPolicy),
        ("networking.k8s.io", "IngressClass") => decode!(networking::IngressClass),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            decode!(k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler)
        }
        ("storage.k8s.io", "StorageClass") => decode!(k8s_openapi::api::storage::v1::StorageClass),
        ("discovery.k8s.io", "EndpointSlice") => decode!(k8s_openapi::api::discovery::v1::EndpointSlice),
        ("", "PodTemplate") => decode!(core::PodTemplate),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            decode!(k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            decode!(k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            decode!(k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            decode!(k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding)
        }
        ("policy", "PodDisruptionBudget") => decode!(policy::PodDisruptionBudget),
        ("coordination.k8s.io", "Lease") => decode!(coordination::Lease),
        ("events.k8s.io", "Event") => decode!(events::Event),
        ("scheduling.k8s.io", "PriorityClass") => decode!(scheduling::PriorityClass),
        ("rbac.authorization.k8s.io", "Role") => decode!(rbac::Role),
        ("rbac.authorization.k8s.io", "RoleBinding") => decode!(rbac::RoleBinding),
        ("rbac.authorization.k8s.io", "ClusterRole") => decode!(rbac::ClusterRole),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => decode!(rbac::ClusterRoleBinding),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            decode!(apiextensions::CustomResourceDefinition)
        }
        _ => return None,
    };
    Some(decoded)
}

/// The paths of the fields of `input` that `known` (the same object after a round trip through
/// its type, or after pruning) lacks. A null is no field.
pub(crate) fn unknown_fields(
    input: &Value,
    known: &Value,
    path: &mut String,
    out: &mut Vec<String>,
    nulls: &mut Vec<String>,
) {
    match (input, known) {
        (Value::Object(fields), Value::Object(known_fields)) => {
            for (key, value) in fields {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                match known_fields.get(key) {
                    Some(_) if value.is_null() => {}
                    Some(k) => unknown_fields(value, k, path, out, nulls),
                    None if value.is_null() => nulls.push(path.clone()),
                    None => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        (Value::Array(items), Value::Array(known_items)) => {
            for (i, (item, k)) in items.iter().zip(known_items).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                unknown_fields(item, k, path, out, nulls);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Remove the fields at `paths` (as [`unknown_fields`] names them) from `value`.
pub(crate) fn remove_paths(value: &mut Value, paths: &[String]) {
    for path in paths {
        remove_path(value, path);
    }
}

fn remove_path(value: &mut Value, path: &str) {
    let mut parts = split_path(path);
    let Some(last) = parts.pop() else { return };
    let mut at = value;
    for part in parts {
        let next = match part {
            PathPart::Key(k) => at.get_mut(k),
            PathPart::Index(i) => at.get_mut(i),
        };
        let Some(next) = next else { return };
        at = next;
    }
    if let (PathPart::Key(k), Some(map)) = (last, at.as_object_mut()) {
        map.remove(k);
    }
}

enum PathPart<'a> {
    Key(&'a str),
    Index(usize),
}

/// `spec.containers[0].name` as its steps (a key holding `.` or `[` is not told apart; the
/// built-in kinds' unknown fields are struct fields, which never do).
fn split_path(path: &str) -> Vec<PathPart<'_>> {
    let mut parts = Vec::new();
    for segment in path.split('.') {
        let (key, mut rest) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !key.is_empty() {
            parts.push(PathPart::Key(key));
        }
        while let Some(close) = rest.find(']') {
            if let Ok(i) = rest[1..close].parse() {
                parts.push(PathPart::Index(i));
            }
            rest = &rest[close + 1..];
        }
    }
    parts
}

fn value_at<'v>(body: &'v Value, path: &str) -> Option<&'v Value> {
    split_path(path).into_iter().try_fold(body, |v, part| match part {
        PathPart::Key(k) => v.get(k),
        PathPart::Index(i) => v.get(i),
    })
}

/// encoding/json's name of a JSON value's type.
fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The Go type behind serde's expectation.
fn go_type_name(expected: &str) -> &str {
    match expected {
        "i32" => "int32",
        "i64" => "int64",
        "f64" => "float64",
        "a string" => "string",
        "a boolean" => "bool",
        "a sequence" => "[]",
        "a map" => "map[string]",
        other => other.strip_prefix("struct ").unwrap_or(other),
    }
}

/// `unknown field "spec.foo"`, as the strict decoder words one.
pub(crate) fn unknown_field_message(path: &str) -> String {
    format!("unknown field {}", Value::String(path.to_owned()))
}

/// `strict decoding error: unknown field "a", unknown field "b"`.
pub(crate) fn strict_error_message(paths: &[String]) -> String {
    let each: Vec<String> = paths.iter().map(|p| unknown_field_message(p)).collect();
    format!("strict decoding error: {}", each.join(", "))
}

/// 400 BadRequest for a body the URL's kind cannot take, as the create and update handlers'
/// transformDecodeError words it: `ConfigMap in version "v1" cannot be handled as a ConfigMap:
/// <why>`.
pub(crate) fn cannot_handle(body_kind: &str, body_version: &str, url_kind: &str, why: &str) -> Status {
    errors::bad_request(&format!(
        "{body_kind} in version {} cannot be handled as a {url_kind}: {why}",
        Value::String(body_version.to_owned())
    ))
}

/// 422 Invalid for a patch whose result does not decode (a wrong type, or unknown fields under
/// Strict), as the patch handler answers: one `patch` cause holding the patched object.
pub(crate) fn invalid_patch(patched: &Value, why: &str) -> Status {
    errors::invalid(
        "",
        "",
        "",
        vec![errors::cause(
            "FieldValueInvalid",
            "patch",
            format!("Invalid value: {}: {why}", Value::String(patched.to_string())),
        )],
    )
}

impl ApiServer {
    /// Decode a POST or PUT body for `t`, as the handlers do before anything else: the body's
    /// kind and apiVersion (defaulting to the URL's), its Go type, and its unknown fields
    /// (dropped, with a warning under Warn; 400 under Strict). A custom resource's unknown fields
    /// are found by its schema's pruning (see [`ApiServer::check_pruned_fields`]).
    pub(crate) fn decode_body(
        &self,
        t: &Target,
        object: &mut DynamicObject,
        ctx: &mut Context<'_>,
    ) -> Result<(), Status> {
        check_body_type(t, object, &self.types)?;
        if t.ty.custom {
            return self.check_pruned_fields(t, object, ctx, Write::Body);
        }
        let decoded = match decode_builtin_object(&t.ty, object) {
            Some(decoded) => decoded,
            None => {
                let value = serde_json::to_value(&*object)
                    .map_err(|e| errors::internal_error(&format!("encoding the object: {e}")))?;
                let Some(decoded) = decode_builtin(&t.ty, &value) else { return Ok(()) };
                let (kind, version) = (&t.ty.api.kind, &t.ty.api.version);
                decoded.map_err(|e| cannot_handle(kind, version, kind, &e.go_message(&value)))?
            }
        };
        remove_paths(&mut object.data, &decoded.nulls);
        self.handle_unknown(t, object, &decoded.unknown, ctx, Write::Body)?;
        crate::go_types::encode_object(object, crate::go_types::Mode::Drop);
        Ok(())
    }

    /// Decode a patched object (the stored object with a merge, JSON or strategic merge patch
    /// applied): a type error, or an unknown field under Strict, is 422 Invalid on `patch`.
    pub(crate) fn decode_patched(
        &self,
        t: &Target,
        object: &mut DynamicObject,
        ctx: &mut Context<'_>,
    ) -> Result<(), Status> {
        if t.ty.custom {
            return self.check_pruned_fields(t, object, ctx, Write::Patch);
        }
        let decoded = match decode_builtin_object(&t.ty, object) {
            Some(decoded) => decoded,
            None => {
                let value = serde_json::to_value(&*object)
                    .map_err(|e| errors::internal_error(&format!("encoding the object: {e}")))?;
                let Some(decoded) = decode_builtin(&t.ty, &value) else { return Ok(()) };
                decoded.map_err(|e| invalid_patch(&value, &e.go_message(&value)))?
            }
        };
        remove_paths(&mut object.data, &decoded.nulls);
        self.handle_unknown(t, object, &decoded.unknown, ctx, Write::Patch)?;
        crate::go_types::encode_object(object, crate::go_types::Mode::Drop);
        Ok(())
    }

    /// A custom resource's fields that its schema prunes are its unknown fields: under Strict
    /// they refuse the write, under Warn each is a warning; pruning itself happens in
    /// admission, as before.
    fn check_pruned_fields(
        &self,
        t: &Target,
        object: &mut DynamicObject,
        ctx: &mut Context<'_>,
        write: Write,
    ) -> Result<(), Status> {
        if t.field_validation == FieldValidation::Ignore {
            return Ok(());
        }
        let Some(schema) = t.ty.schema.as_deref() else { return Ok(()) };
        let mut pruned = object.data.clone();
        crate::schema::prune(schema, &mut pruned);
        // Null fields the schema prunes go in admission's pruning, as every pruned field does.
        let (mut unknown, mut nulls) = (Vec::new(), Vec::new());
        unknown_fields(&object.data, &pruned, &mut String::new(), &mut unknown, &mut nulls);
        self.handle_unknown(t, object, &unknown, ctx, write)
    }

    /// Strict: refuse; Warn: one warning per field; then drop them all.
    fn handle_unknown(
        &self,
        t: &Target,
        object: &mut DynamicObject,
        unknown: &[String],
        ctx: &mut Context<'_>,
        write: Write,
    ) -> Result<(), Status> {
        if unknown.is_empty() {
            return Ok(());
        }
        match t.field_validation {
            FieldValidation::Strict => {
                let why = strict_error_message(unknown);
                return Err(match write {
                    Write::Body => cannot_handle(&t.ty.api.kind, &t.ty.api.version, &t.ty.api.kind, &why),
                    Write::Patch => {
                        let value = serde_json::to_value(&*object).unwrap_or(Value::Null);
                        invalid_patch(&value, &why)
                    }
                });
            }
            FieldValidation::Warn => ctx.warnings.extend(unknown.iter().map(|p| unknown_field_message(p))),
            FieldValidation::Ignore => {}
        }
        remove_paths(&mut object.data, unknown);
        Ok(())
    }
}

/// An apply body of a built-in kind must fit the kind's schema whatever `fieldValidation`
/// says: the field manager's typed conversion refuses a wrong type, an unknown field or a keyed
/// list item without its key ([`crate::apply::keyed_list_errors`]; a custom resource's map
/// lists, by its schema's `x-kubernetes-list-map-keys`, too), with an
/// error that is no API status (500, reason unset), as kube-apiserver answers. Its apiVersion
/// must be the URL's: 400 BadRequest otherwise.
pub(crate) fn check_apply_body(t: &Target, name: &str, body: &Value) -> Result<(), Status> {
    let version = body.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if !version.is_empty() && version != t.ty.api.api_version {
        return Err(errors::bad_request(&format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            t.ty.api.api_version
        )));
    }
    let problems: Vec<String> = match decode_builtin(&t.ty, body) {
        Some(Ok(d)) => {
            let unknown = d.unknown.iter().map(|p| format!(".{p}: field not declared in schema"));
            unknown.chain(crate::apply::keyed_list_errors(body, &t.ty.api, None)).collect()
        }
        Some(Err(e)) => vec![format!(".{}: {}", e.path, e.message)],
        // A custom resource's typed conversion follows its schema: its map lists need their keys.
        None => match t.ty.custom_schema() {
            Some(schema) => crate::apply::keyed_list_errors(body, &t.ty.api, Some(schema)),
            None => return Ok(()),
        },
    };
    if problems.is_empty() {
        return Ok(());
    }
    let problems = match problems.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    let object = if t.namespace.is_empty() { name.to_owned() } else { format!("{}/{name}", t.namespace) };
    let group_version = if t.ty.api.group.is_empty() {
        format!("/{}", t.ty.api.version)
    } else {
        t.ty.api.api_version.clone()
    };
    let message = format!(
        "failed to create typed patch object ({object}; {group_version}, Kind={}): {problems}",
        t.ty.api.kind
    );
    Err(Status::failure(&message, "").with_code(500))
}

/// Which handler's error shape a decoding failure takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Write {
    /// POST or PUT: 400 BadRequest.
    Body,
    /// PATCH: 422 Invalid on `patch`.
    Patch,
}

/// The body's kind and apiVersion must be the URL's (a missing one is taken from the URL, as the
/// decoder's default kind). A built-in kind cannot be handled as another: 400 BadRequest, worded
/// as conversion (another kind the server knows) or as an unregistered kind fails. A custom
/// resource's validation says which of the two is wrong: 422 Invalid on `kind` or `apiVersion`.
/// Another served version of the same custom resource is accepted (conversion strategy None).
fn check_body_type(t: &Target, object: &mut DynamicObject, types: &ResourceTypes) -> Result<(), Status> {
    // Nearly every body names its own type: then there is nothing to fill in or to copy.
    if object
        .types
        .as_ref()
        .is_some_and(|given| given.kind == t.ty.api.kind && given.api_version == t.ty.api.api_version)
    {
        return Ok(());
    }
    let expected = t.type_meta();
    let given = object.types.clone().unwrap_or_default();
    let kind = if given.kind.is_empty() { expected.kind.clone() } else { given.kind };
    let api_version =
        if given.api_version.is_empty() { expected.api_version.clone() } else { given.api_version };
    if kind == expected.kind && api_version == expected.api_version {
        object.types = Some(expected);
        return Ok(());
    }
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), api_version.clone()),
    };
    if t.ty.custom {
        let same_resource = kind == expected.kind
            && group == t.ty.api.group
            && types.by_kind(&api_version, &kind).is_some_and(|other| other.api.plural == t.ty.api.plural);
        if same_resource {
            object.types = Some(expected);
            return Ok(());
        }
        let mut causes = Vec::new();
        if kind != expected.kind {
            let why = format!("Invalid value: {}: must be {}", Value::String(kind.clone()), expected.kind);
            causes.push(errors::cause("FieldValueInvalid", "kind", why));
        }
        if api_version != expected.api_version {
            let why = format!(
                "Invalid value: {}: must be {}",
                Value::String(api_version.clone()),
                expected.api_version
            );
            causes.push(errors::cause("FieldValueInvalid", "apiVersion", why));
        }
        let name = object.metadata.name.clone().unwrap_or_default();
        return Err(errors::invalid(&t.ty.api.group, &t.ty.api.kind, &name, causes));
    }
    let why = match types.by_kind(&api_version, &kind).filter(|other| !other.custom) {
        Some(_) => format!(
            "converting ({version}.{kind}) to ({}.{}): unknown conversion",
            internal_package(&t.ty.api.group),
            t.ty.api.kind
        ),
        None => format!(
            "no kind {} is registered for version {} in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
            Value::String(kind.clone()),
            Value::String(api_version.clone())
        ),
    };
    Err(cannot_handle(&kind, &version, &t.ty.api.kind, &why))
}

/// The Go package of a group's internal types, as conversion errors name it.
fn internal_package(group: &str) -> &str {
    match group {
        "" => "core",
        other => other.split('.').next().unwrap_or(other),
    }
}
