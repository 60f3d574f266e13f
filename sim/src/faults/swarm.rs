//! Swarm selection: each seed turns on a random subset of fault kinds with random intensities
//! (Groce et al., "Swarm Testing"), so that a sweep covers both single-kind and mixed plans
//! instead of always the same thin mix of everything.
//!
//! This file draws which kinds are on, how many faults, each fault's kind, controller, one
//! duration, and its trigger; each kind draws its own parameters in its file
//! ([`FaultKindOps::draw`](super::kind::FaultKindOps)). The draw order is part of every seed's
//! trace digest.

use std::sync::Arc;

use crate::decision::DecisionSource;
use crate::faults::kind::{FaultKindOps, SwarmDraw};
use crate::faults::plan::{FaultKind, FaultPlan, PlannedFault, Trigger};
use crate::faults::profile::Profile;

/// The name of the decision stream plans are drawn from. Plan drawing has its own stream so that
/// a plan does not shift latency or delivery choices, and vice versa.
pub const PLAN_STREAM: &str = "faults.plan";

/// What swarm selection may draw from.
#[derive(Clone, Debug)]
pub struct SwarmConfig {
    /// The controllers faults may act on (by node name). Empty: only `Compact` can be drawn.
    pub controllers: Vec<String>,
    /// The kinds that may be turned on. Defaults to every kind except `PauseLeader`, which needs a
    /// controller running with leader election, and `LoseNode`, which acts on the world's Nodes.
    pub kinds: Vec<FaultKind>,
    /// At most this many faults in one plan.
    pub faults_max: usize,
    /// `NthWrite` triggers pick `n` in `1..=writes_max`.
    pub writes_max: u32,
    /// `AtTime` triggers pick a time in `0..=time_max_ms`.
    pub time_max_ms: u64,
    /// Restart and pause durations, watch delays and how long a watch delay lasts are drawn in
    /// `1..=duration_max_ms`.
    pub duration_max_ms: u64,
    /// What the controllers do (their informers' list semantics, calls, reconciles, Leases):
    /// a kind is drawn only on the controllers it can act on, and a kind that can act on none
    /// is never turned on. `None` (the default) for a world run through a builder: the builder
    /// measures its profile once, on a fault-free run ([`crate::SimBuilder::fault_profile`]).
    /// A plan drawn with no profile at all assumes every kind can act everywhere.
    pub profile: Option<Arc<Profile>>,
}

impl Default for SwarmConfig {
    fn default() -> Self {
        SwarmConfig {
            controllers: Vec::new(),
            kinds: FaultKind::ALL.into_iter().filter(|k| super::ops(*k).swarm_by_default()).collect(),
            faults_max: 4,
            writes_max: 20,
            time_max_ms: 10_000,
            duration_max_ms: 5_000,
            profile: None,
        }
    }
}

/// Draw a plan for one seed: each allowed kind that can act on some controller is on with
/// probability 1/2, then between one fault and `faults_max` faults are drawn from the kinds that
/// are on, each on a controller it can act on.
///
/// Where every kind can act on every controller, the draws are those of a plan drawn without a
/// profile: the profile only removes choices that could not act.
pub fn swarm_plan(source: &mut DecisionSource, config: &SwarmConfig) -> FaultPlan {
    let stream = source.stream(PLAN_STREAM);
    let candidates: Vec<(FaultKind, Vec<&String>)> =
        config
            .kinds
            .iter()
            .map(|kind| (*kind, acting_on(*kind, config)))
            .filter(|(kind, on)| {
                if super::ops(*kind).needs_controller() { !on.is_empty() } else { can_act_in(*kind, config) }
            })
            .collect();
    let on: Vec<&(FaultKind, Vec<&String>)> = candidates.iter().filter(|_| stream.chance(0.5)).collect();
    if on.is_empty() || config.faults_max == 0 {
        return FaultPlan::none();
    }
    let count = 1 + stream.below(config.faults_max as u64) as usize;
    let mut faults = Vec::with_capacity(count);
    for _ in 0..count {
        let (kind, controllers) = on[stream.below(on.len() as u64) as usize];
        faults.push(draw_fault(stream, config, *kind, controllers));
    }
    FaultPlan { faults }
}

/// One fault of `kind`, drawn as swarm selection draws each fault of a plan: its controller
/// (among `controllers`, which it can act on), one duration, its own parameters, its trigger.
fn draw_fault(
    stream: &mut crate::decision::Stream,
    config: &SwarmConfig,
    kind: FaultKind,
    controllers: &[&String],
) -> PlannedFault {
    let controller = if controllers.is_empty() {
        String::new()
    } else {
        controllers[stream.below(controllers.len() as u64) as usize].clone()
    };
    let duration_ms = 1 + stream.below(config.duration_max_ms.max(1));
    let ops = super::ops(kind);
    let fault =
        ops.draw(&mut SwarmDraw { stream: &mut *stream, config, controller: &controller, duration_ms });
    let trigger = draw_trigger(stream, config, ops, &controller);
    PlannedFault { trigger, fault }
}

/// The kinds of `config` that swarm selection can turn on (each can act on some controller, or
/// in the world), in `config.kinds` order.
pub fn drawable_kinds(config: &SwarmConfig) -> Vec<FaultKind> {
    config
        .kinds
        .iter()
        .copied()
        .filter(|kind| {
            if super::ops(*kind).needs_controller() {
                !acting_on(*kind, config).is_empty()
            } else {
                can_act_in(*kind, config)
            }
        })
        .collect()
}

/// One fault of `kind` drawn from `stream` as a swarm plan draws its faults (on a controller it
/// can act on), or `None` if swarm selection of `config` cannot draw the kind: what a search
/// that steers toward rare kinds adds to a plan.
pub fn swarm_fault(
    stream: &mut crate::decision::Stream,
    config: &SwarmConfig,
    kind: FaultKind,
) -> Option<PlannedFault> {
    if !drawable_kinds(config).contains(&kind) {
        return None;
    }
    let controllers = acting_on(kind, config);
    Some(draw_fault(stream, config, kind, &controllers))
}

/// A new trigger for `planned`, drawn as swarm selection draws one for its kind and controller
/// (a search that mutates a plan moves one fault to another moment this way).
pub fn redraw_trigger(
    stream: &mut crate::decision::Stream,
    config: &SwarmConfig,
    planned: &PlannedFault,
) -> Trigger {
    let controller = planned.fault.controller().unwrap_or_default();
    draw_trigger(stream, config, super::ops(planned.fault.kind()), controller)
}

/// The controllers of `config` a fault of `kind` can act on (every one without a profile; none
/// for a kind that acts on no controller), in `config.controllers` order.
pub(crate) fn acting_on(kind: FaultKind, config: &SwarmConfig) -> Vec<&String> {
    let ops = super::ops(kind);
    let Some(profile) = &config.profile else { return config.controllers.iter().collect() };
    config.controllers.iter().filter(|c| ops.cannot_act(&profile.of(c)).is_none()).collect()
}

/// Whether a kind that acts on no controller can act in `config`'s world.
fn can_act_in(kind: FaultKind, config: &SwarmConfig) -> bool {
    config.profile.as_ref().is_none_or(|profile| super::ops(kind).cannot_act_in(profile).is_none())
}

/// Why swarm selection of `config` never draws `kind`, per controller that it cannot act on (for
/// reports: `None` for the controllers it can act on).
pub fn why_not_drawn(kind: FaultKind, config: &SwarmConfig) -> Vec<(String, Option<&'static str>)> {
    let ops = super::ops(kind);
    let Some(profile) = &config.profile else { return Vec::new() };
    if !ops.needs_controller() {
        return vec![(String::new(), ops.cannot_act_in(profile))];
    }
    config.controllers.iter().map(|c| (c.clone(), ops.cannot_act(&profile.of(c)))).collect()
}

/// Faults that act on one API call (fail it, make it ambiguous, crash around it) need a call
/// trigger; the rest may also fire at a time.
fn draw_trigger(
    stream: &mut crate::decision::Stream,
    config: &SwarmConfig,
    ops: &dyn FaultKindOps,
    controller: &str,
) -> Trigger {
    let call_bound = ops.acts_on_call();
    let nth_write = |stream: &mut crate::decision::Stream| Trigger::NthWrite {
        controller: controller.to_owned(),
        n: 1 + stream.below(u64::from(config.writes_max.max(1))) as u32,
        kind: None,
        verb: None,
    };
    if controller.is_empty() {
        return Trigger::AtTime { at_ms: stream.below(config.time_max_ms + 1) };
    }
    match (call_bound, stream.below(3)) {
        (true, 0) if ops.swarm_rate() => Trigger::Rate {
            controller: controller.to_owned(),
            per_mille: 10 + stream.below(190) as u32,
            max: 1 + stream.below(3) as u32,
        },
        (true, _) => nth_write(stream),
        (false, 0) => nth_write(stream),
        (false, _) => Trigger::AtTime { at_ms: stream.below(config.time_max_ms + 1) },
    }
}
