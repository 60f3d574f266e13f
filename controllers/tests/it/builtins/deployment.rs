//! The tests of `controllers::builtins::deployment` (its former unit tests: the library has no test harness).

use std::collections::BTreeMap;

use controllers::builtins::deployment::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sim::api::ObjectMeta;

fn with(replicas: i32, surge: Option<IntOrString>, unavailable: Option<IntOrString>) -> Deployment {
    let mut d = Deployment::default();
    d.spec.replicas = Some(replicas);
    d.spec.strategy = Some(DeploymentStrategy {
        type_: None,
        rolling_update: Some(RollingUpdateDeployment { max_surge: surge, max_unavailable: unavailable }),
    });
    d
}

#[test]
fn default_fenceposts_round_surge_up_and_unavailable_down() {
    assert_eq!(resolve_fenceposts(&with(4, None, None)), (1, 1));
    assert_eq!(resolve_fenceposts(&with(3, None, None)), (1, 0));
    assert_eq!(resolve_fenceposts(&with(10, None, None)), (3, 2));
}

#[test]
fn zero_surge_and_zero_unavailable_become_one_unavailable() {
    let zero = || Some(IntOrString::Int(0));
    assert_eq!(resolve_fenceposts(&with(5, zero(), zero())), (0, 1));
    let percent = |p: &str| Some(IntOrString::String(p.to_owned()));
    assert_eq!(resolve_fenceposts(&with(10, percent("50%"), percent("0%"))), (5, 0));
}

#[test]
fn a_template_equals_its_hashed_copy_but_not_a_changed_one() {
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..ObjectMeta::default()
        }),
        spec: None,
    };
    let mut hashed = template.clone();
    let hash = template_hash(&template, None);
    if let Some(labels) = hashed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash);
    }
    assert!(equal_ignore_hash(Some(&hashed), &template));
    let mut changed = hashed.clone();
    if let Some(labels) = changed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.insert("tier".to_owned(), "x".to_owned());
    }
    assert!(!equal_ignore_hash(Some(&changed), &template));
    assert_ne!(template_hash(&template, None), template_hash(&template, Some(1)));
}
