//! Regression files live under `regressions/<scenario>/`, one JSON file per failure that
//! `kube-sim explore` found and shrank (the scenario's `:` spelled `.` in the directory name).
//!
//! `cargo test -p regressions` replays every one of them (`tests/replay_all.rs`): each must still
//! fail as recorded on its buggy scenario, and a zoo bug's seed and plan must pass on the
//! operator's `:fixed` variant. `SIM_REPLAY=<file> cargo test -p regressions` replays one file;
//! `cargo run --release --bin kube-sim -- replay <file>` replays it with its story.
