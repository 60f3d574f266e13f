//! The API server state machine: the served types, the revisioned store, the admission hooks,
//! and the dispatch of each request to its verb (implemented in `read`, `write`, `deletion`,
//! `watch` and `crd_serving`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use kube_core::{ApiResource, DynamicObject, Status, TypeMeta, params::PostParams};
use serde_json::json;

use crate::{
    admission::AdmissionHook,
    context::Context,
    errors,
    request::{FieldValidation, Request, Response, Verb},
    resources::{ResourceType, ResourceTypes},
    store::{ObjectKey, Revision, Snapshot, Store, StoredEvent, StoredEventType},
};
/// The namespaces a fresh cluster has (kube-apiserver's bootstrap and system namespaces
/// controllers create them).
pub const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The address kube-apiserver advertises in the `kubernetes` Service's Endpoints and
/// EndpointSlice (a single-node cluster's node address, as in kind), with port 6443.
pub const APISERVER_ADVERTISE_ADDRESS: &str = "10.0.0.1";
/// The `kubernetes` Service's cluster IP: the first address of the service range 10.96.0.0/16
/// (kubeadm's and kind's), never handed to another Service.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Bounds and knobs of the model.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// How many past revisions (snapshots and events) are retained; older ones are compacted, and
    /// reads or watches from them get 410 Expired.
    pub history_revisions_max: usize,
    /// The grace period a Pod gets when neither the request nor the pod spec sets one.
    pub pod_grace_period_seconds_default: i64,
    /// Whether built-in kinds get the real server's defaults (pod spec, workload, Service and
    /// claim fields; see the `defaults` module). On by default, as in a cluster: a controller
    /// that compares its desired spec with the stored one must cope with them.
    pub builtin_defaults: bool,
    /// kube-apiserver's etcd compaction interval (`--etcd-compaction-interval`, 5 minutes):
    /// revisions that stopped being current more than this much virtual time ago are compacted,
    /// so that a watch or an exact read from them gets 410 Expired and the client relists.
    /// `None` keeps history by count alone (`history_revisions_max`).
    pub compaction_interval_seconds: Option<u64>,
    /// kube-apiserver's `StorageObjectInUseProtection` admission plugin (on in every real
    /// cluster): a created PersistentVolumeClaim gets the finalizer
    /// [`PVC_PROTECTION_FINALIZER`](crate::PVC_PROTECTION_FINALIZER) and a created
    /// PersistentVolume [`PV_PROTECTION_FINALIZER`](crate::PV_PROTECTION_FINALIZER), which
    /// kube-controller-manager's protection controllers remove once nothing uses the object.
    /// Off by default: without those controllers (the built-ins of the `controllers` crate turn
    /// it on with them) a deleted claim would stay terminating for ever.
    pub storage_object_in_use_protection: bool,
    /// kube-apiserver's `DefaultStorageClass` admission plugin (on in every real cluster): a
    /// PersistentVolumeClaim created without a class gets the default StorageClass's name
    /// ([`crate::admission::default_storage_class`]). Off by default, as on the server the
    /// conformance corpus was recorded on; the PersistentVolume binder of the `controllers`
    /// crate, which goes with default classes, turns it on.
    pub default_storage_class: bool,
    /// kube-apiserver's Pod admission plugins (on in every real cluster), in its order:
    /// `LimitRanger` (the default limits and requests of the namespace's LimitRanges,
    /// [`crate::admission::limit_ranger`]), `ServiceAccount` (a Pod gets the account `default` when it names none, an account it names
    /// must exist, and unless it opts out it gets the projected token volume
    /// `kube-api-access-<suffix>` mounted in every container:
    /// [`crate::admission::service_account`]), `Priority` (its
    /// `priorityClassName` resolves to `spec.priority` and `preemptionPolicy`, an unknown class
    /// is refused, and only one PriorityClass may be `globalDefault`:
    /// [`crate::admission::priority`]), `DefaultTolerationSeconds` (the `not-ready` and
    /// `unreachable` `NoExecute` tolerations for 300 s:
    /// [`crate::admission::default_toleration_seconds`]) and `PodSecurity` (the Pod Security
    /// Standards a namespace's labels ask for: [`crate::admission::pod_security`]).
    /// Off by default: they go with kube-controller-manager's ServiceAccount controller and root
    /// CA publisher, whose `default` accounts and `kube-root-ca.crt` ConfigMaps the Pods then use
    /// (the built-ins of the `controllers` crate turn them on with those), and the conformance
    /// corpus was recorded on a server without them.
    pub pod_admission_plugins: bool,
    /// kube-apiserver's `ResourceQuota` admission plugin (on in every real cluster): a write that
    /// would take a namespace past one of its ResourceQuotas is refused with 403, and an admitted
    /// one is charged to their `status.used` at once ([`crate::admission::resource_quota`]).
    /// Off by default, as on the server the conformance corpus was recorded on; the quota
    /// controller of the `controllers` crate, which keeps the quotas' status, turns it on.
    pub resource_quota: bool,
    /// Users whose requests RBAC authorizes, each as a ServiceAccount ([`crate::rbac`]): a
    /// simulated controller's node name, mapped to the account its Deployment would run as. Other
    /// users are allowed everything. Empty by default (nothing is checked); when not empty, the
    /// bootstrap objects include the ClusterRoles `cluster-admin`, `admin`, `edit` and `view`.
    pub service_accounts: BTreeMap<String, crate::rbac::ServiceAccount>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            history_revisions_max: 10_000,
            pod_grace_period_seconds_default: 30,
            builtin_defaults: true,
            compaction_interval_seconds: Some(300),
            storage_object_in_use_protection: false,
            default_storage_class: false,
            pod_admission_plugins: false,
            resource_quota: false,
            service_accounts: BTreeMap::new(),
        }
    }
}

/// The model API server.
///
/// Cloning is cheap (persistent maps and `Arc`s) and gives an independent server with the same
/// state, history and hooks: a fork for what-if runs.
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) config: ServerConfig,
    pub(crate) types: ResourceTypes,
    pub(crate) store: Store,
    pub(crate) mutating: Vec<AdmissionHook>,
    pub(crate) validating: Vec<AdmissionHook>,
    /// The virtual time of the request being handled: writes stamp their revision with it.
    pub(crate) clock: jiff::Timestamp,
}

/// What a single-object or collection request addresses, resolved against the served types.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The resolved type.
    pub(crate) ty: Arc<ResourceType>,
    /// Its storage key, shared by every [`ObjectKey`] of this type.
    pub(crate) resource: Arc<str>,
    /// The namespace: empty for cluster-scoped types and for all-namespace collections.
    pub(crate) namespace: Arc<str>,
    /// The requesting user.
    pub(crate) user: Option<Arc<str>>,
    /// What decoding does with unknown fields of a written object.
    pub(crate) field_validation: FieldValidation,
}

impl Target {
    /// The key of `name` in this target's namespace.
    pub(crate) fn key(&self, name: &str) -> ObjectKey {
        ObjectKey {
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            name: Arc::from(name),
        }
    }
    /// Where kube-apiserver keeps `name` in etcd, as its storage errors print it:
    /// `/registry/<prefix>[/<namespace>]/<name>`. The prefix is the resource's name for a built-in
    /// kind, but for the few kube-apiserver renames (`SpecialDefaultResourcePrefixes`), and
    /// `<group>/<plural>` for a custom resource and for the kinds the API extensions and
    /// aggregation servers store.
    pub(crate) fn etcd_key(&self, name: &str) -> String {
        let api = &self.ty.api;
        let prefix = match (api.group.as_str(), api.plural.as_str()) {
            ("", "replicationcontrollers") => "controllers".to_owned(),
            ("", "endpoints") => "services/endpoints".to_owned(),
            ("", "nodes") => "minions".to_owned(),
            ("", "services") => "services/specs".to_owned(),
            ("networking.k8s.io" | "extensions", "ingresses") => "ingress".to_owned(),
            (group @ ("apiextensions.k8s.io" | "apiregistration.k8s.io"), plural) => {
                [group, "/", plural].concat()
            }
            (group, plural) if self.ty.custom => [group, "/", plural].concat(),
            (_, plural) => plural.to_owned(),
        };
        if self.namespace.is_empty() {
            ["/registry/", &prefix, "/", name].concat()
        } else {
            ["/registry/", &prefix, "/", &self.namespace, "/", name].concat()
        }
    }
    /// The namespace filter of a collection request (`None` = every namespace).
    pub(crate) fn namespace_filter(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(&*self.namespace)
    }
    /// `Some(namespace)` for namespaced types, as ObjectMeta.namespace holds it.
    pub(crate) fn meta_namespace(&self) -> Option<String> {
        self.ty.namespaced.then(|| self.namespace.to_string())
    }
    /// The TypeMeta objects of this type carry.
    pub(crate) fn type_meta(&self) -> TypeMeta {
        TypeMeta { api_version: self.ty.api.api_version.clone(), kind: self.ty.api.kind.clone() }
    }
    /// `obj` as this type's version presents it: custom resources with several served versions
    /// share storage (conversion strategy None), so only apiVersion differs.
    ///
    /// The two Event APIs share storage too: an Event written through the other one is
    /// converted field by field (see `events`).
    pub(crate) fn present(&self, obj: &Arc<DynamicObject>) -> Arc<DynamicObject> {
        self.ty.present(obj)
    }
    /// 404 NotFound for `name` of this type.
    pub(crate) fn not_found(&self, name: &str) -> Status {
        errors::not_found(&self.ty.api.group, &self.ty.api.plural, name)
    }
    /// 404 for a subresource of `name` this type does not serve, before the object is looked
    /// up: a built-in kind has no such route (the generic 404), while the custom resource handler
    /// answers that the object is not found, whether it exists or not.
    pub(crate) fn unserved_subresource(&self, name: &str) -> Status {
        if self.ty.custom { self.not_found(name) } else { resource_not_found() }
    }
}

/// 405 MethodNotAllowed for a verb a served path does not take (GET or PATCH `/finalize`).
pub(crate) fn method_not_allowed() -> Status {
    errors::method_not_allowed("the server does not allow this method on the requested resource")
}

/// Whether `ty` is the built-in Namespace type.
pub(crate) fn is_namespace_type(ty: &ResourceType) -> bool {
    !ty.custom && ty.api.group.is_empty() && ty.api.kind == "Namespace"
}

/// 404 NotFound for a path the server does not serve.
pub(crate) fn resource_not_found() -> Status {
    crate::errors::resource_not_found()
}

/// The default namespaces as creating them in a fresh server stores them, without what differs
/// from server to server (uid, creationTimestamp, resourceVersion): made once per process (for
/// each value of [`ServerConfig::builtin_defaults`], the one setting a create of a namespace
/// depends on) by those very creates. Immutable, so no run's state is shared.
fn default_namespace_templates(builtin_defaults: bool) -> &'static [DynamicObject] {
    static TEMPLATES: [OnceLock<Vec<DynamicObject>>; 2] = [OnceLock::new(), OnceLock::new()];
    TEMPLATES[usize::from(builtin_defaults)].get_or_init(|| {
        let config = ServerConfig { builtin_defaults, ..ServerConfig::default() };
        let mut ids = crate::SeqIds::default();
        let mut ctx = Context::new(jiff::Timestamp::UNIX_EPOCH, &mut ids);
        let server = ApiServer::with_config(config).create_default_namespaces(&mut ctx);
        DEFAULT_NAMESPACES
            .iter()
            .map(|name| {
                let stored = server.store.current().get(&server.namespace_key(name)).expect("created");
                let mut template = DynamicObject::clone(stored);
                template.metadata.uid = None;
                template.metadata.creation_timestamp = None;
                template.metadata.resource_version = None;
                template
            })
            .collect()
    })
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ApiServer {
    /// A server with the built-in kinds and no objects (not even namespaces: see
    /// [`ApiServer::with_default_namespaces`]).
    pub fn new() -> Self {
        Self::with_config(ServerConfig::default())
    }
    /// A server with explicit bounds.
    pub fn with_config(config: ServerConfig) -> Self {
        let store = Store::new(config.history_revisions_max);
        ApiServer {
            config,
            types: ResourceTypes::builtin(),
            store,
            mutating: Vec::new(),
            validating: Vec::new(),
            clock: jiff::Timestamp::UNIX_EPOCH,
        }
    }
    /// Create `default`, `kube-system`, `kube-public` and `kube-node-lease` (where nodes keep
    /// their heartbeat Leases), as a fresh cluster has them.
    ///
    /// Every simulated run starts a server, so the usual case is quick: without admission hooks
    /// to show the creates to, and none of the namespaces there yet, the objects that four
    /// creates would store are stored from a per-process template, with the uids (drawn from
    /// `ctx.ids` as a create draws them), creationTimestamps and resourceVersions the creates
    /// would give them.
    pub fn with_default_namespaces(mut self, ctx: &mut Context<'_>) -> Self {
        let exists =
            |server: &Self, name: &str| server.store.current().get(&server.namespace_key(name)).is_some();
        let quick = self.mutating.is_empty()
            && self.validating.is_empty()
            && !DEFAULT_NAMESPACES.iter().any(|name| exists(&self, name));
        let served = self.types.get_with_storage_key("", "v1", "namespaces").filter(|(ty, _)| !ty.custom);
        let Some((_, storage_key)) = served.filter(|_| quick) else {
            return self.create_default_namespaces(ctx);
        };
        let storage_key = storage_key.clone();
        for template in default_namespace_templates(self.config.builtin_defaults) {
            // What `handle` and a create do, in their order.
            self.advance_clock(ctx.now);
            let mut object = template.clone();
            object.metadata.uid = Some(crate::metadata::new_uid(ctx.ids));
            object.metadata.creation_timestamp = Some(crate::metadata::timestamp(ctx.now));
            object.metadata.resource_version = Some(self.store.next_revision().to_string());
            let name = object.metadata.name.as_deref().expect("a template has a name");
            let key =
                ObjectKey { resource: storage_key.clone(), namespace: Arc::from(""), name: Arc::from(name) };
            self.store.commit(StoredEventType::Added, key, Arc::new(object), self.clock);
        }
        self
    }

    /// Everything a fresh kube-apiserver stores by itself at start, as its post-start hooks
    /// create it: the [`DEFAULT_NAMESPACES`], the `kubernetes` Service in `default` with its
    /// Endpoints and EndpointSlice (the bootstrap controller's, pointing at
    /// [`APISERVER_ADVERTISE_ADDRESS`]:6443), and the two system PriorityClasses
    /// (`system-node-critical`, `system-cluster-critical`), each written by the manager
    /// `kube-apiserver`. What a simulated cluster and `kube-sim serve` start with. Unlike the real
    /// server, nothing re-creates the Service or its endpoints once deleted.
    ///
    /// When [`ServerConfig::service_accounts`] names any (RBAC is checked), the ClusterRoles
    /// users are bound to too: `cluster-admin`, and `admin`, `edit` and `view` with the
    /// `system:aggregate-to-*` roles they aggregate ([`crate::rbac`]); RBAC's other bootstrap
    /// roles and bindings and API priority and fairness's configuration are not created.
    pub fn with_bootstrap_objects(self, ctx: &mut Context<'_>) -> Self {
        let mut server = self.with_default_namespaces(ctx);
        let params = PostParams { field_manager: Some("kube-apiserver".to_owned()), ..PostParams::default() };
        let address = APISERVER_ADVERTISE_ADDRESS;
        let https = json!({"name": "https", "port": 6443, "protocol": "TCP"});
        let mut objects = vec![
            (
                ("", "v1", "services"),
                Some("default"),
                json!({
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                             "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                             "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
                }),
            ),
            (
                ("", "v1", "endpoints"),
                Some("default"),
                json!({
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                    "subsets": [{"addresses": [{"ip": address}], "ports": [https]}],
                }),
            ),
            (
                ("discovery.k8s.io", "v1", "endpointslices"),
                Some("default"),
                json!({
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"kubernetes.io/service-name": "kubernetes"}},
                    "addressType": "IPv4",
                    "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
                    "ports": [https],
                }),
            ),
        ];
        for (name, value, description) in crate::validation::scheduling::SYSTEM_PRIORITY_CLASSES {
            objects.push((
                ("scheduling.k8s.io", "v1", "priorityclasses"),
                None,
                json!({"metadata": {"name": name}, "value": value, "description": description}),
            ));
        }
        if !server.config.service_accounts.is_empty() {
            for body in crate::rbac::bootstrap::cluster_roles() {
                objects.push((("rbac.authorization.k8s.io", "v1", "clusterroles"), None, body));
            }
        }
        for ((group, version, plural), namespace, body) in objects {
            let Some(ty) = server.types.get(group, version, plural).filter(|ty| !ty.custom) else { continue };
            let api = ty.api.clone();
            let mut object: DynamicObject =
                serde_json::from_value(body).expect("a bootstrap object is a valid DynamicObject");
            object.types = Some(TypeMeta { api_version: api.api_version.clone(), kind: api.kind.clone() });
            let created = server.handle(Request::create(&api, namespace, object, params.clone()), ctx);
            assert!(created.is_ok(), "creating the bootstrap {plural} in a fresh server failed: {created:?}");
        }
        server
    }

    /// [`ApiServer::with_default_namespaces`] through four creates.
    fn create_default_namespaces(mut self, ctx: &mut Context<'_>) -> Self {
        let ns = self.types.get("", "v1", "namespaces").expect("namespaces are built in").api.clone();
        for name in DEFAULT_NAMESPACES {
            let obj = DynamicObject::new(name, &ns);
            let created = self.handle(Request::create(&ns, None, obj, Default::default()), ctx);
            assert!(created.is_ok(), "creating namespace {name} in a fresh server failed: {created:?}");
        }
        self
    }
    /// Handle one request at `ctx.now`.
    pub fn handle(&mut self, request: Request, ctx: &mut Context<'_>) -> Result<Response, Status> {
        self.advance_clock(ctx.now);
        self.authorize(&request)?;
        let target = self.resolve(&request)?;
        match request.verb {
            Verb::Get { name, params, subresource } => self.get(&target, &name, &params, subresource),
            Verb::List { params } => self.list(&target, &params).map(Response::List),
            Verb::Create { object, params } => self.create(&target, *object, &params, ctx),
            Verb::Update { name, object, params, subresource } => {
                self.update(&target, &name, *object, &params, subresource, ctx)
            }
            Verb::Patch { name, patch, params, subresource } => {
                self.patch(&target, &name, &patch, &params, subresource, ctx)
            }
            Verb::CreateSubresource { name, subresource, object, params } => {
                self.create_subresource(&target, &name, subresource, *object, &params, ctx)
            }
            Verb::Delete { name, params } => self.delete(&target, &name, &params, ctx),
            Verb::DeleteCollection { list, params } => {
                self.delete_collection(&target, &list, &params, ctx).map(Response::List)
            }
            Verb::Watch { resource_version, params } => {
                self.watch(&target, &resource_version, &params).map(Response::Watch)
            }
        }
    }

    /// Resolve the request's resource and namespace. Single-object verbs on a namespaced type
    /// need a namespace, except create, which may take it from the body (as a client that fills
    /// `metadata.namespace` would); a namespace on a cluster-scoped type is a path the real
    /// server does not serve. Both get 404, as the real router answers.
    fn resolve(&self, request: &Request) -> Result<Target, Status> {
        let ApiResource { group, version, plural, .. } = &*request.resource;
        let (ty, resource) =
            self.types.get_with_storage_key(group, version, plural).ok_or_else(resource_not_found)?;
        let (ty, resource) = (ty.clone(), resource.clone());
        let requested = request.namespace.as_deref().filter(|ns| !ns.is_empty());
        let namespace = match (ty.namespaced, requested, &request.verb) {
            (true, Some(ns), _) => ns,
            (true, None, Verb::List { .. } | Verb::Watch { .. } | Verb::DeleteCollection { .. }) => "",
            (true, None, Verb::Create { object, .. }) => object
                .metadata
                .namespace
                .as_deref()
                .filter(|ns| !ns.is_empty())
                .ok_or_else(resource_not_found)?,
            (true, None, _) | (false, Some(_), _) => return Err(resource_not_found()),
            (false, None, _) => "",
        };
        Ok(Target {
            resource,
            ty,
            namespace: Arc::from(namespace),
            user: request.user.clone(),
            field_validation: request.field_validation(),
        })
    }

    /// The current revision.
    pub fn revision(&self) -> Revision {
        self.store.revision()
    }
    /// The oldest revision still readable (everything before it is compacted).
    pub fn oldest_revision(&self) -> Revision {
        self.store.oldest()
    }
    /// The current state; O(1).
    pub fn snapshot(&self) -> Snapshot {
        self.store.current().clone()
    }
    /// A server holding exactly `snapshot` (objects and revision, with no earlier history),
    /// serving the built-in kinds and the custom kinds of the CRDs stored in it. Objects keep
    /// their uids, resourceVersions and timestamps: `kube-sim serve --replay` serves a simulated
    /// run's state at one step this way.
    pub fn from_snapshot(config: ServerConfig, snapshot: Snapshot) -> Self {
        let mut server = Self::with_config(config);
        let crds: Vec<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = snapshot
            .objects
            .values()
            .filter(|o| {
                o.types.as_ref().is_some_and(|t| {
                    t.kind == "CustomResourceDefinition" && t.api_version.starts_with("apiextensions.k8s.io/")
                })
            })
            .filter_map(|o| serde_json::to_value(&**o).and_then(serde_json::from_value).ok())
            .collect();
        for crd in &crds {
            for ty in crate::crd::resource_types(crd) {
                server.types.insert(ty);
            }
        }
        server.store = Store::from_snapshot(snapshot, server.config.history_revisions_max);
        server
    }
    /// The state at a retained revision; `None` if compacted or in the future.
    pub fn snapshot_at(&self, revision: Revision) -> Option<Snapshot> {
        self.store.at(revision)
    }
    /// The stored changes after `revision`, in order; 410 Expired if compacted.
    pub fn events_after(&self, revision: Revision) -> Result<Vec<StoredEvent>, Status> {
        match self.store.events_after(revision) {
            Some(events) => Ok(events.cloned().collect()),
            None => Err(errors::expired(revision, self.store.oldest())),
        }
    }
    /// The stored changes after `revision`, in order, borrowed (no copy of the history);
    /// `None` if compacted. What the simulator reads after every write: which objects it
    /// changed, to wake only their watchers.
    pub fn changes_after(&self, revision: Revision) -> Option<impl Iterator<Item = &StoredEvent>> {
        self.store.events_after(revision)
    }
    /// The retained changes after `revision`, borrowed, and whether they are all of them (see
    /// [`ApiServer::changes_after`]); what is left of a write whose revisions were compacted at
    /// once.
    pub fn retained_changes_after(&self, revision: Revision) -> (bool, impl Iterator<Item = &StoredEvent>) {
        self.store.retained_events_after(revision)
    }
    /// Drop history before `revision` (as etcd compaction does).
    pub fn compact(&mut self, revision: Revision) {
        self.store.compact(revision);
    }
    /// Compact everything before the current revision, as an etcd compaction at this moment
    /// would: every watch resuming from an earlier resourceVersion gets 410 Expired and its
    /// client must relist (the "compact watch history" fault).
    pub fn compact_now(&mut self) {
        self.store.compact(self.store.revision());
    }
    /// Move the virtual clock to `now` and compact what the compaction interval lets go.
    pub(crate) fn advance_clock(&mut self, now: jiff::Timestamp) {
        self.clock = self.clock.max(now);
        if let Some(interval) = self.config.compaction_interval_seconds {
            let interval = i64::try_from(interval).unwrap_or(i64::MAX);
            let cutoff = self.clock.as_second().saturating_sub(interval);
            if let Ok(cutoff) = jiff::Timestamp::from_second(cutoff) {
                self.store.compact_older_than(cutoff);
            }
        }
    }

    /// The server's settings.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The server's settings, to change while it serves (an admission plugin turned on when
    /// the controllers that go with it start).
    pub fn config_mut(&mut self) -> &mut ServerConfig {
        &mut self.config
    }

    /// The served types (built-ins plus established CRDs).
    pub fn types(&self) -> &ResourceTypes {
        &self.types
    }
    /// Register a mutating admission hook (runs before validation, in registration order).
    pub fn add_mutating_hook(&mut self, hook: AdmissionHook) {
        self.mutating.push(hook);
    }
    /// Register a validating admission hook (runs after mutation, in registration order).
    pub fn add_validating_hook(&mut self, hook: AdmissionHook) {
        self.validating.push(hook);
    }
}
