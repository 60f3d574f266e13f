//! The tests of `sim::guided::points` (its former unit tests: the library has no test harness).

use std::sync::Arc;

use sim::faults::profile::Profile;
use sim::faults::{Fault, Trigger};
use sim::guided::points::*;
use sim::trace::{TraceEntry, TraceEvent};
use sim::world::WORKLOAD_NODE;

const MS: u64 = 1_000_000;

/// A controller `ctrl` reconciles `a`, creates secret `s` (rv 5), patches `a` without a change
/// (answer rv 5) and with a 409; the workload updates `a` (rv 6, delivered to `ctrl`) and
/// deletes it (rv 7).
fn entries() -> Vec<TraceEntry> {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let workload: Arc<str> = Arc::from(WORKLOAD_NODE);
    let entry = |at_nanos, node: &Arc<str>, event| TraceEntry { at_nanos, node: node.clone(), event };
    let request = |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.to_owned() };
    let ok = |call, rv: &str| TraceEvent::ApiResponse { call, result: Ok(rv.to_owned()) };
    vec![
        entry(
            10 * MS,
            &ctrl,
            TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() },
        ),
        entry(11 * MS, &ctrl, request(1, "create", "secrets/default/s")),
        entry(12 * MS, &ctrl, ok(1, "5")),
        entry(13 * MS, &ctrl, request(2, "patch", "configmaps/default/a")),
        entry(14 * MS, &ctrl, ok(2, "5")),
        entry(15 * MS, &ctrl, request(3, "patch", "configmaps/default/a")),
        entry(16 * MS, &ctrl, TraceEvent::ApiResponse { call: 3, result: Err((409, "Conflict".into())) }),
        entry(19 * MS, &workload, request(4, "update", "configmaps/default/a")),
        entry(20 * MS, &workload, ok(4, "6")),
        entry(
            22 * MS,
            &ctrl,
            TraceEvent::WatchDelivery {
                watch: "default/configmaps/default".into(),
                kind: "MODIFIED",
                object: "default/a".into(),
                resource_version: "6".into(),
            },
        ),
        entry(29 * MS, &workload, request(5, "delete", "configmaps/default/a")),
        entry(30 * MS, &workload, ok(5, "7")),
    ]
}

#[test]
fn writes_that_change_nothing_are_pruned_and_the_rest_become_points_in_exploration_order() {
    let set = injection_points_with(&entries(), &PointConfig::default());
    assert_eq!(set.controllers, vec!["ctrl".to_owned()]);
    assert_eq!((set.writes, set.no_op_writes, set.duplicates), (3, 2, 0));
    let faults: Vec<String> = set.points.iter().map(|p| p.fault.to_string()).collect();
    assert_eq!(
        faults,
        vec![
            "pause ctrl's reconciles for 1500ms, at 9ms",
            "crash ctrl after the call, restart after 500ms, at write #1 by ctrl (create secrets)",
            "apply ctrl's write but answer 504 Timeout, at write #1 by ctrl (create secrets)",
            "restart ctrl after 1ms onto a replica 2 revisions behind, on Delete of configmaps default/a",
            "delay ctrl's configmaps watch by 1000ms for 10000ms, at 19ms",
            "hold ctrl's watches 1000ms, then force a 410 relist, at 19ms",
            "crash ctrl before the call, restart after 500ms, at write #1 by ctrl (create secrets)",
            "fail ctrl's call with 409 Conflict, at write #1 by ctrl (create secrets)",
            "fail ctrl's call with 429 TooManyRequests, at write #1 by ctrl (create secrets)",
            "fail ctrl's call with 500 InternalError, at write #1 by ctrl (create secrets)",
            "fail ctrl's call with 504 Timeout, at write #1 by ctrl (create secrets)",
        ]
    );
    assert_eq!(
        set.points[1].fault.trigger,
        Trigger::NthWrite {
            controller: "ctrl".into(),
            n: 1,
            kind: Some("secrets".into()),
            verb: Some("create".into())
        }
    );
    assert_eq!(set.points[3].site.to_string(), "workload's change of configmaps/default/a (rv 6)");
}

#[test]
fn a_reconcile_whose_pause_lands_at_the_same_millisecond_as_an_earlier_one_is_merged_into_it() {
    let mut entries = entries();
    let again = TraceEntry {
        at_nanos: 10 * MS - 500,
        node: Arc::from("ctrl"),
        event: TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/b".into() },
    };
    entries.insert(0, again);
    let set = injection_points_with(&entries, &PointConfig::default());
    assert_eq!((set.points.len(), set.duplicates), (11, 1));
    assert_eq!(set.points[0].site.to_string(), "ctrl's reconcile of ConfigMap default/b");
}

#[test]
fn points_on_the_same_controller_or_object_are_related_and_others_are_not() {
    let set = injection_points_with(&entries(), &PointConfig::default());
    let mut other = set.points[0].clone();
    other.fault.fault = Fault::PauseReconciles { controller: "other".into(), duration_ms: 1 };
    assert!(set.points[0].related(&set.points[1]));
    assert!(other.related(&set.points[0]), "same object default/a");
    assert!(!other.related(&set.points[1]), "other controller, object default/s");
}

#[test]
fn the_same_write_at_the_same_reconcile_step_for_a_second_object_waits_for_the_next_round() {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let mut entries = Vec::new();
    for (i, object) in ["a", "b"].into_iter().enumerate() {
        let at = (i as u64 + 1) * 100 * MS;
        let call = i as u64 + 1;
        let start = TraceEvent::ReconcileStart {
            controller: "ctrl".into(),
            object: format!("ConfigMap default/{object}"),
        };
        entries.push(TraceEntry { at_nanos: at, node: ctrl.clone(), event: start });
        let target = format!("secrets/default/{object}");
        let request = TraceEvent::ApiRequest { call, verb: "create", target };
        entries.push(TraceEntry { at_nanos: at + MS, node: ctrl.clone(), event: request });
        let answer = TraceEvent::ApiResponse { call, result: Ok((10 + call).to_string()) };
        entries.push(TraceEntry { at_nanos: at + 2 * MS, node: ctrl.clone(), event: answer });
    }
    let config = PointConfig { errors: Vec::new(), ..PointConfig::default() };
    let set = injection_points_with(&entries, &config);
    let order: Vec<String> = set.points.iter().map(|p| format!("{} / {}", p.site, p.fault.fault)).collect();
    assert_eq!(
        order,
        vec![
            "ctrl's reconcile of ConfigMap default/a / pause ctrl's reconciles for 1500ms",
            "ctrl's create #1 of secrets/default/a (rv 11) / crash ctrl after the call, restart after 500ms",
            "ctrl's create #1 of secrets/default/a (rv 11) / apply ctrl's write but answer 504 Timeout",
            "ctrl's reconcile of ConfigMap default/b / pause ctrl's reconciles for 1500ms",
            "ctrl's create #2 of secrets/default/b (rv 12) / crash ctrl after the call, restart after 500ms",
            "ctrl's create #2 of secrets/default/b (rv 12) / apply ctrl's write but answer 504 Timeout",
            "ctrl's create #1 of secrets/default/a (rv 11) / crash ctrl before the call, restart after 500ms",
            "ctrl's create #2 of secrets/default/b (rv 12) / crash ctrl before the call, restart after 500ms",
        ]
    );
    assert_eq!(set.points[1].class, "ctrl create secrets at step 1");
}

/// Workload steps at 0, 2 and 4 s; `ctrl` reconciles 10 ms after each.
fn stepped_entries() -> Vec<TraceEntry> {
    let (ctrl, workload): (Arc<str>, Arc<str>) = (Arc::from("ctrl"), Arc::from(WORKLOAD_NODE));
    let mut entries = Vec::new();
    for step in 0..3u64 {
        let text = format!("step {}: apply ConfigMap default/a", step + 1);
        entries.push(TraceEntry {
            at_nanos: step * 2_000 * MS,
            node: workload.clone(),
            event: TraceEvent::Note { text },
        });
        let start =
            TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() };
        entries.push(TraceEntry { at_nanos: (step * 2_000 + 10) * MS, node: ctrl.clone(), event: start });
    }
    entries
}

#[test]
fn timed_outages_start_after_each_step_and_last_until_after_the_next_ones_shortest_first() {
    let config = PointConfig { outage_steps_max: 3, ..PointConfig::default() };
    let set = injection_points_with(&stepped_entries(), &config);
    let outages: Vec<String> = set
        .points
        .iter()
        .filter(|p| matches!(p.site, Site::Outage { .. }))
        .map(|p| format!("{} / {}", p.site, p.fault))
        .collect();
    assert_eq!(set.outages, outages.len());
    // From step 1 (trigger at 9 ms): until 1 s after step 2 (half the 2 s to step 3), then
    // 1 s after step 3 (the last); from step 2: until 1 s after step 3; none from step 3.
    let want = [
        "ctrl's outage from step 1 over the next 1 workload step (2991ms) / partition ctrl from the API server for 2991ms, at 9ms",
        "ctrl's outage from step 1 over the next 1 workload step (2991ms) / hold ctrl's watches 2991ms, then force a 410 relist, at 9ms",
        "ctrl's outage from step 1 over the next 1 workload step (2991ms) / pause ctrl's reconciles for 2991ms, at 9ms",
        "ctrl's outage from step 1 over the next 2 workload steps (4991ms) / partition ctrl from the API server for 4991ms, at 9ms",
    ];
    for line in want {
        assert!(outages.iter().any(|o| o == line), "{line} not in {outages:#?}");
    }
    assert_eq!(outages.len(), 9, "{outages:#?}");
    // From one step, the shorter outages come first.
    let at = |needle: &str| outages.iter().position(|o| o.starts_with(needle)).expect(needle);
    assert!(
        at("ctrl's outage from step 1 over the next 1 ") < at("ctrl's outage from step 1 over the next 2 ")
    );
}

#[test]
fn a_profile_leaves_out_the_points_whose_fault_cannot_act() {
    let entries = stepped_entries();
    let mut profile = Profile::default();
    // `ctrl` reconciles and calls, but has no informer: held watches cannot act on it.
    profile.note_reconcile("ctrl");
    profile.note_call("ctrl", "get", "configmaps");
    let all = injection_points_with(&entries, &PointConfig::default());
    let acting = injection_points_profiled(&entries, Some(&profile), &PointConfig::default());
    let holds = |set: &PointSet| {
        set.points.iter().filter(|p| matches!(p.fault.fault, Fault::SkipByRelist { .. })).count()
    };
    assert!(holds(&all) > 0);
    assert_eq!(holds(&acting), 0);
    assert_eq!(acting.cannot_act, holds(&all));
    assert_eq!(acting.points.len() + acting.cannot_act, all.points.len());
}

#[test]
fn a_report_without_kept_entries_has_no_points() {
    assert_eq!(injection_points_with(&[], &PointConfig::default()), PointSet::default());
}

/// A delete answers the object as last stored, so its answer shows no new revision; the gap it
/// leaves before the next revision the trace shows is its. `ctrl` creates secret `s` (rv 5),
/// deletes it (answered "5": it made rv 6), patches `a` without a change (answered "4"), and the
/// workload creates `t` (rv 7); last, `ctrl` deletes `t` (answered "7", nothing after it: it made
/// rv 8). Both deletes are writes that changed something, with their revisions; the patch is not.
#[test]
fn a_delete_answered_with_the_stored_revision_is_a_change_at_the_revision_its_gap_shows() {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let workload: Arc<str> = Arc::from(WORKLOAD_NODE);
    let entry = |at_nanos, node: &Arc<str>, event| TraceEntry { at_nanos, node: node.clone(), event };
    let request = |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.to_owned() };
    let ok = |call, rv: &str| TraceEvent::ApiResponse { call, result: Ok(rv.to_owned()) };
    let entries = vec![
        entry(MS, &ctrl, request(1, "list", "configmaps/default")),
        entry(2 * MS, &ctrl, ok(1, "4")),
        entry(11 * MS, &ctrl, request(2, "create", "secrets/default/s")),
        entry(12 * MS, &ctrl, ok(2, "5")),
        entry(13 * MS, &ctrl, request(3, "delete", "secrets/default/s")),
        entry(14 * MS, &ctrl, ok(3, "5")),
        entry(15 * MS, &ctrl, request(4, "patch", "configmaps/default/a")),
        entry(16 * MS, &ctrl, ok(4, "4")),
        entry(19 * MS, &workload, request(5, "create", "secrets/default/t")),
        entry(20 * MS, &workload, ok(5, "7")),
        entry(29 * MS, &ctrl, request(6, "delete", "secrets/default/t")),
        entry(30 * MS, &ctrl, ok(6, "7")),
    ];
    let set = injection_points_with(&entries, &PointConfig::default());
    assert_eq!((set.writes, set.no_op_writes), (4, 1));
    let mut writes: Vec<String> = set
        .points
        .iter()
        .filter(|p| matches!(p.site, Site::Write { .. }))
        .map(|p| p.site.to_string())
        .collect();
    writes.sort();
    writes.dedup();
    assert_eq!(
        writes,
        vec![
            "ctrl's create #1 of secrets/default/s (rv 5)",
            "ctrl's delete #1 of secrets/default/s (rv 6)",
            "ctrl's delete #2 of secrets/default/t (rv 8)",
        ]
    );
    // The create and the delete of `s` are an object's two transitions: a stale-replica point
    // restarts `ctrl` onto a replica from before the create, at the delete.
    assert!(
        set.points.iter().any(|p| p.site.to_string() == "ctrl's change of secrets/default/s (rv 5)"),
        "{:#?}",
        set.points.iter().map(|p| p.site.to_string()).collect::<Vec<_>>()
    );
}

/// A finalizer's life: the workload creates `a` (rv 5), `ctrl` adds its finalizer (rv 6), the
/// workload deletes `a` (rv 7: marked), `ctrl` removes the finalizer (answered "7", the object's
/// last stored revision; it made rv 8, delivered as DELETED). Besides the restart at the next
/// change, each transition gets one at the change after it: `ctrl` restarted right after its own
/// removal of the finalizer (its 2nd patch, counted as triggers count) onto a replica from before
/// it added the finalizer, which replays the object with the finalizer and not yet deleted.
#[test]
fn a_stale_replica_point_restarts_a_controller_after_its_own_write_two_changes_later() {
    let ctrl: Arc<str> = Arc::from("ctrl");
    let workload: Arc<str> = Arc::from(WORKLOAD_NODE);
    let entry = |at_nanos, node: &Arc<str>, event| TraceEntry { at_nanos, node: node.clone(), event };
    let request = |call, verb, target: &str| TraceEvent::ApiRequest { call, verb, target: target.to_owned() };
    let ok = |call, rv: &str| TraceEvent::ApiResponse { call, result: Ok(rv.to_owned()) };
    let a = "configmaps/default/a";
    let entries = vec![
        entry(MS, &ctrl, request(1, "list", "configmaps/default")),
        entry(2 * MS, &ctrl, ok(1, "4")),
        entry(10 * MS, &workload, request(2, "create", a)),
        entry(11 * MS, &workload, ok(2, "5")),
        entry(
            12 * MS,
            &ctrl,
            TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() },
        ),
        entry(13 * MS, &ctrl, request(3, "patch", a)),
        entry(14 * MS, &ctrl, ok(3, "6")),
        entry(20 * MS, &workload, request(4, "delete", a)),
        entry(21 * MS, &workload, ok(4, "7")),
        entry(
            22 * MS,
            &ctrl,
            TraceEvent::ReconcileStart { controller: "ctrl".into(), object: "ConfigMap default/a".into() },
        ),
        entry(23 * MS, &ctrl, request(5, "patch", a)),
        entry(24 * MS, &ctrl, ok(5, "7")),
        entry(
            25 * MS,
            &ctrl,
            TraceEvent::WatchDelivery {
                watch: "default/configmaps/default".into(),
                kind: "DELETED",
                object: "default/a".into(),
                resource_version: "8".into(),
            },
        ),
    ];
    let set = injection_points_with(&entries, &PointConfig::default());
    let stale: Vec<String> = set
        .points
        .iter()
        .filter(|p| matches!(p.fault.fault, Fault::StaleReplica { .. }) && p.controller() == "ctrl")
        .map(|p| format!("{} | {}", p.site, p.fault))
        .collect();
    let finalizer_added = "ctrl's change of configmaps/default/a (rv 6)";
    assert!(
        stale.contains(&format!(
            "{finalizer_added} | restart ctrl after 1ms onto a replica 3 revisions behind, at write #2 by ctrl (patch configmaps)"
        )),
        "{stale:#?}"
    );
    assert!(
        stale.contains(&format!(
            "{finalizer_added} | restart ctrl after 1ms onto a replica 2 revisions behind, on Delete of configmaps default/a"
        )),
        "{stale:#?}"
    );
}
