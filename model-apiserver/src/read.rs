//! get and list: reads at the current revision or at a retained past one, with the
//! resourceVersion semantics of the real server, selectors, and `limit`/`continue` paging.

use std::ops::Bound;
use std::sync::Arc;

use kube_core::{
    DynamicObject, Status,
    params::{GetParams, ListParams, VersionMatch},
};

use crate::{
    errors,
    filter::ObjectFilter,
    metadata,
    request::{ListResponse, Response, Subresource},
    server::{ApiServer, Target, method_not_allowed},
    store::{ObjectKey, Revision, Snapshot},
    write::check_subresource,
};

/// A parsed resourceVersion parameter of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadVersion {
    /// Unset: the latest state (a consistent read).
    Latest,
    /// `"0"`: any state. The model serves the latest, which is one of the states the real
    /// server's watch cache may serve.
    Any,
    /// A number.
    At(Revision),
}

/// Parse a resourceVersion parameter: 400 BadRequest if it is not a number.
pub(crate) fn parse_read_version(rv: Option<&str>) -> Result<ReadVersion, Status> {
    match rv {
        None | Some("") => Ok(ReadVersion::Latest),
        Some("0") => Ok(ReadVersion::Any),
        Some(s) => parse_revision(s).map(ReadVersion::At),
    }
}

/// A revision number: 400 BadRequest otherwise.
pub(crate) fn parse_revision(s: &str) -> Result<Revision, Status> {
    s.parse::<Revision>().map_err(|_| errors::bad_request(&format!("invalid resource version: {s}")))
}

/// Where a list continues, in kube-apiserver's encoding (`storage.EncodeContinue`): base64url
/// without padding of `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>\u0000"}`, the start
/// key being the last returned key (relative to the list's key prefix: `name`, or
/// `namespace/name` for a list across namespaces) followed by a NUL, the smallest key after it.
struct ContinueToken;

/// Go's `base64.RawURLEncoding`: no padding, trailing bits allowed.
const RAW_URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

impl ContinueToken {
    fn encode(revision: Revision, t: &Target, key: &ObjectKey) -> String {
        use base64::Engine as _;
        let start = if t.namespace.is_empty() && !key.namespace.is_empty() {
            [&*key.namespace, "/", &*key.name, "\0"].concat()
        } else {
            [&*key.name, "\0"].concat()
        };
        let start = serde_json::to_string(&start).unwrap_or_default();
        RAW_URL.encode(format!(r#"{{"v":"{TOKEN_VERSION}","rv":{revision},"start":{start}}}"#))
    }

    /// The revision and the first key (inclusive) a token continues from, or kube-apiserver's
    /// 400 (`storage.DecodeContinue` under "invalid continue token: ").
    fn decode(token: &str, t: &Target) -> Result<(Revision, ObjectKey), Status> {
        use base64::Engine as _;
        const GENERIC: &str = "continue key is not valid";
        let invalid = |why: String| errors::bad_request(&["invalid continue token: ", &why].concat());
        let data = RAW_URL.decode(token).map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                base64::DecodeError::InvalidLength(len) => len.saturating_sub(1),
                base64::DecodeError::InvalidPadding => token.find('=').unwrap_or(0),
            };
            invalid(format!("{GENERIC}: illegal base64 data at input byte {at}"))
        })?;
        if let Some(e) = crate::go_json::syntax_error(&data) {
            return Err(invalid(format!("{GENERIC}: {e}")));
        }
        let value: serde_json::Value =
            serde_json::from_slice(&data).map_err(|e| invalid(format!("{GENERIC}: {e}")))?;
        let field_error = |field: &str, ty: &str, v: &serde_json::Value| {
            let what = match v {
                serde_json::Value::Number(n) => format!("number {n}"),
                other => crate::go_json::go_kind(other).to_owned(),
            };
            invalid(format!(
                "{GENERIC}: json: cannot unmarshal {what} into Go struct field continueToken.{field} of type {ty}"
            ))
        };
        let (mut version, mut rv, mut start) = ("", 0u64, "");
        match &value {
            serde_json::Value::Null => {}
            serde_json::Value::Object(fields) => {
                for (field, v) in fields {
                    match (field.as_str(), v) {
                        (_, serde_json::Value::Null) => {}
                        ("v", serde_json::Value::String(s)) => version = s,
                        ("v", other) => return Err(field_error("v", "string", other)),
                        ("rv", serde_json::Value::Number(n)) if n.as_i64().is_some() => {
                            rv = n.as_u64().unwrap_or(0);
                        }
                        ("rv", other) => return Err(field_error("rv", "int64", other)),
                        ("start", serde_json::Value::String(s)) => start = s,
                        ("start", other) => return Err(field_error("start", "string", other)),
                        _ => {}
                    }
                }
            }
            other => {
                return Err(invalid(format!(
                    "{GENERIC}: json: cannot unmarshal {} into Go value of type storage.continueToken",
                    crate::go_json::go_kind(other)
                )));
            }
        }
        if version != TOKEN_VERSION {
            return Err(invalid(format!(
                "{GENERIC}: server does not recognize this encoded version {version}"
            )));
        }
        if rv == 0 {
            return Err(invalid(format!(
                "{GENERIC}: incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
            )));
        }
        if start.is_empty() {
            return Err(invalid(format!("{GENERIC}: encoded start key empty (version {TOKEN_VERSION})")));
        }
        // Go's path.Clean must leave `/start` as it is (no path traversal out of the prefix).
        let rooted = if start.starts_with('/') { start.to_owned() } else { ["/", start].concat() };
        if !is_clean_path(&rooted) {
            return Err(invalid(format!("{GENERIC}: {start}")));
        }
        let relative = &rooted[1..];
        let (namespace, name) = if !t.namespace.is_empty() || !t.ty.namespaced {
            (&*t.namespace, relative)
        } else {
            relative.split_once('/').unwrap_or((relative, ""))
        };
        let key = ObjectKey {
            resource: t.resource.clone(),
            namespace: Arc::from(namespace),
            name: Arc::from(name),
        };
        Ok((rv, key))
    }
}

/// Whether Go's `path.Clean` leaves a rooted path as it is: no empty, `.` or `..` element and no
/// trailing slash (but the root itself).
fn is_clean_path(path: &str) -> bool {
    path == "/"
        || (!path.ends_with('/') && path[1..].split('/').all(|e| !e.is_empty() && e != "." && e != ".."))
}

impl ApiServer {
    /// The snapshot a read at `version` is served from (not-older-than semantics).
    fn snapshot_not_older_than(&self, version: ReadVersion) -> Result<Snapshot, Status> {
        let current = self.store.current().clone();
        match version {
            ReadVersion::At(n) if n > current.revision => {
                Err(errors::too_large_resource_version(n, current.revision))
            }
            _ => Ok(current),
        }
    }

    /// The snapshot at exactly `n`: 410 Expired when compacted, 504 when in the future.
    fn snapshot_exact(&self, n: Revision) -> Result<Snapshot, Status> {
        if n > self.store.revision() {
            return Err(errors::too_large_resource_version(n, self.store.revision()));
        }
        self.store.at(n).ok_or_else(|| errors::expired(n, self.store.oldest()))
    }

    /// GET one object (or its `/status`, or its `/scale` view).
    pub(crate) fn get(
        &self,
        t: &Target,
        name: &str,
        params: &GetParams,
        subresource: Option<Subresource>,
    ) -> Result<Response, Status> {
        // The route is chosen before the object is looked up.
        check_subresource(t, name, subresource)?;
        if subresource == Some(Subresource::Finalize) {
            return Err(method_not_allowed());
        }
        let version = parse_read_version(params.resource_version.as_deref())?;
        let snapshot = self.snapshot_not_older_than(version)?;
        let object = snapshot.get(&t.key(name)).ok_or_else(|| t.not_found(name))?;
        match subresource {
            Some(Subresource::Scale) => self.scale_view(t, object).map(|s| Response::Object(Arc::new(s))),
            _ => Ok(Response::Object(t.present(object))),
        }
    }

    /// LIST a collection.
    pub(crate) fn list(&self, t: &Target, params: &ListParams) -> Result<ListResponse, Status> {
        let filter = ObjectFilter::parse(
            params.label_selector.as_deref(),
            params.field_selector.as_deref(),
            &t.ty.selectable_fields,
        )?;
        let rv = params.resource_version.as_deref().filter(|s| !s.is_empty());
        let (snapshot, start) = match params.continue_token.as_deref().filter(|s| !s.is_empty()) {
            Some(token) => {
                if rv.is_some() {
                    return Err(errors::bad_request(
                        "specifying resource version is not allowed when using continue",
                    ));
                }
                let (revision, start) = ContinueToken::decode(token, t)?;
                let snapshot = self.store.at(revision).ok_or_else(errors::continue_expired)?;
                (snapshot, Some(start))
            }
            None => {
                let paged = params.limit.is_some_and(|l| l > 0);
                (self.list_snapshot(rv, params.version_match.as_ref(), paged)?, None)
            }
        };
        let limit = params.limit.filter(|l| *l > 0).map(|l| l as usize);
        Ok(page(t, &snapshot, start, &filter, limit))
    }

    /// The snapshot a list without a continue token reads. A paged list (`limit` set) at a
    /// number N without `resourceVersionMatch` reads exactly N, the legacy semantics the real
    /// server keeps for it (410 Expired once N is compacted).
    fn list_snapshot(
        &self,
        rv: Option<&str>,
        version_match: Option<&VersionMatch>,
        paged: bool,
    ) -> Result<Snapshot, Status> {
        let version = parse_read_version(rv)?;
        match (version_match, version) {
            (Some(VersionMatch::Exact), ReadVersion::At(n)) => self.snapshot_exact(n),
            (None, ReadVersion::At(n)) if paged => self.snapshot_exact(n),
            (Some(VersionMatch::Exact), ReadVersion::Any) => {
                Err(errors::invalid_list_options(vec![metadata::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                )]))
            }
            (Some(_), ReadVersion::Latest) => Err(errors::invalid_list_options(vec![metadata::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )])),
            _ => self.snapshot_not_older_than(version),
        }
    }
}

/// One page of `t`'s objects in `snapshot` from `start` on, filtered, at most `limit` long.
fn page(
    t: &Target,
    snapshot: &Snapshot,
    start: Option<ObjectKey>,
    filter: &ObjectFilter,
    limit: Option<usize>,
) -> ListResponse {
    let namespace = t.namespace_filter();
    let lower = match start {
        Some(k) => Bound::Included(k),
        None => Bound::Included(ObjectKey {
            resource: t.resource.clone(),
            namespace: Arc::from(namespace.unwrap_or("")),
            name: Arc::from(""),
        }),
    };
    let mut matching = snapshot
        .objects
        .range((lower, Bound::Unbounded))
        .take_while(|(k, _)| k.resource == t.resource && namespace.is_none_or(|ns| &*k.namespace == ns))
        .filter(|(k, o)| filter.matches(k, o));
    let mut items: Vec<Arc<DynamicObject>> = Vec::new();
    let mut last: Option<&ObjectKey> = None;
    let limit_items = limit.unwrap_or(usize::MAX);
    for (k, o) in matching.by_ref() {
        items.push(t.present(o));
        last = Some(k);
        if items.len() >= limit_items {
            break;
        }
    }
    let (continue_token, remaining_item_count) = match (limit, last) {
        (Some(_), Some(last)) => {
            let remaining = matching.count();
            if remaining == 0 {
                (None, None)
            } else {
                // The real server reports remainingItemCount only for unfiltered lists.
                let count = filter.is_everything().then_some(remaining as i64);
                (Some(ContinueToken::encode(snapshot.revision, t, last)), count)
            }
        }
        _ => (None, None),
    };
    ListResponse {
        items,
        resource_version: snapshot.revision.to_string(),
        continue_token,
        remaining_item_count,
    }
}
