//! The controller-facing client, mirroring kube-rs: [`Client`] and [`Api<K>`].
//!
//! A ported kube-rs controller changes its `use` lines, not its logic: the verbs have kube-rs's
//! names and parameters (the `kube_core::params` types), and errors are [`Error::Api`] carrying the
//! server's `kube_core::Status`, so `Err(Error::Api(e)) if e.code == 404` keeps working.
//!
//! Every call goes through the [transport](crate::transport): it waits a simulated latency, and is
//! a point where faults act. Typed objects travel as `DynamicObject`s, converted through
//! `serde_json::Value`.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::api::autoscaling::v1::Scale;
use kube_core::{
    ApiResource, DynamicObject, ObjectList, PartialObjectMeta, Resource, Status, TypeMeta,
    params::{DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams},
    subresource::{EvictParams, LogParams},
};
use serde::{Serialize, de::DeserializeOwned};

use model_apiserver::{Request, Response, Subresource};

use crate::transport;
use crate::world::World;

/// An error from an API call, shaped as kube-rs's `kube::Error` for the variants a controller
/// matches on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a failure `Status` (404 NotFound, 409 Conflict, 422 Invalid...).
    #[error("ApiError: {} ({}): {}", .0.reason, .0.code, .0.message)]
    Api(Box<Status>),
    /// An object did not convert between its type and JSON (a type that does not match the
    /// served schema).
    #[error("SerdeError: {0}")]
    SerdeError(#[source] serde_json::Error),
    /// The request was refused before it was sent, by kube-core's own checks (a `WatchParams`
    /// with `send_initial_events` but not `bookmarks`), as kube-rs refuses it.
    #[error("Failed to build request: {0}")]
    BuildRequest(#[source] kube_core::request::Error),
    /// Discovery found no such group, version or kind (see [`crate::discovery`]).
    #[error("Error from discovery: {0}")]
    Discovery(#[source] DiscoveryError),
}

/// Why discovery found nothing, as kube's `kube::error::DiscoveryError` (the same messages;
/// [`crate::discovery`] re-exports it).
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The group version does not parse.
    #[error("Invalid GroupVersion: {0}")]
    InvalidGroupVersion(String),
    /// The kind is not served in that group version.
    #[error("Missing Kind: {0}")]
    MissingKind(String),
    /// The group is not served.
    #[error("Missing Api Group: {0}")]
    MissingApiGroup(String),
    /// The resource is not served.
    #[error("Missing Resource: {0}")]
    MissingResource(String),
    /// The group serves no version.
    #[error("Empty Api Group: {0}")]
    EmptyApiGroup(String),
}

impl Error {
    /// The server's `Status`, for API errors.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(status) => Some(status),
            Error::SerdeError(_) | Error::BuildRequest(_) | Error::Discovery(_) => None,
        }
    }
}

impl From<Status> for Error {
    fn from(status: Status) -> Self {
        Error::Api(Box::new(status))
    }
}

/// kube-rs's result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One of two answers, as kube-rs's `either::Either` on `delete`: `Left` is the object (deletion
/// started, finalizers pending), `Right` the server's `Status` (deleted at once).
#[derive(Clone, Debug, PartialEq)]
pub enum Either<L, R> {
    /// The first kind of answer.
    Left(L),
    /// The second kind of answer.
    Right(R),
}

impl<L, R> Either<L, R> {
    /// Map the left value, as `either::Either::map_left`.
    pub fn map_left<M>(self, f: impl FnOnce(L) -> M) -> Either<M, R> {
        match self {
            Either::Left(l) => Either::Left(f(l)),
            Either::Right(r) => Either::Right(r),
        }
    }
    /// Whether this is `Left`.
    pub fn is_left(&self) -> bool {
        matches!(self, Either::Left(_))
    }
}

/// A client bound to one cluster, for one node. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub(crate) world: World,
    pub(crate) cluster: Arc<str>,
    pub(crate) node: Arc<str>,
}

/// The clients a controller or the workload may use: one per cluster.
#[derive(Clone)]
pub struct Clients {
    pub(crate) world: World,
    pub(crate) node: Arc<str>,
    pub(crate) clusters: Arc<[Arc<str>]>,
}

impl Clients {
    pub(crate) fn new(world: World, node: Arc<str>, clusters: Arc<[Arc<str>]>) -> Self {
        Clients { world, node, clusters }
    }
    /// The client of the first declared cluster (`default` unless declared otherwise).
    pub fn default_cluster(&self) -> Client {
        Client::new(self.world.clone(), self.clusters[0].clone(), self.node.clone())
    }
    /// The client of the cluster called `name`.
    ///
    /// # Panics
    ///
    /// If no cluster of that name was declared: that is a mistake in the scenario, not in the
    /// controller under test.
    pub fn cluster(&self, name: &str) -> Client {
        match self.clusters.iter().find(|c| &***c == name) {
            Some(cluster) => Client::new(self.world.clone(), cluster.clone(), self.node.clone()),
            None => panic!("no cluster named {name:?} was declared; declared: {:?}", self.clusters),
        }
    }
    /// The declared clusters' names, in declaration order.
    pub fn cluster_names(&self) -> impl Iterator<Item = &str> {
        self.clusters.iter().map(|c| &**c)
    }
    /// The node these clients belong to.
    pub fn node(&self) -> &str {
        &self.node
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("cluster", &self.cluster).field("node", &self.node).finish()
    }
}

impl Client {
    pub(crate) fn new(world: World, cluster: Arc<str>, node: Arc<str>) -> Self {
        Client { world, cluster, node }
    }
    /// The cluster this client talks to.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }
    /// The node this client belongs to.
    pub fn node(&self) -> &str {
        &self.node
    }
    /// The namespace `Api::default_namespaced` uses, as a kubeconfig's default.
    pub fn default_namespace(&self) -> &str {
        "default"
    }
    /// Send a raw request through the transport.
    pub async fn request(&self, request: Request) -> Result<Response, Status> {
        transport::call(&self.world, &self.cluster, &self.node, request).await
    }
}

/// Serialize any object to a `DynamicObject`.
///
/// By hand rather than through `DynamicObject`'s derived `Deserialize`: its flattened fields make
/// serde buffer the whole object once more before deserializing it. Here the object's JSON map
/// is split: `apiVersion` and `kind` become the type, `metadata` is decoded, and the rest is
/// moved into `data` as it is.
pub(crate) fn to_dynamic<T: Resource + Serialize>(object: &T) -> serde_json::Result<DynamicObject> {
    // The JSON without the metadata, where the type serializes as a struct: see
    // [`crate::without_metadata`].
    let serde_json::Value::Object(mut map) = crate::without_metadata::to_value(object)? else {
        return serde_json::from_value(serde_json::to_value(object)?);
    };
    let api_version = map.remove("apiVersion");
    let kind = map.remove("kind");
    let types = match (api_version, kind) {
        (Some(serde_json::Value::String(api_version)), Some(serde_json::Value::String(kind))) => {
            Some(kube_core::TypeMeta { api_version, kind })
        }
        (None, None) => None,
        (api_version, kind) => {
            // Anything else is what the derived decoding would reject: let it say how.
            if let Some(v) = api_version {
                map.insert("apiVersion".to_owned(), v);
            }
            if let Some(v) = kind {
                map.insert("kind".to_owned(), v);
            }
            return serde_json::from_value(serde_json::Value::Object(map));
        }
    };
    // The metadata is the object's own, cloned: decoding it back from its JSON would give the
    // same value at many times the cost.
    map.remove("metadata");
    let metadata = object.meta().clone();
    Ok(DynamicObject { types, metadata, data: serde_json::Value::Object(map) })
}

/// Deserialize a `DynamicObject` into a typed object: what kube-rs's `DynamicObject::try_parse`
/// gives, without consuming the object (for properties reading a snapshot, for example).
///
/// The typed object is decoded straight from the stored object's parts (its type, the entries of
/// `data` borrowed as they are, and a clone of its metadata), instead of from a copy of the whole
/// object serialized into one JSON value first.
pub fn from_dynamic<K: Resource + DeserializeOwned>(object: &DynamicObject) -> serde_json::Result<K> {
    let serde_json::Value::Object(data) = &object.data else {
        return serde_json::from_value(serde_json::to_value(object)?);
    };
    let (api_version, kind) = match &object.types {
        Some(t) => (
            Some(serde_json::Value::String(t.api_version.clone())),
            Some(serde_json::Value::String(t.kind.clone())),
        ),
        None => (None, None),
    };
    // `K`'s metadata is an `ObjectMeta`, the stored object's: it is decoded from an empty map and
    // then set to a clone, instead of being serialized to JSON and decoded back (the largest part
    // of a conversion).
    let empty = serde_json::Value::Object(serde_json::Map::new());
    let head = [("apiVersion", api_version.as_ref()), ("kind", kind.as_ref()), ("metadata", Some(&empty))];
    let entries = head.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).chain(
        data.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .map(|(k, v)| (k.as_str(), v)),
    );
    let mut typed = K::deserialize(serde::de::value::MapDeserializer::<_, serde_json::Error>::new(entries))?;
    *typed.meta_mut() = object.metadata.clone();
    Ok(typed)
}

/// A shared typed view of a stored object: free (a pointer copy) when `K` is `DynamicObject`,
/// a conversion otherwise.
pub(crate) fn typed<K: Resource + DeserializeOwned + Send + Sync + 'static>(
    object: &Arc<DynamicObject>,
) -> serde_json::Result<Arc<K>> {
    let any: Arc<dyn std::any::Any + Send + Sync> = object.clone();
    match any.downcast::<K>() {
        Ok(same) => Ok(same),
        Err(_) => from_dynamic(object).map(Arc::new),
    }
}

/// The type kube-apiserver gives the objects of a metadata-only read (`meta.k8s.io/v1`
/// `PartialObjectMetadata`), whatever their own type.
pub(crate) fn partial_type() -> TypeMeta {
    TypeMeta { api_version: "meta.k8s.io/v1".to_owned(), kind: "PartialObjectMetadata".to_owned() }
}

/// A stored object as a read through `Api<K>` shows it: the object itself or, for
/// `K = PartialObjectMeta<_>` (kube's metadata-only requests, `Resource::metadata_api`), its
/// metadata alone, typed [`partial_type`], as kube-apiserver answers them.
pub(crate) fn typed_view<K: Resource + DeserializeOwned + Send + Sync + 'static>(
    object: &Arc<DynamicObject>,
) -> serde_json::Result<Arc<K>> {
    if !K::metadata_api() {
        return typed(object);
    }
    let partial = DynamicObject {
        types: Some(partial_type()),
        metadata: object.metadata.clone(),
        data: serde_json::Value::Object(serde_json::Map::new()),
    };
    from_dynamic(&partial).map(Arc::new)
}

/// `object` as `K` (`view`: as [`typed_view`] shows it, metadata alone for
/// `K = PartialObjectMeta<_>`), decoded at most once per run for each type and view and shared by
/// every caller (see [`crate::typed_cache`]).
pub(crate) fn typed_in<K: Resource + DeserializeOwned + Send + Sync + 'static>(
    world: &World,
    object: &Arc<DynamicObject>,
    view: bool,
) -> serde_json::Result<Arc<K>> {
    if std::any::TypeId::of::<K>() == std::any::TypeId::of::<DynamicObject>() {
        return typed(object);
    }
    // For any type but a metadata-only one, the view is the object itself.
    let view = view && K::metadata_api();
    if let Some(hit) = world.with(|w| w.typed_views().get::<K>(object, view)) {
        return Ok(hit);
    }
    let decoded = if view { typed_view::<K>(object)? } else { typed::<K>(object)? };
    world.with(|w| w.typed_views().insert(object, view, decoded.clone()));
    Ok(decoded)
}

/// The API of one resource type, in all namespaces or in one, as kube-rs's `Api<K>`.
pub struct Api<K: Resource> {
    pub(crate) client: Client,
    pub(crate) resource: Arc<ApiResource>,
    pub(crate) namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource> Clone for Api<K> {
    fn clone(&self) -> Self {
        self.with_parts(self.namespace.clone())
    }
}

impl<K: Resource> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("resource", &self.resource.plural)
            .field("namespace", &self.namespace)
            .field("client", &self.client)
            .finish()
    }
}

impl<K> Api<K>
where
    K: Resource + 'static,
    K::DynamicType: Default,
{
    /// All objects of `K`, cluster-wide (list and watch) or cluster-scoped.
    pub fn all(client: Client) -> Self {
        Api { client, resource: default_resource::<K>(), namespace: None, kind: PhantomData }
    }
    /// The objects of `K` in namespace `ns`.
    pub fn namespaced(client: Client, ns: &str) -> Self {
        Api { client, resource: default_resource::<K>(), namespace: Some(ns.to_owned()), kind: PhantomData }
    }
    /// The objects of `K` in the client's default namespace.
    pub fn default_namespaced(client: Client) -> Self {
        let ns = client.default_namespace().to_owned();
        Self::namespaced(client, &ns)
    }
}

/// `K`'s resource for its default dynamic type (a static type's own), erased once per process
/// and shared: a controller builds an `Api` per reconcile, kube's idiom, and erasing copies five
/// strings each time. The resource is a function of the type alone, so sharing it across runs
/// and threads changes nothing they see.
fn default_resource<K>() -> Arc<ApiResource>
where
    K: Resource + 'static,
    K::DynamicType: Default,
{
    type Resources = std::sync::Mutex<std::collections::BTreeMap<std::any::TypeId, Arc<ApiResource>>>;
    static RESOURCES: std::sync::OnceLock<Resources> = std::sync::OnceLock::new();
    let resources = RESOURCES.get_or_init(Resources::default);
    let mut resources = resources.lock().unwrap_or_else(|e| e.into_inner());
    resources
        .entry(std::any::TypeId::of::<K>())
        .or_insert_with(|| Arc::new(ApiResource::erase::<K>(&K::DynamicType::default())))
        .clone()
}

impl<K: Resource> Api<K> {
    /// All objects, for a type known at run time (`DynamicObject` with an `ApiResource`).
    pub fn all_with(client: Client, dyntype: &K::DynamicType) -> Self {
        Api {
            client,
            resource: Arc::new(ApiResource::erase::<K>(dyntype)),
            namespace: None,
            kind: PhantomData,
        }
    }
    /// The objects in namespace `ns`, for a type known at run time.
    pub fn namespaced_with(client: Client, ns: &str, dyntype: &K::DynamicType) -> Self {
        Api {
            client,
            resource: Arc::new(ApiResource::erase::<K>(dyntype)),
            namespace: Some(ns.to_owned()),
            kind: PhantomData,
        }
    }
    /// The objects in the client's default namespace, for a type known at run time.
    pub fn default_namespaced_with(client: Client, dyntype: &K::DynamicType) -> Self {
        let ns = client.default_namespace().to_owned();
        Self::namespaced_with(client, &ns, dyntype)
    }
    /// The client behind this API.
    pub fn into_client(self) -> Client {
        self.client
    }
    /// The namespace, if namespaced.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    /// The resource this API addresses.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }
    /// The same API in namespace `ns` (used by controllers to reach an object's namespace).
    pub(crate) fn in_namespace(&self, ns: Option<&str>) -> Self {
        self.with_parts(ns.map(str::to_owned))
    }
    /// The same API with metadata-only reads, as kube's `Api<PartialObjectMeta<K>>`.
    pub(crate) fn metadata(&self) -> Api<PartialObjectMeta<K>> {
        self.with_parts(self.namespace.clone())
    }
    /// This API's client and resource, for objects of type `L` in `namespace`.
    fn with_parts<L: Resource>(&self, namespace: Option<String>) -> Api<L> {
        Api { client: self.client.clone(), resource: self.resource.clone(), namespace, kind: PhantomData }
    }
}

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    async fn send(&self, request: Request) -> Result<Response> {
        Ok(transport::call(&self.client.world, &self.client.cluster, &self.client.node, request).await?)
    }

    fn ns(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The answer's object; a `read` (a verb that kube makes metadata-only for
    /// `Api<PartialObjectMeta<_>>`: get, list, patch and watch) shows it through [`typed_view`].
    fn object_as(&self, response: Response, read: bool) -> Result<K> {
        let Some(object) = response.object() else { return Err(unexpected_answer()) };
        let decoded = typed_in::<K>(&self.client.world, object, read);
        decoded.map(Arc::unwrap_or_clone).map_err(Error::SerdeError)
    }

    fn object(&self, response: Response) -> Result<K> {
        self.object_as(response, false)
    }

    /// The answer's list; a `read` as in [`Api::object_as`].
    fn list_as(&self, response: Response, read: bool) -> Result<ObjectList<K>> {
        let Response::List(list) = response else { return Err(unexpected_answer()) };
        let items = list
            .items
            .iter()
            .map(|o| typed_in::<K>(&self.client.world, o, read).map(Arc::unwrap_or_clone))
            .collect::<serde_json::Result<Vec<K>>>();
        // A metadata-only list is kube-apiserver's `PartialObjectMetadataList`.
        let types = if read && K::metadata_api() {
            TypeMeta {
                api_version: "meta.k8s.io/v1".to_owned(),
                kind: "PartialObjectMetadataList".to_owned(),
            }
        } else {
            TypeMeta { api_version: "v1".to_owned(), kind: "List".to_owned() }
        };
        Ok(ObjectList {
            types,
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
                resource_version: Some(list.resource_version),
                continue_: list.continue_token,
                remaining_item_count: list.remaining_item_count,
                // `selfLink` is never set, and `shardInfo` (new in 1.37) neither.
                ..Default::default()
            },
            items: items.map_err(Error::SerdeError)?,
        })
    }

    /// GET one object: 404 NotFound if it does not exist.
    pub async fn get(&self, name: &str) -> Result<K> {
        self.get_with(name, &GetParams::default()).await
    }
    /// GET one object, `None` on 404.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        found(self.get(name).await)
    }
    /// GET one object with explicit params (`GetParams::any()` may read a stale cache).
    pub async fn get_with(&self, name: &str, params: &GetParams) -> Result<K> {
        let request = Request::get(&self.resource, self.ns(), name, params.clone());
        self.object_as(self.send(request).await?, true)
    }
    /// GET `/status`.
    pub async fn get_status(&self, name: &str) -> Result<K> {
        let request = Request::get(&self.resource, self.ns(), name, GetParams::default())
            .with_subresource(Subresource::Status);
        self.object(self.send(request).await?)
    }
    /// LIST.
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let request = Request::list(&self.resource, self.ns(), params.clone());
        self.list_as(self.send(request).await?, true)
    }
    /// CREATE.
    pub async fn create(&self, params: &PostParams, data: &K) -> Result<K> {
        let object = to_dynamic(data).map_err(Error::SerdeError)?;
        let request = Request::create(&self.resource, self.ns(), object, params.clone());
        self.object(self.send(request).await?)
    }
    /// REPLACE (PUT): 409 Conflict if `data`'s resourceVersion is stale.
    pub async fn replace(&self, name: &str, params: &PostParams, data: &K) -> Result<K> {
        let object = to_dynamic(data).map_err(Error::SerdeError)?;
        let request = Request::update(&self.resource, self.ns(), name, object, params.clone());
        self.object(self.send(request).await?)
    }
    /// REPLACE `/status` with `data` (kube 5 takes the object; earlier kubes took its JSON bytes).
    pub async fn replace_status(&self, name: &str, params: &PostParams, data: &K) -> Result<K> {
        let object = to_dynamic(data).map_err(Error::SerdeError)?;
        let request = Request::update(&self.resource, self.ns(), name, object, params.clone())
            .with_subresource(Subresource::Status);
        self.object(self.send(request).await?)
    }
    /// PATCH (merge, JSON, strategic or apply).
    pub async fn patch<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let request = Request::patch(&self.resource, self.ns(), name, to_value_patch(patch)?, params.clone());
        self.object_as(self.send(request).await?, true)
    }
    /// PATCH `/status`.
    pub async fn patch_status<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let request = Request::patch(&self.resource, self.ns(), name, to_value_patch(patch)?, params.clone())
            .with_subresource(Subresource::Status);
        self.object(self.send(request).await?)
    }
    /// DELETE: `Left(object)` if deletion started (finalizers pending), `Right(status)` if the
    /// object is gone.
    pub async fn delete(&self, name: &str, params: &DeleteParams) -> Result<Either<K, Status>> {
        let request = Request::delete(&self.resource, self.ns(), name, params.clone());
        match self.send(request).await? {
            Response::Deleted { status, .. } => Ok(Either::Right(status)),
            other => self.object(other).map(Either::Left),
        }
    }
    /// DELETE a collection: the objects whose deletion started or finished.
    pub async fn delete_collection(
        &self,
        params: &DeleteParams,
        list: &ListParams,
    ) -> Result<Either<ObjectList<K>, Status>> {
        let request = Request::delete_collection(&self.resource, self.ns(), list.clone(), params.clone());
        self.list_as(self.send(request).await?, false).map(Either::Left)
    }
}

/// Metadata-only reads, as kube's: the same requests through `Api<PartialObjectMeta<K>>`, whose
/// objects are their metadata alone, typed `meta.k8s.io/v1` `PartialObjectMetadata` (lists:
/// `PartialObjectMetadataList`). The watch is [`Api::watch_metadata`].
impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// GET one object's metadata: 404 NotFound if it does not exist.
    pub async fn get_metadata(&self, name: &str) -> Result<PartialObjectMeta<K>> {
        self.metadata().get(name).await
    }
    /// GET one object's metadata with explicit params.
    pub async fn get_metadata_with(&self, name: &str, params: &GetParams) -> Result<PartialObjectMeta<K>> {
        self.metadata().get_with(name, params).await
    }
    /// GET one object's metadata, `None` on 404.
    pub async fn get_metadata_opt(&self, name: &str) -> Result<Option<PartialObjectMeta<K>>> {
        self.metadata().get_opt(name).await
    }
    /// GET one object's metadata with explicit params, `None` on 404.
    pub async fn get_metadata_opt_with(
        &self,
        name: &str,
        params: &GetParams,
    ) -> Result<Option<PartialObjectMeta<K>>> {
        found(self.metadata().get_with(name, params).await)
    }
    /// LIST the objects' metadata.
    pub async fn list_metadata(&self, params: &ListParams) -> Result<ObjectList<PartialObjectMeta<K>>> {
        self.metadata().list(params).await
    }
    /// PATCH, answered with the object's metadata (an apply patch carries `K`'s own type, as
    /// `ObjectMeta::into_request_partial::<K>()` builds it).
    pub async fn patch_metadata<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<PartialObjectMeta<K>> {
        self.metadata().patch(name, params, patch).await
    }
}

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    fn scale_of(response: Response) -> Result<Scale> {
        match response.object() {
            Some(object) => from_dynamic(object).map_err(Error::SerdeError),
            None => Err(unexpected_answer()),
        }
    }
    /// GET `/scale`.
    pub async fn get_scale(&self, name: &str) -> Result<Scale> {
        let request = Request::get(&self.resource, self.ns(), name, GetParams::default())
            .with_subresource(Subresource::Scale);
        Self::scale_of(self.send(request).await?)
    }
    /// PATCH `/scale`.
    pub async fn patch_scale<P: Serialize + fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<Scale> {
        let request = Request::patch(&self.resource, self.ns(), name, to_value_patch(patch)?, params.clone())
            .with_subresource(Subresource::Scale);
        Self::scale_of(self.send(request).await?)
    }
    /// REPLACE `/scale` with `data` (kube 5 takes the `Scale`; earlier kubes took its JSON bytes).
    pub async fn replace_scale(&self, name: &str, params: &PostParams, data: &Scale) -> Result<Scale> {
        let object = any_to_dynamic(data)?;
        let request = Request::update(&self.resource, self.ns(), name, object, params.clone())
            .with_subresource(Subresource::Scale);
        Self::scale_of(self.send(request).await?)
    }
}

/// kube's methods for any subresource by name. The model serves `status`, `scale` (of the kinds
/// that have them), a Namespace's `finalize` (PUT only), a Pod's `ephemeralcontainers` and `resize` (GET,
/// PUT, PATCH), a Pod's `eviction` and `binding` and a ServiceAccount's `token` (POST only); a
/// request naming them goes through the transport as every call does, and the server answers as
/// kube-apiserver (404 NotFound for a kind without that subresource, 405 MethodNotAllowed for a
/// verb it does not take). Any other name (`approval`,
/// `attach`...) answers 404 NotFound without a request: the model does not serve it, and says
/// so in the message.
impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    fn served_subresource(&self, subresource_name: &str) -> Result<Subresource> {
        match subresource_name {
            "status" => Ok(Subresource::Status),
            "scale" => Ok(Subresource::Scale),
            "finalize" => Ok(Subresource::Finalize),
            "eviction" => Ok(Subresource::Eviction),
            "token" => Ok(Subresource::Token),
            "binding" => Ok(Subresource::Binding),
            "ephemeralcontainers" => Ok(Subresource::EphemeralContainers),
            "resize" => Ok(Subresource::Resize),
            other => {
                let mut status = model_apiserver::errors::resource_not_found();
                status.message = format!(
                    "{} ({}/{other} is not a subresource kube-sim serves: status, scale, a pod's \
                     ephemeralcontainers, resize, eviction and binding, a service account's token and a \
                     namespace's finalize)",
                    status.message, self.resource.plural
                );
                Err(Error::from(status))
            }
        }
    }

    /// GET a subresource, decoded as `K` (as kube's: a `scale` answer is a `Scale`, which decodes
    /// only as a `DynamicObject`; [`Api::get_scale`] reads it typed).
    pub async fn get_subresource(&self, subresource_name: &str, name: &str) -> Result<K> {
        let subresource = self.served_subresource(subresource_name)?;
        let request =
            Request::get(&self.resource, self.ns(), name, GetParams::default()).with_subresource(subresource);
        self.object(self.send(request).await?)
    }

    /// POST to a subresource: a Pod's `eviction` and `binding` (answered with a `Success` Status,
    /// as kube decodes it into `T`), a ServiceAccount's `token` (the TokenRequest); `status`,
    /// `scale` and `finalize` answer 405 MethodNotAllowed, as kube-apiserver's.
    pub async fn create_subresource<I, T>(
        &self,
        subresource_name: &str,
        name: &str,
        params: &PostParams,
        data: &I,
    ) -> Result<T>
    where
        I: Serialize,
        T: DeserializeOwned,
    {
        let object = any_to_dynamic(data)?;
        let subresource = self.served_subresource(subresource_name)?;
        let request =
            Request::create_subresource(&self.resource, self.ns(), name, subresource, object, params.clone());
        let answer = match self.send(request).await? {
            Response::Deleted { status, .. } | Response::Completed { status, .. } => status_value(&status),
            other => match other.object() {
                Some(object) => serde_json::to_value(&**object).map_err(Error::SerdeError)?,
                None => return Err(unexpected_answer()),
            },
        };
        serde_json::from_value(answer).map_err(Error::SerdeError)
    }

    /// PATCH a subresource, answered as `K`.
    pub async fn patch_subresource<P: Serialize + fmt::Debug>(
        &self,
        subresource_name: &str,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K> {
        let subresource = self.served_subresource(subresource_name)?;
        let request = Request::patch(&self.resource, self.ns(), name, to_value_patch(patch)?, params.clone())
            .with_subresource(subresource);
        self.object(self.send(request).await?)
    }

    /// REPLACE (PUT) a subresource with `data`, answered as `K`.
    pub async fn replace_subresource<I: Serialize>(
        &self,
        subresource_name: &str,
        name: &str,
        params: &PostParams,
        data: &I,
    ) -> Result<K> {
        let subresource = self.served_subresource(subresource_name)?;
        let object = any_to_dynamic(data)?;
        let request = Request::update(&self.resource, self.ns(), name, object, params.clone())
            .with_subresource(subresource);
        self.object(self.send(request).await?)
    }
}

/// Marker of the kinds that can be evicted, as kube's `kube::api::Evict`: Pods.
pub trait Evict {}

impl Evict for k8s_openapi::api::core::v1::Pod {}

/// kube's eviction of a Pod (`POST pods/{name}/eviction`): the server deletes it if its
/// PodDisruptionBudget allows (429 TooManyRequests otherwise, 500 when two budgets select it),
/// answering a `Success` Status with code 201.
///
/// The body is kube 5's, byte for byte: `metadata.name` and the delete options under
/// `delete_options`, a field the Eviction type does not have, so a real kube-apiserver (and the
/// model) drops them with an `unknown field "delete_options"` warning and deletes the pod with
/// the default options. `post_options.dry_run` does reach the server (the query string).
impl<K> Api<K>
where
    K: Evict + Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// Evict the pod `name` (see the impl).
    pub async fn evict(&self, name: &str, ep: &EvictParams) -> Result<Status> {
        let body = serde_json::json!({
            "delete_options": ep.delete_options,
            "metadata": { "name": name },
        });
        let object = serde_json::from_value(body).map_err(Error::SerdeError)?;
        let request = Request::create_subresource(
            &self.resource,
            self.ns(),
            name,
            Subresource::Eviction,
            object,
            ep.post_options.clone(),
        );
        match self.send(request).await? {
            Response::Deleted { status, .. } => Ok(status),
            _ => Err(unexpected_answer()),
        }
    }
}

/// Marker of the kinds that have logs, as kube's `kube::api::Log`: Pods.
pub trait Log {}

impl Log for k8s_openapi::api::core::v1::Pod {}

/// kube's `pods/log` reads. kube-sim runs no container processes: a container's log is the few
/// synthetic lines `model_apiserver::pod_logs` renders from its Pod's container statuses (when
/// the instance started, from which image, when its Pod's deletion stopped it, how it exited),
/// with kube-apiserver's and the kubelet's answers: 422 for invalid options, 404 for a missing
/// Pod, 400 when no container or an unknown one is named for a Pod of several, or when the
/// container is still waiting to start (`container "c" in pod "p" is waiting to start:
/// ContainerCreating`), and an empty log for a Pod bound to no node. The Pod is read with a GET
/// through the transport (faults apply to it as to any call, and the trace shows a `get` of the
/// Pod). `follow` answers the lines written so far and ends, as a followed log of a container
/// that stops.
impl<K> Api<K>
where
    K: Log + Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    /// The log of a container of the Pod `name`, as text.
    pub async fn logs(&self, name: &str, lp: &LogParams) -> Result<String> {
        let options = model_apiserver::pod_logs::LogOptions {
            container: lp.container.clone(),
            follow: lp.follow,
            previous: lp.previous,
            timestamps: lp.timestamps,
            tail_lines: lp.tail_lines,
            limit_bytes: lp.limit_bytes,
            since_seconds: lp.since_seconds,
            since_time: lp.since_time,
            stream: None,
        };
        options.validate(name).map_err(Error::from)?;
        let request = Request::get(&self.resource, self.ns(), name, GetParams::default());
        let response = self.send(request).await?;
        let object = response.object().ok_or_else(unexpected_answer)?;
        let pod: k8s_openapi::api::core::v1::Pod = from_dynamic(object).map_err(Error::SerdeError)?;
        model_apiserver::pod_logs::read(&pod, &options, crate::ambient::time::now()).map_err(Error::from)
    }

    /// [`Api::logs`] as an `AsyncBufRead`, as kube's `log_stream`.
    pub async fn log_stream(
        &self,
        name: &str,
        lp: &LogParams,
    ) -> Result<impl futures::AsyncBufRead + use<K>> {
        let text = self.logs(name, lp).await?;
        Ok(futures::io::Cursor::new(text.into_bytes()))
    }
}

/// kube's `restart` of a Deployment, DaemonSet, StatefulSet or ReplicaSet (kube-core's `Restart`
/// kinds), as `kubectl rollout restart`: a merge patch of the pod template's
/// `kube.kubernetes.io/restartedAt` annotation, stamped with the run's virtual clock (kube stamps
/// the real one), so the controller rolls the Pods out again.
impl<K> Api<K>
where
    K: kube_core::util::Restart
        + Resource
        + Clone
        + DeserializeOwned
        + Serialize
        + fmt::Debug
        + Send
        + Sync
        + 'static,
{
    /// Restart the object's Pods (see the impl).
    pub async fn restart(&self, name: &str) -> Result<K> {
        let now = self.client.world.with(|w| w.now());
        let patch = serde_json::json!({ "spec": { "template": { "metadata": { "annotations": {
            "kube.kubernetes.io/restartedAt": now.to_string() } } } } });
        self.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await
    }
}

/// kube's `cordon` and `uncordon` of a Node: a strategic merge patch of `spec.unschedulable`.
impl Api<k8s_openapi::api::core::v1::Node> {
    /// Mark the Node unschedulable.
    pub async fn cordon(&self, name: &str) -> Result<k8s_openapi::api::core::v1::Node> {
        self.set_unschedulable(name, true).await
    }
    /// Mark the Node schedulable again.
    pub async fn uncordon(&self, name: &str) -> Result<k8s_openapi::api::core::v1::Node> {
        self.set_unschedulable(name, false).await
    }
    async fn set_unschedulable(&self, name: &str, value: bool) -> Result<k8s_openapi::api::core::v1::Node> {
        let patch = Patch::Strategic(serde_json::json!({ "spec": { "unschedulable": value } }));
        self.patch(name, &PatchParams::default(), &patch).await
    }
}

/// kube's `create_token_request` of a ServiceAccount: the model's `token` subresource
/// (`model_apiserver::token`) answers with a JWT-shaped token whose claims are the real ones
/// (subject, audiences, expiry on the virtual clock, a bound object) and whose signature is a
/// placeholder: nothing in a simulated cluster checks it.
impl Api<k8s_openapi::api::core::v1::ServiceAccount> {
    /// POST `serviceaccounts/{name}/token`.
    pub async fn create_token_request(
        &self,
        name: &str,
        params: &PostParams,
        token_request: &k8s_openapi::api::authentication::v1::TokenRequest,
    ) -> Result<k8s_openapi::api::authentication::v1::TokenRequest> {
        self.create_subresource("token", name, params, token_request).await
    }
}

/// Any serializable body as the dynamic object a request carries.
fn any_to_dynamic<I: Serialize>(data: &I) -> Result<DynamicObject> {
    serde_json::to_value(data).and_then(serde_json::from_value).map_err(Error::SerdeError)
}

/// A read's answer with 404 NotFound as `None`, as kube's `get_opt`.
fn found<T>(read: Result<T>) -> Result<Option<T>> {
    match read {
        Ok(object) => Ok(Some(object)),
        Err(Error::Api(status)) if status.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// A `Patch<P>` with its payload as JSON, as the model server takes it.
fn to_value_patch<P: Serialize>(patch: &Patch<P>) -> Result<Patch<serde_json::Value>> {
    let value = |p: &P| serde_json::to_value(p).map_err(Error::SerdeError);
    Ok(match patch {
        Patch::Apply(p) => Patch::Apply(value(p)?),
        Patch::Merge(p) => Patch::Merge(value(p)?),
        Patch::Strategic(p) => Patch::Strategic(value(p)?),
        Patch::Json(p) => Patch::Json(p.clone()),
        _ => {
            return Err(Error::from(model_apiserver::errors::unsupported_media_type(
                "unsupported patch type",
            )));
        }
    })
}

/// The server answered with a shape the verb never yields: a bug of the model, reported as the
/// real server reports its own bugs.
/// A `Status` as kube-apiserver sends it (with `kind`, `apiVersion` and empty `metadata`), the
/// JSON a kube client decodes.
fn status_value(status: &Status) -> serde_json::Value {
    let mut value = serde_json::to_value(status).unwrap_or_else(|_| serde_json::json!({}));
    if let serde_json::Value::Object(m) = &mut value {
        m.insert("kind".to_owned(), "Status".into());
        m.insert("apiVersion".to_owned(), "v1".into());
        m.entry("metadata").or_insert_with(|| serde_json::json!({}));
    }
    value
}

fn unexpected_answer() -> Error {
    Error::from(model_apiserver::errors::internal_error("unexpected response shape for this verb"))
}
