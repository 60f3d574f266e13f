//! The supervisor: an engine task on a node of its own that carries out what the dying node
//! cannot do itself (madsim kills a node from outside): killing and restarting controller nodes,
//! pausing and resuming a leader, and firing faults at a virtual time.
//!
//! It wakes when the [injector](crate::faults::injector) queues an action or when its next timer is due.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::faults::SUPERVISOR_NODE;
use crate::faults::injector::{self, NodeAction};
use crate::faults::lose_node;
use crate::trace::TraceEvent;
use crate::world::World;

/// At most this many rounds: each handles at least one action or timer, and both come from a
/// finite plan (rates have a `max`), so reaching it means a runaway plan; it is traced.
const SUPERVISOR_ROUNDS_MAX: usize = 100_000;

/// Resolves when the injector has an action queued.
struct ActionQueued {
    world: World,
}

impl Future for ActionQueued {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.world.with(|w| {
            if w.injector().has_actions() {
                Poll::Ready(())
            } else {
                w.injector().set_supervisor(cx.waker());
                Poll::Pending
            }
        })
    }
}

/// The node ids the supervisor acts on: controllers by node name, and the replicas of each
/// leader-elected controller.
#[cfg(madsim)]
#[derive(Clone, Default)]
pub(crate) struct NodeIds {
    /// Every controller node (replicas included), by node name.
    pub(crate) nodes: BTreeMap<Arc<str>, madsim::task::NodeId>,
}

/// Start the supervisor on its own node; returns the node's id (to kill at the end of the run).
#[cfg(madsim)]
pub(crate) fn start(handle: &madsim::runtime::Handle, world: &World, ids: NodeIds) -> madsim::task::NodeId {
    let world = world.clone();
    let node =
        handle.create_node().name(SUPERVISOR_NODE).init(move || run(world.clone(), ids.clone())).build();
    node.id()
}

/// Timers of the supervisor, earliest first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// Fire the `AtTime` fault with this plan index.
    Fire(usize),
    /// Restart this node.
    Restart(Arc<str>),
    /// Resume this paused node.
    Resume(Arc<str>),
    /// The kubelet of this lost Node (a Node object) posts its status again.
    NodeBack(Arc<str>),
}

#[cfg(madsim)]
async fn run(world: World, ids: NodeIds) {
    use futures::future::select;

    let handle = madsim::runtime::Handle::current();
    let start = world.with(|w| w.recorder().start());
    let mut timers: BTreeMap<(Duration, u64), Timer> = BTreeMap::new();
    let mut next_seq = 0u64;
    for (at, index) in world.with(|w| w.injector().timed()) {
        timers.insert((at, next_seq), Timer::Fire(index));
        next_seq += 1;
    }
    let mut paused: BTreeMap<Arc<str>, ()> = BTreeMap::new();
    for _ in 0..SUPERVISOR_ROUNDS_MAX {
        while let Some(action) = world.with(|w| w.injector().next_action()) {
            let now = world.elapsed();
            match action {
                NodeAction::Kill { node, restart_after, reason } => {
                    let Some(id) = ids.nodes.get(&node).copied() else {
                        // A plan naming no declared node: nothing to kill, and nothing may wait on it.
                        world.with(|w| {
                            w.injector().nodes.remove(&node);
                            let text = format!("no node named {node} to kill");
                            w.trace(&Arc::from(SUPERVISOR_NODE), TraceEvent::Note { text });
                        });
                        continue;
                    };
                    let stopped = world.with(|w| {
                        w.trace(&node, TraceEvent::NodeKill { reason });
                        let state = w.injector().nodes.entry(node.clone()).or_default();
                        state.dying = false;
                        state.down = true;
                        w.injector().is_stopped()
                    });
                    handle.kill(id);
                    let at = if stopped { now } else { now + restart_after };
                    timers.insert((at, next_seq), Timer::Restart(node));
                    next_seq += 1;
                }
                NodeAction::PauseLeader { controller, duration } => {
                    let leader = world.with(|w| w.current_leader(&controller));
                    let Some(leader) = leader else { continue };
                    let Some(id) = ids.nodes.get(&*leader).copied() else { continue };
                    world.with(|w| {
                        let text =
                            format!("leader {leader} of {controller} paused for {}ms", duration.as_millis());
                        w.trace(&leader, TraceEvent::Note { text });
                    });
                    handle.pause(id);
                    paused.insert(leader.clone(), ());
                    timers.insert((now + duration, next_seq), Timer::Resume(leader));
                    next_seq += 1;
                }
                NodeAction::LoseNode { node, duration } => {
                    // A Node lost again while lost stays lost until the later end.
                    let back_at = now + duration;
                    let lost = world.with(|w| {
                        if let Some((_, until)) = w.injector().lost_nodes.get_mut(&node) {
                            *until = (*until).max(back_at);
                            return true;
                        }
                        let Some((before, wrote)) = lose_node::lose(&mut w.fault_ctx(), &node) else {
                            return false;
                        };
                        if let Some(cluster) = wrote {
                            w.wrote(&cluster, false);
                        }
                        w.injector().lost_nodes.insert(node.clone(), (before, back_at));
                        true
                    });
                    if !lost {
                        continue;
                    }
                    timers.insert((back_at, next_seq), Timer::NodeBack(node));
                    next_seq += 1;
                }
                NodeAction::StopAll => {
                    // Faults ending is activity: the quiet period starts over, so that nodes
                    // restarted or resumed now get the time to act before the world counts as quiet.
                    world.with(|w| w.quiescence().activity(now));
                    // Liveness phase: everything pending happens now; timed faults never fire.
                    let pending: Vec<Timer> = std::mem::take(&mut timers).into_values().collect();
                    for timer in pending {
                        if !matches!(timer, Timer::Fire(_)) {
                            timers.insert((now, next_seq), timer);
                            next_seq += 1;
                        }
                    }
                }
            }
        }
        let now = world.elapsed();
        while let Some(entry) = timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Timer::Fire(index) => world.with(|w| injector::fire_timed(&mut w.fault_ctx(), index)),
                Timer::Restart(node) => {
                    let Some(id) = ids.nodes.get(&node).copied() else { continue };
                    world.with(|w| {
                        // A restart is activity: a restarted node (a leader candidate, say) may
                        // write once it has listed.
                        w.quiescence().activity(now);
                        if let Some(state) = w.injector().nodes.get_mut(&node) {
                            state.down = false;
                        }
                        crate::faults::stale_replica::connect_replica(&mut w.fault_ctx(), &node);
                    });
                    handle.restart(id);
                }
                Timer::NodeBack(node) => world.with(|w| {
                    let stopped = w.injector().is_stopped();
                    let Some((_, until)) = w.injector().lost_nodes.get(&node) else { return };
                    if *until > now && !stopped {
                        // Lost again since: a later timer brings it back.
                        return;
                    }
                    let Some((before, _)) = w.injector().lost_nodes.remove(&node) else { return };
                    w.quiescence().activity(now);
                    if let Some(cluster) = lose_node::back(&mut w.fault_ctx(), &node, &before) {
                        w.wrote(&cluster, false);
                    }
                }),
                Timer::Resume(node) => {
                    let Some(id) = ids.nodes.get(&node).copied() else { continue };
                    if paused.remove(&node).is_some() {
                        world.with(|w| {
                            w.quiescence().activity(now);
                            w.trace(&node, TraceEvent::Note { text: format!("{node} resumed") });
                        });
                        handle.resume(id);
                    }
                }
            }
        }
        let queued = ActionQueued { world: world.clone() };
        match timers.keys().next().map(|(at, _)| *at) {
            Some(at) => {
                let deadline: Instant = start + at;
                let _ = select(queued, Box::pin(madsim::time::sleep_until(deadline))).await;
            }
            None => queued.await,
        }
    }
    world.with(|w| {
        let text = format!("the fault supervisor stopped after {SUPERVISOR_ROUNDS_MAX} rounds");
        w.trace(&Arc::from(SUPERVISOR_NODE), TraceEvent::Note { text });
    });
}
