//! The workload driver: kubectl-like steps, numbered, and a failed step named in the verdict.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use sim::api::{Api, Patch};
use sim::{FnProperty, Sim, Verdict};

use common::*;

const YAML: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: team
data:
  mode: fast
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: defaults
data:
  mode: slow
"#;

#[test]
fn apply_yaml_creates_every_document_and_defaults_the_namespace() {
    let report = Sim::builder()
        .workload(|w| async move {
            w.apply_yaml("default", YAML).await?;
            // Applying again updates in place (same content, no failure).
            w.apply_yaml("default", YAML).await?;
            let namespaces: Api<Namespace> = Api::all(w.client());
            w.wait_for(&namespaces, "team", |ns| ns.is_some(), Duration::from_secs(1)).await?;
            Ok(())
        })
        .property(FnProperty::at_end("documents applied", |view| {
            let cluster = view.cluster("default").expect("default cluster");
            let found: Vec<(String, String, serde_json::Value)> = cluster
                .iter_resource("configmaps", None)
                .filter(|(key, _)| &*key.name != "kube-root-ca.crt")
                .map(|(key, o)| {
                    (key.namespace.to_string(), key.name.to_string(), o.data["data"]["mode"].clone())
                })
                .collect();
            let expected = vec![
                ("default".to_owned(), "defaults".to_owned(), serde_json::json!("slow")),
                ("team".to_owned(), "settings".to_owned(), serde_json::json!("fast")),
            ];
            if found == expected { Ok(()) } else { Err(format!("{found:?}")) }
        }))
        .keep_trace(true)
        .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
    let steps: Vec<String> = entries(&report)
        .iter()
        .filter_map(|e| match &e.event {
            sim::TraceEvent::Note { text } if text.starts_with("step ") => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        [
            "step 1: apply Namespace team",
            "step 2: apply ConfigMap team/settings",
            "step 3: apply ConfigMap default/defaults",
            "step 4: apply Namespace team",
            "step 5: apply ConfigMap team/settings",
            "step 6: apply ConfigMap default/defaults",
            "step 7: wait for Namespace team",
        ]
    );
}

#[test]
fn apply_yaml_of_an_unserved_kind_fails_naming_the_step() {
    let report = Sim::builder()
        .workload(|w| async move {
            w.apply_yaml("default", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n")
                .await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(property, "workload");
    assert_eq!(message, "step 1: apply Widget w: no resource for apiVersion example.com/v1 kind Widget");
}

#[test]
fn wait_for_fails_the_step_when_its_timeout_passes() {
    let report = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("a", "1")).await?;
            let has_v2 =
                |cm: Option<&ConfigMap>| cm.and_then(|c| c.data.as_ref()).is_some_and(|d| d["v"] == "2");
            w.wait_for(&api, "a", has_v2, Duration::from_secs(1)).await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { property, message, at_millis } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(property, "workload");
    assert_eq!(message, "step 2: wait for ConfigMap default/a: timed out after 1s");
    assert!(*at_millis >= 1000, "failed at {at_millis}ms, before the timeout");
}

#[test]
fn wait_for_returns_once_the_condition_holds() {
    let report = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("a", "1")).await?;
            w.patch(&api, "a", &Patch::Merge(serde_json::json!({ "data": { "v": "2" } }))).await?;
            let has_v2 =
                |cm: Option<&ConfigMap>| cm.and_then(|c| c.data.as_ref()).is_some_and(|d| d["v"] == "2");
            w.wait_for(&api, "a", has_v2, Duration::from_secs(1)).await?;
            w.delete(&api, "a").await?;
            w.wait_for(&api, "a", |cm| cm.is_none(), Duration::from_secs(1)).await?;
            Ok(())
        })
        .run(1);
    assert_eq!(report.verdict, Verdict::Pass);
}

#[test]
fn deleting_a_missing_object_fails_the_step_with_404() {
    let report = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.delete(&api, "ghost").await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(
        message,
        "step 1: delete ConfigMap default/ghost: 404 NotFound: configmaps \"ghost\" not found"
    );
}

#[test]
fn wait_for_all_returns_once_the_condition_holds_over_every_object_of_the_namespace() {
    let report = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            for name in ["a", "b", "c"] {
                w.apply(&api, &config_map(name, "1")).await?;
            }
            let three_at_v1 = |cms: &[ConfigMap]| {
                let names: Vec<&str> = cms
                    .iter()
                    .filter(|c| c.data.as_ref().is_some_and(|d| d["v"] == "1"))
                    .filter_map(|c| c.metadata.name.as_deref())
                    .collect();
                names == ["a", "b", "c"]
            };
            w.wait_for_all(&api, three_at_v1, Duration::from_secs(1)).await?;
            w.wait_for_all(&api, |cms| cms.len() == 7, Duration::from_secs(1)).await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { message, .. } = &report.verdict else {
        panic!("expected the second wait to time out, got {:?}", report.verdict);
    };
    assert_eq!(message, "step 5: wait for every ConfigMap in namespace default: timed out after 1s");
}

#[test]
fn delete_with_a_precondition_that_does_not_hold_fails_the_step_with_409() {
    use sim::api::{DeleteParams, Preconditions};
    let report = Sim::builder()
        .workload(|w| async move {
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("a", "1")).await?;
            let stale = Preconditions { uid: Some("not-the-uid".to_owned()), resource_version: None };
            w.delete_with(&api, "a", &DeleteParams { preconditions: Some(stale), ..DeleteParams::default() })
                .await?;
            Ok(())
        })
        .run(1);
    let Verdict::Correctness { property, message, .. } = &report.verdict else {
        panic!("expected a correctness verdict, got {:?}", report.verdict);
    };
    assert_eq!(property, "workload", "{message}");
    assert!(message.starts_with("step 2: delete ConfigMap default/a: 409 Conflict: "), "{message}");
}
