//! Typed reads of a cluster snapshot, for properties over the built-ins' objects
//! (`FnProperty::always(.., |view| { let pods: Vec<Pod> = snapshot::objects(..); .. })`).

use kube_core::Resource;
use model_apiserver::Snapshot;
use serde::de::DeserializeOwned;

/// The storage key of a built-in type: `plural` for the core group (and for both Event APIs,
/// which share one store), `group/plural` otherwise.
pub fn storage_key<K: Resource<DynamicType = ()>>() -> String {
    model_apiserver::events::builtin_storage_key(&K::group(&()), &K::kind(&()), &K::plural(&()))
}

/// A stored object as `K`: an Event written through the other Event API is read in `K`'s
/// shape, as the model serves it.
fn typed<K>(object: &kube_core::DynamicObject) -> Option<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    if !model_apiserver::events::is_event_kind(&K::group(&()), &K::kind(&())) {
        // Straight from the stored parts, without serializing the whole object first.
        return sim::client::from_dynamic(object).ok();
    }
    let mut value = serde_json::to_value(object).ok()?;
    model_apiserver::events::convert(&mut value, &K::api_version(&()));
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".to_owned(), K::api_version(&()).into_owned().into());
    }
    serde_json::from_value(value).ok()
}

/// Every object of type `K` in `snapshot` (in `namespace`, or everywhere), in key order.
/// Objects that do not deserialize as `K` are skipped (the model stores what the schema allows).
pub fn objects<K>(snapshot: &Snapshot, namespace: Option<&str>) -> Vec<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let key = storage_key::<K>();
    snapshot.iter_resource(&key, namespace).filter_map(|(_, object)| typed(object)).collect()
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
    typed(snapshot.get(&key)?)
}
