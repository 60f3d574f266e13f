//! The tests of `controllers::builtins::kinds` (its former unit tests: the library has no test harness).

use controllers::builtins::kinds::*;

#[test]
fn the_builtin_kinds_are_exactly_those_the_model_serves() {
    let ours: Vec<(String, String, String, bool)> = builtin_kinds()
        .into_iter()
        .map(|k| (k.resource.api_version, k.resource.kind, k.resource.plural, k.namespaced))
        .collect();
    let served: Vec<(String, String, String, bool)> = model_apiserver::ResourceTypes::builtin()
        .iter()
        .map(|t| (t.api.api_version.clone(), t.api.kind.clone(), t.api.plural.clone(), t.namespaced))
        .collect();
    let sorted = |mut v: Vec<(String, String, String, bool)>| {
        v.sort();
        v
    };
    assert_eq!(sorted(ours), sorted(served));
}

#[test]
fn group_of_splits_the_api_version() {
    assert_eq!(group_of("apps/v1"), "apps");
    assert_eq!(group_of("v1"), "");
    assert_eq!(group_of("example.com/v1beta1"), "example.com");
}
