//! RBAC authorization for the requests of chosen users: what kube-apiserver's RBAC authorizer
//! (`plugin/pkg/auth/authorizer/rbac`) decides from the stored Roles, ClusterRoles, RoleBindings
//! and ClusterRoleBindings.
//!
//! Only a request whose `user` is a key of [`ServerConfig::service_accounts`](crate::ServerConfig)
//! is checked: it is authorized as that ServiceAccount (user `system:serviceaccount:<ns>:<name>`,
//! groups `system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`).
//! Every other request (the built-in controllers, a workload, `kube-sim serve`'s clients) is
//! allowed, as a cluster admin's would be. So a controller runs under the ClusterRole its manifests
//! give it, and a permission they forget is a 403 here as in production.
//!
//! - The request's attributes are kube-apiserver's `RequestInfo`: the verb (`get`, `list`,
//!   `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`), the API group, the
//!   resource with its subresource (`deployments/status`, `pods/eviction`), the namespace and the
//!   name (a list or watch selecting `metadata.name=<x>` has that name).
//! - A rule allows when its verbs, API groups and resources contain the request's or `*` (a
//!   resource `*` covers subresources; `*/status` any resource's status), and its
//!   `resourceNames`, if any, contain the request's name. ClusterRoleBindings grant everywhere,
//!   RoleBindings in their namespace, through a Role of that namespace or a ClusterRole; a
//!   ServiceAccount subject without a namespace is the binding's namespace's. A ClusterRole's
//!   `aggregationRule` adds the rules of the ClusterRoles its selectors match (what the
//!   aggregation controller writes into it).
//! - A refusal is 403 Forbidden in kube-apiserver's words: `deployments.apps "web" is forbidden:
//!   User "system:serviceaccount:ops:op" cannot update resource "deployments/status" in API
//!   group "apps" in the namespace "ops"` (`... at the cluster scope` for a cluster-wide request).
//!
//! Not modelled: non-resource URLs, impersonation, the escalation and bind checks on writes of
//! roles and bindings, and kube-apiserver's bootstrap roles other than `cluster-admin` (created
//! with the bootstrap objects when any service account is configured).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject,
};
use kube_core::{DynamicObject, Status};
use serde::de::DeserializeOwned;

use crate::request::{Request, Verb};
use crate::server::ApiServer;
use crate::{errors, selector::LabelSelector};

/// A ServiceAccount a user's requests are authorized as.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// `namespace`/`name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        ServiceAccount { namespace: namespace.to_owned(), name: name.to_owned() }
    }

    /// Its user name: `system:serviceaccount:<namespace>:<name>`.
    pub fn user_name(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    fn groups(&self) -> [String; 3] {
        [
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{}", self.namespace),
            "system:authenticated".to_owned(),
        ]
    }
}

/// What a request asks to do (`authorizer.Attributes`).
struct Attributes<'a> {
    verb: &'static str,
    group: &'a str,
    resource: &'a str,
    subresource: Option<&'static str>,
    namespace: &'a str,
    name: String,
}

fn attributes(request: &Request) -> Attributes<'_> {
    let named = |name: &str| name.to_owned();
    let by_field = |selector: Option<&String>| -> String {
        let name = selector.and_then(|s| s.strip_prefix("metadata.name=")).filter(|n| !n.contains(','));
        name.map_or_else(String::new, named)
    };
    let (name, subresource) = match &request.verb {
        Verb::Get { name, subresource, .. }
        | Verb::Update { name, subresource, .. }
        | Verb::Patch { name, subresource, .. } => (named(name), subresource.map(|s| s.name())),
        Verb::CreateSubresource { name, subresource, .. } => (named(name), Some(subresource.name())),
        Verb::Delete { name, .. } => (named(name), None),
        Verb::List { params } => (by_field(params.field_selector.as_ref()), None),
        Verb::Watch { params, .. } => (by_field(params.field_selector.as_ref()), None),
        Verb::Create { .. } | Verb::DeleteCollection { .. } => (String::new(), None),
    };
    Attributes {
        verb: request.verb_name(),
        group: &request.resource.group,
        resource: &request.resource.plural,
        subresource,
        namespace: request.namespace.as_deref().unwrap_or_default(),
        name,
    }
}

impl ApiServer {
    /// Refuse `request` with 403 if its user is authorized by RBAC ([`crate::rbac`]) and no
    /// binding allows it.
    pub(crate) fn authorize(&self, request: &Request) -> Result<(), Status> {
        let Some(user) = request.user.as_deref() else { return Ok(()) };
        let Some(account) = self.config().service_accounts.get(user) else { return Ok(()) };
        let attrs = attributes(request);
        if self.allows(account, &attrs) {
            return Ok(());
        }
        let resource = match attrs.subresource {
            Some(sub) => format!("{}/{sub}", attrs.resource),
            None => attrs.resource.to_owned(),
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace {:?}", attrs.namespace)
        };
        let why = format!(
            "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            account.user_name(),
            attrs.verb,
            attrs.group
        );
        Err(errors::forbidden(attrs.group, attrs.resource, &attrs.name, &why))
    }

    fn allows(&self, account: &ServiceAccount, attrs: &Attributes<'_>) -> bool {
        let cluster_roles: Vec<ClusterRole> = self.stored("rbac.authorization.k8s.io", "clusterroles", None);
        let rules_of_cluster_role = |name: &str| -> Vec<PolicyRule> {
            let Some(role) = cluster_roles.iter().find(|r| r.metadata.name.as_deref() == Some(name)) else {
                return Vec::new();
            };
            let mut rules = role.rules.clone().unwrap_or_default();
            if let Some(aggregation) = &role.aggregation_rule {
                rules.extend(aggregated(aggregation, &cluster_roles));
            }
            rules
        };
        let applies = |rules: &[PolicyRule]| rules.iter().any(|rule| rule_allows(rule, attrs));
        let bindings: Vec<ClusterRoleBinding> =
            self.stored("rbac.authorization.k8s.io", "clusterrolebindings", None);
        for binding in &bindings {
            if binding.role_ref.kind == "ClusterRole"
                && binds(binding.subjects.as_deref(), account, "")
                && applies(&rules_of_cluster_role(&binding.role_ref.name))
            {
                return true;
            }
        }
        if attrs.namespace.is_empty() {
            return false;
        }
        let role_bindings: Vec<RoleBinding> =
            self.stored("rbac.authorization.k8s.io", "rolebindings", Some(attrs.namespace));
        let roles: Vec<Role> = self.stored("rbac.authorization.k8s.io", "roles", Some(attrs.namespace));
        role_bindings.iter().filter(|b| binds(b.subjects.as_deref(), account, attrs.namespace)).any(|b| {
            let name = b.role_ref.name.as_str();
            match b.role_ref.kind.as_str() {
                "Role" => roles
                    .iter()
                    .find(|r| r.metadata.name.as_deref() == Some(name))
                    .is_some_and(|r| applies(r.rules.as_deref().unwrap_or_default())),
                "ClusterRole" => applies(&rules_of_cluster_role(name)),
                _ => false,
            }
        })
    }

    /// The stored objects of a built-in kind, typed (one that does not decode is skipped).
    fn stored<K: DeserializeOwned>(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<K> {
        let Some((_, resource)) = self.types().get_with_storage_key(group, "v1", plural) else {
            return Vec::new();
        };
        let snapshot = self.snapshot();
        let objects: Vec<Arc<DynamicObject>> =
            snapshot.iter_resource(resource, namespace).map(|(_, o)| o.clone()).collect();
        objects
            .iter()
            .filter_map(|o| serde_json::to_value(&**o).ok().and_then(|v| serde_json::from_value(v).ok()))
            .collect()
    }
}

/// The rules of the ClusterRoles an aggregation rule's selectors match.
fn aggregated(rule: &AggregationRule, roles: &[ClusterRole]) -> Vec<PolicyRule> {
    let selectors: Vec<LabelSelector> = rule
        .cluster_role_selectors
        .iter()
        .flatten()
        .filter_map(|s| LabelSelector::from_label_selector(s).ok())
        .collect();
    let empty = std::collections::BTreeMap::new();
    let mut names = BTreeSet::new();
    let mut rules = Vec::new();
    for role in roles.iter().filter(|r| r.aggregation_rule.is_none()) {
        let labels = role.metadata.labels.as_ref().unwrap_or(&empty);
        if selectors.iter().any(|s| s.matches(labels)) && names.insert(role.metadata.name.clone()) {
            rules.extend(role.rules.clone().unwrap_or_default());
        }
    }
    rules
}

/// Whether one of `subjects` is `account` (`appliesToUser`), `namespace` being the binding's
/// (empty for a ClusterRoleBinding).
fn binds(subjects: Option<&[Subject]>, account: &ServiceAccount, namespace: &str) -> bool {
    let user = account.user_name();
    let groups = account.groups();
    subjects.unwrap_or_default().iter().any(|s| match s.kind.as_str() {
        "ServiceAccount" => {
            let ns = s.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(namespace);
            !ns.is_empty() && ns == account.namespace && s.name == account.name
        }
        "User" => s.name == user,
        "Group" => groups.contains(&s.name),
        _ => false,
    })
}

/// `RuleAllows` for a resource request.
fn rule_allows(rule: &PolicyRule, attrs: &Attributes<'_>) -> bool {
    let has = |list: Option<&Vec<String>>, value: &str| {
        list.is_some_and(|l| l.iter().any(|v| v == "*" || v == value))
    };
    if !rule.verbs.iter().any(|v| v == "*" || v == attrs.verb) || !has(rule.api_groups.as_ref(), attrs.group)
    {
        return false;
    }
    let resource_matches = rule.resources.iter().flatten().any(|r| match attrs.subresource {
        _ if r == "*" => true,
        None => r == attrs.resource,
        Some(sub) => {
            r.strip_prefix(attrs.resource).and_then(|rest| rest.strip_prefix('/')) == Some(sub)
                || r.strip_prefix("*/") == Some(sub)
        }
    });
    if !resource_matches {
        return false;
    }
    match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => !attrs.name.is_empty() && names.contains(&attrs.name),
    }
}
