//! The tests of `controllers::builtins::controller_revisions` (its former unit tests: the library has no test harness).

use std::collections::BTreeMap;

use controllers::builtins::controller_revisions::*;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use sim::api::ObjectMeta;

#[test]
fn a_revision_holds_its_template_as_a_replace_patch_and_gives_it_back() {
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), "db".to_owned())])),
            ..ObjectMeta::default()
        }),
        spec: None,
    };
    let data = revision_data(&template);
    assert_eq!(data.pointer("/spec/template/$patch"), Some(&serde_json::json!("replace")));
    let revision = ControllerRevision { data: RawExtension(data.clone()), ..ControllerRevision::default() };
    assert_eq!(template_of(&revision), Some(template));
}

#[test]
fn a_collision_count_changes_the_hash() {
    assert_ne!(hash(b"x", None), hash(b"x", Some(1)));
    assert_eq!(hash(b"x", Some(1)), hash(b"x", Some(1)));
}
