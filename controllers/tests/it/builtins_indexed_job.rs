//! The completion-index arithmetic of Indexed Jobs (`controllers::builtins::indexed_job`):
//! upstream's interval form, parsing, merging, the indexes still to run, the Pods to delete and
//! the Pod of one index. (The crate's library has no unit-test harness: its tests live here.)

use controllers::builtins::indexed_job::{self, *};
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn pod(name: &str, index: Option<&str>) -> Pod {
    let annotations = index.map(|i| [(COMPLETION_INDEX.to_owned(), i.to_owned())].into());
    Pod {
        metadata: ObjectMeta { name: Some(name.to_owned()), annotations, ..ObjectMeta::default() },
        ..Pod::default()
    }
}

#[test]
fn intervals_print_in_upstreams_compressed_form() {
    let set = Intervals::default().with_indexes([0, 1, 2, 4, 6, 7, 9, 10, 11]);
    assert_eq!(set.to_string(), "0-2,4,6,7,9-11");
    assert_eq!(set.total(), 9);
    assert!(set.has(10) && !set.has(5) && !set.has(12));
    assert_eq!(Intervals::default().to_string(), "");
}

#[test]
fn parsing_drops_indexes_beyond_completions_and_skips_garbage() {
    assert_eq!(Intervals::parse("0-2,4,6,7", 10).to_string(), "0-2,4,6,7");
    assert_eq!(Intervals::parse("0-2,4-9", 6).to_string(), "0-2,4,5");
    assert_eq!(Intervals::parse("1,x,3-4,8", 5).to_string(), "1,3,4");
    // Adjacent intervals join, as upstream's parser joins them.
    assert_eq!(Intervals::parse("0,1,2", 5).to_string(), "0-2");
}

#[test]
fn merging_joins_overlapping_and_adjacent_intervals() {
    let a = Intervals::parse("0-2,8", 20);
    let b = Intervals::parse("3,5-6,8-9", 20);
    assert_eq!(a.merge(&b).to_string(), "0-3,5,6,8,9");
}

#[test]
fn first_pending_skips_completed_and_active_indexes_lowest_first() {
    let active = [pod("a", Some("1")), pod("b", Some("4")), pod("c", None)];
    let active: Vec<&Pod> = active.iter().collect();
    let done = Intervals::parse("0,2", 7);
    assert_eq!(first_pending(&active, &done, 2, 7), [3, 5]);
    assert_eq!(first_pending(&active, &done, 10, 7), [3, 5, 6]);
    assert!(first_pending(&active, &done, 0, 7).is_empty());
}

#[test]
fn removal_takes_pods_without_a_valid_index_and_all_but_one_of_a_repeated_index() {
    let pods = [
        pod("a", Some("0")),
        pod("b", Some("0")),
        pod("c", None),
        pod("d", Some("5")),
        pod("e", Some("1")),
        pod("f", Some("-1")),
    ];
    let active: Vec<&Pod> = pods.iter().collect();
    let names = |pods: Vec<&Pod>| -> Vec<String> {
        let mut names: Vec<String> = pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
        names.sort();
        names
    };
    // Of two equal Pods of index 0 the newer-named one sorts last in deletion order and stays.
    assert_eq!(names(pods_for_removal(&active, 3, 0)), ["a", "c", "d", "f"]);
    // One more must go: the first of those left in deletion order.
    assert_eq!(pods_for_removal(&active, 3, 5).len(), 5);
}

#[test]
fn an_index_pod_gets_annotation_label_hostname_and_env_in_every_container() {
    let mut p = pod("x", None);
    p.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        containers: vec![Container { name: "main".to_owned(), ..Container::default() }],
        init_containers: Some(vec![Container { name: "init".to_owned(), ..Container::default() }]),
        ..Default::default()
    });
    set_index(&mut p, "pi", 2);
    assert_eq!(completion_index(&p), Some(2));
    assert_eq!(
        p.metadata.labels.as_ref().and_then(|l| l.get(COMPLETION_INDEX)).map(String::as_str),
        Some("2")
    );
    let spec = p.spec.as_ref().expect("a spec");
    assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
    let init = spec.init_containers.iter().flatten();
    for container in init.chain(&spec.containers) {
        let env = container.env.as_deref().unwrap_or_default();
        let path = env
            .iter()
            .find(|v| v.name == COMPLETION_INDEX_ENV)
            .and_then(|v| v.value_from.as_ref()?.field_ref.as_ref())
            .map(|f| f.field_path.as_str());
        assert_eq!(path, Some("metadata.labels['batch.kubernetes.io/job-completion-index']"));
    }
}

#[test]
fn a_long_job_name_is_cut_so_that_the_index_fits_the_generated_name() {
    assert_eq!(generate_name("pi", 3), "pi-3-");
    let long = "j".repeat(70);
    let name = generate_name(&long, 12);
    assert_eq!(name.len(), 58);
    assert!(name.ends_with("j-12-"));
}

#[test]
fn a_replacement_carries_its_index_failures_counted_or_ignored() {
    let mut failed = pod("p", Some("1"));
    assert_eq!(indexed_job::replacement_failure_counts(None), (0, 0));
    // No annotation (or a garbage one) counts as 0.
    assert_eq!(indexed_job::replacement_failure_counts(Some((&failed, false))), (1, 0));
    indexed_job::set_failure_counts(&mut failed, (2, 1));
    assert_eq!(indexed_job::count_annotation(&failed, indexed_job::FAILURE_COUNT), 2);
    assert_eq!(indexed_job::replacement_failure_counts(Some((&failed, false))), (3, 1));
    assert_eq!(indexed_job::replacement_failure_counts(Some((&failed, true))), (2, 2));
    let annotations = failed.metadata.annotations.get_or_insert_default();
    annotations.insert(indexed_job::FAILURE_COUNT.to_owned(), "-3".to_owned());
    annotations.insert(indexed_job::IGNORED_FAILURE_COUNT.to_owned(), "x".to_owned());
    assert_eq!(indexed_job::replacement_failure_counts(Some((&failed, false))), (1, 0));
    // The ignored count is written only when not zero.
    let mut fresh = pod("q", Some("0"));
    indexed_job::set_failure_counts(&mut fresh, (0, 0));
    let annotations = fresh.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get(indexed_job::FAILURE_COUNT).map(String::as_str), Some("0"));
    assert!(!annotations.contains_key(indexed_job::IGNORED_FAILURE_COUNT));
}

#[test]
fn a_success_policy_matches_its_first_satisfied_rule_as_upstream() {
    let policy = |rules: serde_json::Value| -> k8s_openapi::api::batch::v1::SuccessPolicy {
        serde_json::from_value(serde_json::json!({ "rules": rules })).expect("a success policy")
    };
    let done = |text: &str| Intervals::parse(text, 10);
    let rules = policy(serde_json::json!([
        {"succeededIndexes": "0,2-4"},
        {"succeededIndexes": "5-9", "succeededCount": 2},
        {"succeededCount": 4},
    ]));
    // Nothing completed: nothing matches.
    assert_eq!(success_policy_match(&rules, 10, &done("")), None);
    // All of rule 0's indexes.
    assert_eq!(success_policy_match(&rules, 10, &done("0-4")).as_deref(), Some("Matched rules at index 0"));
    // Two of rule 1's indexes (not all of rule 0's).
    assert_eq!(success_policy_match(&rules, 10, &done("0,6,9")).as_deref(), Some("Matched rules at index 1"));
    // Four indexes anywhere.
    assert_eq!(
        success_policy_match(&rules, 10, &done("0,1,3,5")).as_deref(),
        Some("Matched rules at index 2")
    );
    assert_eq!(success_policy_match(&rules, 10, &done("0,1,3")), None);
    // A rule whose indexes all lie beyond completions parses to nothing and is skipped.
    let beyond = policy(serde_json::json!([{"succeededIndexes": "12-15"}, {"succeededCount": 1}]));
    assert_eq!(success_policy_match(&beyond, 10, &done("3")).as_deref(), Some("Matched rules at index 1"));
}
