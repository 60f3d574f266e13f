//! Which requests are served at all: the Host check and the Origin check, made before routing.
//!
//! The model has no authentication, so anything that can make a request can read and write it.
//! Two browser attacks reach a server on loopback:
//!
//! - **DNS rebinding**: a web page whose name resolves to 127.0.0.1 reads the API as its own
//!   origin. Its requests carry the page's name in `Host`, so, as `kubectl proxy` does on the same
//!   port, only Hosts matching `--accept-hosts` are served (by default `localhost`, `127.0.0.1`
//!   and `[::1]`, any port); the rest get 403 Forbidden.
//! - **Cross-origin writes**: any page can POST to `http://127.0.0.1:8001` without a preflight
//!   if the body is `text/plain`, a form, or has no type. The first two get 415 from the decoder
//!   ([`crate::decode`]). Browsers send `Origin` with every cross-origin request, and no API client
//!   (kubectl, client-go, kube-rs, python requests) does, so a request whose `Origin` names a host
//!   `--accept-hosts` does not match gets 403 too.

use std::sync::Arc;

use hyper::{
    header::{HOST, ORIGIN},
    http::request::Parts,
};
use kube_core::Status;

/// `--accept-hosts`'s default: kubectl proxy's, the loopback names.
pub const ACCEPT_HOSTS_DEFAULT: &str = r"^localhost$,^127\.0\.0\.1$,^\[::1\]$";

/// A comma-separated list of regular expressions, one of which a request's host (without its
/// port) must match, as `kubectl proxy --accept-hosts` takes it.
#[derive(Clone, Debug)]
pub struct AcceptHosts {
    patterns: Arc<[regex::Regex]>,
    source: Arc<str>,
}

impl AcceptHosts {
    /// Parse `--accept-hosts`; an invalid expression is an error naming it.
    pub fn parse(list: &str) -> Result<AcceptHosts, regex::Error> {
        let patterns = list.split(',').map(regex::Regex::new).collect::<Result<Vec<_>, _>>()?;
        Ok(AcceptHosts { patterns: patterns.into(), source: list.into() })
    }

    /// Whether `host` (a name or address without port; IPv6 in brackets) is accepted.
    pub fn accepts(&self, host: &str) -> bool {
        self.patterns.iter().any(|p| p.is_match(host))
    }

    /// The list as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl Default for AcceptHosts {
    fn default() -> Self {
        AcceptHosts::parse(ACCEPT_HOSTS_DEFAULT).expect("the default --accept-hosts is valid")
    }
}

/// 403 unless the request's Host, and its Origin when it has one, are accepted.
pub fn check(hosts: &AcceptHosts, parts: &Parts) -> Result<(), Status> {
    let host = match parts.uri.authority() {
        Some(authority) => Some(authority.as_str().to_owned()),
        None => parts.headers.get(HOST).and_then(|v| v.to_str().ok()).map(str::to_owned),
    };
    let Some(host) = host else {
        return Err(forbidden("a request without a Host header is not served", hosts));
    };
    let name = without_port(host.rsplit_once('@').map_or(host.as_str(), |(_, h)| h));
    if !hosts.accepts(name) {
        return Err(forbidden(&format!("the Host {name:?} is not served"), hosts));
    }
    if let Some(origin) = parts.headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("null");
        let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
        let name = without_port(authority.split('/').next().unwrap_or(""));
        if !hosts.accepts(name) {
            return Err(forbidden(
                &format!("a request from the web origin {origin:?} is not served (cross-origin)"),
                hosts,
            ));
        }
    }
    Ok(())
}

/// `host:port` → `host`; `[::1]:8001` → `[::1]`.
// `pub` (hidden from the docs) for its test in tests/it/guard.rs only.
#[doc(hidden)]
pub fn without_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |end| &authority[..=end]);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

fn forbidden(why: &str, hosts: &AcceptHosts) -> Status {
    Status::failure(
        &format!(
            "{why}: kube-sim serve answers only hosts matching --accept-hosts {:?} (it has no authentication)",
            hosts.as_str()
        ),
        "Forbidden",
    )
    .with_code(403)
}
