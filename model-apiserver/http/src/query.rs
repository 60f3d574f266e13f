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
use model_apiserver::errors;

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

    /// Parameters of a LIST.
    pub fn list_params(&self) -> Result<ListParams, Status> {
        let version_match = match self.get("resourceVersionMatch") {
            None => None,
            Some("NotOlderThan") => Some(VersionMatch::NotOlderThan),
            Some("Exact") => Some(VersionMatch::Exact),
            Some(other) => {
                return Err(errors::invalid_list_options(vec![errors::cause(
                    "FieldValueNotSupported",
                    "resourceVersionMatch",
                    format!(
                        "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                    ),
                )]));
            }
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
        Ok(WatchParams {
            label_selector: self.get("labelSelector").map(str::to_owned),
            field_selector: self.get("fieldSelector").map(str::to_owned),
            timeout: self.number("timeoutSeconds")?,
            bookmarks: self.flag("allowWatchBookmarks")?,
            send_initial_events: self.flag("sendInitialEvents")?,
        })
    }

    /// Parameters of a create or update.
    pub fn post_params(&self) -> Result<PostParams, Status> {
        Ok(PostParams {
            dry_run: self.dry_run()?,
            field_manager: self.get("fieldManager").map(str::to_owned),
        })
    }

    /// Parameters of a patch.
    pub fn patch_params(&self) -> Result<PatchParams, Status> {
        let field_validation = match self.get("fieldValidation") {
            None => None,
            Some("Strict") => Some(ValidationDirective::Strict),
            Some("Warn") => Some(ValidationDirective::Warn),
            Some("Ignore") => Some(ValidationDirective::Ignore),
            Some(other) => {
                return Err(errors::bad_request(&format!(
                    "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
                )));
            }
        };
        Ok(PatchParams {
            dry_run: self.dry_run()?,
            force: self.flag("force")?,
            field_manager: self.get("fieldManager").map(str::to_owned),
            field_validation,
        })
    }

    /// Parameters of a delete: the DeleteOptions body, overridden by query parameters.
    pub fn delete_params(&self, body: &[u8]) -> Result<DeleteParams, Status> {
        let mut params = delete_options(body)?;
        params.dry_run |= self.dry_run()?;
        if let Some(seconds) = self.number("gracePeriodSeconds")? {
            params.grace_period_seconds = Some(seconds);
        }
        if let Some(policy) = self.get("propagationPolicy") {
            params.propagation_policy = Some(propagation_policy(policy)?);
        }
        Ok(params)
    }
}

/// Decode a DeleteOptions body (empty means defaults).
fn delete_options(body: &[u8]) -> Result<DeleteParams, Status> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteParams::default());
    }
    let options: DeleteOptions = serde_json::from_slice(body)
        .map_err(|e| errors::bad_request(&format!("error decoding DeleteOptions: {e}")))?;
    let preconditions = options
        .preconditions
        .map(|p| kube_core::params::Preconditions { resource_version: p.resource_version, uid: p.uid });
    Ok(DeleteParams {
        dry_run: options.dry_run.is_some_and(|d| d.iter().any(|v| v == "All")),
        grace_period_seconds: options
            .grace_period_seconds
            .map(|s| u32::try_from(s.max(0)).unwrap_or(u32::MAX)),
        propagation_policy: options.propagation_policy.as_deref().map(propagation_policy).transpose()?,
        preconditions,
    })
}

fn propagation_policy(policy: &str) -> Result<PropagationPolicy, Status> {
    match policy {
        "Orphan" => Ok(PropagationPolicy::Orphan),
        "Background" => Ok(PropagationPolicy::Background),
        "Foreground" => Ok(PropagationPolicy::Foreground),
        other => Err(errors::bad_request(&format!(
            "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    }
}
