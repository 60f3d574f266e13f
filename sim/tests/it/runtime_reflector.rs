//! kube-runtime's reflector items around `ObjectRef`: `ObjectRef::extra` (uid and
//! resourceVersion, ignored by comparisons), `from_owner_ref`, the conversion into an
//! `ObjectReference`, the `Lookup` trait, and `Store::state_filter_selector`.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::{Expression, Selector};
use sim::runtime::reflector::{self, Lookup, ObjectRef, ObjectRefExtra};
use sim::runtime::watcher;

use common::*;

fn stored(name: &str, uid: &str, rv: &str, app: &str) -> ConfigMap {
    let mut cm = config_map(name, "1");
    cm.metadata.uid = Some(uid.to_owned());
    cm.metadata.resource_version = Some(rv.to_owned());
    cm.metadata.labels = Some(BTreeMap::from([("app".to_owned(), app.to_owned())]));
    cm
}

#[test]
fn an_object_ref_from_an_object_carries_its_uid_and_resource_version_in_extra() {
    let cm = stored("a", "uid-a", "7", "web");
    let object_ref = ObjectRef::from_obj(&cm);
    assert_eq!(object_ref.extra.uid.as_deref(), Some("uid-a"));
    assert_eq!(object_ref.extra.resource_version.as_deref(), Some("7"));
    assert_eq!(ObjectRef::<ConfigMap>::new("a").extra, ObjectRefExtra::default());
    // Extra survives erasure and clones.
    assert_eq!(object_ref.erase::<Secret>().extra.uid.as_deref(), Some("uid-a"));
    assert_eq!(object_ref.clone().extra, object_ref.extra);
}

#[test]
fn extra_is_ignored_when_object_refs_compare() {
    let old = ObjectRef::from_obj(&stored("a", "uid-1", "7", "web"));
    let recreated = ObjectRef::from_obj(&stored("a", "uid-2", "9", "web"));
    assert_eq!(old, recreated);
    assert_eq!(old, ObjectRef::new("a").within("default"));
    assert_ne!(old, ObjectRef::new("a"));
}

#[test]
fn from_owner_ref_takes_owners_of_the_same_kind_with_their_uid() {
    let owner = OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: "parent".to_owned(),
        uid: "uid-p".to_owned(),
        ..OwnerReference::default()
    };
    let parent =
        ObjectRef::<ConfigMap>::from_owner_ref(Some("default"), &owner, ()).expect("a ConfigMap owner");
    assert_eq!(parent, ObjectRef::new("parent").within("default"));
    assert_eq!(parent.extra.uid.as_deref(), Some("uid-p"));
    assert!(ObjectRef::<Secret>::from_owner_ref(Some("default"), &owner, ()).is_none());
}

#[test]
fn an_object_ref_converts_into_an_object_reference_with_kind_and_extra() {
    let reference: ObjectReference = ObjectRef::from_obj(&stored("a", "uid-a", "7", "web")).into();
    assert_eq!(reference.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(reference.api_version.as_deref(), Some("v1"));
    assert_eq!(reference.name.as_deref(), Some("a"));
    assert_eq!(reference.namespace.as_deref(), Some("default"));
    assert_eq!(reference.uid.as_deref(), Some("uid-a"));
    assert_eq!(reference.resource_version.as_deref(), Some("7"));
}

/// What generic code over `Lookup` (kube's store bound) reads.
fn describe<K: Lookup<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{} {}/{} uid={}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name().unwrap_or_default(),
        object.uid().unwrap_or_default()
    )
}

#[test]
fn lookup_is_implemented_for_every_resource_and_makes_object_refs() {
    let cm = stored("a", "uid-a", "7", "web");
    assert_eq!(describe(&cm), "ConfigMap default/a uid=uid-a");
    assert_eq!(<ConfigMap as Lookup>::api_version(&()), "v1");
    assert_eq!(<ConfigMap as Lookup>::plural(&()), "configmaps");
    let object_ref = cm.to_object_ref(());
    assert_eq!(object_ref, ObjectRef::new("a").within("default"));
    assert_eq!(object_ref.extra.resource_version.as_deref(), Some("7"));
}

#[test]
fn state_filter_selector_keeps_the_objects_whose_labels_match_in_key_order() {
    let (reader, mut writer) = reflector::store::<ConfigMap>();
    for (name, app) in [("c", "web"), ("a", "web"), ("b", "db")] {
        writer.apply_watcher_event(&watcher::Event::Apply(stored(name, name, "1", app)));
    }
    let web: Selector = Expression::Equal("app".into(), "web".into()).into();
    let names: Vec<String> =
        reader.state_filter_selector(&web).iter().map(|cm| cm.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["a", "c"]);
    let not_db: Selector = Expression::NotEqual("app".into(), "db".into()).into();
    assert_eq!(reader.state_filter_selector(&not_db).len(), 2);
    let none: Selector = Expression::Equal("app".into(), "cache".into()).into();
    assert!(reader.state_filter_selector(&none).is_empty());
}

#[test]
fn a_store_subscriber_hears_of_objects_a_relist_no_longer_holds() {
    // A client-go informer hands its delete handler what a relist dropped
    // (`DeletedFinalStateUnknown`): the built-ins, which imitate kube-controller-manager, map
    // those to their owners, so a ReplicaSet whose Pods went while its watch was down makes new
    // ones at once.
    let (reader, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for name in ["a", "b"] {
        writer.apply_watcher_event(&watcher::Event::InitApply(stored(name, name, "1", "web")));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let mut heard = reader.subscribe();
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitApply(stored("b", "b", "2", "web")));
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let mut names = Vec::new();
    while let Ok(object) = heard.try_recv() {
        names
            .push((object.metadata.name.clone().unwrap(), object.metadata.resource_version.clone().unwrap()));
    }
    // The listed one as listed, then the one gone as last cached.
    assert_eq!(names, [("b".to_owned(), "2".to_owned()), ("a".to_owned(), "1".to_owned())]);
    assert_eq!(reader.state().len(), 1);
}
