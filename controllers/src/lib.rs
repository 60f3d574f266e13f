//! # controllers: what a real cluster runs, and operators to test
//!
//! - [`builtins`]: the built-in Kubernetes controllers that envtest lacks (garbage collector,
//!   namespace lifecycle, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
//!   disruption, TTL-after-finished, ServiceAccount, root CA publisher, endpoints, EndpointSlice,
//!   the PersistentVolume binder and a local volume provisioner) and a kubelet-lite, each a
//!   simulated controller on its own node. `builtins::all(Sim::builder())` adds them all.
//! - [`zoo`]: example operators modelled on real ones, each with a fixed variant and planted-bug
//!   variants (Sieve's and Acto's bugs), as named scenarios: `zoo::scenarios()`.
//!
//! Everything here uses only `sim`'s public API, as a user's controller would.

pub mod builtins;
pub mod zoo;
