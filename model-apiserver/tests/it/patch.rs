//! Patches: JSON merge patch and JSON patch (with `test`); the other types get 415.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams};
use model_apiserver::Request;
use serde_json::json;

fn json_patch(ops: serde_json::Value) -> Patch<serde_json::Value> {
    Patch::Json(serde_json::from_value(ops).unwrap())
}

#[test]
fn a_merge_patch_changes_only_the_named_fields() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1", "keep": "yes"})));
    let patched = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap();
    assert_eq!(patched.data["data"], json!({"k": "2", "keep": "yes"}));
    assert_eq!(rv(&patched), 6);
}

#[test]
fn a_merge_patch_with_null_removes_a_field() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1", "gone": "x"})));
    let patched = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"gone": null}})).unwrap();
    assert_eq!(patched.data["data"], json!({"k": "1"}));
}

#[test]
fn a_merge_patch_that_changes_nothing_bumps_nothing() {
    let mut w = World::new();
    let a = w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let same = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "1"}})).unwrap();
    assert_eq!(same, a);
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn a_json_patch_applies_its_operations_in_order() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let ops = json_patch(json!([
        {"op": "add", "path": "/data/x", "value": "1"},
        {"op": "replace", "path": "/data/x", "value": "2"},
        {"op": "remove", "path": "/data/k"},
    ]));
    let r = w.handle(Request::patch(&cm(), Some("default"), "a", ops, PatchParams::default())).unwrap();
    assert_eq!(object(r).data["data"], json!({"x": "2"}));
}

#[test]
fn a_json_patch_with_a_test_that_holds_adds_a_finalizer_as_kubes_finalizer_helper_does() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let ops = json_patch(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]},
    ]));
    let r = w.handle(Request::patch(&cm(), Some("default"), "a", ops, PatchParams::default())).unwrap();
    assert_eq!(object(r).metadata.finalizers, Some(vec!["example.com/cleanup".to_owned()]));
}

#[test]
fn a_json_patch_whose_test_fails_gets_422_invalid_and_changes_nothing() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let ops = json_patch(json!([
        {"op": "test", "path": "/data/k", "value": "other"},
        {"op": "replace", "path": "/data/k", "value": "2"},
    ]));
    let err = w.handle(Request::patch(&cm(), Some("default"), "a", ops, PatchParams::default())).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(err.message, "the server rejected our request due to an error in our request");
    assert_eq!(w.get(&cm(), Some("default"), "a").data["data"], json!({"k": "1"}));
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn a_patch_carrying_a_stale_resource_version_gets_409_conflict() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "2"}})).unwrap();
    let err = w
        .try_merge(
            &cm(),
            Some("default"),
            "a",
            json!({"metadata": {"resourceVersion": "5"}, "data": {"k": "3"}}),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
}

#[test]
fn a_patch_of_a_missing_object_gets_404_not_found() {
    let mut w = World::new();
    let err = w.try_merge(&cm(), Some("default"), "a", json!({"data": {}})).unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
}

#[test]
fn a_patch_that_renames_the_object_gets_400_bad_request() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let err = w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"name": "b"}})).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert_eq!(err.message, "the name of the object (b) does not match the name on the URL (a)");
}

#[test]
fn a_strategic_merge_patch_of_a_built_in_kind_merges_lists_by_their_merge_key() {
    let mut w = World::new();
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}
    ]}});
    w.create(&pods(), Some("default"), pod);
    let patch = Patch::Strategic(json!({"spec": {"containers": [{"name": "b", "image": "b:2"}]}}));
    let r = w.handle(Request::patch(&pods(), Some("default"), "p", patch, PatchParams::default())).unwrap();
    let containers: Vec<(String, String)> = object(r).data["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["image"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(containers, [("a".to_owned(), "a:1".to_owned()), ("b".to_owned(), "b:2".to_owned())]);
}

#[test]
fn a_patch_with_dry_run_returns_the_result_and_changes_nothing() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let params = PatchParams { dry_run: true, ..Default::default() };
    let r = w.handle(Request::patch(
        &cm(),
        Some("default"),
        "a",
        Patch::Merge(json!({"data": {"k": "2"}})),
        params,
    ));
    assert_eq!(object(r.unwrap()).data["data"], json!({"k": "2"}));
    assert_eq!(w.get(&cm(), Some("default"), "a").data["data"], json!({"k": "1"}));
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn a_json_patch_whose_later_operation_fails_applies_none_and_gets_the_generic_422() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    let ops = json_patch(json!([
        {"op": "replace", "path": "/data/k", "value": "2"},
        {"op": "remove", "path": "/data/missing"},
    ]));
    let err = w.handle(Request::patch(&cm(), Some("default"), "a", ops, PatchParams::default())).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    // kube-apiserver keeps none of json-patch's words: apimachinery's generic 422.
    assert_eq!(err.message, "the server rejected our request due to an error in our request");
    assert_eq!(w.get(&cm(), Some("default"), "a").data["data"], json!({"k": "1"}));
}

#[test]
fn a_patch_that_turns_the_object_into_a_non_object_gets_400_and_changes_nothing() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), config_map("a", json!({"k": "1"})));
    for patch in [
        Patch::Merge(json!("not an object")),
        Patch::Merge(serde_json::Value::Null),
        json_patch(json!([{"op": "replace", "path": "", "value": 7}])),
    ] {
        let err =
            w.handle(Request::patch(&cm(), Some("default"), "a", patch, PatchParams::default())).unwrap_err();
        assert_eq!(code_reason(&err), (400, "BadRequest"));
    }
    assert_eq!(w.server.revision(), 5);
}

#[test]
fn an_object_built_without_content_is_created_and_patched() {
    let mut w = World::new();
    let bare = kube_core::DynamicObject::new("a", &cm());
    let r = w.handle(Request::create(&cm(), Some("default"), bare, Default::default())).unwrap();
    assert_eq!(rv(&object(r)), 5);
    let patched = w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "v"}})).unwrap();
    assert_eq!(patched.data["data"], json!({"k": "v"}));
}

mod object_from_value {
    //! `model_apiserver::patch::object_from_value` decodes every patched and applied document
    //! without serde's buffering of `DynamicObject`'s flattened fields; it must answer exactly
    //! what serde does, object or error message, whatever the document.

    use kube_core::DynamicObject;
    use model_apiserver::patch::object_from_value;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn serde_answer(doc: &Value) -> Result<DynamicObject, String> {
        serde_json::from_value(doc.clone()).map_err(|e| e.to_string())
    }

    fn answer(doc: &Value) -> Result<DynamicObject, String> {
        object_from_value(doc.clone()).map_err(|e| e.to_string())
    }

    /// A JSON value of the kinds a document's fields hold, wrong ones included.
    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "[a-z0-9.-]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `metadata`: absent, a valid one, or one whose fields have any value.
    fn any_metadata() -> impl Strategy<Value = Option<Value>> {
        let valid =
            ("[a-z]{1,6}", prop::option::of(prop::collection::btree_map("[a-z]{1,4}", "[a-z]{0,4}", 0..3)))
                .prop_map(|(name, labels)| {
                    json!({"name": name, "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                       "generation": 2, "labels": labels,
                       "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                                          "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]})
                });
        let fields = prop::collection::btree_map(
            prop_oneof![Just("name"), Just("labels"), Just("generation"), Just("finalizers"), Just("other")],
            any_value(),
            0..4,
        )
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
        prop_oneof![Just(None), valid.prop_map(Some), fields.prop_map(Some), any_value().prop_map(Some)]
    }

    fn type_field() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            3 => "[a-zA-Z/0-9]{1,10}".prop_map(|s| Some(Value::from(s))),
            1 => Just(None),
            1 => any_value().prop_map(Some),
        ]
    }

    prop_compose! {
        fn any_document()(
            api_version in type_field(),
            kind in type_field(),
            metadata in any_metadata(),
            rest in prop::collection::btree_map("[a-z]{1,6}", any_value(), 0..4),
        ) -> Value {
            let mut map: serde_json::Map<String, Value> = rest.into_iter().collect();
            for (key, value) in [("apiVersion", api_version), ("kind", kind), ("metadata", metadata)] {
                if let Some(value) = value {
                    map.insert(key.to_owned(), value);
                }
            }
            Value::Object(map)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn a_document_decodes_as_serde_decodes_it(doc in any_document()) {
            prop_assert_eq!(answer(&doc), serde_answer(&doc));
        }

        #[test]
        fn a_value_that_is_not_a_map_fails_as_with_serde(doc in any_value()) {
            prop_assert_eq!(answer(&doc), serde_answer(&doc));
        }
    }

    #[test]
    fn the_edge_cases_answer_as_serde_does() {
        for doc in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "a"}, "data": {}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a"}}),
            json!({"kind": "ConfigMap"}),
            json!({"apiVersion": 1, "kind": "ConfigMap"}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": null}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": "not a map"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": 1.5}}),
            json!({}),
            json!([]),
            json!("text"),
        ] {
            assert_eq!(answer(&doc), serde_answer(&doc), "{doc}");
        }
    }
}

mod merge_patch {
    //! `model_apiserver::patch::merge_patch` applies most merge patches to a copy of the stored
    //! object's content alone, without encoding its metadata unless the patch names it. It must
    //! answer exactly what the general path does, object or error: encode the whole object as
    //! JSON, merge the patch into it (RFC 7386), decode the result.

    use kube_core::{DynamicObject, ObjectMeta};
    use model_apiserver::patch::{merge_patch, object_from_value};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn general_path(old: &DynamicObject, patch: &Value) -> Result<DynamicObject, String> {
        let mut doc = serde_json::to_value(old).expect("a stored object encodes");
        json_patch::merge(&mut doc, patch);
        object_from_value(doc).map_err(|e| format!("the patched object is not valid: {e}"))
    }

    fn answer(old: &DynamicObject, patch: &Value) -> Result<DynamicObject, String> {
        merge_patch(old, patch).map_err(|status| status.message)
    }

    /// A JSON value of the kinds patches hold, `null` (a deletion) and wrong types included.
    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            2 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::from),
            1 => (0i64..100).prop_map(Value::from),
            3 => "[a-z0-9.-]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map(
                    prop_oneof![Just("a".to_owned()), Just("replicas".to_owned()), "[a-z]{1,5}"],
                    inner,
                    0..3
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A stored object: with or without its type fields, metadata that a server stores
    /// (timestamps in whole seconds, as they serialize), and content under `spec`, `status`,
    /// `data` or any other key.
    fn any_stored() -> impl Strategy<Value = DynamicObject> {
        (
            any::<bool>(),
            prop::option::of(prop::collection::btree_map("[a-z]{1,4}", "[a-z]{0,4}", 0..3)),
            prop::option::of(prop::collection::vec("[a-z.]{1,8}/[a-z]{1,4}", 0..2)),
            any::<bool>(),
            prop::collection::btree_map(
                prop_oneof![Just("spec"), Just("status"), Just("data"), Just("other")],
                any_value(),
                0..3,
            ),
        )
            .prop_map(|(typed, labels, finalizers, managed, content)| {
                let mut metadata = json!({
                    "name": "a", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                    "generation": 2, "creationTimestamp": "2026-12-04T10:00:00Z",
                    "labels": labels, "finalizers": finalizers,
                    "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Owner", "name": "o",
                                         "uid": "u-0", "controller": true}],
                });
                if managed {
                    metadata["managedFields"] = json!([{"manager": "m", "operation": "Update",
                        "apiVersion": "v1", "time": "2026-12-04T10:00:01Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {}}}]);
                }
                let metadata: ObjectMeta = serde_json::from_value(metadata).expect("valid metadata");
                let types = typed.then(|| kube_core::TypeMeta {
                    api_version: "example.com/v1".to_owned(),
                    kind: "Thing".to_owned(),
                });
                let data = Value::Object(content.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
                DynamicObject { types, metadata, data }
            })
    }

    /// A merge patch: usually a map naming content keys, metadata (valid or not) or a type field;
    /// sometimes not a map at all.
    fn any_patch() -> impl Strategy<Value = Value> {
        let metadata = prop_oneof![
            Just(Value::Null),
            Just(json!({"labels": {"x": "y"}})),
            Just(json!({"labels": null, "finalizers": ["example.com/f"]})),
            Just(json!({"annotations": {"note": "n"}, "ownerReferences": null})),
            Just(json!({"generation": "not a number"})),
            Just(json!({"managedFields": null})),
            any_value(),
        ];
        let map = prop::collection::btree_map(
            prop_oneof![
                4 => Just("spec".to_owned()),
                4 => Just("status".to_owned()),
                2 => Just("data".to_owned()),
                1 => Just("apiVersion".to_owned()),
                1 => Just("kind".to_owned()),
                2 => "[a-z]{1,5}",
            ],
            any_value(),
            0..3,
        );
        prop_oneof![
            6 => (map, prop::option::of(metadata)).prop_map(|(m, metadata)| {
                let mut patch: serde_json::Map<String, Value> = m.into_iter().collect();
                if let Some(metadata) = metadata {
                    patch.insert("metadata".to_owned(), metadata);
                }
                Value::Object(patch)
            }),
            1 => any_value(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn a_merge_patch_answers_as_encoding_the_whole_object_does(old in any_stored(), patch in any_patch()) {
            prop_assert_eq!(answer(&old, &patch), general_path(&old, &patch));
        }
    }

    #[test]
    fn the_edge_cases_answer_as_the_general_path_does() {
        let old: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "labels": {"k": "v"}},
            "data": {"k": "v"}, "status": {"phase": "Ready"},
        }))
        .unwrap();
        for patch in [
            json!({"status": {"phase": "Done"}}),
            json!({"status": null}),
            json!({"metadata": null}),
            json!({"metadata": {"labels": {"k": null}}}),
            json!({"metadata": {"labels": "not a map"}}),
            json!({"metadata": 5}),
            json!({"apiVersion": "v2"}),
            json!({"kind": null}),
            json!({}),
            json!(null),
            json!([1]),
            json!("text"),
        ] {
            assert_eq!(answer(&old, &patch), general_path(&old, &patch), "{patch}");
        }
    }
}
