//! Properties of the differential oracle over generated objects.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;

use common::snapshot;
use model_apiserver::Snapshot;
use properties::{Difference, Mask, diff};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Small JSON values: scalars, and objects and arrays up to three levels deep.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..4).prop_map(|n| json!(n)),
        "[a-c]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[x-z]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Up to three Widgets named a, b or c, each with a generated spec.
fn widgets() -> impl Strategy<Value = Snapshot> {
    prop::collection::btree_map("[a-c]", value(), 0..4).prop_map(|specs: BTreeMap<String, Value>| {
        let objects: Vec<Value> = specs
            .into_iter()
            .map(|(name, spec)| {
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": name, "namespace": "default"}, "spec": spec})
            })
            .collect();
        snapshot(&objects)
    })
}

proptest! {
    #[test]
    fn every_snapshot_matches_itself_with_or_without_masks(state in widgets()) {
        prop_assert_eq!(diff(&state, &state, &Mask::none()), vec![]);
        prop_assert_eq!(diff(&state, &state, &Mask::builtin()), vec![]);
    }

    #[test]
    fn a_mask_learned_from_two_runs_leaves_only_missing_and_extra_objects_between_them(
        a in widgets(),
        b in widgets(),
    ) {
        let mask = Mask::builtin().merge(&Mask::learn(&a, &b));
        for difference in diff(&a, &b, &mask) {
            prop_assert!(
                matches!(difference, Difference::Missing { .. } | Difference::Extra { .. }),
                "not masked: {}", difference
            );
        }
    }
}
