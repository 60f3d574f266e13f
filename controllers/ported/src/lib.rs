//! kube-rs controllers ported to kube-sim by changing their `use` lines, nothing else: the worked
//! example of docs/porting.md (issue 14).
//!
//! Each module is one controller, written against the kube 5 / kube-runtime 5 API as a kube-rs
//! user writes it. The lines under `// the only lines that differ from the kube-rs original`
//! are its `use` lines, pointing at `sim::...` instead of `kube::...`; the rest is the original's
//! logic in the original's API calls. What a production `main` runs after
//! `Client::try_default()` is each module's `run`, a future taking a [`sim::Client`]: the
//! scenario's controller factory calls it with `clients.default_cluster()`
//! (docs/porting.md, "What changes in main").
//!
//! - [`secret_syncer`]: kube's `examples/secret_syncer.rs`, a ConfigMap mirrored into a Secret
//!   through a finalizer.
//! - [`shared_stream_controllers`]: kube's `examples/shared_stream_controllers.rs`, two
//!   controllers over one shared Pod stream (`reflector::store_shared`, `for_shared_stream`,
//!   `owns_shared_stream`, a predicate on a subscriber).
//! - [`document`]: a Document controller modelled on kube-rs/controller-rs (a CRD, a finalizer,
//!   events, a `const` action, a graceful shutdown, tokio timers and spawn, `WatchStreamExt`).
//!
//! The crate selects no Kubernetes version (k8s-openapi allows one per build and the final crate
//! picks it); its tests pick `latest`.

pub mod document;
pub mod secret_syncer;
pub mod shared_stream_controllers;
