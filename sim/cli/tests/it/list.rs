//! The tests of `kube_sim::list` (its former unit tests: the library has no test harness).

use kube_sim::list::*;
use sim::SimBuilder;
use sim::scenario::Registry;
use sim::scenario::Scenario;

#[test]
fn list_prints_name_tab_description_per_scenario_in_registration_order() {
    let registry = Registry::new([
        Scenario::new("b:fixed", "the fixed one", SimBuilder::new()),
        Scenario::new("a:bug", "the buggy one", SimBuilder::new()),
    ])
    .expect("unique names");
    let mut out = Vec::new();
    list(&registry, &mut out).expect("writes to a Vec");
    assert_eq!(String::from_utf8(out).expect("utf-8"), "b:fixed\tthe fixed one\na:bug\tthe buggy one\n");
}
