//! The tests of `model_apiserver_http::table` (its former unit tests: the library has no test harness).

use model_apiserver_http::table::{jsonpath, typed_cell};
use serde_json::json;

fn now() -> jiff::Timestamp {
    "2026-01-01T00:10:00Z".parse().unwrap()
}

#[test]
fn jsonpath_reads_fields_quoted_keys_indices_and_wildcards() {
    let o = json!({"spec": {"a.b": 1, "ports": [{"port": 80}, {"port": 443}]}});
    assert_eq!(jsonpath::find(&o, ".spec['a.b']"), [&json!(1)]);
    assert_eq!(jsonpath::find(&o, "{.spec.ports[1].port}"), [&json!(443)]);
    assert_eq!(jsonpath::find(&o, ".spec.ports[*].port"), [&json!(80), &json!(443)]);
    assert!(jsonpath::find(&o, ".spec.missing").is_empty());
}

#[test]
fn a_malformed_jsonpath_finds_nothing_instead_of_panicking() {
    let o = json!({"spec": {"ports": [1]}});
    for path in ["spec", ".spec.ports[", ".spec.ports[x]", "..spec", ".spec.ports[99999999999999999999]"] {
        assert!(jsonpath::find(&o, path).is_empty(), "{path}");
    }
}

#[test]
fn cells_follow_the_column_type_and_a_date_prints_as_an_age() {
    assert_eq!(typed_cell("integer", &[&json!(3)], now()), json!(3));
    assert_eq!(typed_cell("integer", &[&json!("3")], now()), json!(null));
    assert_eq!(typed_cell("string", &[&json!(true)], now()), json!("true"));
    assert_eq!(typed_cell("date", &[&json!("2026-01-01T00:05:00Z")], now()), json!("5m"));
    assert_eq!(typed_cell("date", &[&json!("yesterday")], now()), json!("<invalid>"));
    assert_eq!(typed_cell("string", &[&json!("a"), &json!(2)], now()), json!("a,2"));
    assert_eq!(typed_cell("string", &[], now()), json!(null));
}
