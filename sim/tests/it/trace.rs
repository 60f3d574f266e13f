//! The tests of `sim::trace` (its former unit tests: the library has no test harness).

use std::sync::Arc;

use sim::trace::*;

fn sample(trace: &mut Trace) {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let api: Arc<str> = Arc::from("apiserver");
    trace.push(0, &ctrl, TraceEvent::NodeStart { restart: false });
    trace.push(
        12_345_678,
        &ctrl,
        TraceEvent::ApiRequest { call: 1, verb: "create", target: "configmaps/default/a".into() },
    );
    trace.push(13_000_000, &api, TraceEvent::ApiResponse { call: 1, result: Ok("5".into()) });
    trace.push(14_000_000, &api, TraceEvent::ApiResponse { call: 2, result: Err((409, "Conflict".into())) });
}

#[test]
fn an_entry_displays_as_virtual_time_node_and_event() {
    let mut trace = Trace::new(true);
    sample(&mut trace);
    assert_eq!(
        trace.entries()[1].to_string(),
        "[      12.345ms] ctrl       api #1 create configmaps/default/a"
    );
    assert_eq!(trace.entries()[3].to_string(), "[      14.000ms] apiserver  api #2 error 409 Conflict");
}

#[test]
fn render_prints_one_line_per_entry() {
    let mut trace = Trace::new(true);
    sample(&mut trace);
    assert_eq!(
        trace.render(),
        "[       0.000ms] ctrl       node start\n\
         [      12.345ms] ctrl       api #1 create configmaps/default/a\n\
         [      13.000ms] apiserver  api #1 ok rv=5\n\
         [      14.000ms] apiserver  api #2 error 409 Conflict\n"
    );
}

#[test]
fn the_digest_does_not_depend_on_keeping_entries() {
    let (mut kept, mut digest_only) = (Trace::new(true), Trace::new(false));
    sample(&mut kept);
    sample(&mut digest_only);
    assert_eq!(kept.digest(), digest_only.digest());
    assert_eq!((kept.len(), digest_only.len()), (4, 4));
    assert_eq!((kept.entries().len(), digest_only.entries().len()), (4, 0));
    assert_eq!(digest_only.render(), "");
}

#[test]
fn the_digest_is_pinned() {
    // Pins the canonical encoding: a change here invalidates digests in regression files.
    let mut trace = Trace::new(false);
    assert_eq!(trace.digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    trace.push(1, &Arc::from("n"), TraceEvent::Note { text: "x".into() });
    // sha256("1 n note: x\n")
    assert_eq!(trace.digest(), "69fdcbd8876acf961c9af158100a5dc908cf27a84ea56b359c2a7d84a376a7cc");
}

#[test]
fn a_different_time_node_or_event_changes_the_digest() {
    let node: Arc<str> = Arc::from("n");
    let other: Arc<str> = Arc::from("m");
    let digest = |at, node: &Arc<str>, text: &str| {
        let mut trace = Trace::new(false);
        trace.push(at, node, TraceEvent::Note { text: text.into() });
        trace.digest()
    };
    let base = digest(1, &node, "x");
    assert_ne!(base, digest(2, &node, "x"));
    assert_ne!(base, digest(1, &other, "x"));
    assert_ne!(base, digest(1, &node, "y"));
    assert_eq!(base, digest(1, &node, "x"));
}
