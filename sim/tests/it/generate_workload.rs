//! Generated workloads: deterministic from a seed, persisted as JSON, shortened for the shrinker,
//! and run end to end against the model server as a validation oracle, over a custom resource
//! declared with kube's `#[derive(CustomResource)]`.

use std::sync::Arc;

use futures::StreamExt;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sim::api::Api;
use sim::generate::{GenerateError, GeneratedWorkload, Step};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, Sim, SweepConfig, Verdict, sweep};

/// A widget: bounds, a pattern, an enum, a bounded list, an int-or-string and a nested object.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    #[schemars(range(min = 0, max = 10))]
    replicas: i32,
    #[schemars(length(min = 1, max = 16), regex(pattern = r"^[a-z][a-z0-9-]*$"))]
    image: String,
    mode: Mode,
    #[schemars(length(max = 4))]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    port: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
struct Limits {
    #[schemars(range(min = 1, max = 64))]
    cpu: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory: Option<String>,
}

fn int_or_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "x-kubernetes-int-or-string": true })
}

/// Steps per generated workload in the end-to-end sweep.
const STEPS: usize = 10;
/// Seeds of the end-to-end sweep.
const SEEDS: u64 = 50;

fn crd_yaml() -> String {
    serde_yaml_ng::to_string(&Widget::crd()).expect("the CRD serializes")
}

/// A world with the Widget CRD, a controller that only watches widgets (its typed cache must
/// decode every object the server accepted) and `workload` as the script.
fn world(workload: GeneratedWorkload) -> sim::SimBuilder {
    Sim::builder()
        .scenario("generated-widgets")
        .crds_yaml("default", &crd_yaml())
        .expect("the CRD loads")
        .controller("widgets", |clients: Clients| async move {
            let widgets: Api<Widget> = Api::namespaced(clients.default_cluster(), "default");
            Controller::new(widgets, watcher::Config::default())
                .run(
                    |_widget, _ctx| async { Ok::<_, sim::Error>(Action::await_change()) },
                    |_widget, _error, _ctx| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(workload.into_script())
}

fn generated(seed: u64) -> GeneratedWorkload {
    GeneratedWorkload::for_crd(&Widget::crd(), seed, STEPS).expect("the Widget schema generates")
}

#[test]
fn generating_twice_from_one_seed_gives_byte_identical_json() {
    for seed in [0, 1, 99] {
        let first = serde_json::to_string(&generated(seed)).expect("workloads serialize");
        let second = serde_json::to_string(&generated(seed)).expect("workloads serialize");
        assert_eq!(first, second, "seed {seed}");
    }
    assert_ne!(generated(0).steps, generated(1).steps);
}

#[test]
fn a_generated_workload_starts_with_a_create_and_has_the_asked_number_of_steps() {
    let workload = generated(3);
    assert_eq!(workload.steps.len(), STEPS);
    assert!(matches!(workload.steps[0], Step::Create { .. }), "{:?}", workload.steps[0]);
    assert_eq!(
        (workload.api_version.as_str(), workload.kind.as_str(), workload.plural.as_str()),
        ("example.com/v1", "Widget", "widgets")
    );
    assert_eq!(
        (workload.namespace.as_str(), workload.name.as_str(), workload.seed),
        ("default", "generated", 3)
    );
}

#[test]
fn a_generated_workload_round_trips_through_json() {
    for seed in 0..20 {
        let workload = generated(seed);
        let text = serde_json::to_string_pretty(&workload).expect("workloads serialize");
        let back: GeneratedWorkload = serde_json::from_str(&text).expect("workloads deserialize");
        assert_eq!(back, workload, "seed {seed}");
    }
}

/// A hand-written workload in the persisted shape: create, a valid and an invalid mutation,
/// delete, create again, a last mutation.
fn persisted() -> serde_json::Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "plural": "widgets",
        "namespace": "default",
        "name": "generated",
        "seed": 7,
        "steps": [
            { "op": "create", "body": { "spec": { "replicas": 1, "image": "a", "mode": "Fast", "tags": [] } } },
            { "op": "mutate", "path": "/spec/replicas", "value": 10, "kind": "setValue",
              "expect": { "outcome": "accept" } },
            { "op": "mutate", "path": "/spec/replicas", "value": 11, "kind": "outOfRange",
              "expect": { "outcome": "reject", "field": "spec.replicas", "cause": "FieldValueInvalid" } },
            { "op": "delete" },
            { "op": "create", "body": { "spec": { "replicas": 0, "image": "b", "mode": "Slow", "tags": ["x"] } } },
            { "op": "mutate", "path": "/spec/mode", "value": "Medium", "kind": "notInEnum",
              "expect": { "outcome": "reject", "field": "spec.mode", "cause": "FieldValueNotSupported" } },
        ],
    })
}

#[test]
fn the_persisted_shape_is_camel_case_json_that_reads_back_unchanged() {
    let workload: GeneratedWorkload = serde_json::from_value(persisted()).expect("the shape parses");
    assert_eq!(workload.counts(), (4, 2));
    assert_eq!(serde_json::to_value(&workload).expect("workloads serialize"), persisted());
}

#[test]
fn dropping_the_first_create_drops_the_steps_that_needed_the_object() {
    let workload: GeneratedWorkload = serde_json::from_value(persisted()).expect("the shape parses");
    let shorter = workload.without_step(0).expect("step 0 exists");
    assert_eq!(shorter.steps, workload.steps[4..].to_vec());
    let shorter = workload.without_step(3).expect("step 3 exists");
    // Without the delete, the second create no longer applies; the mutation after it still does.
    let mut expected = workload.steps[..3].to_vec();
    expected.push(workload.steps[5].clone());
    assert_eq!(shorter.steps, expected);
    assert_eq!(workload.without_step(6), None);
}

#[test]
fn shorten_offers_halved_prefixes_first_then_single_steps_dropped() {
    let workload: GeneratedWorkload = serde_json::from_value(persisted()).expect("the shape parses");
    let lengths: Vec<usize> = workload.shorten().iter().map(|w| w.steps.len()).collect();
    // Prefixes of 3 and 1, then each step dropped from the last: 5; 4 (without the second
    // create, the mutation after it no longer applies); 4 (without the delete, the second create
    // no longer applies); 5; 5; 2 (without the first create, only the second create and its
    // mutation apply).
    assert_eq!(lengths, [3, 1, 5, 4, 4, 5, 5, 2]);
    assert!(workload.shorten().iter().all(|w| w.steps.len() < workload.steps.len()));
}

#[test]
fn the_model_server_answers_every_step_of_a_hand_written_workload_as_labelled() {
    let workload: GeneratedWorkload = serde_json::from_value(persisted()).expect("the shape parses");
    let report = world(workload).run(1);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.verdict);
}

#[test]
fn a_valid_step_labelled_invalid_fails_the_run_naming_the_step() {
    let mut shape = persisted();
    shape["steps"][2]["value"] = json!(5);
    let workload: GeneratedWorkload = serde_json::from_value(shape).expect("the shape parses");
    let report = world(workload).run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {}", report.verdict);
    };
    assert_eq!(property, "workload");
    assert_eq!(
        message,
        "step 3: mutate Widget default/generated: outOfRange /spec/replicas = 5 (invalid: expect 422 \
         Invalid, FieldValueInvalid at spec.replicas): the server accepted an invalid step (expected 422 \
         Invalid, FieldValueInvalid at spec.replicas)"
    );
}

#[test]
fn generated_workloads_pass_on_fifty_seeds_so_the_server_accepts_valid_steps_and_rejects_invalid_ones() {
    let (mut valid, mut invalid) = (0, 0);
    for seed in 0..SEEDS {
        let (v, i) = generated(seed).counts();
        valid += v;
        invalid += i;
    }
    assert_eq!(valid + invalid, STEPS * SEEDS as usize);
    assert!(invalid > 0 && valid > invalid, "{valid} valid and {invalid} invalid steps");
    let config = SweepConfig::new("generated-widgets").seeds(SEEDS);
    let report = sweep(&config, |seed, options| world(generated(seed)).run_with(seed, options));
    // SIM_SEEDS=N runs more seeds (each with its own generated workload), SIM_SEED=S just one.
    report.assert_all_passed();
}

#[test]
fn an_invalid_step_labelled_valid_fails_the_run_with_the_servers_answer() {
    let mut shape = persisted();
    shape["steps"][1]["value"] = json!(11);
    let workload: GeneratedWorkload = serde_json::from_value(shape).expect("the shape parses");
    let report = world(workload).run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {}", report.verdict);
    };
    assert_eq!(property, "workload");
    assert_eq!(
        message,
        "step 2: mutate Widget default/generated: setValue /spec/replicas = 11 (valid): the server \
         rejected a valid step: 422 Invalid: Widget.example.com \"generated\" is invalid: spec.replicas: Invalid \
         value: 11: spec.replicas in body should be less than or equal to 10"
    );
}

#[test]
fn a_pattern_no_string_of_the_allowed_length_matches_is_reported_as_unsatisfiable_at_its_step() {
    let schema: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps =
        serde_json::from_value(json!({
            "type": "object",
            "required": ["spec"],
            "properties": { "spec": { "type": "object", "required": ["code"], "properties": {
                "code": { "type": "string", "pattern": "^[a-z]{1,3}$", "minLength": 5 },
            } } },
        }))
        .expect("the schema parses");
    let resource = sim::api::ApiResource::erase::<Widget>(&());
    let error =
        GeneratedWorkload::generate(&resource, &schema, 0, 3).expect_err("no value satisfies the schema");
    assert_eq!(error, GenerateError::Unsatisfiable { step: 1, reason: "Too many local rejects".to_owned() });
    assert_eq!(error.to_string(), "step 1: no value could be generated: Too many local rejects");
}
