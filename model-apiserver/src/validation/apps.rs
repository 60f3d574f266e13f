//! apps/v1 spec validation, after `pkg/apis/apps/validation/validation.go`: Deployments,
//! ReplicaSets, StatefulSets and DaemonSets. Each needs a non-empty selector that its template's
//! labels match, a valid pod template whose restart policy is `Always`, non-negative counts, and
//! a known update strategy.

use k8s_openapi::{
    api::{
        apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
        core::v1::PodTemplateSpec,
    },
    apimachinery::pkg::apis::meta::v1::LabelSelector,
};
use kube_core::response::StatusCause;

use crate::versions::WorkloadSpec;

use super::{
    core,
    field::{
        Path, forbidden, go_map, go_selector, int_or_percent, invalid, is_zero, label_selector, non_negative,
        not_supported, one_of, one_of_if_set, required, selector_is_empty, selector_matches,
    },
};

/// The selector, its match with the template's labels, and the template (restart policy
/// `Always`, no active deadline), as ValidatePodTemplateSpecForReplicaSet and its kin.
///
/// A selector with neither matchLabels nor matchExpressions is taken as absent (`Required`): the
/// typed object cannot tell `selector: {}` from no selector, and the latter is the usual mistake.
fn selector_and_template(
    selector: &LabelSelector,
    template: Option<&PodTemplateSpec>,
    kind: &str,
    path: &Path,
    out: &mut Vec<StatusCause>,
) {
    let selector_path = path.child("selector");
    let absent = selector.match_labels.is_none() && selector.match_expressions.is_none();
    if absent {
        out.push(required(&selector_path, ""));
    } else {
        label_selector(selector, &selector_path, out);
        if selector_is_empty(selector) {
            let why = format!("empty selector is invalid for {kind}");
            out.push(invalid(&selector_path, go_selector(selector), &why));
        }
    }
    let selector = Some(selector);
    let template_path = path.child("template");
    let Some(t) = template else {
        out.push(required(&template_path, ""));
        return;
    };
    let labels = t.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if let Some(s) = selector.filter(|s| !selector_is_empty(s))
        && !selector_matches(s, labels)
    {
        out.push(invalid(
            &template_path.child("metadata").child("labels"),
            go_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
    if kind == "statefulset" {
        // ValidatePodTemplateSpecForStatefulSet validates the template's labels and annotations
        // only, under `spec.template.labels` and `spec.template.annotations`: not its Pod spec
        // (upstream's TODO: its volume mounts name the claim templates, which are no volumes of
        // the template), which every Pod made from it meets at its own create.
        if let Some(meta) = &t.metadata {
            for cause in super::validate_labels_and_annotations(meta) {
                let field = cause.field.replacen("metadata", template_path.as_str(), 1);
                out.push(StatusCause { field, ..cause });
            }
        }
    } else {
        core::pod_template(Some(t), &template_path, out);
    }
    if let Some(spec) = &t.spec {
        let spec_path = template_path.child("spec");
        if let Some(policy) = spec.restart_policy.as_deref().filter(|p| *p != "Always") {
            out.push(not_supported(&spec_path.child("restartPolicy"), policy, &["Always"]));
        }
        if spec.active_deadline_seconds.is_some() {
            let label = match kind {
                "deployment" => "ReplicaSet",
                "statefulset" => "StatefulSet",
                "daemonset" => "DaemonSet",
                other => other,
            };
            let why = format!("activeDeadlineSeconds in {label} is not Supported");
            out.push(forbidden(&spec_path.child("activeDeadlineSeconds"), &why));
        }
    }
}

/// ValidateDeploymentSpec.
pub(crate) fn deployment(d: &Deployment, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = d.spec();
    non_negative(spec.replicas.map(i64::from), &path.child("replicas"), out);
    selector_and_template(&spec.selector, Some(&spec.template), "deployment", &path, out);
    let strategy = path.child("strategy");
    if let Some(s) = &spec.strategy {
        match s.type_.as_deref() {
            Some("Recreate") if s.rolling_update.is_some() => out.push(forbidden(
                &strategy.child("rollingUpdate"),
                "may not be specified when strategy `type` is 'Recreate'",
            )),
            Some("RollingUpdate") => {
                if let Some(r) = &s.rolling_update {
                    rolling_update(
                        r.max_unavailable.as_ref(),
                        r.max_surge.as_ref(),
                        &strategy.child("rollingUpdate"),
                        out,
                    );
                }
            }
            other => one_of(other, &strategy.child("type"), &["Recreate", "RollingUpdate"], out),
        }
    }
    let min_ready = spec.min_ready_seconds.map(i64::from);
    non_negative(min_ready, &path.child("minReadySeconds"), out);
    non_negative(spec.revision_history_limit.map(i64::from), &path.child("revisionHistoryLimit"), out);
    if let Some(deadline) = spec.progress_deadline_seconds {
        non_negative(Some(i64::from(deadline)), &path.child("progressDeadlineSeconds"), out);
        if i64::from(deadline) <= min_ready.unwrap_or(0) {
            out.push(invalid(
                &path.child("progressDeadlineSeconds"),
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// ValidateRollingUpdateDeployment (and the DaemonSet's): each value an int or a percent
/// (maxUnavailable at most 100%), not both zero.
fn rolling_update(
    max_unavailable: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    max_surge: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    path: &Path,
    out: &mut Vec<StatusCause>,
) {
    if let Some(u) = max_unavailable {
        int_or_percent(u, &path.child("maxUnavailable"), true, out);
    }
    if let Some(s) = max_surge {
        int_or_percent(s, &path.child("maxSurge"), false, out);
    }
    if max_unavailable.is_some_and(is_zero) && max_surge.is_none_or(is_zero) {
        out.push(invalid(&path.child("maxUnavailable"), 0, "may not be 0 when `maxSurge` is 0"));
    }
}

/// ValidateReplicaSetSpec.
pub(crate) fn replica_set(rs: &ReplicaSet, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = rs.spec();
    non_negative(spec.replicas.map(i64::from), &path.child("replicas"), out);
    non_negative(spec.min_ready_seconds.map(i64::from), &path.child("minReadySeconds"), out);
    selector_and_template(&spec.selector, spec.template.as_ref(), "deployment", &path, out);
}

/// ValidateStatefulSetSpec.
pub(crate) fn stateful_set(sts: &StatefulSet, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = sts.spec();
    one_of_if_set(
        spec.pod_management_policy.as_deref(),
        &path.child("podManagementPolicy"),
        &["OrderedReady", "Parallel"],
        out,
    );
    let strategy = path.child("updateStrategy");
    if let Some(s) = &spec.update_strategy {
        match s.type_.as_deref() {
            Some("OnDelete") if s.rolling_update.is_some() => out.push(forbidden(
                &strategy.child("rollingUpdate"),
                "only allowed for updateStrategy 'RollingUpdate'",
            )),
            Some("RollingUpdate") => {
                if let Some(r) = &s.rolling_update {
                    let at = strategy.child("rollingUpdate");
                    non_negative(r.partition.map(i64::from), &at.child("partition"), out);
                    if let Some(u) = &r.max_unavailable {
                        int_or_percent(u, &at.child("maxUnavailable"), true, out);
                        if is_zero(u) {
                            out.push(invalid(&at.child("maxUnavailable"), 0, "must be greater than 0"));
                        }
                    }
                }
            }
            Some("OnDelete") => {}
            other => one_of(other, &strategy.child("type"), &["OnDelete", "RollingUpdate"], out),
        }
    }
    if let Some(policy) = &spec.persistent_volume_claim_retention_policy {
        let at = path.child("persistentVolumeClaimRetentionPolicy");
        one_of_if_set(policy.when_deleted.as_deref(), &at.child("whenDeleted"), &["Retain", "Delete"], out);
        one_of_if_set(policy.when_scaled.as_deref(), &at.child("whenScaled"), &["Retain", "Delete"], out);
    }
    non_negative(spec.replicas.map(i64::from), &path.child("replicas"), out);
    non_negative(spec.min_ready_seconds.map(i64::from), &path.child("minReadySeconds"), out);
    non_negative(spec.revision_history_limit.map(i64::from), &path.child("revisionHistoryLimit"), out);
    if let Some(start) = spec.ordinals.as_ref().and_then(|o| o.start) {
        non_negative(Some(i64::from(start)), &path.child("ordinals").child("start"), out);
    }
    if let Some(name) = spec.service_name.as_deref().filter(|n| !n.is_empty()) {
        super::field::dns1123_label(name, &path.child("serviceName"), out);
    }
    selector_and_template(&spec.selector, Some(&spec.template), "statefulset", &path, out);
    for (i, claim) in spec.volume_claim_templates.iter().flatten().enumerate() {
        let at = path.child("volumeClaimTemplates").index(i);
        if let Some(claim_spec) = &claim.spec {
            core::claim_spec(claim_spec, &at.child("spec"), out);
        }
    }
}

/// ValidateDaemonSetSpec.
pub(crate) fn daemon_set(ds: &DaemonSet, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let spec = ds.spec();
    selector_and_template(&spec.selector, Some(&spec.template), "daemonset", &path, out);
    non_negative(spec.min_ready_seconds.map(i64::from), &path.child("minReadySeconds"), out);
    non_negative(spec.revision_history_limit.map(i64::from), &path.child("revisionHistoryLimit"), out);
    let strategy = path.child("updateStrategy");
    if let Some(s) = &spec.update_strategy {
        match s.type_.as_deref() {
            Some("RollingUpdate") => {
                if let Some(r) = &s.rolling_update {
                    rolling_update(
                        r.max_unavailable.as_ref(),
                        r.max_surge.as_ref(),
                        &strategy.child("rollingUpdate"),
                        out,
                    );
                }
            }
            Some("OnDelete") => {}
            other => one_of(other, &strategy.child("type"), &["OnDelete", "RollingUpdate"], out),
        }
    }
}
