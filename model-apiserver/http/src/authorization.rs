//! `authorization.k8s.io/v1` SelfSubjectAccessReview and SelfSubjectRulesReview: what
//! `kubectl auth can-i` asks.
//!
//! The model does not enforce RBAC: every request is allowed, so every access review answers
//! allowed and every rules review answers the rules of a cluster admin (`*` on everything).
//! Both are create-only, as on kube-apiserver: nothing is stored, and the reply is the posted
//! review with its `status` filled in (201 Created). kubectl posts them in protobuf; the few
//! fields a review has are read here by hand ([`super::wire`]), the descriptor set of
//! [`super::protobuf`] holding no authorization group.

use hyper::header::{CONTENT_TYPE, HeaderMap};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube_core::Status;
use model_apiserver::errors;
use serde_json::{Map, Value, json};

use super::{
    decode,
    http::{self, Reply},
    protobuf,
    wire::{self, Field},
};

/// The API group of the reviews.
pub const GROUP: &str = "authorization.k8s.io";
/// Its one served version.
pub const VERSION: &str = "v1";

/// The reason an access review gives for allowing.
pub const ALLOWED_REASON: &str = "kube-sim does not enforce RBAC: every request is allowed";

/// The review kinds: plural, kind.
const REVIEWS: &[(&str, &str)] = &[
    ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
];

/// Whether `plural` is a review served here.
pub fn serves(group: &str, version: &str, plural: &str) -> bool {
    group == GROUP && version == VERSION && REVIEWS.iter().any(|(p, _)| *p == plural)
}

/// The discovery entries of the reviews, as kube-apiserver lists them: cluster-scoped,
/// `create` only.
pub fn resources() -> Vec<APIResource> {
    REVIEWS
        .iter()
        .map(|(plural, kind)| APIResource {
            name: (*plural).to_owned(),
            singular_name: kind.to_lowercase(),
            namespaced: false,
            kind: (*kind).to_owned(),
            verbs: vec!["create".to_owned()],
            ..Default::default()
        })
        .collect()
}

/// Serve a request to `/apis/authorization.k8s.io/v1/{plural}[/{name}]`.
pub fn serve(
    method: &hyper::Method,
    plural: &str,
    name: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Reply {
    if method != hyper::Method::POST || name.is_some() {
        return http::status(&errors::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let kind = REVIEWS.iter().find(|(p, _)| *p == plural).map_or("", |(_, k)| *k);
    match review(kind, headers, body) {
        Ok(answer) => http::json(201, &answer),
        Err(status) => http::status(&status),
    }
}

/// The posted review, with its status.
fn review(kind: &str, headers: &HeaderMap, body: &[u8]) -> Result<Value, Status> {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let spec = if protobuf::is_protobuf(content_type, body) {
        protobuf_spec(kind, body)?
    } else {
        let value = decode::object(decode::Media::of_object(content_type)?, body, kind)?;
        check_kind(&value, kind)?;
        value.get("spec").cloned().unwrap_or_else(|| json!({}))
    };
    let status = if kind == "SelfSubjectAccessReview" {
        check_access_spec(&spec)?;
        json!({"allowed": true, "reason": ALLOWED_REASON})
    } else {
        json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        })
    };
    Ok(json!({
        "kind": kind,
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    }))
}

/// A JSON body must be the kind of its path (or say no kind).
fn check_kind(value: &Value, kind: &str) -> Result<(), Status> {
    match value.get("kind").and_then(Value::as_str) {
        None | Some("") => Ok(()),
        Some(k) if k == kind => Ok(()),
        Some(other) => Err(errors::bad_request(&format!(
            "the object provided is unrecognized: expected {kind}, got {other}"
        ))),
    }
}

/// Exactly one of `resourceAttributes` and `nonResourceAttributes`, as
/// `ValidateSelfSubjectAccessReviewSpec` requires.
fn check_access_spec(spec: &Value) -> Result<(), Status> {
    let has = |field: &str| spec.get(field).is_some_and(|v| !v.is_null());
    let (resource, non_resource) = (has("resourceAttributes"), has("nonResourceAttributes"));
    let message = match (resource, non_resource) {
        (true, false) | (false, true) => return Ok(()),
        (true, true) => "cannot be specified in combination with resourceAttributes",
        (false, false) => "exactly one of nonResourceAttributes or resourceAttributes must be specified",
    };
    let (field, value) =
        if resource { ("spec.nonResourceAttributes", "{}") } else { ("spec.resourceAttributes", "null") };
    Err(errors::invalid(
        GROUP,
        "SelfSubjectAccessReview",
        "",
        vec![errors::cause("FieldValueInvalid", field, format!("Invalid value: \"{value}\": {message}"))],
    ))
}

/// The `spec` of a protobuf review, as JSON: `runtime.Unknown { typeMeta: 1, raw: 2 }` around
/// `Review { metadata: 1, spec: 2, status: 3 }`.
fn protobuf_spec(kind: &str, body: &[u8]) -> Result<Value, Status> {
    let bad = |e: String| errors::bad_request(&format!("error decoding the protobuf {kind}: {e}"));
    let payload = body.strip_prefix(protobuf::MAGIC).ok_or_else(|| bad("no k8s\\0 magic".to_owned()))?;
    let envelope = wire::fields(payload).map_err(bad)?;
    let raw = envelope.iter().find_map(|(n, f)| bytes_of(*n, *f, 2)).unwrap_or_default();
    let review = wire::fields(raw).map_err(bad)?;
    let spec = review.iter().find_map(|(n, f)| bytes_of(*n, *f, 2)).unwrap_or_default();
    let spec = wire::fields(spec).map_err(bad)?;
    let mut out = Map::new();
    if kind == "SelfSubjectRulesReview" {
        strings_into(&spec, &[(1, "namespace")], &mut out);
        return Ok(Value::Object(out));
    }
    const RESOURCE: &[(u32, &str)] = &[
        (1, "namespace"),
        (2, "verb"),
        (3, "group"),
        (4, "version"),
        (5, "resource"),
        (6, "subresource"),
        (7, "name"),
    ];
    const NON_RESOURCE: &[(u32, &str)] = &[(1, "path"), (2, "verb")];
    for (number, field, names) in
        [(1, "resourceAttributes", RESOURCE), (2, "nonResourceAttributes", NON_RESOURCE)]
    {
        if let Some(bytes) = spec.iter().find_map(|(n, f)| bytes_of(*n, *f, number)) {
            let mut attributes = Map::new();
            strings_into(&wire::fields(bytes).map_err(bad)?, names, &mut attributes);
            out.insert(field.to_owned(), Value::Object(attributes));
        }
    }
    Ok(Value::Object(out))
}

pub(crate) fn bytes_of(number: u32, field: Field<'_>, wanted: u32) -> Option<&[u8]> {
    match field {
        Field::Bytes(b) if number == wanted => Some(b),
        _ => None,
    }
}

/// The string fields `names` of a message into `out`, by their JSON names.
pub(crate) fn strings_into(fields: &[(u32, Field<'_>)], names: &[(u32, &str)], out: &mut Map<String, Value>) {
    for (number, field) in fields {
        if let (Some((_, name)), Field::Bytes(b)) = (names.iter().find(|(n, _)| n == number), field)
            && !b.is_empty()
        {
            out.insert((*name).to_owned(), Value::String(String::from_utf8_lossy(b).into_owned()));
        }
    }
}
