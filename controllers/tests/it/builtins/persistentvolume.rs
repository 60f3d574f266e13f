//! The binder's choice of a volume (`findBestMatchForClaim`) and of the default class
//! (`GetDefaultClass`), and the local provisioner's volume.

use std::collections::BTreeMap;
use std::sync::Arc;

use controllers::builtins::{kubelet, local_provisioner, persistentvolume as pv, quantity};
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeSpec, PersistentVolumeStatus, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::jiff::Timestamp;
use sim::api::ObjectMeta;

fn claim(storage: &str, modes: &[&str]) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("data".to_owned()),
            namespace: Some("default".to_owned()),
            uid: Some("claim-uid".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(modes.iter().map(|m| (*m).to_owned()).collect()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), Quantity(storage.to_owned()))])),
                ..VolumeResourceRequirements::default()
            }),
            storage_class_name: Some("manual".to_owned()),
            volume_mode: Some("Filesystem".to_owned()),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

fn volume(name: &str, capacity: &str, modes: &[&str]) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        spec: Some(PersistentVolumeSpec {
            access_modes: Some(modes.iter().map(|m| (*m).to_owned()).collect()),
            capacity: Some(BTreeMap::from([("storage".to_owned(), Quantity(capacity.to_owned()))])),
            storage_class_name: Some("manual".to_owned()),
            ..PersistentVolumeSpec::default()
        }),
        status: Some(PersistentVolumeStatus { phase: Some("Available".to_owned()), ..Default::default() }),
    }
}

fn best(claim: &PersistentVolumeClaim, volumes: Vec<PersistentVolume>) -> Option<String> {
    let volumes: Vec<Arc<PersistentVolume>> = volumes.into_iter().map(Arc::new).collect();
    pv::find_best_match(claim, &volumes).and_then(|v| v.metadata.name.clone())
}

const RWO: &str = "ReadWriteOnce";
const ROX: &str = "ReadOnlyMany";
const RWX: &str = "ReadWriteMany";

#[test]
fn the_smallest_volume_that_fits_wins_whatever_the_units() {
    let volumes = vec![
        volume("a-huge", "1Ti", &[RWO]),
        volume("b-small", "1Gi", &[RWO]),
        volume("c-fits", "3072Mi", &[RWO]),
        volume("d-bigger", "4G", &[RWO]),
    ];
    assert_eq!(best(&claim("3Gi", &[RWO]), volumes), Some("c-fits".to_owned()));
}

#[test]
fn no_volume_is_chosen_when_none_is_big_enough() {
    assert_eq!(best(&claim("20Gi", &[RWO]), vec![volume("small", "10Gi", &[RWO])]), None);
}

#[test]
fn volumes_with_fewer_access_modes_are_preferred_even_when_bigger() {
    let volumes = vec![volume("many-modes", "1Gi", &[RWO, ROX, RWX]), volume("one-mode", "5Gi", &[RWO])];
    assert_eq!(best(&claim("1Gi", &[RWO]), volumes), Some("one-mode".to_owned()));
}

#[test]
fn a_volume_missing_a_requested_access_mode_is_never_chosen() {
    assert_eq!(best(&claim("1Gi", &[RWX]), vec![volume("rwo", "1Gi", &[RWO])]), None);
}

#[test]
fn class_volume_mode_phase_and_selector_must_match() {
    let mut other_class = volume("other-class", "1Gi", &[RWO]);
    other_class.spec.as_mut().unwrap().storage_class_name = Some("fast".to_owned());
    let mut block = volume("block", "1Gi", &[RWO]);
    block.spec.as_mut().unwrap().volume_mode = Some("Block".to_owned());
    let mut released = volume("released", "1Gi", &[RWO]);
    released.status.as_mut().unwrap().phase = Some("Released".to_owned());
    let c = claim("1Gi", &[RWO]);
    assert_eq!(best(&c, vec![other_class, block, released]), None);

    let mut labelled = volume("labelled", "2Gi", &[RWO]);
    labelled.metadata.labels = Some(BTreeMap::from([("tier".to_owned(), "gold".to_owned())]));
    let unlabelled = volume("unlabelled", "1Gi", &[RWO]);
    let mut selective = claim("1Gi", &[RWO]);
    selective.spec.as_mut().unwrap().selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("tier".to_owned(), "gold".to_owned())])),
        ..LabelSelector::default()
    });
    assert_eq!(best(&selective, vec![labelled, unlabelled]), Some("labelled".to_owned()));
}

#[test]
fn a_volume_pre_bound_to_the_claim_wins_over_a_smaller_one_whatever_its_phase_or_class() {
    let mut pre_bound = volume("pre-bound", "10Gi", &[RWO]);
    pre_bound.status.as_mut().unwrap().phase = Some("Pending".to_owned());
    pre_bound.spec.as_mut().unwrap().storage_class_name = Some("other".to_owned());
    pre_bound.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        name: Some("data".to_owned()),
        namespace: Some("default".to_owned()),
        uid: Some("claim-uid".to_owned()),
        ..ObjectReference::default()
    });
    let mut someone_elses = volume("someone-elses", "1Gi", &[RWO]);
    someone_elses.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        name: Some("data".to_owned()),
        namespace: Some("default".to_owned()),
        uid: Some("an-older-claim".to_owned()),
        ..ObjectReference::default()
    });
    let c = claim("1Gi", &[RWO]);
    assert_eq!(
        best(&c, vec![volume("small", "1Gi", &[RWO]), pre_bound, someone_elses]),
        Some("pre-bound".to_owned())
    );
}

fn class(name: &str, default: bool, created_second: i64) -> Arc<StorageClass> {
    let annotations =
        default.then(|| BTreeMap::from([(pv::ANN_DEFAULT_CLASS.to_owned(), "true".to_owned())]));
    Arc::new(StorageClass {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations,
            creation_timestamp: Some(Time(Timestamp::from_second(created_second).unwrap())),
            ..ObjectMeta::default()
        },
        provisioner: "example.com/p".to_owned(),
        ..StorageClass::default()
    })
}

#[test]
fn the_default_class_is_the_newest_marked_default_then_the_first_by_name() {
    let name =
        |classes: &[Arc<StorageClass>]| pv::default_class(classes).and_then(|c| c.metadata.name.clone());
    assert_eq!(name(&[class("plain", false, 9)]), None);
    assert_eq!(
        name(&[class("old", true, 1), class("new", true, 5), class("plain", false, 9)]),
        Some("new".to_owned())
    );
    assert_eq!(name(&[class("b", true, 5), class("a", true, 5)]), Some("a".to_owned()));
}

#[test]
fn quantities_compare_by_value_across_units() {
    let v = |s: &str| quantity::value(&Quantity(s.to_owned()));
    assert_eq!(v("1Gi"), v("1024Mi"));
    assert_eq!(v("1k"), Some(1000.0));
    assert_eq!(v("1e3"), Some(1000.0));
    assert_eq!(v("1.5G"), Some(1.5e9));
    assert_eq!(v("2Ei"), Some(2.0 * 1_152_921_504_606_846_976.0));
    assert_eq!(v("lots"), None);
}

#[test]
fn the_provisioned_volume_is_pre_bound_to_its_claim_with_the_class_reclaim_policy() {
    let mut c = claim("1Gi", &[RWO]);
    c.spec.as_mut().unwrap().storage_class_name = Some(local_provisioner::CLASS_NAME.to_owned());
    c.metadata.resource_version = Some("42".to_owned());
    let class = local_provisioner::default_class();
    let name = local_provisioner::volume_name_for(&c);
    let volume = local_provisioner::provisioned_volume(&c, &class, &name, kubelet::NODE_NAME);
    let spec = volume.spec.clone().unwrap();
    let reference = spec.claim_ref.clone().unwrap();
    assert_eq!(name, "pvc-claim-uid");
    assert_eq!(
        (
            reference.kind.as_deref(),
            reference.name.as_deref(),
            reference.uid.as_deref(),
            reference.resource_version.as_deref()
        ),
        (Some("PersistentVolumeClaim"), Some("data"), Some("claim-uid"), Some("42"))
    );
    assert_eq!(spec.persistent_volume_reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(spec.storage_class_name.as_deref(), Some(local_provisioner::CLASS_NAME));
    assert_eq!(spec.capacity.unwrap().get("storage"), Some(&Quantity("1Gi".to_owned())));
    assert_eq!(spec.access_modes, Some(vec![RWO.to_owned()]));
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
    assert_eq!(
        spec.host_path.map(|h| h.path),
        Some(format!("{}/pvc-claim-uid_default_data", local_provisioner::PATH_ROOT))
    );
    let annotations = volume.metadata.annotations.unwrap();
    assert_eq!(
        annotations.get(pv::ANN_PROVISIONED_BY).map(String::as_str),
        Some(local_provisioner::PROVISIONER)
    );
    assert!(pv::is_volume_bound_to_claim(
        &local_provisioner::provisioned_volume(&c, &class, &name, kubelet::NODE_NAME),
        &c
    ));
}

#[test]
fn a_volume_reserved_for_the_claim_by_uid_is_chosen_even_once_the_claim_asks_for_more() {
    // The binder wrote the volume's half of the binding, then the claim's request grew before
    // the claim's half (the model allows that; kube-apiserver would not): the binding completes.
    let mut reserved = volume("pvc-claim-uid", "1Gi", &[RWO]);
    reserved.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        name: Some("data".to_owned()),
        namespace: Some("default".to_owned()),
        uid: Some("claim-uid".to_owned()),
        ..ObjectReference::default()
    });
    let mut by_name_only = volume("by-name-only", "1Gi", &[RWO]);
    by_name_only.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        name: Some("data".to_owned()),
        namespace: Some("default".to_owned()),
        ..ObjectReference::default()
    });
    let grown = claim("2Gi", &[RWO]);
    assert_eq!(best(&grown, vec![reserved]), Some("pvc-claim-uid".to_owned()));
    // Pre-bound by name only (by a user), the size still counts, as upstream.
    assert_eq!(best(&grown, vec![by_name_only]), None);
}
