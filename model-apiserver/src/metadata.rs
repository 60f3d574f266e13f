//! Object metadata rules: server-owned fields (uid, timestamps, generation), name validation,
//! `generateName`, owner references and finalizers, with the field errors the real server gives.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube_core::{DynamicObject, ObjectMeta, response::StatusCause};

use crate::{context::IdSource, errors, resources::NameRule};

/// The alphabet of `generateName` suffixes: apimachinery's `utilrand.String`, which leaves out
/// vowels and look-alike characters so that generated names never spell words.
const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of a `generateName` suffix.
const GENERATE_NAME_SUFFIX_LEN: usize = 5;
/// Longest prefix kept from `generateName` (the suffix must fit in a 63-character label).
const GENERATE_NAME_PREFIX_LEN_MAX: usize = 58;
/// How many names the server tries for one `generateName` create before giving up, as
/// kube-apiserver's RetryGenerateName (8 attempts in total).
pub(crate) const GENERATE_NAME_ATTEMPTS_MAX: usize = 8;

const DNS1123_LABEL_LEN_MAX: usize = 63;
const DNS1123_SUBDOMAIN_LEN_MAX: usize = 253;
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// A fresh uid: 128 bits from `ids`, formatted as a version-4 UUID as the real server's are.
pub(crate) fn new_uid(ids: &mut dyn IdSource) -> String {
    let hi = ids.next_u64();
    let lo = ids.next_u64();
    // Version 4 in the high nibble of time_hi, variant 10 in the top bits of clock_seq.
    let hi = (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    // The 32 hex digits of hi then lo, hyphenated 8-4-4-4-12. Written digit by digit rather than
    // with `format!` and its five width specs, which cost about ten times as many instructions.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits = (u128::from(hi) << 64) | u128::from(lo);
    let mut uid = [b'-'; 36];
    let mut at = 0;
    for digit in 0..32 {
        if matches!(digit, 8 | 12 | 16 | 20) {
            at += 1;
        }
        uid[at] = HEX[((bits >> (124 - 4 * digit)) & 0xF) as usize];
        at += 1;
    }
    // ASCII throughout, so this is a copy.
    String::from_utf8_lossy(&uid).into_owned()
}

/// `now` truncated to whole seconds: metav1.Time serializes with second precision, so the real
/// server's timestamps never carry fractions.
pub(crate) fn timestamp(now: jiff::Timestamp) -> Time {
    Time(jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// `now + seconds`, in whole seconds.
pub(crate) fn timestamp_after(now: jiff::Timestamp, seconds: i64) -> Time {
    let at = now.as_second().saturating_add(seconds);
    Time(jiff::Timestamp::from_second(at).unwrap_or(now))
}

/// `prefix` plus a random 5-character suffix.
pub(crate) fn generate_name(prefix: &str, ids: &mut dyn IdSource) -> String {
    let mut name: String = prefix.chars().take(GENERATE_NAME_PREFIX_LEN_MAX).collect();
    for _ in 0..GENERATE_NAME_SUFFIX_LEN {
        let alphabet_len = GENERATE_NAME_ALPHABET.len() as u64;
        let i = (ids.next_u64() % alphabet_len) as usize;
        name.push(char::from(GENERATE_NAME_ALPHABET[i]));
    }
    name
}

/// The field errors for `name` under `rule` (empty when valid), in apimachinery's words
/// (IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label, path.IsValidPathSegmentName).
pub(crate) fn validate_name(rule: NameRule, field: &str, name: &str) -> Vec<StatusCause> {
    let (len_max, ok, err) = match rule {
        NameRule::Label => (DNS1123_LABEL_LEN_MAX, is_dns1123_label(name), DNS1123_LABEL_ERR),
        NameRule::Subdomain => {
            (DNS1123_SUBDOMAIN_LEN_MAX, name.split('.').all(is_dns1123_label), DNS1123_SUBDOMAIN_ERR)
        }
        NameRule::Dns1035Label => (
            DNS1123_LABEL_LEN_MAX,
            is_dns1123_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase()),
            DNS1035_LABEL_ERR,
        ),
        NameRule::PathSegment => {
            return path_segment_errors(name).map(|why| invalid_value(field, name, &why)).collect();
        }
    };
    let mut causes = Vec::new();
    if name.len() > len_max {
        causes.push(invalid_value(field, name, &format!("must be no more than {len_max} characters")));
    }
    if !ok {
        causes.push(invalid_value(field, name, err));
    }
    causes
}

/// path.IsValidPathSegmentName: not `.` or `..`, and neither `/` nor `%` inside.
fn path_segment_errors(name: &str) -> impl Iterator<Item = String> {
    let whole = ["..", "."].into_iter().find(|n| *n == name).map(|n| format!("may not be '{n}'"));
    let parts = if whole.is_some() { &[][..] } else { &["/", "%"][..] };
    whole
        .into_iter()
        .chain(parts.iter().filter(|p| name.contains(**p)).map(|p| format!("may not contain '{p}'")))
}

/// The errors of a `generateName` prefix: the name rule with a trailing dash allowed (it is
/// followed by the random suffix), as ValidateObjectMeta checks it.
pub(crate) fn validate_generate_name(rule: NameRule, prefix: &str) -> Vec<StatusCause> {
    let masked = match prefix.strip_suffix('-') {
        Some(head) if !head.is_empty() => format!("{head}a"),
        _ => prefix.to_owned(),
    };
    let shown = format!("Invalid value: \"{masked}\"");
    validate_name(rule, "metadata.generateName", &masked)
        .into_iter()
        .map(|mut c| {
            c.message = c.message.replacen(&shown, &format!("Invalid value: \"{prefix}\""), 1);
            c
        })
        .collect()
}

/// A lowercase RFC 1123 subdomain, without the length limit.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

/// A lowercase RFC 1123 label, without the length limit (checked separately).
fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

/// A `FieldValueInvalid` cause: `Invalid value: "x": why`.
pub(crate) fn invalid_value(field: &str, value: &str, why: &str) -> StatusCause {
    errors::cause("FieldValueInvalid", field, format!("Invalid value: \"{value}\": {why}"))
}

/// A `FieldValueRequired` cause: `Required value: why`.
pub(crate) fn required(field: &str, why: &str) -> StatusCause {
    errors::cause("FieldValueRequired", field, format!("Required value: {why}"))
}

/// A `FieldValueForbidden` cause: `Forbidden: why`.
pub(crate) fn forbidden(field: &str, why: &str) -> StatusCause {
    errors::cause("FieldValueForbidden", field, format!("Forbidden: {why}"))
}

/// apimachinery's ValidateOwnerReferences: each reference names its owner (validateOwnerReference:
/// the version of its apiVersion, its kind, name and uid, in that order, at the unindexed
/// `metadata.ownerReferences`), and at most one is the controller.
pub(crate) fn validate_owner_references(meta: &ObjectMeta) -> Vec<StatusCause> {
    let refs = meta.owner_references.as_deref().unwrap_or_default();
    let mut causes = Vec::new();
    for r in refs {
        // schema.FromAPIVersionAndKind: "v1" is a version, "apps/v1" a group and a version, and
        // more than one '/' parses to nothing.
        let version = match r.api_version.split_once('/') {
            None => r.api_version.as_str(),
            Some((_, version)) if !version.contains('/') => version,
            Some(_) => "",
        };
        let checks = [
            ("apiVersion", version, &r.api_version, "version must not be empty"),
            ("kind", r.kind.as_str(), &r.kind, "kind must not be empty"),
            ("name", r.name.as_str(), &r.name, "name must not be empty"),
            ("uid", r.uid.as_str(), &r.uid, "uid must not be empty"),
        ];
        for (field, part, value, why) in checks {
            if part.is_empty() {
                causes.push(invalid_value(&format!("metadata.ownerReferences.{field}"), value, why));
            }
        }
    }
    let controllers: Vec<String> = refs
        .iter()
        .filter(|r| r.controller == Some(true))
        .map(|r| format!("{}/{}", r.kind, r.name))
        .collect();
    if controllers.len() > 1 {
        causes.push(errors::cause(
            "FieldValueInvalid",
            "metadata.ownerReferences",
            format!(
                "Invalid value: {}: Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(", "),
                controllers.join(" and ")
            ),
        ));
    }
    causes
}

/// The finalizers every built-in kind accepts without a domain: the namespace controller's and
/// the garbage collector's (`helper.IsStandardFinalizerName`).
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// apimachinery's ValidateFinalizers: each name is a qualified name (errors at the unindexed
/// `metadata.finalizers`), and `orphan` and `foregroundDeletion` exclude each other. Then, for
/// built-in kinds (core's ValidateObjectMeta, validateKubeFinalizerName), a name without a '/'
/// must be a standard finalizer; custom resources skip that check.
pub(crate) fn validate_finalizers(
    meta: &ObjectMeta,
    builtin: bool,
    qualified_name_errors: impl Fn(&str) -> Vec<String>,
) -> Vec<StatusCause> {
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    let mut causes = Vec::new();
    for f in finalizers {
        for err in qualified_name_errors(f) {
            causes.push(invalid_value("metadata.finalizers", f, &err));
        }
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        let listed: Vec<String> = finalizers.iter().map(|f| format!("{f:?}")).collect();
        causes.push(errors::cause(
            "FieldValueInvalid",
            "metadata.finalizers",
            format!(
                "Invalid value: []string{{{}}}: finalizer orphan and foregroundDeletion cannot be both set",
                listed.join(", ")
            ),
        ));
    }
    if builtin {
        for (i, f) in finalizers.iter().enumerate() {
            if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
                causes.push(invalid_value(
                    &format!("metadata.finalizers[{i}]"),
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    causes
}

/// Finalizers added to an object that is being deleted: forbidden.
pub(crate) fn validate_no_new_finalizers(old: &ObjectMeta, new: &ObjectMeta) -> Vec<StatusCause> {
    if old.deletion_timestamp.is_none() {
        return Vec::new();
    }
    let old_finalizers = old.finalizers.as_deref().unwrap_or_default();
    let added: Vec<String> = new
        .finalizers
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|f| !old_finalizers.contains(f))
        .map(|f| format!("{f:?}"))
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    vec![forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            added.join(", ")
        ),
    )]
}

/// Whether an object's content differs outside `metadata` (and outside `.status` when
/// `ignore_status`): the rule for bumping `metadata.generation`.
pub(crate) fn spec_changed(old: &DynamicObject, new: &DynamicObject, ignore_status: bool) -> bool {
    match (old.data.as_object(), new.data.as_object()) {
        (Some(a), Some(b)) => {
            let relevant = |k: &&String| !(ignore_status && k.as_str() == "status");
            let a_keys = a.iter().filter(|(k, _)| relevant(k));
            let b_keys = b.iter().filter(|(k, _)| relevant(k));
            !a_keys.eq(b_keys)
        }
        _ => old.data != new.data,
    }
}

/// Whether a write changes nothing that matters: equal apart from resourceVersion and
/// managedFields. Such a write bumps no revision and emits no event.
pub(crate) fn is_noop(old: &DynamicObject, new: &DynamicObject) -> bool {
    let (a, b) = (&old.metadata, &new.metadata);
    old.data == new.data
        && old.types == new.types
        && a.name == b.name
        && a.namespace == b.namespace
        && a.uid == b.uid
        && a.generation == b.generation
        && a.labels == b.labels
        && a.annotations == b.annotations
        && a.finalizers == b.finalizers
        && a.owner_references == b.owner_references
        && a.deletion_timestamp == b.deletion_timestamp
        && a.deletion_grace_period_seconds == b.deletion_grace_period_seconds
        && a.creation_timestamp == b.creation_timestamp
        && a.generate_name == b.generate_name
}
