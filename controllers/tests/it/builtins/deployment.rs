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

/// The JSON comparison `equal_ignore_hash` stands for (it compares typed values without building
/// the JSON): the templates' JSON forms, the ReplicaSet's hash label removed and an empty label
/// map dropped.
fn equal_as_json(rs_template: &PodTemplateSpec, template: &PodTemplateSpec) -> bool {
    let mut rs_template = rs_template.clone();
    if let Some(labels) = rs_template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    let normalize = |t: &PodTemplateSpec| {
        let mut value = serde_json::to_value(t).expect("a template serializes");
        if value.pointer("/metadata/labels").and_then(|l| l.as_object()).is_some_and(|l| l.is_empty())
            && let Some(meta) = value.pointer_mut("/metadata").and_then(|m| m.as_object_mut())
        {
            meta.remove("labels");
        }
        value
    };
    normalize(&rs_template) == normalize(template)
}

#[test]
fn template_equality_is_the_json_forms_equality_for_every_pair_of_variants() {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    let labels = |pairs: &[(&str, &str)]| {
        Some(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>())
    };
    let meta = |labels: Option<BTreeMap<String, String>>, annotated: bool| {
        Some(ObjectMeta {
            labels,
            annotations: annotated.then(|| BTreeMap::from([("a".to_owned(), "1".to_owned())])),
            ..ObjectMeta::default()
        })
    };
    let spec = |image: Option<&str>, empty_volumes: bool| {
        image.map(|image| PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            volumes: empty_volumes.then(Vec::new),
            ..PodSpec::default()
        })
    };
    let metas = [
        None,
        meta(None, false),
        meta(labels(&[]), false),
        meta(labels(&[("app", "web")]), false),
        meta(labels(&[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "abc")]), false),
        meta(labels(&[(POD_TEMPLATE_HASH_LABEL, "abc")]), false),
        meta(labels(&[("app", "db")]), false),
        meta(labels(&[("app", "web")]), true),
    ];
    let specs = [
        spec(None, false),
        spec(Some("nginx:1"), false),
        spec(Some("nginx:2"), false),
        spec(Some("nginx:1"), true),
    ];
    let templates: Vec<PodTemplateSpec> = metas
        .iter()
        .flat_map(|m| specs.iter().map(move |s| PodTemplateSpec { metadata: m.clone(), spec: s.clone() }))
        .collect();
    let (mut equal, mut pairs) = (0, 0);
    for rs_template in &templates {
        for template in &templates {
            let want = equal_as_json(rs_template, template);
            assert_eq!(
                equal_ignore_hash(Some(rs_template), template),
                want,
                "{rs_template:?} against {template:?}"
            );
            equal += usize::from(want);
            pairs += 1;
        }
    }
    // Both answers occur, including the equalities the labels' rules make.
    assert!(equal > templates.len() && equal < pairs, "{equal} equal pairs of {pairs}");
    assert!(!equal_ignore_hash(None, &templates[0]));
}
