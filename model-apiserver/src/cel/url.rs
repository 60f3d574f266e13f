//! `library.URLs`: `url(s)`, `isURL(s)` and the parts of a URL, parsed as Go's `net/url` parses:
//! upstream checks with `url.ParseRequestURI` (an absolute URI or an absolute path) and then
//! keeps `url.Parse`'s result.
//!
//! A port of `net/url`'s parser rather than the `url` crate: that one follows the WHATWG URL
//! standard, which normalizes what Go keeps (`https://example.com:443/` has no port there, `/a/../b`
//! is `/b`, hosts become punycode) and refuses what Go accepts (`/absolute-path`, the form
//! `isURL` documents first).

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map, Opaque};
use cel::{Env, ExecutionError, Value};

use super::library::{DeclarationError, IntoCel, KubeValue, error, go_quote, overload};

/// A parsed URL, as `url.URL` holds one. Strings from unescaping are bytes: `%ff` is not UTF-8.
#[derive(Clone, Debug, Default)]
pub(crate) struct Url {
    scheme: String,
    opaque: String,
    /// Username and password, if any (`None` for no `@`).
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    host: String,
    path: Vec<u8>,
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: Vec<u8>,
    raw_fragment: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        Self::TYPE_NAME
    }
}

impl KubeValue for Url {
    const TYPE_NAME: &'static str = "kubernetes.URL";
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if (mode == Mode::Host || mode == Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// `EscapeError`.
fn escape_error(s: &[u8]) -> String {
    format!("invalid URL escape {}", go_quote(&String::from_utf8_lossy(s)))
}

/// `unescape`.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                    return Err(escape_error(&b[i..b.len().min(i + 3)]));
                }
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && &b[i..i + 3] != b"%25" {
                    return Err(escape_error(&b[i..i + 3]));
                }
                if mode == Mode::Zone {
                    let v = (unhex(b[i + 1]) << 4) | unhex(b[i + 2]);
                    if &b[i..i + 3] != b"%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(escape_error(&b[i..i + 3]));
                    }
                }
                i += 3;
            }
            c => {
                if (mode == Mode::Host || mode == Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {} in host name", go_quote(&s[i..i + 1])));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push((unhex(b[i + 1]) << 4) | unhex(b[i + 2]));
                i += 3;
                continue;
            }
            b'+' if mode == Mode::QueryComponent => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// `escape`.
fn escape(s: &[u8], mode: Mode) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if c == b' ' && mode == Mode::QueryComponent {
            out.push('+');
        } else if should_escape(c, mode) {
            out.push('%');
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// `getScheme`: the scheme, if `raw` starts with one, and the rest.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// `url.Parse`: a URL, or a `*url.Error`'s message.
pub(crate) fn parse(raw: &str) -> Result<Url, String> {
    let (u, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_inner(u, false).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if !fragment.is_empty() {
        let unescaped =
            unescape(fragment, Mode::Fragment).map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
        url.raw_fragment =
            if escape(&unescaped, Mode::Fragment) == fragment { String::new() } else { fragment.to_owned() };
        url.fragment = unescaped;
    }
    Ok(url)
}

/// `url.ParseRequestURI`: a URL, or a `*url.Error`'s message.
pub(crate) fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_inner(raw, true).map_err(|e| format!("parse {}: {e}", go_quote(raw)))
}

/// `parse(rawURL, viaRequest)`.
fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_owned();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = authority.find('/').map_or((authority, ""), |i| authority.split_at(i));
        (url.user, url.host) = parse_authority(authority)?;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    url.raw_path = if escape(&url.path, Mode::Path) == rest { String::new() } else { rest.to_owned() };
    Ok(url)
}

type User = Option<(Vec<u8>, Option<Vec<u8>>)>;

/// `parseAuthority`.
fn parse_authority(authority: &str) -> Result<(User, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(i) = at else { return Ok((None, host)) };
    let userinfo = &authority[..i];
    let valid = userinfo.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    });
    if !valid {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Mode::UserPassword)?, None),
        Some((name, password)) => {
            (unescape(name, Mode::UserPassword)?, Some(unescape(password, Mode::UserPassword)?))
        }
    };
    Ok((Some(user), host))
}

/// `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    let lossy = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else { return Err("missing ']' in host".into()) };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let h1 = unescape(&host[..zone], Mode::Host)?;
            let h2 = unescape(&host[zone..i], Mode::Zone)?;
            let h3 = unescape(&host[i..], Mode::Host)?;
            return Ok(lossy([h1, h2, h3].concat()));
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host).map(lossy)
}

/// `validEncoded`.
fn valid_encoded(s: &str, mode: Mode) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, mode)
    })
}

/// `splitHostPort`.
fn split_host_port(host_port: &str) -> (&str, &str) {
    let (mut host, mut port) = (host_port, "");
    if let Some(colon) = host.rfind(':')
        && valid_optional_port(&host[colon..])
    {
        (host, port) = (&host[..colon], &host[colon + 1..]);
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl Url {
    /// `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }

    /// `URL.EscapedFragment`.
    fn escaped_fragment(&self) -> String {
        if !self.raw_fragment.is_empty()
            && valid_encoded(&self.raw_fragment, Mode::Fragment)
            && unescape(&self.raw_fragment, Mode::Fragment).is_ok_and(|f| f == self.fragment)
        {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Mode::Fragment)
    }

    /// `URL.String`: what upstream's `==` on URLs compares.
    fn to_go_string(&self) -> String {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some((name, password)) = &self.user {
                    out.push_str(&escape(name, Mode::UserPassword));
                    if let Some(password) = password {
                        out.push(':');
                        out.push_str(&escape(password, Mode::UserPassword));
                    }
                    out.push('@');
                }
                out.push_str(&escape(self.host.as_bytes(), Mode::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|s| s.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&self.escaped_fragment());
        }
        out
    }

    /// `URL.Query`: `ParseQuery`, malformed pairs left out, keys in order.
    fn query(&self) -> BTreeMap<String, Vec<String>> {
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) =
                (unescape(key, Mode::QueryComponent), unescape(value, Mode::QueryComponent))
            else {
                continue;
            };
            let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
            values.entry(text(key)).or_default().push(text(value));
        }
        values
    }
}

/// Upstream's `==` on URLs: the same `String()`.
impl PartialEq for Url {
    fn eq(&self, other: &Url) -> bool {
        self.to_go_string() == other.to_go_string()
    }
}

impl Eq for Url {}

/// A `map(string, list(string))` for `getQuery`.
struct Query(BTreeMap<String, Vec<String>>);

impl IntoCel for Query {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let entries = self.0.into_iter().map(|(key, values)| {
            let list = values.into_iter().map(|v| Value::String(Arc::new(v))).collect();
            (Key::String(Arc::new(key)), Value::List(Arc::new(list)))
        });
        // cel's map is a hash map (looked up by key; built here from the ordered one).
        let map: Box<dyn Val> = Value::Map(Map { map: Arc::new(entries.collect()) }).try_into()?;
        Ok(CowVal::Owned(map))
    }
}

overload! {
    /// `url(string)`: checked with `ParseRequestURI`, kept as `Parse` reads it (which splits off
    /// the fragment that `ParseRequestURI` leaves in the path or query).
    fn url(s: String) -> Url {
        let context = |e: String| error("url", format!("URL parse error during conversion from string: {e}"));
        parse_request_uri(&s).map_err(context)?;
        parse(&s).map_err(context)
    }
}

overload! {
    fn is_url(s: String) -> bool {
        Ok(parse_request_uri(&s).is_ok())
    }
}

overload! {
    fn get_scheme(u: Url) -> String {
        Ok(u.scheme)
    }
}

overload! {
    fn get_host(u: Url) -> String {
        Ok(u.host)
    }
}

overload! {
    fn get_hostname(u: Url) -> String {
        Ok(split_host_port(&u.host).0.to_owned())
    }
}

overload! {
    fn get_port(u: Url) -> String {
        Ok(split_host_port(&u.host).1.to_owned())
    }
}

overload! {
    fn get_escaped_path(u: Url) -> String {
        Ok(u.escaped_path())
    }
}

overload! {
    fn get_query(u: Url) -> Query {
        Ok(Query(u.query()))
    }
}

/// Declares the library on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let u = Url::cel_type;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", u(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", u(), vec![], get_host)?;
    env.add_member_overload("getHostname", "url_get_hostname", u(), vec![], get_hostname)?;
    env.add_member_overload("getPort", "url_get_port", u(), vec![], get_port)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", u(), vec![], get_escaped_path)?;
    env.add_member_overload("getQuery", "url_get_query", u(), vec![], get_query)?;
    Ok(())
}
