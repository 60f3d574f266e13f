//! The tests of `kube_sim::serve::replay` (its former unit tests: the library has no test harness).

use kube_core::{ApiResource, DynamicObject};
use model_apiserver::ObjectKey;

use std::path::Path;
use std::sync::Arc;

use kube_sim::serve::replay::*;
use model_apiserver::Snapshot;

fn configmap(name: &str, rv: u64) -> (ObjectKey, Arc<DynamicObject>) {
    let api = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    let mut object = DynamicObject::new(name, &api).within("default");
    object.metadata.resource_version = Some(rv.to_string());
    let key = ObjectKey {
        resource: Arc::from("configmaps"),
        namespace: Arc::from("default"),
        name: Arc::from(name),
    };
    (key, Arc::new(object))
}

fn snapshot(revision: u64, objects: Vec<(ObjectKey, Arc<DynamicObject>)>) -> Snapshot {
    Snapshot { revision, objects: objects.into_iter().collect() }
}

#[test]
fn the_write_of_a_step_is_named_by_the_object_it_created_updated_or_deleted() {
    let before = snapshot(4, vec![configmap("old", 3), configmap("kept", 4)]);
    let created = snapshot(5, vec![configmap("old", 3), configmap("kept", 4), configmap("new", 5)]);
    assert_eq!(describe_write(Some(&before), &created), "create ConfigMap default/new (resourceVersion 5)");
    let updated = snapshot(5, vec![configmap("old", 3), configmap("kept", 5)]);
    assert_eq!(describe_write(Some(&before), &updated), "update ConfigMap default/kept (resourceVersion 5)");
    let deleted = snapshot(5, vec![configmap("kept", 4)]);
    assert_eq!(describe_write(Some(&before), &deleted), "delete ConfigMap default/old");
    assert_eq!(describe_write(None, &created), "create or update ConfigMap default/new (resourceVersion 5)");
}

#[test]
fn the_served_cluster_is_the_one_named_else_default_else_the_only_one() {
    let file = Path::new("r.json");
    let one = |name: &str| (Arc::from(name), snapshot(1, Vec::new()));
    let single: Clusters = [one("east")].into_iter().collect();
    assert_eq!(pick_cluster(file, &single, None).unwrap(), "east");
    let pair: Clusters = [one("default"), one("west")].into_iter().collect();
    assert_eq!(pick_cluster(file, &pair, None).unwrap(), "default");
    assert_eq!(pick_cluster(file, &pair, Some("west")).unwrap(), "west");
    let unknown = pick_cluster(file, &pair, Some("north")).unwrap_err().to_string();
    assert_eq!(unknown, "r.json: the scenario has no cluster named north; the run's clusters: default, west");
    let several: Clusters = [one("east"), one("west")].into_iter().collect();
    let ambiguous = pick_cluster(file, &several, None).unwrap_err().to_string();
    assert_eq!(
        ambiguous,
        "r.json: the scenario has several clusters: name one with --cluster; the run's clusters: east, west"
    );
}
