//! How violations read.

use properties::{Mask, Step, VALUE_DISPLAY_CHARS_MAX, Violation, describe_value, summarize};
use serde_json::json;

#[test]
fn a_long_value_is_cut_to_one_short_line() {
    let long = json!("x".repeat(500));
    let shown = describe_value(Some(&long));
    assert_eq!(shown.chars().count(), VALUE_DISPLAY_CHARS_MAX + 1);
    assert_eq!(shown, format!("\"{}…", "x".repeat(VALUE_DISPLAY_CHARS_MAX - 1)));
    assert_eq!(describe_value(Some(&json!("a\nb"))), r#""a\nb""#);
    assert_eq!(describe_value(None), "absent");
}

#[test]
fn summarize_gives_the_first_violation_and_how_many_more() {
    let orphan = |name: &str| Violation {
        property: "no_orphans".to_owned(),
        message: "owner Deployment web (uid d-1) is gone".to_owned(),
        object: Some(format!("apps/replicasets default/{name}")),
    };
    assert_eq!(summarize(&[]), Ok(()));
    assert_eq!(
        summarize(&[orphan("a")]),
        Err("apps/replicasets default/a: owner Deployment web (uid d-1) is gone".to_owned())
    );
    assert_eq!(
        summarize(&[orphan("a"), orphan("b"), orphan("c")]),
        Err("apps/replicasets default/a: owner Deployment web (uid d-1) is gone (and 2 more violations)"
            .to_owned())
    );
    assert_eq!(summarize(&[Violation::new("p", "no samples")]), Err("no samples".to_owned()));
}

#[test]
fn a_mask_covers_masked_subtrees_only_for_the_objects_it_targets() {
    let mask = Mask::none().user("Widget", ".status.lastSeen").unwrap().user("events", "").unwrap();
    let last_seen = [Step::Key("status".to_owned()), Step::Key("lastSeen".to_owned()), Step::Index(0)];
    assert!(mask.covers("example.com/widgets", Some("Widget"), &last_seen));
    assert!(!mask.covers("example.com/gadgets", Some("Gadget"), &last_seen));
    assert!(!mask.covers("example.com/widgets", Some("Widget"), &last_seen[..1]));
    assert!(mask.masks_object("events", None));
    assert!(!mask.masks_object("example.com/widgets", Some("Widget")));
}
