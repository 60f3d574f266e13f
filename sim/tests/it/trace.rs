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
    assert_eq!(trace.digest(), "99aa06d3014798d86001c324468d497f");
    trace.push(1, &Arc::from("n"), TraceEvent::Note { text: "x".into() });
    // XXH3-128 of: 1u64 LE, 1u64 LE, "n", tag 10, 1u64 LE, "x".
    let mut encoding = Vec::new();
    encoding.extend_from_slice(&1u64.to_le_bytes());
    encoding.extend_from_slice(&1u64.to_le_bytes());
    encoding.push(b'n');
    encoding.push(10);
    encoding.extend_from_slice(&1u64.to_le_bytes());
    encoding.push(b'x');
    assert_eq!(trace.digest(), format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&encoding)));
    assert_eq!(trace.digest(), "8188c202fbb9fa6ce0330030226b2643");
}

/// The digest is XXH3-128 of every entry's encoding in order, however many entries there are
/// (well past the blocks the trace feeds to the hash at a time) and whenever it is read.
#[test]
fn the_digest_covers_every_entry_across_hash_blocks() {
    let node: Arc<str> = Arc::from("n");
    let mut trace = Trace::new(false);
    let mut encoding = Vec::new();
    for i in 0..1_000u64 {
        let text = format!("entry {i}");
        trace.push(i, &node, TraceEvent::Note { text: text.clone() });
        encoding.extend_from_slice(&i.to_le_bytes());
        encoding.extend_from_slice(&1u64.to_le_bytes());
        encoding.push(b'n');
        encoding.push(10);
        encoding.extend_from_slice(&(text.len() as u64).to_le_bytes());
        encoding.extend_from_slice(text.as_bytes());
        if i % 97 == 0 {
            let expected = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&encoding));
            assert_eq!(trace.digest(), expected, "after entry {i}");
        }
    }
    assert!(encoding.len() > 3 * 4096, "the entries span several blocks");
    assert_eq!(trace.digest(), format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&encoding)));
    assert_eq!(trace.len(), 1_000);
}

/// Every field of every event is in the digest: changing any one of them changes it, and no two
/// variants with the same field values collide.
#[test]
fn every_field_of_every_event_changes_the_digest() {
    let node: Arc<str> = Arc::from("n");
    let digest = |event: TraceEvent| {
        let mut trace = Trace::new(false);
        trace.push(1, &node, event);
        trace.digest()
    };
    let s = |text: &str| text.to_owned();
    // Each row: an event and variations of it, one field changed in each.
    let rows: Vec<(TraceEvent, Vec<TraceEvent>)> = vec![
        (TraceEvent::NodeStart { restart: false }, vec![TraceEvent::NodeStart { restart: true }]),
        (TraceEvent::NodeKill { reason: s("a") }, vec![TraceEvent::NodeKill { reason: s("b") }]),
        (
            TraceEvent::ApiRequest { call: 1, verb: "get", target: s("t") },
            vec![
                TraceEvent::ApiRequest { call: 2, verb: "get", target: s("t") },
                TraceEvent::ApiRequest { call: 1, verb: "list", target: s("t") },
                TraceEvent::ApiRequest { call: 1, verb: "get", target: s("u") },
            ],
        ),
        (
            TraceEvent::ApiResponse { call: 1, result: Ok(s("5")) },
            vec![
                TraceEvent::ApiResponse { call: 2, result: Ok(s("5")) },
                TraceEvent::ApiResponse { call: 1, result: Ok(s("6")) },
                TraceEvent::ApiResponse { call: 1, result: Err((5, s("5"))) },
            ],
        ),
        (
            TraceEvent::ApiResponse { call: 1, result: Err((409, s("Conflict"))) },
            vec![
                TraceEvent::ApiResponse { call: 1, result: Err((410, s("Conflict"))) },
                TraceEvent::ApiResponse { call: 1, result: Err((409, s("Gone"))) },
            ],
        ),
        (
            TraceEvent::WatchDelivery {
                watch: s("w"),
                kind: "ADDED",
                object: s("o"),
                resource_version: s("1"),
            },
            vec![
                TraceEvent::WatchDelivery {
                    watch: s("v"),
                    kind: "ADDED",
                    object: s("o"),
                    resource_version: s("1"),
                },
                TraceEvent::WatchDelivery {
                    watch: s("w"),
                    kind: "DELETED",
                    object: s("o"),
                    resource_version: s("1"),
                },
                TraceEvent::WatchDelivery {
                    watch: s("w"),
                    kind: "ADDED",
                    object: s("p"),
                    resource_version: s("1"),
                },
                TraceEvent::WatchDelivery {
                    watch: s("w"),
                    kind: "ADDED",
                    object: s("o"),
                    resource_version: s("2"),
                },
            ],
        ),
        (
            TraceEvent::Relist { watch: s("w"), resource_version: s("1"), items: 3 },
            vec![
                TraceEvent::Relist { watch: s("v"), resource_version: s("1"), items: 3 },
                TraceEvent::Relist { watch: s("w"), resource_version: s("2"), items: 3 },
                TraceEvent::Relist { watch: s("w"), resource_version: s("1"), items: 4 },
            ],
        ),
        (
            TraceEvent::ReconcileStart { controller: s("c"), object: s("o") },
            vec![
                TraceEvent::ReconcileStart { controller: s("d"), object: s("o") },
                TraceEvent::ReconcileStart { controller: s("c"), object: s("p") },
            ],
        ),
        (
            TraceEvent::ReconcileEnd { controller: s("c"), object: s("o"), result: s("r") },
            vec![
                TraceEvent::ReconcileEnd { controller: s("d"), object: s("o"), result: s("r") },
                TraceEvent::ReconcileEnd { controller: s("c"), object: s("p"), result: s("r") },
                TraceEvent::ReconcileEnd { controller: s("c"), object: s("o"), result: s("q") },
            ],
        ),
        (TraceEvent::Fault { description: s("f") }, vec![TraceEvent::Fault { description: s("g") }]),
        (
            TraceEvent::FaultEffect { description: s("f") },
            vec![TraceEvent::FaultEffect { description: s("g") }],
        ),
        (TraceEvent::Note { text: s("x") }, vec![TraceEvent::Note { text: s("y") }]),
    ];
    let mut seen = std::collections::BTreeMap::new();
    for (event, variations) in rows {
        let base = digest(event.clone());
        for variation in variations {
            assert_ne!(base, digest(variation.clone()), "{event:?} and {variation:?} hash alike");
        }
        if let Some(other) = seen.insert(base, event.clone()) {
            panic!("{event:?} and {other:?} hash alike");
        }
    }
    // Field boundaries are in the encoding: moving a character from one field to the next is
    // another event.
    assert_ne!(
        digest(TraceEvent::ReconcileStart { controller: s("ab"), object: s("c") }),
        digest(TraceEvent::ReconcileStart { controller: s("a"), object: s("bc") })
    );
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
