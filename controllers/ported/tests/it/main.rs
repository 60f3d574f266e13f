//! Every integration test of `ported-controllers`, in one test binary: per controller a
//! fault-free scenario with an end-state check and a swarm-fault sweep (60 seeds in `cargo
//! test`; 500 seeds in the ignored `*_on_500_seeds` tests, which print what failed).

mod common;
mod document;
mod secret_syncer;
mod shared_stream_controllers;
