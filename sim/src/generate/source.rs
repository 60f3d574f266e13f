//! Where a world's generated workload comes from: fixed steps, or steps generated from each run's
//! seed. The builder keeps the source (not only a script), so that a shrinker can ask which steps
//! a seed ran and swap in a shorter list ([`crate::SimBuilder::generated_workload_for`]).

use std::sync::Arc;

use futures::future::LocalBoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kube_core::ApiResource;

use super::{GenerateError, GeneratedWorkload};
use crate::workload::{Workload, WorkloadError};

/// A workload script, as [`crate::SimBuilder::workload`] stores it.
pub(crate) type Script =
    Arc<dyn Fn(Workload) -> LocalBoxFuture<'static, Result<(), WorkloadError>> + Send + Sync>;

/// The source of a generated workload.
#[derive(Clone, Debug)]
pub enum WorkloadSource {
    /// The same steps for every seed: hand-written, read from a regression file, or shortened.
    Fixed(Arc<GeneratedWorkload>),
    /// Steps generated from each run's seed with [`GeneratedWorkload::generate`].
    PerSeed {
        /// The resource the steps act on.
        resource: ApiResource,
        /// Its version's `openAPIV3Schema`.
        schema: Arc<JSONSchemaProps>,
        /// Steps per workload.
        steps_max: usize,
    },
}

impl WorkloadSource {
    /// The steps a run of `seed` runs.
    pub fn for_seed(&self, seed: u64) -> Result<GeneratedWorkload, GenerateError> {
        match self {
            WorkloadSource::Fixed(workload) => Ok((**workload).clone()),
            WorkloadSource::PerSeed { resource, schema, steps_max } => {
                GeneratedWorkload::generate(resource, schema, seed, *steps_max)
            }
        }
    }

    /// The script of a fixed source; a per-seed source's script is made per run
    /// ([`WorkloadSource::script_for_seed`]), and this one fails its first step if ever run.
    pub(crate) fn script(&self) -> Script {
        match self {
            WorkloadSource::Fixed(workload) => fixed_script(workload.clone()),
            WorkloadSource::PerSeed { .. } => Arc::new(|_| {
                Box::pin(async {
                    Err(WorkloadError {
                        step: 1,
                        action: "generate the workload".to_owned(),
                        reason: "a per-seed workload source has no script without a seed".to_owned(),
                    })
                })
            }),
        }
    }

    /// The script of a run of `seed`. A workload that cannot be generated fails the run's first
    /// step with the generator's reason (a broken schema is the scenario's bug, not a panic).
    pub(crate) fn script_for_seed(&self, seed: u64) -> Script {
        match self.for_seed(seed) {
            Ok(workload) => fixed_script(Arc::new(workload)),
            Err(error) => {
                let failure = WorkloadError {
                    step: match &error {
                        GenerateError::Unsatisfiable { step, .. } => *step as u64,
                        GenerateError::NoSchema { .. } => 1,
                    },
                    action: "generate the workload".to_owned(),
                    reason: error.to_string(),
                };
                Arc::new(move |_| {
                    let failure = failure.clone();
                    Box::pin(async move { Err(failure) })
                })
            }
        }
    }
}

fn fixed_script(workload: Arc<GeneratedWorkload>) -> Script {
    Arc::new(move |w| {
        let workload = workload.clone();
        Box::pin(async move { workload.run(&w).await })
    })
}
