//! The finalizer helper, as `kube::runtime::finalizer`: reconcile an object that needs cleanup
//! before it may be deleted.
//!
//! [`finalizer`] keeps one entry of `metadata.finalizers` for the controller:
//! 1. an object without the entry gets it first, with a JSON patch whose `test` op checks that
//!    the finalizer list is still the one the controller saw (so that a concurrent writer's
//!    entry is never lost, and a duplicate is never added); the reconcile then waits for the
//!    change that the patch itself causes;
//! 2. an object with the entry gets [`Event::Apply`];
//! 3. an object being deleted (deletionTimestamp set) with the entry gets [`Event::Cleanup`], and
//!    only once that succeeds is the entry removed, with a JSON patch that tests the entry at its
//!    index before removing it (so that a concurrent change never removes another finalizer);
//! 4. an object being deleted without the entry needs nothing more.
//!
//! A failed `test` op gets 422 Invalid from the server; the helper returns it as
//! [`Error::AddFinalizer`] or [`Error::RemoveFinalizer`], and the controller's error policy
//! retries with a fresh view of the object.

use std::error::Error as StdError;
use std::fmt::Debug;
use std::str::FromStr;
use std::sync::Arc;

use futures::{TryFuture, TryFutureExt};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, TestOperation};
use kube_core::params::{Patch, PatchParams};
use kube_core::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::Api;
use crate::controller::Action;

/// What can go wrong in [`finalizer`], with the reconciler's own error as `E`.
#[derive(Debug, thiserror::Error)]
pub enum Error<E>
where
    E: StdError + 'static,
{
    /// The reconciler's [`Event::Apply`] branch failed.
    #[error("failed to apply object: {0}")]
    ApplyFailed(#[source] E),
    /// The reconciler's [`Event::Cleanup`] branch failed; the finalizer stays, so deletion waits.
    #[error("failed to clean up object: {0}")]
    CleanupFailed(#[source] E),
    /// The patch adding the finalizer failed (a concurrent change to the finalizers makes its
    /// `test` op fail with 422 Invalid; a stale object can also get 404 or a transport fault).
    #[error("failed to add finalizer: {0}")]
    AddFinalizer(#[source] crate::client::Error),
    /// The patch removing the finalizer failed (422 Invalid when the entry moved).
    #[error("failed to remove finalizer: {0}")]
    RemoveFinalizer(#[source] crate::client::Error),
    /// The object has no name, so it cannot be patched (a hand-built object).
    #[error("object has no name")]
    UnnamedObject,
    /// The JSON pointer to the finalizer could not be built (never happens for the pointers the
    /// helper builds; kept for parity with kube-runtime).
    #[error("invalid finalizer")]
    InvalidFinalizer,
}

/// What the reconciler is asked to do, as kube-runtime's `finalizer::Event`.
pub enum Event<K> {
    /// Make the actual state match the object (idempotent: it is called again after restarts,
    /// changes and failures).
    Apply(Arc<K>),
    /// The object is being deleted: remove what the controller made for it (idempotent, and it
    /// must tolerate `Apply` never having run).
    Cleanup(Arc<K>),
}

impl<K> Debug for Event<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Apply(_) => f.write_str("Apply"),
            Event::Cleanup(_) => f.write_str("Cleanup"),
        }
    }
}

/// Reconcile `obj` through `reconcile`, keeping `finalizer_name` in its finalizers while it
/// lives and removing it once [`Event::Cleanup`] succeeded (see the module docs for the steps).
pub async fn finalizer<K, ReconcileFut>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: impl FnOnce(Event<K>) -> ReconcileFut,
) -> Result<Action, Error<ReconcileFut::Error>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
    ReconcileFut: TryFuture<Ok = Action>,
    ReconcileFut::Error: StdError + 'static,
{
    let index = obj.finalizers().iter().position(|f| f == finalizer_name);
    let deleting = obj.meta().deletion_timestamp.is_some();
    match (index, deleting) {
        (Some(_), false) => {
            TryFutureExt::into_future(reconcile(Event::Apply(obj))).await.map_err(Error::ApplyFailed)
        }
        (Some(index), true) => {
            let name = obj.meta().name.clone().ok_or(Error::UnnamedObject)?;
            // The finalizer stays if cleanup fails: deletion must wait for a successful one.
            let action = TryFutureExt::into_future(reconcile(Event::Cleanup(obj)))
                .await
                .map_err(Error::CleanupFailed)?;
            let patch = remove_patch(finalizer_name, index)?;
            api.patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
                .map_err(Error::RemoveFinalizer)?;
            Ok(action)
        }
        (None, false) => {
            let name = obj.meta().name.as_deref().ok_or(Error::UnnamedObject)?;
            let patch = add_patch(finalizer_name, obj.finalizers())?;
            api.patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
                .map_err(Error::AddFinalizer)?;
            // The patch itself triggers the next reconcile, which applies.
            Ok(Action::await_change())
        }
        (None, true) => Ok(Action::await_change()),
    }
}

fn pointer<E: StdError + 'static>(path: &str) -> Result<PointerBuf, Error<E>> {
    PointerBuf::from_str(path).map_err(|_| Error::InvalidFinalizer)
}

/// Test that the finalizers are still `current` (null when there are none: the server treats an
/// absent list as null), then add `name` to them.
fn add_patch<E: StdError + 'static>(name: &str, current: &[String]) -> Result<json_patch::Patch, Error<E>> {
    let operations = if current.is_empty() {
        vec![
            PatchOperation::Test(TestOperation {
                path: pointer("/metadata/finalizers")?,
                value: serde_json::Value::Null,
            }),
            PatchOperation::Add(AddOperation {
                path: pointer("/metadata/finalizers")?,
                value: vec![name].into(),
            }),
        ]
    } else {
        vec![
            // The server does not deduplicate finalizers: fail and retry rather than add a
            // second copy when someone changed the list meanwhile.
            PatchOperation::Test(TestOperation {
                path: pointer("/metadata/finalizers")?,
                value: current.into(),
            }),
            PatchOperation::Add(AddOperation {
                path: pointer("/metadata/finalizers/-")?,
                value: name.into(),
            }),
        ]
    };
    Ok(json_patch::Patch(operations))
}

/// Test that the entry at `index` is still `name`, then remove it: every finalizer of an object
/// runs concurrently, and removing by index alone could remove another one's entry.
fn remove_patch<E: StdError + 'static>(name: &str, index: usize) -> Result<json_patch::Patch, Error<E>> {
    let path = format!("/metadata/finalizers/{index}");
    Ok(json_patch::Patch(vec![
        PatchOperation::Test(TestOperation { path: pointer(&path)?, value: name.into() }),
        PatchOperation::Remove(RemoveOperation { path: pointer(&path)? }),
    ]))
}
