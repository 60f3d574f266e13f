//! A Document controller as a kube-rs user writes one, modelled on kube-rs/controller-rs
//! (`src/controller.rs`): a `Document` custom resource whose `spec.hide` the controller mirrors
//! into `status.hidden`, publishing a `HideRequested` event when a document becomes hidden and a
//! `DeleteRequested` event from its finalizer when it is deleted.
//!
//! Beyond controller-rs it uses what kube's two ported examples do not: a `const` [`Action`], a
//! watcher stream with `WatchStreamExt` (`default_backoff`, `reflect`, `applied_objects`,
//! `predicate_filter`) given to `Controller::for_stream`, `graceful_shutdown_on` with
//! `shutdown_on_signal`, a startup check under `tokio::time::timeout` retried after
//! `tokio::time::sleep` (controller-rs exits the process instead), and a heartbeat task started
//! with `tokio::spawn` that ticks on `tokio::time::interval`. Its metrics and tracing spans are
//! left out (they are not kube's API).
//!
//! Only the `use` lines differ from the kube-rs version of this file.

// the only lines that differ from the kube-rs original
use futures::StreamExt;
use jiff::Timestamp;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sim::{
    Resource,
    api::{Api, ListParams, Patch, PatchParams, ResourceExt},
    client::Client,
    runtime::{
        Predicate, WatchStreamExt,
        controller::{Action, Controller},
        events::{Event, EventType, Recorder, Reporter},
        finalizer::{self, Event as Finalizer, finalizer},
        predicates, reflector, watcher,
        watcher::Config,
    },
};
use std::sync::Arc;
use tokio::{
    sync::{Notify, RwLock},
    time::{Duration, MissedTickBehavior},
};
use tracing::*;

/// The finalizer the controller keeps on every Document.
pub static DOCUMENT_FINALIZER: &str = "documents.kube.rs";

/// If no events were received, check back every 5 minutes.
const RECHECK: Action = Action::requeue(Duration::from_secs(5 * 60));
/// After a failed reconcile, try again in 5 minutes.
const RETRY: Action = Action::requeue(Duration::from_secs(5 * 60));
/// How long the startup check waits for one answer.
const STARTUP_CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times the startup check asks before the controller gives up (and is restarted).
const STARTUP_CHECK_ATTEMPTS: u32 = 10;
/// How often the heartbeat task ticks.
const HEARTBEAT_PERIOD: Duration = Duration::from_secs(60);

/// Generate the Kubernetes wrapper struct `Document` from our Spec and Status struct.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(kind = "Document", group = "kube.rs", version = "v1", namespaced)]
#[kube(status = "DocumentStatus", shortname = "doc")]
pub struct DocumentSpec {
    /// The title.
    pub title: String,
    /// Whether the document should be hidden.
    pub hide: bool,
    /// The content.
    pub content: String,
}

/// The status object of `Document`.
#[derive(Deserialize, Serialize, Clone, Default, Debug, JsonSchema)]
pub struct DocumentStatus {
    /// Whether the controller has hidden the document.
    pub hidden: bool,
}

impl Document {
    fn was_hidden(&self) -> bool {
        self.status.as_ref().map(|s| s.hidden).unwrap_or(false)
    }
}

/// Why a reconcile failed.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// An API call failed.
    #[error("Kube Error: {0}")]
    KubeError(#[source] sim::Error),
    /// The finalizer helper failed (adding or removing the finalizer, or the apply or cleanup).
    #[error("Finalizer Error: {0}")]
    FinalizerError(#[source] Box<finalizer::Error<Error>>),
    /// A document named `illegal` is refused.
    #[error("IllegalDocument")]
    IllegalDocument,
}
/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Context for our reconciler.
#[derive(Clone)]
pub struct Context {
    /// Kubernetes client
    pub client: Client,
    /// Event recorder
    pub recorder: Recorder,
    /// Diagnostics read by whatever else main runs (controller-rs: its web server)
    pub diagnostics: Arc<RwLock<Diagnostics>>,
}

async fn reconcile(doc: Arc<Document>, ctx: Arc<Context>) -> Result<Action> {
    ctx.diagnostics.write().await.last_event = Timestamp::now();
    let ns = doc.namespace().unwrap(); // doc is namespace scoped
    let docs: Api<Document> = Api::namespaced(ctx.client.clone(), &ns);

    info!("Reconciling Document \"{}\" in {}", doc.name_any(), ns);
    finalizer(&docs, DOCUMENT_FINALIZER, doc, |event| async {
        match event {
            Finalizer::Apply(doc) => doc.reconcile(ctx.clone()).await,
            Finalizer::Cleanup(doc) => doc.cleanup(ctx.clone()).await,
        }
    })
    .await
    .map_err(|e| Error::FinalizerError(Box::new(e)))
}

fn error_policy(_doc: Arc<Document>, error: &Error, _ctx: Arc<Context>) -> Action {
    warn!("reconcile failed: {:?}", error);
    RETRY
}

impl Document {
    // Reconcile (for non-finalizer related changes)
    async fn reconcile(&self, ctx: Arc<Context>) -> Result<Action> {
        let client = ctx.client.clone();
        let oref = self.object_ref(&());
        let ns = self.namespace().unwrap();
        let name = self.name_any();
        let docs: Api<Document> = Api::namespaced(client, &ns);

        let should_hide = self.spec.hide;
        if !self.was_hidden() && should_hide {
            // send an event once per hide
            ctx.recorder
                .publish(
                    &Event {
                        type_: EventType::Normal,
                        reason: "HideRequested".into(),
                        note: Some(format!("Hiding `{name}`")),
                        action: "Hiding".into(),
                        secondary: None,
                    },
                    &oref,
                )
                .await
                .map_err(Error::KubeError)?;
        }
        if name == "illegal" {
            return Err(Error::IllegalDocument); // error names show up in metrics
        }
        // always overwrite status object with what we saw
        let new_status = Patch::Apply(json!({
            "apiVersion": "kube.rs/v1",
            "kind": "Document",
            "status": DocumentStatus {
                hidden: should_hide,
            }
        }));
        let ps = PatchParams::apply("cntrlr").force();
        let _o = docs.patch_status(&name, &ps, &new_status).await.map_err(Error::KubeError)?;

        Ok(RECHECK)
    }

    // Finalizer cleanup (the object was deleted, ensure nothing is orphaned)
    async fn cleanup(&self, ctx: Arc<Context>) -> Result<Action> {
        let oref = self.object_ref(&());
        // Document doesn't have any real cleanup, so we just publish an event
        ctx.recorder
            .publish(
                &Event {
                    type_: EventType::Normal,
                    reason: "DeleteRequested".into(),
                    note: Some(format!("Delete `{}`", self.name_any())),
                    action: "Deleting".into(),
                    secondary: None,
                },
                &oref,
            )
            .await
            .map_err(Error::KubeError)?;
        Ok(Action::await_change())
    }
}

/// Diagnostics to be exposed by the web server
#[derive(Clone, Debug, Serialize)]
pub struct Diagnostics {
    /// When the last reconcile started (the system clock: simulated under kube-sim).
    pub last_event: Timestamp,
    /// How often the heartbeat task ticked.
    pub heartbeats: u64,
    /// The reporter of the controller's events.
    #[serde(skip)]
    pub reporter: Reporter,
}
impl Default for Diagnostics {
    fn default() -> Self {
        Self { last_event: Timestamp::now(), heartbeats: 0, reporter: "doc-controller".into() }
    }
}
impl Diagnostics {
    fn recorder(&self, client: Client) -> Recorder {
        Recorder::new(client, self.reporter.clone())
    }
}

/// State shared between the controller and the rest of main
#[derive(Clone, Default)]
pub struct State {
    /// Diagnostics populated by the reconciler
    diagnostics: Arc<RwLock<Diagnostics>>,
    /// Resolves the controller's graceful shutdown
    shutdown: Arc<Notify>,
}

impl State {
    /// State getter
    pub async fn diagnostics(&self) -> Diagnostics {
        self.diagnostics.read().await.clone()
    }

    /// Ask the controller to stop: no new reconcile starts, running ones finish, then
    /// [`run`] returns.
    pub fn shutdown(&self) {
        self.shutdown.notify_one();
    }

    // Create a Controller Context that can update State
    async fn to_context(&self, client: Client) -> Arc<Context> {
        Arc::new(Context {
            client: client.clone(),
            recorder: self.diagnostics.read().await.recorder(client),
            diagnostics: self.diagnostics.clone(),
        })
    }
}

/// Whether the Document CRD answers a list, asked up to [`STARTUP_CHECK_ATTEMPTS`] times, each
/// under [`STARTUP_CHECK_TIMEOUT`], sleeping a doubling delay between attempts.
async fn crd_is_queryable(docs: &Api<Document>) -> bool {
    let mut delay = Duration::from_millis(500);
    for attempt in 1..=STARTUP_CHECK_ATTEMPTS {
        match tokio::time::timeout(STARTUP_CHECK_TIMEOUT, docs.list(&ListParams::default().limit(1))).await {
            Ok(Ok(_)) => return true,
            Ok(Err(e)) => warn!("CRD is not queryable (attempt {attempt}); {e:?}. Is the CRD installed?"),
            Err(_) => warn!("CRD check timed out (attempt {attempt})"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(30));
    }
    false
}

/// Count heartbeats in the diagnostics every [`HEARTBEAT_PERIOD`], until the controller stops.
async fn heartbeat(diagnostics: Arc<RwLock<Diagnostics>>) {
    let mut ticks = tokio::time::interval(HEARTBEAT_PERIOD);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        diagnostics.write().await.heartbeats += 1;
    }
}

/// Initialize the controller and shared state (given the crd is installed): what main runs
/// after `Client::try_default()`. Returns after a graceful shutdown ([`State::shutdown`]), or
/// when the CRD never answers.
pub async fn run(state: State, client: Client) {
    let docs = Api::<Document>::all(client.clone());
    if !crd_is_queryable(&docs).await {
        error!("CRD is not queryable; giving up");
        info!("Installation: cargo run --bin crdgen | kubectl apply -f -");
        return;
    }
    let heartbeat = tokio::spawn(heartbeat(state.diagnostics.clone()));

    let (reader, writer) = reflector::store();
    let documents = watcher(docs, Config::default().any_semantic())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        // a spec change or a finalizer change (the finalizer helper's first step) reconciles;
        // the controller's own status patches do not
        .predicate_filter(predicates::generation.combine(predicates::finalizers), Default::default());
    let shutdown = state.shutdown.clone();
    Controller::for_stream(documents, reader)
        .graceful_shutdown_on(async move { shutdown.notified().await })
        .shutdown_on_signal()
        .run(reconcile, error_policy, state.to_context(client).await)
        .filter_map(|x| async move { std::result::Result::ok(x) })
        .for_each(|_| futures::future::ready(()))
        .await;
    heartbeat.abort();
}
