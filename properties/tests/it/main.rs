//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

mod always;
mod builtin;
mod children;
mod diff;
mod diff_properties;
mod esr;
mod explore_dedup;
mod hooks;
mod path;
mod violation;
