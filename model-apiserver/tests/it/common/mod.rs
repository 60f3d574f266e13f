//! Shared test fixtures: a server with the default namespaces at a fixed virtual time.
#![allow(dead_code)]
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use kube_core::{
    ApiResource, DynamicObject, Status,
    params::{DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, WatchParams},
};
use model_apiserver::{ApiServer, Context, Request, ResourceTypes, Response, SeqIds, ServerConfig};
use serde_json::Value;

/// 2026-01-01T00:00:00Z.
pub const T0_SECONDS: i64 = 1_767_225_600;

/// The namespaces of the fixture, at revisions 2, 3 and 4 (1 is the empty store), which the
/// tests' revision numbers count from. A fresh server's `with_default_namespaces` also has
/// `kube-node-lease` (tests/namespaces.rs checks it).
pub const FIXTURE_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// A server, its id source and its virtual clock.
pub struct World {
    pub server: ApiServer,
    pub ids: SeqIds,
    pub now: jiff::Timestamp,
}

impl World {
    pub fn new() -> Self {
        Self::with_config(ServerConfig::default())
    }
    pub fn with_config(config: ServerConfig) -> Self {
        let mut ids = SeqIds::default();
        let now = jiff::Timestamp::from_second(T0_SECONDS).unwrap();
        let mut server = ApiServer::with_config(config);
        let ns = builtin("", "namespaces");
        for name in FIXTURE_NAMESPACES {
            let body = DynamicObject::new(name, &ns);
            let created = server.handle(
                Request::create(&ns, None, body, PostParams::default()),
                &mut Context::new(now, &mut ids),
            );
            assert!(created.is_ok(), "namespace {name}: {created:?}");
        }
        World { server, ids, now }
    }
    pub fn handle(&mut self, request: Request) -> Result<Response, Status> {
        let mut ctx = Context::new(self.now, &mut self.ids);
        self.server.handle(request, &mut ctx)
    }
    pub fn advance_seconds(&mut self, s: i64) {
        self.now = jiff::Timestamp::from_second(self.now.as_second() + s).unwrap();
    }
    pub fn try_create(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        v: Value,
    ) -> Result<Arc<DynamicObject>, Status> {
        self.handle(Request::create(ar, ns, obj(v), PostParams::default())).map(object)
    }
    pub fn create(&mut self, ar: &ApiResource, ns: Option<&str>, v: Value) -> Arc<DynamicObject> {
        self.try_create(ar, ns, v).unwrap()
    }
    pub fn try_get(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Arc<DynamicObject>, Status> {
        self.handle(Request::get(ar, ns, name, GetParams::default())).map(object)
    }
    pub fn get(&mut self, ar: &ApiResource, ns: Option<&str>, name: &str) -> Arc<DynamicObject> {
        self.try_get(ar, ns, name).unwrap()
    }
    pub fn try_update(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        o: DynamicObject,
    ) -> Result<Arc<DynamicObject>, Status> {
        let name = o.metadata.name.clone().unwrap();
        self.handle(Request::update(ar, ns, &name, o, PostParams::default())).map(object)
    }
    pub fn try_merge(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        name: &str,
        patch: Value,
    ) -> Result<Arc<DynamicObject>, Status> {
        self.handle(Request::patch(ar, ns, name, Patch::Merge(patch), PatchParams::default())).map(object)
    }
    pub fn try_delete(&mut self, ar: &ApiResource, ns: Option<&str>, name: &str) -> Result<Response, Status> {
        self.handle(Request::delete(ar, ns, name, DeleteParams::default()))
    }
    pub fn list(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        params: ListParams,
    ) -> model_apiserver::request::ListResponse {
        match self.handle(Request::list(ar, ns, params)).unwrap() {
            Response::List(l) => l,
            other => panic!("not a list: {other:?}"),
        }
    }
    pub fn watch(
        &mut self,
        ar: &ApiResource,
        ns: Option<&str>,
        rv: &str,
        params: WatchParams,
    ) -> Vec<kube_core::WatchEvent<Arc<DynamicObject>>> {
        match self.handle(Request::watch(ar, ns, rv, params)).unwrap() {
            Response::Watch(w) => w,
            other => panic!("not a watch: {other:?}"),
        }
    }
}

/// The object of a response (panics on list/watch answers).
pub fn object(r: Response) -> Arc<DynamicObject> {
    r.object().cloned().unwrap_or_else(|| panic!("no object in {r:?}"))
}

pub fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

/// A built-in type's ApiResource by (group, plural).
pub fn builtin(group: &str, plural: &str) -> ApiResource {
    let types = ResourceTypes::builtin();
    types.iter().find(|t| t.api.group == group && t.api.plural == plural).unwrap().api.clone()
}
pub fn cm() -> ApiResource {
    builtin("", "configmaps")
}
pub fn pods() -> ApiResource {
    builtin("", "pods")
}
pub fn namespaces() -> ApiResource {
    builtin("", "namespaces")
}
pub fn deployments() -> ApiResource {
    builtin("apps", "deployments")
}

/// A ConfigMap body.
pub fn config_map(name: &str, data: Value) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// The resourceVersion of an object as a number.
pub fn rv(o: &DynamicObject) -> u64 {
    o.metadata.resource_version.as_deref().unwrap().parse().unwrap()
}

/// The (code, reason) of an error.
pub fn code_reason(s: &Status) -> (u16, &str) {
    (s.code, s.reason.as_str())
}

/// A short description of watch events: ("ADDED", name, rv).
pub fn describe(events: &[kube_core::WatchEvent<Arc<DynamicObject>>]) -> Vec<(String, String, String)> {
    use kube_core::WatchEvent;
    events
        .iter()
        .map(|e| {
            let (t, o) = match e {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(b) => {
                    return ("BOOKMARK".into(), String::new(), b.metadata.resource_version.clone());
                }
                WatchEvent::Error(s) => return ("ERROR".into(), s.reason.clone(), s.code.to_string()),
            };
            (t.into(), o.metadata.name.clone().unwrap(), o.metadata.resource_version.clone().unwrap())
        })
        .collect()
}
