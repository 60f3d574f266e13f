//! Request paths, as kube-apiserver's router splits them.

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every group.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`: the resources of one group version.
    Resources { group: String, version: String },
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`: the index of group versions.
    OpenApiV3Index,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`.
    OpenApiV3 { group: String, version: String },
    /// A resource path.
    Resource(ResourcePath),
    /// Anything else.
    Unknown,
}

/// `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]` or the same under
/// `/apis/{group}/{version}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// The namespace segment, if any.
    pub namespace: Option<String>,
    /// The resource's plural name.
    pub plural: String,
    /// The object's name, if any.
    pub name: Option<String>,
    /// `status`, `scale`, ... if any.
    pub subresource: Option<String>,
}

/// Split a request path into a [`Route`]; never fails (unknown paths are [`Route::Unknown`]).
///
/// Each segment is percent-decoded, as Go's `net/http` decodes the path kube-apiserver routes
/// on (`/api/v1/namespaces/default/configmaps/c%31` is ConfigMap `c1`); a segment that does not
/// decode to UTF-8 is unknown.
pub fn parse(path: &str) -> Route {
    let Some(decoded) =
        path.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect::<Option<Vec<_>>>()
    else {
        return Route::Unknown;
    };
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group((*group).to_owned()),
        ["api", version] => Route::Resources { group: String::new(), version: (*version).to_owned() },
        ["apis", group, version] => {
            Route::Resources { group: (*group).to_owned(), version: (*version).to_owned() }
        }
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", "api", version] => {
            Route::OpenApiV3 { group: String::new(), version: (*version).to_owned() }
        }
        ["openapi", "v3", "apis", group, version] => {
            Route::OpenApiV3 { group: (*group).to_owned(), version: (*version).to_owned() }
        }
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::Unknown,
    }
}

/// `%XX` escapes decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    if !segment.contains('%') {
        return Some(segment.to_owned());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let (namespace, rest) = match rest {
        // `/namespaces/{name}[/status|/finalize]` is the Namespace itself; with a further plural
        // segment it is a namespaced collection.
        ["namespaces", ns, plural, tail @ ..] if !matches!(*plural, "status" | "finalize") => {
            (Some((*ns).to_owned()), [&[*plural][..], tail].concat())
        }
        other => (None, other.to_vec()),
    };
    let owned = |s: &&str| (*s).to_owned();
    let (plural, name, subresource) = match rest.as_slice() {
        [plural] => (owned(plural), None, None),
        [plural, name] => (owned(plural), Some(owned(name)), None),
        [plural, name, sub] => (owned(plural), Some(owned(name)), Some(owned(sub))),
        _ => return Route::Unknown,
    };
    Route::Resource(ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace,
        plural,
        name,
        subresource,
    })
}
