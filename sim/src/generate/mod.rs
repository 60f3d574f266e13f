//! Workloads generated from a CRD's structural schema, as Acto does: proptest strategies for
//! valid custom-resource values ([`schema`]), for valid and invalid changes to an object
//! ([`mutation`]), and a serializable sequence of steps that drives a world and checks that the
//! server accepts every valid step and rejects every invalid one with 422 Invalid ([`workload`]).
//!
//! ```no_run
//! # use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
//! # fn crd() -> CustomResourceDefinition { unimplemented!() }
//! use sim::Sim;
//! use sim::generate::GeneratedWorkload;
//!
//! let crd = crd(); // e.g. `Widget::crd()` from kube's `#[derive(CustomResource)]`
//! let workload = GeneratedWorkload::for_crd(&crd, 7, 10).expect("the schema generates");
//! let yaml = serde_yaml_ng::to_string(&crd).expect("the CRD serializes");
//! let report = Sim::builder()
//!     .crds_yaml("default", &yaml)
//!     .expect("the CRD loads")
//!     .generated_workload(workload)
//!     .run(7);
//! assert!(report.verdict.is_pass(), "{}", report.verdict);
//! ```
//!
//! `generated_workload` (rather than `.workload(workload.into_script())`) lets the builder know
//! the steps: a shrinker then shortens them and a regression file holds them
//! ([`crate::shrink::shrink_run`]). `SimBuilder::generate_workload(&crd, steps)` generates a
//! different workload from each run's seed.
//!
//! Values stay small: every recursion, string, array and map has a named bound (the constants in
//! [`schema`]). Generation is deterministic: a seed drives a ChaCha `TestRng`, and the result is
//! persisted decoded (the steps themselves, not only the seed), so a regression file means the
//! same thing after the generators change.

pub mod mutation;
pub mod schema;
pub mod source;
pub mod workload;

pub use mutation::{Expectation, Mutation, MutationKind, invalid_mutations, mutations, valid_mutations};
pub use schema::{body_strategy, value_strategy};
pub use source::WorkloadSource;
pub use workload::{GeneratedWorkload, Step, crd_schema};

/// Why a workload could not be generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The CRD has no version with an `openAPIV3Schema` (nothing to generate from).
    #[error("CRD {crd}: no version has an openAPIV3Schema")]
    NoSchema {
        /// The CRD's name.
        crd: String,
    },
    /// A strategy gave up, e.g. a `pattern` together with length bounds that no generated string
    /// met within proptest's bound on rejected values.
    #[error("step {step}: no value could be generated: {reason}")]
    Unsatisfiable {
        /// The step being generated, from 1.
        step: usize,
        /// proptest's reason.
        reason: String,
    },
}
