//! Safety properties: a user predicate that must hold at every step of a run.

use std::fmt;
use std::sync::Arc;

use model_apiserver::Snapshot;

use crate::violation::Violation;

/// The predicate of an [`Always`]: `Ok(())` when the state is fine, else a one-line explanation
/// (which object, expected against found).
pub type StateCheck = Arc<dyn Fn(&Snapshot) -> Result<(), String> + Send + Sync>;

/// `always(name, |state| ..)`: a predicate checked after every write.
#[derive(Clone)]
pub struct Always {
    /// The property's name, as violations report it.
    pub name: String,
    /// The predicate.
    pub check: StateCheck,
}

/// An [`Always`] named `name` checking `check`.
pub fn always(
    name: impl Into<String>,
    check: impl Fn(&Snapshot) -> Result<(), String> + Send + Sync + 'static,
) -> Always {
    Always { name: name.into(), check: Arc::new(check) }
}

impl Always {
    /// Check the state after write number `step`, at virtual time `at_millis`. The violation
    /// names the step and time, so the engine reports the first violating step by stopping at
    /// the first `Some`.
    pub fn check_step(&self, step: u64, at_millis: u64, snapshot: &Snapshot) -> Option<Violation> {
        let message = (self.check)(snapshot).err()?;
        Some(Violation::new(self.name.clone(), format!("at step {step} ({at_millis} ms): {message}")))
    }

    /// The first violation over a sequence of (step, at_millis, state) in run order, checking no
    /// further once one is found.
    pub fn first_violation<'a>(
        &self,
        steps: impl IntoIterator<Item = (u64, u64, &'a Snapshot)>,
    ) -> Option<Violation> {
        steps.into_iter().find_map(|(step, at_millis, snapshot)| self.check_step(step, at_millis, snapshot))
    }
}

impl fmt::Debug for Always {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Always").field("name", &self.name).finish_non_exhaustive()
    }
}
