//! Label selectors, matched against an object's labels as apimachinery's
//! `metav1.LabelSelectorAsSelector(..).Matches(..)` does.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// Whether `labels` match `selector`. An empty selector (no `matchLabels`, no `matchExpressions`)
/// matches everything, as in apimachinery; workload controllers reject empty selectors before
/// they get here.
pub fn matches(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    let labels_match =
        selector.match_labels.iter().flatten().all(|(key, value)| labels.get(key) == Some(value));
    labels_match && selector.match_expressions.iter().flatten().all(|req| requirement_matches(req, labels))
}

/// Whether a selector selects nothing in particular (the API server rejects such a selector on
/// workloads: "empty selector is invalid for deployment").
pub fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

fn requirement_matches(req: &LabelSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    let value = labels.get(&req.key);
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        // `NotIn` matches an absent key, as apimachinery's selection.NotIn does.
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        // An unknown operator is rejected by validation; selecting nothing is the safe reading.
        _ => false,
    }
}
