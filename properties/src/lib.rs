//! # properties
//!
//! Invariants and oracles for kube-sim runs. Every checker here is a pure function over
//! [`model_apiserver::Snapshot`]s (the stored state at one revision), so it can be tested with
//! hand-built states and wired into the engine's property hook unchanged. A broken property is a
//! [`Violation`]: the property's name, the object, and one line saying what was expected and what
//! was found.
//!
//! ## Safety: checked after every write
//!
//! [`always`] wraps a predicate over the state; [`Always::check_step`] names the step and virtual
//! time of the first state that breaks it.
//!
//! ## Liveness: checked at the end
//!
//! - [`matches_reference`]: Sieve's differential oracle. The run's end state against a
//!   fault-free reference run's, object by object and field by field, plus per-object creation
//!   and deletion counts ([`counts_from_lifecycles`], [`counts_from_events`]). A [`Mask`] says
//!   what may differ: the built-in mask ([`Mask::builtin`]: uids, resourceVersions, timestamps,
//!   generated names, managedFields, generation counts, Events), masks learned from two
//!   reference runs ([`Mask::learn`], and [`Mask::learn_counts`] for counts), and user masks by
//!   kind and path ([`Mask::user`]).
//! - [`eventually_stable`]: Anvil's ESR over a sequence of [`Sample`]s.
//!
//! ## Generated objects: what the user asked for, not history
//!
//! The built-in controllers make children of the workloads a user's controller writes:
//! ReplicaSets of a Deployment, Pods of a ReplicaSet, StatefulSet, DaemonSet or Job,
//! ControllerRevisions, a CronJob's Jobs ([`MAKERS`]: a child is known by its controller owner
//! reference). Their names carry hashes and random suffixes, and how many of them a rollout
//! leaves depends on what the user's controller happened to see: relisted after a missed update,
//! a correct controller goes straight to the last image and leaves one old ReplicaSet and one
//! revision number fewer. Under the built-in mask the oracle compares what the parent asked for
//! and got: the parent's spec and status, and its live children as a multiset (template, image,
//! replica count, readiness), with hash suffixes replaced by stand-ins
//! (`web-<pod-template-hash>`). It does not compare retired children (ReplicaSets scaled to
//! zero, ControllerRevisions, finished Jobs of a CronJob, terminated Pods), the children's
//! creation and deletion counts, or the parents' revision numbers and `collisionCount`. A
//! missing, extra or recreated parent, a wrong image, a second live ReplicaSet or a Pod too many
//! is still a difference.
//!
//! ## Built-in end-state checks
//!
//! [`no_orphans`] (owners matched by uid), [`no_stuck_deletions`] (with the finalizers that hold
//! the object) and [`no_error_loop`] (reconcile errors bounded after convergence).
//!
//! ## In a run: [`hooks`]
//!
//! The same checks as `sim::Property` hooks for `SimBuilder::property`:
//! `hooks::no_orphans()`, `hooks::no_stuck_deletions()`, `hooks::always(name, |state| ..)`,
//! `hooks::at_end(name, |state| ..)`, and `hooks::matches_reference(reference)` with a
//! [`hooks::Reference`] computed once per sweep from two fault-free runs of the builder:
//!
//! ```no_run
//! use std::sync::Arc;
//! use properties::hooks::{self, Reference};
//!
//! let world = sim::Sim::builder(); // controllers, workload, faults ...
//! let reference = Arc::new(Reference::compute(&world, [1, 2]).expect("the scenario passes without faults"));
//! let checked = world
//!     .property(hooks::no_orphans())
//!     .property(hooks::no_stuck_deletions())
//!     .property(hooks::matches_reference(reference));
//! let report = checked.run(7);
//! assert!(report.verdict.is_pass(), "{}", report.verdict);
//! ```
//!
//! ## Example
//!
//! ```
//! use std::sync::Arc;
//! use kube_core::DynamicObject;
//! use model_apiserver::{ObjectKey, Snapshot};
//! use properties::{EndState, Mask, always, matches_reference};
//!
//! fn state(replicas: i64, uid: &str) -> Snapshot {
//!     let object: DynamicObject = serde_json::from_value(serde_json::json!({
//!         "apiVersion": "apps/v1", "kind": "Deployment",
//!         "metadata": {"name": "web", "namespace": "default", "uid": uid},
//!         "spec": {"replicas": replicas}
//!     })).unwrap();
//!     let key = ObjectKey { resource: Arc::from("apps/deployments"),
//!                           namespace: Arc::from("default"), name: Arc::from("web") };
//!     let mut snapshot = Snapshot::default();
//!     snapshot.objects.insert(key, Arc::new(object));
//!     snapshot
//! }
//!
//! // The uid differs between runs and is masked; the replica count is not.
//! let reference = EndState { snapshot: state(3, "uid-a"), counts: vec![] };
//! let run = EndState { snapshot: state(2, "uid-b"), counts: vec![] };
//! let violations = matches_reference(&reference, &run, &Mask::builtin());
//! assert_eq!(violations.len(), 1);
//! assert_eq!(
//!     violations[0].to_string(),
//!     "matches_reference: apps/deployments default/web: /spec/replicas: expected 3, found 2"
//! );
//!
//! // A safety property names the first step that breaks it.
//! let at_most_two = always("replicas_at_most_2", |s: &Snapshot| {
//!     match s.objects.values().filter_map(|o| o.data.pointer("/spec/replicas")?.as_i64()).max() {
//!         Some(n) if n > 2 => Err(format!("expected at most 2 replicas, found {n}")),
//!         _ => Ok(()),
//!     }
//! });
//! let found = at_most_two.check_step(7, 1500, &reference.snapshot).unwrap();
//! assert_eq!(found.to_string(), "replicas_at_most_2: at step 7 (1500 ms): expected at most 2 replicas, found 3");
//! ```

// Every public item is documented: the crate is a library other people read.
#![warn(missing_docs)]

mod always;
mod builtin;
mod children;
mod diff;
mod error;
mod esr;
pub mod hooks;
mod mask;
mod normalize;
mod path;
mod violation;

pub use always::{Always, StateCheck, always};
pub use builtin::{
    NO_ERROR_LOOP, NO_ORPHANS, NO_STUCK_DELETIONS, no_error_loop, no_orphans, no_orphans_with,
    no_stuck_deletions,
};
pub use children::MAKERS;
pub use diff::{
    Counts, Difference, EndState, LastChange, MATCHES_REFERENCE, ObjectCount, Prepared, count_key,
    counts_from_events, counts_from_lifecycles, diff, diff_counts, diff_prepared, matches_prepared,
    matches_reference,
};
pub use error::Error;
pub use esr::{Sample, eventually_stable};
pub use mask::{Mask, MaskRule, Origin, Target};
pub use path::{Path, PathPattern, Segment, Step};
pub use violation::{VALUE_DISPLAY_CHARS_MAX, Violation, describe_key, describe_value, summarize};
