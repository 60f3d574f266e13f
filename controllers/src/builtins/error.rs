//! The one error type of the built-in controllers' reconciles.

/// Why a built-in controller's reconcile failed. Every variant is retried by the error policy
/// (backing off per object, [`super::rate_limit`], or after [`super::ERROR_REQUEUE`]): the next
/// attempt reads fresh state.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed (409 from a stale read, 404 for an object deleted meanwhile, a fault).
    #[error("API call failed: {0}")]
    Api(#[from] sim::Error),
    /// The object is namespaced but came without a namespace (the server always sets one, so
    /// only a broken cache entry gets here).
    #[error("{kind} {name} has no namespace")]
    MissingNamespace {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// The object's spec cannot be acted on (a selector that selects nothing, a template whose
    /// labels its own selector does not match): the real controllers reject these in validation.
    #[error("{kind} {name}: {reason}")]
    InvalidSpec {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The informer cache still holds an object this controller has since replaced (it lags
    /// behind the controller's own write), so a sync from it would act on the old one: retried
    /// once the cache can have caught up, as upstream's stale-informer errors.
    #[error("{kind} informer cache is out of date for {name}")]
    StaleCache {
        /// The cached kind.
        kind: &'static str,
        /// The object (`namespace/name`) the sync was for.
        name: String,
    },
    /// A StatefulSet's Pod needs a claim that exists but is being deleted (kept by its
    /// protection finalizer while a Pod uses it): the Pod is not created on it.
    #[error("pvc {name} is being deleted")]
    ClaimBeingDeleted {
        /// The claim's name.
        name: String,
    },
    /// An object did not convert to or from JSON.
    #[error("serializing an object: {0}")]
    Serde(#[from] serde_json::Error),
}

impl Error {
    /// The error's text as client-go's `err.Error()` gives it: the server's message for an API
    /// error ([`status_message`]), else the error itself.
    pub fn message(&self) -> String {
        match self {
            Error::Api(error) => status_message(error),
            other => other.to_string(),
        }
    }

    /// Whether the server answered `code`.
    pub fn is_status(&self, code: u16) -> bool {
        matches!(self, Error::Api(sim::Error::Api(status)) if status.code == code)
    }
}

/// Whether a `sim` call failed with HTTP status `code`.
pub(crate) fn has_code(error: &sim::Error, code: u16) -> bool {
    error.status().is_some_and(|status| status.code == code)
}

/// An API error's text as client-go's `StatusError.Error()` prints it: the status message.
pub(crate) fn status_message(error: &sim::Error) -> String {
    match error.status() {
        Some(status) => status.message.clone(),
        None => error.to_string(),
    }
}

/// The cause type the server gives a create refused because its namespace is being terminated
/// (core/v1 `NamespaceTerminatingCause`).
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Whether a write was refused because its namespace is being terminated: a 403 naming the
/// [`NAMESPACE_TERMINATING_CAUSE`] (`apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)`),
/// which tells it from an authorization failure.
pub(crate) fn is_namespace_terminating(error: &sim::Error) -> bool {
    error.status().is_some_and(|status| {
        status.code == 403
            && status
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE))
    })
}

/// Whether a create failed because an object of that name exists (409 `AlreadyExists`, not a
/// `Conflict`).
pub(crate) fn is_already_exists(error: &sim::Error) -> bool {
    error.status().is_some_and(|status| status.code == 409 && status.reason == "AlreadyExists")
}
