//! Lists: paging with limit and continue, and label and field selectors.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{ListParams, WatchParams};
use model_apiserver::Request;
use serde_json::json;

fn labelled(name: &str, labels: serde_json::Value) -> serde_json::Value {
    let mut body = config_map(name, json!({}));
    body["metadata"]["labels"] = labels;
    body
}

fn names(list: &model_apiserver::request::ListResponse) -> Vec<String> {
    list.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect()
}

/// Five ConfigMaps a..e in `default`, at revisions 5..9.
fn five() -> World {
    let mut w = World::new();
    for n in ["a", "b", "c", "d", "e"] {
        w.create(&cm(), Some("default"), config_map(n, json!({})));
    }
    w
}

#[test]
fn limit_and_continue_page_through_a_consistent_snapshot() {
    let mut w = five();
    let first = w.list(&cm(), Some("default"), ListParams::default().limit(2));
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(3));
    assert_eq!(first.resource_version, "9");
    // A change between pages does not show: the pages read the first page's revision.
    w.create(&cm(), Some("default"), config_map("bb", json!({})));
    let token = first.continue_token.unwrap();
    let second = w.list(&cm(), Some("default"), ListParams::default().limit(2).continue_token(&token));
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second.resource_version, "9");
    let token = second.continue_token.unwrap();
    let last = w.list(&cm(), Some("default"), ListParams::default().limit(2).continue_token(&token));
    assert_eq!(names(&last), ["e"]);
    assert_eq!((last.continue_token, last.remaining_item_count), (None, None));
}

#[test]
fn a_continue_token_of_a_compacted_revision_gets_410_expired() {
    let mut w = five();
    let first = w.list(&cm(), Some("default"), ListParams::default().limit(2));
    w.create(&cm(), Some("default"), config_map("f", json!({})));
    w.server.compact(10);
    let params = ListParams::default().limit(2).continue_token(first.continue_token.as_deref().unwrap());
    let err = w.handle(Request::list(&cm(), Some("default"), params)).unwrap_err();
    assert_eq!(code_reason(&err), (410, "Expired"));
    assert!(err.message.starts_with("The provided continue parameter is too old"), "{}", err.message);
}

#[test]
fn a_continue_token_with_a_resource_version_gets_400_bad_request() {
    let mut w = five();
    let first = w.list(&cm(), Some("default"), ListParams::default().limit(2));
    let mut params = ListParams::default().continue_token(first.continue_token.as_deref().unwrap());
    params.resource_version = Some("9".into());
    let err = w.handle(Request::list(&cm(), Some("default"), params)).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert_eq!(err.message, "specifying resource version is not allowed when using continue");
}

#[test]
fn a_garbled_continue_token_gets_400_bad_request() {
    let mut w = five();
    let err = w.handle(Request::list(&cm(), None, ListParams::default().continue_token("zzz"))).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
}

/// base64url without padding, as Go's `RawURLEncoding`.
fn raw_url(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

#[test]
fn a_continue_token_is_kube_apiservers_encoding_of_the_revision_and_the_next_key() {
    use base64::Engine as _;
    let mut w = five();
    let first = w.list(&cm(), Some("default"), ListParams::default().limit(2));
    let token = first.continue_token.unwrap();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).unwrap();
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        format!(r#"{{"v":"meta.k8s.io/v1","rv":{},"start":"b\u0000"}}"#, first.resource_version)
    );
    // A token made by hand in the same encoding starts at its key, inclusive.
    let made = raw_url(&format!(r#"{{"v":"meta.k8s.io/v1","rv":{},"start":"d"}}"#, first.resource_version));
    let rest = w.list(&cm(), Some("default"), ListParams::default().continue_token(&made));
    assert_eq!(names(&rest), ["d", "e"]);
    // Across namespaces the key holds the namespace.
    w.create(&cm(), Some("kube-system"), config_map("a", json!({})));
    let all = w.list(&cm(), None, ListParams::default().limit(5));
    let token = all.continue_token.unwrap();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).unwrap();
    assert!(String::from_utf8(decoded).unwrap().ends_with(r#""start":"default/e\u0000"}"#));
    let rest = w.list(&cm(), None, ListParams::default().limit(5).continue_token(&token));
    assert_eq!(names(&rest), ["a"]);
    assert_eq!(rest.items[0].metadata.namespace.as_deref(), Some("kube-system"));
}

#[test]
fn a_bad_continue_token_gets_kube_apiservers_words_for_what_is_wrong() {
    let mut w = five();
    let rv = w.list(&cm(), Some("default"), ListParams::default()).resource_version;
    let cases = [
        // As recorded from kube-apiserver: "garbage" decodes to bytes that are not JSON.
        (
            "garbage".to_owned(),
            "continue key is not valid: invalid character '\\x81' looking for beginning of value",
        ),
        ("a=b".to_owned(), "continue key is not valid: illegal base64 data at input byte 1"),
        (
            raw_url("[1]"),
            "continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken",
        ),
        (
            raw_url(r#"{"v":"meta.k8s.io/v1","rv":"7","start":"a"}"#),
            "continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
        (
            raw_url(r#"{"v":"v9","rv":7,"start":"a"}"#),
            "continue key is not valid: server does not recognize this encoded version v9",
        ),
        (
            raw_url(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            raw_url(&format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":""}}"#)),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            raw_url(&format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"../x"}}"#)),
            "continue key is not valid: ../x",
        ),
    ];
    for (token, want) in cases {
        let err = w
            .handle(Request::list(&cm(), Some("default"), ListParams::default().continue_token(&token)))
            .unwrap_err();
        assert_eq!(code_reason(&err), (400, "BadRequest"), "{token}");
        assert_eq!(err.message, format!("invalid continue token: {want}"), "{token}");
    }
}

#[test]
fn a_label_selector_filters_a_list_and_hides_the_remaining_count() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), labelled("a", json!({"app": "web", "tier": "front"})));
    w.create(&cm(), Some("default"), labelled("b", json!({"app": "web"})));
    w.create(&cm(), Some("default"), labelled("c", json!({"app": "db"})));
    w.create(&cm(), Some("default"), config_map("d", json!({})));
    let web = w.list(&cm(), None, ListParams::default().labels("app=web"));
    assert_eq!(names(&web), ["a", "b"]);
    // `!=` and `notin` match objects without the key.
    let not_web = w.list(&cm(), None, ListParams::default().labels("app!=web"));
    assert_eq!(names(&not_web), ["c", "d"]);
    let paged = w.list(&cm(), None, ListParams::default().labels("app in (web,db)").limit(1));
    assert_eq!(names(&paged), ["a"]);
    assert_eq!(paged.remaining_item_count, None);
    assert!(paged.continue_token.is_some());
}

#[test]
fn a_field_selector_on_metadata_name_filters_a_list() {
    let mut w = five();
    let only_c = w.list(&cm(), None, ListParams::default().fields("metadata.name=c"));
    assert_eq!(names(&only_c), ["c"]);
    w.create(&cm(), Some("kube-system"), config_map("c", json!({})));
    let in_ns = w.list(&cm(), None, ListParams::default().fields("metadata.namespace=kube-system"));
    assert_eq!(names(&in_ns), ["c"]);
}

#[test]
fn a_malformed_label_selector_gets_400_bad_request() {
    let mut w = five();
    let err = w.handle(Request::list(&cm(), None, ListParams::default().labels("app in (web"))).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
}

#[test]
fn a_field_selector_on_an_unsupported_field_gets_400_bad_request() {
    let mut w = five();
    let err = w.handle(Request::list(&cm(), None, ListParams::default().fields("spec.x=1"))).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
}

#[test]
fn a_watch_with_a_label_selector_turns_leaving_into_deleted_and_entering_into_added() {
    let mut w = World::new();
    w.create(&cm(), Some("default"), labelled("a", json!({"app": "web"})));
    w.create(&cm(), Some("default"), labelled("b", json!({"app": "db"})));
    w.try_merge(&cm(), Some("default"), "a", json!({"metadata": {"labels": {"app": "db"}}})).unwrap();
    w.try_merge(&cm(), Some("default"), "b", json!({"metadata": {"labels": {"app": "web"}}})).unwrap();
    w.try_merge(&cm(), Some("default"), "b", json!({"data": {"k": "v"}})).unwrap();
    w.try_merge(&cm(), Some("default"), "a", json!({"data": {"k": "v"}})).unwrap();
    let params = WatchParams { bookmarks: false, ..Default::default() }.labels("app=web");
    let events = w.watch(&cm(), None, "4", params);
    let want: Vec<(String, String, String)> =
        [("ADDED", "a", "5"), ("DELETED", "a", "7"), ("ADDED", "b", "8"), ("MODIFIED", "b", "9")]
            .iter()
            .map(|(t, n, r)| (t.to_string(), n.to_string(), r.to_string()))
            .collect();
    assert_eq!(describe(&events), want);
}
