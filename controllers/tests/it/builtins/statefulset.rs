//! The tests of `controllers::builtins::statefulset` (its former unit tests: the library has no test harness).

use controllers::builtins::statefulset::*;

#[test]
fn ordinals_are_parsed_only_from_the_sets_own_pod_names() {
    assert_eq!(ordinal_of("db", "db-0"), Some(0));
    assert_eq!(ordinal_of("db", "db-10"), Some(10));
    assert_eq!(ordinal_of("db", "db-01"), None);
    assert_eq!(ordinal_of("db", "dbx-1"), None);
    assert_eq!(ordinal_of("db", "db-web-1"), None);
    assert_eq!(ordinal_of("db", "db--1"), None);
}

#[test]
fn claim_names_join_template_set_and_ordinal() {
    assert_eq!(claim_name("data", "db", 2), "data-db-2");
}
