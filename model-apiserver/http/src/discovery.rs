//! Discovery documents built from the served [`ResourceTypes`]: `/api`, `/apis`,
//! `/apis/{group}`, `/api/v1` and `/apis/{group}/{version}`, and `/version`.
//!
//! Only the legacy (unaggregated) form is served: kubectl and kube-rs ask for aggregated
//! discovery first and fall back to it when the answer is plain `application/json`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{
    apis::meta::v1::{
        APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
        ServerAddressByClientCIDR,
    },
    version::Info,
};
use model_apiserver::{ResourceType, ResourceTypes};

/// The Kubernetes version `/version` reports: the newest API the model's types follow.
pub const SERVED_VERSION: (&str, &str) = ("1", "33");

/// The verbs every served resource supports.
const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `/version`.
pub fn version() -> Info {
    let (major, minor) = SERVED_VERSION;
    Info {
        major: major.to_owned(),
        minor: minor.to_owned(),
        git_version: format!("v{major}.{minor}.0-kube-sim"),
        git_commit: String::new(),
        git_tree_state: "clean".to_owned(),
        build_date: String::new(),
        go_version: String::new(),
        compiler: "rustc".to_owned(),
        platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        ..Default::default()
    }
}

/// `/api`: the core group's versions.
pub fn core_versions(server_address: &str) -> APIVersions {
    APIVersions {
        versions: vec!["v1".to_owned()],
        server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".to_owned(),
            server_address: server_address.to_owned(),
        }],
    }
}

/// Every named group with its versions, in group order (BTreeMap).
fn groups(types: &ResourceTypes) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ty in types.iter().filter(|t| !t.api.group.is_empty()) {
        let versions = groups.entry(ty.api.group.clone()).or_default();
        if !versions.contains(&ty.api.version) {
            versions.push(ty.api.version.clone());
        }
    }
    groups
}

fn api_group(name: &str, versions: &[String]) -> APIGroup {
    let gv =
        |v: &String| GroupVersionForDiscovery { group_version: format!("{name}/{v}"), version: v.clone() };
    let versions: Vec<GroupVersionForDiscovery> = versions.iter().map(gv).collect();
    APIGroup {
        name: name.to_owned(),
        preferred_version: versions.first().cloned(),
        server_address_by_client_cidrs: None,
        versions,
    }
}

/// `/apis`.
pub fn group_list(types: &ResourceTypes) -> APIGroupList {
    APIGroupList { groups: groups(types).iter().map(|(name, versions)| api_group(name, versions)).collect() }
}

/// `/apis/{group}`, if served.
pub fn group(types: &ResourceTypes, name: &str) -> Option<APIGroup> {
    groups(types).get(name).map(|versions| api_group(name, versions))
}

/// `/api/v1` or `/apis/{group}/{version}`, if served: each resource, then its subresources.
pub fn resource_list(types: &ResourceTypes, group: &str, version: &str) -> Option<APIResourceList> {
    let served: Vec<&ResourceType> =
        types.iter().filter(|t| t.api.group == group && t.api.version == version).map(|t| &**t).collect();
    if served.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for ty in served {
        resources.push(APIResource {
            name: ty.api.plural.clone(),
            singular_name: ty.api.kind.to_lowercase(),
            namespaced: ty.namespaced,
            kind: ty.api.kind.clone(),
            verbs: VERBS.iter().map(|v| (*v).to_owned()).collect(),
            short_names: (!ty.short_names.is_empty()).then(|| ty.short_names.clone()),
            categories: categories(ty),
            ..Default::default()
        });
        let sub = |name: &str, kind: &str, verbs: &[&str]| APIResource {
            name: format!("{}/{name}", ty.api.plural),
            singular_name: String::new(),
            namespaced: ty.namespaced,
            kind: kind.to_owned(),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            group: (kind == "Scale").then(|| "autoscaling".to_owned()),
            version: (kind == "Scale").then(|| "v1".to_owned()),
            ..Default::default()
        };
        if ty.status_subresource {
            resources.push(sub("status", &ty.api.kind, &["get", "patch", "update"]));
        }
        if ty.scale.is_some() {
            resources.push(sub("scale", "Scale", &["get", "patch", "update"]));
        }
    }
    let group_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    Some(APIResourceList { group_version, resources })
}

/// `kubectl get all` lists the kinds in category `all`, as the real server declares them.
fn categories(ty: &ResourceType) -> Option<Vec<String>> {
    let all = matches!(
        (ty.api.group.as_str(), ty.api.kind.as_str()),
        ("", "Pod" | "Service") | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") | ("batch", "Job")
    );
    all.then(|| vec!["all".to_owned()])
}
