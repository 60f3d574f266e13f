//! The same request sequence with the same id source gives byte-identical responses.

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube_core::{DynamicObject, WatchEvent};
use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};
use serde_json::json;

/// Run a fixed mix of every verb and serialize every answer.
fn transcript() -> String {
    let mut ids = SeqIds::default();
    let mut now = jiff::Timestamp::from_second(T0_SECONDS).unwrap();
    let mut server = ApiServer::new().with_default_namespaces(&mut Context::new(now, &mut ids));
    let mut requests = vec![
        Request::create(
            &cm(),
            Some("default"),
            obj(json!({"metadata": {"generateName": "g-"}})),
            PostParams::default(),
        ),
        Request::create(
            &cm(),
            Some("default"),
            obj(config_map("a", json!({"k": "1"}))),
            PostParams::default(),
        ),
        Request::patch(
            &cm(),
            Some("default"),
            "a",
            Patch::Merge(json!({"data": {"k": "2"}})),
            PatchParams::default(),
        ),
        Request::create(
            &pods(),
            Some("default"),
            obj(
                json!({"metadata": {"name": "p", "finalizers": ["example.com/x"]}, "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i:1"}]}}),
            ),
            PostParams::default(),
        ),
        Request::delete(&pods(), Some("default"), "p", DeleteParams::default()),
        Request::delete(&cm(), Some("default"), "a", DeleteParams::default()),
        Request::list(&cm(), None, ListParams::default().limit(1)),
        Request::watch(&cm(), None, "1", WatchParams::default()),
        Request::watch(&pods(), None, "0", WatchParams::default()),
    ];
    let mut out = String::new();
    for r in requests.drain(..) {
        now = jiff::Timestamp::from_second(now.as_second() + 7).unwrap();
        let answer = server.handle(r, &mut Context::new(now, &mut ids));
        let line = match answer {
            Ok(Response::Object(o)) => serde_json::to_string(&*o).unwrap(),
            Ok(Response::Deleted { status, object } | Response::Completed { status, object }) => {
                format!(
                    "{} {}",
                    serde_json::to_string(&status).unwrap(),
                    serde_json::to_string(&*object).unwrap()
                )
            }
            Ok(Response::List(l)) => format!("{l:?}"),
            Ok(Response::Watch(events)) => {
                let events: Vec<WatchEvent<&DynamicObject>> = events
                    .iter()
                    .map(|e| match e {
                        WatchEvent::Added(o) => WatchEvent::Added(&**o),
                        WatchEvent::Modified(o) => WatchEvent::Modified(&**o),
                        WatchEvent::Deleted(o) => WatchEvent::Deleted(&**o),
                        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b.clone()),
                        WatchEvent::Error(s) => WatchEvent::Error(s.clone()),
                    })
                    .collect();
                serde_json::to_string(&events).unwrap()
            }
            Err(status) => serde_json::to_string(&status).unwrap(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn the_same_requests_with_the_same_ids_give_byte_identical_responses() {
    let first = transcript();
    assert_eq!(first, transcript());
    assert_eq!(first.lines().count(), 9);
    assert!(first.contains("\"name\":\"g-"), "{first}");
}
