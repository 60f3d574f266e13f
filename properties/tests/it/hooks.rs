//! The `hooks` module wires the checkers into runs: each hook passes on a small world that keeps
//! it, and fails with a Correctness verdict naming the property and the object on one that
//! breaks it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{ObjectMeta, ResourceExt};
use model_apiserver::Snapshot;
use properties::hooks::{self, Reference};
use sim::api::{Api, Patch, PatchParams, PostParams};
use sim::runtime::controller::Action;
use sim::runtime::finalizer::{self, finalizer};
use sim::runtime::{Controller, watcher};
use sim::{Clients, Sim, SimBuilder, Verdict, Workload};

/// The error of reconcilers that fail only through the finalizer helper.
#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), "1".to_owned())])),
        ..ConfigMap::default()
    }
}

/// A world with one ConfigMap controller over `default` reconciling with `reconcile(api, cm)`
/// (errors are retried after 1s), and a workload that creates ConfigMap `a`.
fn world<F, Fut>(reconcile: F) -> SimBuilder
where
    F: Fn(Api<ConfigMap>, Arc<ConfigMap>) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, finalizer::Error<Never>>> + 'static,
{
    Sim::builder()
        .controller("under-test", move |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            Controller::new(api.clone(), watcher::Config::default())
                .run(
                    move |cm, _: Arc<()>| reconcile(api.clone(), cm),
                    |_, _, _| Action::requeue(Duration::from_secs(1)),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a")).await?;
            Ok(())
        })
}

fn cms(w: &Workload) -> Api<ConfigMap> {
    Api::namespaced(w.client(), "default")
}

/// Reconcile `a` by creating `a-child` owned by (`owner_name`, `owner_uid`), or by `a` itself
/// when `owner_uid` is `None`.
async fn create_child(
    api: Api<ConfigMap>,
    cm: Arc<ConfigMap>,
    owner: Option<(&str, &str)>,
) -> Result<Action, finalizer::Error<Never>> {
    if cm.name_any() != "a" {
        return Ok(Action::await_change());
    }
    let own_uid = cm.uid().unwrap_or_default();
    let (name, uid) = owner.unwrap_or(("a", own_uid.as_str()));
    let mut child = config_map("a-child");
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        ..OwnerReference::default()
    }]);
    match api.create(&PostParams::default(), &child).await {
        Ok(_) => {}
        Err(sim::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("creating the child: {e}"),
    }
    Ok(Action::await_change())
}

/// The verdict's (property, message), or the whole verdict when it is not a Correctness one.
fn correctness(verdict: &Verdict) -> (String, String) {
    match verdict {
        Verdict::Correctness { property, message, .. } => (property.clone(), message.clone()),
        other => panic!("expected a Correctness verdict, found {other:?}"),
    }
}

#[test]
fn no_orphans_passes_when_the_child_points_at_its_live_owner() {
    let world = world(|api, cm| create_child(api, cm, None)).property(hooks::no_orphans());
    for seed in 0..3 {
        assert_eq!(world.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn no_orphans_fails_naming_the_child_whose_owner_uid_exists_nowhere() {
    let world =
        world(|api, cm| create_child(api, cm, Some(("ghost", "no-such-uid")))).property(hooks::no_orphans());
    for seed in 0..3 {
        assert_eq!(
            correctness(&world.run(seed).verdict),
            (
                "no_orphans".to_owned(),
                "configmaps default/a-child: owner ConfigMap ghost (uid no-such-uid) is gone: expected configmaps default/ghost, found nothing"
                    .to_owned()
            ),
            "seed {seed}"
        );
    }
}

/// A workload that creates `a`, waits until a controller put a finalizer on it, and deletes it.
async fn create_then_delete(w: Workload) -> Result<(), sim::WorkloadError> {
    w.apply(&cms(&w), &config_map("a")).await?;
    let finalized = |cm: Option<&ConfigMap>| cm.is_some_and(|cm| !cm.finalizers().is_empty());
    w.wait_for(&cms(&w), "a", finalized, Duration::from_secs(10)).await?;
    w.delete(&cms(&w), "a").await
}

#[test]
fn no_stuck_deletions_passes_when_the_controller_removes_its_finalizer_after_cleanup() {
    let world = world(|api, cm| async move {
        finalizer(&api, "kube-sim.test/cleanup", cm, |_| async { Ok::<_, Never>(Action::await_change()) })
            .await
    })
    .workload(create_then_delete)
    .property(hooks::no_stuck_deletions());
    for seed in 0..3 {
        assert_eq!(world.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn no_stuck_deletions_fails_naming_the_object_a_controller_leaves_its_finalizer_on() {
    let world = world(|api, cm| async move {
        if cm.finalizers().is_empty() {
            let patch = Patch::Merge(serde_json::json!({"metadata": {"finalizers": ["kube-sim.test/keep"]}}));
            api.patch(&cm.name_any(), &PatchParams::default(), &patch).await.unwrap();
        }
        Ok(Action::await_change())
    })
    .workload(create_then_delete)
    .property(hooks::no_stuck_deletions());
    for seed in 0..3 {
        let (property, message) = correctness(&world.run(seed).verdict);
        assert_eq!(property, "no_stuck_deletions", "seed {seed}");
        // The deletion happens within the first virtual second (timestamps keep whole seconds).
        assert_eq!(
            message,
            "configmaps default/a: deletion requested at 2026-01-01T00:00:00Z: expected gone, found present with finalizers [kube-sim.test/keep]",
            "seed {seed}"
        );
    }
}

/// How many ConfigMaps `default` holds (the namespace's root CA bundle included, if any).
fn config_maps(state: &Snapshot) -> usize {
    state.iter_resource("configmaps", Some("default")).count()
}

fn at_most(limit: usize) -> impl Fn(&Snapshot) -> Result<(), String> + Send + Sync + 'static {
    move |state| match config_maps(state) {
        n if n > limit => Err(format!("expected at most {limit} ConfigMaps in default, found {n}")),
        _ => Ok(()),
    }
}

#[test]
fn always_passes_while_its_predicate_holds_after_every_write() {
    let world = world(|api, cm| create_child(api, cm, None)).property(hooks::always("at most 2", at_most(2)));
    for seed in 0..3 {
        assert_eq!(world.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn always_fails_at_the_first_write_that_breaks_it_naming_its_step_and_time() {
    let world = world(|api, cm| create_child(api, cm, None)).property(hooks::always("at most 1", at_most(1)));
    for seed in 0..3 {
        let Verdict::Correctness { property, message, at_millis } = world.run(seed).verdict else {
            panic!("seed {seed}: expected a Correctness verdict");
        };
        assert_eq!(property, "at most 1");
        // The write that created a-child, the second ConfigMap, breaks it; the step is the
        // revision that write made, the same in every seed.
        assert_eq!(
            message,
            format!("at step 12 ({at_millis} ms): expected at most 1 ConfigMaps in default, found 2"),
            "seed {seed}"
        );
    }
}

#[test]
fn at_end_passes_when_its_predicate_holds_in_the_end_state() {
    let world =
        world(|api, cm| create_child(api, cm, None)).property(hooks::at_end(
            "two",
            |state| match config_maps(state) {
                2 => Ok(()),
                n => Err(format!("expected 2 ConfigMaps, found {n}")),
            },
        ));
    assert_eq!(world.run(0).verdict, Verdict::Pass);
}

#[test]
fn eventually_fails_with_the_user_message_when_the_end_state_breaks_it() {
    let world = world(|api, cm| create_child(api, cm, None)).property(hooks::eventually("three", |state| {
        match config_maps(state) {
            3 => Ok(()),
            n => Err(format!("expected 3 ConfigMaps, found {n}")),
        }
    }));
    assert_eq!(
        correctness(&world.run(0).verdict),
        ("three".to_owned(), "expected 3 ConfigMaps, found 2".to_owned())
    );
}

/// Stamp `a` with the virtual wall-clock time (which differs between seeds, as a timestamp a
/// controller writes does) and a mode: `right`, except on seeds from 100 up, standing for a run
/// where a fault changed what the controller did.
async fn stamp(api: Api<ConfigMap>, cm: Arc<ConfigMap>) -> Result<Action, finalizer::Error<Never>> {
    let data = cm.data.clone().unwrap_or_default();
    if cm.name_any() != "a" || data.contains_key("mode") {
        return Ok(Action::await_change());
    }
    let now = k8s_openapi::jiff::Timestamp::try_from(std::time::SystemTime::now()).unwrap();
    let mode = if madsim::runtime::Handle::current().seed() >= 100 { "wrong" } else { "right" };
    let patch = Patch::Merge(serde_json::json!({"data": {"observedAt": now.to_string(), "mode": mode}}));
    api.patch("a", &PatchParams::default(), &patch).await.unwrap();
    Ok(Action::await_change())
}

#[test]
fn a_run_matches_the_reference_when_the_learned_mask_hides_the_time_the_controller_writes() {
    let world = world(stamp);
    let reference = Reference::compute(&world, [1, 2]).unwrap();
    let learned: Vec<String> = reference.learned().rules().map(ToString::to_string).collect();
    assert_eq!(learned, ["learned: configmaps /data/observedAt"]);
    let checked = world.property(hooks::matches_reference(Arc::new(reference)));
    for seed in 3..6 {
        assert_eq!(checked.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn a_run_whose_controller_writes_a_different_value_fails_matches_reference_naming_the_field() {
    let world = world(stamp);
    let reference = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    let checked = world.property(hooks::matches_reference(reference));
    assert_eq!(
        correctness(&checked.run(100).verdict),
        (
            "matches_reference".to_owned(),
            "configmaps default/a: /data/mode: expected \"right\", found \"wrong\"".to_owned()
        )
    );
}

#[test]
fn a_user_mask_on_the_reference_hides_a_field_the_runs_differ_in() {
    let world = world(stamp);
    let reference = Reference::compute(&world, [1, 2]).unwrap().mask_user("ConfigMap", ".data.mode").unwrap();
    let checked = world.property(hooks::matches_reference(Arc::new(reference)));
    assert_eq!(checked.run(100).verdict, Verdict::Pass);
}

#[test]
fn a_reference_run_that_fails_is_an_error_naming_its_seed() {
    let world = world(|api, cm| create_child(api, cm, None)).property(hooks::always("at most 1", at_most(1)));
    let error = Reference::compute(&world, [1, 2]).unwrap_err();
    let properties::Error::ReferenceRun { seed, verdict } = &error else {
        panic!("expected ReferenceRun, found {error:?}");
    };
    assert_eq!(*seed, 1);
    assert!(verdict.starts_with("correctness: property \"at most 1\" failed at "), "{verdict}");
    assert!(verdict.contains(": at step 12 ("), "{verdict}");
    assert!(verdict.ends_with(" ms): expected at most 1 ConfigMaps in default, found 2"), "{verdict}");
}

/// A controller whose end state depends on a fault: it stamps `a` with `mode: first-try`, but
/// after a failed write it stamps `mode: retried` instead (the kind of bug the oracle is for).
fn fault_sensitive() -> SimBuilder {
    Sim::builder()
        .controller("stamper", |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
            Controller::new(api.clone(), watcher::Config::default())
                .run(
                    move |cm: Arc<ConfigMap>, _: Arc<()>| {
                        let (api, failed) = (api.clone(), failed.clone());
                        async move {
                            if cm.data.as_ref().is_some_and(|d| d.contains_key("mode")) {
                                return Ok::<_, Never>(Action::await_change());
                            }
                            let mode = if failed.load(std::sync::atomic::Ordering::SeqCst) {
                                "retried"
                            } else {
                                "first-try"
                            };
                            let patch = Patch::Merge(serde_json::json!({"data": {"mode": mode}}));
                            if api.patch(&cm.name_any(), &PatchParams::default(), &patch).await.is_err() {
                                failed.store(true, std::sync::atomic::Ordering::SeqCst);
                                return Ok(Action::requeue(Duration::from_secs(1)));
                            }
                            Ok(Action::await_change())
                        }
                    },
                    |_, _, _| Action::requeue(Duration::from_secs(1)),
                    Arc::new(()),
                )
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            w.apply(&cms(&w), &config_map("a")).await?;
            // Faults stop when the workload ends: stay long enough for the stamper's write.
            w.sleep(Duration::from_secs(5)).await;
            Ok(())
        })
}

/// The stamper's first write fails with 409 Conflict.
fn first_write_conflicts() -> sim::faults::FaultPlan {
    use sim::faults::{Fault, FaultPlan, InjectedError, PlannedFault, Trigger};
    FaultPlan {
        faults: vec![PlannedFault {
            trigger: Trigger::NthWrite { controller: "stamper".to_owned(), n: 1, kind: None, verb: None },
            fault: Fault::ApiError { controller: "stamper".to_owned(), error: InjectedError::Conflict },
        }],
    }
}

#[test]
fn the_reference_runs_without_the_builders_faults_and_a_run_whose_end_state_a_fault_changed_fails() {
    let world = fault_sensitive().faults(first_write_conflicts());
    // The builder's plan would fail the first write; the reference runs ignore it.
    let reference = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    let a = reference.end_state().get("default").and_then(|s| {
        s.iter_resource("configmaps", Some("default")).find(|(k, _)| &*k.name == "a").map(|(_, o)| o.clone())
    });
    assert_eq!(a.and_then(|a| a.data.pointer("/data/mode").cloned()), Some(serde_json::json!("first-try")));
    let checked = world.property(hooks::matches_reference(reference));
    for seed in 0..3 {
        assert_eq!(
            correctness(&checked.run(seed).verdict),
            (
                "matches_reference".to_owned(),
                "configmaps default/a: /data/mode: expected \"first-try\", found \"retried\"".to_owned()
            ),
            "seed {seed}"
        );
    }
}

#[test]
fn in_a_world_of_two_clusters_a_violation_names_its_cluster() {
    let world = Sim::builder()
        .cluster("east")
        .cluster("west")
        .workload(|w| async move {
            let mut orphan = config_map("a-child");
            orphan.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                name: "ghost".to_owned(),
                uid: "no-such-uid".to_owned(),
                ..OwnerReference::default()
            }]);
            w.apply(&Api::namespaced(w.clients().cluster("west"), "default"), &orphan).await?;
            Ok(())
        })
        .property(hooks::no_orphans());
    assert_eq!(
        correctness(&world.run(0).verdict),
        (
            "no_orphans".to_owned(),
            "cluster west: configmaps default/a-child: owner ConfigMap ghost (uid no-such-uid) is gone: expected configmaps default/ghost, found nothing"
                .to_owned()
        )
    );
}

/// A world whose workload creates ConfigMap `a`, and, when `recreate(seed)`, deletes it and
/// creates it again with the same content: the end state is the same either way.
fn recreating(recreate: fn(u64) -> bool) -> SimBuilder {
    Sim::builder().workload(move |w| async move {
        let api = cms(&w);
        w.apply(&api, &config_map("a")).await?;
        if recreate(madsim::runtime::Handle::current().seed()) {
            w.delete(&api, "a").await?;
            w.apply(&api, &config_map("a")).await?;
        }
        Ok(())
    })
}

fn configmap_key(name: &str) -> model_apiserver::ObjectKey {
    model_apiserver::ObjectKey {
        resource: Arc::from("configmaps"),
        namespace: Arc::from("default"),
        name: Arc::from(name),
    }
}

#[test]
fn a_plain_run_matches_the_reference_which_counts_one_creation_of_each_object() {
    let world = recreating(|_| false);
    let reference = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    let a = reference.counts()["default"].iter().find(|c| c.key == configmap_key("a")).cloned();
    assert_eq!(a.map(|a| a.counts), Some(properties::Counts { created: 1, deleted: 0 }));
    assert_eq!(reference.learned().masked_counts().count(), 0);
    let checked = world.property(hooks::matches_reference(reference));
    for seed in 3..6 {
        assert_eq!(checked.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn a_run_that_deleted_and_recreated_an_object_with_the_same_end_state_fails_on_its_counts() {
    let world = recreating(|seed| seed >= 100);
    let reference = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    let checked = world.property(hooks::matches_reference(reference));
    assert_eq!(checked.run(3).verdict, Verdict::Pass);
    // Revisions 2 to 4 are the default namespaces; `a` is created at 5, deleted at 6 and
    // recreated at 7, the step the message names.
    assert_eq!(
        correctness(&checked.run(100).verdict),
        (
            "matches_reference".to_owned(),
            "configmaps default/a: created 2 times, the fault-free reference created it 1 time; \
             deleted 1 time, the fault-free reference deleted it 0 times \
             (last created or deleted at step 13, 18 ms)"
                .to_owned()
        )
    );
}

#[test]
fn counts_that_differ_between_the_two_fault_free_runs_are_learned_and_not_compared() {
    // Reference seed 2 recreates `a`, seed 1 does not: its counts are nondeterministic.
    let world = recreating(|seed| seed % 2 == 0);
    let reference = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    assert_eq!(reference.learned().masked_counts().collect::<Vec<_>>(), [&configmap_key("a")]);
    assert_eq!(reference.learned().rules().count(), 0, "the end states agree: no field is learned");
    let checked = world.property(hooks::matches_reference(reference));
    for seed in 3..7 {
        assert_eq!(checked.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn masking_the_counts_of_objects_the_reference_deletes_tolerates_a_replayed_deletion_and_nothing_else() {
    // Every run deletes and recreates `a` once; seed 100 does it twice, as an operator that
    // replays its deletion after time travel would; seed 101 also recreates `b`, which no
    // reference run deletes.
    let world = Sim::builder().workload(|w| async move {
        let api = cms(&w);
        let seed = madsim::runtime::Handle::current().seed();
        w.apply(&api, &config_map("a")).await?;
        w.apply(&api, &config_map("b")).await?;
        let recreates = if seed >= 100 { 2 } else { 1 };
        for _ in 0..recreates {
            w.delete(&api, "a").await?;
            w.apply(&api, &config_map("a")).await?;
        }
        if seed == 101 {
            w.delete(&api, "b").await?;
            w.apply(&api, &config_map("b")).await?;
        }
        Ok(())
    });
    let strict = Arc::new(Reference::compute(&world, [1, 2]).unwrap());
    let (property, message) =
        correctness(&world.clone().property(hooks::matches_reference(strict)).run(100).verdict);
    assert_eq!(property, "matches_reference");
    assert!(
        message.starts_with(
            "configmaps default/a: created 3 times, the fault-free reference created it 2 times"
        ),
        "{message}"
    );

    let tolerant = Arc::new(Reference::compute(&world, [1, 2]).unwrap().mask_counts_of_deleted());
    assert_eq!(tolerant.mask().masked_counts().collect::<Vec<_>>(), [&configmap_key("a")]);
    let checked = world.property(hooks::matches_reference(tolerant));
    assert_eq!(checked.run(100).verdict, Verdict::Pass);
    let (_, message) = correctness(&checked.run(101).verdict);
    assert!(
        message
            .starts_with("configmaps default/b: created 2 times, the fault-free reference created it 1 time"),
        "{message}"
    );
}

#[test]
fn a_user_count_mask_on_the_reference_hides_the_counts_of_that_object() {
    let world = recreating(|seed| seed >= 100);
    let reference = Reference::compute(&world, [1, 2]).unwrap().mask_counts("configmaps default/a").unwrap();
    let checked = world.property(hooks::matches_reference(Arc::new(reference)));
    assert_eq!(checked.run(100).verdict, Verdict::Pass);
}

#[test]
fn a_reference_whose_history_is_too_short_to_count_its_writes_is_an_error_saying_what_to_raise() {
    // One retained revision: each write compacts its own event before the engine can count it.
    let config = model_apiserver::ServerConfig { history_revisions_max: 1, ..Default::default() };
    let world = recreating(|_| false).server_config(config);
    let error = Reference::compute(&world, [1, 2]).unwrap_err();
    assert_eq!(
        error,
        properties::Error::ReferenceCounts { seed: 1, cluster: "default".to_owned(), missed: 1 }
    );
    assert_eq!(
        error.to_string(),
        "the fault-free reference run with seed 1 lost 1 of its revisions of cluster default to compaction before counting them; raise ServerConfig::history_revisions_max"
    );
}
