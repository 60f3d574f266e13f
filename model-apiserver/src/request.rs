//! Requests and responses of the model API server.
//!
//! A [`Request`] names its resource by [`ApiResource`] (group, version, plural), as a REST path
//! would. The server resolves it against the served [`crate::ResourceTypes`]; an unknown resource
//! gets 404 NotFound, as kube-apiserver answers an unknown path.

use std::sync::Arc;

use kube_core::{
    ApiResource, DynamicObject, Status, WatchEvent,
    params::{
        DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, ValidationDirective, WatchParams,
    },
};

/// A subresource addressed by a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subresource {
    /// `/status`: writes take only `.status`.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of the object.
    Scale,
    /// `/finalize` of a Namespace (update only): writes only `spec.finalizers`, as the namespace
    /// controller does once the namespace is empty.
    Finalize,
    /// `/eviction` of a Pod (create only): a `policy/v1` (or `v1beta1`) `Eviction` that deletes
    /// the pod if its PodDisruptionBudget allows it (see [`Verb::CreateSubresource`]).
    Eviction,
    /// `/token` of a ServiceAccount (create only): an `authentication.k8s.io/v1` TokenRequest,
    /// answered with a token ([`crate::token`]).
    Token,
    /// `/binding` of a Pod (create only): a `v1` Binding that assigns the pod to a node, as the
    /// scheduler binds it ([`crate::binding`]).
    Binding,
    /// `/ephemeralcontainers` of a Pod (get, update, patch): writes only
    /// `spec.ephemeralContainers`, which may only grow, as `kubectl debug` adds a debugging
    /// container to a running Pod.
    EphemeralContainers,
    /// `/resize` of a Pod (get, update, patch): writes only its containers' `resources` and
    /// `resizePolicy` (in-place Pod vertical scaling), as a vertical autoscaler or
    /// `kubectl patch --subresource resize` resizes a running Pod.
    Resize,
}

impl Subresource {
    /// The subresource's path segment: `status`, `scale`, `finalize`, `eviction`.
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Eviction => "eviction",
            Subresource::Token => "token",
            Subresource::Binding => "binding",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Resize => "resize",
        }
    }
}

/// The `fieldValidation` directive of a write: what decoding does with a field the kind does
/// not have (and with a field given twice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldValidation {
    /// Drop it silently.
    Ignore,
    /// Drop it and answer with a warning for each (kube-apiserver's default when the request
    /// names no directive).
    #[default]
    Warn,
    /// Refuse the write: 400 BadRequest (422 for a patch) naming every such field.
    Strict,
}

impl From<&ValidationDirective> for FieldValidation {
    fn from(d: &ValidationDirective) -> Self {
        match d {
            ValidationDirective::Ignore => FieldValidation::Ignore,
            ValidationDirective::Warn => FieldValidation::Warn,
            ValidationDirective::Strict => FieldValidation::Strict,
        }
    }
}

/// The verb of a request and its verb-specific arguments.
#[derive(Clone, Debug)]
pub enum Verb {
    /// GET one object.
    Get {
        /// The object's name.
        name: String,
        /// resourceVersion semantics of the read.
        params: GetParams,
        /// `/status` (the whole object) or `/scale` (a Scale view).
        subresource: Option<Subresource>,
    },
    /// GET a collection.
    List {
        /// Selectors, resourceVersion semantics, `limit` and `continue`.
        params: ListParams,
    },
    /// POST an object.
    Create {
        /// The new object (`name` or `generateName` set). Boxed, as in `Update`: inline it made
        /// every request 560 bytes, moved whole at each step of a call.
        object: Box<DynamicObject>,
        /// `dryRun` and `fieldManager`.
        params: PostParams,
    },
    /// PUT an object (or its `/status` or `/scale`).
    Update {
        /// The object's name (the URL's; the body may repeat it but not contradict it).
        name: String,
        /// The replacement (a Scale for `/scale`).
        object: Box<DynamicObject>,
        /// `dryRun` and `fieldManager`.
        params: PostParams,
        /// `/status` or `/scale`.
        subresource: Option<Subresource>,
    },
    /// PATCH an object (or its `/status` or `/scale`).
    Patch {
        /// The object's name.
        name: String,
        /// Merge, JSON, strategic merge or apply patch.
        patch: Patch<serde_json::Value>,
        /// `dryRun`, `fieldManager` and `force` (apply only).
        params: PatchParams,
        /// `/status` or `/scale`.
        subresource: Option<Subresource>,
    },
    /// POST to a subresource of an existing object, named by the URL (`pods/{name}/eviction`):
    /// the body is the subresource's own kind (an `Eviction`), whose name must be the URL's.
    /// A subresource that takes no POST (`status`, `scale`, `finalize`) is 405
    /// MethodNotAllowed, one the type does not have 404 NotFound.
    CreateSubresource {
        /// The object's name (the URL's).
        name: String,
        /// Which subresource.
        subresource: Subresource,
        /// The body (boxed, as in `Create`).
        object: Box<DynamicObject>,
        /// `dryRun` and `fieldManager`.
        params: PostParams,
    },
    /// DELETE one object.
    Delete {
        /// The object's name.
        name: String,
        /// Grace period, propagation policy, preconditions and `dryRun`.
        params: DeleteParams,
    },
    /// DELETE a collection.
    DeleteCollection {
        /// Which objects: the selectors.
        list: ListParams,
        /// How each is deleted.
        params: DeleteParams,
    },
    /// WATCH a collection from `resource_version` (exclusive).
    ///
    /// The model is pull-based: the answer holds every matching event after
    /// `resource_version` up to the current revision. A client keeps watching by asking again
    /// from the revision of the last event it received (or of a bookmark).
    Watch {
        /// `""` or `"0"`: the current state first; a number: the changes after it.
        resource_version: String,
        /// Selectors, bookmarks and `sendInitialEvents`.
        params: WatchParams,
    },
}

/// What a [`Request`]'s constructors take for its resource: an `&ApiResource`, copied into the
/// request, or an `&Arc<ApiResource>` (or the `Arc` itself), shared without a copy.
pub trait IntoResource {
    /// The resource, shared.
    fn into_resource(self) -> Arc<ApiResource>;
}

impl IntoResource for &ApiResource {
    fn into_resource(self) -> Arc<ApiResource> {
        Arc::new(self.clone())
    }
}

impl IntoResource for &Arc<ApiResource> {
    fn into_resource(self) -> Arc<ApiResource> {
        Arc::clone(self)
    }
}

impl IntoResource for Arc<ApiResource> {
    fn into_resource(self) -> Arc<ApiResource> {
        self
    }
}

/// One request to the model API server.
#[derive(Clone, Debug)]
pub struct Request {
    /// Which resource: group, version and plural are used; kind is informative. Shared, so that
    /// a client holding its resources behind `Arc`s copies no strings per call.
    pub resource: Arc<ApiResource>,
    /// The namespace for namespaced resources; `None` means all namespaces for list, watch and
    /// deletecollection, and is 404 NotFound for a single object (as the real server's path
    /// would be), except for create, which then takes the body's `metadata.namespace`. A
    /// namespace on a cluster-scoped resource is 404 NotFound too.
    pub namespace: Option<String>,
    /// The verb and its arguments.
    pub verb: Verb,
    /// Who is asking (a controller or node name); recorded nowhere in the object, used by admission
    /// hooks and as the default field manager.
    pub user: Option<Arc<str>>,
    /// The `fieldValidation` query parameter of a create, update or patch (kube-core's
    /// `PostParams` have none); `None` takes a patch's `PatchParams::field_validation`, else
    /// [`FieldValidation::Warn`], as kube-apiserver defaults it.
    pub field_validation: Option<FieldValidation>,
}

impl Request {
    fn new(resource: impl IntoResource, namespace: Option<&str>, verb: Verb) -> Self {
        Request {
            resource: resource.into_resource(),
            namespace: namespace.map(str::to_owned),
            verb,
            user: None,
            field_validation: None,
        }
    }
    /// GET `name`.
    pub fn get(resource: impl IntoResource, namespace: Option<&str>, name: &str, params: GetParams) -> Self {
        Self::new(resource, namespace, Verb::Get { name: name.to_owned(), params, subresource: None })
    }
    /// LIST.
    pub fn list(resource: impl IntoResource, namespace: Option<&str>, params: ListParams) -> Self {
        Self::new(resource, namespace, Verb::List { params })
    }
    /// CREATE `object`.
    pub fn create(
        resource: impl IntoResource,
        namespace: Option<&str>,
        object: DynamicObject,
        params: PostParams,
    ) -> Self {
        Self::new(resource, namespace, Verb::Create { object: Box::new(object), params })
    }
    /// POST `object` to subresource `subresource` of `name` (an eviction:
    /// `Request::create_subresource(&pods, Some(ns), name, Subresource::Eviction, eviction, params)`).
    pub fn create_subresource(
        resource: impl IntoResource,
        namespace: Option<&str>,
        name: &str,
        subresource: Subresource,
        object: DynamicObject,
        params: PostParams,
    ) -> Self {
        Self::new(
            resource,
            namespace,
            Verb::CreateSubresource { name: name.to_owned(), subresource, object: Box::new(object), params },
        )
    }
    /// UPDATE (replace) `name` with `object`.
    pub fn update(
        resource: impl IntoResource,
        namespace: Option<&str>,
        name: &str,
        object: DynamicObject,
        params: PostParams,
    ) -> Self {
        Self::new(
            resource,
            namespace,
            Verb::Update { name: name.to_owned(), object: Box::new(object), params, subresource: None },
        )
    }
    /// PATCH `name`.
    pub fn patch(
        resource: impl IntoResource,
        namespace: Option<&str>,
        name: &str,
        patch: Patch<serde_json::Value>,
        params: PatchParams,
    ) -> Self {
        Self::new(
            resource,
            namespace,
            Verb::Patch { name: name.to_owned(), patch, params, subresource: None },
        )
    }
    /// DELETE `name`.
    pub fn delete(
        resource: impl IntoResource,
        namespace: Option<&str>,
        name: &str,
        params: DeleteParams,
    ) -> Self {
        Self::new(resource, namespace, Verb::Delete { name: name.to_owned(), params })
    }
    /// DELETE a collection.
    pub fn delete_collection(
        resource: impl IntoResource,
        namespace: Option<&str>,
        list: ListParams,
        params: DeleteParams,
    ) -> Self {
        Self::new(resource, namespace, Verb::DeleteCollection { list, params })
    }
    /// WATCH from `resource_version`.
    pub fn watch(
        resource: impl IntoResource,
        namespace: Option<&str>,
        resource_version: &str,
        params: WatchParams,
    ) -> Self {
        Self::new(resource, namespace, Verb::Watch { resource_version: resource_version.to_owned(), params })
    }
    /// Address a subresource (`/status`, `/scale` or `/finalize`) for get, update and patch (a
    /// POST to one is [`Request::create_subresource`]).
    pub fn with_subresource(mut self, sub: Subresource) -> Self {
        match &mut self.verb {
            Verb::Get { subresource, .. }
            | Verb::Update { subresource, .. }
            | Verb::Patch { subresource, .. } => *subresource = Some(sub),
            _ => {}
        }
        self
    }
    /// Set the requesting user.
    pub fn with_user(mut self, user: impl Into<Arc<str>>) -> Self {
        self.user = Some(user.into());
        self
    }
    /// Set the `fieldValidation` directive of a create, update or patch.
    pub fn with_field_validation(mut self, directive: FieldValidation) -> Self {
        self.field_validation = Some(directive);
        self
    }
    /// The directive in force: the request's, a patch's own, or the default (Warn).
    pub fn field_validation(&self) -> FieldValidation {
        match (&self.field_validation, &self.verb) {
            (Some(d), _) => *d,
            (None, Verb::Patch { params, .. }) => {
                params.field_validation.as_ref().map(FieldValidation::from).unwrap_or_default()
            }
            (None, _) => FieldValidation::default(),
        }
    }
    /// Whether this request can change state (anything but get, list and watch).
    pub fn is_write(&self) -> bool {
        !matches!(self.verb, Verb::Get { .. } | Verb::List { .. } | Verb::Watch { .. })
    }
    /// A short verb name as Kubernetes audit logs spell it: `get`, `list`, `create` (a POST to a
    /// subresource too, as an eviction's audit event says), `update`, `patch`, `delete`,
    /// `deletecollection`, `watch`.
    pub fn verb_name(&self) -> &'static str {
        match self.verb {
            Verb::Get { .. } => "get",
            Verb::List { .. } => "list",
            Verb::Create { .. } | Verb::CreateSubresource { .. } => "create",
            Verb::Update { .. } => "update",
            Verb::Patch { .. } => "patch",
            Verb::Delete { .. } => "delete",
            Verb::DeleteCollection { .. } => "deletecollection",
            Verb::Watch { .. } => "watch",
        }
    }
}

/// A list answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ListResponse {
    /// The items, sorted by namespace then name (the order etcd's keys give).
    pub items: Vec<Arc<DynamicObject>>,
    /// The revision the list was read at.
    pub resource_version: String,
    /// A continue token when `limit` cut the list short.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when cut short.
    pub remaining_item_count: Option<i64>,
}

/// The successful answer to a request.
// `Deleted` carries a whole Status inline; boxing it would change the contract the simulator
// codes against for a one-off 300 bytes per delete.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Response {
    /// get, create, update, patch; and delete when the object still exists afterwards
    /// (finalizers pending or graceful deletion), as kube-rs's `Either::Left`.
    Object(Arc<DynamicObject>),
    /// delete when the object was removed at once (kube-rs's `Either::Right`): a `Success`
    /// Status with details naming the object. The removed object is in `object`. Pods and
    /// ServiceAccounts answer `Object` instead, as their real storage returns the deleted object.
    ///
    /// Also a successful eviction (`pods/{name}/eviction`): a `Success` Status with code 201,
    /// and the pod as its delete left it in `object` (removed, or marked for a graceful delete).
    Deleted {
        /// The `Success` Status, details naming the object and its uid.
        status: Status,
        /// The object as it was when removed (resourceVersion = the deletion's revision).
        object: Arc<DynamicObject>,
    },
    /// A POST to a subresource that changes its object and answers a `Success` Status (code 201),
    /// as a pod's `binding` ([`crate::binding`]): the Status, and the object as the write left it
    /// (resourceVersion = the write's revision; unstored for a dry run).
    Completed {
        /// The `Success` Status.
        status: Status,
        /// The object the write changed.
        object: Arc<DynamicObject>,
    },
    /// list and deletecollection (the deleted items).
    List(ListResponse),
    /// watch: the events after the requested revision, in order. A compacted revision yields a
    /// single `WatchEvent::Error` carrying 410 Expired, as the real server streams it.
    Watch(Vec<WatchEvent<Arc<DynamicObject>>>),
}

impl Response {
    /// The object of an `Object`, `Deleted` or `Completed` response.
    pub fn object(&self) -> Option<&Arc<DynamicObject>> {
        match self {
            Response::Object(o)
            | Response::Deleted { object: o, .. }
            | Response::Completed { object: o, .. } => Some(o),
            _ => None,
        }
    }
}
