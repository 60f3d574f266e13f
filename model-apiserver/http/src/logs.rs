//! `pods/log`: `GET /api/v1/namespaces/{ns}/pods/{name}/log`, what `kubectl logs` reads.
//!
//! kube-sim runs no container processes, so each container's log is synthetic: a few lines that
//! say when the container instance started, from which image, when its Pod's deletion stopped it
//! and how it exited. The log lives in the Pod itself: it is rendered from the container statuses
//! the kubelet-lite writes (`state`, `lastState`, `restartCount`, `containerID`, the start and
//! finish times, the image), so it is a pure function of the stored Pod. It is the same on every
//! replay of a seed and in `kube-sim serve --replay`, it takes no storage of its own, and it is
//! bounded: at most [`LINES_PER_INSTANCE_MAX`] lines per instance, two instances per container
//! (the current one and, after a restart, the previous one, as the kubelet keeps them).
//!
//! The answers follow kube-apiserver (`pkg/registry/core/pod/rest/log.go` and `LogLocation`) and
//! the kubelet (`validateContainerLogStatus`):
//! - the options are validated first (`ValidatePodLogOptions`): 422 `PodLogOptions "web" is
//!   invalid` for a negative `tailLines`, a `limitBytes` or `sinceSeconds` below 1, both
//!   `sinceTime` and `sinceSeconds`, or an unknown `stream`; a malformed number is 400;
//! - a missing Pod is 404; no `container` for a Pod of several containers, or a container the
//!   Pod does not have, is 400 with the apiserver's message;
//! - a Pod bound to no node answers 200 with an empty body (the apiserver has no kubelet to
//!   ask), which is also every Pod's answer without `--with-builtins`;
//! - the kubelet's refusals are 400 with its message: `previous terminated container "web" in pod
//!   "p" not found`, `container "web" in pod "p" is waiting to start: ContainerCreating`, ...;
//! - `follow` streams until the container instance ends (it exits, restarts, or its Pod is gone)
//!   or the client leaves; `tailLines`, `limitBytes`, `timestamps`, `sinceSeconds` and
//!   `sinceTime` apply as the kubelet applies them.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube_core::Status;
use model_apiserver::pod_logs::{
    Instance, LINES_PER_INSTANCE_MAX, LogOptions, container_of, instance_of, render, selected, within_limit,
};
use model_apiserver::{Request, ResourceType, errors};

use super::{
    http::{self, Reply},
    live::Live,
    query::Query,
};

/// How often a followed log looks at its Pod when no write wakes it.
pub const FOLLOW_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Whether `plural` of `group` has a `log` subresource: Pods.
pub fn serves(group: &str, plural: &str) -> bool {
    group.is_empty() && plural == "pods"
}

/// `PodLogOptions`, decoded from the query.
/// Decode the options; a malformed value is 400 BadRequest naming the parameter.
pub fn parse(query: &Query) -> Result<LogOptions, Status> {
    let int = |key: &str| -> Result<Option<i64>, Status> {
        query
            .get(key)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    errors::bad_request(&format!(
                        "invalid value {v:?} for query parameter {key:?}: not an integer"
                    ))
                })
            })
            .transpose()
    };
    let since_time = query
        .get("sinceTime")
        .map(|v| {
            v.parse::<Timestamp>().map_err(|e| {
                errors::bad_request(&format!("invalid value {v:?} for query parameter \"sinceTime\": {e}"))
            })
        })
        .transpose()?;
    Ok(LogOptions {
        container: query.get("container").map(str::to_owned),
        follow: query.flag("follow")?,
        previous: query.flag("previous")?,
        timestamps: query.flag("timestamps")?,
        tail_lines: int("tailLines")?,
        limit_bytes: int("limitBytes")?,
        since_seconds: int("sinceSeconds")?,
        since_time,
        stream: query.get("stream").map(str::to_owned),
    })
}

/// The Pod, typed; 404 when it is absent.
fn pod(live: &Live, ty: &Arc<ResourceType>, namespace: &str, name: &str) -> Result<Pod, Status> {
    let answer = live.handle(Request::get(&ty.api, Some(namespace), name, Default::default()))?;
    let object = answer
        .object()
        .ok_or_else(|| errors::internal_error("the model answered a get without an object"))?;
    serde_json::to_value(&**object)
        .and_then(serde_json::from_value)
        .map_err(|e| errors::internal_error(&format!("the stored Pod does not decode: {e}")))
}

/// Serve `GET .../pods/{name}/log`.
pub fn serve(
    live: &Live,
    ty: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    query: &Query,
) -> Result<Reply, Status> {
    let options = parse(query)?;
    options.validate(name)?;
    let pod = pod(live, ty, namespace, name)?;
    let container = container_of(&pod, name, options.container.as_deref())?;
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
    if node.is_empty() {
        // No node, no kubelet to ask: the apiserver streams nothing.
        return Ok(text(http::full(Bytes::new())));
    }
    let instance = instance_of(&pod, &container, options.previous).map_err(|m| errors::bad_request(&m))?;
    let now = Timestamp::now();
    let mut budget = options.limit_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let lines = selected(instance.lines(), &options, now);
    let first: String = lines.iter().map(|l| render(l, options.timestamps)).collect();
    let first = within_limit(first, &mut budget);
    let following = options.follow && instance.exit.is_none() && !options.previous && budget != Some(0);
    if !following {
        return Ok(text(http::full(first)));
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(LINES_PER_INSTANCE_MAX * 2);
    let follow = Follow {
        live: live.clone(),
        ty: ty.clone(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: pod.metadata.uid.clone(),
        container,
        restart: instance.restart,
        sent: instance.lines().len(),
        options,
        budget,
    };
    tokio::spawn(follow.run(tx, Bytes::from(first)));
    Ok(text(http::streamed(rx)))
}

fn text(body: http::Body) -> Reply {
    http::with_type(200, body, "text/plain")
}

/// A followed log: the lines its instance gains, until it ends.
struct Follow {
    live: Live,
    ty: Arc<ResourceType>,
    namespace: String,
    name: String,
    uid: Option<String>,
    container: String,
    /// The followed instance, by its restart count.
    restart: i32,
    /// How many of its lines exist already (sent, or left out by the options).
    sent: usize,
    options: LogOptions,
    budget: Option<usize>,
}

impl Follow {
    async fn run(mut self, tx: tokio::sync::mpsc::Sender<Bytes>, first: Bytes) {
        if !first.is_empty() && tx.send(first).await.is_err() {
            return;
        }
        loop {
            let written = self.live.written.notified();
            tokio::select! {
                biased;
                () = tx.closed() => return,
                () = written => {}
                () = tokio::time::sleep(FOLLOW_POLL_INTERVAL) => {}
            }
            let Some(instance) = self.followed() else { return };
            let lines = instance.lines();
            let new: String =
                lines.iter().skip(self.sent).map(|l| render(l, self.options.timestamps)).collect();
            self.sent = lines.len();
            let new = within_limit(new, &mut self.budget);
            if !new.is_empty() && tx.send(Bytes::from(new)).await.is_err() {
                return;
            }
            if instance.exit.is_some() || self.budget == Some(0) {
                return;
            }
        }
    }

    /// The followed instance now; `None` once it is gone (its Pod deleted or replaced).
    fn followed(&self) -> Option<Instance> {
        let pod = pod(&self.live, &self.ty, &self.namespace, &self.name).ok()?;
        if pod.metadata.uid != self.uid {
            return None;
        }
        [false, true]
            .into_iter()
            .filter_map(|previous| instance_of(&pod, &self.container, previous).ok())
            .find(|i| i.restart == self.restart)
    }
}
