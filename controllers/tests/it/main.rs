//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The former unit tests of `controllers::builtins`' modules, one file each.
mod builtins {
    mod controller_revisions;
    mod cronjob;
    mod daemonset;
    mod deployment;
    mod endpoints;
    mod endpointslice;
    mod events;
    mod expectations;
    mod hashing;
    mod kinds;
    mod persistentvolume;
    mod rate_limit;
    mod statefulset;
    mod status_patch;
}
mod builtins_all;
mod builtins_cronjob;
mod builtins_daemonset;
mod builtins_deployment;
mod builtins_disruption;
mod builtins_endpoints;
mod builtins_endpointslice;
mod builtins_faults;
mod builtins_garbage_collector;
mod builtins_indexed_job;
mod builtins_job;
mod builtins_kubelet;
mod builtins_kubelet_clock;
mod builtins_kubelet_lifecycle;
mod builtins_kubelet_mounts;
mod builtins_min_ready;
mod builtins_namespace;
mod builtins_namespace_defaults;
mod builtins_node_lifecycle;
mod builtins_pod_resize;
mod builtins_pod_security;
mod builtins_pod_topology;
mod builtins_podgc;
mod builtins_replicaset;
mod builtins_resource_quota;
mod builtins_scheduler;
mod builtins_statefulset;
mod builtins_ttl_after_finished;
mod builtins_volume_protection;
mod builtins_volumes;
mod fault_plans;
mod runtime_wait;
mod web_pods;
mod zoo_carina;
mod zoo_search;
mod zoo_sweeps;
mod zoo_webapp;
mod zoo_yugabyte;
