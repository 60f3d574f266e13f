//! The kubelet-lite's delays are draws of its own decision stream and its times come from the
//! run's virtual clock: a Pod's `startTime` and its conditions' `lastTransitionTime` are set, lie
//! within the run, and are the same on every run of a seed (and so is the trace digest).

use std::time::Duration;

use controllers::builtins::{self, pod_state, snapshot};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use sim::api::{Api, ObjectMeta};
use sim::{RunReport, Sim, SimBuilder, Verdict};

const WAIT: Duration = Duration::from_secs(30);

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("app:1".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn world() -> SimBuilder {
    builtins::kubelet(Sim::builder()).workload(|w| async move {
        let pods: Api<Pod> = Api::namespaced(w.client(), "default");
        w.apply(&pods, &pod("app")).await?;
        w.wait_for(&pods, "app", |p| p.is_some_and(pod_state::is_running_and_ready), WAIT).await
    })
}

/// The Pod's startTime and each condition's (type, lastTransitionTime), from the end state.
fn times(end: &sim::EndView<'_>) -> (String, Vec<(String, String)>) {
    let cluster = end.cluster("default").expect("default cluster");
    let p = snapshot::object::<Pod>(cluster, Some("default"), "app").expect("the pod");
    let status = p.status.unwrap_or_default();
    let start = status.start_time.map(|t| t.0.to_string()).unwrap_or_default();
    let conditions = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.last_transition_time.map(|t| t.0.to_string()).unwrap_or_default()))
        .collect();
    (start, conditions)
}

/// Run `seed` and return its report with the Pod's times.
fn run(seed: u64) -> (RunReport, (String, Vec<(String, String)>)) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let probe = seen.clone();
    let report = world()
        .property(sim::FnProperty::at_end("record the pod's times", move |view| {
            *probe.lock().unwrap() = Some(times(view));
            Ok(())
        }))
        .run(seed);
    let times = seen.lock().unwrap().take().expect("the end check ran");
    (report, times)
}

#[test]
fn the_same_seed_gives_the_same_start_and_transition_times_and_digest() {
    for seed in 0..3 {
        let (first, first_times) = run(seed);
        let (second, second_times) = run(seed);
        assert_eq!(first.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(first_times, second_times, "seed {seed}");
        assert_eq!(first.digest, second.digest, "seed {seed}");
    }
}

#[test]
fn a_started_pod_has_a_start_time_and_transition_times_from_the_virtual_clock() {
    let (report, (start, conditions)) = run(5);
    assert_eq!(report.verdict, Verdict::Pass);
    let epoch = jiff::Timestamp::from_second(sim::world::EPOCH_UNIX_SECONDS).unwrap();
    let end = epoch + jiff::SignedDuration::from_millis(report.stats.virtual_millis as i64 + 1);
    let start: jiff::Timestamp = start.parse().expect("startTime is set");
    // Kubernetes' Time has whole seconds: the Pod started within the run's first seconds.
    assert!(epoch <= start && start <= end, "{start} not within the run ({epoch}..{end})");
    let types: Vec<&str> = conditions.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    );
    for (type_, at) in &conditions {
        let at: jiff::Timestamp = at.parse().unwrap_or_else(|_| panic!("{type_} has no lastTransitionTime"));
        assert_eq!(at, start, "{type_}: every condition turned true when the Pod started");
    }
}
