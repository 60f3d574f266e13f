//! kube-apiserver's `ResourceQuota` admission plugin
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota`), the last of its chain:
//! a write that would take a namespace past one of its ResourceQuotas is refused with 403, and
//! one that is admitted is charged to the quotas at once, before the object is stored.
//!
//! - It runs on a namespaced create, and on an update of a Service or PersistentVolumeClaim
//!   (what each resource's evaluator handles, [`crate::quota::Evaluator::handles`]); events and
//!   the review resources are ignored.
//! - A quota limits the write when its **status** `hard` names a resource the object's evaluator
//!   measures and the object is in its scopes (`generic.Matches`): a quota the quota controller
//!   has not yet synced limits nothing. For each one, in name order:
//!   - a Pod's containers must state what the quota limits of `cpu` and `memory`
//!     (`failed quota: q: must specify limits.cpu for: app; requests.memory for: app`);
//!   - every such resource must have a `used` value
//!     (`status unknown for quota: q, resources: pods`);
//!   - the object's usage (an update's growth over the stored object's) added to `used` must stay
//!     within `hard` (`exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`).
//! - The quotas whose `used` grows are written through `/status` as kube-apiserver's loopback
//!   client (field manager `kube-apiserver`), each a new revision before the object's, so a
//!   quota's watchers see its usage rise. A create then refused by the storage (the name taken)
//!   stays charged until the quota controller recalculates, as upstream. A dry run is checked
//!   and charges nothing.
//!
//! On with [`crate::ServerConfig::resource_quota`] (the quota controller of the `controllers`
//! crate, which keeps `status`, turns it on). Not modelled: the plugin's configuration file
//! (`limitedResources`), its batching of concurrent requests.

use std::sync::Arc;

use jiff::Timestamp;
use kube_core::DynamicObject;

use crate::quota::{self, Evaluator, ResourceList};

/// A quota's new `used`, by its index among the namespace's quotas.
pub(crate) type Charges = Vec<(usize, ResourceList)>;

/// `CheckRequest`: the quotas (of the object's namespace, in name order) that the write charges
/// and their new `used`, or why it is refused (the text after `is forbidden: `).
pub(crate) fn check(
    evaluator: &Evaluator,
    subresource: Option<&str>,
    object: &DynamicObject,
    old: Option<&DynamicObject>,
    quotas: &[Arc<DynamicObject>],
    now: Timestamp,
) -> Result<Charges, String> {
    let mut interesting = Vec::new();
    for (index, q) in quotas.iter().enumerate() {
        if !evaluator.matches(q, object) {
            continue;
        }
        let name = q.metadata.name.as_deref().unwrap_or_default();
        let hard = quota::list_at(&q.data, "/status/hard");
        let restricted = evaluator.matching_resources(hard.keys().map(String::as_str));
        evaluator.constraints(&restricted, object).map_err(|why| format!("failed quota: {name}: {why}"))?;
        let used = quota::list_at(&q.data, "/status/used");
        if restricted.iter().any(|r| !used.contains_key(r)) {
            return Err(format!("status unknown for quota: {name}, resources: {}", restricted.join(",")));
        }
        interesting.push(index);
    }
    let input = evaluator.usage(object, now);
    let negative: Vec<&str> =
        input.iter().filter(|(_, v)| v.is_negative()).map(|(k, _)| k.as_str()).collect();
    if !negative.is_empty() {
        return Err(format!("quota usage is negative for resource(s): {}", negative.join(",")));
    }
    let mut deltas: Vec<(usize, ResourceList)> = interesting.iter().map(|&i| (i, input.clone())).collect();
    // An update is charged what it adds to the stored object's usage, in the quotas that
    // already counted the stored object.
    if let Some(old) = old.filter(|o| o.metadata.resource_version.as_deref().is_some_and(|rv| !rv.is_empty()))
    {
        let growth = quota::subtract_non_negative(&input, &evaluator.usage(old, now));
        for (index, delta) in &mut deltas {
            if evaluator.matches(&quotas[*index], old) {
                *delta = growth.clone();
            }
        }
    }
    let mut charges = Charges::new();
    for (index, delta) in deltas {
        let delta = quota::remove_zeros(&delta);
        if delta.is_empty() {
            continue;
        }
        let q = &quotas[index];
        let hard = quota::list_at(&q.data, "/status/hard");
        let used = quota::list_at(&q.data, "/status/used");
        let hard_names: Vec<String> = hard.keys().cloned().collect();
        let requested = quota::mask(&delta, &hard_names);
        let new_used = quota::add(&used, &requested);
        if subresource != Some("status") {
            let requested_names: Vec<String> = requested.keys().cloned().collect();
            let exceeded = quota::exceeded(&quota::mask(&new_used, &requested_names), &hard);
            if !exceeded.is_empty() {
                return Err(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    q.metadata.name.as_deref().unwrap_or_default(),
                    quota::pretty(&quota::mask(&requested, &exceeded)),
                    quota::pretty(&quota::mask(&used, &exceeded)),
                    quota::pretty(&quota::mask(&hard, &exceeded)),
                ));
            }
        }
        if new_used != used {
            charges.push((index, new_used));
        }
    }
    Ok(charges)
}
