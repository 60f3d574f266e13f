//! A Pod's container logs (`pods/log`), as kube-apiserver and the kubelet answer them, shared by
//! `kube-sim serve` (`kubectl logs`) and `sim::Api<Pod>::logs`.
//!
//! kube-sim runs no container processes, so each container's log is synthetic: a few lines that
//! say when the container instance started, from which image, when its Pod's deletion stopped it
//! and how it exited. The log lives in the Pod itself: it is rendered from the container statuses
//! the kubelet-lite writes (`state`, `lastState`, `restartCount`, `containerID`, the start and
//! finish times, the image), so it is a pure function of the stored Pod: the same on every replay
//! of a seed, with no storage of its own, and bounded: at most [`LINES_PER_INSTANCE_MAX`] lines
//! per instance, two instances per container (the current one and, after a restart, the
//! previous one, as the kubelet keeps them).
//!
//! The answers follow kube-apiserver (`pkg/registry/core/pod/rest/log.go` and `LogLocation`) and
//! the kubelet (`validateContainerLogStatus`): [`LogOptions::validate`] is
//! `ValidatePodLogOptions`, [`container_of`] picks the container as `LogLocation` does, and
//! [`instance_of`] refuses with the kubelet's words. [`read`] is a whole, unfollowed answer.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};
use kube_core::Status;

use crate::errors;

/// The most lines one container instance's log has.
pub const LINES_PER_INSTANCE_MAX: usize = 4;

/// `PodLogOptions`: what a request asks of a container's log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogOptions {
    /// `container`.
    pub container: Option<String>,
    /// `follow`.
    pub follow: bool,
    /// `previous`.
    pub previous: bool,
    /// `timestamps`.
    pub timestamps: bool,
    /// `tailLines`.
    pub tail_lines: Option<i64>,
    /// `limitBytes`.
    pub limit_bytes: Option<i64>,
    /// `sinceSeconds`.
    pub since_seconds: Option<i64>,
    /// `sinceTime` (RFC 3339).
    pub since_time: Option<Timestamp>,
    /// `stream`: `All`, `Stdout` or `Stderr`.
    pub stream: Option<String>,
}

impl LogOptions {
    /// `ValidatePodLogOptions`: 422 `PodLogOptions "{pod}" is invalid` with every problem.
    pub fn validate(&self, pod: &str) -> Result<(), Status> {
        let mut causes = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            causes.push(invalid("tailLines", n, "must be greater than or equal to 0"));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            causes.push(invalid("limitBytes", n, "must be greater than 0"));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => causes.push(errors::cause(
                "FieldValueForbidden",
                "",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => causes.push(invalid("sinceSeconds", n, "must be greater than 0")),
            _ => {}
        }
        if let Some(stream) = &self.stream {
            if !matches!(stream.as_str(), "All" | "Stdout" | "Stderr") {
                causes.push(errors::cause(
                    "FieldValueNotSupported",
                    "stream",
                    format!(
                        "Unsupported value: {stream:?}: supported values: \"All\", \"Stderr\", \"Stdout\""
                    ),
                ));
            }
            if stream != "All" && self.tail_lines.is_some() {
                causes.push(errors::cause(
                    "FieldValueForbidden",
                    "",
                    "Forbidden: `tailLines` and specific `stream` are mutually exclusive for now",
                ));
            }
        }
        if causes.is_empty() { Ok(()) } else { Err(errors::invalid("", "PodLogOptions", pod, causes)) }
    }
}

fn invalid(field: &str, value: i64, message: &str) -> kube_core::response::StatusCause {
    errors::cause("FieldValueInvalid", field, format!("Invalid value: {value}: {message}"))
}

/// One line of a container's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// When it was written.
    pub at: Timestamp,
    /// The text, without its newline.
    pub text: String,
}

/// One run of a container: what its log is made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The container's name.
    pub container: String,
    /// Its image.
    pub image: String,
    /// How many times the container had restarted when this instance started.
    pub restart: i32,
    /// When it started.
    pub started: Timestamp,
    /// When its Pod's deletion began stopping it (the current instance of a running container).
    pub stopping: Option<Timestamp>,
    /// When and how it ended, if it has.
    pub exit: Option<(Timestamp, i32, String)>,
}

impl Instance {
    /// The log's lines, oldest first.
    pub fn lines(&self) -> Vec<Line> {
        let mut lines = vec![
            Line {
                at: self.started,
                text: "kube-sim: a synthetic log (kube-sim runs no container processes)".to_owned(),
            },
            Line {
                at: self.started,
                text: format!(
                    "kube-sim: container {:?} started from image {:?} (restart {})",
                    self.container, self.image, self.restart
                ),
            },
        ];
        if let Some(at) = self.stopping {
            lines.push(Line {
                at,
                text: format!("kube-sim: stopping container {:?}: its Pod is being deleted", self.container),
            });
        }
        if let Some((at, code, reason)) = &self.exit {
            let reason = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
            lines.push(Line {
                at: *at,
                text: format!("kube-sim: container {:?} exited with code {code}{reason}", self.container),
            });
        }
        debug_assert!(lines.len() <= LINES_PER_INSTANCE_MAX);
        lines
    }
}

/// The container a request names, as `LogLocation` picks it: the only container when none is
/// named; 400 when several could be meant or the named one is not the Pod's.
pub fn container_of(pod: &Pod, name: &str, wanted: Option<&str>) -> Result<String, Status> {
    let spec = pod.spec.as_ref();
    let containers: Vec<&str> =
        spec.iter().flat_map(|s| s.containers.iter()).map(|c| c.name.as_str()).collect();
    let inits: Vec<&str> =
        spec.iter().flat_map(|s| s.init_containers.iter().flatten()).map(|c| c.name.as_str()).collect();
    let ephemeral: Vec<&str> =
        spec.iter().flat_map(|s| s.ephemeral_containers.iter().flatten()).map(|c| c.name.as_str()).collect();
    match wanted {
        Some(wanted) => {
            if containers.contains(&wanted) || inits.contains(&wanted) || ephemeral.contains(&wanted) {
                Ok(wanted.to_owned())
            } else {
                Err(errors::bad_request(&format!("container {wanted} is not valid for pod {name}")))
            }
        }
        None => match containers.as_slice() {
            [one] => Ok((*one).to_owned()),
            [] => Err(errors::bad_request(&format!("a container name must be specified for pod {name}"))),
            many => {
                let mut message = format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    many.join(" ")
                );
                if !inits.is_empty() {
                    message.push_str(&format!(" or one of the init containers: [{}]", inits.join(" ")));
                }
                Err(errors::bad_request(&message))
            }
        },
    }
}

fn image_of(pod: &Pod, container: &str, status: &ContainerStatus) -> String {
    let spec = pod.spec.as_ref();
    let all = spec.iter().flat_map(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .map(|c| (c.name.as_str(), c.image.as_deref()))
    });
    let from_spec = all.into_iter().find(|(n, _)| *n == container).and_then(|(_, i)| i).unwrap_or_default();
    if status.image.is_empty() { from_spec.to_owned() } else { status.image.clone() }
}

/// The instance whose log a request reads, as the kubelet's `validateContainerLogStatus` picks
/// it; `Err` is the kubelet's message (answered as 400 BadRequest).
pub fn instance_of(pod: &Pod, container: &str, previous: bool) -> Result<Instance, String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref();
    let statuses = status.iter().flat_map(|s| {
        s.container_statuses
            .iter()
            .flatten()
            .chain(s.init_container_statuses.iter().flatten())
            .chain(s.ephemeral_container_statuses.iter().flatten())
    });
    let Some(cs) = statuses.into_iter().find(|c| c.name == container) else {
        // The kubelet writes a waiting status as soon as it takes a Pod on; the kubelet-lite
        // writes none until the container starts.
        let pending = status.and_then(|s| s.phase.as_deref()).is_none_or(|p| p == "Pending");
        return Err(if pending {
            format!("container {container:?} in pod {name:?} is waiting to start: ContainerCreating")
        } else {
            format!("container {container:?} in pod {name:?} is not available")
        });
    };
    let state = cs.state.as_ref();
    let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    let has_id = |t: &ContainerStateTerminated| t.container_id.as_deref().is_some_and(|id| !id.is_empty());
    let fallback_start = status
        .and_then(|s| s.start_time.as_ref())
        .or(pod.metadata.creation_timestamp.as_ref())
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let image = image_of(pod, container, cs);
    let ended = |t: &ContainerStateTerminated, restart: i32| {
        let started = t.started_at.as_ref().map_or(fallback_start, |s| s.0);
        Instance {
            container: container.to_owned(),
            image: image.clone(),
            restart,
            started,
            stopping: None,
            exit: Some((
                t.finished_at.as_ref().map_or(started, |f| f.0),
                t.exit_code,
                t.reason.clone().unwrap_or_default(),
            )),
        }
    };
    let previous_restart = (cs.restart_count - 1).max(0);
    if previous {
        return match last.filter(|t| has_id(t)) {
            Some(t) => Ok(ended(t, previous_restart)),
            None => Err(format!("previous terminated container {container:?} in pod {name:?} not found")),
        };
    }
    if let Some(running) = state.and_then(|s| s.running.as_ref()) {
        return Ok(Instance {
            container: container.to_owned(),
            image,
            restart: cs.restart_count,
            started: running.started_at.as_ref().map_or(fallback_start, |s| s.0),
            stopping: pod.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            exit: None,
        });
    }
    if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
        return match (has_id(terminated), last.filter(|t| has_id(t))) {
            (true, _) => Ok(ended(terminated, cs.restart_count)),
            (false, Some(t)) => Ok(ended(t, previous_restart)),
            (false, None) => Err(format!("container {container:?} in pod {name:?} is terminated")),
        };
    }
    if let Some(t) = last {
        return if has_id(t) {
            Ok(ended(t, previous_restart))
        } else {
            Err(format!("container {container:?} in pod {name:?} is terminated"))
        };
    }
    match state.and_then(|s| s.waiting.as_ref()) {
        Some(waiting) => {
            let reason = match waiting.reason.as_deref().unwrap_or_default() {
                "ErrImagePull" => "image can't be pulled".to_owned(),
                "ImagePullBackOff" => "trying and failing to pull image".to_owned(),
                other => other.to_owned(),
            };
            Err(format!("container {container:?} in pod {name:?} is waiting to start: {reason}"))
        }
        None => Err(format!("container {container:?} in pod {name:?} is waiting to start - no logs yet")),
    }
}

/// The lines a request gets of `lines`: those since the cutoff, then the last `tailLines`.
pub fn selected(lines: Vec<Line>, options: &LogOptions, now: Timestamp) -> Vec<Line> {
    let since = options.since_time.or_else(|| {
        options.since_seconds.and_then(|s| now.checked_sub(jiff::SignedDuration::from_secs(s)).ok())
    });
    let mut lines: Vec<Line> = lines.into_iter().filter(|l| since.is_none_or(|s| l.at >= s)).collect();
    if let Some(tail) = options.tail_lines {
        let keep = usize::try_from(tail).unwrap_or(usize::MAX);
        let skip = lines.len().saturating_sub(keep);
        lines.drain(..skip);
    }
    lines
}

/// A line as the kubelet writes it: with its RFC 3339 time (nine fractional digits) first when
/// `timestamps` is asked for.
pub fn render(line: &Line, timestamps: bool) -> String {
    if timestamps {
        format!("{} {}\n", line.at.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"), line.text)
    } else {
        format!("{}\n", line.text)
    }
}

/// What is left of `limitBytes`: the part of `text` that fits, and the budget after it.
pub fn within_limit(text: String, budget: &mut Option<usize>) -> String {
    let Some(left) = budget.as_mut() else { return text };
    let mut text = text;
    if text.len() > *left {
        let mut end = *left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    *left -= text.len();
    text
}

/// The whole log a request reads now, not followed: 200 with an empty body for a Pod bound to
/// no node (the apiserver has no kubelet to ask), else the selected lines of the instance, as
/// text within `limitBytes`. `Err` is the Status kube-apiserver answers (400 for the
/// container's or the kubelet's refusals); the options are validated first (422).
pub fn read(pod: &Pod, options: &LogOptions, now: Timestamp) -> Result<String, Status> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    options.validate(name)?;
    let container = container_of(pod, name, options.container.as_deref())?;
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
    if node.is_empty() {
        return Ok(String::new());
    }
    let instance = instance_of(pod, &container, options.previous).map_err(|m| errors::bad_request(&m))?;
    let mut budget = options.limit_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let text: String =
        selected(instance.lines(), options, now).iter().map(|l| render(l, options.timestamps)).collect();
    Ok(within_limit(text, &mut budget))
}
