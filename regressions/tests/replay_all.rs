//! Replays every regression file under `regressions/<scenario>/*.json` against the zoo's
//! scenarios: each must still fail as recorded on its buggy variant, and a zoo bug's plan and seed
//! must pass on the operator's `<operator>:fixed` variant. `SIM_REPLAY=<file>` replays exactly one
//! file. The files go through `sim::explore::replay`, the code path of `kube-sim replay`.

use std::path::{Path, PathBuf};

use sim::explore::replay;
use sim::regression::RegressionFile;
use sim::scenario::Registry;

fn registry() -> Registry {
    Registry::new(controllers::zoo::scenarios()).expect("zoo scenario names are unique")
}

fn regressions_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files to replay: `SIM_REPLAY`'s one file, or every file of the crate's directory except
/// the crate's own sources and manifests.
fn files() -> Vec<PathBuf> {
    if let Ok(one) = std::env::var("SIM_REPLAY") {
        return vec![PathBuf::from(one)];
    }
    let dir = regressions_dir();
    RegressionFile::discover(&dir)
        .expect("the regressions directory is readable")
        .into_iter()
        .filter(|p| !p.starts_with(dir.join("src")) && !p.starts_with(dir.join("tests")))
        .filter(|p| !p.starts_with(dir.join("target")))
        .collect()
}

/// The fixed variant of a zoo scenario `<operator>:<bug>`, if the registry has one.
fn fixed_variant(scenario: &str) -> Option<String> {
    let (operator, variant) = scenario.split_once(':')?;
    (variant != "fixed").then(|| format!("{operator}:fixed"))
}

#[test]
fn every_regression_file_still_fails_as_recorded_and_passes_on_the_fixed_variant() {
    let files = files();
    if files.is_empty() {
        println!("no regression files under {}: nothing to replay", regressions_dir().display());
        return;
    }
    let registry = registry();
    let mut problems = Vec::new();
    for path in &files {
        let replayed = match replay::replay_file(path, &registry) {
            Ok(replayed) => replayed,
            Err(e) => {
                problems.push(format!("{e}"));
                continue;
            }
        };
        let file = &replayed.file;
        println!("{}: {} seed {}: {}", path.display(), file.scenario, file.seed, replayed.report.verdict);
        if !replayed.reproduced {
            problems.push(format!(
                "{}: expected {} {:?}, the replay gave: {}\n  replay: {}",
                path.display(),
                file.violation.kind,
                file.violation.property,
                replayed.report.verdict,
                kube_sim::replay_command(path)
            ));
        }
        let Some(fixed) = fixed_variant(&file.scenario).and_then(|name| registry.get(&name)) else {
            continue;
        };
        let on_fixed = replay::run_plan(fixed, file.seed, &file.fault_plan, false);
        println!("  on {}: {}", fixed.name(), on_fixed.verdict);
        if !on_fixed.verdict.is_pass() {
            problems.push(format!(
                "{}: the same seed and plan fail on {}: {}",
                path.display(),
                fixed.name(),
                on_fixed.verdict
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} regression files:\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
}

fn load_error(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("a temporary file");
    let registry = Registry::new([sim::scenario::Scenario::new("zoo:fixed", "x", sim::SimBuilder::new())])
        .expect("one scenario");
    replay::replay_file(path, &registry).map(|_| ()).expect_err("a bad file is an error").to_string()
}

#[test]
fn a_corrupt_unknown_format_or_unknown_scenario_file_is_an_error_naming_the_file_and_field() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bad.json");
    let shown = path.display().to_string();
    assert_eq!(
        load_error(&path, "{ not json"),
        format!("{shown}: field `.`: key must be a string at line 1 column 3")
    );
    assert_eq!(
        load_error(&path, r#"{"format": 99}"#),
        format!("{shown}: field `format`: unknown format version 99; this kube-sim reads version 1")
    );
    let unknown = r#"{"format": 1, "scenario": "nope:bug", "seed": 1, "faultPlan": {"faults": []},
        "violation": {"kind": "liveness", "message": "m"}, "traceDigest": "ab"}"#;
    assert_eq!(
        load_error(&path, unknown),
        format!("{shown}: field `scenario`: unknown scenario \"nope:bug\"; known scenarios: zoo:fixed")
    );
    let missing = dir.path().join("missing.json");
    let registry = Registry::default();
    let error = replay::replay_file(&missing, &registry).map(|_| ()).expect_err("a missing file").to_string();
    assert_eq!(error, format!("{}: No such file or directory (os error 2)", missing.display()));
}
