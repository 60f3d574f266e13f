//! The transport between clients and the model API servers: the one place every API call passes.
//!
//! A call draws a latency from the decision stream `latency`, waits it in virtual time, then
//! applies the request to its cluster's server at the virtual now, records request and answer in
//! the trace, wakes the cluster's watchers if the revision moved, and checks the safety
//! properties after a write.
//!
//! Faults act here: a [`FaultHook`] is consulted before the request reaches the server (it may
//! answer in its place) and after (it may replace the answer, as a lost response does). The hook
//! installed now does nothing.
//!
//! Watches are pulled: an informer waits (without a timer) for its cluster's revision to move, then
//! asks for every event since the revision it has seen ([`poll_watch`]).

// The answers keep the model server's own `Result<Response, Status>` shape throughout; boxing the
// Status here would only move the allocation.
#![allow(clippy::result_large_err)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use kube_core::Status;
use model_apiserver::{Request, Response, Revision};

use crate::cluster::WatchScope;
use crate::decision::StreamIds;
use crate::trace::{EventRef, TraceEvent};
use crate::world::{World, WorldState};

/// The bounds of the latency of one API call, in milliseconds (stream `latency`).
pub const LATENCY_MS_MIN: u64 = 1;
/// See [`LATENCY_MS_MIN`].
pub const LATENCY_MS_MAX: u64 = 10;
const _: () = assert!(LATENCY_MS_MIN <= LATENCY_MS_MAX && LATENCY_MS_MIN > 0);

pub use crate::faults::hook::{CallInfo, Delivery, DeliveryInfo, FaultHook, NoFaults};

/// `resource[/namespace][/name]`, as the trace names a request's target.
fn target(request: &Request) -> String {
    use model_apiserver::Verb;
    let name = match &request.verb {
        Verb::Get { name, .. }
        | Verb::Update { name, .. }
        | Verb::Patch { name, .. }
        | Verb::Delete { name, .. } => Some(name.as_str()),
        Verb::Create { object, .. } => object.metadata.name.as_deref(),
        Verb::CreateSubresource { name, subresource, .. } => {
            // Rare: named in full (`pods/default/web-0/eviction`) rather than sized.
            let ns = request.namespace.as_deref().map(|ns| format!("/{ns}")).unwrap_or_default();
            return format!("{}{ns}/{name}/{}", request.resource.plural, subresource.name());
        }
        Verb::List { .. } | Verb::DeleteCollection { .. } | Verb::Watch { .. } => None,
    };
    // Sized once: every API call names its target.
    let namespace = request.namespace.as_deref();
    let len = request.resource.plural.len()
        + namespace.map_or(0, |ns| ns.len() + 1)
        + name.map_or(0, |name| name.len() + 1);
    let mut target = String::with_capacity(len);
    target.push_str(&request.resource.plural);
    if let Some(ns) = namespace {
        target.push('/');
        target.push_str(ns);
    }
    if let Some(name) = name {
        target.push('/');
        target.push_str(name);
    }
    target
}

/// Send `request` from `node` to `cluster`, and wait for the answer.
pub(crate) async fn call(
    world: &World,
    cluster: &Arc<str>,
    node: &Arc<str>,
    request: Request,
) -> Result<Response, Status> {
    if world.with(|w| w.injector().is_dying(node)) {
        // A crash fired on this node: it is about to be killed, and no new call leaves it.
        return std::future::pending().await;
    }
    let request = request.with_user(node.clone());
    let target = target(&request);
    let (call, latency) = world.with(|w| {
        let call = w.recorder().next_call();
        w.recorder().stats.api_calls += 1;
        w.profile().note_call(node, request.verb_name(), &request.resource.plural);
        w.trace_ref(node, EventRef::ApiRequest { call, verb: request.verb_name(), target: &target });
        let latency = w.decisions().stream("latency").duration_ms(LATENCY_MS_MIN, LATENCY_MS_MAX);
        (call, latency)
    });
    tracing::trace!(call, verb = request.verb_name(), %target, "api request");
    madsim::time::sleep(latency).await;
    let result = world.with(|w| {
        let info = CallInfo {
            call,
            node,
            cluster,
            verb: request.verb_name(),
            is_write: request.is_write(),
            target: &target,
            elapsed: w.elapsed(),
        };
        apply(w, cluster, node, &info, request)
    });
    if world.with(|w| w.injector().is_dying(node)) {
        // A crash fired on (or during) this call: the caller never sees the answer.
        return std::future::pending().await;
    }
    if let Err(status) = &result {
        tracing::debug!(call, code = status.code, reason = %status.reason, %target, "api error");
    }
    result
}

/// Apply one request to its server, under the world lock, with the fault hook around it.
fn apply(
    w: &mut WorldState,
    cluster: &Arc<str>,
    node: &Arc<str>,
    info: &CallInfo<'_>,
    request: Request,
) -> Result<Response, Status> {
    let injected = crate::faults::injector::before_call(&mut w.fault_ctx(), info, &request);
    let mut result = match injected.or_else(|| w.hook().before_call(info, &request)) {
        Some(status) => {
            let description = format!(
                "call {} {} {}: answered {} {}",
                info.call, info.verb, info.target, status.code, status.reason
            );
            w.trace(node, TraceEvent::Fault { description });
            Err(status)
        }
        None => handle_on_server(w, cluster, request),
    };
    w.hook().after_call(info, &mut result);
    crate::faults::injector::after_call(&mut w.fault_ctx(), info, &mut result);
    // A watch answer's version is its count of events, the only one to format.
    let count;
    let traced = match &result {
        Ok(
            Response::Object(o) | Response::Deleted { object: o, .. } | Response::Completed { object: o, .. },
        ) => Ok(o.metadata.resource_version.as_deref().unwrap_or_default()),
        Ok(Response::List(list)) => Ok(list.resource_version.as_str()),
        Ok(Response::Watch(events)) => {
            count = events.len().to_string();
            Ok(count.as_str())
        }
        Err(status) => Err((status.code, status.reason.as_str())),
    };
    w.trace_ref(node, EventRef::ApiResponse { call: info.call, result: traced });
    result
}

/// Hand a request to the cluster's server at the virtual now; if it changed the state, count
/// creations and deletions, wake watchers and check safety properties.
fn handle_on_server(w: &mut WorldState, cluster: &Arc<str>, request: Request) -> Result<Response, Status> {
    if crate::world::live::is_live(w, cluster) {
        return crate::world::live::handle(w, cluster, request);
    }
    let (now, at) = (w.now(), w.elapsed());
    let (clusters, decisions) = w.clusters_and_decisions();
    let Some(state) = clusters.get_mut(cluster) else {
        return Err(model_apiserver::errors::internal_error(&format!("no cluster named {cluster}")));
    };
    let before = state.server.revision();
    // Lease renewals (leader election) are a heartbeat, not progress: they never end.
    let heartbeat = request.resource.group == "coordination.k8s.io";
    let mut ids = StreamIds(decisions.stream("ids"));
    let mut ctx = model_apiserver::Context::new(now, &mut ids);
    let result = state.server.handle(request, &mut ctx);
    if state.server.revision() != before {
        state.revision_moved(before, at);
        w.wrote(cluster, heartbeat);
    }
    result
}

/// Ask `cluster`, without latency, for the watch events after `request`'s revision.
/// Returns the answer and the server's revision at that moment: a watcher that received everything
/// may continue from there (a bookmark, in effect).
pub(crate) fn poll_watch(
    world: &World,
    cluster: &Arc<str>,
    request: Request,
) -> (Result<Response, Status>, Revision) {
    world.with(|w| {
        if crate::world::live::is_live(w, cluster) {
            return crate::world::live::poll_watch(w, cluster, request);
        }
        let now = w.now();
        let (clusters, decisions) = w.clusters_and_decisions();
        let Some(state) = clusters.get_mut(cluster) else {
            let status = model_apiserver::errors::internal_error(&format!("no cluster named {}", cluster));
            return (Err(status), 0);
        };
        let mut ids = StreamIds(decisions.stream("ids"));
        let mut ctx = model_apiserver::Context::new(now, &mut ids);
        let revision = state.server.revision();
        (state.server.handle(request, &mut ctx), revision)
    })
}

/// Resolves once a write into `scope` (`None`: any write) moved `cluster`'s revision above
/// `revision`, to the revision a watch may resume from: `revision`, or, for a watcher that was
/// parked, the revision just before the write that woke it (nothing in its scope changed in
/// between). Parks without a timer, so that a world where nothing can happen is a deadlock
/// madsim detects. A write to another type or namespace never wakes it.
pub(crate) struct RevisionAbove {
    pub(crate) world: World,
    pub(crate) cluster: Arc<str>,
    pub(crate) revision: Revision,
    pub(crate) scope: Option<WatchScope>,
    /// Its place among the cluster's parked waiters, once parked.
    pub(crate) waiter: Option<u64>,
}

impl RevisionAbove {
    /// Stop waiting (a watch that timed out): leave the cluster's parked waiters, so that a later
    /// write wakes nothing for it.
    pub(crate) fn cancel(mut self) {
        let Some(id) = self.waiter.take() else { return };
        self.world.with(|w| {
            if let Some(state) = w.clusters_mut().get_mut(&self.cluster) {
                state.unpark(id);
            }
        });
    }
}

impl Future for RevisionAbove {
    type Output = Revision;
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Revision> {
        let this = &mut *self;
        this.world.with(|w| {
            if crate::world::live::is_live(w, &this.cluster) {
                return crate::world::live::poll_revision_above(w, &this.cluster, this.revision, cx)
                    .map(|()| this.revision);
            }
            let Some(state) = w.clusters_mut().get_mut(&this.cluster) else {
                return Poll::Ready(this.revision);
            };
            if let Some(id) = this.waiter
                && let Some(before) = state.take_woken(id)
            {
                this.waiter = None;
                return Poll::Ready(before.max(this.revision));
            }
            if state.scope_revision(this.scope.as_ref()) > this.revision {
                if let Some(id) = this.waiter.take() {
                    state.unpark(id);
                }
                return Poll::Ready(this.revision);
            }
            this.waiter = Some(state.park(this.waiter, this.scope.as_ref(), cx.waker()));
            Poll::Pending
        })
    }
}

/// A pause between retries of a failed list or watch.
pub(crate) const RETRY_BACKOFF: Duration = Duration::from_millis(500);
