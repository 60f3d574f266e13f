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

/// Where a list continues: the revision it reads at and the last key it returned.
struct ContinueToken {
    revision: Revision,
    namespace: String,
    name: String,
}

impl ContinueToken {
    /// Opaque to clients; `<revision>:<namespace>/<name>` (names never hold `:` or `/`).
    fn encode(revision: Revision, key: &ObjectKey) -> String {
        format!("{revision}:{}/{}", key.namespace, key.name)
    }
    fn decode(token: &str) -> Result<Self, Status> {
        let bad = || errors::bad_request(&format!("continue key is not valid: {token}"));
        let (revision, rest) = token.split_once(':').ok_or_else(bad)?;
        let (namespace, name) = rest.split_once('/').ok_or_else(bad)?;
        let revision = revision.parse::<Revision>().map_err(|_| bad())?;
        Ok(ContinueToken { revision, namespace: namespace.to_owned(), name: name.to_owned() })
    }
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
                let token = ContinueToken::decode(token)?;
                let snapshot = self.store.at(token.revision).ok_or_else(errors::continue_expired)?;
                let start = ObjectKey {
                    resource: t.resource.clone(),
                    namespace: Arc::from(token.namespace.as_str()),
                    name: Arc::from(token.name.as_str()),
                };
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

/// One page of `t`'s objects in `snapshot` after `start`, filtered, at most `limit` long.
fn page(
    t: &Target,
    snapshot: &Snapshot,
    start: Option<ObjectKey>,
    filter: &ObjectFilter,
    limit: Option<usize>,
) -> ListResponse {
    let namespace = t.namespace_filter();
    let lower = match start {
        Some(k) => Bound::Excluded(k),
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
                (Some(ContinueToken::encode(snapshot.revision, last)), count)
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
