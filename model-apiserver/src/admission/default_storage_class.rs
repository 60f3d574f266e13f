//! kube-apiserver's `DefaultStorageClass` admission plugin
//! (`plugin/pkg/admission/storage/storageclass/setdefault`), on in every cluster: a
//! PersistentVolumeClaim created without a class gets the default StorageClass's name in
//! `spec.storageClassName`, so the created claim (the create's answer) already names it.
//!
//! - A claim "has a class" when it sets `spec.storageClassName`, even to `""` (which asks for no
//!   class), or the beta annotation `volume.beta.kubernetes.io/storage-class`; such a claim is
//!   left as sent.
//! - The default class is a StorageClass annotated `storageclass.kubernetes.io/is-default-class`
//!   (or the beta `storageclass.beta.kubernetes.io/is-default-class`) `"true"`; of several, the
//!   newest by `creationTimestamp`, then the first by name (`util.GetDefaultClass`). With none,
//!   the claim is left without a class (the PersistentVolume controller assigns one later, if a
//!   default appears: the retroactive assignment of 1.28+).
//! - Creates only (`admission.NewHandler(admission.Create)`), and not of a subresource.
//!
//! The classes are read from the store, as upstream reads its StorageClass lister. On with
//! [`crate::ServerConfig::default_storage_class`] (off by default, as on the server the
//! conformance corpus was recorded on; the PersistentVolume binder of the `controllers` crate
//! turns it on).

use kube_core::DynamicObject;
use serde_json::Value;

use crate::validation::core::BETA_CLASS;

/// The annotation that makes a StorageClass the default one.
pub const IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// Its beta form, which upstream still honours.
pub const BETA_IS_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// Whether `class` is annotated as the default (`IsDefaultAnnotation`).
fn is_default(class: &DynamicObject) -> bool {
    let annotations = class.metadata.annotations.as_ref();
    let says = |key: &str| annotations.and_then(|a| a.get(key)).is_some_and(|v| v == "true");
    says(IS_DEFAULT_CLASS) || says(BETA_IS_DEFAULT_CLASS)
}

/// The default StorageClass among `classes` (`util.GetDefaultClass`): the newest of those
/// annotated default, ties by name.
fn default_class<'a>(classes: &[&'a DynamicObject]) -> Option<&'a DynamicObject> {
    let created = |c: &DynamicObject| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let name = |c: &'a DynamicObject| c.metadata.name.as_deref().unwrap_or_default();
    classes
        .iter()
        .copied()
        .filter(|c| is_default(c))
        .min_by(|a, b| created(b).cmp(&created(a)).then_with(|| name(a).cmp(name(b))))
}

/// The plugin's `Admit` of the create of `claim`, `classes` being every stored StorageClass.
pub(crate) fn admit_create(claim: &mut DynamicObject, classes: &[&DynamicObject]) {
    let annotated = claim.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(BETA_CLASS));
    let spec = claim.data.get("spec");
    let named = spec.and_then(|s| s.get("storageClassName")).is_some_and(|c| !c.is_null());
    if annotated || named {
        return;
    }
    let Some(class) = default_class(classes).and_then(|c| c.metadata.name.clone()) else { return };
    if !claim.data.is_object() {
        claim.data = serde_json::json!({});
    }
    let content = claim.data.as_object_mut().expect("just made an object");
    crate::defaults::object_at(content, "spec").insert("storageClassName".to_owned(), Value::String(class));
}
