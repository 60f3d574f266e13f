//! Typed reads of a cluster snapshot, for properties over the built-ins' objects
//! (`FnProperty::always(.., |view| { let pods: Vec<Pod> = snapshot::objects(..); .. })`).

use kube_core::Resource;
use model_apiserver::Snapshot;
use serde::de::DeserializeOwned;

/// The storage key of a built-in type: `plural` for the core group, `group/plural` otherwise.
pub fn storage_key<K: Resource<DynamicType = ()>>() -> String {
    let group = K::group(&());
    let plural = K::plural(&());
    if group.is_empty() { plural.into_owned() } else { format!("{group}/{plural}") }
}

/// Every object of type `K` in `snapshot` (in `namespace`, or everywhere), in key order.
/// Objects that do not deserialize as `K` are skipped (the model stores what the schema allows).
pub fn objects<K>(snapshot: &Snapshot, namespace: Option<&str>) -> Vec<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let key = storage_key::<K>();
    snapshot
        .iter_resource(&key, namespace)
        .filter_map(|(_, object)| serde_json::to_value(&**object).ok())
        .filter_map(|value| serde_json::from_value(value).ok())
        .collect()
}

/// The object of type `K` named `name` (in `namespace` for namespaced types).
pub fn object<K>(snapshot: &Snapshot, namespace: Option<&str>, name: &str) -> Option<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let key = model_apiserver::ObjectKey {
        resource: storage_key::<K>().into(),
        namespace: namespace.unwrap_or("").into(),
        name: name.into(),
    };
    let object = snapshot.get(&key)?;
    serde_json::from_value(serde_json::to_value(&**object).ok()?).ok()
}
