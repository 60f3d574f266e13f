//! Query parameters of served requests, decoded into kube-core's parameter types.
//!
//! Unknown parameters are ignored, as kube-apiserver ignores them; a malformed value of a known
//! one gets 400 BadRequest.

use std::collections::BTreeMap;

use kube_core::{
    Status,
    params::{
        DeleteParams, GetParams, ListParams, PatchParams, PostParams, PropagationPolicy, ValidationDirective,
        VersionMatch, WatchParams,
    },
};
use model_apiserver::{FieldValidation, errors};

/// The decoded query string (the last value of a repeated key wins).
#[derive(Clone, Debug, Default)]
pub struct Query(BTreeMap<String, String>);

impl Query {
    /// Decode `query` (without the `?`).
    pub fn parse(query: Option<&str>) -> Query {
        Query(form_urlencoded::parse(query.unwrap_or("").as_bytes()).into_owned().collect())
    }

    /// The value of `key`, if present and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// A boolean flag: `true`/`1` (Go's strconv.ParseBool accepts these and more).
    pub fn flag(&self, key: &str) -> Result<bool, Status> {
        match self.get(key) {
            None => Ok(false),
            Some("true" | "True" | "TRUE" | "1" | "t" | "T") => Ok(true),
            Some("false" | "False" | "FALSE" | "0" | "f" | "F") => Ok(false),
            Some(other) => Err(errors::bad_request(&format!(
                "invalid boolean value {other:?} for query parameter {key:?}"
            ))),
        }
    }

    /// A non-negative integer.
    pub fn number(&self, key: &str) -> Result<Option<u32>, Status> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>().map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX)).map_err(|_| {
                    errors::bad_request(&format!("invalid value {v:?} for query parameter {key:?}"))
                })
            })
            .transpose()
    }

    /// Whether this is a watch (`watch=true`).
    pub fn is_watch(&self) -> Result<bool, Status> {
        self.flag("watch")
    }

    /// `dryRun=All` (the only value kube-apiserver accepts).
    fn dry_run(&self) -> Result<bool, Status> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(errors::invalid_list_options(vec![errors::cause(
                "FieldValueNotSupported",
                "dryRun",
                format!("Unsupported value: {other:?}: supported values: \"All\""),
            )])),
        }
    }

    /// Parameters of a GET of one object.
    pub fn get_params(&self) -> GetParams {
        GetParams { resource_version: self.get("resourceVersion").map(str::to_owned) }
    }

    /// Parameters of a LIST (also of a DELETECOLLECTION's selection).
    pub fn list_params(&self) -> Result<ListParams, Status> {
        self.validate_list_options(false)?;
        let version_match = match self.get("resourceVersionMatch") {
            Some("NotOlderThan") => Some(VersionMatch::NotOlderThan),
            Some("Exact") => Some(VersionMatch::Exact),
            _ => None,
        };
        Ok(ListParams {
            label_selector: self.get("labelSelector").map(str::to_owned),
            field_selector: self.get("fieldSelector").map(str::to_owned),
            limit: self.number("limit")?.filter(|n| *n > 0),
            continue_token: self.get("continue").map(str::to_owned),
            version_match,
            resource_version: self.get("resourceVersion").map(str::to_owned),
            ..ListParams::default()
        })
    }

    /// Parameters of a WATCH.
    pub fn watch_params(&self) -> Result<WatchParams, Status> {
        self.validate_list_options(true)?;
        Ok(WatchParams {
            label_selector: self.get("labelSelector").map(str::to_owned),
            field_selector: self.get("fieldSelector").map(str::to_owned),
            timeout: self.number("timeoutSeconds")?,
            bookmarks: self.flag("allowWatchBookmarks")?,
            send_initial_events: self.flag("sendInitialEvents")?,
        })
    }

    /// apimachinery's ValidateListOptions and validateWatchOptions
    /// (`pkg/apis/meta/internalversion/validation/validation.go`): 422 Invalid on ListOptions
    /// with every cause, in their order. `sendInitialEvents` counts as given when present, even
    /// `false`.
    fn validate_list_options(&self, watch: bool) -> Result<(), Status> {
        let forbidden =
            |field: &str, why: &str| errors::cause("FieldValueForbidden", field, format!("Forbidden: {why}"));
        let not_supported = |value: &str, supported: &str| {
            errors::cause(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                format!("Unsupported value: {value:?}: supported values: {supported}"),
            )
        };
        let version_match = self.get("resourceVersionMatch");
        let send_initial_events = self.get("sendInitialEvents").is_some();
        let continued = self.get("continue").is_some();
        let mut causes = Vec::new();
        if watch {
            if send_initial_events && version_match != Some("NotOlderThan") {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if let Some(version_match) = version_match {
                if !send_initial_events {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if version_match != "NotOlderThan" {
                    causes.push(not_supported(version_match, "\"NotOlderThan\""));
                }
                if continued {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if let Some(version_match) = version_match {
                let resource_version = self.get("resourceVersion");
                if resource_version.is_none() {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if continued {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if !matches!(version_match, "Exact" | "NotOlderThan") {
                    causes.push(not_supported(version_match, "\"Exact\", \"NotOlderThan\", \"\""));
                }
                if version_match == "Exact" && resource_version == Some("0") {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            if send_initial_events {
                causes.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
            }
        }
        if causes.is_empty() { Ok(()) } else { Err(errors::invalid_list_options(causes)) }
    }

    /// Parameters of a create or update.
    pub fn post_params(&self) -> Result<PostParams, Status> {
        Ok(PostParams {
            dry_run: self.dry_run()?,
            field_manager: self.get("fieldManager").map(str::to_owned),
        })
    }

    /// The `fieldValidation` directive of a write (`None`: the server's default, Warn); an
    /// unknown value is 422 Invalid on `options` (`CreateOptions`, `UpdateOptions` or
    /// `PatchOptions`), as ValidateFieldValidation answers.
    pub fn field_validation(&self, options: &str) -> Result<Option<FieldValidation>, Status> {
        match self.get("fieldValidation") {
            None => Ok(None),
            Some("Strict") => Ok(Some(FieldValidation::Strict)),
            Some("Warn") => Ok(Some(FieldValidation::Warn)),
            Some("Ignore") => Ok(Some(FieldValidation::Ignore)),
            Some(other) => Err(errors::invalid(
                "meta.k8s.io",
                options,
                "",
                vec![errors::cause(
                    "FieldValueNotSupported",
                    "fieldValidation",
                    format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                )],
            )),
        }
    }

    /// Parameters of a patch.
    pub fn patch_params(&self) -> Result<PatchParams, Status> {
        let field_validation = self.field_validation("PatchOptions")?.map(|d| match d {
            FieldValidation::Strict => ValidationDirective::Strict,
            FieldValidation::Warn => ValidationDirective::Warn,
            FieldValidation::Ignore => ValidationDirective::Ignore,
        });
        Ok(PatchParams {
            dry_run: self.dry_run()?,
            force: self.flag("force")?,
            field_manager: self.get("fieldManager").map(str::to_owned),
            field_validation,
        })
    }

    /// Parameters of a delete: the DeleteOptions body, overridden by query parameters, then
    /// validated as the delete handler does (ValidateDeleteOptions): an unknown
    /// propagationPolicy, orphanDependents together with propagationPolicy, or a dryRun other
    /// than `All` is 422 Invalid on `DeleteOptions`, and nothing is deleted.
    pub fn delete_params(&self, body: &[u8]) -> Result<DeleteParams, Status> {
        let mut options = delete_options(body)?;
        if let Some(v) = self.get("dryRun") {
            options.dry_run = Some(vec![v.to_owned()]);
        }
        if let Some(v) = self.get("gracePeriodSeconds") {
            let seconds = v.parse::<i64>().map_err(|_| {
                errors::bad_request(&format!(
                    "invalid value {v:?} for query parameter \"gracePeriodSeconds\""
                ))
            })?;
            options.grace_period_seconds = Some(seconds);
        }
        if let Some(policy) = self.get("propagationPolicy") {
            options.propagation_policy = Some(policy.to_owned());
        }
        if let Some(orphan) = self.get("orphanDependents") {
            options.orphan_dependents = Some(matches!(orphan, "true" | "True" | "TRUE" | "1" | "t" | "T"));
        }
        let causes = validate_delete_options(&options);
        if !causes.is_empty() {
            return Err(errors::invalid("meta.k8s.io", "DeleteOptions", "", causes));
        }
        let preconditions = options
            .preconditions
            .map(|p| kube_core::params::Preconditions { resource_version: p.resource_version, uid: p.uid });
        // orphanDependents (deprecated) is the Orphan policy, and `false` neither orphans nor
        // deletes in the foreground: the Background policy, as the store's
        // shouldOrphanDependents and shouldDeleteDependents read it.
        let policy = match (options.propagation_policy.as_deref(), options.orphan_dependents) {
            (Some(p), _) => Some(propagation_policy(p)),
            (None, Some(true)) => Some(PropagationPolicy::Orphan),
            (None, Some(false)) => Some(PropagationPolicy::Background),
            (None, None) => None,
        };
        Ok(DeleteParams {
            dry_run: options.dry_run.is_some_and(|d| d.iter().any(|v| v == "All")),
            // A negative grace period means "now", as the real store clamps it.
            grace_period_seconds: options
                .grace_period_seconds
                .map(|s| u32::try_from(s.max(0)).unwrap_or(u32::MAX)),
            propagation_policy: policy,
            preconditions,
        })
    }
}

/// ValidateDeleteOptions' causes.
fn validate_delete_options(
    options: &k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions,
) -> Vec<kube_core::response::StatusCause> {
    let mut causes = Vec::new();
    if let (Some(_), Some(policy)) = (options.orphan_dependents, options.propagation_policy.as_deref()) {
        causes.push(errors::cause(
            "FieldValueInvalid",
            "propagationPolicy",
            format!("Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"),
        ));
    }
    if let Some(policy) = options.propagation_policy.as_deref()
        && !matches!(policy, "Foreground" | "Background" | "Orphan")
    {
        causes.push(errors::cause(
            "FieldValueNotSupported",
            "propagationPolicy",
            format!("Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""),
        ));
    }
    for value in options.dry_run.iter().flatten() {
        if value != "All" {
            causes.push(errors::cause(
                "FieldValueNotSupported",
                "dryRun",
                format!("Unsupported value: {value:?}: supported values: \"All\""),
            ));
        }
    }
    causes
}

/// Decode a DeleteOptions body (empty means defaults).
fn delete_options(
    body: &[u8],
) -> Result<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Default::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| errors::bad_request(&format!("error decoding DeleteOptions: {e}")))
}

/// A validated propagation policy.
fn propagation_policy(policy: &str) -> PropagationPolicy {
    match policy {
        "Orphan" => PropagationPolicy::Orphan,
        "Foreground" => PropagationPolicy::Foreground,
        _ => PropagationPolicy::Background,
    }
}
