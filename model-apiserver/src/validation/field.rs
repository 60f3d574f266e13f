//! Field errors as apimachinery's `field` package builds them: a path
//! (`spec.template.spec.containers[0].image`), a reason (`FieldValueRequired`, ...) and a message
//! (`Required value`, `Invalid value: -1: must be greater than or equal to 0`, ...), plus the checks
//! that every group's validation shares (non-negative numbers, DNS names, label selectors, port
//! numbers and names).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString};
use kube_core::response::StatusCause;
use serde_json::Value;

use crate::{errors, metadata};

/// A field path, printed as apimachinery prints one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A root path: `spec`, `metadata`, `data`.
    pub(crate) fn new(root: &str) -> Path {
        Path(root.to_owned())
    }
    /// `self.name`.
    // Paths are built for every field validated, valid or not: `concat` copies the parts into
    // one allocation without the formatting machinery `format!` runs (several times the
    // instructions for these few bytes).
    pub(crate) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() { Path(name.to_owned()) } else { Path([self.0.as_str(), ".", name].concat()) }
    }
    /// `self[i]`.
    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
    /// `self[key]`.
    pub(crate) fn key(&self, key: &str) -> Path {
        Path([self.0.as_str(), "[", key, "]"].concat())
    }
    /// The printed path.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A value as Go's field errors print a bad value: numbers and booleans plain, strings quoted,
/// anything else as JSON (`map[string]string{...}` for string maps).
pub(crate) fn go(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Object(m) if m.values().all(Value::is_string) => {
            let items: Vec<String> =
                m.iter().map(|(k, v)| format!("{}:{v}", Value::String(k.clone()))).collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// A quoted string, as Go's `%q`.
pub(crate) fn q(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A string map as Go prints it.
pub(crate) fn go_map(m: Option<&BTreeMap<String, String>>) -> String {
    match m {
        None => "map[string]string(nil)".to_owned(),
        Some(m) => go(&serde_json::to_value(m).unwrap_or(Value::Null)),
    }
}

/// `FieldValueRequired`: `Required value` (and the detail).
pub(crate) fn required(path: &Path, detail: &str) -> StatusCause {
    let message =
        if detail.is_empty() { "Required value".to_owned() } else { format!("Required value: {detail}") };
    errors::cause("FieldValueRequired", path.as_str(), message)
}

/// `FieldValueInvalid`: `Invalid value: <shown>: detail`; `shown` is already formatted ([`go`],
/// [`q`], a number).
pub(crate) fn invalid(path: &Path, shown: impl std::fmt::Display, detail: &str) -> StatusCause {
    errors::cause("FieldValueInvalid", path.as_str(), format!("Invalid value: {shown}: {detail}"))
}

/// `FieldValueNotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub(crate) fn not_supported(path: &Path, value: &str, supported: &[&str]) -> StatusCause {
    let supported: Vec<String> = supported.iter().map(|s| q(s)).collect();
    errors::cause(
        "FieldValueNotSupported",
        path.as_str(),
        format!("Unsupported value: {}: supported values: {}", q(value), supported.join(", ")),
    )
}

/// `FieldValueDuplicate`: `Duplicate value: <shown>`.
pub(crate) fn duplicate(path: &Path, shown: impl std::fmt::Display) -> StatusCause {
    errors::cause("FieldValueDuplicate", path.as_str(), format!("Duplicate value: {shown}"))
}

/// `FieldValueForbidden`: `Forbidden: detail`.
pub(crate) fn forbidden(path: &Path, detail: &str) -> StatusCause {
    errors::cause("FieldValueForbidden", path.as_str(), format!("Forbidden: {detail}"))
}

/// `FieldValueNotFound`: `Not found: <shown>`.
pub(crate) fn not_found(path: &Path, shown: impl std::fmt::Display) -> StatusCause {
    errors::cause("FieldValueNotFound", path.as_str(), format!("Not found: {shown}"))
}

/// `FieldValueTooLong`: `Too long: may not be more than N bytes`.
pub(crate) fn too_long(path: &Path, max: usize) -> StatusCause {
    errors::cause("FieldValueTooLong", path.as_str(), format!("Too long: may not be more than {max} bytes"))
}

/// apimachinery's IsNegativeErrorMsg.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";

/// ValidateNonnegativeField.
pub(crate) fn non_negative(value: Option<i64>, path: &Path, out: &mut Vec<StatusCause>) {
    if let Some(v) = value.filter(|v| *v < 0) {
        out.push(invalid(path, v, NEGATIVE));
    }
}

/// A DNS-1123 label (`a lowercase RFC 1123 label must consist of...`).
pub(crate) fn dns1123_label(value: &str, path: &Path, out: &mut Vec<StatusCause>) {
    out.extend(metadata::validate_name(crate::resources::NameRule::Label, path.as_str(), value));
}

/// A DNS-1123 subdomain.
pub(crate) fn dns1123_subdomain(value: &str, path: &Path, out: &mut Vec<StatusCause>) {
    out.extend(metadata::validate_name(crate::resources::NameRule::Subdomain, path.as_str(), value));
}

/// IsValidPortNum's message.
pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// A port number 1..=65535.
pub(crate) fn port_number(value: i32, path: &Path, out: &mut Vec<StatusCause>) {
    if !(1..=65535).contains(&value) {
        out.push(invalid(path, value, PORT_RANGE));
    }
}

/// IsValidPortName: an IANA service name.
pub(crate) fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

/// A port name.
pub(crate) fn port_name(name: &str, path: &Path, out: &mut Vec<StatusCause>) {
    for msg in port_name_errors(name) {
        out.push(invalid(path, q(name), msg));
    }
}

/// ValidatePortNumOrName: a number in range or a valid port name.
pub(crate) fn port_num_or_name(port: &IntOrString, path: &Path, out: &mut Vec<StatusCause>) {
    match port {
        IntOrString::Int(n) => port_number(*n, path, out),
        IntOrString::String(s) if s.is_empty() => {
            out.push(invalid(path, q(s), "must contain at least one letter or number (a-z, 0-9)"))
        }
        IntOrString::String(s) => port_name(s, path, out),
    }
}

/// ValidatePositiveIntOrPercent and IsNotMoreThan100Percent (`max_100`).
pub(crate) fn int_or_percent(value: &IntOrString, path: &Path, max_100: bool, out: &mut Vec<StatusCause>) {
    match value {
        IntOrString::Int(n) if *n < 0 => out.push(invalid(path, n, NEGATIVE)),
        IntOrString::Int(_) => {}
        IntOrString::String(s) => match s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()) {
            None => out.push(invalid(path, q(s), "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")),
            Some(n) if n < 0 => out.push(invalid(path, q(s), NEGATIVE)),
            Some(n) if max_100 && n > 100 => {
                out.push(invalid(path, q(s), "must not be greater than 100%"))
            }
            Some(_) => {}
        },
    }
}

/// The value of an int-or-percent against 100 (`Int` as is, `"25%"` as 25 of 100): only whether
/// it is zero matters to the callers.
pub(crate) fn is_zero(value: &IntOrString) -> bool {
    match value {
        IntOrString::Int(n) => *n == 0,
        IntOrString::String(s) => s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()) == Some(0),
    }
}

/// Label keys and values of a map that is not metadata (a selector's matchLabels, a node
/// selector): errors at `path` itself, as ValidateLabels reports them.
pub(crate) fn labels(map: Option<&BTreeMap<String, String>>, path: &Path, out: &mut Vec<StatusCause>) {
    for (key, value) in map.into_iter().flatten() {
        for err in super::qualified_name_errors(key) {
            out.push(invalid(path, q(key), &err));
        }
        for err in super::label_value_errors(value) {
            out.push(invalid(path, q(value), &err));
        }
    }
}

/// ValidateLabelSelector: matchLabels, and each expression's key, operator and values.
pub(crate) fn label_selector(selector: &LabelSelector, path: &Path, out: &mut Vec<StatusCause>) {
    for (i, expr) in selector.match_expressions.iter().flatten().enumerate() {
        let at = path.child("matchExpressions").index(i);
        let values = expr.values.as_deref().unwrap_or_default();
        match expr.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => out
                .push(required(&at.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(forbidden(
                &at.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.push(invalid(&at.child("operator"), q(other), "not a valid selector operator")),
        }
        for err in super::qualified_name_errors(&expr.key) {
            out.push(invalid(&at.child("key"), q(&expr.key), &err));
        }
    }
    labels(selector.match_labels.as_ref(), &path.child("matchLabels"), out);
}

/// Whether a selector selects nothing in particular (no labels, no expressions): such a selector
/// matches every object.
pub(crate) fn selector_is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Whether `selector` matches `labels` (LabelSelectorAsSelector, then Matches).
pub(crate) fn selector_matches(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k));
    let by_labels = selector.match_labels.iter().flatten().all(|(k, v)| get(k) == Some(v));
    let by_expressions = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => get(&e.key).is_some(),
            "DoesNotExist" => get(&e.key).is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

/// A LabelSelector as Go prints it in an immutability error.
pub(crate) fn go_selector(selector: &LabelSelector) -> String {
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_map(selector.match_labels.as_ref()),
        match &selector.match_expressions {
            None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
            Some(e) => serde_json::to_string(e).unwrap_or_default(),
        }
    )
}

/// `value` must be one of `supported` (a missing one is `Required`).
pub(crate) fn one_of(value: Option<&str>, path: &Path, supported: &[&str], out: &mut Vec<StatusCause>) {
    match value {
        None | Some("") => out.push(required(path, "")),
        Some(v) if !supported.contains(&v) => out.push(not_supported(path, v, supported)),
        Some(_) => {}
    }
}

/// `value`, when set, must be one of `supported`.
pub(crate) fn one_of_if_set(
    value: Option<&str>,
    path: &Path,
    supported: &[&str],
    out: &mut Vec<StatusCause>,
) {
    if let Some(v) = value.filter(|v| !supported.contains(v)) {
        out.push(not_supported(path, v, supported));
    }
}
