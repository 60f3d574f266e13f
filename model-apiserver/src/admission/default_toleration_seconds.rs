//! kube-apiserver's `DefaultTolerationSeconds` admission plugin
//! (`plugin/pkg/admission/defaulttolerationseconds`): on the create or update of a Pod (not of a
//! subresource), a Pod that does not already tolerate the `NoExecute` taints of a node that is
//! not ready or unreachable gets a toleration of each for [`DEFAULT_TOLERATION_SECONDS`]
//! (kube-apiserver's `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds`), so that its Pods are evicted from a lost node
//! after five minutes rather than at once.
//!
//! A toleration counts when its key is the taint's or empty and its effect is `NoExecute` or
//! empty, whatever its operator, value or seconds (upstream looks no further).

use kube_core::DynamicObject;
use serde_json::{Value, json};

/// The taint of a node whose Ready condition is False (`v1.TaintNodeNotReady`).
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of a node whose Ready condition is Unknown (`v1.TaintNodeUnreachable`).
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// How long the added tolerations tolerate their taint (both flags' default, 300).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The plugin's `Admit`: the tolerations `pod` lacks, not-ready's first.
pub(crate) fn admit(pod: &mut DynamicObject) {
    let spec = super::pod_spec(pod);
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if !tolerations.is_array() {
        *tolerations = json!([]);
    }
    let tolerations = tolerations.as_array_mut().expect("just made an array");
    let missing: Vec<&str> = [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE]
        .into_iter()
        .filter(|taint| !tolerations.iter().any(|t| tolerates_no_execute(t, taint)))
        .collect();
    for taint in missing {
        tolerations.push(json!({
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }));
    }
}

/// Whether `toleration` counts as tolerating the `NoExecute` taint `key`.
fn tolerates_no_execute(toleration: &Value, key: &str) -> bool {
    let text = |field: &str| toleration.get(field).and_then(Value::as_str).unwrap_or_default();
    let (k, effect) = (text("key"), text("effect"));
    (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
}
