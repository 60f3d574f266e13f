//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

mod cli_commands;
mod cli_deploy;
mod cli_hostile;
mod explain;
mod explore;
mod list;
mod perfetto;
mod report;
mod run;
mod serve_builtins;
mod serve_replay;
mod serve_rollouts;
mod serve_tools;
/// The former unit tests of `kube_sim::serve`'s modules.
mod serve {
    mod replay;
}
