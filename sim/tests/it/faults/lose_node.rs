//! `loseNode`: what a lost kubelet's Node shows, when it comes back, and when swarm selection
//! draws the kind.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use sim::api::{Api, ObjectMeta};
use sim::faults::*;
use sim::property::{EndView, FnProperty};
use sim::{Sim, SimBuilder, TraceEvent, Verdict};

/// A Node's conditions, as `type=status (reason)`, in the order the Node lists them.
type Seen = Arc<Mutex<Vec<Vec<String>>>>;

fn condition(type_: &str, status: &str, reason: &str) -> NodeCondition {
    NodeCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        last_heartbeat_time: None,
        ..NodeCondition::default()
    }
}

/// A registered Node: Ready, no memory pressure, its network up (no disk or PID condition).
fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        status: Some(NodeStatus {
            conditions: Some(vec![
                condition("NetworkUnavailable", "False", "RouteCreated"),
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("Ready", "True", "KubeletReady"),
            ]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

fn described(node: &Node) -> Vec<String> {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    conditions
        .iter()
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason.as_deref().unwrap_or("")))
        .collect()
}

/// Nodes `a` and `b` registered at once; the workload reads `b` at 1 s, 3 s and 6 s.
fn world(seen: Seen) -> SimBuilder {
    Sim::builder().scenario("lose-node").workload(move |w| {
        let seen = seen.clone();
        async move {
            let nodes: Api<Node> = Api::all(w.client());
            w.apply(&nodes, &node("a")).await?;
            w.apply(&nodes, &node("b")).await?;
            for wait in [1, 2, 3] {
                w.sleep(Duration::from_secs(wait)).await;
                let b = nodes.get("b").await.map_err(|e| sim::WorkloadError {
                    step: 0,
                    action: "get Node b".to_owned(),
                    reason: e.to_string(),
                })?;
                seen.lock().expect("one thread").push(described(&b));
            }
            Ok(())
        }
    })
}

fn lose(node: &str, at_ms: u64, duration_ms: u64) -> FaultPlan {
    let fault = Fault::LoseNode { node: node.to_owned(), duration_ms };
    FaultPlan { faults: vec![PlannedFault { trigger: Trigger::AtTime { at_ms }, fault }] }
}

fn notes(report: &sim::RunReport) -> Vec<String> {
    report
        .trace
        .entries()
        .iter()
        .filter_map(|e| match &e.event {
            TraceEvent::Note { text } if text.starts_with("Node ") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_lost_kubelet_turns_its_nodes_conditions_unknown_and_posts_them_again_when_it_is_back() {
    let seen = Seen::default();
    let report = world(seen.clone()).faults(lose("b", 2_000, 3_000)).keep_trace(true).run(1);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert!(report.unfired.is_empty());
    let seen = seen.lock().unwrap().clone();
    let before = vec![
        "NetworkUnavailable=False (RouteCreated)",
        "MemoryPressure=False (KubeletHasSufficientMemory)",
        "Ready=True (KubeletReady)",
    ];
    assert_eq!(seen[0], before, "at 1 s, before the loss");
    assert_eq!(
        seen[1],
        vec![
            "NetworkUnavailable=False (RouteCreated)",
            "MemoryPressure=Unknown (NodeStatusUnknown)",
            "Ready=Unknown (NodeStatusUnknown)",
            "DiskPressure=Unknown (NodeStatusNeverUpdated)",
            "PIDPressure=Unknown (NodeStatusNeverUpdated)",
        ],
        "at 3 s, lost: NetworkUnavailable is the control plane's, left as it was"
    );
    assert_eq!(seen[2], before, "at 6 s, the kubelet posted its status again");
    let notes = notes(&report);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("Node b: kubelet silent: Ready Unknown (resourceVersion "), "{notes:?}");
    assert!(notes[1].starts_with("Node b: kubelet posts its status again (resourceVersion "), "{notes:?}");
}

#[test]
fn a_lost_node_is_back_when_the_liveness_phase_begins() {
    let ready_at_end = FnProperty::at_end("every Node is Ready at the end", |view: &EndView<'_>| {
        let snapshot = view.cluster("default").ok_or("no default cluster")?;
        for (key, node) in snapshot.iter_resource("nodes", None) {
            let ready = node.data.pointer("/status/conditions").and_then(|c| c.as_array()).and_then(|c| {
                c.iter().find(|c| c["type"] == "Ready").map(|c| c["status"].as_str().unwrap_or("").to_owned())
            });
            if ready.as_deref() != Some("True") {
                return Err(format!("Node {} is Ready={ready:?}", key.name));
            }
        }
        Ok(())
    });
    // Lost for ten minutes from 2 s: the workload ends at 6 s, and the liveness phase brings it
    // back rather than wait.
    let world = world(Seen::default()).property(ready_at_end).faults(lose("b", 2_000, 600_000));
    let report = world.keep_trace(true).run(2);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.trace.render());
    assert_eq!(notes(&report).len(), 2);
}

#[test]
fn an_empty_node_name_loses_the_first_node_and_a_missing_node_leaves_the_fault_unfired() {
    let seen = Seen::default();
    let report = world(seen.clone()).faults(lose("", 2_000, 3_000)).keep_trace(true).run(3);
    assert_eq!(report.verdict, Verdict::Pass);
    assert!(notes(&report)[0].starts_with("Node a: kubelet silent"), "{:?}", notes(&report));
    assert_eq!(seen.lock().unwrap()[1][2], "Ready=True (KubeletReady)", "b is not the one lost");

    let report = world(Seen::default()).faults(lose("c", 2_000, 3_000)).keep_trace(true).run(3);
    assert_eq!(report.verdict, Verdict::Pass);
    assert_eq!(report.unfired.len(), 1, "no Node c: the fault never fired");
    assert!(notes(&report).is_empty());
}

#[test]
fn swarm_selection_draws_lost_nodes_only_in_a_world_with_nodes_and_names_one_of_them() {
    let config = |world: &SimBuilder| SwarmConfig {
        controllers: vec!["zoo".into()],
        kinds: vec![FaultKind::LoseNode],
        profile: Some(world.fault_profile()),
        ..SwarmConfig::default()
    };
    let without = Sim::builder().workload(|w| async move {
        w.sleep(Duration::from_secs(1)).await;
        Ok(())
    });
    assert!(drawable_kinds(&config(&without)).is_empty());
    let why = sim::faults::swarm::why_not_drawn(FaultKind::LoseNode, &config(&without));
    assert!(why[0].1.is_some_and(|r| r.contains("no Node")), "{why:?}");

    let with = world(Seen::default());
    assert_eq!(with.fault_profile().kube_nodes, vec!["a".to_owned(), "b".to_owned()]);
    let config = config(&with);
    assert_eq!(drawable_kinds(&config), vec![FaultKind::LoseNode]);
    let mut drawn = std::collections::BTreeSet::new();
    for seed in 0..200u64 {
        for planned in swarm_plan(&mut sim::decision::DecisionSource::new(seed), &config).faults {
            let Fault::LoseNode { node, duration_ms } = planned.fault else { panic!("{planned}") };
            assert!((1..=config.duration_max_ms).contains(&duration_ms));
            drawn.insert(node);
        }
    }
    assert_eq!(drawn, ["a".to_owned(), "b".to_owned()].into(), "both Nodes are drawn");
    assert!(!SwarmConfig::default().kinds.contains(&FaultKind::LoseNode), "a world opts in");
}

#[test]
fn a_lost_node_is_persisted_as_regression_files_write_faults() {
    let fault = Fault::LoseNode { node: "node-1".into(), duration_ms: 4_000 };
    let json = serde_json::to_value(&fault).unwrap();
    assert_eq!(json, serde_json::json!({ "type": "loseNode", "node": "node-1", "durationMs": 4_000 }));
    assert_eq!(serde_json::from_value::<Fault>(json).unwrap(), fault);
    assert_eq!(fault.to_string(), "lose node-1's kubelet for 4000ms");
    assert_eq!(fault.controller(), None);
}

#[test]
fn guided_exploration_plans_each_node_lost_after_each_workload_step() {
    use sim::guided::{Site, injection_points, injection_points_with};
    let reference = world(Seen::default()).keep_trace(true).run(0);
    assert_eq!(reference.verdict, Verdict::Pass);
    let lost: Vec<String> = injection_points(&reference)
        .iter()
        .filter(|p| matches!(p.site, Site::NodeOutage { .. }))
        .map(|p| format!("{} | {}", p.site, p.fault))
        .collect();
    // Two workload steps (the applies, one right after the other): each Node lost from just after
    // the first step's write is answered, over the next step.
    assert_eq!(lost.len(), 2, "{lost:#?}");
    assert!(lost[0].starts_with("Node a lost from step 1 over the next 1 workload step ("), "{lost:#?}");
    assert!(lost[1].starts_with("Node b lost from step 1 over the next 1 workload step ("), "{lost:#?}");
    assert!(lost[0].contains("| lose a's kubelet for") && lost[1].contains("| lose b's kubelet for"));
    // Planted there, the loss of a fires: the Node exists by then.
    let point = injection_points(&reference).into_iter().find(|p| matches!(p.site, Site::NodeOutage { .. }));
    let plan = FaultPlan { faults: vec![point.expect("a Node outage").fault] };
    let report = world(Seen::default()).faults(plan).run(0);
    assert_eq!(report.verdict, Verdict::Pass);
    assert!(report.unfired.is_empty(), "{:?}", report.unfired);
    // A trace alone does not say which Nodes there are.
    let without = injection_points_with(reference.trace.entries(), &sim::guided::PointConfig::default());
    assert!(!without.points.iter().any(|p| matches!(p.site, Site::NodeOutage { .. })));
}
