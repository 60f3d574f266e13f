//! `Status` errors with the reason, code, message and details a real kube-apiserver returns.
//!
//! Messages follow apimachinery's `k8s.io/apimachinery/pkg/api/errors` wording, so that a
//! controller matching on them (or a person reading them) sees what production would show.

use kube_core::{
    Status,
    response::{StatusCause, StatusDetails},
};

/// The `details` block: `kind` is the resource (plural) for most reasons, the Kind for Invalid.
fn details(group: &str, kind: &str, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: kind.to_owned(),
        uid: String::new(),
        causes: Vec::new(),
        retry_after_seconds: 0,
    }
}

/// `group/resource` as apimachinery prints a GroupResource: `configmaps`, `deployments.apps`.
pub fn group_resource(group: &str, plural: &str) -> String {
    if group.is_empty() { plural.to_owned() } else { [plural, ".", group].concat() }
}

/// 404 NotFound: `configmaps "a" not found`.
pub fn not_found(group: &str, plural: &str, name: &str) -> Status {
    // A controller's get of what does not exist yet is routine: built by `concat`, not `format!`.
    let message = [group_resource(group, plural).as_str(), " \"", name, "\" not found"].concat();
    Status::failure(&message, "NotFound").with_code(404).with_details(details(group, plural, name))
}

/// 409 AlreadyExists: `configmaps "a" already exists`.
pub fn already_exists(group: &str, plural: &str, name: &str) -> Status {
    Status::failure(&format!("{} \"{name}\" already exists", group_resource(group, plural)), "AlreadyExists")
        .with_code(409)
        .with_details(details(group, plural, name))
}

/// 409 Conflict on a resourceVersion mismatch (optimistic concurrency).
pub fn conflict(group: &str, plural: &str, name: &str) -> Status {
    conflict_with(
        group,
        plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// 409 Conflict with a specific explanation (precondition failures, generateName exhaustion...).
pub fn conflict_with(group: &str, plural: &str, name: &str, why: &str) -> Status {
    Status::failure(
        &format!("Operation cannot be fulfilled on {} \"{name}\": {why}", group_resource(group, plural)),
        "Conflict",
    )
    .with_code(409)
    .with_details(details(group, plural, name))
}

/// A field error, as apimachinery's `field.Error`: reason `FieldValueInvalid`,
/// `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueForbidden`, `FieldValueTypeInvalid`,
/// `FieldValueDuplicate`, `FieldValueTooLong`...
pub fn cause(reason: &str, field: &str, message: impl Into<String>) -> StatusCause {
    StatusCause { reason: reason.to_owned(), message: message.into(), field: field.to_owned() }
}

/// 422 Invalid: `ConfigMap "A" is invalid: metadata.name: Invalid value: ...`.
///
/// `kind` is the Kind (not the plural), as the real server reports it for this reason.
pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Status {
    let summary = match causes.as_slice() {
        [] => String::new(),
        [one] => format!(": {}: {}", one.field, one.message),
        many => format!(
            ": [{}]",
            many.iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut d = details(group, kind, name);
    d.causes = causes;
    // The kind qualified by its group, as a GroupKind prints: `Deployment.apps`.
    let qualified = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
    Status::failure(&format!("{qualified} \"{name}\" is invalid{summary}"), "Invalid")
        .with_code(422)
        .with_details(d)
}

/// 410 Expired: `too old resource version: 5 (12)`.
pub fn expired(requested: u64, oldest: u64) -> Status {
    Status::failure(&format!("too old resource version: {requested} ({oldest})"), "Expired").with_code(410)
}

/// 410 Expired for a continue token whose revision was compacted.
pub fn continue_expired() -> Status {
    Status::failure(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        "Expired",
    )
    .with_code(410)
}

/// 400 BadRequest.
pub fn bad_request(message: &str) -> Status {
    Status::failure(message, "BadRequest").with_code(400)
}

/// 403 Forbidden: `pods "p" is forbidden: <why>`, or `pods is forbidden: <why>` for a request
/// that names no object (a list, a create by generateName), as `NewForbidden` words it.
pub fn forbidden(group: &str, plural: &str, name: &str, why: &str) -> Status {
    let resource = group_resource(group, plural);
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!("{resource} \"{name}\" is forbidden: {why}")
    };
    Status::failure(&message, "Forbidden").with_code(403).with_details(details(group, plural, name))
}

/// 404 NotFound for a path the server does not serve (an unknown resource or subresource, or a
/// subresource the kind does not have), with kube-apiserver's message.
pub fn resource_not_found() -> Status {
    Status::failure("the server could not find the requested resource", "NotFound")
        .with_code(404)
        .with_details(details("", "", ""))
}

/// 422 Invalid for a JSON patch that does not apply (a `remove` or `replace` of an absent path,
/// a failed `test`), as apimachinery's `NewGenericServerResponse` words it: a fixed message and
/// empty details.
pub fn json_patch_failed() -> Status {
    Status::failure("the server rejected our request due to an error in our request", "Invalid")
        .with_code(422)
        .with_details(details("", "", ""))
}

/// 405 MethodNotAllowed.
pub fn method_not_allowed(message: &str) -> Status {
    Status::failure(message, "MethodNotAllowed").with_code(405)
}

/// 415 UnsupportedMediaType.
pub fn unsupported_media_type(message: &str) -> Status {
    Status::failure(message, "UnsupportedMediaType").with_code(415)
}

/// 429 TooManyRequests with `retryAfterSeconds`.
pub fn too_many_requests(retry_after_seconds: u32) -> Status {
    let mut d = details("", "", "");
    d.retry_after_seconds = retry_after_seconds;
    Status::failure("Too many requests, please try again later.", "TooManyRequests")
        .with_code(429)
        .with_details(d)
}

/// 500 InternalError.
pub fn internal_error(message: &str) -> Status {
    Status::failure(&format!("Internal error occurred: {message}"), "InternalError").with_code(500)
}

/// 504 Timeout: the server did not answer in time (the write may or may not have happened).
pub fn timeout(message: &str) -> Status {
    Status::failure(message, "Timeout").with_code(504)
}

/// 504 Timeout for a read at a resourceVersion newer than the server's current one, as the
/// real server answers after waiting for it: `Too large resource version: 15, current: 10`.
pub fn too_large_resource_version(requested: u64, current: u64) -> Status {
    let mut d = details("", "", "");
    d.causes = vec![cause("ResourceVersionTooLarge", "", "Too large resource version")];
    d.retry_after_seconds = 1;
    timeout(&format!("Too large resource version: {requested}, current: {current}")).with_details(d)
}

/// 422 Invalid for bad list or watch options (`ListOptions`), as the real server validates them.
pub fn invalid_list_options(causes: Vec<StatusCause>) -> Status {
    invalid("meta.k8s.io", "ListOptions", "", causes)
}

/// The `Success` Status a delete answers with when the object is gone at once: the registry's
/// `finalizeDelete` sets no `code` (the HTTP answer is 200 all the same).
pub fn deleted(group: &str, plural: &str, name: &str, uid: &str) -> Status {
    let mut d = details(group, plural, name);
    d.uid = uid.to_owned();
    Status::success().with_details(d)
}

/// Go's `strconv.Quote`, as upstream's messages quote their input with `%q`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
