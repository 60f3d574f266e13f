//! networking.k8s.io/v1 spec validation, after `pkg/apis/networking/validation/validation.go`:
//! Ingress rules (hosts, paths and their types) and backends (a Service by name and port, or a
//! resource, never both nor neither).

use k8s_openapi::api::networking::v1::{Ingress, IngressBackend};
use kube_core::response::StatusCause;

use super::field::{
    PORT_RANGE, Path, dns1123_subdomain, invalid, not_supported, port_name_errors, q, required,
};

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// ValidateIngressSpec.
pub(crate) fn ingress(ing: &Ingress, out: &mut Vec<StatusCause>) {
    let path = Path::new("spec");
    let Some(spec) = &ing.spec else {
        out.push(invalid(&path.child("rules"), "[]", "either `defaultBackend` or `rules` must be specified"));
        return;
    };
    let rules = spec.rules.as_deref().unwrap_or_default();
    if rules.is_empty() && spec.default_backend.is_none() {
        out.push(invalid(&path.child("rules"), "[]", "either `defaultBackend` or `rules` must be specified"));
    }
    if let Some(b) = &spec.default_backend {
        backend(b, &path.child("defaultBackend"), out);
    }
    if let Some(class) = spec.ingress_class_name.as_deref() {
        dns1123_subdomain(class, &path.child("ingressClassName"), out);
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = path.child("rules").index(i);
        if let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) {
            host_name(host, &at.child("host"), out);
        }
        let Some(http) = &rule.http else { continue };
        let paths_path = at.child("http").child("paths");
        if http.paths.is_empty() {
            out.push(required(&paths_path, ""));
        }
        for (j, p) in http.paths.iter().enumerate() {
            let pp = paths_path.index(j);
            let value = p.path.as_deref().unwrap_or_default();
            match p.path_type.as_str() {
                "" => out.push(required(&pp.child("pathType"), "pathType must be specified")),
                "Exact" | "Prefix" => {
                    if !value.starts_with('/') {
                        out.push(invalid(&pp.child("path"), q(value), "must be an absolute path"));
                    }
                    for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                        if value.contains(seq) {
                            out.push(invalid(
                                &pp.child("path"),
                                q(value),
                                &format!("must not contain '{seq}'"),
                            ));
                        }
                    }
                    for suffix in ["/..", "/."] {
                        if value.ends_with(suffix) {
                            out.push(invalid(
                                &pp.child("path"),
                                q(value),
                                &format!("cannot end with '{suffix}'"),
                            ));
                        }
                    }
                }
                "ImplementationSpecific" => {
                    if !value.is_empty() && !value.starts_with('/') {
                        out.push(invalid(&pp.child("path"), q(value), "must be an absolute path"));
                    }
                }
                other => out.push(not_supported(&pp.child("pathType"), other, PATH_TYPES)),
            }
            backend(&p.backend, &pp.child("backend"), out);
        }
    }
    for (i, tls) in spec.tls.iter().flatten().enumerate() {
        let at = path.child("tls").index(i);
        for (j, host) in tls.hosts.iter().flatten().enumerate() {
            host_name(host, &at.child("hosts").index(j), out);
        }
        if let Some(secret) = tls.secret_name.as_deref().filter(|s| !s.is_empty()) {
            dns1123_subdomain(secret, &at.child("secretName"), out);
        }
    }
}

/// A rule's host: a DNS subdomain (a wildcard only as the whole first label), never an IP.
fn host_name(host: &str, path: &Path, out: &mut Vec<StatusCause>) {
    if host.parse::<std::net::IpAddr>().is_ok() {
        out.push(invalid(path, q(host), "must be a DNS name, not an IP address"));
        return;
    }
    match host.strip_prefix("*.") {
        Some(rest) if !rest.contains('*') => dns1123_subdomain(rest, path, out),
        _ if host.contains('*') => out.push(invalid(
            path,
            q(host),
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        )),
        _ => dns1123_subdomain(host, path, out),
    }
}

/// validateIngressBackend.
fn backend(b: &IngressBackend, path: &Path, out: &mut Vec<StatusCause>) {
    match (&b.resource, &b.service) {
        (Some(_), Some(_)) => out.push(invalid(path, q(""), "cannot set both resource and service backends")),
        (Some(r), None) => {
            let at = path.child("resource");
            if r.kind.is_empty() {
                out.push(required(&at.child("kind"), ""));
            }
            if r.name.is_empty() {
                out.push(required(&at.child("name"), ""));
            }
        }
        (None, Some(s)) => {
            let name_path = path.child("service").child("name");
            if s.name.is_empty() {
                out.push(required(&name_path, ""));
            } else if !is_dns1035_label(&s.name) {
                out.push(invalid(&name_path, q(&s.name), DNS1035_LABEL_ERR));
            }
            let port = s.port.as_ref();
            let name = port.and_then(|p| p.name.as_deref()).unwrap_or_default();
            let number = port.and_then(|p| p.number).unwrap_or(0);
            let port_path = path.child("service").child("port");
            match (name.is_empty(), number == 0) {
                (false, false) => out.push(invalid(path, q(""), "cannot set both port name & port number")),
                (false, true) => {
                    for msg in port_name_errors(name) {
                        out.push(invalid(&port_path.child("name"), q(name), msg));
                    }
                }
                (true, false) => {
                    if !(1..=65535).contains(&number) {
                        out.push(invalid(&port_path.child("number"), number, PORT_RANGE));
                    }
                }
                (true, true) => out.push(required(path, "port name or number is required")),
            }
        }
        (None, None) => out.push(invalid(path, q(""), "resource or service backend is required")),
    }
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() <= 63
        && b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}
