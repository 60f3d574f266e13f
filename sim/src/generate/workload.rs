//! A generated workload: create, mutate, delete and recreate one custom resource, as a list of
//! steps drawn from the CRD's schema with a seeded proptest runner.
//!
//! The workload is persisted decoded (its JSON is the steps themselves, camelCase), so a
//! regression file replays the same steps after the generators change. Run as a script, it is an
//! oracle for the server's validation: every valid step must be accepted and every invalid one
//! rejected with 422 Invalid naming the labelled field, and an accepted scalar must be what the
//! server stores at its pointer; anything else fails the run with a message naming the step.
//!
//! Generation tracks the body the server should hold (pruned and defaulted with the model's own
//! functions, which are not what this oracle checks) to draw each next mutation from it. A
//! shortened workload keeps its labels: when dropping a step makes a later label wrong (a field
//! path that no longer exists), the run fails with another message, and a shrinker that keeps
//! only shortenings with the same failure discards it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube_core::params::{DeleteParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::GenerateError;
use super::mutation::{Expectation, Mutation, invalid_mutations, valid_mutations};
use super::schema::body_strategy;
use crate::client::{Api, Error};
use crate::workload::{Workload, WorkloadError};

/// The namespace generated objects live in.
pub const NAMESPACE: &str = "default";
/// The name of the generated object.
pub const OBJECT_NAME: &str = "generated";
/// Virtual time between two steps, so that controllers see (some of) the intermediate states.
pub const STEP_PAUSE: Duration = Duration::from_millis(200);
/// How often a deletion is checked for completion, in virtual time.
pub const DELETE_POLL: Duration = Duration::from_millis(50);
/// Checks before a deletion that has not completed fails the step (finalizers that never clear).
pub const DELETE_POLLS_MAX: u32 = 200;
/// Values proptest may reject (a pattern with length bounds, `multipleOf`) while drawing one.
const LOCAL_REJECTS_MAX: u32 = 10_000;
/// Out of [`STEP_WEIGHTS_TOTAL`]: how often an existing object gets a valid mutation, an invalid
/// one, a delete and a recreate.
const STEP_WEIGHTS: [u32; 4] = [10, 6, 1, 1];
const STEP_WEIGHTS_TOTAL: u32 = 18;

/// One step of a generated workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Step {
    /// Create the object with this body (its fields besides apiVersion, kind and metadata).
    Create {
        /// The body: `{"spec": {...}}`.
        body: Value,
    },
    /// Change one field with a JSON merge patch.
    Mutate(Mutation),
    /// Delete the object and wait until it is gone.
    Delete,
    /// Delete the object, wait until it is gone, and create it again with this body.
    Recreate {
        /// The new body.
        body: Value,
    },
}

impl Step {
    /// Whether the step needs the object to exist (every step but `Create`).
    fn needs_object(&self) -> bool {
        !matches!(self, Step::Create { .. })
    }

    /// Whether the object exists after the step, given that the step could run.
    fn leaves_object(&self) -> bool {
        !matches!(self, Step::Delete)
    }
}

/// A sequence of steps on one custom resource, generated from its schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedWorkload {
    /// The resource's apiVersion: `example.com/v1`.
    pub api_version: String,
    /// The resource's kind.
    pub kind: String,
    /// The resource's plural name.
    pub plural: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The seed it was generated from (how it was found; the steps are what replays).
    pub seed: u64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// The tracked body after a step, as the server should store it.
fn stored(schema: &JSONSchemaProps, mut body: Value) -> Value {
    model_apiserver::schema::prune(schema, &mut body);
    model_apiserver::schema::apply_defaults(schema, &mut body);
    body
}

/// ChaCha seed bytes for a step of a seed's workload (both little-endian, zero-padded).
fn seed_bytes(seed: u64, step: usize) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(step as u64).to_le_bytes());
    bytes
}

/// Draws the values of one step from a runner seeded by the seed and the step: the same seed
/// draws the same values. A runner per step, because proptest counts rejected values over a
/// runner's whole life, and [`LOCAL_REJECTS_MAX`] is meant per step.
struct Drawer {
    runner: TestRunner,
}

impl Drawer {
    fn new(seed: u64, step: usize) -> Self {
        let config = Config { max_local_rejects: LOCAL_REJECTS_MAX, ..Config::default() };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed, step));
        Drawer { runner: TestRunner::new_with_rng(config, rng) }
    }

    fn draw<T: std::fmt::Debug>(
        &mut self,
        strategy: &BoxedStrategy<T>,
        step: usize,
    ) -> Result<T, GenerateError> {
        strategy
            .new_tree(&mut self.runner)
            .map(|tree| tree.current())
            .map_err(|reason| GenerateError::Unsatisfiable { step, reason: reason.to_string() })
    }
}

impl GeneratedWorkload {
    /// Generate `steps_max` steps on the object `default/generated` of `resource`, whose
    /// version's `openAPIV3Schema` is `schema`, from `seed`. The first step creates it; later
    /// ones mutate it (valid and invalid mutations), delete it or recreate it; a step after a
    /// delete creates it again. The same arguments always give the same workload.
    pub fn generate(
        resource: &ApiResource,
        schema: &JSONSchemaProps,
        seed: u64,
        steps_max: usize,
    ) -> Result<Self, GenerateError> {
        let bodies = body_strategy(schema);
        let choice = (0..STEP_WEIGHTS_TOTAL).boxed();
        let mut current: Option<Value> = None;
        let mut steps = Vec::with_capacity(steps_max);
        for index in 0..steps_max {
            let number = index + 1;
            let mut drawer = Drawer::new(seed, number);
            let Some(body) = &current else {
                let body = drawer.draw(&bodies, number)?;
                current = Some(stored(schema, body.clone()));
                steps.push(Step::Create { body });
                continue;
            };
            let valid = valid_mutations(schema, body);
            let invalid = invalid_mutations(schema, body);
            let roll = drawer.draw(&choice, number)?;
            let [valid_weight, invalid_weight, delete_weight, _] = STEP_WEIGHTS;
            let step = match (roll, valid, invalid) {
                (r, Some(valid), _) if r < valid_weight => Step::Mutate(drawer.draw(&valid, number)?),
                (r, _, Some(invalid)) if r < valid_weight + invalid_weight => {
                    Step::Mutate(drawer.draw(&invalid, number)?)
                }
                (r, _, _) if r < valid_weight + invalid_weight + delete_weight => Step::Delete,
                _ => Step::Recreate { body: drawer.draw(&bodies, number)? },
            };
            current = match &step {
                Step::Mutate(m) if m.is_valid() => Some(stored(schema, m.applied_to(body))),
                Step::Mutate(_) => current,
                Step::Delete => None,
                Step::Create { body } | Step::Recreate { body } => Some(stored(schema, body.clone())),
            };
            steps.push(step);
        }
        Ok(GeneratedWorkload {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            plural: resource.plural.clone(),
            namespace: NAMESPACE.to_owned(),
            name: OBJECT_NAME.to_owned(),
            seed,
            steps,
        })
    }

    /// [`generate`](Self::generate) for a CRD: its storage version (or first version with a
    /// schema) and that version's `openAPIV3Schema`.
    pub fn for_crd(
        crd: &CustomResourceDefinition,
        seed: u64,
        steps_max: usize,
    ) -> Result<Self, GenerateError> {
        let (resource, schema) = crd_schema(crd)?;
        Self::generate(&resource, &schema, seed, steps_max)
    }

    /// The resource the steps act on.
    pub fn api_resource(&self) -> ApiResource {
        let (group, version) = match self.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", self.api_version.as_str()),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, &self.kind), &self.plural)
    }

    /// How many steps must be accepted and how many rejected: (valid, invalid).
    pub fn counts(&self) -> (usize, usize) {
        let invalid = self.steps.iter().filter(|s| matches!(s, Step::Mutate(m) if !m.is_valid())).count();
        (self.steps.len() - invalid, invalid)
    }

    /// The workload as a script for [`crate::SimBuilder::workload`]: each step in order,
    /// [`STEP_PAUSE`] of virtual time apart, failing the run at the first step the server answers
    /// otherwise than labelled.
    pub fn into_script(
        self,
    ) -> impl Fn(Workload) -> LocalBoxFuture<'static, Result<(), WorkloadError>> + Send + Sync + 'static {
        let workload = Arc::new(self);
        move |w| {
            let workload = workload.clone();
            Box::pin(async move { workload.run(&w).await })
        }
    }

    /// Run every step against the world.
    pub(crate) async fn run(&self, w: &Workload) -> Result<(), WorkloadError> {
        let api: Api<DynamicObject> = Api::namespaced_with(w.client(), &self.namespace, &self.api_resource());
        for (index, step) in self.steps.iter().enumerate() {
            let number = index as u64 + 1;
            let action = self.describe(step);
            w.note(format!("generated step {number}: {action}"));
            let fail = |reason: String| WorkloadError { step: number, action: action.clone(), reason };
            self.run_step(w, &api, step).await.map_err(fail)?;
            w.sleep(STEP_PAUSE).await;
        }
        Ok(())
    }

    fn describe(&self, step: &Step) -> String {
        let object = format!("{} {}/{}", self.kind, self.namespace, self.name);
        match step {
            Step::Create { .. } => format!("create {object}"),
            Step::Mutate(m) => format!("mutate {object}: {m}"),
            Step::Delete => format!("delete {object}"),
            Step::Recreate { .. } => format!("recreate {object}"),
        }
    }

    async fn run_step(&self, w: &Workload, api: &Api<DynamicObject>, step: &Step) -> Result<(), String> {
        match step {
            Step::Create { body } => self.create(api, body).await,
            Step::Mutate(mutation) => {
                let patch = mutation.merge_patch();
                let result = api.patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch)).await;
                let stored = result.as_ref().ok().and_then(|o| serde_json::to_value(o).ok());
                check_answer(&mutation.expect, result.map(|_| ()))?;
                check_stored(mutation, stored.as_ref())
            }
            Step::Delete => self.delete(w, api).await,
            Step::Recreate { body } => {
                self.delete(w, api).await?;
                self.create(api, body).await
            }
        }
    }

    async fn create(&self, api: &Api<DynamicObject>, body: &Value) -> Result<(), String> {
        let mut object = serde_json::json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": { "name": self.name, "namespace": self.namespace },
        });
        if let (Some(object), Some(body)) = (object.as_object_mut(), body.as_object()) {
            for (key, value) in body {
                object.insert(key.clone(), value.clone());
            }
        }
        let object: DynamicObject =
            serde_json::from_value(object).map_err(|e| format!("the body is not an object: {e}"))?;
        let result = api.create(&PostParams::default(), &object).await;
        check_answer(&Expectation::Accept, result.map(|_| ()))
    }

    /// Delete the object and poll (bounded) until the server no longer has it.
    async fn delete(&self, w: &Workload, api: &Api<DynamicObject>) -> Result<(), String> {
        api.delete(&self.name, &DeleteParams::default())
            .await
            .map_err(|e| format!("the server refused the delete: {}", describe(&e)))?;
        for _ in 0..DELETE_POLLS_MAX {
            match api.get_opt(&self.name).await {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => w.sleep(DELETE_POLL).await,
                Err(e) => return Err(format!("reading the deleted object: {}", describe(&e))),
            }
        }
        let waited = DELETE_POLL * DELETE_POLLS_MAX;
        Err(format!("still present {}s after its deletion", waited.as_secs_f64()))
    }

    /// Shorter workloads for a shrinker, most reduced first: halves of the steps (keeping the
    /// prefix), then every single step dropped. Steps that no longer apply (a mutation of an
    /// object that no longer exists, a create of one that does) are dropped with them.
    pub fn shorten(&self) -> Vec<Self> {
        let mut candidates = Vec::new();
        let mut len = self.steps.len() / 2;
        // Halving bounds the prefixes to log2(steps) candidates.
        while len > 0 {
            candidates.push(self.truncated(len));
            len /= 2;
        }
        candidates.extend((0..self.steps.len()).rev().filter_map(|i| self.without_step(i)));
        candidates.dedup();
        candidates.retain(|c| c.steps.len() < self.steps.len());
        candidates
    }

    /// The first `len` steps.
    pub fn truncated(&self, len: usize) -> Self {
        let mut shorter = self.clone();
        shorter.steps.truncate(len);
        shorter
    }

    /// The workload without step `index` (and without the steps that then no longer apply);
    /// `None` when there is no such step.
    pub fn without_step(&self, index: usize) -> Option<Self> {
        if index >= self.steps.len() {
            return None;
        }
        let mut shorter = self.clone();
        shorter.steps.remove(index);
        shorter.steps = applicable(shorter.steps);
        Some(shorter)
    }
}

/// The steps that apply in order: a create only when the object is absent, the others only
/// when it exists.
fn applicable(steps: Vec<Step>) -> Vec<Step> {
    let mut exists = false;
    let mut kept = Vec::with_capacity(steps.len());
    for step in steps {
        if step.needs_object() == exists {
            exists = step.leaves_object();
            kept.push(step);
        }
    }
    kept
}

/// The resource and schema of a CRD's storage version (or its first version with a schema).
pub fn crd_schema(crd: &CustomResourceDefinition) -> Result<(ApiResource, JSONSchemaProps), GenerateError> {
    let no_schema = || GenerateError::NoSchema { crd: crd.metadata.name.clone().unwrap_or_default() };
    let with_schema = |v: &&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
        v.schema.as_ref().is_some_and(|s| s.open_api_v3_schema.is_some())
    };
    let versions = &crd.spec.versions;
    let version =
        versions.iter().filter(with_schema).find(|v| v.storage).or_else(|| versions.iter().find(with_schema));
    let version = version.ok_or_else(no_schema)?;
    let schema = version.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone()).ok_or_else(no_schema)?;
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind);
    Ok((ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural), schema))
}

fn describe(error: &Error) -> String {
    crate::workload::describe_error(error)
}

/// Whether an accepted mutation that set a scalar shows in the object the server returned (an
/// array or object value may have gained defaults, and a removed field may come back as its
/// default: those are not checked).
fn check_stored(mutation: &Mutation, stored: Option<&Value>) -> Result<(), String> {
    let Some(sent) = mutation.value.as_ref().filter(|v| !v.is_array() && !v.is_object()) else {
        return Ok(());
    };
    let Some(stored) = stored else {
        return Ok(()); // rejected as expected
    };
    let found = stored.pointer(&mutation.path);
    let same = match (found, sent) {
        (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Some(found), sent) => found == sent,
        (None, _) => false,
    };
    if same {
        Ok(())
    } else {
        let found = found.map_or_else(|| "nothing".to_owned(), Value::to_string);
        Err(format!("the server accepted the step but stored {found} at {}, not {sent}", mutation.path))
    }
}

/// Whether the server's answer is the expected one; the mismatch in words otherwise.
fn check_answer(expect: &Expectation, result: Result<(), Error>) -> Result<(), String> {
    match (expect, result) {
        (Expectation::Accept, Ok(())) => Ok(()),
        (Expectation::Accept, Err(e)) => Err(format!("the server rejected a valid step: {}", describe(&e))),
        (Expectation::Reject { field, cause }, Ok(())) => {
            Err(format!("the server accepted an invalid step (expected 422 Invalid, {cause} at {field})"))
        }
        (Expectation::Reject { field, cause }, Err(Error::Api(status))) => {
            let causes = status.details.as_ref().map(|d| d.causes.as_slice()).unwrap_or_default();
            let named = causes.iter().any(|c| &c.field == field && &c.reason == cause);
            if status.code == 422 && status.reason == "Invalid" && named {
                Ok(())
            } else {
                Err(format!(
                    "expected 422 Invalid with {cause} at {field}, got {} {}: {}",
                    status.code, status.reason, status.message
                ))
            }
        }
        (Expectation::Reject { .. }, Err(e)) => Err(format!("expected 422 Invalid, got {}", describe(&e))),
    }
}
