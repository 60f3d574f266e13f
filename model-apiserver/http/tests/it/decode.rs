//! The tests of `model_apiserver_http::decode` (its former unit tests: the library has no test harness).

use model_apiserver_http::decode::*;

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn json_nested_up_to_the_bound_passes_and_one_level_more_is_a_400() {
    assert!(check_depth(nested(NESTING_DEPTH_MAX).as_bytes(), Syntax::Json).is_ok());
    let error = check_depth(nested(NESTING_DEPTH_MAX + 1).as_bytes(), Syntax::Json).unwrap_err();
    assert_eq!(error.code, 400, "{error:?}");
}

#[test]
fn brackets_inside_json_strings_do_not_count() {
    let body = format!("{{\"a\": \"{}\\\"{}\"}}", "[".repeat(500), "{".repeat(500));
    assert_eq!(json_depth(body.as_bytes(), NESTING_DEPTH_MAX), 1);
}

#[test]
fn yaml_flow_nesting_compact_sequences_and_quoted_brackets_are_counted_as_they_nest() {
    assert!(yaml_depth(nested(200).as_bytes(), NESTING_DEPTH_MAX) > NESTING_DEPTH_MAX);
    assert!(yaml_depth("- ".repeat(200).as_bytes(), NESTING_DEPTH_MAX) > NESTING_DEPTH_MAX);
    let quoted = format!("a: '{}'\nb: \"{}\" # {}\n", "[".repeat(300), "{".repeat(300), "[".repeat(300));
    assert_eq!(yaml_depth(quoted.as_bytes(), NESTING_DEPTH_MAX), 0);
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: y}\ndata:\n  - -1\n";
    assert!(yaml_depth(manifest.as_bytes(), NESTING_DEPTH_MAX) <= 3);
}

#[test]
fn a_missing_content_type_is_json_and_text_plain_or_a_form_is_415() {
    assert_eq!(Media::of_object("").unwrap(), Media::Json);
    assert_eq!(Media::of_object("Application/JSON; charset=utf-8").unwrap(), Media::Json);
    assert_eq!(Media::of_object("application/yaml").unwrap(), Media::Yaml);
    for refused in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        assert_eq!(Media::of_object(refused).unwrap_err().code, 415, "{refused}");
    }
}
