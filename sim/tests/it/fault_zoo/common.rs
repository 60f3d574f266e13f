//! What the fault-zoo controllers share: parents (ConfigMaps labelled `zoo=parent`), children
//! (Secrets labelled with their parent's name and owned by it), the general properties that
//! state the controllers' contracts, and the two sweeps every zoo test runs: "the buggy variant
//! fails within a stated seed budget, and the failing seed's trace shows the expected fault" and
//! "the fixed variant passes every seed".

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim::api::{ObjectMeta, Resource};
use sim::faults::{FaultKind, SwarmConfig};
use sim::property::{EndView, FnProperty, StepView};
use sim::{RunReport, SimBuilder, SweepConfig, TraceEvent, sweep};

/// The namespace everything lives in.
pub const NS: &str = "default";
/// The label that marks a parent.
pub const PARENT_SELECTOR: &str = "zoo=parent";
/// The label that names a child's parent.
pub const OWNER_LABEL: &str = "zoo/owner";
/// The storage keys of parents and children in a snapshot.
const CONFIGMAPS: &str = "configmaps";
const SECRETS: &str = "secrets";

/// Which variant of a zoo controller runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// With the planted bug.
    Buggy,
    /// With the bug fixed.
    Fixed,
}

/// A parent named `name` whose `data` is `data`.
pub fn parent(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NS.to_owned()),
            labels: Some(BTreeMap::from([("zoo".to_owned(), "parent".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
        ..ConfigMap::default()
    }
}

/// A child of `parent`: named `name`, or generated from `<parent>-` when `name` is `None`.
pub fn child(parent: &ConfigMap, name: Option<&str>) -> Secret {
    let parent_name = parent.metadata.name.clone().unwrap_or_default();
    Secret {
        metadata: ObjectMeta {
            name: name.map(str::to_owned),
            generate_name: name.is_none().then(|| format!("{parent_name}-")),
            namespace: Some(NS.to_owned()),
            labels: Some(BTreeMap::from([(OWNER_LABEL.to_owned(), parent_name)])),
            owner_references: parent.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

/// The label selector of `parent`'s children.
pub fn children_selector(parent: &str) -> String {
    format!("{OWNER_LABEL}={parent}")
}

/// Per parent name, its children's names, from a snapshot of the `default` cluster.
pub fn children_by_parent(snapshot: &model_apiserver::Snapshot) -> BTreeMap<String, Vec<String>> {
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, secret) in snapshot.iter_resource(SECRETS, Some(NS)) {
        let owner = secret.metadata.labels.as_ref().and_then(|l| l.get(OWNER_LABEL));
        if let Some(owner) = owner {
            children.entry(owner.clone()).or_default().push(key.name.to_string());
        }
    }
    children
}

/// The parents' names and data, from a snapshot.
pub fn parents(snapshot: &model_apiserver::Snapshot) -> BTreeMap<String, BTreeMap<String, String>> {
    snapshot
        .iter_resource(CONFIGMAPS, Some(NS))
        .filter(|(_, cm)| {
            cm.metadata.labels.as_ref().and_then(|l| l.get("zoo")).is_some_and(|v| v == "parent")
        })
        .map(|(key, cm)| {
            let data = cm.data["data"]
                .as_object()
                .map(|d| {
                    d.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect()
                })
                .unwrap_or_default();
            (key.name.to_string(), data)
        })
        .collect()
}

/// Safety: no parent ever has more than one child (the contract of a controller that makes one
/// child per parent).
pub fn at_most_one_child_per_parent() -> FnProperty {
    FnProperty::always("at most one child per parent", |view: &StepView<'_>| {
        let snapshot = view.cluster("default").ok_or("no cluster named default")?;
        for (parent, children) in children_by_parent(snapshot) {
            if children.len() > 1 {
                return Err(format!(
                    "parent {parent} has {} children: {}",
                    children.len(),
                    children.join(", ")
                ));
            }
        }
        Ok(())
    })
}

/// End state: every parent has exactly the children `expected(parent name, parent data)` names.
pub fn children_match(
    expected: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
) -> FnProperty {
    FnProperty::at_end("every parent has exactly its expected children", move |view: &EndView<'_>| {
        let snapshot = view.cluster("default").ok_or("no cluster named default")?;
        let children = children_by_parent(snapshot);
        for (parent, data) in parents(snapshot) {
            let mut want = expected(&parent, &data);
            want.sort();
            let have = children.get(&parent).cloned().unwrap_or_default();
            if have != want {
                return Err(format!(
                    "parent {parent}: children [{}], expected [{}]",
                    have.join(", "),
                    want.join(", ")
                ));
            }
        }
        Ok(())
    })
}

/// End state: every parent has exactly `count` children (whatever their generated names).
pub fn children_count(count: usize) -> FnProperty {
    FnProperty::at_end("every parent has its children", move |view: &EndView<'_>| {
        let snapshot = view.cluster("default").ok_or("no cluster named default")?;
        let children = children_by_parent(snapshot);
        for parent in parents(snapshot).keys() {
            let have = children.get(parent).map_or(0, Vec::len);
            if have != count {
                return Err(format!("parent {parent}: {have} children, expected {count}"));
            }
        }
        Ok(())
    })
}

/// A swarm of one fault kind on the given controllers, with the given bounds.
pub fn swarm_of(
    kind: FaultKind,
    controllers: &[&str],
    writes_max: u32,
    time_max_ms: u64,
    duration_max_ms: u64,
) -> SwarmConfig {
    SwarmConfig {
        controllers: controllers.iter().map(|c| (*c).to_owned()).collect(),
        kinds: vec![kind],
        faults_max: 2,
        writes_max,
        time_max_ms,
        duration_max_ms,
        profile: None,
    }
}

/// The description prefix of a fired fault of `kind` in the trace, as `Fault`'s Display starts.
pub fn fault_prefix(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Crash => "crash ",
        FaultKind::StaleReplica => "restart ",
        FaultKind::PauseReconciles => "pause ",
        FaultKind::SkipByRelist => "hold ",
        FaultKind::DelayWatch => "delay ",
        FaultKind::ApiError => "fail ",
        FaultKind::Ambiguous => "apply ",
        FaultKind::WatchDisconnect => "disconnect ",
        FaultKind::Compact => "compact ",
        FaultKind::Partition => "partition ",
        FaultKind::PauseLeader => "pause ",
        FaultKind::LoseNode => "lose ",
    }
}

/// Sweep the buggy world over `budget` seeds; assert that a seed fails with `property`, and that
/// the failing seed's trace (replayed with its entries kept) shows a fault of `kind` before the
/// failure. Returns the failing report.
pub fn assert_found_within(
    world: &SimBuilder,
    scenario: &str,
    budget: u64,
    property: &str,
    kind: FaultKind,
) -> RunReport {
    let config = SweepConfig::new(scenario).seeds(budget).self_check_every(0);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    let failure = report
        .failures
        .iter()
        .find(|f| matches!(&f.verdict, sim::Verdict::Correctness { property: p, .. } if p == property))
        .unwrap_or_else(|| {
            let others: Vec<String> = report.failures.iter().take(3).map(|f| f.to_string()).collect();
            panic!("no seed of {budget} broke \"{property}\"; other failures: {others:?}")
        });
    let replay = world.clone().keep_trace(true).run(failure.seed);
    assert_eq!(replay.verdict, failure.verdict, "the failing seed replays to the same verdict");
    assert_eq!(replay.digest, failure.digest, "the failing seed replays to the same trace");
    let prefix = fault_prefix(kind);
    let fired =
        replay.trace.entries().iter().any(
            |e| matches!(&e.event, TraceEvent::Fault { description } if description.starts_with(prefix)),
        );
    assert!(fired, "seed {} fails without a {kind:?} fault:\n{}", failure.seed, replay.trace.render());
    replay
}

/// Sweep the fixed world over `seeds` seeds (self-checking determinism on every 50th): every seed
/// passes.
pub fn assert_passes(world: &SimBuilder, scenario: &str, seeds: u64) {
    let config = SweepConfig::new(scenario).seeds(seeds).self_check_every(50);
    let report = sweep(&config, |seed, options| world.run_with(seed, options));
    report.assert_all_passed();
}

/// A shared flag set for one controller run (its "memory", lost with its node).
pub type Memory<T> = Arc<std::sync::Mutex<T>>;
