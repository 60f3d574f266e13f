//! The `kube-sim` binary, run as a user runs it: every subcommand, its exit codes, bad arguments,
//! missing and corrupt files, and the Perfetto export. Few seeds, so the tests stay fast.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim::regression::RegressionFile;

fn kube_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kube-sim")).args(args).output().expect("the kube-sim binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = kube_sim(args);
    (out.status.code().expect("exited, not signalled"), text(&out.stdout), text(&out.stderr))
}

/// The regression files written under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    RegressionFile::discover(dir)
        .expect("readable")
        .into_iter()
        .filter(|p| RegressionFile::load(p).is_ok())
        .collect()
}

/// Explore the cassandra bug on its first four seeds into `out` (some fail with its swarm faults).
fn explore_cassandra(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = out.to_str().expect("a UTF-8 temp path");
    let mut args = vec!["explore", "--scenario", "cassandra:missed-scale-down", "--seeds", "4", "--out", out];
    args.extend_from_slice(&["--shrink-replays", "20"]);
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn list_prints_every_zoo_scenario_as_name_tab_description_in_registration_order() {
    let (code, stdout, _) = run(&["list"]);
    assert_eq!(code, 0);
    let expected: String = controllers::zoo::scenarios()
        .iter()
        .map(|s| format!("{}\t{}\n", s.name(), s.description()))
        .collect();
    assert_eq!(stdout, expected);
    assert!(stdout.starts_with("rabbitmq:fixed\t"), "{stdout}");
}

#[test]
fn an_unknown_flag_or_subcommand_or_a_bad_shard_exits_2_with_clap_usage() {
    let (code, _, stderr) = run(&["explore", "--bogus"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unexpected argument '--bogus'"), "{stderr}");
    let (code, _, _) = run(&["no-such-command"]);
    assert_eq!(code, 2);
    let (code, _, stderr) = run(&["explore", "--shard", "4/4"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("\"4/4\" is not a shard: expected I/N with 0 <= I < N, e.g. 0/4"), "{stderr}");
    let (code, _, stderr) = run(&["explore", "--seeds", "3", "--duration", "1s"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

#[test]
fn explore_of_an_unknown_scenario_exits_2_naming_it() {
    let (code, _, stderr) = run(&["explore", "--scenario", "nope:bug", "--seeds", "1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with(
            "kube-sim: error: --scenario: unknown scenario \"nope:bug\"; known scenarios: rabbitmq:fixed,"
        ),
        "{stderr}"
    );
}

#[test]
fn guided_exploration_finds_the_cassandra_bug_and_writes_a_file_found_by_guided() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().to_str().expect("utf-8");
    let args = [
        "explore",
        "--guided",
        "--scenario",
        "cassandra:missed-scale-down",
        "--seeds",
        "200",
        "--shrink-replays",
        "10",
        "--out",
        out,
    ];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("injection points exercised"), "{stderr}");
    // Every plan within --seeds runs, so each distinct failure gets its file.
    let files = files_under(dir.path());
    let distinct = stdout.lines().filter(|l| l.starts_with("failure ")).count();
    assert!(distinct >= 1, "{stdout}");
    assert_eq!(files.len(), distinct, "{stdout}");
    for path in &files {
        let file = RegressionFile::load(path).expect("a valid file");
        assert_eq!(file.found.by, "guided");
        assert_eq!(file.violation.property, "matches_reference");
    }
}

#[test]
fn explore_of_a_fixed_scenario_that_passes_exits_0_and_writes_a_report_without_failures() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let report = dir.path().join("report.json");
    let out = dir.path().join("regressions");
    let args = [
        "explore",
        "--scenario",
        "cassandra:fixed",
        "--seeds",
        "3",
        "--jobs",
        "2",
        "--out",
        out.to_str().expect("utf-8"),
        "--report",
        report.to_str().expect("utf-8"),
    ];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("3 seeds (shard 0/1)"), "{stdout}");
    // Piped, as a nightly log is: plain progress lines instead of a bar nobody sees.
    assert!(stderr.contains("kube-sim explore: 1/3 seeds, 0 failing, coverage "), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).expect("JSON");
    assert_eq!(json["report"], "kube-sim-explore-report");
    assert_eq!(json["seedsRun"], 3);
    assert_eq!(json["failingSeeds"], 0);
    assert_eq!(json["failures"], serde_json::json!([]));
    assert!(files_under(&out).is_empty());
}

#[test]
fn explore_finds_shrinks_and_writes_the_cassandra_bug_then_replay_explain_shrink_and_merge_work_on_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().join("shard-0");
    let report = out.join("report-0.json");
    let (code, stdout, _) =
        explore_cassandra(&out, &["--jobs", "2", "--report", report.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{stdout}");
    let files = files_under(&out);
    assert_eq!(files.len(), 1, "{stdout}");
    let file = &files[0];
    let replay_line = format!("  replay: cargo run --release --bin kube-sim -- replay {}", file.display());
    assert!(stdout.lines().any(|l| l == replay_line), "{stdout}");
    let recorded = RegressionFile::load(file).expect("a valid regression file");
    assert_eq!(recorded.scenario, "cassandra:missed-scale-down");
    assert_eq!(recorded.violation.property, "matches_reference");
    assert_eq!(recorded.fault_plan.faults.len(), 1);

    let path = file.to_str().expect("utf-8");
    let (code, stdout, _) = run(&["replay", path]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("FAIL: the recorded failure still happens, with the same trace digest."),
        "{stdout}"
    );
    assert!(stdout.contains(" FAULT on cassandra-operator: "), "{stdout}");

    let perfetto = dir.path().join("trace.json");
    let (code, stdout, _) = run(&["explain", path, "--perfetto", perfetto.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("At "), "{stdout}");
    assert!(stdout.contains("property \"matches_reference\" broke"), "{stdout}");
    assert!(
        stdout.contains("End state against a fault-free run of the same scenario and seed (pass):"),
        "{stdout}"
    );
    // The leaked PVC the violation names is the one the diff shows only in this run.
    let leaked = recorded.violation.message.split(':').next().expect("the object");
    assert!(stdout.contains(&format!("\n  + {leaked}: only in this run\n")), "{stdout}");
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&perfetto).expect("the Perfetto file"))
            .expect("valid JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut tracks: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().expect("a track name"))
        .collect();
    tracks.sort_unstable();
    assert_eq!(tracks, vec!["cassandra-operator", "engine", "workload"]);
    assert!(events.iter().any(|e| e["ph"] == "i" && e["cat"] == "fault"), "a fault instant");
    assert!(events.iter().any(|e| e["ph"] == "X" && e["cat"] == "reconcile"), "a reconcile span");
    assert!(events.iter().any(|e| e["ph"] == "X" && e["cat"] == "api"), "an API call span");

    let (code, stdout, _) = run(&["shrink", path, "--replays", "5"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with(&format!("{path}: 1 -> 1 faults in ")), "{stdout}");
    assert_eq!(RegressionFile::load(file).expect("still valid").violation.property, "matches_reference");

    // A second shard's copy of the same failure merges into one file and one failure.
    let twin = dir.path().join("shard-1");
    std::fs::create_dir_all(twin.join("cassandra.missed-scale-down")).expect("a dir");
    std::fs::copy(file, twin.join("cassandra.missed-scale-down").join("copy.json")).expect("a copy");
    let merged = dir.path().join("merged");
    let merged_report = dir.path().join("merged.json");
    let (code, stdout, stderr) = run(&[
        "merge",
        out.to_str().expect("utf-8"),
        twin.to_str().expect("utf-8"),
        "--out",
        merged.to_str().expect("utf-8"),
        "--report",
        merged_report.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(files_under(&merged).len(), 1);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_report).expect("merged")).expect("JSON");
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(1));
    assert_eq!(json["seedsRun"], 4);
}

#[test]
fn replay_explain_and_shrink_of_a_missing_or_corrupt_file_exit_2_naming_the_file_and_field() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().expect("utf-8");
    for command in ["replay", "explain", "shrink"] {
        let (code, _, stderr) = run(&[command, missing]);
        assert_eq!(code, 2, "{command}");
        assert_eq!(stderr, format!("kube-sim: error: {missing}: No such file or directory (os error 2)\n"));
    }
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, r#"{"format": 1, "scenario": "cassandra:missed-scale-down", "seed": "x"}"#)
        .expect("written");
    let corrupt = corrupt.to_str().expect("utf-8");
    let (code, _, stderr) = run(&["replay", corrupt]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with(&format!("kube-sim: error: {corrupt}: field `seed`: invalid type")),
        "{stderr}"
    );
    let unknown = dir.path().join("unknown.json");
    std::fs::write(&unknown, r#"{"format": 7}"#).expect("written");
    let unknown = unknown.to_str().expect("utf-8");
    let (code, _, stderr) = run(&["replay", unknown]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!(
            "kube-sim: error: {unknown}: field `format`: unknown format version 7; this kube-sim reads version 1\n"
        )
    );
}

#[test]
fn merge_of_a_missing_directory_exits_2() {
    let (code, _, stderr) = run(&["merge", "/nonexistent/kube-sim-shards"]);
    assert_eq!(code, 2);
    assert_eq!(stderr, "kube-sim: error: /nonexistent/kube-sim-shards: not a directory\n");
}

/// The `seedsRun` of a report file.
fn seeds_run(report: &Path) -> u64 {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).expect("a report")).expect("JSON");
    json["seedsRun"].as_u64().expect("seedsRun")
}

#[test]
fn two_shards_run_disjoint_seeds_that_together_are_the_unsharded_run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut total = 0;
    for shard in ["0/2", "1/2"] {
        let report = dir.path().join(format!("report-{}.json", &shard[..1]));
        let args = [
            "explore",
            "--scenario",
            "cassandra:fixed",
            "--seeds",
            "5",
            "--shard",
            shard,
            "--out",
            dir.path().to_str().expect("utf-8"),
            "--report",
            report.to_str().expect("utf-8"),
        ];
        let (code, stdout, _) = run(&args);
        assert_eq!(code, 0, "{stdout}");
        assert!(stdout.contains(&format!("(shard {shard})")), "{stdout}");
        total += seeds_run(&report);
    }
    // Seeds 0, 2, 4 and 1, 3 (the split itself is unit-tested in kube_sim::shard).
    assert_eq!(seeds_run(&dir.path().join("report-0.json")), 3);
    assert_eq!(total, 5);
}

#[test]
fn explore_writes_the_same_regression_file_with_one_job_or_two() {
    let (one, two) = (tempfile::tempdir().expect("a dir"), tempfile::tempdir().expect("a dir"));
    let names = |dir: &Path| -> Vec<String> {
        files_under(dir)
            .iter()
            .map(|p| p.file_name().expect("a name").to_string_lossy().into_owned())
            .collect()
    };
    let (code_one, _, _) = explore_cassandra(one.path(), &["--jobs", "1"]);
    let (code_two, _, _) = explore_cassandra(two.path(), &["--jobs", "2"]);
    assert_eq!((code_one, code_two), (1, 1));
    assert_eq!(names(one.path()), names(two.path()));
    assert_eq!(names(one.path()).len(), 1);
}

/// A report file as JSON.
fn report_json(report: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(report).expect("a report")).expect("JSON")
}

/// Each scenario's `coverage` object of a report, checked for consistency: `exercised` is the
/// number of exercised points, each an index below `total`.
fn coverage_of(json: &serde_json::Value) -> Vec<(String, u64, u64, Vec<u64>)> {
    let scenarios = json["scenarios"].as_array().expect("scenarios");
    scenarios
        .iter()
        .map(|s| {
            let coverage = &s["coverage"];
            let exercised = coverage["exercised"].as_u64().expect("coverage.exercised");
            let total = coverage["total"].as_u64().expect("coverage.total");
            let points: Vec<u64> = coverage["points"]
                .as_array()
                .expect("coverage.points")
                .iter()
                .map(|p| p.as_u64().expect("a point index"))
                .collect();
            assert_eq!(points.len() as u64, exercised, "{s}");
            assert!(points.iter().all(|p| *p < total), "{s}");
            assert!(points.windows(2).all(|w| w[0] < w[1]), "ascending, no repeats: {s}");
            (s["name"].as_str().expect("a name").to_owned(), exercised, total, points)
        })
        .collect()
}

/// Explore `scenarios` with `--guided` and the given extra arguments, writing files and a report
/// under `dir`; exit code, stdout and the report.
fn explore_guided(dir: &Path, scenarios: &[&str], extra: &[&str]) -> (i32, String, serde_json::Value) {
    let report = dir.join("report.json");
    let mut args = vec!["explore", "--guided", "--shrink-replays", "10"];
    for scenario in scenarios {
        args.extend_from_slice(&["--scenario", scenario]);
    }
    let (out, report_arg) = (dir.to_str().expect("utf-8"), report.to_str().expect("utf-8"));
    args.extend_from_slice(&["--out", out, "--report", report_arg]);
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run(&args);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    (code, stdout, report_json(&report))
}

/// The regression files under `dir`: (name, contents), sorted by name.
fn regression_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = files_under(dir)
        .iter()
        .map(|p| {
            let name = p.strip_prefix(dir).expect("under dir").display().to_string();
            (name, std::fs::read_to_string(p).expect("readable"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn guided_exploration_with_one_job_or_two_gives_the_same_report_and_the_same_regression_files() {
    let (one, two) = (tempfile::tempdir().expect("a dir"), tempfile::tempdir().expect("a dir"));
    let scenarios = ["cassandra:missed-scale-down", "rabbitmq:resize-crash"];
    let (code_one, stdout, mut first) =
        explore_guided(one.path(), &scenarios, &["--seeds", "40", "--jobs", "1"]);
    let (code_two, _, mut second) = explore_guided(two.path(), &scenarios, &["--seeds", "40", "--jobs", "2"]);
    assert_eq!((code_one, code_two), (1, 1), "{stdout}");
    // Wall time is the one field that may differ; file paths differ by their directory only.
    for (json, dir) in [(&mut first, one.path()), (&mut second, two.path())] {
        json.as_object_mut().expect("an object").remove("wallSeconds");
        let text = json.to_string().replace(dir.to_str().expect("utf-8"), "OUT");
        *json = serde_json::from_str(&text).expect("JSON");
    }
    assert_eq!(first, second);
    let coverage = coverage_of(&first);
    assert_eq!(coverage.len(), 2);
    for (name, exercised, total, _) in &coverage {
        assert!(*total > 0 && *exercised <= *total, "{name}: {exercised}/{total}");
        assert!(*exercised > 0, "{name}: 39 single-fault plans exercise some point");
    }
    assert_eq!(first["seedsRun"], 80, "40 runs per scenario, the reference included");
    let files = regression_files(one.path());
    assert!(!files.is_empty(), "{stdout}");
    assert_eq!(files, regression_files(two.path()));
    // The table shows each scenario's coverage as exercised/total.
    let (name, exercised, total, _) = &coverage[0];
    let row = stdout.lines().find(|l| l.starts_with(name.as_str())).expect("a table row");
    assert!(row.ends_with(&format!("{exercised}/{total}")), "{row}");
}

#[test]
fn random_exploration_reports_injection_point_coverage_of_each_scenario() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let report = dir.path().join("report.json");
    let args = [
        "explore",
        "--scenario",
        "cassandra:fixed",
        "--seeds",
        "12",
        "--out",
        dir.path().to_str().expect("utf-8"),
        "--report",
        report.to_str().expect("utf-8"),
    ];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let coverage = coverage_of(&report_json(&report));
    let (name, exercised, total, _) = &coverage[0];
    assert_eq!(name, "cassandra:fixed");
    assert!(*total > 0 && *exercised <= *total, "{exercised}/{total}");
    assert!(stdout.contains(&format!("; {exercised} of {total} injection points exercised\n")), "{stdout}");
}

#[test]
fn guided_shards_split_the_runs_and_their_merge_has_the_unsharded_runs_and_coverage() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let scenario = ["cassandra:fixed"];
    let whole = dir.path().join("whole");
    let (_, _, unsharded) = explore_guided(&whole, &scenario, &["--seeds", "30"]);
    let mut shard_dirs = Vec::new();
    let mut runs = Vec::new();
    for shard in ["0/2", "1/2"] {
        let shard_dir = dir.path().join(format!("shard-{}", &shard[..1]));
        let (_, stdout, json) = explore_guided(&shard_dir, &scenario, &["--seeds", "30", "--shard", shard]);
        assert!(stdout.contains(&format!("(shard {shard})")), "{stdout}");
        runs.push(json["seedsRun"].as_u64().expect("seedsRun"));
        shard_dirs.push(shard_dir);
    }
    // Runs 0 (the reference), 2, .., 28 and 1, 3, .., 29.
    assert_eq!(runs, vec![15, 15]);
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(|d| d.to_str().expect("utf-8")));
    let out = dir.path().join("merged");
    args.extend_from_slice(&[
        "--out",
        out.to_str().expect("utf-8"),
        "--report",
        merged.to_str().expect("utf-8"),
    ]);
    let (code, stdout, stderr) = run(&args);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    let merged = report_json(&merged);
    assert_eq!(merged["seedsRun"], unsharded["seedsRun"]);
    assert_eq!(merged["failingSeeds"], unsharded["failingSeeds"]);
    assert_eq!(coverage_of(&merged), coverage_of(&unsharded));
}

/// Issue 15: one bug is one failure. `mongodb:duplicate-backup` creates its backups with
/// `generateName`, so each failing seed names different objects (`mongo-backup-x7k2p`, ...); over
/// 500 seeds the duplicate is one distinct failure with one regression file. (The variant also
/// keeps the stale-view volume deletion that only `mongodb:fixed` guards against: that is another
/// property, and another failure.)
#[test]
fn a_generate_name_duplicate_over_500_seeds_is_one_distinct_failure() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().to_str().expect("utf-8");
    let args = [
        "explore",
        "--scenario",
        "mongodb:duplicate-backup",
        "--seeds",
        "500",
        "--shrink-replays",
        "0",
        "--out",
        out,
    ];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let duplicates: Vec<usize> =
        (1..lines.len()).filter(|&i| lines[i].contains("property \"children_within_spec\"")).collect();
    assert_eq!(duplicates.len(), 1, "{stdout}");
    // Many seeds failed that way, each with its own generated names, and became that one failure:
    // `failure 1: mongodb:duplicate-backup seed 11 (107 seeds alike)`.
    let header = lines[duplicates[0] - 1];
    let alike: u64 = header
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(" seeds alike)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no seed count in {header:?}"));
    assert!(alike > 10, "{stdout}");
    let files = files_under(dir.path());
    let distinct = stdout.lines().filter(|l| l.starts_with("failure ")).count();
    assert_eq!(files.len(), distinct, "{stdout}");
    let duplicate_files = files
        .iter()
        .filter(|p| {
            RegressionFile::load(p).expect("a valid file").violation.property == "children_within_spec"
        })
        .count();
    assert_eq!(duplicate_files, 1, "{stdout}");
}
