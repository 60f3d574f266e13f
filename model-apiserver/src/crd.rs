//! CustomResourceDefinitions: loading them from YAML, validating them, and the resource types
//! they make servable.
//!
//! Loading reads files as envtest's `CRDDirectoryPaths` does (a file, or every `*.yaml`, `*.yml`
//! and `*.json` file of a directory, by name, not recursive). Every error names the file, the
//! document (1-based) and the field, so that a typo in a CRD is found without a cluster.
//!
//! [`validate_crd`] checks what apiextensions-apiserver checks that a controller author can trip
//! over, with its field paths and messages. Not modelled: conversion webhooks, printer columns,
//! selectable fields, CEL rules and the validation of `default` values against their schema.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionVersion,
    CustomResourceSubresourceScale, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    ValidationRule,
};
use kube_core::ApiResource;
use kube_core::response::StatusCause;
use serde::Deserialize;

use crate::errors;
use crate::fields::SelectableFields;
use crate::resources::{NameRule, ResourceType, ScalePaths};
use crate::selector::dns1123_subdomain_errors;

/// The apiVersion every loadable CRD document carries.
const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
/// The kind every loadable CRD document carries.
const CRD_KIND: &str = "CustomResourceDefinition";
/// Most documents read from one source: far beyond any real CRD bundle, it bounds a runaway
/// stream of `---` separators.
const DOCUMENTS_MAX: usize = 10_000;
/// Most files read from one directory.
const DIRECTORY_FILES_MAX: usize = 10_000;
/// Deepest schema nesting that [`validate_crd`] walks; deeper schemas get one cause.
const SCHEMA_DEPTH_MAX: usize = 256;
/// Longest DNS-1035 label (plural, singular, kind, version names).
const DNS1035_LABEL_LEN_MAX: usize = 63;

/// Why CRDs could not be loaded. Each variant names the source (the file's path, or `<string>`).
#[derive(Debug, thiserror::Error)]
pub enum CrdLoadError {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// A document is not well-formed YAML (or JSON, for a `.json` file). Parsing stops there.
    #[error("{origin}: document {document}: {message}")]
    Syntax {
        /// The file's path, or `<string>`.
        origin: String,
        /// The 1-based index of the document.
        document: usize,
        /// The parser's message, with its line and column.
        message: String,
    },
    /// A document's `apiVersion` or `kind` is not that of an `apiextensions.k8s.io/v1` CRD.
    #[error("{origin}: document {document}: {field}: expected {expected:?}, found {found:?}")]
    NotACrd {
        /// The file's path, or `<string>`.
        origin: String,
        /// The 1-based index of the document.
        document: usize,
        /// `apiVersion` or `kind`.
        field: String,
        /// What a CRD has there.
        expected: String,
        /// What the document has there (empty when absent).
        found: String,
    },
    /// A field of the document has the wrong type or a required field is missing, so it does not
    /// deserialize as a CustomResourceDefinition.
    #[error("{origin}: document {document}: {field}: {message}")]
    Malformed {
        /// The file's path, or `<string>`.
        origin: String,
        /// The 1-based index of the document.
        document: usize,
        /// The path of the offending field (`spec.versions[0].served`), `.` for the whole document.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The document is a CRD that the apiserver would reject (the first cause of
    /// [`validate_crd`]).
    #[error("{origin}: document {document}: {field}: {message}")]
    Invalid {
        /// The file's path, or `<string>`.
        origin: String,
        /// The 1-based index of the document.
        document: usize,
        /// The path of the offending field (`metadata.name`).
        field: String,
        /// The apiserver's message (`Invalid value: "x": must be spec.names.plural+"."+spec.group`).
        message: String,
    },
    /// A source held more documents, or a directory more files, than the loader reads.
    #[error("{origin}: more than {limit} {what}")]
    TooMany {
        /// The file's or directory's path, or `<string>`.
        origin: String,
        /// `documents` or `files`.
        what: &'static str,
        /// The bound that was hit.
        limit: usize,
    },
}

/// Load every CRD of a multi-document YAML string; `source` names it in errors (a file name, or
/// `<string>`). Empty documents are skipped (but counted, so document numbers match the file).
pub fn load_crds_from_yaml(source: &str, yaml: &str) -> Result<Vec<CustomResourceDefinition>, CrdLoadError> {
    let mut crds = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let document = i + 1;
        if document > DOCUMENTS_MAX {
            return Err(CrdLoadError::TooMany {
                origin: source.to_owned(),
                what: "documents",
                limit: DOCUMENTS_MAX,
            });
        }
        let value = serde_json::Value::deserialize(doc).map_err(|e| CrdLoadError::Syntax {
            origin: source.to_owned(),
            document,
            message: e.to_string(),
        })?;
        if let Some(crd) = crd_from_value(source, document, value)? {
            crds.push(crd);
        }
    }
    Ok(crds)
}

/// Load CRDs from a file, or from every `*.yaml`, `*.yml` and `*.json` file of a directory in
/// name order (not recursive), as envtest's `CRDDirectoryPaths`. A `.json` file holds one document.
pub fn load_crds_from_path(path: &Path) -> Result<Vec<CustomResourceDefinition>, CrdLoadError> {
    let io = |source| CrdLoadError::Io { path: path.to_owned(), source };
    if !path.is_dir() {
        return load_file(path);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let entry_path = entry.map_err(io)?.path();
        let loadable = entry_path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if loadable && entry_path.is_file() {
            files.push(entry_path);
        }
        if files.len() > DIRECTORY_FILES_MAX {
            let origin = path.display().to_string();
            return Err(CrdLoadError::TooMany { origin, what: "files", limit: DIRECTORY_FILES_MAX });
        }
    }
    // read_dir's order is the filesystem's; sort so that every machine loads in the same order.
    files.sort();
    let mut crds = Vec::new();
    for file in &files {
        crds.extend(load_file(file)?);
    }
    Ok(crds)
}

fn load_file(path: &Path) -> Result<Vec<CustomResourceDefinition>, CrdLoadError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| CrdLoadError::Io { path: path.to_owned(), source })?;
    // A leading UTF-8 byte order mark (some Windows editors write one) is skipped, as kubectl does.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let origin = path.display().to_string();
    if path.extension().and_then(|e| e.to_str()) != Some("json") {
        return load_crds_from_yaml(&origin, text);
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| CrdLoadError::Syntax {
        origin: origin.clone(),
        document: 1,
        message: e.to_string(),
    })?;
    Ok(crd_from_value(&origin, 1, value)?.into_iter().collect())
}

/// One document to a validated CRD; `None` for an empty document.
fn crd_from_value(
    origin: &str,
    document: usize,
    value: serde_json::Value,
) -> Result<Option<CustomResourceDefinition>, CrdLoadError> {
    if value.is_null() {
        return Ok(None);
    }
    for (field, expected) in [("kind", CRD_KIND), ("apiVersion", CRD_API_VERSION)] {
        let found = value.get(field).and_then(|v| v.as_str()).unwrap_or_default();
        if found != expected {
            return Err(CrdLoadError::NotACrd {
                origin: origin.to_owned(),
                document,
                field: field.to_owned(),
                expected: expected.to_owned(),
                found: found.to_owned(),
            });
        }
    }
    // The decoder of written bodies names where the document does not fit, as
    // `serde_path_to_error` does (the CRD type takes no route it leaves unfollowed).
    let crd: CustomResourceDefinition = match crate::ignored::deserialize(&value) {
        Ok((crd, _)) => crd,
        Err(failure) => {
            return Err(CrdLoadError::Malformed {
                origin: origin.to_owned(),
                document,
                field: failure.path,
                message: failure.error.to_string(),
            });
        }
    };
    if let Some(first) = validate_crd(&crd).into_iter().next() {
        return Err(CrdLoadError::Invalid {
            origin: origin.to_owned(),
            document,
            field: first.field,
            message: first.message,
        });
    }
    Ok(Some(crd))
}

/// Go's `%q` for the strings in messages.
fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn required(field: &str, detail: &str) -> StatusCause {
    let message =
        if detail.is_empty() { "Required value".to_owned() } else { format!("Required value: {detail}") };
    errors::cause("FieldValueRequired", field, message)
}

fn invalid(field: &str, value: &str, detail: &str) -> StatusCause {
    errors::cause("FieldValueInvalid", field, format!("Invalid value: {}: {detail}", quote(value)))
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> StatusCause {
    let supported: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    let message = format!("Unsupported value: {}: supported values: {}", quote(value), supported.join(", "));
    errors::cause("FieldValueNotSupported", field, message)
}

/// apimachinery's `IsDNS1035Label`: the error messages, empty when `value` is valid.
fn dns1035_label_errors(value: &str) -> Vec<String> {
    const FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_LEN_MAX {
        errs.push(format!("must be no more than {DNS1035_LABEL_LEN_MAX} characters"));
    }
    let bytes = value.as_bytes();
    let inner_ok = bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let first_ok = bytes.first().is_some_and(u8::is_ascii_lowercase);
    let last_ok = bytes.last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !(inner_ok && first_ok && last_ok) {
        errs.push(format!(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '{FMT}')"
        ));
    }
    errs
}

/// Check what apiextensions-apiserver checks on a CRD: the name is `<plural>.<group>`, the group
/// is a domain with a dot, the names are DNS labels, the scope is `Namespaced` or `Cluster`, there
/// is exactly one storage version, every version has a structural schema (an object at the root,
/// a type on every field) and the subresources are well formed.
///
/// Returns the causes for a 422 Invalid, empty when the CRD is valid.
pub fn validate_crd(crd: &CustomResourceDefinition) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let spec = &crd.spec;
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        causes.push(required("metadata.name", "name or generateName is required"));
    } else if name != format!("{}.{}", spec.names.plural, spec.group) {
        causes.push(invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
    }
    if spec.group.is_empty() {
        causes.push(required("spec.group", ""));
    } else if let errs @ [_, ..] = dns1123_subdomain_errors(&spec.group).as_slice() {
        causes.push(invalid("spec.group", &spec.group, &errs.join(",")));
    } else if !spec.group.contains('.') {
        causes.push(invalid("spec.group", &spec.group, "should be a domain with at least one dot"));
    }
    validate_names(&spec.names, &mut causes);
    match spec.scope.as_str() {
        "" => causes.push(required("spec.scope", "")),
        "Namespaced" | "Cluster" => {}
        other => causes.push(not_supported("spec.scope", other, &["Cluster", "Namespaced"])),
    }
    validate_versions(&spec.versions, &mut causes);
    causes
}

fn validate_names(names: &CustomResourceDefinitionNames, causes: &mut Vec<StatusCause>) {
    if names.plural.is_empty() {
        causes.push(required("spec.names.plural", ""));
    } else if let errs @ [_, ..] = dns1035_label_errors(&names.plural).as_slice() {
        causes.push(invalid("spec.names.plural", &names.plural, &errs.join(",")));
    }
    if let Some(singular) = names.singular.as_deref().filter(|s| !s.is_empty())
        && let errs @ [_, ..] = dns1035_label_errors(singular).as_slice()
    {
        causes.push(invalid("spec.names.singular", singular, &errs.join(",")));
    }
    let mixed_case = |field: &str, kind: &str, causes: &mut Vec<StatusCause>| {
        if let errs @ [_, ..] = dns1035_label_errors(&kind.to_lowercase()).as_slice() {
            let detail = format!("may have mixed case, but should otherwise match: {}", errs.join(","));
            causes.push(invalid(field, kind, &detail));
        }
    };
    if names.kind.is_empty() {
        causes.push(required("spec.names.kind", ""));
    } else {
        mixed_case("spec.names.kind", &names.kind, causes);
    }
    if let Some(list_kind) = names.list_kind.as_deref().filter(|s| !s.is_empty()) {
        mixed_case("spec.names.listKind", list_kind, causes);
        if list_kind == names.kind {
            causes.push(invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same"));
        }
    }
    for (i, short) in names.short_names.iter().flatten().enumerate() {
        if let errs @ [_, ..] = dns1035_label_errors(short).as_slice() {
            causes.push(invalid(&format!("spec.names.shortNames[{i}]"), short, &errs.join(",")));
        }
    }
}

fn validate_versions(versions: &[CustomResourceDefinitionVersion], causes: &mut Vec<StatusCause>) {
    if versions.is_empty() {
        causes.push(required("spec.versions", "must have exactly one version marked as storage version"));
        return;
    }
    let mut names = std::collections::BTreeSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        unique &= names.insert(version.name.as_str());
        if let errs @ [_, ..] = dns1035_label_errors(&version.name).as_slice() {
            causes.push(invalid(&format!("{path}.name"), &version.name, &errs.join(",")));
        }
        let schema_path = format!("{path}.schema.openAPIV3Schema");
        match version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()) {
            None => causes.push(required(&schema_path, "schemas are required")),
            Some(schema) => validate_structural(schema, &schema_path, Level::Root, 0, causes),
        }
        if let Some(sub) = &version.subresources {
            if let Some(status) = &sub.status
                && !status.0.is_object()
            {
                let message = format!("Invalid value: {}: must be an empty object", status.0);
                causes.push(errors::cause(
                    "FieldValueInvalid",
                    &format!("{path}.subresources.status"),
                    message,
                ));
            }
            if let Some(scale) = &sub.scale {
                validate_scale(scale, &format!("{path}.subresources.scale"), causes);
            }
        }
    }
    if !unique {
        causes.push(errors::cause("FieldValueInvalid", "spec.versions", "must contain unique version names"));
    }
    let storage = versions.iter().filter(|v| v.storage).count();
    if storage != 1 {
        let message =
            format!("Invalid value: {storage}: must have exactly one version marked as storage version");
        causes.push(errors::cause("FieldValueInvalid", "spec.versions", message));
    }
    if storage == 0 {
        // The strategy stores the storage version in status.storedVersions; with none there is
        // nothing to store, which the status validation reports too.
        causes.push(errors::cause(
            "FieldValueInvalid",
            "status.storedVersions",
            "Invalid value: []string(nil): must have at least one stored version",
        ));
    }
}

/// Where a schema sits, for the wording of a missing `type`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

/// The structural-schema rules a controller author trips over: every node has a type (unless
/// int-or-string or preserve-unknown-fields), the root is an object, embedded resources are
/// objects, types are known and patterns compile.
fn validate_structural(
    s: &JSONSchemaProps,
    path: &str,
    level: Level,
    depth: usize,
    causes: &mut Vec<StatusCause>,
) {
    if depth > SCHEMA_DEPTH_MAX {
        causes.push(errors::cause(
            "FieldValueInvalid",
            path,
            format!("nesting is deeper than {SCHEMA_DEPTH_MAX}"),
        ));
        return;
    }
    let ty = s.type_.as_deref().unwrap_or_default();
    let type_path = format!("{path}.type");
    let flag = |f: Option<bool>| f == Some(true);
    if flag(s.x_kubernetes_embedded_resource) && ty != "object" {
        let why = "must be object if x-kubernetes-embedded-resource is true";
        causes.push(if ty.is_empty() { required(&type_path, why) } else { invalid(&type_path, ty, why) });
    } else if ty.is_empty()
        && !flag(s.x_kubernetes_int_or_string)
        && !flag(s.x_kubernetes_preserve_unknown_fields)
    {
        causes.push(required(
            &type_path,
            match level {
                Level::Root => "must not be empty at the root",
                Level::Field => "must not be empty for specified object fields",
                Level::Item => "must not be empty for specified array items",
            },
        ));
    }
    if !ty.is_empty() && !matches!(ty, "array" | "boolean" | "integer" | "number" | "object" | "string") {
        causes.push(not_supported(
            &type_path,
            ty,
            &["array", "boolean", "integer", "number", "object", "string"],
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        causes.push(invalid(&type_path, ty, "must be object at the root"));
    }
    if flag(s.x_kubernetes_int_or_string) && !ty.is_empty() {
        causes.push(invalid(&type_path, ty, "must be empty if x-kubernetes-int-or-string is true"));
    }
    validate_structural_extras(s, path, level, causes);
    if let Some(pattern) = &s.pattern
        && let Err(e) = regex::Regex::new(pattern)
    {
        let why =
            format!("must be a valid regular expression, but isn't: {}", crate::schema::regex_error_line(&e));
        causes.push(invalid(&format!("{path}.pattern"), pattern, &why));
    }
    validate_rules(s, path, causes);
    for (key, prop) in s.properties.iter().flatten() {
        validate_structural(prop, &format!("{path}.properties[{key}]"), Level::Field, depth + 1, causes);
    }
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(items)) => {
            validate_structural(items, &format!("{path}.items"), Level::Item, depth + 1, causes);
        }
        Some(JSONSchemaPropsOrArray::Schemas(_)) => {
            causes.push(errors::cause(
                "FieldValueForbidden",
                &format!("{path}.items"),
                "Forbidden: items must be a schema object and not an array",
            ));
        }
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(add)) = &s.additional_properties {
        validate_structural(add, &format!("{path}.additionalProperties"), Level::Field, depth + 1, causes);
    }
}

/// A node's `x-kubernetes-validations`: each rule must be given and compile (its
/// `messageExpression` too), as `validateValidationRules` checks them; `reason` is one of the
/// four upstream takes.
fn validate_rules(s: &JSONSchemaProps, path: &str, causes: &mut Vec<StatusCause>) {
    for (i, rule) in s.x_kubernetes_validations.iter().flatten().enumerate() {
        let rule_path = format!("{path}.x-kubernetes-validations[{i}]");
        if rule.rule.trim().is_empty() {
            causes.push(required(&format!("{rule_path}.rule"), "rule is not specified"));
        } else if let Err(e) = crate::cel::compile(&rule.rule) {
            causes.push(rule_invalid(&format!("{rule_path}.rule"), rule, &e));
        }
        if let Some(expression) = rule.message_expression.as_deref().filter(|e| !e.trim().is_empty())
            && let Err(e) = crate::cel::compile(expression)
        {
            causes.push(rule_invalid(
                &format!("{rule_path}.messageExpression"),
                rule,
                &format!("messageExpression {e}"),
            ));
        }
        let reasons =
            ["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"];
        if let Some(reason) = rule.reason.as_deref().filter(|r| !reasons.contains(r)) {
            causes.push(not_supported(&format!("{rule_path}.reason"), reason, &reasons));
        }
    }
}

/// An Invalid cause whose value is the rule as Go's `%#v` prints an `apiextensions.ValidationRule`.
fn rule_invalid(field: &str, rule: &ValidationRule, detail: &str) -> StatusCause {
    let text = |v: &Option<String>| quote(v.as_deref().unwrap_or_default());
    let reason = match &rule.reason {
        Some(_) => "(*apiextensions.FieldValueErrorReason)(0x0)".to_owned(),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_owned(),
    };
    let optional = if rule.optional_old_self.is_some() { "(*bool)(0x0)" } else { "(*bool)(nil)" };
    let value = format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, \
         OptionalOldSelf:{optional}}}",
        quote(&rule.rule),
        text(&rule.message),
        text(&rule.message_expression),
        text(&rule.field_path),
    );
    errors::cause("FieldValueInvalid", field, format!("Invalid value: {value}: {detail}"))
}

fn forbidden(field: &str, detail: &str) -> StatusCause {
    errors::cause("FieldValueForbidden", field, format!("Forbidden: {detail}"))
}

/// The other structural rules: arrays have items, no additionalProperties at the root or beside
/// properties, metadata at the root restricts only name and generateName, the vendor extensions
/// are consistent, and defaults are pruned and valid against their own schema.
fn validate_structural_extras(s: &JSONSchemaProps, path: &str, level: Level, causes: &mut Vec<StatusCause>) {
    let flag = |f: Option<bool>| f == Some(true);
    if s.type_.as_deref() == Some("array") && s.items.is_none() {
        causes.push(required(&format!("{path}.items"), "must be specified"));
    }
    let additional = format!("{path}.additionalProperties");
    if s.additional_properties.is_some() && level == Level::Root {
        causes.push(forbidden(&additional, "must not be used at the root"));
    }
    if let Some(JSONSchemaPropsOrBool::Schema(_)) = &s.additional_properties
        && s.properties.as_ref().is_some_and(|p| !p.is_empty())
    {
        causes.push(forbidden(&additional, "additionalProperties and properties are mutual exclusive"));
    }
    if flag(s.x_kubernetes_embedded_resource) && s.additional_properties.is_some() {
        causes.push(forbidden(&additional, "must not be used if x-kubernetes-embedded-resource is set"));
    }
    if flag(s.x_kubernetes_embedded_resource)
        && !flag(s.x_kubernetes_preserve_unknown_fields)
        && s.properties.as_ref().is_none_or(|p| p.is_empty())
    {
        causes.push(required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    if flag(s.x_kubernetes_int_or_string) && flag(s.x_kubernetes_preserve_unknown_fields) {
        let message = "Invalid value: true: must be false if x-kubernetes-int-or-string is true";
        causes.push(errors::cause(
            "FieldValueInvalid",
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            message,
        ));
    }
    if flag(s.unique_items) {
        causes.push(forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if level == Level::Root
        && let Some(metadata) = s.properties.as_ref().and_then(|p| p.get("metadata"))
    {
        let keys: Vec<&str> = metadata.properties.iter().flatten().map(|(k, _)| k.as_str()).collect();
        if keys.iter().any(|k| *k != "name" && *k != "generateName") {
            causes.push(forbidden(
                &format!("{path}.properties[metadata]"),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if let Some(default) = s.default.as_ref().map(|d| &d.0)
        && level != Level::Root
    {
        validate_default(s, default, &format!("{path}.default"), causes);
    }
}

/// apiextensions' `ValidateDefaults` for one node: the default must survive pruning unchanged
/// and validate against the node's schema. Causes are placed under the `default` path.
fn validate_default(
    s: &JSONSchemaProps,
    default: &serde_json::Value,
    path: &str,
    causes: &mut Vec<StatusCause>,
) {
    let mut pruned = default.clone();
    crate::schema::prune_node(s, &mut pruned);
    if pruned != *default {
        let message = format!("Invalid value: {}: must not have unknown fields", default);
        causes.push(errors::cause("FieldValueInvalid", path, message));
        return;
    }
    for mut cause in crate::schema::validate_node(s, default) {
        cause.field = match cause.field.as_str() {
            "" => path.to_owned(),
            f if f.starts_with('[') => format!("{path}{f}"),
            f => format!("{path}.{f}"),
        };
        causes.push(cause);
    }
}

/// apiextensions' `validateSimpleJSONPath` plus the prefix rule of each scale path.
fn validate_scale(scale: &CustomResourceSubresourceScale, path: &str, causes: &mut Vec<StatusCause>) {
    let check = |field: &str, value: &str, prefixes: &[&str], why: &str, causes: &mut Vec<StatusCause>| {
        let field = format!("{path}.{field}");
        if value.is_empty() {
            causes.push(required(&field, ""));
        } else if !value.starts_with('.') {
            causes.push(invalid(&field, value, "must be a simple json path starting with ."));
        } else if !prefixes.iter().any(|p| value.starts_with(p)) {
            causes.push(invalid(&field, value, why));
        }
    };
    check(
        "specReplicasPath",
        &scale.spec_replicas_path,
        &[".spec."],
        "should be a json path under .spec",
        causes,
    );
    check(
        "statusReplicasPath",
        &scale.status_replicas_path,
        &[".status."],
        "should be a json path under .status",
        causes,
    );
    if let Some(selector) = scale.label_selector_path.as_deref().filter(|s| !s.is_empty()) {
        check(
            "labelSelectorPath",
            selector,
            &[".spec.", ".status."],
            "should be a json path under either .spec or .status",
            causes,
        );
    }
}

/// One served resource type per served version of `crd`, in the CRD's version order.
pub fn resource_types(crd: &CustomResourceDefinition) -> Vec<ResourceType> {
    let schemas = crd
        .spec
        .versions
        .iter()
        .map(|v| v.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone()))
        .collect();
    types_with_schemas(crd, schemas)
}

/// [`resource_types`], moving each version's schema out of `crd` instead of copying it (a
/// schema is the bulk of a CRD).
pub(crate) fn take_resource_types(crd: &mut CustomResourceDefinition) -> Vec<ResourceType> {
    let schemas = crd
        .spec
        .versions
        .iter_mut()
        .map(|v| v.schema.as_mut().and_then(|s| s.open_api_v3_schema.take()))
        .collect();
    types_with_schemas(crd, schemas)
}

/// The types of `crd`'s served versions, `schemas` holding each version's schema.
fn types_with_schemas(
    crd: &CustomResourceDefinition,
    schemas: Vec<Option<JSONSchemaProps>>,
) -> Vec<ResourceType> {
    let spec = &crd.spec;
    spec.versions
        .iter()
        .zip(schemas)
        .filter(|(v, _)| v.served)
        .map(|(v, schema)| {
            let sub = v.subresources.as_ref();
            ResourceType {
                api: ApiResource {
                    group: spec.group.clone(),
                    version: v.name.clone(),
                    api_version: format!("{}/{}", spec.group, v.name),
                    kind: spec.names.kind.clone(),
                    plural: spec.names.plural.clone(),
                },
                namespaced: spec.scope == "Namespaced",
                short_names: spec.names.short_names.clone().unwrap_or_default(),
                status_subresource: sub.is_some_and(|s| s.status.is_some()),
                scale: sub.and_then(|s| s.scale.as_ref()).map(|s| ScalePaths {
                    spec_replicas: s.spec_replicas_path.clone(),
                    status_replicas: s.status_replicas_path.clone(),
                    label_selector: s.label_selector_path.clone(),
                }),
                tracks_generation: true,
                name_rule: NameRule::Subdomain,
                custom: true,
                schema: schema.map(Arc::new),
                selectable_fields: SelectableFields::Custom {
                    namespaced: spec.scope == "Namespaced",
                    labels: v
                        .selectable_fields
                        .iter()
                        .flatten()
                        .map(|f| f.json_path.trim_start_matches('.').to_owned())
                        .collect(),
                },
            }
        })
        .collect()
}
