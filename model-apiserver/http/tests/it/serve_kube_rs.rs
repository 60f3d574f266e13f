//! The real kube-rs client and runtime against `kube-sim serve`, over HTTP, outside the
//! simulator, in ordinary tokio tests.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams},
    runtime::{
        Controller,
        controller::Action,
        watcher::{self, Event},
    },
};
use kube_core::ApiResource;
use model_apiserver::Request;
use model_apiserver_http::{ServeConfig, Served, spawn};

/// A served model and a kube-rs client for it.
async fn client() -> (Served, Client) {
    let served = spawn(ServeConfig::default()).expect("the server starts");
    let config = kube::Config::new(served.url().parse().expect("a URL"));
    let client = Client::try_from(config).expect("a client");
    (served, client)
}

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..Default::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn typed_api_calls_create_get_list_patch_and_delete() {
    let (_served, client) = client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api.create(&PostParams::default(), &configmap("a", &[("app", "x")])).await.unwrap();
    assert_eq!(created.namespace().as_deref(), Some("default"));
    api.create(&PostParams::default(), &configmap("b", &[("app", "y")])).await.unwrap();
    let fetched = api.get("a").await.unwrap();
    assert_eq!(fetched.uid(), created.uid());
    let selected = api.list(&ListParams::default().labels("app=x")).await.unwrap();
    assert_eq!(selected.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(), ["a"]);
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Merge(serde_json::json!({"data": {"k": "w"}})))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "w");
    let applied = api
        .patch(
            "c",
            &PatchParams::apply("kube-rs-test"),
            &Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.managed_fields()[0].manager.as_deref(), Some("kube-rs-test"));
    api.delete("a", &Default::default()).await.unwrap();
    assert!(api.get_opt("a").await.unwrap().is_none());
}

#[tokio::test]
async fn an_update_with_a_stale_resource_version_gets_409_conflict() {
    let (_served, client) = client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let stale = api.create(&PostParams::default(), &configmap("a", &[])).await.unwrap();
    let mut fresh = stale.clone();
    fresh.data = Some([("k".to_owned(), "fresh".to_owned())].into());
    api.replace("a", &PostParams::default(), &fresh).await.unwrap();
    let mut late = stale;
    late.data = Some([("k".to_owned(), "late".to_owned())].into());
    let err = api.replace("a", &PostParams::default(), &late).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("not an API error: {err}") };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

/// How many watcher events a test reads before giving up (a bound, not a time assertion).
const WATCH_EVENTS_MAX: usize = 200;

#[tokio::test]
async fn a_watcher_relists_after_its_watch_gets_410_expired() {
    let (served, client) = client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("before", &[])).await.unwrap();
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    // The initial list.
    let mut initial = Vec::new();
    for _ in 0..WATCH_EVENTS_MAX {
        match events.next().await.expect("the watcher runs").expect("no error yet") {
            Event::InitApply(cm) => initial.push(cm.name_any()),
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["before"]);
    // While the watch is open: a write, then compaction past it, in one step, so that the open
    // watch resumes from a compacted revision.
    served.live().with_model(|m| {
        let cm = ApiResource::erase::<ConfigMap>(&());
        let object = serde_json::from_value(serde_json::json!({"metadata": {"name": "during"}})).unwrap();
        m.handle(Request::create(&cm, Some("default"), object, PostParams::default())).unwrap();
        let now = m.server.revision();
        m.server.compact(now);
    });
    let mut saw_expired = false;
    let mut relisted = Vec::new();
    for _ in 0..WATCH_EVENTS_MAX {
        match events.next().await.expect("the watcher runs") {
            Err(watcher::Error::WatchError(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
                saw_expired = true;
            }
            Err(other) => panic!("unexpected watcher error: {other}"),
            Ok(Event::Init) => relisted.clear(),
            Ok(Event::InitApply(cm)) => relisted.push(cm.name_any()),
            Ok(Event::InitDone) if saw_expired => break,
            Ok(_) => {}
        }
    }
    assert!(saw_expired, "the watch never saw 410 Expired");
    assert_eq!(relisted, ["before", "during"]);
}

/// The reconciler of the test controller: every ConfigMap labelled `gen=parent` gets a child
/// `<name>-child` owned by it.
async fn reconcile(parent: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, kube::Error> {
    let owner = parent.controller_owner_ref(&()).expect("a stored parent has a uid");
    let child = ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{}-child", parent.name_any())),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: parent.data.clone(),
        ..Default::default()
    };
    let name = child.name_any();
    api.patch(&name, &PatchParams::apply("generator").force(), &Patch::Apply(&child)).await?;
    Ok(Action::await_change())
}

/// How many times the test looks for the controller's child before failing.
const CONVERGENCE_POLLS_MAX: usize = 300;
const CONVERGENCE_POLL_INTERVAL: Duration = Duration::from_millis(100);

#[tokio::test]
async fn a_kube_runtime_controller_converges_against_the_served_model() {
    let (_served, client) = client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let shared = Arc::new(api.clone());
    let controller = Controller::new(api.clone(), watcher::Config::default().labels("gen=parent"))
        .owns(api.clone(), watcher::Config::default())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(1)), shared)
        .for_each(|_| async {});
    let running = tokio::spawn(controller);
    api.create(&PostParams::default(), &configmap("p", &[("gen", "parent")])).await.unwrap();
    let mut child = None;
    for _ in 0..CONVERGENCE_POLLS_MAX {
        child = api.get_opt("p-child").await.unwrap();
        if child.is_some() {
            break;
        }
        tokio::time::sleep(CONVERGENCE_POLL_INTERVAL).await;
    }
    let child = child.expect("the controller created the child");
    assert_eq!(child.owner_references()[0].name, "p");
    assert_eq!(child.data.unwrap()["k"], "v");
    // A change to the parent converges too.
    api.patch("p", &PatchParams::default(), &Patch::Merge(serde_json::json!({"data": {"k": "v2"}})))
        .await
        .unwrap();
    let mut data = String::new();
    for _ in 0..CONVERGENCE_POLLS_MAX {
        data =
            api.get("p-child").await.unwrap().data.unwrap_or_default().get("k").cloned().unwrap_or_default();
        if data == "v2" {
            break;
        }
        tokio::time::sleep(CONVERGENCE_POLL_INTERVAL).await;
    }
    assert_eq!(data, "v2");
    running.abort();
}

/// A custom scheduler's bind, as kube-rs sends it (`create_subresource("binding", ..)` with a
/// `v1` Binding): the real `Success` Status, the pod on its node with `PodScheduled` True, and
/// a second bind refused with the real 409.
#[tokio::test]
async fn a_pod_is_bound_through_the_binding_subresource() {
    use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
    let (_served, client) = client().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod = serde_json::from_value(serde_json::json!({"metadata": {"name": "web"},
        "spec": {"schedulerName": "my-scheduler", "containers": [{"name": "c", "image": "i"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let binding = |node: &str| Binding {
        metadata: ObjectMeta { name: Some("web".to_owned()), ..Default::default() },
        target: ObjectReference {
            kind: Some("Node".to_owned()),
            name: Some(node.to_owned()),
            ..Default::default()
        },
    };
    let status: kube_core::Status =
        pods.create_subresource("binding", "web", &PostParams::default(), &binding("node-1")).await.unwrap();
    assert_eq!((status.is_success(), status.code), (true, 201));
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("node-1"));
    let conditions = bound.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(conditions.iter().any(|c| c.type_ == "PodScheduled" && c.status == "True"), "{conditions:?}");

    let refused: kube::Result<kube_core::Status> =
        pods.create_subresource("binding", "web", &PostParams::default(), &binding("node-2")).await;
    match refused {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 409);
            assert_eq!(
                status.message,
                "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
            );
        }
        other => panic!("a second bind must be refused: {other:?}"),
    }
}
