//! Fault plans the built-ins' tests share: a controller's cache made to lag behind the server,
//! a controller crashed in the middle of its creates, creates refused; and what shows that a lag
//! was real.

use sim::faults::{CallSide, Fault, FaultPlan, PlannedFault, Trigger};

/// `controller`'s watch of `resource` held back `extra_ms` a pull for the first `duration_ms` of
/// the run: the cache it reads lags seconds behind the writes it makes.
pub(crate) fn lagging_watch(controller: &str, resource: &str, extra_ms: u64, duration_ms: u64) -> FaultPlan {
    let delay = Fault::DelayWatch {
        controller: controller.to_owned(),
        resource: resource.to_owned(),
        extra_ms,
        duration_ms,
    };
    FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms: 0 }, fault: delay }] }
}

/// `controller` crashed right after its `n`th create of a `kind`, and restarted 100 ms later with
/// an empty cache.
pub(crate) fn crash_after_create(controller: &str, kind: &str, n: u32) -> FaultPlan {
    let crash = PlannedFault {
        trigger: Trigger::NthWrite {
            controller: controller.to_owned(),
            n,
            kind: Some(kind.to_owned()),
            verb: Some("create".to_owned()),
        },
        fault: Fault::Crash {
            controller: controller.to_owned(),
            side: CallSide::After,
            restart_after_ms: 100,
        },
    };
    FaultPlan { faults: vec![crash] }
}

/// How many of `node`'s API calls that `which` (verb, target) picks were answered 409 in a run
/// (kept with `keep_trace`): what a decision taken on a lagging cache gets.
pub(crate) fn refused_calls(
    report: &sim::RunReport,
    node: &str,
    which: impl Fn(&str, &str) -> bool,
) -> usize {
    let entries = report.trace.entries();
    let calls: Vec<u64> = entries
        .iter()
        .filter(|e| &*e.node == node)
        .filter_map(|e| match &e.event {
            sim::TraceEvent::ApiRequest { call, verb, target } if which(verb, target) => Some(*call),
            _ => None,
        })
        .collect();
    entries
        .iter()
        .filter(|e| {
            matches!(&e.event, sim::TraceEvent::ApiResponse { call, result: Err((409, _)) } if calls.contains(call))
        })
        .count()
}

/// Refuses `node`'s first `refusals` creates of a target starting `resource` (`pods/`) with 500,
/// recording the virtual time of every such create it sends.
#[derive(Clone)]
pub(crate) struct RefusedCreates {
    node: &'static str,
    resource: &'static str,
    refusals: usize,
    pub(crate) sent: std::sync::Arc<std::sync::Mutex<Vec<std::time::Duration>>>,
}

impl RefusedCreates {
    pub(crate) fn new(node: &'static str, resource: &'static str, refusals: usize) -> Self {
        RefusedCreates { node, resource, refusals, sent: Default::default() }
    }
}

impl sim::transport::FaultHook for RefusedCreates {
    fn before_call(
        &mut self,
        call: &sim::transport::CallInfo<'_>,
        _request: &model_apiserver::Request,
    ) -> Option<kube_core::Status> {
        if call.node != self.node || call.verb != "create" || !call.target.starts_with(self.resource) {
            return None;
        }
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        sent.push(call.elapsed);
        (sent.len() <= self.refusals).then(|| model_apiserver::errors::internal_error("refused by the test"))
    }
}
