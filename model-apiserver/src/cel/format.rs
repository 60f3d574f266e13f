//! `library.Format`: named string formats, `format.dns1123Label().validate(s)` or
//! `format.named('dns1123Label').value().validate(s)`, answering `optional.none()` for a valid
//! string and else `optional.of(<apimachinery's error messages>)`.

use std::sync::LazyLock;

use base64::Engine;
use cel::Env;
use cel::common::types::STRING_TYPE;
use cel::objects::Opaque;
use regex::Regex;

use super::library::{DeclarationError, KubeValue, overload};
use crate::selector::{dns1123_subdomain_errors, label_value_errors, qualified_name_errors};

/// One of the named formats (`apiservercel.Format`), compared by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Dns1123Label,
    Dns1123Subdomain,
    Dns1035Label,
    QualifiedName,
    Dns1123LabelPrefix,
    Dns1123SubdomainPrefix,
    Dns1035LabelPrefix,
    LabelValue,
    Uri,
    Uuid,
    Byte,
    Date,
    Datetime,
}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Format {
    const TYPE_NAME: &'static str = "kubernetes.NamedFormat";
}

/// `ConstantFormats`: each format under its name in `format.<name>()` and `format.named(name)`.
const FORMATS: &[(&str, Format)] = &[
    ("dns1123Label", Format::Dns1123Label),
    ("dns1123Subdomain", Format::Dns1123Subdomain),
    ("dns1035Label", Format::Dns1035Label),
    ("qualifiedName", Format::QualifiedName),
    ("dns1123LabelPrefix", Format::Dns1123LabelPrefix),
    ("dns1123SubdomainPrefix", Format::Dns1123SubdomainPrefix),
    ("dns1035LabelPrefix", Format::Dns1035LabelPrefix),
    ("labelValue", Format::LabelValue),
    ("uri", Format::Uri),
    ("uuid", Format::Uuid),
    ("byte", Format::Byte),
    ("date", Format::Date),
    ("datetime", Format::Datetime),
];

const DNS1123_LABEL_LEN_MAX: usize = 63;
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
                                 and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
                                 with an alphabetic character, and end with an alphanumeric character";

// Constant patterns, compiled once per process: no per-run state.
static DNS1123_LABEL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_LABEL_FMT}$")).expect("constant regex"));
static DNS1035_LABEL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1035_LABEL_FMT}$")).expect("constant regex"));
/// strfmt's `UUIDPattern`.
static UUID_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("(?i)(^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)|(^[0-9a-f]{32}$)")
        .expect("constant regex")
});
/// The time part of strfmt's `IsDateTime` (the string is lower-cased first).
static TIME_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
        .expect("constant regex")
});

/// apimachinery's `RegexError`, with its examples (and its double spaces).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{fmt}')", examples.join(" or "))
}

/// `IsDNS1123Label`.
fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_LEN_MAX {
        errs.push(format!("must be no more than {DNS1123_LABEL_LEN_MAX} characters"));
    }
    if !DNS1123_LABEL_RE.is_match(value) {
        if dns1123_subdomain_errors(value).is_empty() {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1035Label`.
fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_LEN_MAX {
        errs.push(format!("must be no more than {DNS1123_LABEL_LEN_MAX} characters"));
    }
    if !DNS1035_LABEL_RE.is_match(value) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `maskTrailingDash`: a `generateName` prefix may end in a dash.
fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        // (A multi-byte character before the dash: Go would cut it in two; invalid either way.)
        Some(_) if name.len() > 1 => {
            name.get(..name.len() - 2).map_or(name.to_owned(), |head| format!("{head}a"))
        }
        _ => name.to_owned(),
    }
}

/// strfmt's `IsDate`: `2006-01-02`, a real calendar day.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    shape
        && chrono::NaiveDate::from_ymd_opt(
            s[..4].parse().unwrap_or(0),
            s[5..7].parse().unwrap_or(0),
            s[8..].parse().unwrap_or(0),
        )
        .is_some()
}

/// strfmt's `IsDateTime`.
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    TIME_RE.captures(parts[1]).is_some_and(|m| &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59")
}

impl Format {
    /// The format's error messages for `s`, empty when `s` is valid.
    fn validate(self, s: &str) -> Vec<String> {
        let one = |ok: bool, message: &str| if ok { Vec::new() } else { vec![message.to_owned()] };
        match self {
            Format::Dns1123Label => dns1123_label_errors(s),
            Format::Dns1123Subdomain => dns1123_subdomain_errors(s),
            Format::Dns1035Label => dns1035_label_errors(s),
            Format::QualifiedName => qualified_name_errors(s),
            Format::Dns1123LabelPrefix => dns1123_label_errors(&mask_trailing_dash(s)),
            Format::Dns1123SubdomainPrefix => dns1123_subdomain_errors(&mask_trailing_dash(s)),
            Format::Dns1035LabelPrefix => dns1035_label_errors(&mask_trailing_dash(s)),
            Format::LabelValue => label_value_errors(s),
            Format::Uri => super::url::parse_request_uri(s).err().into_iter().collect(),
            Format::Uuid => one(UUID_RE.is_match(s), "does not match the UUID format"),
            Format::Byte => {
                one(base64::engine::general_purpose::STANDARD.decode(s).is_ok(), "invalid base64")
            }
            Format::Date => one(is_date(s), "invalid date"),
            Format::Datetime => one(is_datetime(s), "invalid datetime"),
        }
    }
}

overload! {
    /// `format.named(name)`: the format, or `optional.none()` for an unknown name.
    fn named(name: String) -> Option<Format> {
        Ok(FORMATS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f))
    }
}

overload! {
    /// `<Format>.validate(s)`: `optional.none()` if valid, else the list of errors.
    fn validate(format: Format, s: String) -> Option<Vec<String>> {
        let errors = format.validate(&s);
        Ok((!errors.is_empty()).then_some(errors))
    }
}

/// `format.<name>()`, one function per format (an overload is a plain `fn`, so one each).
macro_rules! constant_formats {
    ($($fn_name:ident => $variant:ident),* $(,)?) => {
        $(
            overload! {
                fn $fn_name() -> Format {
                    Ok(Format::$variant)
                }
            }
        )*
    };
}

constant_formats! {
    dns1123_label => Dns1123Label,
    dns1123_subdomain => Dns1123Subdomain,
    dns1035_label => Dns1035Label,
    qualified_name => QualifiedName,
    dns1123_label_prefix => Dns1123LabelPrefix,
    dns1123_subdomain_prefix => Dns1123SubdomainPrefix,
    dns1035_label_prefix => Dns1035LabelPrefix,
    label_value => LabelValue,
    uri => Uri,
    uuid => Uuid,
    byte => Byte,
    date => Date,
    datetime => Datetime,
}

/// Declares the library on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload("validate", "format-validate", Format::cel_type(), vec![STRING_TYPE], validate)?;
    let constants: [(&str, cel::common::functions::Function); 13] = [
        ("dns1123Label", dns1123_label),
        ("dns1123Subdomain", dns1123_subdomain),
        ("dns1035Label", dns1035_label),
        ("qualifiedName", qualified_name),
        ("dns1123LabelPrefix", dns1123_label_prefix),
        ("dns1123SubdomainPrefix", dns1123_subdomain_prefix),
        ("dns1035LabelPrefix", dns1035_label_prefix),
        ("labelValue", label_value),
        ("uri", uri),
        ("uuid", uuid),
        ("byte", byte),
        ("date", date),
        ("datetime", datetime),
    ];
    assert_eq!(constants.len(), FORMATS.len(), "a function for each named format");
    for (name, function) in constants {
        let qualified = format!("format.{name}");
        env.add_overload(&qualified, &qualified, vec![], function)?;
    }
    Ok(())
}
