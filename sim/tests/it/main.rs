//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod api_watch;
mod choices;
mod client_api;
mod configmapgen;
/// The former unit tests of `sim::controller`'s modules.
mod controller {
    mod work_queue;
}
mod crash_loop;
mod custom_resource;
mod decision;
mod delay_watch;
mod determinism;
mod discovery;
mod events;
mod eviction;
/// The former unit tests of `sim::explore`'s modules, one file each.
mod explore {
    mod coverage;
    mod coverage_swarm;
    mod findings;
    mod random;
    mod shard;
    mod unfired;
}
mod fault_hook;
mod fault_plan;
mod fault_zoo;
/// The former unit tests of `sim::faults` (and of `sim::faults::profile`, in it).
mod faults;
mod faults_engine;
mod finalizer;
mod generate_schema;
mod generate_workload;
/// The former unit tests of `sim::guided`'s modules, one file each.
mod guided {
    mod point_map;
    mod points;
}
mod guided_zoo;
mod layering;
mod lifecycles;
mod live;
mod logging;
mod multicluster;
mod pod_logs;
mod process_exit;
mod quiescence_release;
mod random_and_clock;
mod rbac;
mod regression_file;
mod runner;
mod runtime_reflector;
mod runtime_rules;
mod runtime_scheduling;
mod runtime_streams;
mod runtime_wait;
mod scenario_registry;
mod shrink;
mod shrink_workload;
mod sweep;
mod tokio_select;
mod tokio_shim;
mod trace;
mod verdict;
mod watch_wakeups;
mod workload;
