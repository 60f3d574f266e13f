//! Scenarios are named worlds; a registry finds them by name and refuses duplicates.

use sim::SimBuilder;
use sim::scenario::{Registry, RegistryError, Scenario};

#[test]
fn a_registry_finds_scenarios_by_name_in_registration_order() {
    let registry = Registry::new([
        Scenario::new("b:fixed", "the fixed variant", SimBuilder::new()),
        Scenario::new("a:bug", "the planted bug", SimBuilder::new()),
    ])
    .unwrap();
    assert_eq!(registry.names(), vec!["b:fixed", "a:bug"]);
    assert_eq!(registry.get("a:bug").unwrap().description(), "the planted bug");
    assert!(registry.get("c").is_none());
}

#[test]
fn two_scenarios_with_one_name_are_refused() {
    let err = Registry::new([
        Scenario::new("x", "one", SimBuilder::new()),
        Scenario::new("x", "two", SimBuilder::new()),
    ])
    .unwrap_err();
    assert!(matches!(&err, RegistryError::Duplicate(n) if n == "x"));
    assert_eq!(err.to_string(), "two scenarios are named \"x\"");
}

#[test]
fn a_scenario_run_reports_under_the_scenario_name() {
    let s = Scenario::new("empty-world", "nothing happens", SimBuilder::new());
    let report = s.run(3);
    assert_eq!(report.scenario, "empty-world");
    assert!(report.verdict.is_pass(), "{:?}", report.verdict);
}

#[test]
fn a_lazy_scenario_declares_its_world_only_when_first_run_and_only_once() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let made = Arc::new(AtomicU32::new(0));
    let counter = made.clone();
    let lazy = Scenario::lazy("lazy:world", "declared on first use", move || {
        counter.fetch_add(1, Ordering::Relaxed);
        SimBuilder::new()
    });
    let registry = Registry::new([lazy.clone()]).unwrap();
    // Listing, as `kube-sim list` does, reads names and descriptions only.
    assert_eq!(registry.names(), vec!["lazy:world"]);
    assert_eq!(registry.get("lazy:world").unwrap().description(), "declared on first use");
    assert_eq!(made.load(Ordering::Relaxed), 0, "listing made the world");
    let first = lazy.run(1);
    let second = registry.get("lazy:world").unwrap().run(1);
    assert_eq!(first.scenario, "lazy:world");
    assert_eq!(first.digest, second.digest);
    assert_eq!(made.load(Ordering::Relaxed), 1, "clones share one declaration");
}
