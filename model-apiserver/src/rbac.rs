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
//!   `aggregationRule` adds the rules of the ClusterRoles its selectors match, transitively
//!   (what the aggregation controller writes into it).
//! - A refusal is 403 Forbidden in kube-apiserver's words: `deployments.apps "web" is forbidden:
//!   User "system:serviceaccount:ops:op" cannot update resource "deployments/status" in API
//!   group "apps" in the namespace "ops"` (`... at the cluster scope` for a cluster-wide request).
//! - Writes of roles and bindings by a checked user pass kube-apiserver's escalation and bind
//!   prevention (`rbac/escalation.rs`): a Role or ClusterRole may grant only what its writer holds
//!   (or it may `escalate` that role), a binding may reference only a role whose permissions its
//!   writer holds (or it may `bind` that role), and an `aggregationRule` needs every permission.
//!   The refusal is upstream's 403: `roles.rbac.authorization.k8s.io "reader" is forbidden: user
//!   "system:serviceaccount:ops:op" (groups=["system:serviceaccounts"
//!   "system:serviceaccounts:ops" "system:authenticated"]) is attempting to grant RBAC
//!   permissions not currently held:` and the missing rules, compacted and sorted, one a line.
//! - When any service account is configured, the bootstrap objects include the ClusterRoles
//!   `cluster-admin`, `admin`, `edit` and `view` and the `system:aggregate-to-*` roles the last
//!   three aggregate (`rbac/bootstrap.rs`), so a RoleBinding to `view` or `edit` grants what it
//!   does on a cluster.
//!
//! Not modelled: non-resource URLs, impersonation, and RBAC's other bootstrap roles and
//! bindings (`system:*` roles of the control plane's components, `system:discovery`,
//! `system:basic-user`). The aggregation controller's eventual rules are computed on each
//! decision rather than written into the aggregating role, so a read of `admin` shows no rules.
//! An escalation refusal quotes names as Rust's debug format does, which is Go's `%q` for
//! printable names.

pub(crate) mod bootstrap;
mod escalation;

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

    /// Whether a rule bound to `account` allows `attrs` (the RBAC authorizer's decision).
    fn allows(&self, account: &ServiceAccount, attrs: &Attributes<'_>) -> bool {
        let (rules, _) = self.policy(attrs.namespace).rules_for(account);
        rules.iter().any(|rule| rule_allows(rule, attrs))
    }

    /// The stored RBAC objects a decision in `namespace` reads (empty: cluster-wide only).
    fn policy(&self, namespace: &str) -> Policy {
        let (roles, role_bindings) = if namespace.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            (
                self.stored(RBAC_GROUP, "roles", Some(namespace)),
                self.stored(RBAC_GROUP, "rolebindings", Some(namespace)),
            )
        };
        Policy {
            cluster_roles: self.stored(RBAC_GROUP, "clusterroles", None),
            cluster_role_bindings: self.stored(RBAC_GROUP, "clusterrolebindings", None),
            roles,
            role_bindings,
        }
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

/// The API group of RBAC's kinds.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The stored RBAC objects one decision reads: every ClusterRole and ClusterRoleBinding, and the
/// Roles and RoleBindings of one namespace (none for a cluster-wide decision).
struct Policy {
    cluster_roles: Vec<ClusterRole>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    roles: Vec<Role>,
    role_bindings: Vec<RoleBinding>,
}

impl Policy {
    /// A ClusterRole's rules with those its `aggregationRule` gathers, transitively (what the
    /// aggregation controller writes into it: `admin` gathers `edit`, which gathers `view`);
    /// `None` when it does not exist.
    fn cluster_role_rules(&self, name: &str) -> Option<Vec<PolicyRule>> {
        let root = self.cluster_roles.iter().find(|r| r.metadata.name.as_deref() == Some(name))?;
        let mut seen = BTreeSet::from([name]);
        let mut queue = std::collections::VecDeque::from([root]);
        let mut rules = Vec::new();
        // Each role enters the queue once: the walk is bounded by the number of roles.
        while let Some(role) = queue.pop_front() {
            rules.extend(role.rules.iter().flatten().cloned());
            for matched in role.aggregation_rule.iter().flat_map(|a| aggregated(a, &self.cluster_roles)) {
                if let Some(matched_name) = matched.metadata.name.as_deref()
                    && seen.insert(matched_name)
                {
                    queue.push_back(matched);
                }
            }
        }
        Some(rules)
    }

    /// The rules a binding's `roleRef` grants (`GetRoleReferenceRules`), or 404 for a role that
    /// does not exist, as the registries' getters answer.
    fn role_ref_rules(&self, kind: &str, name: &str) -> Result<Vec<PolicyRule>, Status> {
        match kind {
            "Role" => self
                .roles
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(name))
                .map(|r| r.rules.clone().unwrap_or_default())
                .ok_or_else(|| errors::not_found(RBAC_GROUP, "roles", name)),
            "ClusterRole" => self
                .cluster_role_rules(name)
                .ok_or_else(|| errors::not_found(RBAC_GROUP, "clusterroles", name)),
            _ => Err(Status::failure(&format!("unsupported role reference kind: {kind:?}"), "InternalError")
                .with_code(500)),
        }
    }

    /// Every rule bound to `account` (`RulesFor`): through ClusterRoleBindings, then the
    /// RoleBindings of the namespace, in storage order; and the errors resolving a binding whose
    /// role does not exist.
    fn rules_for(&self, account: &ServiceAccount) -> (Vec<PolicyRule>, Vec<Status>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let refs = self
            .cluster_role_bindings
            .iter()
            .filter(|b| binds(b.subjects.as_deref(), account, ""))
            .map(|b| &b.role_ref)
            .chain(
                self.role_bindings
                    .iter()
                    .filter(|b| {
                        let namespace = b.metadata.namespace.as_deref().unwrap_or_default();
                        binds(b.subjects.as_deref(), account, namespace)
                    })
                    .map(|b| &b.role_ref),
            );
        for role_ref in refs {
            match self.role_ref_rules(&role_ref.kind, &role_ref.name) {
                Ok(granted) => rules.extend(granted),
                Err(status) => errors.push(status),
            }
        }
        (rules, errors)
    }
}

/// The ClusterRoles an aggregation rule's selectors match.
fn aggregated<'r>(rule: &AggregationRule, roles: &'r [ClusterRole]) -> Vec<&'r ClusterRole> {
    let selectors: Vec<LabelSelector> = rule
        .cluster_role_selectors
        .iter()
        .flatten()
        .filter_map(|s| LabelSelector::from_label_selector(s).ok())
        .collect();
    let empty = std::collections::BTreeMap::new();
    roles
        .iter()
        .filter(|role| {
            let labels = role.metadata.labels.as_ref().unwrap_or(&empty);
            selectors.iter().any(|s| s.matches(labels))
        })
        .collect()
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
