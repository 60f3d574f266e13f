//! # model-apiserver-http: the Kubernetes REST API over HTTP
//!
//! The server of `kube-sim serve`: the Kubernetes REST API in front of a live (not simulated)
//! [`model_apiserver::ApiServer`], so that real clients (kubectl, kube-rs, helm) can talk to the
//! model. It depends on the model only; the built-in controllers that `serve --with-builtins` runs
//! beside it are wired in by the CLI crate (`kube_sim::serve`) through [`spawn_with`].
//!
//! - [`route`] splits paths, [`query`] decodes parameters into kube-core's types;
//! - [`discovery`] and [`openapi`] describe what is served (discovery in the legacy and the
//!   aggregated form, OpenAPI v2 in JSON and protobuf, and v3);
//! - [`logs`] serves `pods/log` from the container statuses the kubelet-lite writes;
//! - [`authorization`] answers `kubectl auth can-i`'s reviews (allowed: RBAC is not enforced);
//! - [`handler`] turns one request into one model call (strategic merge patch and server-side
//!   apply as read-modify-write under the model's lock; `pods/{name}/eviction`, kubectl drain's
//!   POST, as the model's eviction), [`watch`] streams watch events;
//! - [`decode`] picks a body's decoder by Content-Type and bounds its nesting first;
//! - [`protobuf`] decodes Kubernetes protobuf bodies (what kubectl's generators send) into JSON;
//! - [`guard`] refuses Hosts and web Origins that `--accept-hosts` does not match;
//! - [`live`] holds the model behind a mutex with wall-clock time (a replayed state is served
//!   through [`Live::read_only`]).
//!
//! This runs on real tokio and hyper, outside any madsim runtime: never start it inside one.
//!
//! ```no_run
//! let served = model_apiserver_http::spawn(model_apiserver_http::ServeConfig::default()).unwrap();
//! println!("serving on http://{}", served.addr());
//! ```

// Handlers answer `Result<_, kube_core::Status>` as the model does: the error is the API's reply,
// and kube-core's Status is what every caller hands on unboxed.
#![allow(clippy::result_large_err)]

pub mod authorization;
pub mod decode;
pub mod discovery;
pub use model_apiserver::go_json;
pub mod guard;
pub mod handler;
pub mod http;
pub mod live;
pub mod logs;
pub mod openapi;
pub mod protobuf;
pub mod query;
pub mod route;
pub mod table;
mod token;
pub mod watch;
pub mod wire;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use kube_core::params::PostParams;
use model_apiserver::{ApiServer, Context, Request};

pub use live::{Clock, Live};

/// Operational failures of `serve` (the API's own errors are `Status` replies, not these).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening address could not be bound (in use, not permitted, not local).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The tokio runtime could not be built.
    #[error("cannot start the tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// `--crds` could not be read or holds an invalid CRD.
    #[error("loading CRDs: {0}")]
    Crds(String),
    /// A CRD was rejected by the model when created.
    #[error("creating CRD {name}: {message}")]
    CrdRejected {
        /// The CRD's name.
        name: String,
        /// The model's Status message.
        message: String,
    },
}

/// What to serve and where.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where to listen; loopback by default. Port 0 picks a free port.
    pub addr: SocketAddr,
    /// A file or directory of CustomResourceDefinition YAML to create at start.
    pub crds: Option<PathBuf>,
    /// Seed of uids and generated names (the wall clock when `None`).
    pub seed: Option<u64>,
    /// The Hosts (and web Origins) served; loopback names by default.
    pub accept_hosts: guard::AcceptHosts,
    /// Timeouts and bounds of connections and watches.
    pub limits: Limits,
    /// How many times as fast as the wall clock the cluster's clock runs ([`live::Clock`]): 1
    /// by default; 60 makes a minute pass in a second, for CronJobs and deadlines.
    pub time_scale: u32,
}

/// What one client may hold of the server, so that idle, slow or many connections cannot starve
/// the others or exhaust memory or file descriptors. Every bound is documented in
/// `docs/serve.md` ("Security and limits").
#[derive(Clone, Debug)]
pub struct Limits {
    /// A connection must send a whole request head within this long of opening, or of its last
    /// answer (so it also bounds how long an idle keep-alive connection stays open).
    pub header_read_timeout: Duration,
    /// A request (its body read and its answer made; a watch only until its stream starts) must
    /// finish within this long of its head, or it gets 504 Timeout, as kube-apiserver's
    /// `--request-timeout` (60 s) answers.
    pub request_timeout: Duration,
    /// Connections served at once; further ones wait in the kernel's backlog until one closes.
    pub connections_max: usize,
    /// The first pause after a failed `accept` (out of file descriptors, say); it doubles up to
    /// [`Limits::accept_backoff_max`] while accepts keep failing, so the loop never spins.
    pub accept_backoff: Duration,
    /// The longest pause after failed accepts.
    pub accept_backoff_max: Duration,
    /// Serialized bytes one watch stream may have queued for a client that does not read.
    pub watch_buffer_bytes_max: usize,
    /// A watch whose client has not made room for the next event within this long is closed, as
    /// kube-apiserver closes a slow watcher; the client relists and watches again.
    pub watch_slow_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            connections_max: 512,
            accept_backoff: Duration::from_millis(5),
            accept_backoff_max: Duration::from_secs(1),
            watch_buffer_bytes_max: 1024 * 1024,
            watch_slow_timeout: Duration::from_secs(30),
        }
    }
}

/// Something that runs beside the server for as long as it serves, such as the built-in
/// controllers of `kube-sim serve --with-builtins`; dropped after the server has stopped.
pub type Companion = Box<dyn Send>;

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            crds: None,
            seed: None,
            accept_hosts: guard::AcceptHosts::default(),
            limits: Limits::default(),
            time_scale: 1,
        }
    }
}

/// A server running on its own thread with its own tokio runtime.
pub struct Served {
    addr: SocketAddr,
    live: Live,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Dropped after the server stops (fields drop after `Drop::drop`).
    _companion: Option<Companion>,
}

impl Served {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// The live model (tests use it to force compaction, for example).
    pub fn live(&self) -> &Live {
        &self.live
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The model `serve` starts with: built-in kinds, the three default namespaces, and the CRDs
/// of `config.crds`.
pub fn initial_model(config: &ServeConfig) -> Result<Live, ServeError> {
    let seed = config.seed.unwrap_or_else(|| {
        let now = jiff::Timestamp::now();
        u64::try_from(now.as_nanosecond()).unwrap_or_default()
    });
    let clock = live::Clock::new(config.time_scale);
    let mut ids = live::SeededIds::new(seed);
    let mut ctx = Context::new(clock.now(), &mut ids);
    let server = ApiServer::new().with_bootstrap_objects(&mut ctx);
    let live = Live::new(server, seed).with_clock(clock);
    if let Some(path) = &config.crds {
        let crds =
            model_apiserver::crd::load_crds_from_path(path).map_err(|e| ServeError::Crds(e.to_string()))?;
        if crds.is_empty() {
            return Err(ServeError::Crds(format!(
                "{}: holds no CustomResourceDefinition (an empty file or directory is a mistake, not a no-op)",
                path.display()
            )));
        }
        let crd_api = kube_core::ApiResource::erase::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(&());
        for crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let object = serde_json::to_value(&crd)
                .and_then(serde_json::from_value)
                .map_err(|e| ServeError::Crds(e.to_string()))?;
            live.handle(Request::create(&crd_api, None, object, PostParams::default()))
                .map_err(|s| ServeError::CrdRejected { name, message: s.message })?;
        }
    }
    Ok(live)
}

/// Bind `config.addr` and serve on a new thread; the server stops when the answer is dropped.
///
/// Binding happens here, synchronously, so that the address is known (and a bind error
/// reported) before this returns; it may be called from inside another tokio runtime.
pub fn spawn(config: ServeConfig) -> Result<Served, ServeError> {
    spawn_with(config, |_| Ok(None))
}

/// [`spawn`], with `companion` started on the model before the server binds (the CLI starts the
/// built-in controllers this way) and kept until the server stops.
pub fn spawn_with(
    config: ServeConfig,
    companion: impl FnOnce(&Live) -> Result<Option<Companion>, ServeError>,
) -> Result<Served, ServeError> {
    let live = initial_model(&config)?;
    let companion = companion(&live)?;
    let bind_error = |source| ServeError::Bind { addr: config.addr, source };
    let listener = std::net::TcpListener::bind(config.addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let served_live = live.clone();
    let server = Server::new(&config, addr);
    let thread = std::thread::Builder::new()
        .name("kube-sim-serve".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                tokio::select! {
                    biased;
                    _ = rx => {}
                    () = server.accept_loop(listener, served_live) => {}
                }
            });
        })
        .map_err(ServeError::Runtime)?;
    Ok(Served { addr, live, shutdown: Some(tx), thread: Some(thread), _companion: companion })
}

/// Bind and serve until the process ends (the `kube-sim serve` command).
pub async fn run(config: ServeConfig, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    run_with(config, |_| Ok(None), ready).await
}

/// [`run`], with `companion` started on the model first and kept while serving (see
/// [`spawn_with`]).
pub async fn run_with(
    config: ServeConfig,
    companion: impl FnOnce(&Live) -> Result<Option<Companion>, ServeError>,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let live = initial_model(&config)?;
    let _companion = companion(&live)?;
    run_live(live, &config, ready).await
}

/// Bind `config.addr` and serve `live` until the process ends (`kube-sim serve --replay` builds
/// its own model; `config.crds` and `config.seed` are not used).
pub async fn run_live(
    live: Live,
    config: &ServeConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let asked = config.addr;
    let listener = tokio::net::TcpListener::bind(asked)
        .await
        .map_err(|source| ServeError::Bind { addr: asked, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: asked, source })?;
    ready(addr);
    Server::new(config, addr).accept_loop(listener, live).await;
    Ok(())
}

/// What every connection of one server shares besides the model.
#[derive(Clone)]
struct Server {
    server_address: Arc<str>,
    accept_hosts: guard::AcceptHosts,
    limits: Arc<Limits>,
    connections: Arc<tokio::sync::Semaphore>,
}

impl Server {
    fn new(config: &ServeConfig, addr: SocketAddr) -> Server {
        Server {
            server_address: Arc::from(addr.to_string()),
            accept_hosts: config.accept_hosts.clone(),
            limits: Arc::new(config.limits.clone()),
            connections: Arc::new(tokio::sync::Semaphore::new(config.limits.connections_max.max(1))),
        }
    }

    /// Accept connections forever, at most `connections_max` at once; each is served on its own
    /// task, and a failing connection affects no other. A failed accept (EMFILE, ENFILE, ...)
    /// backs off instead of spinning, so the connections being served keep their share of CPU.
    async fn accept_loop(self, listener: tokio::net::TcpListener, live: Live) {
        let mut backoff = self.limits.accept_backoff;
        loop {
            let Ok(permit) = self.connections.clone().acquire_owned().await else { return };
            let stream = match listener.accept().await {
                Ok((stream, _peer)) => {
                    backoff = self.limits.accept_backoff;
                    stream
                }
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.limits.accept_backoff_max);
                    continue;
                }
            };
            let server = self.clone();
            let live = live.clone();
            tokio::spawn(async move {
                server.serve_connection(stream, live).await;
                drop(permit);
            });
        }
    }

    async fn serve_connection(self, stream: tokio::net::TcpStream, live: Live) {
        let limits = self.limits.clone();
        let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let live = live.clone();
            let server = self.clone();
            async move {
                let (parts, body) = request.into_parts();
                if let Err(status) = guard::check(&server.accept_hosts, &parts) {
                    return Ok::<_, std::convert::Infallible>(http::status(&status));
                }
                let request = hyper::Request::from_parts(parts, body);
                let served =
                    handler::serve(live, server.server_address.clone(), server.limits.clone(), request);
                let reply =
                    tokio::time::timeout(server.limits.request_timeout, served).await.unwrap_or_else(|_| {
                        http::status(&model_apiserver::errors::timeout(
                            "request did not complete within the allowed duration",
                        ))
                    });
                Ok(reply)
            }
        });
        let _ = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .serve_connection(TokioIo::new(stream), service)
            .await;
    }
}
