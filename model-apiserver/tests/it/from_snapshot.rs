//! `ApiServer::from_snapshot`: a server holding exactly another server's state at one revision
//! (what `kube-sim serve --replay` serves).

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::{ApiResource, params::ListParams};
use model_apiserver::{ApiServer, ServerConfig};
use serde_json::json;

fn widgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

fn widget_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

#[test]
fn a_server_from_a_snapshot_serves_its_objects_unchanged_at_the_snapshots_revision() {
    let mut world = World::new();
    world.create(&builtin("apiextensions.k8s.io", "customresourcedefinitions"), None, widget_crd());
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let created = world.create(&widgets(), Some("default"), widget);
    let app = world.create(&cm(), Some("default"), config_map("app", json!({"a": "1"})));
    let snapshot = world.server.snapshot();
    // Later writes to the original do not reach the copy.
    world.create(&cm(), Some("default"), config_map("later", json!({})));

    let mut copy = World::new();
    copy.server = ApiServer::from_snapshot(ServerConfig::default(), snapshot.clone());
    assert_eq!(copy.server.revision(), snapshot.revision);
    assert_eq!(copy.get(&cm(), Some("default"), "app"), app);
    assert_eq!(copy.get(&widgets(), Some("default"), "w"), created);
    let names: Vec<_> = copy
        .list(&cm(), Some("default"), ListParams::default())
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, ["app"]);
    let rv = snapshot.revision.to_string();
    // A watch from the snapshot's revision is caught up: only a bookmark at that revision.
    assert_eq!(
        describe(&copy.watch(&cm(), Some("default"), &rv, Default::default())),
        [("BOOKMARK".to_owned(), String::new(), rv.clone())]
    );
}
