//! The `eviction` subresource of Pods: PodDisruptionBudget checks and decrement, the pods that
//! ignore budgets, the answers kube-apiserver gives, and the writes an eviction makes.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams, PostParams};
use model_apiserver::{Request, Response, StoredEventType, Subresource, eviction};
use serde_json::{Value, json};

fn pdbs() -> kube_core::ApiResource {
    builtin("policy", "poddisruptionbudgets")
}

/// A scheduled pod labelled `app: web`, Running and Ready as the kubelet reports it.
fn running_pod(w: &mut World, name: &str, ready: bool) {
    let body = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}});
    w.create(&pods(), Some("default"), body);
    let ready = if ready { "True" } else { "False" };
    set_pod_status(w, name, json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}));
}

fn set_pod_status(w: &mut World, name: &str, status: Value) {
    let patch = Patch::Merge(json!({"status": status}));
    let request = Request::patch(&pods(), Some("default"), name, patch, PatchParams::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
}

/// A budget over `app: web` whose status the disruption controller has filled in.
fn budget(w: &mut World, name: &str, allowed: i64, current: i64, desired: i64) {
    w.create(&pdbs(), Some("default"), json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
    set_budget_status(
        w,
        name,
        json!({"observedGeneration": 1, "disruptionsAllowed": allowed,
        "currentHealthy": current, "desiredHealthy": desired, "expectedPods": current}),
    );
}

fn set_budget_status(w: &mut World, name: &str, status: Value) {
    let patch = Patch::Merge(json!({"status": status}));
    let request = Request::patch(&pdbs(), Some("default"), name, patch, PatchParams::default())
        .with_subresource(Subresource::Status);
    w.handle(request).unwrap();
}

fn eviction_of(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}})
}

fn evict_body(w: &mut World, name: &str, body: Value) -> Result<Response, kube_core::Status> {
    let request = Request::create_subresource(
        &pods(),
        Some("default"),
        name,
        Subresource::Eviction,
        obj(body),
        PostParams::default(),
    );
    w.handle(request)
}

fn evict(w: &mut World, name: &str) -> Result<Response, kube_core::Status> {
    evict_body(w, name, eviction_of(name))
}

fn pod_exists(w: &mut World, name: &str) -> bool {
    w.try_get(&pods(), Some("default"), name).is_ok()
}

/// The cause messages of a refusal.
fn causes(status: &kube_core::Status) -> Vec<(String, String)> {
    let details = status.details.as_ref().expect("details");
    details.causes.iter().map(|c| (c.reason.clone(), c.message.clone())).collect()
}

#[test]
fn evicting_a_pod_without_a_budget_deletes_it_and_answers_success_201() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    let Response::Deleted { status, object } = evict(&mut w, "web-0").unwrap() else { panic!("a Status") };
    assert!(status.is_success());
    assert_eq!(status.code, 201);
    assert_eq!(status.details, None);
    // A scheduled pod goes gracefully: marked with the default grace period, still there.
    assert_eq!(object.metadata.deletion_grace_period_seconds, Some(30));
    let pod = w.get(&pods(), Some("default"), "web-0");
    assert!(pod.metadata.deletion_timestamp.is_some());
    let conditions = pod.data["status"]["conditions"].as_array().unwrap();
    let target = conditions.iter().find(|c| c["type"] == "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target["status"], "True");
    assert_eq!(target["reason"], "EvictionByEvictionAPI");
    assert_eq!(target["message"], "Eviction API: evicting");
}

#[test]
fn an_eviction_writes_the_condition_then_the_deletion_mark_as_two_revisions() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    let before = w.server.revision();
    evict(&mut w, "web-0").unwrap();
    let events = w.server.events_after(before).unwrap();
    let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.key.name.to_string())).collect();
    assert_eq!(
        kinds,
        vec![
            (StoredEventType::Modified, "web-0".to_owned()),
            (StoredEventType::Modified, "web-0".to_owned())
        ]
    );
    assert!(events[0].object.metadata.deletion_timestamp.is_none());
    assert!(events[1].object.metadata.deletion_timestamp.is_some());
}

#[test]
fn a_budget_with_no_disruption_allowed_refuses_with_429_and_keeps_the_pod() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 0, 1, 1);
    let before = w.server.revision();
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (429, "TooManyRequests"));
    assert_eq!(err.message, eviction::BUDGET_VIOLATION_MESSAGE);
    assert_eq!(
        causes(&err),
        vec![(
            "DisruptionBudget".to_owned(),
            "The disruption budget web needs 1 healthy pods and has 1 currently".to_owned()
        )]
    );
    assert_eq!(err.details.as_ref().unwrap().retry_after_seconds, 0);
    assert_eq!(w.server.revision(), before, "nothing was written");
    assert!(w.get(&pods(), Some("default"), "web-0").metadata.deletion_timestamp.is_none());
}

#[test]
fn a_budget_that_allows_one_is_decremented_and_records_the_pod_before_the_delete() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 1, 2, 1);
    w.advance_seconds(7);
    let before = w.server.revision();
    evict(&mut w, "web-0").unwrap();
    let budget = w.get(&pdbs(), Some("default"), "web");
    let status = &budget.data["status"];
    assert_eq!(status["disruptionsAllowed"], 0);
    let at = serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(w.now)).unwrap();
    assert_eq!(status["disruptedPods"], json!({"web-0": at}));
    // None left: the DisruptionAllowed condition says so.
    let condition = &status["conditions"][0];
    assert_eq!((&condition["type"], &condition["status"]), (&json!("DisruptionAllowed"), &json!("False")));
    assert_eq!(condition["reason"], "InsufficientPods");
    assert_eq!(condition["observedGeneration"], 1);
    // The budget first (its own revision and event), then the pod's condition and mark.
    let events = w.server.events_after(before).unwrap();
    let names: Vec<String> = events.iter().map(|e| format!("{}/{}", e.key.resource, e.key.name)).collect();
    assert_eq!(names, ["policy/poddisruptionbudgets/web", "pods/web-0", "pods/web-0"]);
    assert!(w.get(&pods(), Some("default"), "web-0").metadata.deletion_timestamp.is_some());
}

#[test]
fn a_budget_whose_status_is_behind_its_spec_refuses_with_429_still_being_processed() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 1, 2, 1);
    w.try_merge(&pdbs(), Some("default"), "web", json!({"spec": {"minAvailable": 2}})).unwrap();
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (429, "TooManyRequests"));
    assert_eq!(err.details.as_ref().unwrap().retry_after_seconds, 10);
    assert_eq!(
        causes(&err),
        vec![(
            "DisruptionBudget".to_owned(),
            "The disruption budget web is still being processed by the server.".to_owned()
        )]
    );
    assert!(pod_exists(&mut w, "web-0"));
}

#[test]
fn a_budget_without_status_is_still_being_processed() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    w.create(&pdbs(), Some("default"), json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
    assert_eq!(code_reason(&evict(&mut w, "web-0").unwrap_err()), (429, "TooManyRequests"));
}

#[test]
fn a_negative_allowance_is_403_forbidden() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 1, 2, 1);
    set_budget_status(&mut w, "web", json!({"disruptionsAllowed": -1}));
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"
    );
}

#[test]
fn two_budgets_over_one_pod_answer_500_with_the_real_message() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "a", 1, 2, 1);
    budget(&mut w, "b", 1, 2, 1);
    let before = w.server.revision();
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (500, ""));
    assert!(err.is_failure());
    assert_eq!(err.message, eviction::MULTIPLE_BUDGETS_MESSAGE);
    assert_eq!(w.server.revision(), before);
}

#[test]
fn budgets_that_do_not_select_the_pod_are_not_consulted() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    // Another app, an empty selector (matches nothing here) and another namespace.
    w.create(
        &pdbs(),
        Some("default"),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}),
    );
    w.create(
        &pdbs(),
        Some("default"),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "all"}, "spec": {"minAvailable": 1, "selector": {}}}),
    );
    w.create(&pdbs(), Some("kube-system"), json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
    assert!(evict(&mut w, "web-0").unwrap().object().unwrap().metadata.deletion_timestamp.is_some());
}

#[test]
fn an_unready_pod_under_a_healthy_budget_goes_without_spending_a_disruption() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", false);
    // IfHealthyBudget (the default): 2 healthy of 2 desired.
    budget(&mut w, "web", 0, 2, 2);
    evict(&mut w, "web-0").unwrap();
    assert_eq!(w.get(&pdbs(), Some("default"), "web").data["status"]["disruptionsAllowed"], 0);
    assert!(w.get(&pods(), Some("default"), "web-0").metadata.deletion_timestamp.is_some());
}

#[test]
fn an_unready_pod_under_an_unhealthy_budget_is_refused_unless_it_always_allows() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", false);
    budget(&mut w, "web", 0, 1, 2);
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (429, "TooManyRequests"));
    w.try_merge(
        &pdbs(),
        Some("default"),
        "web",
        json!({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}),
    )
    .unwrap();
    // The policy changed the spec (generation 2); the status is behind, and is ignored anyway.
    evict(&mut w, "web-0").unwrap();
    assert!(w.get(&pods(), Some("default"), "web-0").metadata.deletion_timestamp.is_some());
}

#[test]
fn a_ready_pod_is_guarded_even_when_the_budget_always_allows_unhealthy_ones() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 0, 1, 1);
    w.try_merge(
        &pdbs(),
        Some("default"),
        "web",
        json!({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}),
    )
    .unwrap();
    set_budget_status(&mut w, "web", json!({"observedGeneration": 2}));
    assert_eq!(code_reason(&evict(&mut w, "web-0").unwrap_err()), (429, "TooManyRequests"));
}

#[test]
fn pending_and_finished_pods_ignore_their_budget() {
    let mut w = World::new();
    budget(&mut w, "web", 0, 0, 1);
    // Pending (as created) and unscheduled: deleted at once, MODIFIED (condition) then the
    // mark and the removal.
    w.create(
        &pods(),
        Some("default"),
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pending", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    evict(&mut w, "pending").unwrap();
    assert!(!pod_exists(&mut w, "pending"));
    for (name, phase) in [("done", "Succeeded"), ("broken", "Failed")] {
        running_pod(&mut w, name, true);
        set_pod_status(&mut w, name, json!({"phase": phase}));
        evict(&mut w, name).unwrap();
        assert!(!pod_exists(&mut w, name), "{phase}: a finished pod goes at once");
    }
    assert_eq!(w.get(&pdbs(), Some("default"), "web").data["status"]["disruptionsAllowed"], 0);
}

#[test]
fn a_pod_already_being_deleted_ignores_its_budget_and_stays_marked() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    w.try_delete(&pods(), Some("default"), "web-0").unwrap();
    budget(&mut w, "web", 0, 1, 1);
    let Response::Deleted { status, object } = evict(&mut w, "web-0").unwrap() else { panic!() };
    assert_eq!(status.code, 201);
    assert!(object.metadata.deletion_timestamp.is_some());
}

#[test]
fn a_name_that_is_not_the_urls_is_400() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    let err = evict_body(&mut w, "web-0", eviction_of("other")).unwrap_err();
    assert_eq!(code_reason(&err), (400, "BadRequest"));
    assert_eq!(err.message, "name in URL does not match name in Eviction object");
    let err = evict_body(&mut w, "web-0", json!({"metadata": {"name": "web-0", "namespace": "kube-system"}}))
        .unwrap_err();
    assert_eq!(
        err.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[test]
fn evicting_a_missing_pod_is_404() {
    let mut w = World::new();
    let err = evict(&mut w, "nope").unwrap_err();
    assert_eq!(code_reason(&err), (404, "NotFound"));
    assert_eq!(err.message, "pods \"nope\" not found");
}

#[test]
fn a_v1beta1_eviction_and_one_without_type_are_accepted_and_other_kinds_are_not() {
    let mut w = World::new();
    running_pod(&mut w, "a", true);
    running_pod(&mut w, "b", true);
    let beta = json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "a"}});
    evict_body(&mut w, "a", beta).unwrap();
    // kube-rs's body: no type, and its delete options under a key the server does not know.
    let kube_rs = json!({"delete_options": {"gracePeriodSeconds": 0}, "metadata": {"name": "b"}});
    let mut ctx_warnings = Vec::new();
    {
        let request = Request::create_subresource(
            &pods(),
            Some("default"),
            "b",
            Subresource::Eviction,
            obj(kube_rs),
            PostParams::default(),
        );
        let mut ctx = model_apiserver::Context::new(w.now, &mut w.ids);
        w.server.handle(request, &mut ctx).unwrap();
        ctx_warnings.extend(ctx.warnings);
    }
    assert_eq!(ctx_warnings, ["unknown field \"delete_options\""]);
    // The grace period was not read: the pod is marked with the default one.
    assert_eq!(w.get(&pods(), Some("default"), "b").metadata.deletion_grace_period_seconds, Some(30));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}});
    let err = evict_body(&mut w, "a", pod).unwrap_err();
    assert_eq!(
        err.message,
        "the API version in the data (v1) does not match the expected API version (policy/v1)"
    );
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "a"}});
    assert_eq!(
        evict_body(&mut w, "a", pdb).unwrap_err().message,
        "not a Eviction object: *policy.PodDisruptionBudget"
    );
}

#[test]
fn the_evictions_delete_options_are_the_pods_delete_options() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    let mut body = eviction_of("web-0");
    body["deleteOptions"] = json!({"gracePeriodSeconds": 0});
    evict_body(&mut w, "web-0", body).unwrap();
    assert!(!pod_exists(&mut w, "web-0"), "grace 0 removes it at once");
    running_pod(&mut w, "web-1", true);
    let mut body = eviction_of("web-1");
    body["deleteOptions"] = json!({"preconditions": {"uid": "not-its-uid"}});
    let err = evict_body(&mut w, "web-1", body).unwrap_err();
    assert_eq!(code_reason(&err), (409, "Conflict"));
}

#[test]
fn a_dry_run_eviction_checks_the_budget_and_writes_nothing() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 1, 2, 1);
    let before = w.server.revision();
    let request = Request::create_subresource(
        &pods(),
        Some("default"),
        "web-0",
        Subresource::Eviction,
        obj(eviction_of("web-0")),
        PostParams { dry_run: true, ..Default::default() },
    );
    let Response::Deleted { status, .. } = w.handle(request).unwrap() else { panic!() };
    assert_eq!(status.code, 201);
    assert_eq!(w.server.revision(), before);
    set_budget_status(&mut w, "web", json!({"disruptionsAllowed": 0}));
    let request = Request::create_subresource(
        &pods(),
        Some("default"),
        "web-0",
        Subresource::Eviction,
        obj(eviction_of("web-0")),
        PostParams { dry_run: true, ..Default::default() },
    );
    assert_eq!(code_reason(&w.handle(request).unwrap_err()), (429, "TooManyRequests"));
}

#[test]
fn only_pods_serve_eviction_and_only_post_takes_it() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    w.create(&cm(), Some("default"), config_map("a", json!({})));
    let request = Request::create_subresource(
        &cm(),
        Some("default"),
        "a",
        Subresource::Eviction,
        obj(eviction_of("a")),
        PostParams::default(),
    );
    assert_eq!(code_reason(&w.handle(request).unwrap_err()), (404, "NotFound"));
    let get = Request::get(&pods(), Some("default"), "web-0", Default::default())
        .with_subresource(Subresource::Eviction);
    assert_eq!(code_reason(&w.handle(get).unwrap_err()), (405, "MethodNotAllowed"));
    let post_status = Request::create_subresource(
        &pods(),
        Some("default"),
        "web-0",
        Subresource::Status,
        obj(eviction_of("web-0")),
        PostParams::default(),
    );
    assert_eq!(code_reason(&w.handle(post_status).unwrap_err()), (405, "MethodNotAllowed"));
}

#[test]
fn admission_sees_the_eviction_as_a_create_of_pods_eviction() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    w.server.add_validating_hook(std::sync::Arc::new(|request, object| {
        if request.subresource == Some("eviction") {
            assert_eq!(request.operation, "create");
            assert_eq!(object.types.as_ref().unwrap().kind, "Eviction");
            return Err(model_apiserver::errors::forbidden("", "pods", "web-0", "no evictions today"));
        }
        Ok(())
    }));
    let err = evict(&mut w, "web-0").unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert!(w.get(&pods(), Some("default"), "web-0").metadata.deletion_timestamp.is_none());
}

#[test]
fn the_budgets_write_is_admitted_as_the_loopback_client_and_the_pods_writes_are_not() {
    let mut w = World::new();
    running_pod(&mut w, "web-0", true);
    budget(&mut w, "web", 1, 2, 1);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    w.server.add_validating_hook(std::sync::Arc::new(move |request, _| {
        let what = format!(
            "{} {}/{} {}",
            request.operation,
            request.resource.api.plural,
            request.subresource.unwrap_or(""),
            request.user.unwrap_or("")
        );
        record.lock().unwrap().push(what);
        Ok(())
    }));
    let request = Request::create_subresource(
        &pods(),
        Some("default"),
        "web-0",
        Subresource::Eviction,
        obj(eviction_of("web-0")),
        PostParams::default(),
    )
    .with_user("drainer");
    w.handle(request).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["create pods/eviction drainer", "update poddisruptionbudgets/status system:apiserver"]
    );
}
