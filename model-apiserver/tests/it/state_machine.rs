//! A proptest state-machine test of the whole server: random sequences of valid and invalid
//! ConfigMap requests against a reference model (a BTreeMap), checking revisions, conflicts,
//! lists at past revisions, watch replay, name uniqueness and byte-identical determinism.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_core::{
    ApiResource, DynamicObject, Status, WatchEvent,
    params::{DeleteParams, GetParams, ListParams, PostParams, Preconditions, VersionMatch, WatchParams},
};
use model_apiserver::{ApiServer, Context, Request, ResourceTypes, Response, SeqIds, ServerConfig};
use proptest::prelude::*;
use serde_json::json;

/// Requests per generated sequence.
const OPS_MAX: usize = 40;
/// Generated sequences in the default run.
const CASES: u32 = 1_000;
/// A history that keeps every revision of a sequence.
const HISTORY_LONG: usize = 10_000;
/// Short histories (1 up to this, exclusive) compact during a sequence.
const HISTORY_SHORT_MAX: usize = 16;

/// Namespaces the requests address: two exist, the third does not (creates there get 404).
const NAMESPACES: [&str; 3] = ["default", "kube-system", "missing"];
const NAMES: [&str; 3] = ["a", "b", "c"];

/// Which resourceVersion an update or delete precondition carries.
#[derive(Clone, Copy, Debug)]
enum RvChoice {
    /// The object's current resourceVersion, as a client that just read it has.
    Fresh,
    /// A revision seen earlier in the run (index into the revisions seen, modulo their count);
    /// it may happen to be the current one.
    Stale(usize),
    /// No resourceVersion: an unconditional update (allowed for built-ins).
    Empty,
}

/// One request of a generated sequence.
#[derive(Clone, Debug)]
enum Op {
    Create {
        ns: usize,
        name: usize,
        value: u8,
    },
    Update {
        ns: usize,
        name: usize,
        value: u8,
        rv: RvChoice,
    },
    /// An update that sends back exactly what is stored.
    NoOpUpdate {
        ns: usize,
        name: usize,
    },
    Delete {
        ns: usize,
        name: usize,
        rv: Option<RvChoice>,
    },
    Get {
        ns: usize,
        name: usize,
    },
    List {
        ns: Option<usize>,
    },
}

fn arb_rv() -> impl Strategy<Value = RvChoice> {
    prop_oneof![
        4 => Just(RvChoice::Fresh),
        2 => any::<usize>().prop_map(RvChoice::Stale),
        1 => Just(RvChoice::Empty),
    ]
}

fn arb_op() -> impl Strategy<Value = Op> {
    let ns = prop_oneof![4 => Just(0usize), 3 => Just(1usize), 1 => Just(2usize)];
    let name = 0..NAMES.len();
    prop_oneof![
        4 => (ns.clone(), name.clone(), 0..3u8).prop_map(|(ns, name, value)| Op::Create { ns, name, value }),
        4 => (ns.clone(), name.clone(), 0..3u8, arb_rv())
            .prop_map(|(ns, name, value, rv)| Op::Update { ns, name, value, rv }),
        2 => (ns.clone(), name.clone()).prop_map(|(ns, name)| Op::NoOpUpdate { ns, name }),
        2 => (ns.clone(), name.clone(), prop::option::of(arb_rv()))
            .prop_map(|(ns, name, rv)| Op::Delete { ns, name, rv }),
        1 => (ns.clone(), name).prop_map(|(ns, name)| Op::Get { ns, name }),
        1 => prop::option::of(ns).prop_map(|ns| Op::List { ns }),
    ]
}

/// What the reference model knows of one stored ConfigMap.
#[derive(Clone, Debug, PartialEq)]
struct Stored {
    value: u8,
    rv: u64,
    uid: String,
}

type Key = (String, String);
type State = BTreeMap<Key, Stored>;

/// One change the model expects a watch to report.
#[derive(Clone, Debug, PartialEq)]
struct Change {
    kind: &'static str,
    key: Key,
    rv: u64,
    value: u8,
}

/// A change with the object's value before it (`None` when it did not exist), to work out what a
/// watch with a label selector sees.
#[derive(Clone, Debug)]
struct Logged {
    change: Change,
    before: Option<u8>,
}

/// The label selector of the selective watches: objects carry `v=<value>`.
const SELECTOR: &str = "v=1";
const SELECTED_VALUE: u8 = 1;

/// What a watch with [`SELECTOR`] reports for a change: an object entering the selection is
/// ADDED, one leaving it DELETED, one outside it nothing.
///
/// An object leaving the selection is DELETED as it was before the change (its old value), at
/// the change's revision, as the real watch cache sends it.
fn selected(l: &Logged) -> Option<Change> {
    let now = l.change.value == SELECTED_VALUE;
    let before = l.before == Some(SELECTED_VALUE);
    let (kind, value) = match (l.change.kind, before, now) {
        ("ADDED", _, true) | ("MODIFIED", false, true) => ("ADDED", l.change.value),
        ("MODIFIED", true, true) => ("MODIFIED", l.change.value),
        ("MODIFIED", true, false) => ("DELETED", SELECTED_VALUE),
        ("DELETED", _, true) => ("DELETED", l.change.value),
        _ => return None,
    };
    Some(Change { kind, value, ..l.change.clone() })
}

fn config_maps() -> ApiResource {
    let types = ResourceTypes::builtin();
    types
        .iter()
        .find(|t| t.api.group.is_empty() && t.api.plural == "configmaps")
        .expect("built in")
        .api
        .clone()
}

fn body(ns: &str, name: &str, value: u8, rv: Option<String>) -> DynamicObject {
    let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"v": value.to_string()}},
        "data": {"v": value.to_string()}});
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv);
    }
    serde_json::from_value(v).expect("ConfigMap body")
}

fn value_of(o: &DynamicObject) -> u8 {
    o.data["data"]["v"].as_str().and_then(|s| s.parse().ok()).expect("data.v is a small number")
}

fn rv_of(o: &DynamicObject) -> u64 {
    o.metadata.resource_version.as_deref().and_then(|s| s.parse().ok()).expect("numeric resourceVersion")
}

fn key_of(o: &DynamicObject) -> Key {
    (o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default())
}

fn err_of(r: &Result<Response, Status>) -> Option<(u16, &str)> {
    r.as_ref().err().map(|s| (s.code, s.reason.as_str()))
}

/// The server under test, its reference model and what the run has seen.
struct Run {
    server: ApiServer,
    ids: SeqIds,
    now: jiff::Timestamp,
    cm: ApiResource,
    model: State,
    /// The model's state at every revision the run reached.
    history: BTreeMap<u64, State>,
    /// Every change, in revision order.
    changes: Vec<Logged>,
    /// The revision before the first request of the sequence.
    start: u64,
    /// The Debug form of every response, for the determinism check.
    transcript: String,
}

impl Run {
    fn new(history_revisions_max: usize) -> Run {
        let mut ids = SeqIds::default();
        let now = jiff::Timestamp::from_second(1_767_225_600).expect("valid time");
        let config = ServerConfig { history_revisions_max, ..ServerConfig::default() };
        let server = ApiServer::with_config(config).with_default_namespaces(&mut Context::new(now, &mut ids));
        let start = server.revision();
        let history = BTreeMap::from([(start, State::new())]);
        Run {
            server,
            ids,
            now,
            cm: config_maps(),
            model: State::new(),
            history,
            changes: Vec::new(),
            start,
            transcript: String::new(),
        }
    }

    // The server's own contract returns a Status by value; this only passes it on.
    #[allow(clippy::result_large_err)]
    fn handle(&mut self, request: Request) -> Result<Response, Status> {
        // Virtual time moves one second per request, so timestamps differ between objects.
        self.now += jiff::SignedDuration::from_secs(1);
        let response = self.server.handle(request, &mut Context::new(self.now, &mut self.ids));
        self.transcript.push_str(&format!("{response:?}\n"));
        response
    }

    /// The resourceVersion string a request carries for `choice`.
    fn rv_for(&self, choice: RvChoice, key: &Key) -> Option<String> {
        match choice {
            RvChoice::Fresh => Some(self.model.get(key).map_or(self.start, |s| s.rv).to_string()),
            RvChoice::Stale(i) => {
                let seen: Vec<u64> = self.history.keys().copied().collect();
                Some(seen[i % seen.len()].to_string())
            }
            RvChoice::Empty => None,
        }
    }

    /// Check a successful write's response against the model and record the change.
    fn written(
        &mut self,
        kind: &'static str,
        key: Key,
        response: &Result<Response, Status>,
        expect_value: u8,
    ) {
        let before = *self.history.keys().next_back().expect("history has the start");
        let object = match response {
            Ok(r) => r.object().cloned().expect("a write answers with the object"),
            Err(e) => panic!("{kind} {key:?} should succeed, got {} {}: {}", e.code, e.reason, e.message),
        };
        // A delete answers the object as it was stored (its resourceVersion); the deletion
        // itself is the server's new revision, as kube-apiserver's store answers.
        let rv = if kind == "DELETED" { self.server.revision() } else { rv_of(&object) };
        assert!(rv > before, "{kind} {key:?}: revision {rv} must be above {before}");
        assert_eq!(rv, self.server.revision(), "the write's revision is the server's revision");
        assert_eq!(key_of(&object), key);
        assert_eq!(value_of(&object), expect_value);
        let before_value = self.model.get(&key).map(|s| s.value);
        if kind == "DELETED" {
            let gone = self.model.remove(&key).expect("deleted object was in the model");
            assert_eq!(object.metadata.uid.as_deref(), Some(gone.uid.as_str()));
            assert_eq!(rv_of(&object), gone.rv, "a delete answers the stored resourceVersion");
        } else {
            let uid = object.metadata.uid.clone().expect("uid");
            if let Some(old) = self.model.get(&key) {
                assert_eq!(uid, old.uid, "an update keeps the uid");
            }
            self.model.insert(key.clone(), Stored { value: expect_value, rv, uid });
        }
        self.changes
            .push(Logged { change: Change { kind, key, rv, value: expect_value }, before: before_value });
        self.history.insert(rv, self.model.clone());
    }

    fn unchanged(&self, op: &Op, response: &Result<Response, Status>, expected: (u16, &str), revision: u64) {
        assert_eq!(err_of(response), Some(expected), "{op:?}");
        assert_eq!(self.server.revision(), revision, "{op:?}: a failed request must not bump the revision");
    }

    fn apply(&mut self, op: &Op) {
        let revision = self.server.revision();
        match *op {
            Op::Create { ns, name, value } => {
                let key: Key = (NAMESPACES[ns].into(), NAMES[name].into());
                let request = Request::create(
                    &self.cm,
                    Some(&key.0),
                    body(&key.0, &key.1, value, None),
                    PostParams::default(),
                );
                let r = self.handle(request);
                if key.0 == "missing" {
                    self.unchanged(op, &r, (404, "NotFound"), revision);
                } else if self.model.contains_key(&key) {
                    self.unchanged(op, &r, (409, "AlreadyExists"), revision);
                } else {
                    self.written("ADDED", key, &r, value);
                }
            }
            Op::Update { ns, name, value, rv } => {
                self.update(op, (NAMESPACES[ns].into(), NAMES[name].into()), value, rv)
            }
            Op::NoOpUpdate { ns, name } => {
                let key: Key = (NAMESPACES[ns].into(), NAMES[name].into());
                let value = self.model.get(&key).map_or(0, |s| s.value);
                self.update(op, key, value, RvChoice::Fresh);
            }
            Op::Delete { ns, name, rv } => {
                let key: Key = (NAMESPACES[ns].into(), NAMES[name].into());
                let sent = rv.and_then(|c| self.rv_for(c, &key));
                let params = DeleteParams {
                    preconditions: sent
                        .clone()
                        .map(|rv| Preconditions { resource_version: Some(rv), uid: None }),
                    ..DeleteParams::default()
                };
                let r = self.handle(Request::delete(&self.cm, Some(&key.0), &key.1, params));
                match self.model.get(&key).cloned() {
                    None => self.unchanged(op, &r, (404, "NotFound"), revision),
                    Some(s) if sent.as_ref().is_some_and(|rv| *rv != s.rv.to_string()) => {
                        self.unchanged(op, &r, (409, "Conflict"), revision);
                    }
                    Some(s) => {
                        assert!(
                            matches!(r, Ok(Response::Deleted { .. })),
                            "{op:?}: a ConfigMap goes at once: {r:?}"
                        );
                        self.written("DELETED", key, &r, s.value);
                    }
                }
            }
            Op::Get { ns, name } => {
                let key: Key = (NAMESPACES[ns].into(), NAMES[name].into());
                let r = self.handle(Request::get(&self.cm, Some(&key.0), &key.1, GetParams::default()));
                match self.model.get(&key) {
                    None => assert_eq!(err_of(&r), Some((404, "NotFound")), "{op:?}"),
                    Some(s) => {
                        let o = r.as_ref().ok().and_then(Response::object).expect("get answers the object");
                        assert_eq!(
                            (value_of(o), rv_of(o), o.metadata.uid.as_deref()),
                            (s.value, s.rv, Some(s.uid.as_str()))
                        );
                    }
                }
                assert_eq!(self.server.revision(), revision, "a read must not bump the revision");
            }
            Op::List { ns } => {
                let ns = ns.map(|i| NAMESPACES[i]);
                let r = self.handle(Request::list(&self.cm, ns, ListParams::default()));
                let Ok(Response::List(list)) = r else { panic!("{op:?}: {r:?}") };
                assert_eq!(
                    list.resource_version,
                    revision.to_string(),
                    "a list carries the current revision"
                );
                let expected: State = self
                    .model
                    .iter()
                    .filter(|(k, _)| ns.is_none_or(|n| k.0 == n))
                    .map(|(k, s)| (k.clone(), s.clone()))
                    .collect();
                assert_eq!(listed_state(&list.items), expected, "{op:?}");
                assert_eq!(self.server.revision(), revision, "a read must not bump the revision");
            }
        }
    }

    fn update(&mut self, op: &Op, key: Key, value: u8, rv: RvChoice) {
        let revision = self.server.revision();
        let sent = self.rv_for(rv, &key);
        let request = Request::update(
            &self.cm,
            Some(&key.0),
            &key.1,
            body(&key.0, &key.1, value, sent.clone()),
            PostParams::default(),
        );
        let r = self.handle(request);
        let Some(stored) = self.model.get(&key).cloned() else {
            // ConfigMaps are not created by an update (AllowCreateOnUpdate is false for them).
            return self.unchanged(op, &r, (404, "NotFound"), revision);
        };
        if sent.as_ref().is_some_and(|rv| *rv != stored.rv.to_string()) {
            return self.unchanged(op, &r, (409, "Conflict"), revision);
        }
        if stored.value == value {
            let o = r.as_ref().ok().and_then(Response::object).unwrap_or_else(|| panic!("{op:?}: {r:?}"));
            assert_eq!(rv_of(o), stored.rv, "{op:?}: a no-op update keeps the resourceVersion");
            assert_eq!(self.server.revision(), revision, "{op:?}: a no-op update must not bump the revision");
            return;
        }
        self.written("MODIFIED", key, &r, value);
    }

    /// The checks over the whole run, at every revision it reached: a list at a retained
    /// revision equals the model then and the replay of a watch up to it; a watch from it yields
    /// exactly the later changes (with a label selector, the selection's entries and exits); a
    /// compacted revision gets 410 Expired from both.
    fn check_history(&mut self) {
        let oldest = self.server.oldest_revision();
        let revisions: Vec<u64> = self.history.keys().copied().collect();
        let base =
            revisions.iter().copied().find(|r| *r >= oldest).expect("the current revision is retained");
        let base_state = self.history[&base].clone();
        let replayable = self.watch_from(base, None);
        for &r in &revisions {
            let params = ListParams {
                resource_version: Some(r.to_string()),
                version_match: Some(VersionMatch::Exact),
                ..ListParams::default()
            };
            let response = self.handle(Request::list(&self.cm, None, params));
            if r < oldest {
                assert_eq!(
                    err_of(&response),
                    Some((410, "Expired")),
                    "list at compacted {r} (oldest {oldest})"
                );
                let watch =
                    self.handle(Request::watch(&self.cm, None, &r.to_string(), WatchParams::default()));
                let Ok(Response::Watch(events)) = watch else {
                    panic!("watch from compacted {r}: {watch:?}")
                };
                assert!(
                    matches!(events.as_slice(), [WatchEvent::Error(e)] if e.code == 410 && e.reason == "Expired"),
                    "a watch from compacted {r} is one 410 ERROR event: {events:?}"
                );
                continue;
            }
            let Ok(Response::List(list)) = response else { panic!("list at {r}: {response:?}") };
            assert_eq!(list.resource_version, r.to_string());
            let listed = listed_state(&list.items);
            assert_eq!(listed, self.history[&r], "list at revision {r} equals the model then");
            let replayed = replay(&base_state, replayable.iter().filter(|c| c.rv <= r));
            assert_eq!(versions(&listed), versions(&replayed), "list at {r} equals the replayed watch");
            let after: Vec<Change> =
                self.changes.iter().filter(|l| l.change.rv > r).map(|l| l.change.clone()).collect();
            assert_eq!(
                self.watch_from(r, None),
                after,
                "a watch from {r} yields exactly the changes after it"
            );
            let selected_after: Vec<Change> =
                self.changes.iter().filter(|l| l.change.rv > r).filter_map(selected).collect();
            assert_eq!(
                self.watch_from(r, Some(SELECTOR)),
                selected_after,
                "a watch from {r} with {SELECTOR} yields the selection's changes"
            );
        }
    }

    fn watch_from(&mut self, rv: u64, labels: Option<&str>) -> Vec<Change> {
        let params = WatchParams { label_selector: labels.map(str::to_owned), ..WatchParams::default() };
        let response = self.handle(Request::watch(&self.cm, None, &rv.to_string(), params));
        let Ok(Response::Watch(events)) = response else { panic!("watch from {rv}: {response:?}") };
        events
            .iter()
            .filter_map(|e| {
                let (kind, o): (&'static str, &Arc<DynamicObject>) = match e {
                    WatchEvent::Added(o) => ("ADDED", o),
                    WatchEvent::Modified(o) => ("MODIFIED", o),
                    WatchEvent::Deleted(o) => ("DELETED", o),
                    WatchEvent::Bookmark(_) => return None,
                    WatchEvent::Error(s) => panic!("watch from {rv}: error {s:?}"),
                };
                Some(Change { kind, key: key_of(o), rv: rv_of(o), value: value_of(o) })
            })
            .collect()
    }
}

/// The model state a list shows; names must be unique per namespace.
fn listed_state(items: &[Arc<DynamicObject>]) -> State {
    let mut state = State::new();
    for o in items {
        let stored =
            Stored { value: value_of(o), rv: rv_of(o), uid: o.metadata.uid.clone().unwrap_or_default() };
        let key = key_of(o);
        assert!(state.insert(key.clone(), stored).is_none(), "{key:?} listed twice");
    }
    state
}

/// The state that a sequence of changes leaves from `base` (watch changes carry no uids here, so
/// new entries have none; compare through [`versions`]).
fn replay<'a>(base: &State, changes: impl Iterator<Item = &'a Change>) -> State {
    let mut state = base.clone();
    for c in changes {
        if c.kind == "DELETED" {
            state.remove(&c.key);
        } else {
            state.insert(c.key.clone(), Stored { value: c.value, rv: c.rv, uid: String::new() });
        }
    }
    state
}

/// A state without uids (which watch changes do not carry).
fn versions(state: &State) -> BTreeMap<Key, (u8, u64)> {
    state.iter().map(|(k, s)| (k.clone(), (s.value, s.rv))).collect()
}

/// Run a sequence with every per-request check; returns the transcript.
fn run(ops: &[Op], history_revisions_max: usize) -> String {
    let mut run = Run::new(history_revisions_max);
    for op in ops {
        run.apply(op);
    }
    run.check_history();
    run.transcript
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn random_request_sequences_match_the_reference_model_and_replay_byte_identically(
        ops in prop::collection::vec(arb_op(), 1..OPS_MAX),
        // Mostly a history longer than any sequence; sometimes one short enough to compact.
        history in prop_oneof![3 => Just(HISTORY_LONG), 1 => 1..HISTORY_SHORT_MAX],
    ) {
        let first = run(&ops, history);
        let second = run(&ops, history);
        prop_assert!(first == second, "the same sequence gave different responses");
    }
}
