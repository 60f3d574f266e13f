//! Every integration test of this crate, in one test binary (one module per former test file):
//! one binary links once, where one per file linked the dependencies again for each.
// A helper module shared by several former test files is included by each, as it was when each
// file was its own binary.
#![allow(clippy::duplicate_mod, clippy::module_inception)]

/// Two test threads per core unless the user chose a number (`RUST_TEST_THREADS`, or
/// `--test-threads`, which libtest prefers to the variable). These tests spend most of their time
/// waiting: on kubectl processes, watches and connection timeouts. With libtest's default of one
/// thread per core the cores stayed half idle (this suite: 26.3 s with 2 threads, 20.6 s with 4,
/// measured on 2 cores). libtest reads the variable when it starts, after this runs.
#[ctor::ctor(unsafe)]
#[allow(unsafe_code)]
fn two_test_threads_per_core() {
    if std::env::var_os("RUST_TEST_THREADS").is_none() {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) * 2;
        // SAFETY: before main, no other thread exists to read the environment concurrently.
        unsafe { std::env::set_var("RUST_TEST_THREADS", threads.to_string()) };
    }
}

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
