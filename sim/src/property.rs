//! The property hook: where invariants plug into a run.
//!
//! A [`Property`] is checked twice over: [`Property::check_step`] after every successful write
//! (safety: it must hold in every reachable state), and [`Property::check_end`] once the liveness
//! phase has ended (liveness: the world converged to the right state). Both see the clusters
//! through cheap persistent snapshots, so a check never blocks or copies the world.
//!
//! The `properties` crate implements the real checks; this module only defines the hook.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use model_apiserver::Snapshot;

use crate::lifecycles::Lifecycles;

/// What a safety check sees: every cluster's state right after one write.
#[derive(Debug)]
pub struct StepView<'a> {
    /// Every cluster's current state, by cluster name.
    pub clusters: &'a BTreeMap<Arc<str>, Snapshot>,
    /// The cluster the write went to.
    pub written_cluster: &'a str,
    /// Virtual time since the start of the run.
    pub at: Duration,
}

/// What a liveness check sees: every cluster's state after the liveness phase, and how many
/// times each object was created and deleted on the way.
#[derive(Debug)]
pub struct EndView<'a> {
    /// Every cluster's final state, by cluster name.
    pub clusters: &'a BTreeMap<Arc<str>, Snapshot>,
    /// Every cluster's per-object creation and deletion counts over the whole run, by cluster
    /// name (the differential oracle compares them with a fault-free run's).
    pub lifecycles: &'a BTreeMap<Arc<str>, Lifecycles>,
    /// Virtual time since the start of the run (the world quiesced: a world that did not gets a
    /// liveness verdict instead of end checks).
    pub at: Duration,
}

impl StepView<'_> {
    /// The state of cluster `name`.
    pub fn cluster(&self, name: &str) -> Option<&Snapshot> {
        self.clusters.get(name)
    }
}

impl EndView<'_> {
    /// The state of cluster `name`.
    pub fn cluster(&self, name: &str) -> Option<&Snapshot> {
        self.clusters.get(name)
    }
    /// The per-object creation and deletion counts of cluster `name`.
    pub fn lifecycles(&self, name: &str) -> Option<&Lifecycles> {
        self.lifecycles.get(name)
    }
}

/// An invariant over the simulated clusters.
///
/// Both checks default to passing, so a property implements only the phase it cares about. An
/// `Err` carries one line saying what broke (which object, which field, expected against found);
/// it becomes a `Verdict::Correctness` naming the property.
pub trait Property: Send + Sync {
    /// The property's name, as verdicts report it.
    fn name(&self) -> &str;
    /// Checked after every successful write (safety).
    fn check_step(&self, view: &StepView<'_>) -> Result<(), String> {
        let _ = view;
        Ok(())
    }
    /// Checked once after the liveness phase (liveness, end-state oracles).
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        let _ = view;
        Ok(())
    }
}

/// A property from closures: `FnProperty::end("all-cms", |v| ...)`.
pub struct FnProperty {
    name: String,
    step: Option<StepCheck>,
    end: Option<EndCheck>,
}

type StepCheck = Box<dyn Fn(&StepView<'_>) -> Result<(), String> + Send + Sync>;
type EndCheck = Box<dyn Fn(&EndView<'_>) -> Result<(), String> + Send + Sync>;

impl FnProperty {
    /// A safety property: `check` runs after every write.
    pub fn always(
        name: impl Into<String>,
        check: impl Fn(&StepView<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        FnProperty { name: name.into(), step: Some(Box::new(check)), end: None }
    }
    /// An end-state property: `check` runs once after the liveness phase.
    pub fn at_end(
        name: impl Into<String>,
        check: impl Fn(&EndView<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        FnProperty { name: name.into(), step: None, end: Some(Box::new(check)) }
    }
}

impl Property for FnProperty {
    fn name(&self) -> &str {
        &self.name
    }
    fn check_step(&self, view: &StepView<'_>) -> Result<(), String> {
        self.step.as_ref().map_or(Ok(()), |f| f(view))
    }
    fn check_end(&self, view: &EndView<'_>) -> Result<(), String> {
        self.end.as_ref().map_or(Ok(()), |f| f(view))
    }
}
