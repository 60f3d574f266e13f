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

/// Go's `encoding/json` words for a body that is not JSON, or not an object: kube-apiserver's
/// create and update handlers send them back (`couldn't get version/kind; json parse error: ...`).
#[test]
fn a_body_that_is_not_a_json_object_gets_gos_words_for_it() {
    use model_apiserver_http::go_json::interpret_error;
    let find_kind = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;
    let cases: &[(&str, Option<String>)] = &[
        ("{not json", Some("invalid character 'n' looking for beginning of object key string".into())),
        ("", Some("unexpected end of JSON input".into())),
        (r#"{"a":1"#, Some("unexpected end of JSON input".into())),
        (r#"{"a" 1}"#, Some("invalid character '1' after object key".into())),
        (r#"{"a":1 "b":2}"#, Some("invalid character '\"' after object key:value pair".into())),
        ("[1 2]", Some("invalid character '2' after array element".into())),
        (r#"{"a":tru}"#, Some("invalid character '}' in literal true (expecting 'e')".into())),
        // At the end Go's scanner steps once more with a space, which a cut literal rejects.
        (r#"{"a":nul"#, Some("invalid character ' ' in literal null (expecting 'l')".into())),
        (r#"{"a":01}"#, Some("invalid character '1' after object key:value pair".into())),
        ("{} x", Some("invalid character 'x' after top-level value".into())),
        (r#"{"a":"\q"}"#, Some("invalid character 'q' in string escape code".into())),
        (r#"{"a":"\u12G4"}"#, Some("invalid character 'G' in \\u hexadecimal character escape".into())),
        ("{\"a\":\"\t\"}", Some("invalid character '\\t' in string literal".into())),
        (r#"{"a":1.}"#, Some("invalid character '}' after decimal point in numeric literal".into())),
        (r#"{"a":-}"#, Some("invalid character '}' in numeric literal".into())),
        (r#"{"a":1e}"#, Some("invalid character '}' in exponent of numeric literal".into())),
        ("{'a':1}", Some("invalid character '\\'' looking for beginning of object key string".into())),
        ("{\"a\":1,}", Some("invalid character '}' looking for beginning of object key string".into())),
        ("[1,]", Some("invalid character ']' looking for beginning of value".into())),
        ("1.", Some("invalid character ' ' after decimal point in numeric literal".into())),
        ("[1,2]", Some(format!("json: cannot unmarshal array into Go value of type {find_kind}"))),
        ("\"x\"", Some(format!("json: cannot unmarshal string into Go value of type {find_kind}"))),
        (
            r#"{"kind": 1}"#,
            Some("json: cannot unmarshal number into Go struct field .kind of type string".into()),
        ),
        (
            r#"{"apiVersion": {}}"#,
            Some("json: cannot unmarshal object into Go struct field .apiVersion of type string".into()),
        ),
        (r#" {"a": [1, -2.5e+3, 0.5E-2, true, false, null, "x\u00e9\n", {}], "b": {"c": []}} "#, None),
        ("null", None),
    ];
    for (body, want) in cases {
        assert_eq!(interpret_error(body.as_bytes()).as_ref(), want.as_ref(), "{body:?}");
    }
}

#[test]
fn the_unrecognized_message_summarizes_the_body_as_kube_apiserver_does() {
    use model_apiserver_http::go_json::unrecognized_message;
    assert_eq!(
        unrecognized_message("ConfigMap", "E", b"{not json"),
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: E ({not json)"
    );
    // Longer than 30 bytes: cut, with " ..."; not starting with `{`: in hex.
    let long = format!("{{\"metadata\": {}", "x".repeat(40));
    assert!(unrecognized_message("Pod", "E", long.as_bytes()).ends_with(&format!("({} ...)", &long[..30])));
    assert!(unrecognized_message("Pod", "E", b"[1,2]").ends_with("(5b312c325d)"));
    assert!(unrecognized_message("Pod", "E", b"").ends_with("(<empty>)"));
}

mod go_scanner_agrees_with_serde {
    //! The Go scanner decides which bodies get Go's words, before serde_json parses them: it must
    //! never reject a text serde_json accepts (that body would be refused), and whatever it
    //! accepts serde_json must accept too, but for numbers beyond f64 (`1e400`), which Go's
    //! scanner takes and serde_json refuses (on ASCII texts; the two also part ways on invalid
    //! UTF-8 and lone surrogates).
    use model_apiserver_http::go_json::syntax_error;
    use proptest::prelude::*;

    /// Texts of JSON's own characters, and valid JSON with one byte changed, inserted or cut.
    fn texts() -> impl Strategy<Value = Vec<u8>> {
        let alphabet = prop::sample::select(b"{}[]:,\"\\ \t\n0123456789-+.eEtrufalsn ux\x01/".to_vec());
        let random = prop::collection::vec(alphabet.clone(), 0..24);
        let valid = prop::sample::select(vec![
            r#"{"a": [1, -2.5e+3, 0.5E-2, true, false, null, "x\n\u00e9"], "b": {"c": []}}"#,
            r#"[{"k": "v"}, 0, -0.0, 1e9, "\"\\\/"]"#,
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}"#,
        ]);
        let mutated =
            (valid, any::<prop::sample::Index>(), alphabet, 0..3u8).prop_map(|(text, at, byte, how)| {
                let mut bytes = text.as_bytes().to_vec();
                let i = at.index(bytes.len());
                match how {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    _ => bytes.truncate(i),
                }
                bytes
            });
        prop_oneof![random, mutated]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        #[test]
        fn the_scanner_accepts_exactly_what_serde_json_accepts(text in texts()) {
            let serde = serde_json::from_slice::<serde_json::Value>(&text);
            let out_of_range = serde.as_ref().is_err_and(|e| e.to_string().starts_with("number out of range"));
            let scanner_ok = syntax_error(&text).is_none();
            if !out_of_range {
                prop_assert_eq!(scanner_ok, serde.is_ok(), "{:?}: {:?}", String::from_utf8_lossy(&text), syntax_error(&text));
            }
        }
    }
}
