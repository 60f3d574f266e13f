//! Shrinking a generated workload: after the fault plan, the shrinker drops the steps that do not
//! matter, the regression file holds the steps that do, and replaying the file gives the same
//! verdict and digest. Recorded choices embedded in a file replay choice by choice.

use std::sync::Arc;

use futures::StreamExt;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sim::api::Api;
use sim::explore::replay::{self, embed_choices, replay_file, replay_file_recording};
use sim::explore::shrink::shrink_to_file;
use sim::faults::FaultPlan;
use sim::generate::{GeneratedWorkload, Step};
use sim::property::FnProperty;
use sim::regression::{Provenance, RegressionFile};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::scenario::{Registry, Scenario};
use sim::shrink::{ShrinkBounds, shrink_workload};
use sim::{Clients, Sim, SimBuilder, Verdict};

/// A widget with a few bounded fields.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
struct WidgetSpec {
    #[schemars(range(min = 0, max = 10))]
    replicas: i32,
    #[schemars(length(min = 1, max = 16))]
    image: String,
    mode: Mode,
    #[schemars(length(max = 4))]
    tags: Vec<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
enum Mode {
    Fast,
    Slow,
}

const SEED: u64 = 3;
const PROPERTY: &str = "slow widgets stay small";

/// The bug the property catches: a Slow widget with more than 5 replicas. Only steps 4 (Slow)
/// and 8 (7 replicas), after the create, lead there; step 10 would undo step 4 but never runs.
fn ten_steps() -> GeneratedWorkload {
    let set = |path: &str, value: serde_json::Value| json!({ "op": "mutate", "path": path, "value": value, "kind": "setValue", "expect": { "outcome": "accept" } });
    let steps = json!([
        { "op": "create", "body": { "spec": { "replicas": 1, "image": "a", "mode": "Fast", "tags": [] } } },
        set("/spec/image", json!("b")),
        set("/spec/tags", json!(["x"])),
        set("/spec/mode", json!("Slow")),
        { "op": "mutate", "path": "/spec/replicas", "value": 11, "kind": "outOfRange",
          "expect": { "outcome": "reject", "field": "spec.replicas", "cause": "FieldValueInvalid" } },
        set("/spec/image", json!("c")),
        set("/spec/replicas", json!(3)),
        set("/spec/replicas", json!(7)),
        set("/spec/image", json!("d")),
        set("/spec/mode", json!("Fast")),
    ]);
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "plural": "widgets",
        "namespace": "default", "name": "generated", "seed": 0, "steps": steps,
    }))
    .expect("the workload parses")
}

fn slow_and_big(object: &serde_json::Value) -> bool {
    let spec = &object["spec"];
    spec["mode"] == "Slow" && spec["replicas"].as_i64().is_some_and(|r| r > 5)
}

/// The Widget CRD, a controller that watches widgets, and the property; no workload yet.
fn world() -> SimBuilder {
    let crd = serde_yaml_ng::to_string(&Widget::crd()).expect("the CRD serializes");
    Sim::builder()
        .crds_yaml("default", &crd)
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
        .property(FnProperty::always(PROPERTY, |view| {
            let objects = view.clusters.values().flat_map(|snapshot| snapshot.objects.values());
            match objects.filter(|o| slow_and_big(&o.data)).find_map(|o| o.metadata.name.clone()) {
                Some(name) => Err(format!("Widget default/{name} is Slow with more than 5 replicas")),
                None => Ok(()),
            }
        }))
}

fn scenario() -> Scenario {
    Scenario::new(
        "widgets:slow-and-big",
        "a Slow widget must stay small",
        world().generated_workload(ten_steps()),
    )
}

fn shrunk_file() -> (RegressionFile, sim::shrink::RunShrinkReport) {
    let scenario = scenario();
    let found = replay::run_plan(&scenario, SEED, &FaultPlan::none(), false);
    let recorded = replay::recorded_violation(&found.verdict).expect("the ten steps fail");
    assert_eq!(recorded.property, PROPERTY);
    let provenance = Provenance { by: "manual".to_owned(), ..Provenance::default() };
    shrink_to_file(&scenario, SEED, &FaultPlan::none(), recorded, &ShrinkBounds::default(), provenance)
}

#[test]
fn the_shrinker_keeps_only_the_workload_steps_that_make_the_property_fail() {
    let (file, shrunk) = shrunk_file();
    let all = ten_steps().steps;
    let workload = shrunk.workload.as_ref().expect("the scenario's workload is a generated one");
    assert_eq!((workload.steps_before, workload.steps_after), (10, 3));
    assert_eq!(workload.workload.steps, vec![all[0].clone(), all[3].clone(), all[7].clone()]);
    assert_eq!(workload.stopped_by, None);
    assert_eq!(file.workload.as_ref(), Some(&workload.workload));
    assert_eq!(file.found.workload_steps_before_shrink, Some(10));
    assert_eq!(file.found.faults_before_shrink, Some(0));
    assert_eq!(file.found.shrink_replays, Some(shrunk.replays()));
    assert_eq!(file.violation.property, PROPERTY);
    assert_eq!(file.violation.message, "Widget default/generated is Slow with more than 5 replicas");
    assert_eq!(file.choices, None, "choices are written only on request");
    assert_eq!(
        shrunk.to_string(),
        format!("0 -> 0 faults, 10 -> 3 workload steps in {} replays", shrunk.replays())
    );
}

#[test]
fn a_shrunk_workload_round_trips_through_its_file_and_replays_with_the_same_verdict_and_digest() {
    let (file, _) = shrunk_file();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = file.write_to(dir.path()).expect("the file is written");
    assert_eq!(RegressionFile::load(&path).expect("the file reads back"), file);
    let registry = Registry::new([scenario()]).expect("one scenario");
    let replayed = replay_file(&path, &registry).expect("the file replays");
    assert!(replayed.reproduced, "{}", replayed.report.verdict);
    assert_eq!(replayed.report.digest, file.trace_digest);
    assert_eq!(replay::recorded_violation(&replayed.report.verdict).as_ref(), Some(&file.violation));
    // The replay ran the file's three steps, not the scenario's ten.
    let notes = replayed.report.trace.render();
    assert!(notes.contains("generated step 3: mutate Widget default/generated: setValue /spec/replicas = 7"));
    assert!(!notes.contains("generated step 4:"), "{notes}");
}

#[test]
fn choices_recorded_into_a_file_replay_to_the_same_digest_and_a_tampered_choice_is_named() {
    let (file, _) = shrunk_file();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = file.write_to(dir.path()).expect("the file is written");
    let registry = Registry::new([scenario()]).expect("one scenario");
    let recording = replay_file_recording(&path, &registry, true).expect("the file replays");
    assert!(embed_choices(&path, &recording).expect("the file is rewritten"));
    let with_choices = RegressionFile::load(&path).expect("the file reads back");
    let choices = with_choices.choices.clone().expect("the choices were embedded");
    assert_eq!(RegressionFile { choices: None, ..with_choices.clone() }, file);

    let replayed = replay_file(&path, &registry).expect("the file replays");
    assert!(replayed.reproduced, "{}", replayed.report.verdict);
    assert_eq!(replayed.report.digest, file.trace_digest);

    let mut tampered = choices.clone();
    let index = tampered.choices.iter().position(|c| c.stream == "latency").expect("a latency draw");
    tampered.choices[index].stream = "watch".to_owned();
    let tampered = RegressionFile { choices: Some(tampered), ..with_choices };
    let path = tampered.write_to(dir.path()).expect("the file is rewritten");
    let replayed = replay_file(&path, &registry).expect("the file replays");
    assert!(!replayed.reproduced);
    assert_eq!(
        replayed.report.verdict,
        Verdict::Nondeterminism {
            first: String::new(),
            second: replayed.report.digest.clone(),
            choice: Some(sim::decision::DecisionError::StreamMismatch {
                index,
                expected: "watch".to_owned(),
                found: "latency".to_owned(),
            }),
        }
    );
}

#[test]
fn a_file_with_a_workload_for_a_scenario_with_a_scripted_workload_is_an_error_naming_the_field() {
    let (file, _) = shrunk_file();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = file.write_to(dir.path()).expect("the file is written");
    let scripted = Scenario::new(
        "widgets:slow-and-big",
        "the same world with a scripted workload",
        world().workload(ten_steps().into_script()),
    );
    let registry = Registry::new([scripted]).expect("one scenario");
    let error = replay_file(&path, &registry).expect_err("the scenario cannot take the steps");
    assert_eq!(
        error.to_string(),
        format!(
            "{}: field `workload`: scenario \"widgets:slow-and-big\" has a scripted workload, not a generated \
             one; remove the field or register the scenario with SimBuilder::generated_workload",
            path.display()
        )
    );
}

#[test]
fn a_workload_generated_per_seed_is_the_one_for_crd_generates_and_runs_as_the_fixed_steps_do() {
    let per_seed = world().generate_workload(&Widget::crd(), 10).expect("the CRD has a schema");
    let expected = GeneratedWorkload::for_crd(&Widget::crd(), SEED, 10).expect("the schema generates");
    let generated =
        per_seed.generated_workload_for(SEED).expect("a generated workload").expect("it generates");
    assert_eq!(generated, expected);
    let run =
        |builder: SimBuilder| std::thread::scope(|s| s.spawn(|| builder.run(SEED)).join()).expect("runs");
    let from_seed = run(per_seed);
    let fixed = run(world().generated_workload(expected.clone()));
    let scripted = run(world().workload(expected.into_script()));
    assert_eq!(from_seed.digest, fixed.digest);
    assert_eq!(fixed.digest, scripted.digest);
    assert_eq!(world().generated_workload_for(SEED), None, "a world without a workload has no steps");
}

#[test]
fn shrink_workload_stops_at_its_replay_bound_and_says_so() {
    let bounds = ShrinkBounds { replays_max: 2, ..ShrinkBounds::default() };
    let mut calls = 0;
    let report = shrink_workload(&ten_steps(), &bounds, |_| {
        calls += 1;
        false
    });
    assert_eq!((calls, report.replays, report.stopped_by), (2, 2, Some("replays_max")));
    assert_eq!((report.steps_before, report.steps_after), (10, 10));
}

#[test]
fn shrink_workload_needs_no_simulation_to_find_the_two_steps_an_oracle_wants() {
    let all = ten_steps().steps;
    let wanted = [all[3].clone(), all[7].clone()];
    let report = shrink_workload(&ten_steps(), &ShrinkBounds::default(), |w| {
        wanted.iter().all(|step| w.steps.contains(step))
    });
    // The create stays: a mutation needs the object.
    assert_eq!(report.workload.steps, vec![all[0].clone(), all[3].clone(), all[7].clone()]);
    assert!(matches!(report.workload.steps[0], Step::Create { .. }));
}

#[test]
fn kube_sim_shrink_shortens_a_files_workload_in_place_and_re_records_its_choices() {
    let scenario = scenario();
    let found = replay::run_plan(&scenario, SEED, &FaultPlan::none(), false);
    let unshrunk = RegressionFile {
        format: sim::regression::FORMAT_VERSION,
        scenario: scenario.name().to_owned(),
        seed: SEED,
        fault_plan: FaultPlan::none(),
        workload: Some(ten_steps()),
        violation: replay::recorded_violation(&found.verdict).expect("the ten steps fail"),
        trace_digest: found.digest.clone(),
        found: Provenance { by: "manual".to_owned(), ..Provenance::default() },
        choices: None,
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = unshrunk.write_to(dir.path()).expect("the file is written");
    let registry = Registry::new([scenario]).expect("one scenario");
    let recording = replay_file_recording(&path, &registry, true).expect("the file replays");
    assert!(embed_choices(&path, &recording).expect("the file is rewritten"));

    let outcome = sim::explore::shrink::shrink_file(&path, &registry, 1000).expect("the file shrinks");
    assert!(matches!(outcome, sim::explore::shrink::FileShrink::Shrunk { .. }), "{outcome:?}");
    let shrunk = RegressionFile::load(&path).expect("the file reads back");
    let all = ten_steps().steps;
    let steps = shrunk.workload.as_ref().map(|w| w.steps.clone());
    assert_eq!(steps, Some(vec![all[0].clone(), all[3].clone(), all[7].clone()]));
    assert_eq!(shrunk.found.workload_steps_before_shrink, Some(10));
    let choices = shrunk.choices.as_ref().expect("a file with choices keeps choices");
    assert_ne!(Some(choices), recording.report.choices.as_ref(), "the old recording was of ten steps");
    let replayed = replay_file(&path, &registry).expect("the file replays");
    assert!(replayed.reproduced, "{}", replayed.report.verdict);
    assert_eq!(replayed.report.digest, shrunk.trace_digest);
}

#[test]
fn a_files_summary_says_how_many_workload_steps_and_choices_it_holds() {
    let (file, _) = shrunk_file();
    let text = file.to_string();
    assert!(text.ends_with("no faults\ngenerated workload: 3 steps (shrunk from 10)\n"), "{text}");
    let choices = sim::decision::Choices { format: 1, seed: SEED, choices: Vec::new() };
    let text = RegressionFile { choices: Some(choices), ..file }.to_string();
    assert!(text.ends_with("generated workload: 3 steps (shrunk from 10)\n0 recorded choices\n"), "{text}");
}
