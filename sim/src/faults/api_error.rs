//! `apiError`: the triggering API call fails with `error` (409 Conflict, 429 TooManyRequests, 500
//! InternalError, 504 Timeout) without reaching the server: contention, throttling and overload
//! expose error paths that are never tested.
//!
//! - swarm: the error drawn uniformly; a write trigger or (one time in three) a rate;
//! - firing: the controller's own triggering call is answered with the error; a trigger that is
//!   not its call (an object, a time) arms the error for the node's next call;
//! - shrinking: nothing to lower;
//! - guided: at every controller write that changed something, each configured error (tried
//!   after every other family: a failed call is mostly retried).

use crate::faults::ctx::FaultCtx;
use crate::faults::kind::{CallEffect, FaultKindOps, Firing, PointConfig, PointSite, SwarmDraw, mismatch};
use crate::faults::plan::{Fault, FaultKind, InjectedError};
use kube_core::Status;

/// The 429 answer asks the client to wait this long.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// The operations of [`Fault::ApiError`].
pub(crate) struct ApiError;

impl FaultKindOps for ApiError {
    fn kind(&self) -> FaultKind {
        FaultKind::ApiError
    }

    fn draw(&self, draw: &mut SwarmDraw<'_>) -> Fault {
        let errors = [
            InjectedError::Conflict,
            InjectedError::TooManyRequests,
            InjectedError::InternalError,
            InjectedError::Timeout,
        ];
        Fault::ApiError {
            controller: draw.controller.to_owned(),
            error: errors[draw.stream.below(errors.len() as u64) as usize],
        }
    }

    fn acts_on_call(&self) -> bool {
        true
    }

    fn fire(&self, w: &mut FaultCtx<'_>, firing: &Firing<'_>) -> CallEffect {
        let fault = &firing.planned.fault;
        let Fault::ApiError { controller, error } = fault else { mismatch(self.kind(), fault) };
        if firing.own_call.is_some() {
            CallEffect::Fail(Box::new(injected_status(*error)))
        } else {
            w.injector.node(controller).armed_errors.push_back(*error);
            CallEffect::None
        }
    }

    fn points(&self, site: &PointSite<'_>, config: &PointConfig) -> Vec<Fault> {
        let PointSite::Write { controller } = site else { return Vec::new() };
        config
            .errors
            .iter()
            .map(|error| Fault::ApiError { controller: (*controller).to_owned(), error: *error })
            .collect()
    }

    fn point_tier(&self, _fault: &Fault) -> u8 {
        1
    }

    /// Each injected error is a family of its own.
    fn point_family(&self, fault: &Fault) -> String {
        let Fault::ApiError { error, .. } = fault else { mismatch(self.kind(), fault) };
        format!("error-{error:?}")
    }

    fn same_shape(&self, point: &Fault, fired: &Fault) -> bool {
        match (point, fired) {
            (Fault::ApiError { controller: a, error: e }, Fault::ApiError { controller: b, error: f }) => {
                a == b && e == f
            }
            _ => false,
        }
    }
}

/// The answer an injected error gives.
pub(crate) fn injected_status(error: InjectedError) -> Status {
    use model_apiserver::errors;
    match error {
        InjectedError::Conflict => errors::conflict_with(
            "",
            "",
            "",
            "the object has been modified; please apply your changes to the latest version and try again",
        ),
        InjectedError::TooManyRequests => errors::too_many_requests(RETRY_AFTER_SECONDS),
        InjectedError::InternalError => errors::internal_error("etcdserver: request timed out"),
        InjectedError::Timeout => errors::timeout(
            "Timeout: request did not complete within the allotted timeout (injected; not applied)",
        ),
    }
}
