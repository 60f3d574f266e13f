//! Regression files round-trip, are written atomically where the contract says, and a bad file
//! gets a clear error naming the file and the field, never a panic.

use std::path::Path;

use sim::DecisionSource;
use sim::decision::{CHOICES_FORMAT, Choice, Choices};
use sim::faults::{SwarmConfig, swarm_plan};
use sim::regression::{FORMAT_VERSION, Provenance, RecordedViolation, RegressionError, RegressionFile};

fn sample(seed: u64) -> RegressionFile {
    let config = SwarmConfig { controllers: vec!["op".to_owned()], ..SwarmConfig::default() };
    RegressionFile {
        format: FORMAT_VERSION,
        scenario: "cassandra:stale-delete".to_owned(),
        seed,
        fault_plan: swarm_plan(&mut DecisionSource::new(seed), &config),
        workload: None,
        violation: RecordedViolation {
            kind: "correctness".to_owned(),
            property: "no_orphans".to_owned(),
            message: "PersistentVolumeClaim default/data-0: owner CassandraCluster default/c (uid 1) is gone"
                .to_owned(),
        },
        trace_digest: "9f2c4e1a0b7d3c5e6f708192a3b4c5d6".to_owned(),
        found: Provenance { by: "swarm".to_owned(), seeds_explored: Some(812), ..Provenance::default() },
        choices: None,
    }
}

#[test]
fn a_regression_file_round_trips_through_its_json_file() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..50 {
        let file = sample(seed);
        let path = file.write_to(dir.path()).unwrap();
        assert_eq!(RegressionFile::load(&path).unwrap(), file, "seed {seed}");
    }
}

#[test]
fn a_regression_file_is_written_under_its_scenario_with_a_short_digest_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample(1).write_to(dir.path()).unwrap();
    assert_eq!(
        path,
        dir.path().join("cassandra.stale-delete").join("cassandra.stale-delete-9f2c4e1a0b7d.json")
    );
    // Nothing from the writing machine leaks into the file.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(&dir.path().display().to_string()), "{text}");
    // No temporary file is left behind.
    let names: Vec<_> =
        std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn discover_lists_every_json_file_under_the_directory_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = sample(1);
    a.scenario = "b-scenario".to_owned();
    let mut b = sample(2);
    b.scenario = "a-scenario".to_owned();
    let pa = a.write_to(dir.path()).unwrap();
    let pb = b.write_to(dir.path()).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a regression").unwrap();
    assert_eq!(RegressionFile::discover(dir.path()).unwrap(), vec![pb, pa]);
    assert_eq!(
        RegressionFile::discover(&dir.path().join("missing")).unwrap(),
        Vec::<std::path::PathBuf>::new()
    );
}

fn parse_err(text: &str) -> String {
    match RegressionFile::parse(Path::new("regressions/x/x-1.json"), text) {
        Ok(file) => panic!("parsed: {file:?}"),
        Err(e) => e.to_string(),
    }
}

fn valid_json() -> serde_json::Value {
    serde_json::to_value(sample(3)).unwrap()
}

#[test]
fn a_corrupted_file_names_the_file_and_the_position() {
    let msg = parse_err("{\"format\": 1, \"scenario\": ");
    assert!(msg.starts_with("regressions/x/x-1.json: field `.`: EOF while parsing"), "{msg}");
}

#[test]
fn an_unknown_format_version_names_the_file_and_both_versions() {
    let mut v = valid_json();
    v["format"] = 7.into();
    assert_eq!(
        parse_err(&v.to_string()),
        "regressions/x/x-1.json: field `format`: unknown format version 7; this kube-sim reads version 1"
    );
}

#[test]
fn a_missing_format_is_reported_as_the_format_field() {
    let mut v = valid_json();
    v.as_object_mut().unwrap().remove("format");
    assert_eq!(parse_err(&v.to_string()), "regressions/x/x-1.json: field `format`: missing");
}

#[test]
fn a_field_of_the_wrong_type_is_named_by_its_path() {
    let mut v = valid_json();
    v["seed"] = "twelve".into();
    let msg = parse_err(&v.to_string());
    assert!(
        msg.starts_with("regressions/x/x-1.json: field `seed`: invalid type: string \"twelve\""),
        "{msg}"
    );
    let mut v = valid_json();
    v["faultPlan"] = serde_json::json!({"faults": [{"trigger": {"type": "atTime", "atMs": -1}, "fault": {"type": "compact"}}]});
    let msg = parse_err(&v.to_string());
    // Internally tagged enums are buffered by serde, so the path stops at the tagged value.
    assert!(
        msg.starts_with(
            "regressions/x/x-1.json: field `faultPlan.faults[0].trigger`: invalid value: integer `-1`"
        ),
        "{msg}"
    );
}

#[test]
fn a_missing_field_and_an_unknown_field_are_named() {
    let mut v = valid_json();
    v.as_object_mut().unwrap().remove("seed");
    let msg = parse_err(&v.to_string());
    assert!(msg.contains("missing field `seed`"), "{msg}");
    let mut v = valid_json();
    v["sed"] = 1.into();
    let msg = parse_err(&v.to_string());
    assert!(msg.contains("unknown field `sed`"), "{msg}");
}

#[test]
fn an_unknown_scenario_names_the_file_the_scenario_and_the_known_ones() {
    let file = sample(4);
    let err = file.check_scenario(Path::new("r.json"), &["a:fixed", "a:bug"]).unwrap_err();
    assert!(matches!(err, RegressionError::UnknownScenario { .. }));
    assert_eq!(
        err.to_string(),
        "r.json: field `scenario`: unknown scenario \"cassandra:stale-delete\"; known scenarios: a:fixed, a:bug"
    );
    assert!(file.check_scenario(Path::new("r.json"), &["cassandra:stale-delete"]).is_ok());
}

#[test]
fn a_missing_file_is_an_io_error_naming_the_path() {
    let err = RegressionFile::load(Path::new("/nonexistent/r.json")).unwrap_err();
    assert!(matches!(err, RegressionError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/r.json: "), "{err}");
}

/// A file with both optional fields: a two-step generated workload and a few recorded choices.
fn with_workload_and_choices() -> RegressionFile {
    let workload = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "plural": "widgets",
        "namespace": "default", "name": "generated", "seed": 7,
        "steps": [
            { "op": "create", "body": { "spec": { "replicas": 1 } } },
            { "op": "mutate", "path": "/spec/replicas", "value": 11, "kind": "outOfRange",
              "expect": { "outcome": "reject", "field": "spec.replicas", "cause": "FieldValueInvalid" } },
        ],
    });
    let choices = Choices {
        format: CHOICES_FORMAT,
        seed: 9,
        choices: vec![
            Choice { stream: "latency".into(), value: 3 },
            Choice { stream: "watch".into(), value: 40 },
        ],
    };
    RegressionFile {
        workload: Some(serde_json::from_value(workload).unwrap()),
        choices: Some(choices),
        found: Provenance { workload_steps_before_shrink: Some(10), ..sample(9).found },
        ..sample(9)
    }
}

#[test]
fn a_file_with_a_workload_and_choices_round_trips_and_a_file_without_them_omits_the_fields() {
    let dir = tempfile::tempdir().unwrap();
    let file = with_workload_and_choices();
    let path = file.write_to(dir.path()).unwrap();
    assert_eq!(RegressionFile::load(&path).unwrap(), file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"workloadStepsBeforeShrink\": 10"), "{text}");
    let plain = serde_json::to_value(sample(9)).unwrap();
    for field in ["workload", "choices"] {
        assert!(plain.get(field).is_none(), "{field} written though absent");
    }
    assert!(plain["found"].get("workloadStepsBeforeShrink").is_none());
}

#[test]
fn a_malformed_workload_is_named_by_the_file_and_the_field() {
    let mut v = serde_json::to_value(with_workload_and_choices()).unwrap();
    v["workload"]["steps"] = "create it".into();
    let msg = parse_err(&v.to_string());
    assert!(
        msg.starts_with(
            "regressions/x/x-1.json: field `workload.steps`: invalid type: string \"create it\", expected a \
             sequence at line 1 column "
        ),
        "{msg}"
    );
    let mut v = serde_json::to_value(with_workload_and_choices()).unwrap();
    v["workload"]["steps"][1]["op"] = "explode".into();
    let msg = parse_err(&v.to_string());
    assert!(
        msg.starts_with(
            "regressions/x/x-1.json: field `workload.steps[1].op`: unknown variant `explode`, expected \
             one of `create`, `mutate`, `delete`, `recreate`"
        ),
        "{msg}"
    );
}

#[test]
fn malformed_choices_are_named_by_the_file_and_the_field() {
    let mut v = serde_json::to_value(with_workload_and_choices()).unwrap();
    v["choices"]["choices"][1]["value"] = (-4).into();
    let msg = parse_err(&v.to_string());
    assert!(
        msg.starts_with(
            "regressions/x/x-1.json: field `choices.choices[1].value`: invalid value: integer `-4`"
        ),
        "{msg}"
    );
    let mut v = serde_json::to_value(with_workload_and_choices()).unwrap();
    v["choices"] = "all of them".into();
    let msg = parse_err(&v.to_string());
    assert!(
        msg.starts_with(
            "regressions/x/x-1.json: field `choices`: invalid type: string \"all of them\", expected struct \
             Choices"
        ),
        "{msg}"
    );
}

#[test]
fn a_fault_naming_a_controller_the_scenario_does_not_have_is_a_file_error_naming_the_field() {
    use sim::faults::{CallSide, Fault, FaultPlan, PlannedFault, Trigger};
    use sim::scenario::{Registry, Scenario};
    let world = sim::Sim::builder().controller("operator", |_clients| async {});
    let registry = Registry::new([Scenario::new("s:bug", "a scenario", world)]).expect("one scenario");
    let dir = tempfile::tempdir().expect("a temp dir");
    let renamed = |controller: &str| {
        let fault =
            Fault::Crash { controller: controller.to_owned(), side: CallSide::After, restart_after_ms: 1 };
        let trigger = Trigger::NthWrite { controller: "operator".to_owned(), n: 1, kind: None, verb: None };
        let plan = FaultPlan { faults: vec![PlannedFault { trigger, fault }] };
        RegressionFile { scenario: "s:bug".to_owned(), fault_plan: plan, ..sample(3) }
    };
    let path = renamed("old-operator").write_to(dir.path()).expect("written");
    let err = sim::explore::replay::load(&path, &registry).expect_err("the controller is gone");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: field `faultPlan.faults[0].fault.controller`: the scenario has no controller \"old-operator\"; its controllers: operator",
            path.display()
        )
    );
    let path = renamed("operator").write_to(dir.path()).expect("written");
    assert!(sim::explore::replay::load(&path, &registry).is_ok());
}
