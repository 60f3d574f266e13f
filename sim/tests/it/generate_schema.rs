//! Schema-driven generation against the model's own validator: every generated body and every
//! valid mutation passes `model_apiserver::schema::validate`, and every invalid mutation fails it
//! with a cause for exactly the labelled field and reason.

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};
use sim::generate::{Expectation, Mutation, MutationKind, body_strategy, invalid_mutations, valid_mutations};

/// Nested objects, required fields, defaults, bounds, maps, int-or-string and a nullable pattern.
const NESTED: &str = r#"
type: object
required: [spec]
properties:
  spec:
    type: object
    required: [replicas, template]
    properties:
      replicas: {type: integer, minimum: 0, maximum: 10}
      paused: {type: boolean}
      ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1}
      template:
        type: object
        required: [image]
        properties:
          image: {type: string, minLength: 1, maxLength: 20}
          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never], default: IfNotPresent}
          resources:
            type: object
            properties:
              cpu: {x-kubernetes-int-or-string: true, pattern: "^[0-9]+m?$"}
              memory: {x-kubernetes-int-or-string: true}
      labels: {type: object, maxProperties: 4, additionalProperties: {type: string, maxLength: 8}}
      nickname: {type: string, nullable: true, pattern: "^[a-z][a-z0-9-]{0,9}$"}
"#;

/// Arrays of objects, enums of strings and integers, multipleOf and exclusive bounds.
const ARRAYS: &str = r#"
type: object
properties:
  spec:
    type: object
    properties:
      ports:
        type: array
        minItems: 1
        maxItems: 3
        items:
          type: object
          required: [port]
          properties:
            port: {type: integer, minimum: 1, maximum: 65535}
            protocol: {type: string, enum: [TCP, UDP]}
      tags: {type: array, maxItems: 5, items: {type: string, pattern: "^[a-z]+$", maxLength: 6}}
      mode: {type: string, enum: [fast, slow]}
      level: {type: integer, enum: [1, 2, 3]}
      weight: {type: number, multipleOf: 0.5, maximum: 100, exclusiveMaximum: true}
      step: {type: integer, multipleOf: 5, minimum: 3, maximum: 40}
"#;

/// Int-or-string with bounds, preserved unknown fields, a nullable bounded string and a map with
/// minProperties.
const LOOSE: &str = r#"
type: object
properties:
  spec:
    type: object
    required: [target]
    properties:
      target: {x-kubernetes-int-or-string: true, minimum: 1, maximum: 100, maxLength: 5}
      config: {type: object, x-kubernetes-preserve-unknown-fields: true}
      extra:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          known: {type: string, minLength: 3}
      window: {type: string, minLength: 2, maxLength: 4, nullable: true}
      selector: {type: object, minProperties: 1, additionalProperties: {type: integer, minimum: 0}}
"#;

const SCHEMAS: [(&str, &str); 3] = [("nested", NESTED), ("arrays", ARRAYS), ("loose", LOOSE)];

/// Cases per schema and property: enough to reach every site and kind of these small schemas.
const CASES: u32 = 200;

fn schema(yaml: &str) -> JSONSchemaProps {
    serde_yaml_ng::from_str(yaml).expect("the test schema parses")
}

/// A runner with a fixed seed, so that the test draws the same cases on every run.
fn runner() -> TestRunner {
    let config = Config { cases: CASES, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// The body as the server stores it: pruned, then defaulted.
fn stored(schema: &JSONSchemaProps, mut body: Value) -> Value {
    model_apiserver::schema::prune(schema, &mut body);
    model_apiserver::schema::apply_defaults(schema, &mut body);
    body
}

/// A stored body and a mutation of it (none when the body has no site for one), drawn from
/// `mutations` (the valid or the invalid ones).
fn body_and_mutation(
    schema: &JSONSchemaProps,
    mutations: fn(&JSONSchemaProps, &Value) -> Option<BoxedStrategy<Mutation>>,
) -> BoxedStrategy<(Value, Option<Mutation>)> {
    let owned = schema.clone();
    body_strategy(schema)
        .prop_flat_map(move |body| {
            let body = stored(&owned, body);
            match mutations(&owned, &body) {
                Some(mutation) => (Just(body), mutation.prop_map(Some)).boxed(),
                None => (Just(body), Just(None)).boxed(),
            }
        })
        .boxed()
}

#[test]
fn every_generated_body_is_valid_under_its_schema() {
    for (name, yaml) in SCHEMAS {
        let schema = schema(yaml);
        let result = runner().run(&body_strategy(&schema), |body| {
            let causes = model_apiserver::schema::validate(&schema, &body);
            prop_assert!(causes.is_empty(), "{name}: {body} fails: {causes:?}");
            let stored = stored(&schema, body.clone());
            let causes = model_apiserver::schema::validate(&schema, &stored);
            prop_assert!(causes.is_empty(), "{name}: stored {stored} fails: {causes:?}");
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_generated_valid_mutation_keeps_the_body_valid() {
    for (name, yaml) in SCHEMAS {
        let schema = schema(yaml);
        let result = runner().run(&body_and_mutation(&schema, valid_mutations), |(body, mutation)| {
            let mutation = mutation.expect("every body of these schemas has a field to change");
            prop_assert_eq!(&mutation.expect, &Expectation::Accept);
            let after = stored(&schema, mutation.applied_to(&body));
            let causes = model_apiserver::schema::validate(&schema, &after);
            prop_assert!(causes.is_empty(), "{name}: {mutation} on {body} gives {after}: {causes:?}");
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_generated_invalid_mutation_fails_validation_at_its_labelled_field() {
    for (name, yaml) in SCHEMAS {
        let schema = schema(yaml);
        let result = runner().run(&body_and_mutation(&schema, invalid_mutations), |(body, mutation)| {
            let mutation = mutation.expect("every body of these schemas has a field to break");
            let Expectation::Reject { field, cause } = &mutation.expect else {
                return Err(TestCaseError::fail(format!("{mutation} is labelled valid")));
            };
            prop_assert_eq!(Some(cause.as_str()), mutation.kind.cause_reason());
            let after = stored(&schema, mutation.applied_to(&body));
            let causes = model_apiserver::schema::validate(&schema, &after);
            let named = causes.iter().any(|c| &c.field == field && &c.reason == cause);
            prop_assert!(named, "{name}: {mutation} on {body} gives {after}: {causes:?}");
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Every kind of invalid mutation that `schema` allows somewhere, over many drawn bodies.
fn invalid_kinds_drawn(schema: &JSONSchemaProps) -> BTreeSet<String> {
    let mut runner = runner();
    let strategy = body_and_mutation(schema, invalid_mutations);
    let mut kinds = BTreeSet::new();
    for _ in 0..CASES {
        let (_, mutation) = strategy.new_tree(&mut runner).expect("a case is drawn").current();
        if let Some(mutation) = mutation {
            kinds.insert(serde_json::to_value(mutation.kind).expect("kinds serialize").to_string());
        }
    }
    kinds
}

#[test]
fn invalid_mutations_cover_every_constraint_the_schemas_declare() {
    let all: BTreeSet<String> =
        SCHEMAS.iter().flat_map(|(_, yaml)| invalid_kinds_drawn(&schema(yaml))).collect();
    let expected: BTreeSet<String> = [
        "wrongType",
        "outOfRange",
        "notInEnum",
        "tooLong",
        "tooShort",
        "patternMismatch",
        "tooManyItems",
        "tooFewItems",
        "missingRequired",
        "wrongItemType",
    ]
    .iter()
    .map(|k| format!("{k:?}"))
    .collect();
    assert_eq!(all, expected);
}

#[test]
fn out_of_range_mutations_are_the_first_integers_past_each_bound() {
    let schema = schema(NESTED);
    let body = json!({ "spec": { "replicas": 3, "template": { "image": "nginx", "pullPolicy": "Always" } } });
    let strategy = invalid_mutations(&schema, &body).expect("the body has fields to break");
    let mut runner = runner();
    let mut found = BTreeSet::new();
    for _ in 0..CASES * 5 {
        let mutation = strategy.new_tree(&mut runner).expect("a case is drawn").current();
        if mutation.kind == MutationKind::OutOfRange && mutation.path == "/spec/replicas" {
            found.insert(mutation.value.expect("out-of-range mutations set a value").to_string());
        }
    }
    assert_eq!(found, BTreeSet::from(["-1".to_owned(), "11".to_owned()]));
}

#[test]
fn a_mutation_is_sent_as_its_value_nested_under_the_pointer() {
    let set: Mutation = serde_json::from_value(json!({
        "path": "/spec/a~1b/c",
        "value": [1, 2],
        "kind": "setValue",
        "expect": { "outcome": "accept" },
    }))
    .expect("the mutation parses");
    assert_eq!(set.segments(), ["spec", "a/b", "c"]);
    assert_eq!(set.merge_patch(), json!({ "spec": { "a/b": { "c": [1, 2] } } }));
    let removal: Mutation = serde_json::from_value(json!({
        "path": "/spec/replicas",
        "value": null,
        "kind": "missingRequired",
        "expect": { "outcome": "reject", "field": "spec.replicas", "cause": "FieldValueRequired" },
    }))
    .expect("the mutation parses");
    assert_eq!(removal.merge_patch(), json!({ "spec": { "replicas": null } }));
    assert_eq!(
        removal.applied_to(&json!({ "spec": { "replicas": 2, "x": 1 } })),
        json!({ "spec": { "x": 1 } })
    );
    assert_eq!(
        removal.to_string(),
        "missingRequired /spec/replicas = removed (invalid: expect 422 Invalid, FieldValueRequired at spec.replicas)"
    );
}

#[test]
fn mutations_draws_both_valid_and_invalid_ones_and_labels_each_by_its_kind() {
    let schema = schema(NESTED);
    let body = json!({ "spec": { "replicas": 3, "template": { "image": "nginx", "pullPolicy": "Always" } } });
    let strategy = sim::generate::mutations(&schema, &body).expect("the body has fields to change");
    let mut runner = runner();
    let mut outcomes = BTreeSet::new();
    for _ in 0..CASES {
        let mutation = strategy.new_tree(&mut runner).expect("a case is drawn").current();
        assert_eq!(mutation.is_valid(), mutation.kind.cause_reason().is_none(), "{mutation}");
        outcomes.insert(mutation.is_valid());
    }
    assert_eq!(outcomes, BTreeSet::from([false, true]));
}
