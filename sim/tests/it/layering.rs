//! The workspace's layering, checked: the crates that a controller author's test build compiles
//! (`sim`, `properties`, `controllers`, `model-apiserver`) pull in no HTTP server and no command
//! line, the HTTP front does not depend on the engine, no library crate selects a Kubernetes
//! version (k8s-openapi's `v1_NN` features: the final crate picks one), and no module cycle comes
//! back in `sim`.
//!
//! The engine's top-level modules form layers: plain data (trace, decisions, fault plan,
//! verdicts, properties), components that own their state and never import the world (the
//! cluster set, the recorder, quiescence, the faults), the world that aggregates them, the
//! client, transport, informers and controllers that reach the world through its handle, and on
//! top the builder and the run loop. A module that imports one above it makes a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Dependencies that belong to the HTTP front or the CLI crate only.
const FRONT_ONLY: [&str; 5] = ["hyper", "hyper-util", "clap", "indicatif", "prost-reflect"];

fn workspace_root() -> PathBuf {
    // This package is sim/tests, two levels down.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().nth(2).expect("sim/tests is two levels down").to_owned()
}

/// Every crate `package` builds with (normal and build dependencies, as `cargo tree` resolves
/// their features), by name.
fn dependencies_of(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["tree", "-p", package, "-e", "normal,build", "--prefix", "none", "--offline"])
        .current_dir(workspace_root())
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("utf-8");
    text.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
}

#[test]
fn the_engine_the_properties_and_the_controllers_build_without_the_http_front_or_the_cli() {
    for package in ["sim", "properties", "controllers", "model-apiserver"] {
        let deps = dependencies_of(package);
        let found: Vec<&str> = FRONT_ONLY.iter().copied().filter(|name| deps.contains(*name)).collect();
        assert!(
            found.is_empty(),
            "{package} depends on {found:?}, which belong to model-apiserver-http or kube-sim"
        );
        assert!(!deps.contains("model-apiserver-http") && !deps.contains("kube-sim"), "{package}: {deps:?}");
    }
}

#[test]
fn the_http_front_does_not_depend_on_the_engine() {
    let deps = dependencies_of("model-apiserver-http");
    for engine in ["sim", "properties", "controllers", "kube-sim"] {
        assert!(!deps.contains(engine), "model-apiserver-http depends on {engine}");
    }
    assert!(deps.contains("model-apiserver"), "{deps:?}");
}

/// The library crates of the workspace: a user's crate depends on them and picks the Kubernetes
/// version itself. `ported-controllers` is the worked example of such a user's crate of
/// controllers (docs/porting.md), a library as well.
const LIBRARIES: [&str; 6] =
    ["model-apiserver", "model-apiserver-http", "sim", "properties", "controllers", "ported-controllers"];

/// The tokio shim a user's crate renames as `tokio`: a library too, with no tests of its own
/// (they are `tokio_select`, here), so no test build of it picks a version either.
const TOKIO_SHIM: &str = "kube-sim-tokio";

/// The k8s-openapi features that `cargo tree` resolves for `package` with `args` (its normal and
/// build dependencies, plus `dev` ones when asked).
fn k8s_openapi_features(package: &str, edges: &str, args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["tree", "-p", package, "-e", edges, "-i", "k8s-openapi", "--depth", "0"])
        .args(["--format", "{p} [{f}]", "--offline"])
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let line =
        text.lines().find(|l| l.starts_with("k8s-openapi ")).unwrap_or_else(|| panic!("{package}: {text}"));
    let features = line.split_once('[').and_then(|(_, rest)| rest.split_once(']')).expect("[features]").0;
    features.split(',').filter(|f| !f.is_empty()).map(str::to_owned).collect()
}

/// k8s-openapi's version features: `v1_33` .. `v1_37` and their aliases.
fn versions(features: &BTreeSet<String>) -> Vec<&str> {
    features
        .iter()
        .map(String::as_str)
        .filter(|f| f.starts_with("v1_") || *f == "earliest" || *f == "latest")
        .collect()
}

#[test]
fn no_library_crate_selects_a_kubernetes_version_so_a_users_crate_can_pick_its_own() {
    for package in LIBRARIES.into_iter().chain([TOKIO_SHIM]) {
        let features = k8s_openapi_features(package, "normal,build", &[]);
        assert!(
            versions(&features).is_empty(),
            "{package} selects k8s-openapi {:?}: a library must leave the version to the final crate \
             (k8s-openapi allows one per build); select it under [dev-dependencies] instead",
            versions(&features)
        );
    }
    // The CLI crate is a library too: without its default feature, it leaves the choice as well.
    let features = k8s_openapi_features("kube-sim", "normal,build", &["--no-default-features"]);
    assert!(versions(&features).is_empty(), "kube-sim --no-default-features: {features:?}");
}

#[test]
fn the_binary_and_the_test_builds_select_exactly_one_kubernetes_version() {
    // `latest` and the one `v1_NN` it stands for.
    let newest = |features: &BTreeSet<String>| {
        let selected = versions(features);
        selected.contains(&"latest") && selected.iter().filter(|f| f.starts_with("v1_")).count() == 1
    };
    let features = k8s_openapi_features("kube-sim", "normal,build", &[]);
    assert!(newest(&features), "kube-sim: {features:?}");
    for package in LIBRARIES {
        let features = k8s_openapi_features(package, "normal,build,dev", &[]);
        assert!(newest(&features), "{package}'s tests: {features:?}");
    }
}

/// For each top-level module of `sim/src`, the top-level modules its non-test code names through
/// `crate::` paths (comments left out: a doc link is no dependency).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = workspace_root().join("sim/src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.clone()];
    // A bounded walk: the tree is the crate's own source.
    for _ in 0..10_000 {
        let Some(path) = files.pop() else { break };
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a source directory") {
                files.push(entry.expect("an entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(&src).expect("under src");
        let first = relative.components().next().expect("a component").as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let uses = graph.entry(module.clone()).or_default();
        for line in code.lines().map(|l| l.split("//").next().unwrap_or("")) {
            for (index, _) in line.match_indices("crate::") {
                let name: String =
                    line[index + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                if !name.is_empty() && name != module {
                    uses.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for uses in graph.values_mut() {
        uses.retain(|name| modules.contains(name));
    }
    graph
}

/// The modules that lie on some cycle: those that reach themselves.
fn modules_in_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let reaches = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[from].iter().collect();
        while let Some(next) = stack.pop() {
            if seen.insert(next.clone()) {
                stack.extend(graph[next].iter());
            }
        }
        seen.contains(from)
    };
    graph.keys().filter(|m| reaches(m)).cloned().collect()
}

#[test]
fn the_modules_of_sim_form_no_cycle_and_the_components_do_not_import_the_world() {
    let graph = module_graph();
    for module in ["world", "explore", "builder", "run", "cluster", "recorder", "quiescence", "faults"] {
        assert!(graph.contains_key(module), "no module {module}: {:?}", graph.keys());
    }
    let cycle = modules_in_cycles(&graph);
    assert!(cycle.is_empty(), "modules in a cycle: {cycle:?} (graph: {graph:?})");
    // The components own their state: the world aggregates them, never the other way round.
    for component in
        ["cluster", "recorder", "quiescence", "faults", "trace", "decision", "property", "verdict"]
    {
        for upper in ["world", "client", "transport", "builder", "run", "supervisor"] {
            assert!(!graph[component].contains(upper), "{component} imports {upper}");
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_no_false_one() {
    let graph = |edges: &[(&str, &str)]| {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            graph.entry((*from).to_owned()).or_default().insert((*to).to_owned());
            graph.entry((*to).to_owned()).or_default();
        }
        graph
    };
    let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(modules_in_cycles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]))),
        ["a", "b", "c"]
    );
    assert!(modules_in_cycles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
}

/// Every `.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target" && n != ".git") {
                rust_files(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn unsafe_code_is_allowed_in_one_module_and_two_test_constructors_only() {
    // The workspace denies unsafe code; lifting that is a decision, recorded here: the simulated
    // `std::process::exit`, which must define libc's `exit`, and the constructor of two test
    // binaries that sets their libtest thread count before main (`std::env::set_var`).
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let lifting: BTreeSet<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines().any(|line| line.trim_start().starts_with("#") && line.contains("allow(unsafe_code)"))
        })
        .map(|path| path.strip_prefix(&root).expect("under the root").display().to_string())
        .collect();
    let test_mains = ["model-apiserver/http/tests/it/main.rs", "sim/cli/tests/it/main.rs"];
    let expected: BTreeSet<String> =
        ["sim/src/lib.rs"].iter().chain(&test_mains).map(|path| (*path).to_owned()).collect();
    assert_eq!(lifting, expected, "files that allow unsafe code");
    let lib = std::fs::read_to_string(root.join("sim/src/lib.rs")).expect("sim's lib.rs");
    assert!(lib.contains("#[allow(unsafe_code)]\npub mod process_exit;"), "only process_exit is allowed");
    for main in test_mains {
        let text = std::fs::read_to_string(root.join(main)).expect("a test binary's main.rs");
        assert_eq!(text.matches("allow(unsafe_code)").count(), 1, "{main}: one item allows unsafe code");
        assert!(
            text.contains("#[ctor::ctor(unsafe)]\n#[allow(unsafe_code)]\nfn two_test_threads_per_core() {"),
            "{main}: only the thread-count constructor is allowed"
        );
    }
}

#[test]
fn a_library_built_without_its_test_harness_has_no_unit_test_that_would_silently_never_run() {
    // `[lib] test = false` saves compiling a large library twice in the test build; a `#[test]`
    // added to its src/ afterwards would then never run. Such tests go in the crate's tests/it.
    // The check itself: it sees unit tests and their modules, not prose about them.
    for attribute in ["#[test]", "    #[tokio::test]", "#[madsim::test(flavor = \"x\")]", "#[cfg(test)]"] {
        assert!(is_test_attribute(attribute), "{attribute}");
    }
    for other in ["/// A `#[test]` here would never run.", "#[cfg(madsim)]", "#[derive(Debug)]"] {
        assert!(!is_test_attribute(other), "{other}");
    }
    let root = workspace_root();
    let mut checked = Vec::new();
    let members = workspace_members();
    for manifest in members.iter().map(String::as_str) {
        let text = std::fs::read_to_string(root.join(manifest).join("Cargo.toml")).expect("manifest");
        let lib = text.split("\n[").find(|section| section.starts_with("lib]")).unwrap_or_default();
        if !lib.lines().any(|line| line.trim() == "test = false") {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&root.join(manifest).join("src"), &mut files);
        let with_tests: Vec<String> = files
            .iter()
            .filter(|path| std::fs::read_to_string(path).unwrap_or_default().lines().any(is_test_attribute))
            .map(|path| path.display().to_string())
            .collect();
        assert!(
            with_tests.is_empty(),
            "{manifest} has `[lib] test = false` but unit tests in {with_tests:?}"
        );
        checked.push(manifest);
    }
    // Every crate of the workspace.
    assert_eq!(
        checked,
        [
            "model-apiserver",
            "model-apiserver/tests",
            "model-apiserver/http",
            "sim",
            "sim/tests",
            "sim/cli",
            "sim/tokio",
            "properties",
            "controllers",
            "controllers/ported",
            "regressions"
        ],
        "the crates without a lib harness"
    );
}

/// The member directories of the workspace, as the root Cargo.toml lists them (nested crates
/// included), so that a crate added later is checked too.
fn workspace_members() -> Vec<String> {
    let text = std::fs::read_to_string(workspace_root().join("Cargo.toml")).expect("the workspace manifest");
    let line = text.lines().find(|line| line.starts_with("members = [")).expect("a one-line members list");
    let members: Vec<String> = line.split('"').skip(1).step_by(2).map(str::to_owned).collect();
    assert!(members.contains(&"sim/cli".to_owned()), "members read from {line:?}");
    members
}

/// A line that makes what follows exist or run only in a test build: `#[test]`, `#[tokio::test]`
/// (and other runtimes' test attributes, with or without arguments), `#[cfg(test)]`.
fn is_test_attribute(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("#[")
        && (line.starts_with("#[test]")
            || line.contains("::test]")
            || line.contains("::test(")
            || line.contains("cfg(test)"))
}
