//! The workload driver: the steps a user would run with kubectl, numbered and traced.
//!
//! Each step (apply, patch, delete, wait) gets the next number and a trace note; a failed step
//! fails the run with a [`WorkloadError`] that names it: `step 3: apply ConfigMap default/foo:
//! 422 Invalid: ...`. Writes go through the transport like a controller's; `wait_for` reads the
//! server's state directly (as `kubectl wait` watches it), polling in virtual time.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_core::{
    ApiResource, DynamicObject, Resource, ResourceExt, Status,
    params::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::client::Clients;
use crate::client::{Api, Client, Error, from_dynamic};
use crate::trace::TraceEvent;

/// How many times `apply` retries after a 409 (someone wrote between its read and its write).
pub const APPLY_CONFLICT_RETRIES_MAX: u32 = 5;

/// How often `wait_for` looks at the state, in virtual time.
pub const WAIT_POLL: Duration = Duration::from_millis(50);

/// A failed workload step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("step {step}: {action}: {reason}")]
pub struct WorkloadError {
    /// The step's number, from 1.
    pub step: u64,
    /// What the step did: `apply ConfigMap default/foo`.
    pub action: String,
    /// Why it failed: `422 Invalid: ...` or `timed out after 30s`.
    pub reason: String,
}

/// The handle a workload script drives the world with.
pub struct Workload {
    clients: Clients,
    steps: Cell<u64>,
}

impl fmt::Debug for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workload").field("steps", &self.steps.get()).finish()
    }
}

/// A client error in a failure message: `409 Conflict: ...` for the server's answers.
pub(crate) fn describe_error(error: &Error) -> String {
    match error {
        Error::Api(status) => describe_status(status),
        Error::SerdeError(e) => format!("serialization: {e}"),
        Error::BuildRequest(e) => format!("request: {e}"),
        Error::Discovery(e) => format!("discovery: {e}"),
    }
}

fn describe_status(status: &Status) -> String {
    format!("{} {}: {}", status.code, status.reason, status.message)
}

fn object_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => [ns, "/", name].concat(),
        None => name.to_owned(),
    }
}

impl Workload {
    pub(crate) fn new(clients: Clients) -> Self {
        Workload { clients, steps: Cell::new(0) }
    }

    /// Clients to every cluster.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// The default cluster's client.
    pub fn client(&self) -> Client {
        self.clients.default_cluster()
    }

    /// Start a step: number it and note it in the trace.
    fn step(&self, action: &str) -> u64 {
        let step = self.steps.get() + 1;
        self.steps.set(step);
        let node = self.clients.node.clone();
        let text = ["step ", &step.to_string(), ": ", action].concat();
        self.clients.world.with(|w| w.trace(&node, TraceEvent::Note { text }));
        step
    }

    /// Note something in the trace (not a step).
    pub fn note(&self, text: impl Into<String>) {
        let node = self.clients.node.clone();
        let text = text.into();
        self.clients.world.with(|w| w.trace(&node, TraceEvent::Note { text }));
    }

    /// Let virtual time pass.
    pub async fn sleep(&self, duration: Duration) {
        madsim::time::sleep(duration).await;
    }

    /// Create `object`, or replace it if it exists (with the current resourceVersion, retrying
    /// on 409 up to [`APPLY_CONFLICT_RETRIES_MAX`] times), as `kubectl apply` would.
    pub async fn apply<K>(&self, api: &Api<K>, object: &K) -> Result<K, WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let name = object.name_any();
        let api = match (api.namespace(), object.namespace()) {
            (None, Some(ns)) => api.in_namespace(Some(&ns)),
            _ => api.clone(),
        };
        let action = format!("apply {} {}", api.resource().kind, object_name(api.namespace(), &name));
        let step = self.step(&action);
        let fail = |reason: String| WorkloadError { step, action: action.clone(), reason };
        for _ in 0..=APPLY_CONFLICT_RETRIES_MAX {
            let result = match api.get_opt(&name).await.map_err(|e| fail(describe_error(&e)))? {
                None => api.create(&PostParams::default(), object).await,
                Some(current) => {
                    let mut desired = object.clone();
                    desired.meta_mut().resource_version = current.meta().resource_version.clone();
                    api.replace(&name, &PostParams::default(), &desired).await
                }
            };
            match result {
                Ok(applied) => return Ok(applied),
                Err(Error::Api(status)) if status.code == 409 => continue,
                Err(e) => return Err(fail(describe_error(&e))),
            }
        }
        Err(fail(format!("still conflicting after {APPLY_CONFLICT_RETRIES_MAX} retries")))
    }

    /// Apply every object of a (multi-document) YAML string to `cluster`, each as one step.
    /// Namespaced objects without a namespace go to `default`.
    pub async fn apply_yaml(&self, cluster: &str, yaml: &str) -> Result<(), WorkloadError> {
        let client = self.clients.cluster(cluster);
        for document in serde_yaml_ng::Deserializer::from_str(yaml) {
            let parsed = serde_yaml_ng::Value::deserialize(document);
            let object: DynamicObject = match parsed.and_then(serde_yaml_ng::from_value) {
                Ok(object) => object,
                Err(e) => {
                    let step = self.step("apply YAML document");
                    return Err(WorkloadError {
                        step,
                        action: "apply YAML document".to_owned(),
                        reason: format!("not a Kubernetes object: {e}"),
                    });
                }
            };
            let Some((resource, namespaced)) = self.discover(&client, &object) else {
                let types = object.types.clone().unwrap_or_default();
                let action = format!("apply {} {}", types.kind, object.name_any());
                let step = self.step(&action);
                let reason = format!("no resource for apiVersion {} kind {}", types.api_version, types.kind);
                return Err(WorkloadError { step, action, reason });
            };
            let api: Api<DynamicObject> = if namespaced {
                let ns = object.namespace().unwrap_or_else(|| client.default_namespace().to_owned());
                Api::namespaced_with(client.clone(), &ns, &resource)
            } else {
                Api::all_with(client.clone(), &resource)
            };
            self.apply(&api, &object).await?;
        }
        Ok(())
    }

    /// Find the served resource for an object's apiVersion and kind, as kubectl's discovery does.
    fn discover(&self, client: &Client, object: &DynamicObject) -> Option<(ApiResource, bool)> {
        let types = object.types.as_ref()?;
        client.world.with(|w| {
            let cluster = w.clusters().get(&client.cluster)?;
            let ty = cluster.server.types().by_kind(&types.api_version, &types.kind)?;
            Some((ty.api.clone(), ty.namespaced))
        })
    }

    /// Patch `name`.
    pub async fn patch<K, P>(&self, api: &Api<K>, name: &str, patch: &Patch<P>) -> Result<K, WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
        P: Serialize + fmt::Debug,
    {
        let action = format!("patch {} {}", api.resource().kind, object_name(api.namespace(), name));
        let step = self.step(&action);
        api.patch(name, &PatchParams::default(), patch).await.map_err(|e| WorkloadError {
            step,
            action,
            reason: describe_error(&e),
        })
    }

    /// Delete `name` (404 fails the step, as `kubectl delete` does).
    pub async fn delete<K>(&self, api: &Api<K>, name: &str) -> Result<(), WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        self.delete_with(api, name, &DeleteParams::default()).await
    }

    /// Delete object `name` with `params`, as `kubectl delete --cascade=foreground`,
    /// `--grace-period` or a precondition would: the propagation policy, grace period, dry run
    /// and preconditions are the server's to apply.
    pub async fn delete_with<K>(
        &self,
        api: &Api<K>,
        name: &str,
        params: &DeleteParams,
    ) -> Result<(), WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let action = format!("delete {} {}", api.resource().kind, object_name(api.namespace(), name));
        let step = self.step(&action);
        api.delete(name, params).await.map(|_| ()).map_err(|e| WorkloadError {
            step,
            action,
            reason: describe_error(&e),
        })
    }

    /// Wait until `condition` holds for object `name` (`None`: it does not exist), polling the
    /// server's state every [`WAIT_POLL`] of virtual time; fail the step after `timeout`.
    pub async fn wait_for<K>(
        &self,
        api: &Api<K>,
        name: &str,
        condition: impl Fn(Option<&K>) -> bool,
        timeout: Duration,
    ) -> Result<(), WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let action = format!("wait for {} {}", api.resource().kind, object_name(api.namespace(), name));
        let step = self.step(&action);
        // Each round sleeps WAIT_POLL, so this bounds the rounds by the timeout.
        let rounds_max = timeout.as_millis() / WAIT_POLL.as_millis() + 1;
        // The last object read and its decoded form: an object the server has not changed since
        // is the same `Arc`, and is not decoded again.
        let mut last: Option<(Option<Arc<DynamicObject>>, Option<K>)> = None;
        for _ in 0..=rounds_max {
            let raw = self.lookup(api, name);
            let unchanged = last.as_ref().is_some_and(|(seen, _)| same_objects(seen.iter(), raw.iter()));
            if !unchanged {
                let typed = raw.as_deref().map(from_dynamic).transpose().map_err(|e| WorkloadError {
                    step,
                    action: action.clone(),
                    reason: format!("serialization: {e}"),
                })?;
                last = Some((raw, typed));
            }
            let current = last.as_ref().and_then(|(_, typed)| typed.as_ref());
            if condition(current) {
                return Ok(());
            }
            madsim::time::sleep(WAIT_POLL).await;
        }
        Err(WorkloadError { step, action, reason: format!("timed out after {}s", timeout.as_secs_f64()) })
    }

    /// Wait until `condition` holds for every object of `api`'s kind in its namespace (all
    /// namespaces for `Api::all`), in name order (namespace, then name), as `kubectl wait` over a
    /// selector would: "until 3 Pods are Running" is
    /// `w.wait_for_all(&pods, |pods| pods.iter().filter(|p| running(p)).count() == 3, timeout)`.
    /// Polls the server's state every [`WAIT_POLL`] of virtual time; fails the step after
    /// `timeout`.
    pub async fn wait_for_all<K>(
        &self,
        api: &Api<K>,
        condition: impl Fn(&[K]) -> bool,
        timeout: Duration,
    ) -> Result<(), WorkloadError>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let place =
            api.namespace().map_or_else(|| "all namespaces".to_owned(), |ns| format!("namespace {ns}"));
        let action = format!("wait for every {} in {place}", api.resource().kind);
        let step = self.step(&action);
        let rounds_max = timeout.as_millis() / WAIT_POLL.as_millis() + 1;
        // As in `wait_for`: the objects are decoded again only when one of them changed.
        let mut last: Option<(Vec<Arc<DynamicObject>>, Vec<K>)> = None;
        for _ in 0..=rounds_max {
            let raw = self.lookup_all(api);
            let unchanged = last.as_ref().is_some_and(|(seen, _)| same_objects(seen.iter(), raw.iter()));
            if !unchanged {
                let typed =
                    raw.iter().map(|o| from_dynamic(o)).collect::<Result<Vec<K>, _>>().map_err(|e| {
                        WorkloadError { step, action: action.clone(), reason: format!("serialization: {e}") }
                    })?;
                last = Some((raw, typed));
            }
            let objects = last.as_ref().map_or(&[][..], |(_, typed)| typed.as_slice());
            if condition(objects) {
                return Ok(());
            }
            madsim::time::sleep(WAIT_POLL).await;
        }
        Err(WorkloadError { step, action, reason: format!("timed out after {}s", timeout.as_secs_f64()) })
    }

    /// Every object of `api`'s kind in its namespace (or all) as the server has it now, read
    /// without a request, in key order.
    fn lookup_all<K>(&self, api: &Api<K>) -> Vec<Arc<DynamicObject>>
    where
        K: Resource,
    {
        api.client.world.with(|w| {
            let Some(cluster) = w.clusters().get(&api.client.cluster) else { return Vec::new() };
            let resource = api.resource();
            let Some(ty) = cluster.server.types().get(&resource.group, &resource.version, &resource.plural)
            else {
                return Vec::new();
            };
            let snapshot = cluster.server.snapshot();
            let storage = ty.storage_key();
            // As a read through this type answers: an Event the built-ins published through
            // events.k8s.io read as a core Event, a custom resource in the version asked for.
            snapshot.iter_resource(&storage, api.namespace()).map(|(_, o)| ty.present(o)).collect()
        })
    }

    /// The object `name` as the server has it now, read without a request.
    fn lookup<K>(&self, api: &Api<K>, name: &str) -> Option<Arc<DynamicObject>>
    where
        K: Resource,
    {
        api.client.world.with(|w| {
            let cluster = w.clusters().get(&api.client.cluster)?;
            let resource = api.resource();
            let ty = cluster.server.types().get(&resource.group, &resource.version, &resource.plural)?;
            let key = model_apiserver::ObjectKey {
                resource: ty.storage_key(),
                namespace: Arc::from(api.namespace().unwrap_or("")),
                name: Arc::from(name),
            };
            cluster.server.snapshot().get(&key).map(|o| ty.present(o))
        })
    }
}

/// Whether two reads saw the very same stored objects (the store hands out one `Arc` per stored
/// version of an object).
fn same_objects<'a>(
    a: impl ExactSizeIterator<Item = &'a Arc<DynamicObject>>,
    b: impl ExactSizeIterator<Item = &'a Arc<DynamicObject>>,
) -> bool {
    a.len() == b.len() && a.zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}
