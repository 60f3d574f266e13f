//! The fault hook: a user's own faults, consulted by the transport around every API call and
//! before every watch delivery. The engine's planned faults (the injector) act at the same points.
//! Re-exported as `sim::transport::{FaultHook, CallInfo, ...}`.

use std::time::Duration;

use kube_core::Status;
use model_apiserver::{Request, Response};

/// What a fault hook sees of a call.
#[derive(Clone, Copy, Debug)]
pub struct CallInfo<'a> {
    /// The call's number in this run.
    pub call: u64,
    /// The calling node.
    pub node: &'a str,
    /// The cluster called.
    pub cluster: &'a str,
    /// The verb, as audit logs spell it (`create`, `patch`, ...).
    pub verb: &'static str,
    /// Whether the call can change state.
    pub is_write: bool,
    /// `resource[/namespace][/name]`.
    pub target: &'a str,
    /// Virtual time since the start of the run. (A hook runs with the world locked: it reads the
    /// time here, not from `sim::time`.)
    pub elapsed: Duration,
}

/// What a fault hook sees of a watch event about to reach an informer.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryInfo<'a> {
    /// The informer's node.
    pub node: &'a str,
    /// The watched cluster.
    pub cluster: &'a str,
    /// The informer, as traces name it (`cluster/resource[/namespace]`).
    pub watch: &'a str,
    /// `ADDED`, `MODIFIED`, `DELETED` or `ERROR`.
    pub kind: &'static str,
    /// `namespace/name` of the object.
    pub object: &'a str,
    /// The event's resourceVersion.
    pub resource_version: &'a str,
    /// Virtual time since the start of the run.
    pub elapsed: Duration,
}

/// What happens to a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// It arrives after the drawn delay.
    Deliver,
    /// It arrives this much later than drawn (and so does everything after it on this watch).
    Delay(Duration),
    /// The watch breaks with 410 Expired before it: the event is lost and the informer relists.
    Expire,
}

/// Where faults act: on API calls and on watch deliveries. Every method defaults to doing
/// nothing.
///
/// A hook is called with the run's world locked: it decides from what it is shown (the call, the
/// request, [`CallInfo::elapsed`]) and its own state, and calls nothing of the simulation
/// (`sim::time`, a client); doing so panics with a message saying so.
pub trait FaultHook: Send {
    /// Before the request reaches the server: `Some(status)` answers in the server's place, and the
    /// request is not applied.
    fn before_call(&mut self, call: &CallInfo<'_>, request: &Request) -> Option<Status> {
        let _ = (call, request);
        None
    }
    /// After the server answered: may replace the answer (an ambiguous write: applied, but the
    /// client sees an error).
    fn after_call(&mut self, call: &CallInfo<'_>, result: &mut Result<Response, Status>) {
        let _ = (call, result);
    }
    /// Before a watch event reaches its informer.
    fn on_delivery(&mut self, delivery: &DeliveryInfo<'_>) -> Delivery {
        let _ = delivery;
        Delivery::Deliver
    }
}

/// The hook of a fault-free run.
#[derive(Debug, Default)]
pub struct NoFaults;

impl FaultHook for NoFaults {}
