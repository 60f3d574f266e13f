//! batch/v1 spec validation, after `pkg/apis/batch/validation/validation.go`: Jobs (counts,
//! completion mode, a selector matching the template, a restart policy of OnFailure or Never)
//! and CronJobs (schedule syntax, concurrency policy, history limits, the job template).

use k8s_openapi::api::batch::v1::{CronJob, Job, JobSpec};
use kube_core::response::StatusCause;

use crate::versions::WorkloadSpec;

use super::{
    core,
    field::{
        Path, go_map, go_selector, invalid, label_selector, non_negative, not_supported, one_of_if_set, q,
        required, selector_matches,
    },
};

/// Completion modes.
const COMPLETION_MODES: &[&str] = &["NonIndexed", "Indexed"];
/// The largest parallelism of an Indexed Job (`maxParallelismForIndexedJob`).
const INDEXED_PARALLELISM_MAX: i32 = 100_000;
/// The largest `maxFailedIndexes` (`maxFailedIndexesForIndexedJob`).
const MAX_FAILED_INDEXES_MAX: i32 = 100_000;
/// Above this many completions, a Job with a per-index backoff limit has tighter bounds
/// (`completionsSoftLimit`).
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
/// Those bounds on `parallelism` and `maxFailedIndexes` (`parallelismLimitForHighCompletions`,
/// `maxFailedIndexesLimitForHighCompletions`).
const HIGH_COMPLETIONS_LIMIT: i32 = 10_000;

/// validateJobSpec: what a Job and a CronJob's job template share.
fn job_spec(spec: &JobSpec, path: &Path, out: &mut Vec<StatusCause>) {
    non_negative(spec.parallelism.map(i64::from), &path.child("parallelism"), out);
    non_negative(spec.completions.map(i64::from), &path.child("completions"), out);
    non_negative(spec.active_deadline_seconds, &path.child("activeDeadlineSeconds"), out);
    non_negative(spec.backoff_limit.map(i64::from), &path.child("backoffLimit"), out);
    non_negative(spec.ttl_seconds_after_finished.map(i64::from), &path.child("ttlSecondsAfterFinished"), out);
    non_negative(spec.backoff_limit_per_index.map(i64::from), &path.child("backoffLimitPerIndex"), out);
    if let Some(max_failed) = spec.max_failed_indexes {
        non_negative(Some(i64::from(max_failed)), &path.child("maxFailedIndexes"), out);
        if spec.backoff_limit_per_index.is_none() {
            out.push(required(&path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
        }
    }
    one_of_if_set(spec.completion_mode.as_deref(), &path.child("completionMode"), COMPLETION_MODES, out);
    if spec.completion_mode.as_deref() == Some("Indexed") {
        indexed_job_spec(spec, path, out);
    }
    if matches!(spec.completion_mode.as_deref(), None | Some("NonIndexed")) {
        for (field, value) in [
            ("backoffLimitPerIndex", spec.backoff_limit_per_index),
            ("maxFailedIndexes", spec.max_failed_indexes),
        ] {
            if let Some(value) = value {
                out.push(invalid(&path.child(field), value, "requires indexed completion mode"));
            }
        }
    }
    if let Some(policy) = &spec.pod_failure_policy {
        pod_failure_policy(spec, policy, &path.child("podFailurePolicy"), out);
    }
    // With a pod failure policy, only `Failed` (`validatePodReplacementPolicy`).
    let replacements: &[&str] =
        if spec.pod_failure_policy.is_some() { &["Failed"] } else { &["TerminatingOrFailed", "Failed"] };
    one_of_if_set(
        spec.pod_replacement_policy.as_deref(),
        &path.child("podReplacementPolicy"),
        replacements,
        out,
    );
    let template = path.child("template");
    core::pod_template(Some(&spec.template), &template, out);
    let policy = spec.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or_default();
    if policy != "OnFailure" && policy != "Never" {
        out.push(required(
            &template.child("spec").child("restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if spec.pod_failure_policy.is_some() && policy != "Never" {
        out.push(invalid(
            &template.child("spec").child("restartPolicy"),
            q(policy),
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
}

/// The most rules a pod failure policy has (`maxPodFailurePolicyRules`), and the most values or
/// patterns a rule has (`maxPodFailurePolicyOnExitCodesValues`,
/// `maxPodFailurePolicyOnPodConditionsPatterns`).
const FAILURE_POLICY_RULES_MAX: usize = 20;
const FAILURE_POLICY_EXIT_CODES_MAX: usize = 255;
const FAILURE_POLICY_CONDITIONS_MAX: usize = 20;

/// `field.TooMany`.
fn too_many(path: &Path, actual: usize, max: usize) -> StatusCause {
    crate::errors::cause(
        "FieldValueTooMany",
        path.as_str(),
        format!("Too many: {actual}: must have at most {max} items"),
    )
}

/// `validatePodFailurePolicy` and its rules' checks, in upstream's order and words.
fn pod_failure_policy(
    spec: &JobSpec,
    policy: &k8s_openapi::api::batch::v1::PodFailurePolicy,
    path: &Path,
    out: &mut Vec<StatusCause>,
) {
    let rules_path = path.child("rules");
    if policy.rules.len() > FAILURE_POLICY_RULES_MAX {
        out.push(too_many(&rules_path, policy.rules.len(), FAILURE_POLICY_RULES_MAX));
    }
    let pod_spec = spec.template.spec.as_ref();
    let containers = pod_spec.map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
    let names: Vec<&str> = containers.into_iter().flatten().map(|c| c.name.as_str()).collect();
    for (i, rule) in policy.rules.iter().enumerate() {
        let rule_path = rules_path.index(i);
        let action_path = rule_path.child("action");
        match rule.action.as_str() {
            "" => {
                out.push(required(&action_path, r#"valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#))
            }
            "FailIndex" if spec.backoff_limit_per_index.is_none() => {
                out.push(invalid(
                    &action_path,
                    q("FailIndex"),
                    "requires the backoffLimitPerIndex to be set",
                ));
            }
            "FailIndex" | "Count" | "FailJob" | "Ignore" => {}
            other => {
                out.push(not_supported(&action_path, other, &["Count", "FailIndex", "FailJob", "Ignore"]))
            }
        }
        if let Some(codes) = &rule.on_exit_codes {
            on_exit_codes(codes, &rule_path.child("onExitCodes"), &names, out);
        }
        let patterns = rule.on_pod_conditions.as_deref().unwrap_or_default();
        if !patterns.is_empty() {
            let patterns_path = rule_path.child("onPodConditions");
            if patterns.len() > FAILURE_POLICY_CONDITIONS_MAX {
                out.push(too_many(&patterns_path, patterns.len(), FAILURE_POLICY_CONDITIONS_MAX));
            }
            for (j, pattern) in patterns.iter().enumerate() {
                let pattern_path = patterns_path.index(j);
                for err in super::qualified_name_errors(&pattern.type_) {
                    out.push(invalid(&pattern_path.child("type"), q(&pattern.type_), &err));
                }
                let status_path = pattern_path.child("status");
                // Read as JSON: the field's Option-ness differs between the Kubernetes versions
                // k8s-openapi compiles for.
                let status = serde_json::to_value(pattern).ok();
                let status = status.as_ref().and_then(|p| p.get("status")).and_then(|s| s.as_str());
                match status.unwrap_or_default() {
                    "" => out.push(required(&status_path, r#"valid values: ["False" "True" "Unknown"]"#)),
                    "False" | "True" | "Unknown" => {}
                    other => out.push(not_supported(&status_path, other, &["False", "True", "Unknown"])),
                }
            }
        }
        let omitted = |detail: &str| {
            crate::errors::cause("FieldValueInvalid", rule_path.as_str(), format!("Invalid value: {detail}"))
        };
        match (rule.on_exit_codes.is_some(), !patterns.is_empty()) {
            (true, true) => {
                out.push(omitted("specifying both OnExitCodes and OnPodConditions is not supported"))
            }
            (false, false) => {
                out.push(omitted("specifying one of OnExitCodes and OnPodConditions is required"))
            }
            _ => {}
        }
    }
}

/// `validatePodFailurePolicyRuleOnExitCodes`.
fn on_exit_codes(
    codes: &k8s_openapi::api::batch::v1::PodFailurePolicyOnExitCodesRequirement,
    path: &Path,
    containers: &[&str],
    out: &mut Vec<StatusCause>,
) {
    let operator_path = path.child("operator");
    match codes.operator.as_str() {
        "" => out.push(required(&operator_path, r#"valid values: ["In" "NotIn"]"#)),
        "In" | "NotIn" => {}
        other => out.push(not_supported(&operator_path, other, &["In", "NotIn"])),
    }
    if let Some(name) = codes.container_name.as_deref().filter(|n| !containers.contains(n)) {
        out.push(invalid(
            &path.child("containerName"),
            q(name),
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = path.child("values");
    let shown =
        || format!("[]int32{{{}}}", codes.values.iter().map(i32::to_string).collect::<Vec<_>>().join(", "));
    if codes.values.is_empty() {
        out.push(invalid(&values_path, shown(), "at least one value is required"));
    } else if codes.values.len() > FAILURE_POLICY_EXIT_CODES_MAX {
        out.push(too_many(&values_path, codes.values.len(), FAILURE_POLICY_EXIT_CODES_MAX));
    }
    let mut seen: Vec<i32> = Vec::new();
    for (j, value) in codes.values.iter().enumerate() {
        if codes.operator == "In" && *value == 0 {
            out.push(invalid(&values_path.index(j), 0, "must not be 0 for the In operator"));
        }
        if seen.contains(value) {
            out.push(super::field::duplicate(&values_path.index(j), value));
        } else {
            seen.push(*value);
        }
    }
    if codes.values.windows(2).any(|w| w[0] > w[1]) {
        out.push(invalid(&values_path, shown(), "must be ordered"));
    }
}

/// validateJobSpec's rules for `completionMode: Indexed`: `completions` required, and the
/// bounds of `parallelism` and `maxFailedIndexes`.
fn indexed_job_spec(spec: &JobSpec, path: &Path, out: &mut Vec<StatusCause>) {
    if spec.completions.is_none() {
        out.push(required(&path.child("completions"), "when completion mode is Indexed"));
    }
    if let Some(p) = spec.parallelism.filter(|p| *p > INDEXED_PARALLELISM_MAX) {
        let why = format!(
            "must be less than or equal to {INDEXED_PARALLELISM_MAX} when completion mode is Indexed"
        );
        out.push(invalid(&path.child("parallelism"), p, &why));
    }
    if let (Some(completions), Some(max_failed)) = (spec.completions, spec.max_failed_indexes)
        && max_failed > completions
    {
        out.push(invalid(
            &path.child("maxFailedIndexes"),
            max_failed,
            "must be less than or equal to completions",
        ));
    }
    if let Some(max_failed) = spec.max_failed_indexes.filter(|m| *m > MAX_FAILED_INDEXES_MAX) {
        let why = format!("must be less than or equal to {MAX_FAILED_INDEXES_MAX}");
        out.push(invalid(&path.child("maxFailedIndexes"), max_failed, &why));
    }
    if spec.completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && spec.backoff_limit_per_index.is_some()
    {
        if spec.max_failed_indexes.is_none() {
            let why = format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}");
            out.push(required(&path.child("maxFailedIndexes"), &why));
        }
        let why = format!(
            "must be less than or equal to {HIGH_COMPLETIONS_LIMIT} when completions are above \
             {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        );
        if let Some(p) = spec.parallelism.filter(|p| *p > HIGH_COMPLETIONS_LIMIT) {
            out.push(invalid(&path.child("parallelism"), p, &why));
        }
        if let Some(m) = spec.max_failed_indexes.filter(|m| *m > HIGH_COMPLETIONS_LIMIT) {
            out.push(invalid(&path.child("maxFailedIndexes"), m, &why));
        }
    }
}

/// ValidateJob (create): the spec, the selector, and the template labels matching it. Not
/// checked: that an Indexed Job's name leaves room for the index in its Pods' hostnames
/// (`<name>-<completions - 1>` a DNS label), as the typed Job here has no metadata.
pub(crate) fn job(job: &Job, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let Some(spec) = &job.spec else {
        out.push(required(&path.child("selector"), ""));
        return;
    };
    job_spec(spec, &path, out);
    match &spec.selector {
        None => out.push(required(&path.child("selector"), "")),
        Some(s) => {
            label_selector(s, &path.child("selector"), out);
            let labels = spec.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
            if !selector_matches(s, labels) {
                out.push(invalid(
                    &path.child("template").child("metadata").child("labels"),
                    go_map(labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
}

/// validateCronJobSpec.
pub(crate) fn cron_job(cj: &CronJob, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = cj.spec();
    let schedule_path = path.child("schedule");
    if spec.schedule.is_empty() {
        out.push(required(&schedule_path, ""));
    } else if spec.schedule.contains("TZ") {
        out.push(invalid(
            &schedule_path,
            q(&spec.schedule),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ));
    } else if let Err(why) = parse_schedule(&spec.schedule) {
        out.push(invalid(&schedule_path, q(&spec.schedule), &why));
    }
    non_negative(spec.starting_deadline_seconds, &path.child("startingDeadlineSeconds"), out);
    if let Some(tz) = spec.time_zone.as_deref() {
        time_zone(tz, &path.child("timeZone"), out);
    }
    one_of_if_set(
        spec.concurrency_policy.as_deref().filter(|p| !p.is_empty()),
        &path.child("concurrencyPolicy"),
        &["Allow", "Forbid", "Replace"],
        out,
    );
    if spec.concurrency_policy.as_deref() == Some("") {
        out.push(required(&path.child("concurrencyPolicy"), ""));
    }
    let template = path.child("jobTemplate");
    if let Some(job_spec_) = &spec.job_template.spec {
        let spec_path = template.child("spec");
        job_spec(job_spec_, &spec_path, out);
        if let Some(s) = &job_spec_.selector {
            out.push(invalid(
                &spec_path.child("selector"),
                go_selector(s),
                "`selector` will be auto-generated",
            ));
        }
        if job_spec_.manual_selector == Some(true) {
            out.push(not_supported(&spec_path.child("manualSelector"), "true", &["nil", "false"]));
        }
    }
    non_negative(
        spec.successful_jobs_history_limit.map(i64::from),
        &path.child("successfulJobsHistoryLimit"),
        out,
    );
    non_negative(spec.failed_jobs_history_limit.map(i64::from), &path.child("failedJobsHistoryLimit"), out);
}

/// A time zone name: no leading or trailing space, and the shape of an IANA name (the model has
/// no zone database: `Area/Location`, `UTC`, `Etc/GMT+1`...).
fn time_zone(tz: &str, path: &Path, out: &mut Vec<StatusCause>) {
    if tz.trim() != tz {
        out.push(invalid(path, q(tz), "unknown time zone"));
        return;
    }
    let ok = !tz.is_empty()
        && tz.split('/').all(|part| {
            !part.is_empty()
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+'))
        });
    if !ok {
        out.push(invalid(path, q(tz), &format!("unknown time zone {tz}")));
    }
}

/// Parse a cron schedule as robfig/cron's standard parser does (five fields, or a descriptor),
/// with its error messages.
pub(crate) fn parse_schedule(schedule: &str) -> Result<(), String> {
    if let Some(descriptor) = schedule.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
            d if d.starts_with("every ") => {
                let duration = &d["every ".len()..];
                if go_duration_ok(duration) {
                    Ok(())
                } else {
                    Err(format!(
                        "failed to parse duration {schedule}: time: invalid duration {}",
                        q(duration)
                    ))
                }
            }
            _ => Err(format!("unrecognized descriptor: {schedule}")),
        };
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    const BOUNDS: [(u32, u32, &[&str]); 5] = [
        (0, 59, &[]),
        (0, 23, &[]),
        (1, 31, &[]),
        (1, 12, &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]),
        (0, 6, &["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
    ];
    for (field, (min, max, names)) in fields.iter().zip(BOUNDS) {
        for range in field.split(',') {
            parse_range(range, min, max, names)?;
        }
    }
    Ok(())
}

/// One range of a cron field: `*`, `?`, `N`, `N-M`, each with an optional `/step`.
fn parse_range(expr: &str, min: u32, max: u32, names: &[&str]) -> Result<(), String> {
    let (range, step) = match expr.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (expr, None),
    };
    let number = |s: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Ok(min + u32::try_from(i).unwrap_or(0));
        }
        s.parse::<u32>().map_err(|_| {
            format!("failed to parse int from {s}: strconv.Atoi: parsing {}: invalid syntax", q(s))
        })
    };
    let (start, end) = if range == "*" || range == "?" {
        (min, max)
    } else if let Some((a, b)) = range.split_once('-') {
        (number(a)?, number(b)?)
    } else {
        let n = number(range)?;
        (n, if step.is_some() { max } else { n })
    };
    if let Some(step) = step {
        match step.parse::<u32>() {
            Ok(0) => return Err(format!("step of range should be a positive number: {expr}")),
            Ok(_) => {}
            Err(_) => {
                return Err(format!(
                    "failed to parse int from {step}: strconv.Atoi: parsing {}: invalid syntax",
                    q(step)
                ));
            }
        }
    }
    if start < min {
        return Err(format!("beginning of range ({start}) below minimum ({min}): {expr}"));
    }
    if end > max {
        return Err(format!("end of range ({end}) above maximum ({max}): {expr}"));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    Ok(())
}

/// Whether `s` parses as a Go duration (`1h30m`, `90s`, `1.5h`).
fn go_duration_ok(s: &str) -> bool {
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    if rest == "0" {
        return true;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"].into_iter().find(|u| rest.starts_with(u));
        let Some(unit) = unit else { return false };
        rest = &rest[unit.len()..];
    }
    true
}
