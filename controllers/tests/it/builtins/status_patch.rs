//! The tests of `controllers::builtins::status_patch` (its former unit tests: the library has no test harness).

use controllers::builtins::status_patch::*;
use serde_json::json;

#[test]
fn a_field_gone_from_the_status_is_nulled_at_any_depth_and_arrays_are_left_whole() {
    let old = json!({"replicas": 3, "readyReplicas": 3, "conditions": [{"type": "A"}],
                     "nested": {"a": 1, "b": 2}});
    let new = json!({"replicas": 0, "conditions": [], "nested": {"a": 1}});
    assert_eq!(
        replacing(Some(&old), &new).unwrap(),
        json!({"status": {"replicas": 0, "readyReplicas": null, "conditions": [],
                          "nested": {"a": 1, "b": null}}})
    );
    assert_eq!(replacing(None, &new).unwrap(), json!({ "status": new }));
}
