//! Label and field selectors: the string syntax, matching (absent keys included) and the 400s.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as ApiLabelSelector, LabelSelectorRequirement,
};
use kube_core::{DynamicObject, ObjectMeta, Status};
use model_apiserver::selector::{FieldSelector, LabelSelector};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn sel(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {}", e.message))
}

/// Which of a fixed set of label maps the selector matches, as indices, so that each test states
/// the whole truth table in one line.
fn matching(s: &str) -> Vec<usize> {
    let sets = [
        labels(&[]),
        labels(&[("app", "web")]),
        labels(&[("app", "db")]),
        labels(&[("app", "web"), ("tier", "front")]),
        labels(&[("tier", "back")]),
    ];
    let selector = sel(s);
    sets.iter().enumerate().filter(|(_, l)| selector.matches(l)).map(|(i, _)| i).collect()
}

fn bad_request(s: &str) -> Status {
    match LabelSelector::parse(s) {
        Ok(parsed) => panic!("{s:?} should not parse, got {parsed}"),
        Err(e) => {
            assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"), "{s:?}");
            e
        }
    }
}

#[test]
fn empty_selector_matches_everything() {
    assert_eq!(matching(""), vec![0, 1, 2, 3, 4]);
    assert!(sel("").is_everything());
    assert!(sel("  \t ").is_everything());
    assert!(LabelSelector::everything().is_everything());
    assert!(!sel("app").is_everything());
}

#[test]
fn equality_operators_match_only_objects_with_that_value() {
    assert_eq!(matching("app=web"), vec![1, 3]);
    assert_eq!(matching("app==web"), vec![1, 3]);
}

#[test]
fn not_equal_matches_objects_without_the_key() {
    assert_eq!(matching("app!=web"), vec![0, 2, 4]);
}

#[test]
fn in_matches_only_objects_with_one_of_the_values() {
    assert_eq!(matching("app in (web,db)"), vec![1, 2, 3]);
    assert_eq!(matching("app in (db)"), vec![2]);
}

#[test]
fn notin_matches_objects_without_the_key() {
    assert_eq!(matching("app notin (web)"), vec![0, 2, 4]);
    assert_eq!(matching("app notin (web,db)"), vec![0, 4]);
}

#[test]
fn bare_key_means_exists_and_bang_key_means_does_not_exist() {
    assert_eq!(matching("tier"), vec![3, 4]);
    assert_eq!(matching("!tier"), vec![0, 1, 2]);
}

#[test]
fn comma_separated_requirements_must_all_hold() {
    assert_eq!(matching("app=web,tier"), vec![3]);
    assert_eq!(matching("app,!tier"), vec![1, 2]);
    assert_eq!(matching("app in (web, db),tier notin (front)"), vec![1, 2]);
}

#[test]
fn whitespace_around_tokens_is_ignored() {
    assert_eq!(matching("  app  =  web ,  tier  "), vec![3]);
    assert_eq!(matching("app\tin\t(\tweb\t)\n"), vec![1, 3]);
    assert_eq!(matching(" ! tier "), vec![0, 1, 2]);
}

#[test]
fn keyword_in_can_be_a_key_and_a_value() {
    let s = sel("in=in");
    assert!(s.matches(&labels(&[("in", "in")])));
    assert!(!s.matches(&labels(&[("in", "out")])));
}

#[test]
fn empty_value_after_equals_matches_the_empty_label() {
    let s = sel("app=");
    assert!(s.matches(&labels(&[("app", "")])));
    assert!(!s.matches(&labels(&[])));
    assert!(!s.matches(&labels(&[("app", "web")])));
}

#[test]
fn prefixed_keys_are_accepted() {
    let s = sel("app.kubernetes.io/name=web");
    assert!(s.matches(&labels(&[("app.kubernetes.io/name", "web")])));
}

#[test]
fn greater_and_less_than_compare_integer_values() {
    let s = sel("rank>5");
    assert!(s.matches(&labels(&[("rank", "6")])));
    assert!(!s.matches(&labels(&[("rank", "5")])));
    assert!(!s.matches(&labels(&[("rank", "x")])));
    assert!(!s.matches(&labels(&[])));
    assert!(sel("rank<5").matches(&labels(&[("rank", "-1")])));
}

#[test]
fn display_gives_the_canonical_form_sorted_by_key() {
    assert_eq!(sel("z=1, a notin (y,x), !m, b").to_string(), "a notin (x,y),b,!m,z=1");
}

#[test]
fn missing_operator_is_a_400_naming_the_token() {
    let e = bad_request("app web");
    assert_eq!(e.message, "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, gt, lt");
}

#[test]
fn trailing_comma_is_a_400() {
    let e = bad_request("app=web,");
    assert_eq!(e.message, "found '', expected: identifier after ','");
}

#[test]
fn unclosed_set_is_a_400() {
    let e = bad_request("app in (web");
    assert_eq!(e.message, "unable to parse requirement: found '', expected: ',' or ')'");
}

#[test]
fn set_without_parentheses_is_a_400() {
    let e = bad_request("app in web");
    assert_eq!(e.message, "unable to parse requirement: found 'web' expected: '('");
}

#[test]
fn leading_operator_is_a_400() {
    let e = bad_request("=web");
    assert_eq!(e.message, "found '=', expected: !, identifier, or 'end of string'");
}

#[test]
fn bang_key_followed_by_a_value_is_a_400() {
    let e = bad_request("!app=web");
    assert_eq!(e.message, "found '=', expected: ',' or 'end of string'");
}

#[test]
fn invalid_key_is_a_400_with_the_qualified_name_rule() {
    let e = bad_request("-app=web");
    assert_eq!(
        e.message,
        "unable to parse requirement: <nil>: Invalid value: \"-app\": name part must consist of alphanumeric \
         characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
         'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
}

#[test]
fn invalid_key_prefix_is_a_400() {
    let e = bad_request("Example.com/app=web");
    assert!(
        e.message.starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/app\": prefix part a lowercase RFC 1123 subdomain"
        ),
        "{}",
        e.message
    );
}

#[test]
fn key_name_longer_than_63_characters_is_a_400() {
    let key = "k".repeat(64);
    let e = bad_request(&format!("{key}=v"));
    assert_eq!(
        e.message,
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"{key}\": name part must be no more than 63 characters"
        )
    );
}

#[test]
fn invalid_value_is_a_400_with_the_label_value_rule() {
    let e = bad_request("app=-web");
    assert_eq!(
        e.message,
        "unable to parse requirement: values[0][app]: Invalid value: \"-web\": a valid label must be an empty string \
         or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character \
         (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
}

#[test]
fn non_integer_greater_than_value_is_a_400() {
    let e = bad_request("rank>x");
    assert_eq!(
        e.message,
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn match_labels_and_match_expressions_convert_to_one_selector() {
    let api = ApiLabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
        match_expressions: Some(vec![
            LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["back".into()]),
            },
            LabelSelectorRequirement { key: "canary".into(), operator: "DoesNotExist".into(), values: None },
        ]),
    };
    let s = LabelSelector::from_label_selector(&api).unwrap();
    assert_eq!(s.to_string(), "app=web,!canary,tier notin (back)");
    assert!(s.matches(&labels(&[("app", "web")])));
    assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
    assert!(!s.matches(&labels(&[("app", "web"), ("tier", "back")])));
    assert!(!s.matches(&labels(&[("app", "web"), ("canary", "1")])));
}

#[test]
fn empty_api_label_selector_matches_everything() {
    let s = LabelSelector::from_label_selector(&ApiLabelSelector::default()).unwrap();
    assert!(s.is_everything());
}

#[test]
fn api_in_without_values_is_a_400() {
    let api = ApiLabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: "In".into(),
            values: None,
        }]),
        ..Default::default()
    };
    let e = LabelSelector::from_label_selector(&api).unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        e.message,
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
}

#[test]
fn api_exists_with_values_is_a_400() {
    let api = ApiLabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: "Exists".into(),
            values: Some(vec!["x".into()]),
        }]),
        ..Default::default()
    };
    let e = LabelSelector::from_label_selector(&api).unwrap_err();
    assert_eq!(
        e.message,
        "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
    );
}

#[test]
fn api_unknown_operator_is_a_400() {
    let api = ApiLabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: "Gt".into(),
            values: None,
        }]),
        ..Default::default()
    };
    let e = LabelSelector::from_label_selector(&api).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (400, "\"Gt\" is not a valid label selector operator"));
}

#[test]
fn api_match_labels_with_invalid_key_is_a_400() {
    let api = ApiLabelSelector {
        match_labels: Some(BTreeMap::from([("bad key".to_string(), "v".to_string())])),
        ..Default::default()
    };
    let e = LabelSelector::from_label_selector(&api).unwrap_err();
    assert!(
        e.message.starts_with("key: Invalid value: \"bad key\": name part must consist of"),
        "{}",
        e.message
    );
}

fn meta(name: &str, namespace: Option<&str>) -> DynamicObject {
    let metadata =
        ObjectMeta { name: Some(name.into()), namespace: namespace.map(Into::into), ..Default::default() };
    DynamicObject { types: None, metadata, data: serde_json::json!({}) }
}

#[test]
fn field_selector_on_name_and_namespace_matches_exactly() {
    let s = FieldSelector::parse("metadata.name=a,metadata.namespace==ns1").unwrap();
    assert!(s.matches(&meta("a", Some("ns1"))));
    assert!(!s.matches(&meta("a", Some("ns2"))));
    assert!(!s.matches(&meta("b", Some("ns1"))));
}

#[test]
fn field_selector_not_equal_excludes_only_that_value() {
    let s = FieldSelector::parse("metadata.name!=a").unwrap();
    assert!(!s.matches(&meta("a", None)));
    assert!(s.matches(&meta("b", None)));
}

#[test]
fn field_selector_namespace_of_cluster_scoped_object_is_empty() {
    let s = FieldSelector::parse("metadata.namespace=").unwrap();
    assert!(s.matches(&meta("a", None)));
    assert!(!s.matches(&meta("a", Some("ns1"))));
}

#[test]
fn empty_field_selector_matches_everything() {
    let s = FieldSelector::parse("").unwrap();
    assert!(s.is_everything());
    assert!(s.matches(&meta("a", Some("ns"))));
    assert_eq!(FieldSelector::everything(), s);
}

#[test]
fn field_selector_on_a_field_a_metadata_only_kind_lacks_is_a_400_naming_the_two_it_has() {
    // apimachinery's DefaultMetaV1FieldSelectorConversion, for every kind without its own.
    let e = FieldSelector::parse("status.phase=Running").unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        e.message,
        r#""status.phase" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
}

#[test]
fn field_selector_without_operator_is_a_400() {
    let e = FieldSelector::parse("metadata.name").unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    assert_eq!(e.message, "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
}

#[test]
fn field_selector_escaped_comma_is_part_of_the_value() {
    let s = FieldSelector::parse(r"metadata.name=a\,b").unwrap();
    assert!(s.matches(&meta("a,b", None)));
    let e = FieldSelector::parse("metadata.name=a=b").unwrap_err();
    assert_eq!(e.message, "invalid field selector: unescaped character in value: =");
}

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    fn arb_requirement() -> impl Strategy<Value = String> {
        let key = prop_oneof![Just("app"), Just("tier"), Just("example.com/role"), Just("in")];
        let value = prop_oneof![Just("web"), Just("db"), Just("a.b-c_d"), Just("")];
        let values = prop::collection::btree_set(prop_oneof![Just("web"), Just("db"), Just("x")], 1..3)
            .prop_map(|s| s.into_iter().collect::<Vec<_>>().join(", "));
        (key, value, values, 0..6u8).prop_map(|(k, v, vs, op)| match op {
            0 => format!("{k}={v}"),
            1 => format!("{k} != {v}"),
            2 => format!("{k} in ({vs})"),
            3 => format!("{k} notin ({vs})"),
            4 => k.to_string(),
            _ => format!("!{k}"),
        })
    }

    fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(
            prop_oneof![Just("app".to_string()), Just("tier".to_string()), Just("in".to_string())],
            prop_oneof![Just("web".to_string()), Just("db".to_string()), Just(String::new())],
            0..3,
        )
    }

    proptest! {
        #[test]
        fn printed_selector_parses_back_to_the_same_selector(
            reqs in prop::collection::vec(arb_requirement(), 0..4),
            labels in prop::collection::vec(arb_labels(), 4),
        ) {
            let parsed = sel(&reqs.join(","));
            let reparsed = sel(&parsed.to_string());
            prop_assert_eq!(&reparsed, &parsed);
            for l in &labels {
                prop_assert_eq!(reparsed.matches(l), parsed.matches(l));
            }
        }
    }
}
