//! Structural-schema validation, pruning and defaulting of custom resources, with the causes the
//! apiserver reports; plus a property test over random values.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use model_apiserver::schema::{apply_defaults, prune, validate};
use proptest::prelude::*;
use serde_json::{Value, json};

fn schema(v: Value) -> JSONSchemaProps {
    serde_json::from_value(v).expect("test schema deserializes")
}

/// A resource schema whose `spec` is `spec_schema`.
fn with_spec(spec_schema: Value) -> JSONSchemaProps {
    schema(json!({"type": "object", "properties": {"spec": spec_schema}}))
}

/// The causes of validating `{"spec": spec}` as (reason, field, message).
fn causes(spec_schema: Value, spec: Value) -> Vec<(String, String, String)> {
    let obj =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    validate(&with_spec(spec_schema), &obj).into_iter().map(|c| (c.reason, c.field, c.message)).collect()
}

fn one(reason: &str, field: &str, message: &str) -> Vec<(String, String, String)> {
    vec![(reason.to_owned(), field.to_owned(), message.to_owned())]
}

fn replicas_schema(extra: Value) -> Value {
    let mut replicas = json!({"type": "integer"});
    replicas.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"type": "object", "properties": {"replicas": replicas}})
}

#[test]
fn integer_field_accepts_an_integer() {
    assert_eq!(causes(replicas_schema(json!({})), json!({"replicas": 3})), vec![]);
}

#[test]
fn integer_field_accepts_an_integral_float() {
    assert_eq!(causes(replicas_schema(json!({})), json!({"replicas": 3.0})), vec![]);
}

#[test]
fn string_in_integer_field_is_type_invalid() {
    assert_eq!(
        causes(replicas_schema(json!({})), json!({"replicas": "three"})),
        one(
            "FieldValueTypeInvalid",
            "spec.replicas",
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        )
    );
}

#[test]
fn fraction_in_integer_field_is_type_invalid() {
    assert_eq!(
        causes(replicas_schema(json!({})), json!({"replicas": 1.5})),
        one(
            "FieldValueTypeInvalid",
            "spec.replicas",
            "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""
        )
    );
}

#[test]
fn every_type_rejects_the_others() {
    let cases = [
        ("string", json!(1), "integer"),
        ("boolean", json!("true"), "string"),
        ("number", json!(true), "boolean"),
        ("array", json!({}), "object"),
        ("object", json!([]), "array"),
    ];
    for (ty, value, actual) in cases {
        let got = causes(json!({"type": "object", "properties": {"f": {"type": ty}}}), json!({"f": value}));
        let message =
            format!("Invalid value: \"{actual}\": spec.f in body must be of type {ty}: \"{actual}\"");
        assert_eq!(got, one("FieldValueTypeInvalid", "spec.f", &message), "{ty}");
    }
}

#[test]
fn number_field_accepts_an_integer() {
    assert_eq!(
        causes(json!({"type": "object", "properties": {"f": {"type": "number"}}}), json!({"f": 2})),
        vec![]
    );
}

#[test]
fn null_is_type_invalid_unless_nullable() {
    assert_eq!(
        causes(replicas_schema(json!({})), json!({"replicas": null})),
        one(
            "FieldValueTypeInvalid",
            "spec.replicas",
            "Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\""
        )
    );
    assert_eq!(causes(replicas_schema(json!({"nullable": true})), json!({"replicas": null})), vec![]);
}

#[test]
fn missing_required_field_is_required_value() {
    let s = json!({"type": "object", "required": ["replicas", "image"], "properties": {
        "replicas": {"type": "integer"}, "image": {"type": "string"}}});
    assert_eq!(
        causes(s, json!({"image": "nginx"})),
        one("FieldValueRequired", "spec.replicas", "Required value")
    );
}

#[test]
fn missing_required_spec_at_the_root_is_required_value() {
    let s =
        schema(json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}));
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let got: Vec<_> = validate(&s, &obj).into_iter().map(|c| (c.reason, c.field, c.message)).collect();
    assert_eq!(got, one("FieldValueRequired", "spec", "Required value"));
}

#[test]
fn root_api_version_kind_and_metadata_are_not_validated_by_the_schema() {
    let s = schema(json!({"type": "object", "required": ["metadata"], "properties": {
        "metadata": {"type": "string"}, "kind": {"type": "integer"}}}));
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(validate(&s, &obj), vec![]);
}

#[test]
fn value_outside_enum_is_unsupported_value() {
    let s = json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}});
    assert_eq!(causes(s.clone(), json!({"mode": "a"})), vec![]);
    assert_eq!(
        causes(s, json!({"mode": "x"})),
        one(
            "FieldValueNotSupported",
            "spec.mode",
            "Unsupported value: \"x\": supported values: \"a\", \"b\""
        )
    );
}

#[test]
fn integer_enum_lists_its_values_quoted() {
    let s = json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}});
    assert_eq!(causes(s.clone(), json!({"n": 2})), vec![]);
    assert_eq!(
        causes(s, json!({"n": 3})),
        one("FieldValueNotSupported", "spec.n", "Unsupported value: 3: supported values: \"1\", \"2\"")
    );
}

#[test]
fn value_of_wrong_type_outside_enum_reports_both_causes() {
    let s = json!({"type": "object", "properties": {
        "n": {"type": "integer", "enum": [1, 2]}, "s": {"type": "string", "enum": ["a", "b"]}}});
    assert_eq!(
        causes(s, json!({"n": "x", "s": true})),
        vec![
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.n".to_owned(),
                "Invalid value: \"string\": spec.n in body must be of type integer: \"string\"".to_owned()
            ),
            (
                "FieldValueNotSupported".to_owned(),
                "spec.n".to_owned(),
                "Unsupported value: \"x\": supported values: \"1\", \"2\"".to_owned()
            ),
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.s".to_owned(),
                "Invalid value: \"boolean\": spec.s in body must be of type string: \"boolean\"".to_owned()
            ),
            (
                "FieldValueNotSupported".to_owned(),
                "spec.s".to_owned(),
                "Unsupported value: true: supported values: \"a\", \"b\"".to_owned()
            ),
        ]
    );
}

#[test]
fn invalid_pattern_fails_every_value_saying_the_pattern_is_invalid() {
    let s = json!({"type": "object", "properties": {"f": {"type": "string", "pattern": "+"}}});
    assert_eq!(
        causes(s, json!({"f": "foo"})),
        one(
            "FieldValueInvalid",
            "spec.f",
            "Invalid value: \"foo\": spec.f in body should match '+, but pattern is invalid: error: repetition operator missing expression'"
        )
    );
}

#[test]
fn maximum_and_minimum_are_inclusive() {
    let s = replicas_schema(json!({"minimum": 1, "maximum": 10}));
    assert_eq!(causes(s.clone(), json!({"replicas": 10})), vec![]);
    assert_eq!(causes(s.clone(), json!({"replicas": 1})), vec![]);
    assert_eq!(
        causes(s.clone(), json!({"replicas": 11})),
        one(
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        )
    );
    assert_eq!(
        causes(s, json!({"replicas": 0})),
        one(
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
        )
    );
}

#[test]
fn exclusive_maximum_and_minimum_reject_the_bound() {
    let s = replicas_schema(
        json!({"minimum": 1, "maximum": 10, "exclusiveMinimum": true, "exclusiveMaximum": true}),
    );
    assert_eq!(causes(s.clone(), json!({"replicas": 5})), vec![]);
    assert_eq!(
        causes(s.clone(), json!({"replicas": 10})),
        one(
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: 10: spec.replicas in body should be less than 10"
        )
    );
    assert_eq!(
        causes(s, json!({"replicas": 1})),
        one(
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: 1: spec.replicas in body should be greater than 1"
        )
    );
}

#[test]
fn pattern_mismatch_is_invalid_value() {
    let s = json!({"type": "object", "properties": {"image": {"type": "string", "pattern": "^[a-z]+$"}}});
    assert_eq!(causes(s.clone(), json!({"image": "nginx"})), vec![]);
    assert_eq!(
        causes(s, json!({"image": "Nginx"})),
        one(
            "FieldValueInvalid",
            "spec.image",
            "Invalid value: \"Nginx\": spec.image in body should match '^[a-z]+$'"
        )
    );
}

#[test]
fn a_pattern_gives_the_same_answers_on_every_thread_and_past_the_cache_bound() {
    // Sweeps run every seed on a fresh thread, and the server's compiled patterns are one cache
    // for the process: a pattern compiled on one thread answers on another, an invalid one fails
    // the same way the second time (from the cache), and more distinct patterns than the cache
    // keeps still validate.
    let s = json!({"type": "object", "properties": {"image": {"type": "string", "pattern": "^[a-z]+$"}}});
    let bad = json!({"type": "object", "properties": {"f": {"type": "string", "pattern": "+"}}});
    let here = (causes(s.clone(), json!({"image": "Nginx"})), causes(bad.clone(), json!({"f": "foo"})));
    let there = std::thread::spawn({
        let (s, bad) = (s.clone(), bad.clone());
        move || (causes(s, json!({"image": "Nginx"})), causes(bad, json!({"f": "foo"})))
    })
    .join()
    .expect("the other thread validates");
    assert_eq!(here, there);
    assert_eq!(here.0.len(), 1, "the mismatch is one cause");
    assert!(here.1[0].2.contains("but pattern is invalid"), "{:?}", here.1);
    let compiled = model_apiserver::schema::compiled_pattern("^[a-z]+$").expect("valid");
    let again = std::thread::spawn(|| model_apiserver::schema::compiled_pattern("^[a-z]+$").expect("valid"))
        .join()
        .expect("the other thread compiles");
    assert!(std::sync::Arc::ptr_eq(&compiled, &again), "compiled once for the process");
    for i in 0..300 {
        let numbered =
            json!({"type": "object", "properties": {"n": {"type": "string", "pattern": format!("^n{i}$")}}});
        assert_eq!(causes(numbered.clone(), json!({"n": format!("n{i}")})), vec![], "pattern {i}");
        assert_eq!(causes(numbered, json!({"n": "other"})).len(), 1, "pattern {i}");
    }
    assert_eq!(causes(s, json!({"image": "nginx"})), vec![], "after the cache started over");
}

#[test]
fn max_length_is_too_long_and_min_length_is_invalid() {
    let s =
        json!({"type": "object", "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 4}}});
    assert_eq!(causes(s.clone(), json!({"name": "abcd"})), vec![]);
    assert_eq!(
        causes(s.clone(), json!({"name": "abcde"})),
        one("FieldValueTooLong", "spec.name", "Too long: may not be more than 4 bytes")
    );
    assert_eq!(
        causes(s, json!({"name": "a"})),
        one(
            "FieldValueInvalid",
            "spec.name",
            "Invalid value: \"a\": spec.name in body should be at least 2 chars long"
        )
    );
}

#[test]
fn max_items_is_too_many_and_min_items_is_invalid() {
    let s = json!({"type": "object", "properties": {"tags": {"type": "array", "minItems": 1, "maxItems": 2,
        "items": {"type": "string"}}}});
    assert_eq!(causes(s.clone(), json!({"tags": ["a", "b"]})), vec![]);
    assert_eq!(
        causes(s.clone(), json!({"tags": ["a", "b", "c"]})),
        one("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items")
    );
    assert_eq!(
        causes(s, json!({"tags": []})),
        one(
            "FieldValueInvalid",
            "spec.tags",
            "Invalid value: 0: spec.tags in body should have at least 1 items"
        )
    );
}

#[test]
fn items_are_validated_with_indexed_paths() {
    let s = json!({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}});
    assert_eq!(
        causes(s, json!({"items": [{"name": "a"}, {"name": 7}, {}]})),
        vec![
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.items[1].name".to_owned(),
                "Invalid value: \"integer\": spec.items[1].name in body must be of type string: \"integer\""
                    .to_owned()
            ),
            ("FieldValueRequired".to_owned(), "spec.items[2].name".to_owned(), "Required value".to_owned()),
        ]
    );
}

#[test]
fn additional_properties_schema_validates_every_map_value() {
    let s = json!({"type": "object", "properties": {"limits": {"type": "object",
        "additionalProperties": {"type": "integer"}}}});
    assert_eq!(causes(s.clone(), json!({"limits": {"cpu": 1, "mem": 2}})), vec![]);
    assert_eq!(
        causes(s, json!({"limits": {"cpu": 1, "mem": "2Gi"}})),
        one(
            "FieldValueTypeInvalid",
            "spec.limits.mem",
            "Invalid value: \"string\": spec.limits.mem in body must be of type integer: \"string\""
        )
    );
}

#[test]
fn int_or_string_accepts_both_and_rejects_others() {
    let s = json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}});
    assert_eq!(causes(s.clone(), json!({"port": 80})), vec![]);
    assert_eq!(causes(s.clone(), json!({"port": "http"})), vec![]);
    assert_eq!(
        causes(s, json!({"port": true})),
        one(
            "FieldValueTypeInvalid",
            "spec.port",
            "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
        )
    );
}

#[test]
fn preserve_unknown_fields_without_type_accepts_anything() {
    let s = json!({"type": "object", "properties": {"raw": {"x-kubernetes-preserve-unknown-fields": true}}});
    assert_eq!(causes(s.clone(), json!({"raw": {"a": [1, "b"]}})), vec![]);
    assert_eq!(causes(s, json!({"raw": 3})), vec![]);
}

#[test]
fn embedded_resource_needs_api_version_and_kind() {
    let s = json!({"type": "object", "properties": {"template": {"type": "object",
        "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}});
    assert_eq!(
        causes(s.clone(), json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}}})),
        vec![]
    );
    assert_eq!(
        causes(s, json!({"template": {"kind": "Pod"}})),
        one("FieldValueRequired", "spec.template.apiVersion", "Required value: must not be empty")
    );
}

#[test]
fn fields_unknown_to_the_schema_are_not_validation_errors() {
    assert_eq!(causes(replicas_schema(json!({})), json!({"replicas": 1, "extra": "x"})), vec![]);
}

fn pruning_schema() -> JSONSchemaProps {
    schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "template": {"type": "object", "properties": {"image": {"type": "string"}}},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "known": {"type": "object", "properties": {"k": {"type": "string"}}}}}
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
    }}))
}

#[test]
fn pruning_drops_unknown_fields_at_every_level_but_keeps_resource_keys() {
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
        "unknownTop": 1,
        "spec": {"replicas": 2, "unknown": true, "template": {"image": "nginx", "unknownDeep": {"x": 1}},
                 "ports": [{"port": 80, "name": "http"}],
                 "labels": {"one": {"v": "x", "w": "y"}}},
        "status": {"ready": true, "phase": "Running"}
    });
    prune(&pruning_schema(), &mut obj);
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
            "spec": {"replicas": 2, "template": {"image": "nginx"}, "ports": [{"port": 80}],
                     "labels": {"one": {"v": "x"}}},
            "status": {"ready": true}
        })
    );
}

#[test]
fn pruning_keeps_unknown_fields_under_preserve_unknown_fields_but_prunes_known_ones() {
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {},
        "spec": {"raw": {"anything": {"deep": [1, 2]}, "known": {"k": "v", "dropped": 1}}}});
    prune(&pruning_schema(), &mut obj);
    assert_eq!(
        obj,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {},
            "spec": {"raw": {"anything": {"deep": [1, 2]}, "known": {"k": "v"}}}})
    );
}

#[test]
fn pruning_keeps_api_version_kind_and_metadata_of_embedded_resources() {
    let s = schema(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object"}}}}}}}));
    let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {}, "other": 1}}});
    prune(&s, &mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}})
    );
}

fn defaulting_schema() -> JSONSchemaProps {
    schema(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "strategy": {"type": "object", "default": {}, "properties": {
            "type": {"type": "string", "default": "Rolling"},
            "maxSurge": {"type": "integer", "default": 25}}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
        "paused": {"type": "boolean"},
        "note": {"type": "string", "nullable": true, "default": "n"}
    }}}}))
}

#[test]
fn defaults_fill_absent_fields_and_recurse_into_defaulted_objects() {
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}, "spec": {}});
    apply_defaults(&defaulting_schema(), &mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "note": "n"})
    );
}

#[test]
fn defaults_do_not_override_present_values_but_fill_inside_present_objects() {
    let mut obj = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
    apply_defaults(&defaulting_schema(), &mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 3, "strategy": {"type": "Recreate", "maxSurge": 25}, "note": "n"})
    );
}

#[test]
fn defaults_apply_to_every_array_item() {
    let mut obj = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
    apply_defaults(&defaulting_schema(), &mut obj);
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
}

#[test]
fn absent_parent_object_without_default_is_not_created() {
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}});
    apply_defaults(&defaulting_schema(), &mut obj);
    assert_eq!(obj, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}));
}

#[test]
fn non_nullable_null_is_defaulted_or_dropped_and_nullable_null_is_kept() {
    let mut obj = json!({"spec": {"replicas": null, "paused": null, "note": null}});
    apply_defaults(&defaulting_schema(), &mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "note": null})
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("replicas".to_owned()),
                    Just("image".to_owned()),
                    Just("ports".to_owned()),
                    Just("port".to_owned()),
                    Just("raw".to_owned()),
                    "[a-z]{1,3}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn property_schema() -> JSONSchemaProps {
    schema(json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object",
        "required": ["image"], "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 5, "default": 1},
        "image": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 4},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "ports": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true}, "name": {"type": "string", "default": "p"}}}},
        "raw": {"x-kubernetes-preserve-unknown-fields": true, "type": "object"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
    }}}}))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn validate_never_panics_and_prune_is_idempotent(spec in arb_json(), extra in arb_json()) {
        let s = property_schema();
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}, "spec": spec, "x": extra});
        let _ = validate(&s, &obj);
        prune(&s, &mut obj);
        let once = obj.clone();
        let causes_once = validate(&s, &once);
        prune(&s, &mut obj);
        prop_assert_eq!(&obj, &once);
        prop_assert_eq!(validate(&s, &obj), causes_once);
        apply_defaults(&s, &mut obj);
        let _ = validate(&s, &obj);
    }
}

/// A string property `value` of `format`, checked with `s`.
fn format_causes(format: &str, s: &str) -> Vec<(String, String, String)> {
    let spec = json!({"type": "object", "properties": {"value": {"type": "string", "format": format}}});
    causes(spec, json!({"value": s}))
}

#[test]
fn a_string_is_checked_against_the_formats_a_crd_keeps() {
    let valid = [
        ("ipv4", "10.0.0.1"),
        ("ipv4", "010.000.000.001"), // ParseIPSloppy: leading zeros
        ("ipv4", "::ffff:1.2.3.4"),  // net.ParseIP reads it; it has a dot
        ("ipv6", "2001:db8::1"),
        ("cidr", "10.0.0.0/8"),
        ("cidr", "2001:db8::/32"),
        ("hostname", "example.com"),
        ("hostname", "localhost"),
        ("uri", "https://example.com/a?b=c"),
        ("uri", "/absolute/path"),
        ("email", "ops@example.com"),
        ("email", "Ops Team <ops@example.com>"),
        ("mac", "00:00:5e:00:53:01"),
        ("mac", "0000.5e00.5301"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("uuid4", "9b2f4c0e-1d1a-4c36-9e0b-7d4f2c9f6a10"),
        ("date", "2024-02-29"),
        ("date-time", "2024-01-01T00:00:00Z"),
        ("date-time", "2024-01-01t12:30:00.5+02:00"),
        ("datetime", "2024-01-01T00:00:00Z"),
        ("duration", "1h30m"),
        ("duration", "3 days"),
        ("byte", "aGVsbG8="),
        ("hexcolor", "#ffcc00"),
        ("rgbcolor", "rgb(255, 0, 10)"),
        ("isbn10", "0321751043"),
        ("isbn13", "978-0321751041"),
        ("creditcard", "4111 1111 1111 1111"),
        ("ssn", "123-45-6789"),
        ("bsonobjectid", "507f1f77bcf86cd799439011"),
        ("password", "anything at all"),
        // Not a format a CRD keeps (stripped): nothing to check.
        ("int32", "not a number"),
        ("k8s-unknown", "whatever"),
    ];
    for (format, s) in valid {
        assert_eq!(format_causes(format, s), vec![], "{format} {s:?}");
    }
    let invalid = [
        ("ipv4", "1.2.3.4:8080"),
        ("ipv4", "2001:db8::1"),
        ("ipv4", "256.1.1.1"),
        ("ipv6", "1.2.3.4"),
        ("ipv6", "fe80::1%eth0"),
        ("cidr", "10.0.0.0/33"),
        ("cidr", "10.0.0.0"),
        ("hostname", "-bad.example.com"),
        ("hostname", "under_score.com"),
        ("uri", "relative/path"),
        ("email", "no-at-sign"),
        ("mac", "00:00:5e:00:53"),
        ("uuid", "not-a-uuid"),
        ("date", "2023-02-29"),
        ("date", "2024-1-01"),
        ("date-time", "2024-01-01T00:00:00"),
        ("date-time", "2024-01-01T24:00:00Z"),
        ("duration", "soon"),
        ("byte", "not base64!"),
        ("hexcolor", "#ggg"),
        ("isbn10", "0321751044"),
        ("creditcard", "4111 1111 1111 1112"),
        ("bsonobjectid", "507f1f77bcf86cd79943901"),
    ];
    for (format, s) in invalid {
        let message = format!("Invalid value: {s:?}: spec.value in body must be of type {format}: {s:?}");
        assert_eq!(
            format_causes(format, s),
            one("FieldValueTypeInvalid", "spec.value", &message),
            "{format}"
        );
    }
}

/// Gateway API's address: an `IPAddress` value is an IPv4 or IPv6 address (`oneOf` of two
/// alternatives, the first with an `anyOf` of formats), any other type anything.
fn address_schema() -> Value {
    json!({
        "type": "object",
        "oneOf": [
            {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
            {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}}
        ],
        "properties": {"type": {"type": "string"}, "value": {"type": "string"}}
    })
}

#[test]
fn one_of_any_of_all_of_and_not_hold_as_kube_openapi_checks_them() {
    let spec = json!({"type": "object", "properties": {"address": address_schema()}});
    let check = |address: Value| causes(spec.clone(), json!({"address": address}));
    assert_eq!(check(json!({"type": "IPAddress", "value": "10.0.0.1"})), vec![]);
    assert_eq!(check(json!({"type": "IPAddress", "value": "2001:db8::1"})), vec![]);
    assert_eq!(check(json!({"type": "Hostname", "value": "example.com"})), vec![]);
    // No alternative holds: the oneOf failure, then the causes of the one that checked more
    // (the first: it checks `type` and `value`), its anyOf failure and the first format's cause.
    let found = check(json!({"type": "IPAddress", "value": "1.2.3.4:8080"}));
    let invalid = |path: &str, message: &str| {
        (
            "FieldValueInvalid".to_owned(),
            "<nil>".to_owned(),
            format!("Invalid value: \"\": {path:?} {message}"),
        )
    };
    assert_eq!(
        found,
        vec![
            invalid("spec.address", "must validate one and only one schema (oneOf). Found none valid"),
            invalid("spec.address.value", "must validate at least one schema (anyOf)"),
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.address.value".to_owned(),
                "Invalid value: \"1.2.3.4:8080\": spec.address.value in body must be of type ipv4: \"1.2.3.4:8080\""
                    .to_owned()
            ),
        ]
    );
    // allOf: every alternative's causes, then its failure; not: valid against it is a failure.
    let composed = json!({
        "type": "object",
        "properties": {
            "port": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 1024}]},
            "name": {"type": "string", "not": {"enum": ["default"]}},
            "mode": {"type": "string", "oneOf": [{"enum": ["a", "b"]}, {"enum": ["b", "c"]}]}
        }
    });
    let found = causes(composed.clone(), json!({"port": 2000, "name": "default", "mode": "b"}));
    assert_eq!(
        found,
        vec![
            invalid("spec.mode", "must validate one and only one schema (oneOf). Found 2 valid alternatives"),
            invalid("spec.name", "must not validate the schema (not)"),
            (
                "FieldValueInvalid".to_owned(),
                "spec.port".to_owned(),
                "Invalid value: 2000: spec.port in body should be less than or equal to 1024".to_owned()
            ),
            invalid("spec.port", "must validate all the schemas (allOf)"),
        ]
    );
    assert_eq!(causes(composed, json!({"port": 80, "name": "web", "mode": "a"})), vec![]);
}
