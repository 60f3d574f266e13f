//! Mask path syntax: JSON pointers and dotted paths.

use properties::{Error, Path, PathPattern, Segment, Step};

fn key(text: &str) -> Segment {
    Segment::Key(text.to_owned())
}

#[test]
fn a_dotted_path_and_a_pointer_parse_to_the_same_pattern() {
    let expected = PathPattern(vec![key("status"), key("conditions"), Segment::Any, key("message")]);
    assert_eq!(PathPattern::parse(".status.conditions[*].message"), Ok(expected.clone()));
    assert_eq!(PathPattern::parse("/status/conditions/*/message"), Ok(expected.clone()));
    assert_eq!(expected.to_string(), "/status/conditions/*/message");
}

#[test]
fn quoted_keys_and_pointer_escapes_keep_dots_and_slashes() {
    let expected = PathPattern(vec![key("metadata"), key("annotations"), key("example.com/last-run")]);
    assert_eq!(PathPattern::parse(".metadata.annotations['example.com/last-run']"), Ok(expected.clone()));
    assert_eq!(PathPattern::parse(r#".metadata.annotations["example.com/last-run"]"#), Ok(expected.clone()));
    assert_eq!(PathPattern::parse("/metadata/annotations/example.com~1last-run"), Ok(expected.clone()));
    assert_eq!(expected.to_string(), "/metadata/annotations/example.com~1last-run");
}

#[test]
fn an_index_in_a_pattern_matches_that_array_element_only() {
    let pattern = PathPattern::parse(".spec.containers[0].image").unwrap();
    let at = |index| {
        vec![
            Step::Key("spec".into()),
            Step::Key("containers".into()),
            Step::Index(index),
            Step::Key("image".into()),
        ]
    };
    assert!(pattern.matches(&at(0)));
    assert!(!pattern.matches(&at(1)));
}

#[test]
fn a_pattern_covers_its_whole_subtree_and_nothing_above_it() {
    let pattern = PathPattern::parse("/metadata/managedFields").unwrap();
    let path = |steps: &[&str]| steps.iter().map(|s| Step::Key((*s).to_owned())).collect::<Vec<_>>();
    assert!(pattern.covers(&path(&["metadata", "managedFields", "manager"])));
    assert!(pattern.covers(&path(&["metadata", "managedFields"])));
    assert!(!pattern.covers(&path(&["metadata"])));
    assert!(!pattern.matches(&path(&["metadata", "managedFields", "manager"])));
}

#[test]
fn generalising_a_path_replaces_every_index_with_any() {
    let path =
        Path(vec![Step::Key("status".into()), Step::Index(2), Step::Key("a/b".into()), Step::Index(0)]);
    assert_eq!(path.to_string(), "/status/2/a~1b/0");
    assert_eq!(PathPattern::generalise(&path).to_string(), "/status/*/a~1b/*");
}

#[test]
fn malformed_dotted_paths_are_invalid_path_errors() {
    let reason = |text: &str| match PathPattern::parse(text) {
        Err(Error::InvalidPath { reason, .. }) => reason,
        Err(other) => panic!("{text}: expected InvalidPath, found {other:?}"),
        Ok(pattern) => panic!("{text} parsed as {pattern}"),
    };
    assert_eq!(reason(".status..phase"), "empty key after '.'");
    assert_eq!(reason(".status.conditions[0"), "'[' without a closing ']'");
    assert_eq!(reason(".status.conditions[x]"), "inside '[..]' expected '*', an index, or a quoted key");
    assert_eq!(reason(".metadata.annotations['a"), "unterminated quoted key");
    assert_eq!(reason(".status[0]phase"), "expected '.' or '[' between segments");
}

#[test]
fn the_empty_pattern_masks_the_whole_object() {
    assert_eq!(PathPattern::parse(""), Ok(PathPattern(vec![])));
    assert_eq!(PathPattern::parse("."), Ok(PathPattern(vec![])));
}
