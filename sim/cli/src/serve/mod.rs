//! `kube-sim serve`'s glue: the HTTP front ([`model_apiserver_http`]) with what it must not depend
//! on itself, the simulation engine.
//!
//! - [`builtins`] runs the built-in controllers live against the served model
//!   (`--with-builtins`);
//! - [`replay`] reruns a regression file and serves its state at one step, read only
//!   (`--replay FILE --at STEP`).
//!
//! ```no_run
//! let config = model_apiserver_http::ServeConfig::default();
//! let served = kube_sim::serve::spawn(config, true).unwrap();
//! println!("serving on {} with the built-in controllers", served.url());
//! ```

pub mod builtins;
pub mod replay;

use std::net::SocketAddr;

pub use model_apiserver_http::{Live, ServeConfig, ServeError, Served};

/// Start the built-in controllers on `live` when asked, as the server's companion.
fn companion(
    with_builtins: bool,
) -> impl FnOnce(&Live) -> Result<Option<model_apiserver_http::Companion>, ServeError> {
    move |live| {
        if !with_builtins {
            return Ok(None);
        }
        let started = builtins::Builtins::start(live)?;
        Ok(Some(Box::new(started)))
    }
}

/// Serve on a new thread ([`model_apiserver_http::spawn`]), with the built-in controllers running
/// live beside the model when `with_builtins`.
pub fn spawn(config: ServeConfig, with_builtins: bool) -> Result<Served, ServeError> {
    model_apiserver_http::spawn_with(config, companion(with_builtins))
}

/// Serve until the process ends (the `kube-sim serve` command), with the built-in controllers
/// when `with_builtins`.
pub async fn run(
    config: ServeConfig,
    with_builtins: bool,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    model_apiserver_http::run_with(config, companion(with_builtins), ready).await
}
