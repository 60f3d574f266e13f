//! API discovery, as kube 5's `kube::discovery`: which groups, versions and kinds a cluster
//! serves, each as kube-core's `(ApiResource, ApiCapabilities)`, for controllers that find their
//! resources at run time (`Discovery::new(client).run()`, `oneshot::pinned_kind`) and then use
//! `Api::all_with` / `Api::namespaced_with`.
//!
//! The answers are the cluster's served types at the moment of the call: the built-in kinds and
//! every version a CRD serves (a CRD created during the run is discovered once the server serves
//! it). Discovery reads them from the simulated server directly: it is not an API call, so it has
//! no latency, meets no fault and is not in the trace (a controller discovers once at start; a
//! discovery that fails is not among the faults kube-sim explores).
//!
//! Orders are deterministic where kube's are a `HashMap`'s: [`Discovery::groups`] is in group name
//! order (the core group `""` first), and [`ApiGroup::resources_by_stability`] in kind order. The
//! versions of a group are in kube's order (highest Kubernetes version priority first) and its
//! preferred version is the highest-priority one it serves (`v1` for the core group), as
//! kube-apiserver prefers.
//!
//! Written here rather than wrapping kube's: kube's discovery parses the answers of HTTP requests
//! through kube's own `Client`; this one builds the same values from the model's table of types.

use std::collections::BTreeMap;

pub use kube_core::discovery::{ApiCapabilities, ApiResource, Scope, verbs};
use kube_core::gvk::{GroupVersion, GroupVersionKind};
use kube_core::{DynamicObject, TypeMeta};
use model_apiserver::{ResourceType, ResourceTypes};

use crate::client::{Client, Error, Result};

pub use crate::client::DiscoveryError;

/// The verbs every served resource takes, as the server's discovery lists them.
const RESOURCE_VERBS: [&str; 8] = [
    verbs::CREATE,
    verbs::DELETE,
    verbs::DELETE_COLLECTION,
    verbs::GET,
    verbs::LIST,
    verbs::PATCH,
    verbs::UPDATE,
    verbs::WATCH,
];
/// The verbs of the `status` and `scale` subresources.
const SUBRESOURCE_VERBS: [&str; 3] = [verbs::GET, verbs::PATCH, verbs::UPDATE];

fn owned(verbs: &[&str]) -> Vec<String> {
    verbs.iter().map(|v| (*v).to_owned()).collect()
}

/// One served type as kube's discovery describes it.
fn describe(ty: &ResourceType) -> (ApiResource, ApiCapabilities) {
    let scope = if ty.namespaced { Scope::Namespaced } else { Scope::Cluster };
    let sub = |plural: &str, group: &str, version: &str, kind: &str, verbs: &[&str]| {
        let resource = ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version: ty.api.api_version.clone(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
        };
        let caps =
            ApiCapabilities { scope: scope.clone(), subresources: Vec::new(), operations: owned(verbs) };
        (resource, caps)
    };
    let mut subresources = Vec::new();
    if ty.status_subresource {
        subresources.push(sub("status", &ty.api.group, &ty.api.version, &ty.api.kind, &SUBRESOURCE_VERBS));
    }
    if ty.scale.is_some() {
        subresources.push(sub("scale", "autoscaling", "v1", "Scale", &SUBRESOURCE_VERBS));
    }
    if !ty.custom && ty.api.group.is_empty() && ty.api.plural == "pods" {
        // A pod's binding: a `v1` Binding, POST only.
        subresources.push(sub("binding", "", "v1", "Binding", &[verbs::CREATE]));
        // A pod's eviction: a `policy/v1` Eviction, POST only.
        subresources.push(sub("eviction", "policy", "v1", "Eviction", &[verbs::CREATE]));
    }
    if !ty.custom && ty.api.group.is_empty() && ty.api.plural == "serviceaccounts" {
        // A service account's token: an `authentication.k8s.io/v1` TokenRequest, POST only.
        subresources.push(sub("token", "authentication.k8s.io", "v1", "TokenRequest", &[verbs::CREATE]));
    }
    let caps = ApiCapabilities { scope, subresources, operations: owned(&RESOURCE_VERBS) };
    (ty.api.clone(), caps)
}

/// The served types of the client's cluster, now.
fn served_types(client: &Client) -> ResourceTypes {
    client.world.with(|w| {
        // A live run's server is shared, not the run's own (`kube-sim serve --with-builtins`).
        crate::world::live::served_types(w, &client.cluster)
            .or_else(|| w.clusters().get(&client.cluster).map(|c| c.server.types().clone()))
            .unwrap_or_default()
    })
}

/// Every served group: its versions, each with its resources in plural order.
fn served_groups(
    types: &ResourceTypes,
) -> BTreeMap<String, BTreeMap<String, Vec<(ApiResource, ApiCapabilities)>>> {
    let mut groups: BTreeMap<String, BTreeMap<String, Vec<_>>> = BTreeMap::new();
    for ty in types.iter() {
        groups
            .entry(ty.api.group.clone())
            .or_default()
            .entry(ty.api.version.clone())
            .or_default()
            .push(describe(ty));
    }
    groups
}

/// One served version of a group and its resources.
#[derive(Clone, Debug)]
struct GroupVersionData {
    version: String,
    resources: Vec<(ApiResource, ApiCapabilities)>,
}

/// One API group, as kube's `discovery::ApiGroup`.
#[derive(Clone, Debug)]
pub struct ApiGroup {
    name: String,
    /// Highest version priority first.
    data: Vec<GroupVersionData>,
    preferred: Option<String>,
}

impl ApiGroup {
    /// The name of the core group (`/api/v1`).
    pub const CORE_GROUP: &'static str = "";

    fn new(name: &str, versions: BTreeMap<String, Vec<(ApiResource, ApiCapabilities)>>) -> Self {
        let mut data: Vec<GroupVersionData> = versions
            .into_iter()
            .map(|(version, resources)| GroupVersionData { version, resources })
            .collect();
        model_apiserver::resources::sort_by_version_priority(&mut data, |d| d.version.as_str());
        let preferred = if name == Self::CORE_GROUP {
            Some("v1".to_owned())
        } else {
            data.first().map(|d| d.version.clone())
        };
        ApiGroup { name: name.to_owned(), data, preferred }
    }

    /// The group's name (`""` for the core group).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The served versions, highest priority first.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.data.iter().map(|d| d.version.as_str())
    }

    /// The server's preferred version.
    pub fn preferred_version(&self) -> Option<&str> {
        self.preferred.as_deref()
    }

    /// The preferred version, else the highest-priority one.
    pub fn preferred_version_or_latest(&self) -> &str {
        self.preferred.as_deref().or_else(|| self.versions().next()).unwrap_or_default()
    }

    /// The resources of one version (none if it is not served).
    pub fn versioned_resources(&self, version: &str) -> Vec<(ApiResource, ApiCapabilities)> {
        self.data.iter().find(|d| d.version == version).map(|d| d.resources.clone()).unwrap_or_default()
    }

    /// The resources of the preferred version.
    pub fn recommended_resources(&self) -> Vec<(ApiResource, ApiCapabilities)> {
        self.versioned_resources(self.preferred_version_or_latest())
    }

    /// Every kind once, in its most stable served version, in kind order.
    pub fn resources_by_stability(&self) -> Vec<(ApiResource, ApiCapabilities)> {
        let mut best: BTreeMap<&str, &(ApiResource, ApiCapabilities)> = BTreeMap::new();
        // `data` is in priority order, so the first version seen of a kind is its most stable.
        for resource in self.data.iter().flat_map(|d| &d.resources) {
            best.entry(resource.0.kind.as_str()).or_insert(resource);
        }
        best.into_values().cloned().collect()
    }

    /// The kind in the preferred version, if served there.
    pub fn recommended_kind(&self, kind: &str) -> Option<(ApiResource, ApiCapabilities)> {
        self.recommended_resources().into_iter().find(|(resource, _)| resource.kind == kind)
    }
}

/// Which groups a run of [`Discovery`] queries.
#[derive(Clone, Debug)]
enum Mode {
    Allow(Vec<String>),
    Block(Vec<String>),
}

impl Mode {
    fn queries(&self, group: &str) -> bool {
        match self {
            Mode::Allow(allowed) => allowed.iter().any(|g| g == group),
            Mode::Block(blocked) => !blocked.iter().any(|g| g == group),
        }
    }
}

/// Every served group, as kube's `discovery::Discovery`: make it, optionally
/// [`filter`](Discovery::filter) or [`exclude`](Discovery::exclude) groups, then
/// [`run`](Discovery::run).
#[derive(Clone)]
pub struct Discovery {
    client: Client,
    groups: BTreeMap<String, ApiGroup>,
    mode: Mode,
}

impl Discovery {
    /// A discovery of every group of the client's cluster (nothing is read before `run`).
    #[must_use]
    pub fn new(client: Client) -> Self {
        Discovery { client, groups: BTreeMap::new(), mode: Mode::Block(Vec::new()) }
    }

    /// Query only these groups.
    #[must_use]
    pub fn filter(mut self, allow: &[&str]) -> Self {
        self.mode = Mode::Allow(allow.iter().map(|g| (*g).to_owned()).collect());
        self
    }

    /// Query every group but these.
    #[must_use]
    pub fn exclude(mut self, deny: &[&str]) -> Self {
        self.mode = Mode::Block(deny.iter().map(|g| (*g).to_owned()).collect());
        self
    }

    /// Read the served groups (again, if run before).
    pub async fn run(mut self) -> Result<Self> {
        let groups = served_groups(&served_types(&self.client));
        self.groups = groups
            .into_iter()
            .filter(|(name, _)| self.mode.queries(name))
            .map(|(name, versions)| {
                let group = ApiGroup::new(&name, versions);
                (name, group)
            })
            .collect();
        Ok(self)
    }

    /// The same as [`run`](Discovery::run) (kube's aggregated discovery gives the same answer).
    pub async fn run_aggregated(self) -> Result<Self> {
        self.run().await
    }

    /// The discovered groups, in name order (the core group first).
    pub fn groups(&self) -> impl Iterator<Item = &ApiGroup> {
        self.groups.values()
    }

    /// The discovered groups in name order.
    pub fn groups_alphabetical(&self) -> Vec<&ApiGroup> {
        self.groups().collect()
    }

    /// One discovered group.
    pub fn get(&self, group: &str) -> Option<&ApiGroup> {
        self.groups.get(group)
    }

    /// Whether the group was discovered.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// The resource of a group, version and kind, if discovered.
    pub fn resolve_gvk(&self, gvk: &GroupVersionKind) -> Option<(ApiResource, ApiCapabilities)> {
        self.get(&gvk.group)?.versioned_resources(&gvk.version).into_iter().find(|(r, _)| r.kind == gvk.kind)
    }

    /// The resource of an `apiVersion` and `kind`, if discovered.
    pub fn resolve_typemeta(&self, types: &TypeMeta) -> Option<(ApiResource, ApiCapabilities)> {
        self.resolve_gvk(&GroupVersionKind::try_from(types).ok()?)
    }

    /// The resource of an object's `apiVersion` and `kind`, if discovered.
    pub fn resolve_object(&self, object: &DynamicObject) -> Option<(ApiResource, ApiCapabilities)> {
        self.resolve_typemeta(object.types.as_ref()?)
    }
}

pub use oneshot::{group, pinned_group, pinned_kind};

/// Single lookups, as kube's `discovery::oneshot`.
pub mod oneshot {
    use super::*;

    /// One served group, by name (`""` for the core group).
    pub async fn group(client: &Client, group: &str) -> Result<ApiGroup> {
        let mut groups = served_groups(&served_types(client));
        match groups.remove(group) {
            Some(versions) => Ok(ApiGroup::new(group, versions)),
            None => Err(Error::Discovery(DiscoveryError::MissingApiGroup(group.to_owned()))),
        }
    }

    /// One served group version, as a group of that version alone (preferred, since asked for).
    /// A version the server does not serve is its 404 NotFound.
    pub async fn pinned_group(client: &Client, gv: &GroupVersion) -> Result<ApiGroup> {
        let mut groups = served_groups(&served_types(client));
        let resources = groups
            .get_mut(&gv.group)
            .and_then(|versions| versions.remove(&gv.version))
            .ok_or_else(|| Error::from(model_apiserver::errors::resource_not_found()))?;
        Ok(ApiGroup {
            name: gv.group.clone(),
            data: vec![GroupVersionData { version: gv.version.clone(), resources }],
            preferred: Some(gv.version.clone()),
        })
    }

    /// The resource of one group, version and kind. A version the server does not serve is its
    /// 404 NotFound; a kind it does not have there is [`DiscoveryError::MissingKind`].
    pub async fn pinned_kind(
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Result<(ApiResource, ApiCapabilities)> {
        let group =
            pinned_group(client, &GroupVersion { group: gvk.group.clone(), version: gvk.version.clone() })
                .await?;
        group
            .versioned_resources(&gvk.version)
            .into_iter()
            .find(|(resource, _)| resource.kind == gvk.kind)
            .ok_or_else(|| Error::Discovery(DiscoveryError::MissingKind(format!("{gvk:?}"))))
    }
}
