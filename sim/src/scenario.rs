//! Named scenarios: a world declaration with a name and a one-line description, as
//! `kube-sim list` prints them, regression files name them, and exploration runs them.
//!
//! Names follow `<operator>:<variant>` for the zoo (`cassandra:fixed`, `cassandra:stale-delete`),
//! and any stable string for a user's own scenarios.

use std::sync::{Arc, OnceLock};

use crate::builder::SimBuilder;
use crate::run_options::RunOptions;
use crate::verdict::RunReport;

/// Makes a scenario's world the first time it is needed.
type MakeBuilder = Arc<dyn Fn() -> SimBuilder + Send + Sync>;

/// One named world. Its declaration may be made lazily ([`Scenario::lazy`]): a world whose
/// properties need a fault-free reference run computes it only when a command runs the scenario,
/// never for `kube-sim list`.
#[derive(Clone)]
pub struct Scenario {
    name: String,
    description: String,
    builder: Arc<OnceLock<SimBuilder>>,
    make: Option<MakeBuilder>,
}

impl Scenario {
    /// A scenario running `builder` (whose scenario name is set to `name`).
    pub fn new(name: impl Into<String>, description: impl Into<String>, builder: SimBuilder) -> Self {
        let scenario = Self::declared(name.into(), description.into(), None);
        let named = builder.scenario(scenario.name.clone());
        scenario.builder.get_or_init(|| named);
        scenario
    }

    /// A scenario whose world `make` declares the first time it is run or asked for (once, on
    /// whichever thread asks first; every later call shares it).
    pub fn lazy(
        name: impl Into<String>,
        description: impl Into<String>,
        make: impl Fn() -> SimBuilder + Send + Sync + 'static,
    ) -> Self {
        Self::declared(name.into(), description.into(), Some(Arc::new(make)))
    }

    fn declared(name: String, description: String, make: Option<MakeBuilder>) -> Self {
        assert!(!name.is_empty(), "a scenario needs a name");
        assert!(!name.contains(char::is_whitespace), "scenario name {name:?} contains whitespace");
        assert!(!description.contains('\n'), "scenario {name}: the description must be one line");
        Scenario { name, description, builder: Arc::new(OnceLock::new()), make }
    }
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The world declaration (clone it to change faults or tracing for one run).
    pub fn builder(&self) -> &SimBuilder {
        self.builder.get_or_init(|| {
            let make = self.make.as_ref().expect("a scenario is made eagerly or has a maker");
            make().scenario(self.name.clone())
        })
    }
    /// Run one seed.
    pub fn run(&self, seed: u64) -> RunReport {
        self.builder().run(seed)
    }
    /// Run one seed with a runner's options (a sweep's closure passes on the ones it receives).
    pub fn run_with(&self, seed: u64, options: &RunOptions) -> RunReport {
        self.builder().run_with(seed, options)
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario").field("name", &self.name).field("description", &self.description).finish()
    }
}

/// Why a set of scenarios is not a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Two scenarios share a name.
    #[error("two scenarios are named \"{0}\"")]
    Duplicate(String),
}

/// The scenarios a binary or test suite knows, in registration order.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    scenarios: Vec<Scenario>,
}

impl Registry {
    /// A registry of `scenarios`; names must be unique.
    pub fn new(scenarios: impl IntoIterator<Item = Scenario>) -> Result<Self, RegistryError> {
        let mut registry = Registry::default();
        for s in scenarios {
            registry.add(s)?;
        }
        Ok(registry)
    }
    /// Add one scenario.
    pub fn add(&mut self, scenario: Scenario) -> Result<(), RegistryError> {
        if self.get(scenario.name()).is_some() {
            return Err(RegistryError::Duplicate(scenario.name().to_owned()));
        }
        self.scenarios.push(scenario);
        Ok(())
    }
    /// The scenario called `name`.
    pub fn get(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name() == name)
    }
    /// Every scenario, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Scenario> {
        self.scenarios.iter()
    }
    /// Every name, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.scenarios.iter().map(Scenario::name).collect()
    }
    /// How many scenarios.
    pub fn len(&self) -> usize {
        self.scenarios.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.scenarios.is_empty()
    }
}
