//! What a scenario's controllers do, as a run shows it: the facts that decide which fault kinds
//! can act on which controller (each kind's `cannot_act`, in its file).
//!
//! Every run records its [`Profile`] ([`crate::RunReport::profile`]). Swarm selection reads the
//! profile of the scenario's fault-free run at [`PROFILE_SEED`] (measured once per builder, on a
//! fresh thread, see [`crate::SimBuilder::fault_profile`]) so that it never draws a fault that
//! cannot act: a `staleReplica` on a controller whose informers all list consistently, a
//! `pauseReconciles` on one that runs no reconciles, a `partition` of a node that makes no calls.
//! Guided exploration reads its reference run's profile and plans only the points where a fault
//! can act.

use std::collections::BTreeMap;
use std::fmt;

/// The seed of the fault-free run a swarm's profile is measured on. A profile is a function of
/// the builder alone, so a seed's plan is the same in a sweep, in `SIM_SEED` and in `explore`.
pub const PROFILE_SEED: u64 = 0;

/// The verbs that can change state (as `Request::is_write` decides).
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// The resource of Leases: a node that writes them runs leader election.
const LEASES: &str = "leases";

/// What one controller node did in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerProfile {
    /// Its informers (`cluster/resource[/namespace]`), each `true` if it lists with
    /// resourceVersion "0" (`ListSemantic::Any`, from a watch cache), `false` if consistently. An
    /// informer that listed both ways (never, in practice) counts as listing with "0".
    pub informers: BTreeMap<String, bool>,
    /// API calls it made (watch polls excluded).
    pub calls: u64,
    /// Of those, writes.
    pub writes: u64,
    /// Reconciles it started.
    pub reconciles: u64,
    /// Whether it wrote a Lease (runs leader election).
    pub leader_elected: bool,
}

impl ControllerProfile {
    /// Whether some informer lists with `resourceVersion="0"` (from a watch cache, possibly stale).
    pub fn lists_any(&self) -> bool {
        self.informers.values().any(|any| *any)
    }

    fn merge(&mut self, other: &ControllerProfile) {
        for (name, any) in &other.informers {
            *self.informers.entry(name.clone()).or_insert(*any) |= *any;
        }
        self.calls += other.calls;
        self.writes += other.writes;
        self.reconciles += other.reconciles;
        self.leader_elected |= other.leader_elected;
    }
}

/// What every node of a run did, by node name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Per node (controllers and the workload alike; engine nodes never appear).
    pub nodes: BTreeMap<String, ControllerProfile>,
    /// Per replica node, its leader-election group (faults may name the group).
    pub groups: BTreeMap<String, String>,
    /// The Node objects of the first declared cluster at the end of the run, by name (the
    /// Nodes a `loseNode` fault may act on).
    pub kube_nodes: Vec<String>,
}

impl Profile {
    /// What `name` did: a node, or the union of a replica group's nodes.
    pub fn of(&self, name: &str) -> ControllerProfile {
        let mut merged = ControllerProfile::default();
        for (node, profile) in &self.nodes {
            if node == name || self.groups.get(node).is_some_and(|g| g == name) {
                merged.merge(profile);
            }
        }
        merged
    }

    /// Whether any node has an informer (a watch a compaction can break).
    pub fn has_informers(&self) -> bool {
        self.nodes.values().any(|n| !n.informers.is_empty())
    }

    fn node(&mut self, node: &str) -> &mut ControllerProfile {
        if !self.nodes.contains_key(node) {
            self.nodes.insert(node.to_owned(), ControllerProfile::default());
        }
        self.nodes.get_mut(node).expect("inserted above")
    }

    /// An informer of `node` listed, with resourceVersion "0" (`any`) or consistently.
    // `pub` (hidden from the docs) for its test in tests/it/faults/profile.rs only.
    #[doc(hidden)]
    pub fn note_list(&mut self, node: &str, informer: &str, any: bool) {
        let informers = &mut self.node(node).informers;
        if let Some(known) = informers.get_mut(informer) {
            *known |= any;
        } else {
            informers.insert(informer.to_owned(), any);
        }
    }

    /// A raw watch (`Api::watch`) of `node` started: watch faults act on it as on an informer's
    /// watch. It lists nothing, so it counts as an informer that lists consistently.
    pub(crate) fn note_watch(&mut self, node: &str, watch: &str) {
        self.note_list(node, watch, false);
    }

    /// `node` sent a request.
    // `pub` (hidden from the docs) for the tests in tests/it/faults/profile.rs and
    // tests/it/guided/points.rs only.
    #[doc(hidden)]
    pub fn note_call(&mut self, node: &str, verb: &str, resource: &str) {
        if verb == "watch" {
            return;
        }
        let profile = self.node(node);
        profile.calls += 1;
        if WRITE_VERBS.contains(&verb) {
            profile.writes += 1;
            profile.leader_elected |= resource == LEASES;
        }
    }

    /// `node` started a reconcile.
    // `pub` (hidden from the docs) for the tests in tests/it/faults/profile.rs and
    // tests/it/guided/points.rs only.
    #[doc(hidden)]
    pub fn note_reconcile(&mut self, node: &str) {
        self.node(node).reconciles += 1;
    }

    /// `node` is a replica of `group`.
    // `pub` (hidden from the docs) for its test in tests/it/faults/profile.rs only.
    #[doc(hidden)]
    pub fn note_group(&mut self, node: &str, group: &str) {
        self.groups.insert(node.to_owned(), group.to_owned());
    }
}

impl fmt::Display for ControllerProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let any = self.informers.values().filter(|any| **any).count();
        write!(
            f,
            "{} informers ({any} listing with resourceVersion \"0\"), {} calls, {} writes, {} reconciles{}",
            self.informers.len(),
            self.calls,
            self.writes,
            self.reconciles,
            if self.leader_elected { ", leader-elected" } else { "" }
        )
    }
}
