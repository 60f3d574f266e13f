//! Watch over HTTP: newline-delimited JSON events, streamed as the model produces them.
//!
//! The model's watch is pull-based (the events after a revision). A stream polls it after every
//! write (a [`tokio::sync::Notify`] from [`Live`]) and at least every [`POLL_INTERVAL`], and
//! resumes from the revision it last read. A compacted revision is an ERROR event carrying
//! 410 Expired in a 200 answer, after which the stream closes, as kube-apiserver does.
//!
//! A stream serializes an event only when the client has room for it: each queued event holds
//! its size in a per-stream byte budget ([`crate::Limits::watch_buffer_bytes_max`]) until the
//! HTTP connection takes it, so a client that never reads holds at most the budget (plus the
//! socket's buffers), however large the state it watches. A client that makes no room within
//! [`crate::Limits::watch_slow_timeout`] is closed, as kube-apiserver's cacher closes a slow
//! watcher, and relists.

use std::{convert::Infallible, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use kube_core::{ApiResource, DynamicObject, Status, WatchEvent, params::WatchParams};
use model_apiserver::{Request, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{
    Limits,
    http::{self, Reply},
    live::Live,
    table,
};

/// One queued chunk and its share of the stream's byte budget, given back when the connection
/// takes the chunk.
type Queued = (Bytes, OwnedSemaphorePermit);

/// How often a stream polls when no write woke it (writes from outside `serve` do not notify).
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// A stream without `timeoutSeconds` closes after this long (kube-apiserver picks 30 to 60 min).
pub const WATCH_TIMEOUT_DEFAULT: Duration = Duration::from_secs(1800);
/// Events queued for a slow client before the stream waits for it (besides the byte budget).
pub const WATCH_BUFFER_EVENTS_MAX: usize = 1024;
/// With `allowWatchBookmarks`, a quiet stream gets a BOOKMARK this often.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);

/// The annotation of the bookmark that ends the initial events of `sendInitialEvents`.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A watch asked for as a Table (`kubectl get -w`): each event's object is a Table of one row.
pub struct TableView {
    /// The type watched.
    pub ty: Arc<model_apiserver::ResourceType>,
    /// Its CustomResourceDefinition when it is a custom resource (read once, at the start).
    pub crd: Option<Arc<DynamicObject>>,
    /// What each row's `object` is.
    pub include: table::Include,
}

/// One poll: the events, and the revision to resume from.
struct Poll {
    events: Vec<WatchEvent<Arc<DynamicObject>>>,
    revision: u64,
}

/// Start a watch; a bad request (selector, resourceVersion) is an error reply, not a stream.
pub fn start(
    live: Live,
    api: ApiResource,
    namespace: Option<String>,
    rv: String,
    params: WatchParams,
    table: Option<TableView>,
    limits: &Limits,
) -> Reply {
    let first = match poll(&live, &api, namespace.as_deref(), &rv, &params) {
        Ok(first) => first,
        Err(status) => return http::status(&status),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Queued>(WATCH_BUFFER_EVENTS_MAX);
    let budget_bytes = limits.watch_buffer_bytes_max.clamp(1, Semaphore::MAX_PERMITS);
    let tx = Sender {
        tx,
        budget: std::sync::Arc::new(Semaphore::new(budget_bytes)),
        budget_bytes,
        slow_timeout: limits.watch_slow_timeout,
    };
    let timeout = params.timeout.map_or(WATCH_TIMEOUT_DEFAULT, |s| Duration::from_secs(u64::from(s)));
    let initial_end = params.send_initial_events && matches!(rv.as_str(), "" | "0");
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let headers_sent = AtomicBool::new(false);
        let stream = Stream { live, api, namespace, params, tx, table, headers_sent };
        stream.run(first, initial_end, deadline).await;
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        // The permit drops here, as the connection takes the chunk: the budget is freed.
        rx.recv().await.map(|(chunk, _permit)| (Ok::<_, Infallible>(Frame::data(chunk)), rx))
    });
    http::with_type(200, StreamBody::new(chunks).boxed_unsync(), "application/json")
}

/// The sending half of a stream, with its byte budget.
struct Sender {
    tx: tokio::sync::mpsc::Sender<Queued>,
    budget: std::sync::Arc<Semaphore>,
    budget_bytes: usize,
    slow_timeout: Duration,
}

impl Sender {
    /// Queue one chunk once the budget has room for it (a chunk larger than the whole budget
    /// waits for all of it); false when the client is gone or too slow, which ends the stream.
    async fn send(&self, chunk: Bytes) -> bool {
        let share = u32::try_from(chunk.len().clamp(1, self.budget_bytes)).unwrap_or(u32::MAX);
        let room = self.budget.clone().acquire_many_owned(share);
        let Ok(Ok(permit)) = tokio::time::timeout(self.slow_timeout, room).await else { return false };
        self.tx.send((chunk, permit)).await.is_ok()
    }

    fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

struct Stream {
    live: Live,
    api: ApiResource,
    namespace: Option<String>,
    params: WatchParams,
    tx: Sender,
    table: Option<TableView>,
    /// Whether a Table event has carried the column definitions (only the first one does,
    /// as kube-apiserver sets `NoHeaders` after it).
    headers_sent: AtomicBool,
}

impl Stream {
    async fn run(self, first: Poll, initial_end: bool, deadline: tokio::time::Instant) {
        let mut revision = first.revision;
        if !self.send(first.events).await {
            return;
        }
        if initial_end && !self.send_bookmark(revision, true).await {
            return;
        }
        let mut last_sent = tokio::time::Instant::now();
        loop {
            let written = self.live.written.notified();
            tokio::select! {
                biased;
                _ = tokio::time::sleep_until(deadline) => return,
                _ = written => {}
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
            if self.tx.is_closed() {
                return;
            }
            let next = match poll(
                &self.live,
                &self.api,
                self.namespace.as_deref(),
                &revision.to_string(),
                &self.params,
            ) {
                Ok(next) => next,
                Err(status) => {
                    let _ = self.tx.send(line("ERROR", http::status_json(&status))).await;
                    return;
                }
            };
            revision = next.revision;
            let quiet = next.events.is_empty();
            if !self.send(next.events).await {
                return;
            }
            if quiet && self.params.bookmarks && last_sent.elapsed() >= BOOKMARK_INTERVAL {
                if !self.send_bookmark(revision, false).await {
                    return;
                }
                last_sent = tokio::time::Instant::now();
            } else if !quiet {
                last_sent = tokio::time::Instant::now();
            }
        }
    }

    /// Send events; false when the client is gone or an ERROR ended the stream.
    async fn send(&self, events: Vec<WatchEvent<Arc<DynamicObject>>>) -> bool {
        for event in events {
            let (kind, object, last) = match event {
                WatchEvent::Added(o) => ("ADDED", self.to_value(o), false),
                WatchEvent::Modified(o) => ("MODIFIED", self.to_value(o), false),
                WatchEvent::Deleted(o) => ("DELETED", self.to_value(o), false),
                // Bookmarks are sent by the stream itself, at its own pace.
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(status) => ("ERROR", http::status_json(&status), true),
            };
            if !self.tx.send(line(kind, object)).await || last {
                return false;
            }
        }
        true
    }

    /// An event's object as sent: itself, or a Table of its one row.
    fn to_value(&self, object: Arc<DynamicObject>) -> Value {
        let Some(view) = &self.table else { return to_value(&object) };
        let headers = !self.headers_sent.swap(true, Ordering::Relaxed);
        let options =
            table::Options { ty: &view.ty, crd: view.crd.as_deref(), include: view.include, headers };
        let metadata = json!({"resourceVersion": object.metadata.resource_version});
        table::table(&options, std::slice::from_ref(&object), metadata, self.live.now())
    }

    async fn send_bookmark(&self, revision: u64, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        let object = json!({"apiVersion": self.api.api_version, "kind": self.api.kind, "metadata": metadata});
        self.tx.send(line("BOOKMARK", object)).await
    }
}

/// The model's answer from `rv`, and the revision it reached (read under the same lock).
fn poll(
    live: &Live,
    api: &ApiResource,
    namespace: Option<&str>,
    rv: &str,
    params: &WatchParams,
) -> Result<Poll, Status> {
    let params = WatchParams { bookmarks: false, ..params.clone() };
    let mut model = live.lock();
    let answer = model.handle(Request::watch(api, namespace, rv, params))?;
    let revision = model.server.revision();
    let Response::Watch(events) = answer else {
        return Err(model_apiserver::errors::internal_error(
            "the model answered a watch with something else",
        ));
    };
    Ok(Poll { events, revision })
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}
