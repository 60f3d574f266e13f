//! Discovery documents built from the served [`ResourceTypes`]: `/api`, `/apis`,
//! `/apis/{group}`, `/api/v1` and `/apis/{group}/{version}`, and `/version`.
//!
//! `/api` and `/apis` answer in two forms, chosen by the `Accept` header as kube-apiserver
//! chooses ([`negotiate`]): the legacy `APIVersions` / `APIGroupList`, or the aggregated
//! `APIGroupDiscoveryList` (`apidiscovery.k8s.io/v2`, and `v2beta1` for older clients), which
//! holds every group version's resources in one answer, so a client discovers everything in two
//! requests. The aggregated document is made from the legacy resource lists
//! ([`aggregated`]), so the two always agree.
//!
//! Besides the model's types, the HTTP front serves `pods/log` ([`super::logs`]) and the
//! authorization reviews ([`super::authorization`]); they are listed here as kube-apiserver lists
//! them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{
    apis::meta::v1::{
        APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
        ServerAddressByClientCIDR,
    },
    version::Info,
};
use model_apiserver::{ResourceType, ResourceTypes};
use serde_json::{Value, json};

use super::{authorization, logs};

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

/// Every named group with its versions, in group order (BTreeMap). A group's versions are in
/// Kubernetes version priority, highest first (`v2`, `v1`, `v1beta1`), as kube-apiserver lists
/// them (a CRD's group: apiextensions' `sortGroupDiscoveryByKubeAwareVersion`), so the first one
/// is the preferred version.
fn groups(types: &ResourceTypes) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    groups.insert(authorization::GROUP.to_owned(), vec![authorization::VERSION.to_owned()]);
    for ty in types.iter().filter(|t| !t.api.group.is_empty()) {
        let versions = groups.entry(ty.api.group.clone()).or_default();
        if !versions.contains(&ty.api.version) {
            versions.push(ty.api.version.clone());
        }
    }
    for versions in groups.values_mut() {
        model_apiserver::resources::sort_by_version_priority(versions, String::as_str);
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
    let mut resources = Vec::new();
    if group == authorization::GROUP && version == authorization::VERSION {
        resources.extend(authorization::resources());
    }
    if served.is_empty() && resources.is_empty() {
        return None;
    }
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
            // The subresources whose kind is another group's: `autoscaling/v1` Scale and
            // `policy/v1` Eviction.
            group: match kind {
                "Scale" => Some("autoscaling".to_owned()),
                "Eviction" => Some("policy".to_owned()),
                "TokenRequest" => Some("authentication.k8s.io".to_owned()),
                _ => None,
            },
            version: matches!(kind, "Scale" | "Eviction" | "TokenRequest").then(|| "v1".to_owned()),
            ..Default::default()
        };
        if !ty.custom && ty.api.group.is_empty() && ty.api.plural == "pods" {
            resources.push(sub("binding", "Binding", &["create"]));
            resources.push(sub("ephemeralcontainers", "Pod", &["get", "patch", "update"]));
            resources.push(sub("eviction", "Eviction", &["create"]));
            resources.push(sub("resize", "Pod", &["get", "patch", "update"]));
        }
        if !ty.custom && ty.api.group.is_empty() && ty.api.plural == "serviceaccounts" {
            resources.push(sub("token", "TokenRequest", &["create"]));
        }
        if ty.status_subresource {
            resources.push(sub("status", &ty.api.kind, &["get", "patch", "update"]));
        }
        if ty.scale.is_some() {
            resources.push(sub("scale", "Scale", &["get", "patch", "update"]));
        }
        if logs::serves(&ty.api.group, &ty.api.plural) {
            resources.push(sub("log", &ty.api.kind, &["get"]));
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

/// The aggregated discovery versions served, newest first.
pub const AGGREGATED_VERSIONS: &[&str] = &["v2", "v2beta1"];

/// What a discovery request asked for, by its `Accept` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `APIVersions` / `APIGroupList`.
    Legacy,
    /// `APIGroupDiscoveryList` of `apidiscovery.k8s.io/{version}`.
    Aggregated(&'static str),
}

/// The form an `Accept` header asks for, as kube-apiserver negotiates it: the media ranges in
/// order of their `q` (stable), the first one served wins. A range naming
/// `g=apidiscovery.k8s.io;v=v2|v2beta1;as=APIGroupDiscoveryList` in JSON is the aggregated form
/// (the protobuf one is not served, so it is passed over); any other range that can be served
/// (JSON, `*/*`, protobuf, YAML, answered in JSON as every discovery answer here) is the legacy
/// form, which is also the answer when nothing matches.
pub fn negotiate(accept: &str) -> Form {
    let mut ranges: Vec<(f64, Form)> = Vec::new();
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut g, mut v, mut as_) = (None, None, None);
        for param in parts {
            let (key, value) = param.split_once('=').unwrap_or((param, ""));
            let value = value.trim().trim_matches('"');
            match key.trim() {
                "q" => q = value.parse().unwrap_or(0.0),
                "g" => g = Some(value),
                "v" => v = Some(value),
                "as" => as_ = Some(value),
                _ => {}
            }
        }
        let json = matches!(media.as_str(), "application/json" | "application/*" | "*/*");
        let form = match as_ {
            None if !media.is_empty() => Some(Form::Legacy),
            Some("APIGroupDiscoveryList") if json && g == Some("apidiscovery.k8s.io") => AGGREGATED_VERSIONS
                .iter()
                .find(|known| Some(**known) == v)
                .map(|known| Form::Aggregated(known)),
            _ => None,
        };
        if let Some(form) = form
            && q > 0.0
        {
            ranges.push((q, form));
        }
    }
    // A stable sort by q, highest first: equal q keep the client's order.
    ranges.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
    ranges.first().map_or(Form::Legacy, |(_, form)| *form)
}

/// The Content-Type of an aggregated answer.
pub fn aggregated_content_type(version: &str) -> &'static str {
    if version == "v2beta1" {
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    } else {
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    }
}

/// The aggregated discovery document of `/api` (`core`: the core group alone) or `/apis` (every
/// named group), in `apidiscovery.k8s.io/{version}`. Each resource list is converted from the
/// legacy one as kube-apiserver's `ConvertGroupVersionIntoToDiscovery` does: a resource with its
/// subresources nested, `responseKind`, `scope`, `singularResource`, `verbs`, `shortNames` and
/// `categories`.
pub fn aggregated(types: &ResourceTypes, core: bool, version: &str) -> Value {
    let groups: Vec<(String, Vec<String>)> =
        if core { vec![(String::new(), vec!["v1".to_owned()])] } else { groups(types).into_iter().collect() };
    let mut items = Vec::new();
    for (name, versions) in groups {
        let versions: Vec<Value> = versions
            .iter()
            .filter_map(|v| resource_list(types, &name, v).map(|list| (v, list)))
            .map(|(v, list)| json!({"version": v, "resources": discovery_resources(&list), "freshness": "Current"}))
            .collect();
        let metadata = if name.is_empty() {
            json!({"creationTimestamp": null})
        } else {
            json!({"name": name, "creationTimestamp": null})
        };
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// One group version's legacy resources as `APIResourceDiscovery` entries.
fn discovery_resources(list: &APIResourceList) -> Vec<Value> {
    let kind_of = |r: &APIResource| {
        json!({
            "group": r.group.clone().unwrap_or_default(),
            "version": r.version.clone().unwrap_or_default(),
            "kind": r.kind,
        })
    };
    let scope = |r: &APIResource| if r.namespaced { "Namespaced" } else { "Cluster" };
    let mut out: Vec<Value> = Vec::new();
    for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
        let mut entry = json!({
            "resource": r.name,
            "responseKind": kind_of(r),
            "scope": scope(r),
            "singularResource": r.singular_name,
            "verbs": r.verbs,
        });
        if let Some(short) = r.short_names.as_ref().filter(|s| !s.is_empty()) {
            entry["shortNames"] = json!(short);
        }
        if let Some(categories) = r.categories.as_ref().filter(|c| !c.is_empty()) {
            entry["categories"] = json!(categories);
        }
        out.push(entry);
    }
    for r in list.resources.iter() {
        let Some((parent, sub)) = r.name.split_once('/') else { continue };
        let position = match out.iter().position(|e| e["resource"] == parent) {
            Some(i) => i,
            None => {
                // A subresource without its resource gets an empty parent, as the real server's.
                out.push(json!({"resource": parent, "responseKind": {}, "scope": scope(r), "singularResource": "", "verbs": []}));
                out.len() - 1
            }
        };
        let response_kind = if r.kind.is_empty() { json!({}) } else { kind_of(r) };
        let subresource = json!({"subresource": sub, "responseKind": response_kind, "verbs": r.verbs});
        match out[position].get_mut("subresources").and_then(Value::as_array_mut) {
            Some(subs) => subs.push(subresource),
            None => out[position]["subresources"] = json!([subresource]),
        }
    }
    out
}

/// The ETag of a document: a hash of its JSON, quoted.
pub fn etag(doc: &Value) -> String {
    let hash = doc
        .to_string()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("\"{hash:016X}\"")
}
