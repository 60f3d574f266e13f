//! Logs stamped with virtual time and the node.
//!
//! `tracing` events from the engine and from controllers print as
//! `[    12.345ms] ctrl       INFO target: message fields`: the time is madsim's virtual time since
//! the run started, and the node is the madsim node whose task emitted the event (madsim enters a
//! `node` span with the node's name around every task it polls; [`NodeNameLayer`] keeps that
//! name where the formatter finds it).
//!
//! The subscriber is installed per thread, per run (`tracing::subscriber::set_default`), never as
//! a process global: a sweep keeps every run quiet, and a single-seed run (`SIM_SEED`) prints its
//! logs to stderr, filtered by `RUST_LOG` (default `info`).

use std::fmt;

use tracing::dispatcher::DefaultGuard;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::subscriber::NoSubscriber;
use tracing::{Dispatch, Subscriber};
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

/// The name of the span madsim enters around each task of a node.
const MADSIM_NODE_SPAN: &str = "node";
/// The target (module) of madsim's node spans.
const MADSIM_NODE_SPAN_TARGET: &str = "madsim::sim::task";
/// The node column's width, as in traces.
const NODE_COLUMN_WIDTH: usize = 10;

/// Virtual time since the current madsim runtime started, or `None` outside one.
pub fn virtual_elapsed() -> Option<std::time::Duration> {
    #[cfg(madsim)]
    {
        madsim::time::TimeHandle::try_current().map(|time| time.elapsed())
    }
    #[cfg(not(madsim))]
    {
        None
    }
}

/// The node's name, kept in the extensions of madsim's `node` span.
#[derive(Clone, Debug)]
struct NodeName(String);

/// Records the `name` field of madsim's `node` spans so that events can print their node.
#[derive(Debug, Default)]
pub struct NodeNameLayer;

struct NameVisitor(Option<String>);

impl Visit for NameVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "name" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "name" {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

impl<S> Layer<S> for NodeNameLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != MADSIM_NODE_SPAN {
            return;
        }
        let mut visitor = NameVisitor(None);
        attrs.record(&mut visitor);
        if let (Some(name), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(NodeName(name));
        }
    }
}

/// Formats an event as `[virtual time] node LEVEL target: fields`.
#[derive(Debug, Default)]
pub struct VirtualTimeFormat;

impl<S, N> FormatEvent<S, N> for VirtualTimeFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        match virtual_elapsed() {
            Some(elapsed) => {
                let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
                write!(writer, "[{:>8}.{:03}ms]", nanos / 1_000_000, (nanos / 1_000) % 1_000)?;
            }
            None => write!(writer, "[{:>14}]", "-")?,
        }
        let node = ctx.event_scope().and_then(|scope| {
            scope.from_root().find_map(|span| span.extensions().get::<NodeName>().cloned())
        });
        let node = node.map_or_else(|| "-".to_owned(), |NodeName(name)| name);
        let meta = event.metadata();
        write!(writer, " {node:<NODE_COLUMN_WIDTH$} {:>5} {}: ", meta.level(), meta.target())?;
        // Spans other than madsim's own carry the controller's context (say, the object being
        // reconciled): print their fields, innermost last.
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                if span.name() == MADSIM_NODE_SPAN || span.name() == "task" {
                    continue;
                }
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>().filter(|f| !f.is_empty()) {
                    write!(writer, "{}{{{}}}: ", span.name(), fields)?;
                }
            }
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// A subscriber that prints events to `writer` with virtual time and node, filtered by
/// `directives` (`RUST_LOG` syntax; malformed directives fall back to `info`).
///
/// Build it before the run's madsim runtime exists and on another thread than the run's (as
/// [`init_for_run`] does): its filter holds std hash maps, and creating one seeds the thread's
/// std hash keys, which madsim must seed itself for the run to be deterministic.
pub fn subscriber<W>(directives: &str, writer: W) -> impl Subscriber + Send + Sync
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    // madsim's node spans must exist whatever RUST_LOG says, or events would lose their node;
    // they are error-level spans of this target. A user who names madsim decides for themself.
    let directives = if directives.contains("madsim") {
        directives.to_owned()
    } else {
        format!("{directives},{MADSIM_NODE_SPAN_TARGET}=error")
    };
    let filter = EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| EnvFilter::new(format!("info,{MADSIM_NODE_SPAN_TARGET}=error")));
    let fmt =
        tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).event_format(VirtualTimeFormat);
    Registry::default().with(filter).with(NodeNameLayer).with(fmt)
}

/// Keeps a run's log subscriber installed on the current thread until dropped.
#[derive(Debug)]
pub struct LogGuard {
    _guard: DefaultGuard,
}

/// The dispatcher for one run: for a single-seed run, one that prints to stderr filtered by
/// `RUST_LOG` (default `info`); otherwise one that drops everything. It is built on a helper
/// thread (see [`subscriber`]); call this before the run's runtime starts.
pub fn run_dispatch(single_seed: bool) -> Dispatch {
    if !single_seed {
        return Dispatch::new(NoSubscriber::default());
    }
    let directives = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_owned());
    std::thread::scope(|scope| scope.spawn(|| Dispatch::new(subscriber(&directives, std::io::stderr))).join())
        .unwrap_or_else(|_| Dispatch::new(NoSubscriber::default()))
}

/// Installs the current thread's subscriber for one run (see [`run_dispatch`]): a single-seed
/// run prints its logs, a sweep stays quiet even under a global subscriber. Call it before the
/// run's runtime starts and hold the guard for the whole run.
pub fn init_for_run(single_seed: bool) -> LogGuard {
    LogGuard { _guard: tracing::dispatcher::set_default(&run_dispatch(single_seed)) }
}
