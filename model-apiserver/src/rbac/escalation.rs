//! RBAC's escalation and bind prevention: what kube-apiserver's policy-based registries of roles
//! and bindings (`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`)
//! check before storing a write of a checked user.
//!
//! - A Role or ClusterRole may grant only what its writer holds in that namespace (cluster-wide
//!   for a ClusterRole), unless the writer may `escalate` it; setting or changing an
//!   `aggregationRule` needs every permission (`*` on `*`).
//! - A RoleBinding or ClusterRoleBinding may reference only a role whose permissions its writer
//!   holds in the binding's namespace (cluster-wide for a ClusterRoleBinding), unless the writer
//!   may `bind` that role; a role that does not exist is 404.
//! - An update that changes only what the garbage collector writes (owner references,
//!   finalizers, managed fields) is not checked.
//!
//! A refusal is 403 with upstream's words (`ConfirmNoEscalation`): the permissions not held,
//! broken down to one verb, resource and name each (`Covers`), merged per resource
//! (`CompactRules`), printed as `CompactString` does and sorted.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef};
use kube_core::{DynamicObject, Status};
use serde::de::DeserializeOwned;

use super::{Attributes, Policy, RBAC_GROUP, ServiceAccount};
use crate::errors;
use crate::server::{ApiServer, Target};

/// What refuses an `aggregationRule` to a writer without every permission.
const AGGREGATION_RULE_FORBIDDEN: &str = "must have cluster-admin privileges to use the aggregationRule";

impl ApiServer {
    /// Refuse a create (`old` is `None`) or update of a role or binding by a user RBAC checks
    /// with 403 when it would grant what the user does not hold (see [`self`]). Runs where the
    /// registries' checks run: after mutating admission, before validation. `name_generated`:
    /// the storage has not named the object yet upstream, so the refusal names none.
    pub(crate) fn check_rbac_escalation(
        &self,
        t: &Target,
        old: Option<&DynamicObject>,
        object: &DynamicObject,
        name_generated: bool,
    ) -> Result<(), Status> {
        if t.ty.custom || t.ty.api.group != RBAC_GROUP {
            return Ok(());
        }
        let Some(user) = t.user.as_deref() else { return Ok(()) };
        let Some(account) = self.config().service_accounts.get(user) else { return Ok(()) };
        let plural = t.ty.api.plural.as_str();
        let name = object.metadata.name.clone().filter(|_| !name_generated).unwrap_or_default();
        let namespace: &str = &t.namespace;
        let forbidden = |why: &str| errors::forbidden(RBAC_GROUP, plural, &name, why);
        let only_gc_fields = old.is_some_and(|old| only_gc_fields_change(old, object));
        match plural {
            "roles" | "clusterroles" => {
                // The request's name: none for a create (a POST to the collection).
                let request_name = if old.is_some() { name.clone() } else { String::new() };
                let escalate = Attributes {
                    verb: "escalate",
                    group: RBAC_GROUP,
                    resource: plural,
                    subresource: None,
                    namespace,
                    name: request_name,
                };
                if self.allows(account, &escalate) || only_gc_fields {
                    return Ok(());
                }
                let (rules, aggregates) = if plural == "roles" {
                    let Some(role) = typed::<Role>(object) else { return Ok(()) };
                    (role.rules.unwrap_or_default(), false)
                } else {
                    let Some(role) = typed::<ClusterRole>(object) else { return Ok(()) };
                    let was_aggregating =
                        old.and_then(typed::<ClusterRole>).is_some_and(|o| has_aggregation_rule(&o));
                    let aggregates = has_aggregation_rule(&role) || was_aggregating;
                    (role.rules.unwrap_or_default(), aggregates)
                };
                let policy = self.policy(namespace);
                confirm_no_escalation(&policy, account, &rules).map_err(|why| forbidden(&why))?;
                if aggregates {
                    confirm_no_escalation(&policy, account, &full_authority())
                        .map_err(|_| forbidden(AGGREGATION_RULE_FORBIDDEN))?;
                }
                Ok(())
            }
            "rolebindings" | "clusterrolebindings" => {
                if only_gc_fields {
                    return Ok(());
                }
                let role_ref = if plural == "rolebindings" {
                    typed::<RoleBinding>(object).map(|b| b.role_ref)
                } else {
                    typed::<ClusterRoleBinding>(object).map(|b| b.role_ref)
                };
                let Some(role_ref) = role_ref else { return Ok(()) };
                if self.may_bind(account, &role_ref, namespace) {
                    return Ok(());
                }
                let policy = self.policy(namespace);
                let rules = policy.role_ref_rules(&role_ref.kind, &role_ref.name)?;
                confirm_no_escalation(&policy, account, &rules).map_err(|why| forbidden(&why))
            }
            _ => Ok(()),
        }
    }

    /// Whether `account` may `bind` the role `role_ref` names in `namespace`
    /// (`BindingAuthorized`).
    fn may_bind(&self, account: &ServiceAccount, role_ref: &RoleRef, namespace: &str) -> bool {
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            _ => return false,
        };
        let bind = Attributes {
            verb: "bind",
            group: role_ref.api_group.as_group(),
            resource,
            subresource: None,
            namespace,
            name: role_ref.name.clone(),
        };
        self.allows(account, &bind)
    }
}

/// A `roleRef.apiGroup`: required in every Kubernetes version, though the generated type of the
/// newest makes it optional.
trait AsGroup {
    fn as_group(&self) -> &str;
}

impl AsGroup for String {
    fn as_group(&self) -> &str {
        self
    }
}

impl AsGroup for Option<String> {
    fn as_group(&self) -> &str {
        self.as_deref().unwrap_or_default()
    }
}

/// `object` as a typed RBAC object (`None` when it does not decode: validation refuses it).
fn typed<K: DeserializeOwned>(object: &DynamicObject) -> Option<K> {
    serde_json::to_value(object).ok().and_then(|v| serde_json::from_value(v).ok())
}

fn has_aggregation_rule(role: &ClusterRole) -> bool {
    role.aggregation_rule
        .as_ref()
        .and_then(|a| a.cluster_role_selectors.as_ref())
        .is_some_and(|s| !s.is_empty())
}

/// `*` on everything, resources and non-resource URLs: what an `aggregationRule` needs.
fn full_authority() -> [PolicyRule; 2] {
    let all = || Some(vec!["*".to_owned()]);
    [
        PolicyRule {
            api_groups: all(),
            resources: all(),
            verbs: vec!["*".to_owned()],
            ..PolicyRule::default()
        },
        PolicyRule { non_resource_urls: all(), verbs: vec!["*".to_owned()], ..PolicyRule::default() },
    ]
}

/// Whether `new` differs from `old` only in what the garbage collector writes
/// (`IsOnlyMutatingGCFields`): owner references, finalizers, managed fields.
fn only_gc_fields_change(old: &DynamicObject, new: &DynamicObject) -> bool {
    let mut meta = new.metadata.clone();
    meta.owner_references.clone_from(&old.metadata.owner_references);
    meta.finalizers.clone_from(&old.metadata.finalizers);
    meta.managed_fields.clone_from(&old.metadata.managed_fields);
    meta.self_link.clone_from(&old.metadata.self_link);
    meta == old.metadata && new.data == old.data
}

/// `ConfirmNoEscalation`: `Ok` when the rules bound to `account` cover `rules`, else upstream's
/// message naming what they miss.
fn confirm_no_escalation(
    policy: &Policy,
    account: &ServiceAccount,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, resolution_errors) = policy.rules_for(account);
    let missing: Vec<PolicyRule> =
        rules.iter().flat_map(breakdown).filter(|sub| !owner.iter().any(|o| rule_covers(o, sub))).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let descriptions: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    let groups = account.groups();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        account.user_name(),
        go_strings(&groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !resolution_errors.is_empty() {
        // `%v` of a one-element slice holding the errors' aggregate.
        let mut distinct: Vec<&str> = Vec::new();
        for status in &resolution_errors {
            if !distinct.contains(&status.message.as_str()) {
                distinct.push(&status.message);
            }
        }
        let aggregate =
            if distinct.len() == 1 { distinct[0].to_owned() } else { format!("[{}]", distinct.join(", ")) };
        message.push_str(&format!("; resolution errors: [{aggregate}]"));
    }
    Err(message)
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_strings(values: &[String]) -> String {
    format!("[{}]", values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(" "))
}

/// `BreakdownRule`: one rule per group, resource, verb and resource name (or per URL and verb).
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| Some(vec![s.clone()]);
    let mut subrules = Vec::new();
    for group in rule.api_groups.iter().flatten() {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                let sub = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                match rule.resource_names.as_deref() {
                    Some(names) if !names.is_empty() => subrules
                        .extend(names.iter().map(|n| PolicyRule { resource_names: one(n), ..sub.clone() })),
                    _ => subrules.push(sub),
                }
            }
        }
    }
    for url in rule.non_resource_urls.iter().flatten() {
        for verb in &rule.verbs {
            subrules.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    subrules
}

fn list(values: &Option<Vec<String>>) -> &[String] {
    values.as_deref().unwrap_or_default()
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|s| s == value)
}

fn has_all(set: &[String], values: &[String]) -> bool {
    values.iter().all(|v| has(set, v))
}

/// `ruleCovers`: whether `owner` covers `sub` (one verb, resource and name, or one URL).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), "*") || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resources_cover_all(list(&owner.resources), list(&sub.resources));
    let urls = list(&sub.non_resource_urls)
        .iter()
        .all(|path| list(&owner.non_resource_urls).iter().any(|o| non_resource_url_covers(o, path)));
    let (owner_names, sub_names) = (list(&owner.resource_names), list(&sub.resource_names));
    let names = owner_names.is_empty() || (!sub_names.is_empty() && has_all(owner_names, sub_names));
    verbs && groups && resources && urls && names
}

/// `resourceCoversAll`: `*`, the resource itself, or `*/<subresource>`.
fn resources_cover_all(set: &[String], covers: &[String]) -> bool {
    if has(set, "*") || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        has(set, path) || path.split_once('/').is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

/// `nonResourceURLCovers`: the same URL, or a prefix ending in `*`.
fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

/// `CompactRules`: rules on one group and one resource (and at most one name) that differ only
/// in their verbs become one rule, with the verbs in the order first seen.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: BTreeMap<(String, String, Option<String>), PolicyRule> = BTreeMap::new();
    for rule in rules {
        let (groups, resources, names) =
            (list(&rule.api_groups), list(&rule.resources), list(&rule.resource_names));
        let is_simple =
            groups.len() == 1 && resources.len() == 1 && names.len() <= 1 && rule.non_resource_urls.is_none();
        if !is_simple {
            compacted.push(rule);
            continue;
        }
        let key = (groups[0].clone(), resources[0].clone(), names.first().cloned());
        match simple.get_mut(&key) {
            Some(existing) => {
                for verb in rule.verbs {
                    if !existing.verbs.contains(&verb) {
                        existing.verbs.push(verb);
                    }
                }
            }
            None => {
                simple.insert(key, rule);
            }
        }
    }
    compacted.extend(simple.into_values());
    compacted
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let fields = [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ];
    let parts: Vec<String> =
        fields.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}:{}", go_strings(v))).collect();
    format!("{{{}}}", parts.join(", "))
}
