//! Live runs (`sim::live`): controllers on a runtime paced to the wall clock, against a model
//! shared with writers outside the run. These tests write to the shared model from the test's own
//! thread, as `kube-sim serve`'s HTTP side does, and poll it with a bounded number of tries.

// The model's own `Result<Response, Status>` shape, as the transport keeps it.
#![allow(clippy::result_large_err)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::{ApiResource, ObjectMeta, Status, params::PostParams};
use model_apiserver::{ApiServer, Context, Request, Response, Revision, SeqIds};
use sim::api::Api;
use sim::live::{SharedCluster, StopHandle};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, Sim, Verdict};

/// How many times a test polls the shared model, and the pause between polls (a generous
/// bound of about a minute, never an assertion on time).
const TRIES_MAX: usize = 600;
const TRY_PAUSE: Duration = Duration::from_millis(100);

/// A model shared between the test's thread and the live run.
struct Shared(Mutex<(ApiServer, SeqIds)>);

impl Shared {
    fn new() -> Arc<Shared> {
        let mut ids = SeqIds::default();
        let server =
            ApiServer::new().with_default_namespaces(&mut Context::new(jiff::Timestamp::now(), &mut ids));
        Arc::new(Shared(Mutex::new((server, ids))))
    }

    /// A request from outside the run, at the real time.
    fn outside(&self, request: Request) -> Result<Response, Status> {
        SharedCluster::handle(self, request, jiff::Timestamp::now()).0
    }

    fn get_configmap(&self, name: &str) -> Option<ConfigMap> {
        let request =
            Request::get(&ApiResource::erase::<ConfigMap>(&()), Some("default"), name, Default::default());
        match self.outside(request) {
            Ok(Response::Object(object)) => serde_json::from_value(serde_json::to_value(&*object).ok()?).ok(),
            _ => None,
        }
    }
}

impl SharedCluster for Shared {
    fn handle(&self, request: Request, now: jiff::Timestamp) -> (Result<Response, Status>, Revision) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (server, ids) = &mut *guard;
        let result = server.handle(request, &mut Context::new(now, ids));
        (result, server.revision())
    }
    fn revision(&self) -> Revision {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0.revision()
    }
    fn types(&self) -> model_apiserver::ResourceTypes {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0.types().clone()
    }
}

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        data: Some([("v".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// Copies every ConfigMap `x` of `default` into `x-copy`.
async fn copier(clients: Clients) {
    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
    Controller::new(api.clone(), watcher::Config::default())
        .run(
            |cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>| async move {
                let name = cm.metadata.name.clone().unwrap_or_default();
                if !name.ends_with("-copy") {
                    let value = cm.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default();
                    // 409 AlreadyExists on a repeat is fine: the copy is there.
                    let _ =
                        api.create(&PostParams::default(), &configmap(&format!("{name}-copy"), &value)).await;
                }
                Ok::<_, Never>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            Arc::new(api),
        )
        .for_each(|_| async {})
        .await;
}

/// Poll until `check` holds; false after [`TRIES_MAX`] tries.
fn eventually(check: impl Fn() -> bool) -> bool {
    for _ in 0..TRIES_MAX {
        if check() {
            return true;
        }
        std::thread::sleep(TRY_PAUSE);
    }
    false
}

#[test]
fn a_live_run_reconciles_writes_made_outside_it_and_passes_when_stopped() {
    let shared = Shared::new();
    let before = jiff::Timestamp::now();
    let stop = StopHandle::new();
    let (run_stop, run_shared) = (stop.clone(), shared.clone());
    let run = std::thread::spawn(move || {
        Sim::builder().controller("copier", copier).run_live(run_shared, &run_stop)
    });
    let cms = ApiResource::erase::<ConfigMap>(&());
    let object = serde_json::from_value(serde_json::to_value(configmap("a", "1")).unwrap()).unwrap();
    shared.outside(Request::create(&cms, Some("default"), object, PostParams::default())).unwrap();
    assert!(eventually(|| shared.get_configmap("a-copy").is_some()), "the copy never appeared");
    let copy = shared.get_configmap("a-copy").unwrap();
    assert_eq!(copy.data.unwrap()["v"], "1");
    // The run's clock is the wall clock: the copy is not stamped before the run started.
    let created = copy.metadata.creation_timestamp.expect("a creationTimestamp").0;
    assert!(
        created >= before.checked_sub(jiff::SignedDuration::from_secs(1)).unwrap(),
        "{created} < {before}"
    );
    stop.stop();
    assert_eq!(run.join().unwrap(), Verdict::Pass);
}

#[test]
fn a_controller_panic_ends_a_live_run_with_a_crash_verdict_naming_its_node() {
    let stop = StopHandle::new();
    let verdict = Sim::builder()
        .controller("faulty", |_clients: Clients| async { panic!("faulty gave up") })
        .run_live(Shared::new(), &stop);
    let Verdict::Crash { node, message, .. } = verdict else { panic!("{verdict:?}") };
    assert_eq!((node.as_str(), message.as_str()), ("faulty", "faulty gave up"));
}

#[test]
fn a_live_run_stopped_before_it_starts_passes_at_once() {
    let stop = StopHandle::new();
    stop.stop();
    assert!(stop.is_stopped());
    assert_eq!(Sim::builder().controller("copier", copier).run_live(Shared::new(), &stop), Verdict::Pass);
}

/// Waits until discovery finds the group `example.com`, then creates the ConfigMap `found`.
async fn discoverer(clients: Clients) {
    let client = clients.default_cluster();
    loop {
        if let Ok(group) = sim::discovery::group(&client, "example.com").await
            && group.recommended_resources().iter().any(|(r, _)| r.plural == "widgets")
        {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let _ = api.create(&PostParams::default(), &configmap("found", "widgets")).await;
            return;
        }
        madsim::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn discovery_in_a_live_run_sees_the_shared_servers_types_crds_included() {
    let shared = Shared::new();
    let stop = StopHandle::new();
    let (run_stop, run_shared) = (stop.clone(), shared.clone());
    let run = std::thread::spawn(move || {
        Sim::builder().controller("discoverer", discoverer).run_live(run_shared, &run_stop)
    });
    let crds = ApiResource::erase::<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >(&());
    let crd = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    }))
    .unwrap();
    shared.outside(Request::create(&crds, None, crd, PostParams::default())).unwrap();
    assert!(eventually(|| shared.get_configmap("found").is_some()), "discovery never found the CRD's group");
    stop.stop();
    assert_eq!(run.join().unwrap(), Verdict::Pass);
}
