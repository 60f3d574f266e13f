//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

mod admission;
mod admission_policy;
mod apply;
mod binding;
mod bootstrap;
mod builtin_validation;
mod cel_rules;
mod crd;
mod crd_serving;
mod decoding;
mod defaults;
mod deletion;
mod determinism;
mod ephemeral_containers;
mod events;
mod eviction;
mod field_selectors;
mod from_snapshot;
mod go_encoding;
mod list;
mod metadata;
mod namespaces;
mod patch;
mod pod_admission;
mod pod_resize;
mod pod_security;
mod rbac;
mod rbac_escalation;
mod registry_fields;
mod resource_quota;
mod revisions;
mod scale;
mod schema;
mod selector;
mod served_kinds;
mod server_apply;
mod state_machine;
mod status;
mod strategic;
mod token;
mod type_errors;
mod unknown_fields;
mod validation;
mod watch;
