//! Fuzzing (issue 16) with proptest: random valid and invalid requests, at two levels.
//!
//! - `ApiServer::handle` directly (no `catch_unwind` in between, so a panic fails the test):
//!   random verbs, kinds, namespaces, names (some invalid), bodies (random JSON, some of it
//!   object-shaped) and patches; after each request the model's invariants must hold: the
//!   revision never goes back, a failed request writes nothing, a write's answer carries a
//!   resourceVersion no newer than the revision, and a list's resourceVersion is the revision.
//! - `kube-sim serve` over loopback: random methods, paths (percent escapes, odd segments),
//!   headers and bodies as raw HTTP/1.1; every answer is a well-formed HTTP status line, and the
//!   server answers `/version` afterwards.
//!
//! CI runs a short sweep. `FUZZ_REQUESTS=1000000 cargo test --release -p model-apiserver-http
//! --test fuzz_requests -- --ignored --nocapture` runs the long one and prints its count.

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use kube_core::{
    ApiResource, DynamicObject, ObjectMeta,
    params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams},
};
use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};
use proptest::{prelude::*, test_runner::TestRunner};
use serde_json::{Value, json};

/// Requests per generated sequence.
const OPS_PER_CASE: usize = 25;
/// Sequences of the CI sweep of the model.
const MODEL_CASES: u32 = 200;
/// Requests of the CI sweep over HTTP.
const HTTP_CASES: u32 = 150;

fn kinds() -> Vec<(ApiResource, bool)> {
    use k8s_openapi::api::{apps::v1::Deployment, core::v1};
    vec![
        (ApiResource::erase::<v1::ConfigMap>(&()), true),
        (ApiResource::erase::<v1::Pod>(&()), true),
        (ApiResource::erase::<Deployment>(&()), true),
        (ApiResource::erase::<v1::Namespace>(&()), false),
        (ApiResource::erase::<v1::Secret>(&()), true),
    ]
}

const NAMESPACES: [&str; 3] = ["default", "kube-system", "missing"];
const NAMES: [&str; 5] = ["a", "b", "web", "Bad_Name", ""];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z0-9./-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("spec".to_owned()),
                    Just("data".to_owned()),
                    Just("metadata".to_owned()),
                    Just("status".to_owned()),
                    Just("replicas".to_owned()),
                    Just("labels".to_owned()),
                    Just("finalizers".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum Op {
    Get,
    List { labels: Option<String> },
    Create(Value),
    Update(Value),
    Merge(Value),
    JsonPatch(Value),
    Apply(Value),
    Delete { propagation: u8 },
    DeleteCollection,
    Watch { rv: String },
}

#[derive(Clone, Debug)]
struct Call {
    kind: usize,
    namespace: usize,
    name: usize,
    op: Op,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Get),
        prop::option::of("[a-z!=(), ]{0,12}").prop_map(|labels| Op::List { labels }),
        arb_json().prop_map(Op::Create),
        arb_json().prop_map(Op::Update),
        arb_json().prop_map(Op::Merge),
        arb_json().prop_map(Op::JsonPatch),
        arb_json().prop_map(Op::Apply),
        (0u8..4).prop_map(|propagation| Op::Delete { propagation }),
        Just(Op::DeleteCollection),
        prop_oneof![Just("0".to_owned()), Just(String::new()), "[0-9a-z]{1,4}"]
            .prop_map(|rv| Op::Watch { rv }),
    ]
}

fn arb_call() -> impl Strategy<Value = Call> {
    (0..kinds().len(), 0..NAMESPACES.len(), 0..NAMES.len(), arb_op())
        .prop_map(|(kind, namespace, name, op)| Call { kind, namespace, name, op })
}

/// An object from a random body: sometimes the body as the object's data, with the request's
/// name and kind (a plausible object), sometimes the body decoded as a whole (often invalid).
fn object(api: &ApiResource, name: &str, body: &Value) -> DynamicObject {
    if let Ok(object) = serde_json::from_value::<DynamicObject>(body.clone())
        && body.get("metadata").is_some()
    {
        return object;
    }
    let mut object = DynamicObject::new(name, api);
    object.metadata = ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() };
    object.data = body.clone();
    object
}

fn request(kinds: &[(ApiResource, bool)], call: &Call) -> Request {
    let (api, namespaced) = &kinds[call.kind];
    let ns = namespaced.then_some(NAMESPACES[call.namespace]);
    let name = NAMES[call.name];
    match &call.op {
        Op::Get => Request::get(api, ns, name, Default::default()),
        Op::List { labels } => {
            Request::list(api, ns, ListParams { label_selector: labels.clone(), ..ListParams::default() })
        }
        Op::Create(body) => Request::create(api, ns, object(api, name, body), PostParams::default()),
        Op::Update(body) => Request::update(api, ns, name, object(api, name, body), PostParams::default()),
        Op::Merge(body) => Request::patch(api, ns, name, Patch::Merge(body.clone()), PatchParams::default()),
        Op::JsonPatch(body) => match serde_json::from_value(body.clone()) {
            Ok(patch) => Request::patch(api, ns, name, Patch::Json(patch), PatchParams::default()),
            Err(_) => Request::patch(api, ns, name, Patch::Merge(body.clone()), PatchParams::default()),
        },
        Op::Apply(body) => {
            Request::patch(api, ns, name, Patch::Apply(body.clone()), PatchParams::apply("fuzz"))
        }
        Op::Delete { propagation } => {
            let mut params = DeleteParams::default();
            params.propagation_policy = match propagation {
                0 => None,
                1 => Some(kube_core::params::PropagationPolicy::Foreground),
                2 => Some(kube_core::params::PropagationPolicy::Orphan),
                _ => Some(kube_core::params::PropagationPolicy::Background),
            };
            Request::delete(api, ns, name, params)
        }
        Op::DeleteCollection => {
            Request::delete_collection(api, ns, ListParams::default(), DeleteParams::default())
        }
        Op::Watch { rv } => Request::watch(api, ns, rv, WatchParams::default()),
    }
}

fn rv_of(object: &DynamicObject) -> Option<u64> {
    object.metadata.resource_version.as_deref().and_then(|rv| rv.parse().ok())
}

/// Run one sequence against a fresh model, checking the invariants after each request.
fn run_sequence(calls: &[Call], kinds: &[(ApiResource, bool)]) -> Result<(), TestCaseError> {
    let mut ids = SeqIds::default();
    let now = jiff::Timestamp::from_second(1_700_000_000).unwrap();
    let mut server = ApiServer::new().with_default_namespaces(&mut Context::new(now, &mut ids));
    for (i, call) in calls.iter().enumerate() {
        let before = server.revision();
        let now = now + jiff::SignedDuration::from_secs(i64::try_from(i).unwrap_or(0));
        let is_write = !matches!(call.op, Op::Get | Op::List { .. } | Op::Watch { .. });
        let answer = server.handle(request(kinds, call), &mut Context::new(now, &mut ids));
        let after = server.revision();
        prop_assert!(after >= before, "the revision went back from {before} to {after} on {call:?}");
        match &answer {
            Err(status) => {
                prop_assert_eq!(after, before, "a failed request wrote: {:?} answered {:?}", call, status);
                prop_assert!((400..600).contains(&status.code), "status code {} for {call:?}", status.code);
            }
            Ok(Response::List(list)) if !is_write => {
                let rv: u64 = list.resource_version.parse().unwrap_or(u64::MAX);
                prop_assert!(rv <= after, "a list at {rv} is newer than the revision {after}");
            }
            Ok(answer) => {
                if let Some(object) = answer.object()
                    && let Some(rv) = rv_of(object)
                {
                    prop_assert!(
                        rv <= after,
                        "an answer at {rv} is newer than the revision {after}: {call:?}"
                    );
                }
                if !is_write {
                    prop_assert_eq!(after, before, "a read wrote: {:?}", call);
                }
            }
        }
    }
    Ok(())
}

fn model_runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() })
}

fn fuzz_model(cases: u32) -> u64 {
    let kinds = kinds();
    let mut runner = model_runner(cases);
    let strategy = prop::collection::vec(arb_call(), 1..=OPS_PER_CASE);
    let requests = std::cell::Cell::new(0u64);
    let outcome = runner.run(&strategy, |calls| {
        requests.set(requests.get() + calls.len() as u64);
        run_sequence(&calls, &kinds)
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    requests.get()
}

#[test]
fn random_valid_and_invalid_requests_never_panic_the_model_and_keep_its_invariants() {
    let requests = fuzz_model(MODEL_CASES);
    println!("fuzz: {requests} random requests to ApiServer::handle, no panic, invariants held");
    assert!(requests >= u64::from(MODEL_CASES));
}

/// The long run: `FUZZ_REQUESTS` requests (a million by default), printing the count.
#[test]
#[ignore = "a long run: about a million requests"]
fn a_million_random_requests_never_panic_the_model_and_keep_its_invariants() {
    let target: u64 = std::env::var("FUZZ_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let average = (OPS_PER_CASE as u64).div_ceil(2);
    let cases = u32::try_from(target / average).unwrap_or(u32::MAX);
    let requests = fuzz_model(cases);
    println!("fuzz: {requests} random requests to ApiServer::handle, no panic, invariants held");
}

fn arb_segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("api".to_owned()),
        Just("apis".to_owned()),
        Just("v1".to_owned()),
        Just("apps".to_owned()),
        Just("namespaces".to_owned()),
        Just("default".to_owned()),
        Just("configmaps".to_owned()),
        Just("deployments".to_owned()),
        Just("status".to_owned()),
        Just("scale".to_owned()),
        Just("version".to_owned()),
        Just("%".to_owned()),
        Just("%ff".to_owned()),
        Just("c%31".to_owned()),
        "[a-zA-Z0-9%._~-]{0,8}",
    ]
}

#[derive(Clone, Debug)]
struct HttpCase {
    method: &'static str,
    path: Vec<String>,
    query: String,
    content_type: &'static str,
    accept: &'static str,
    body: Vec<u8>,
}

fn arb_http() -> impl Strategy<Value = HttpCase> {
    let methods =
        prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"]);
    let types = prop::sample::select(vec![
        "",
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
        "application/x-www-form-urlencoded",
    ]);
    let accepts = prop::sample::select(vec![
        "",
        "application/json",
        "text/html",
        "*/*",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    ]);
    let body = prop_oneof![
        arb_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        prop::collection::vec(any::<u8>(), 0..64),
        Just(b"k8s\x00\x0a\x02\x0a\x00".to_vec()),
        Just(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n".to_vec()),
    ];
    let query = prop_oneof![
        Just(String::new()),
        Just("watch=true&timeoutSeconds=1".to_owned()),
        Just("limit=1".to_owned()),
        Just("labelSelector=a%20in%20(".to_owned()),
        Just("dryRun=All".to_owned()),
        "[a-zA-Z=&%0-9]{0,16}",
    ];
    (methods, prop::collection::vec(arb_segment(), 0..7), query, types, accepts, body).prop_map(
        |(method, path, query, content_type, accept, body)| HttpCase {
            method,
            path,
            query,
            content_type,
            accept,
            body,
        },
    )
}

fn send(addr: std::net::SocketAddr, case: &HttpCase) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut head = format!(
        "{} /{}{}{} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        case.method,
        case.path.join("/"),
        if case.query.is_empty() { "" } else { "?" },
        case.query,
        case.body.len()
    );
    if !case.content_type.is_empty() {
        head.push_str(&format!("Content-Type: {}\r\n", case.content_type));
    }
    if !case.accept.is_empty() {
        head.push_str(&format!("Accept: {}\r\n", case.accept));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&case.body).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw).into_owned()
}

#[test]
fn random_http_requests_each_get_an_http_answer_and_the_server_keeps_answering() {
    let served = model_apiserver_http::spawn(model_apiserver_http::ServeConfig::default()).unwrap();
    let addr = served.addr();
    let mut runner = model_runner(HTTP_CASES);
    let outcome = runner.run(&arb_http(), |case| {
        let answer = send(addr, &case);
        let code: u16 = answer.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        prop_assert!(
            answer.starts_with("HTTP/1.1 ") && (200..600).contains(&code),
            "{case:?} got {answer:?}"
        );
        prop_assert!(code != 500, "a 500 (a bug of ours) for {case:?}: {answer}");
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    let version = send(
        addr,
        &HttpCase {
            method: "GET",
            path: vec!["version".into()],
            query: String::new(),
            content_type: "",
            accept: "",
            body: Vec::new(),
        },
    );
    assert!(version.starts_with("HTTP/1.1 200"), "{version}");
}
