//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

mod decode;
mod discovery;
mod fuzz_requests;
mod guard;
mod kubectl_tools;
mod protobuf;
mod route;
mod serve_hostile;
mod serve_http;
mod serve_kube_rs;
mod serve_kubectl;
mod serve_table;
mod serve_tools;
mod table;
mod wire;
