//! One HTTP request in, one reply out: routing, decoding, the model call, encoding.
//!
//! Every failure is a `Status` reply with the real code; nothing a client sends panics here
//! (the model's own panics are caught in [`Live::handle`]).

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::{
    Method,
    body::Incoming,
    header::{
        ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue, IF_NONE_MATCH, USER_AGENT, VARY,
    },
};
use kube_core::{DynamicObject, Status, params::Patch};
use model_apiserver::{Request, ResourceType, Response, Subresource, errors};
use serde_json::json;

use super::{
    Limits, authorization, decode, discovery,
    http::{self, Reply},
    live::{Live, Model},
    logs, openapi, protobuf,
    query::Query,
    route::{self, ResourcePath, Route},
    table, watch,
};

/// The largest request body accepted (kube-apiserver's limit is 3 MiB).
pub const BODY_BYTES_MAX: usize = 3 * 1024 * 1024;

/// Serve one request.
pub async fn serve(
    live: Live,
    server_address: Arc<str>,
    limits: Arc<Limits>,
    request: hyper::Request<Incoming>,
) -> Reply {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, BODY_BYTES_MAX).collect().await {
        Ok(collected) => collected.to_bytes(),
        // Only a body over the limit is 413; one cut short or badly chunked is the client's
        // malformed request, 400.
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return http::status(
                &Status::failure(
                    &format!("the request body is larger than {BODY_BYTES_MAX} bytes"),
                    "RequestEntityTooLarge",
                )
                .with_code(413),
            );
        }
        Err(e) => return http::status(&errors::bad_request(&format!("reading the request body: {e}"))),
    };
    let query = Query::parse(parts.uri.query());
    let route = route::parse(parts.uri.path());
    // Discovery, OpenAPI, /version and the health checks are read only: GET (and HEAD) alone.
    if !matches!(route, Route::Resource(_) | Route::Unknown)
        && !matches!(parts.method, Method::GET | Method::HEAD)
    {
        return http::status(&errors::method_not_allowed(&format!(
            "the server does not allow {} on {}",
            parts.method,
            parts.uri.path()
        )));
    }
    match route {
        Route::Version => http::json(200, &discovery::version()),
        Route::Health => http::with_type(200, http::full("ok"), "text/plain"),
        Route::CoreVersions => discovery_root(&parts.headers, &live, true, || {
            http::json(200, &discovery::core_versions(&server_address))
        }),
        Route::Groups => discovery_root(&parts.headers, &live, false, || {
            http::json(200, &discovery::group_list(live.lock().server.types()))
        }),
        Route::Group(g) => found(discovery::group(live.lock().server.types(), &g)),
        Route::Resources { group, version } => {
            found(discovery::resource_list(live.lock().server.types(), &group, &version))
        }
        Route::OpenApiV2 => {
            // Built outside the model's lock: the document is large.
            let types = live.lock().server.types().clone();
            openapi::v2(&types, &parts.headers)
        }
        Route::OpenApiV3Index => http::json(200, &openapi::v3_index(live.lock().server.types())),
        Route::OpenApiV3 { group, version } => {
            found(openapi::v3_group_version(live.lock().server.types(), &group, &version))
        }
        Route::Resource(path) => {
            // Decoding and the model call run on tokio's blocking pool: a slow body or a big list
            // never holds an async worker, so `/version` and other connections keep answering.
            let call = Call { live, method: parts.method, headers: parts.headers, query, body, limits };
            tokio::task::spawn_blocking(move || call.resource(path))
                .await
                .unwrap_or_else(|_| http::status(&errors::internal_error("serving this request panicked")))
        }
        Route::Unknown => page_not_found(),
    }
}

/// `/api` (`core`) or `/apis`: the aggregated document when the `Accept` header asks for it (with
/// the `ETag`, `Vary: Accept` and `Cache-Control: public` kube-apiserver sends, and 304 Not
/// Modified for a matching `If-None-Match`), the `legacy` answer otherwise.
fn discovery_root(headers: &HeaderMap, live: &Live, core: bool, legacy: impl FnOnce() -> Reply) -> Reply {
    let discovery::Form::Aggregated(version) = discovery::negotiate(accept(headers)) else { return legacy() };
    let doc = discovery::aggregated(live.lock().server.types(), core, version);
    let etag = discovery::etag(&doc);
    let cached = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
    let content_type = discovery::aggregated_content_type(version);
    let mut reply = if cached {
        http::with_type(304, http::full(Bytes::new()), content_type)
    } else {
        match serde_json::to_vec(&doc) {
            Ok(bytes) => http::with_type(200, http::full(bytes), content_type),
            Err(e) => return http::status(&errors::internal_error(&format!("encoding discovery: {e}"))),
        }
    };
    let headers = reply.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, value);
    }
    headers.insert(VARY, HeaderValue::from_static("Accept"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("public"));
    reply
}

/// 200 with the document, or the plain 404 of a group or version that is not served.
fn found(doc: Option<impl serde::Serialize>) -> Reply {
    match doc {
        Some(doc) => http::json(200, &doc),
        None => page_not_found(),
    }
}

/// A path no API group serves (an unknown group or version, or no API path at all): no group's
/// handler takes it, so kube-apiserver's last handler, Go's `http.NotFound`, answers with plain
/// text, not a Status (recorded: `GET /apis/nosuch.example.com/v1/...`).
fn page_not_found() -> Reply {
    http::with_type(404, http::full("404 page not found\n"), "text/plain; charset=utf-8")
}

/// 404 for a path nothing is served at, as kube-apiserver words it.
fn not_found() -> Status {
    model_apiserver::errors::resource_not_found()
}

/// A request to a resource path, decoded.
struct Call {
    live: Live,
    method: Method,
    headers: HeaderMap,
    query: Query,
    body: Bytes,
    limits: Arc<Limits>,
}

impl Call {
    fn resource(self, path: ResourcePath) -> Reply {
        if path.namespace.is_none() && authorization::serves(&path.group, &path.version, &path.plural) {
            let (method, headers, body) = (&self.method, &self.headers, &self.body);
            return authorization::serve(method, &path.plural, path.name.as_deref(), headers, body);
        }
        let ty = self.live.lock().server.types().get(&path.group, &path.version, &path.plural).cloned();
        let Some(ty) = ty else {
            // A served group version answers for its unknown resources with a Status.
            let served = self.live.lock().server.types().serves_group_version(&path.group, &path.version);
            return if served { http::status(&not_found()) } else { page_not_found() };
        };
        let subresource = match path.subresource.as_deref() {
            None => None,
            Some("status") => Some(Subresource::Status),
            Some("scale") => Some(Subresource::Scale),
            Some("eviction") => Some(Subresource::Eviction),
            Some("token") => Some(Subresource::Token),
            Some("binding") => Some(Subresource::Binding),
            Some("ephemeralcontainers") => Some(Subresource::EphemeralContainers),
            Some("resize") => Some(Subresource::Resize),
            Some("log") if logs::serves(&ty.api.group, &ty.api.plural) => return self.log(&ty, &path),
            Some(_) => return http::status(&not_found()),
        };
        let target = Target { ty, namespace: path.namespace, subresource };
        if let Some(message) = self.live.read_only_message()
            && self.method != Method::GET
        {
            return http::status(&errors::method_not_allowed(message));
        }
        let answer = match (&self.method, path.name) {
            (&Method::GET, None) if subresource.is_none() => match self.query.is_watch() {
                Ok(true) => return self.watch(&target),
                Ok(false) => self.list(&target),
                Err(e) => Err(e),
            },
            (&Method::GET, Some(name)) => self.get(&target, &name),
            (&Method::POST, None) if subresource.is_none() => self.create(&target),
            (&Method::POST, Some(name)) if subresource == Some(Subresource::Eviction) => {
                self.evict(&target, &name)
            }
            (&Method::POST, Some(name)) if subresource == Some(Subresource::Token) => {
                self.token(&target, &name)
            }
            (&Method::POST, Some(name)) if subresource == Some(Subresource::Binding) => {
                self.bind(&target, &name)
            }
            (&Method::PUT, Some(name)) => self.update(&target, &name),
            (&Method::PATCH, Some(name)) => self.patch(&target, &name),
            (&Method::DELETE, Some(name)) if subresource.is_none() => self.delete(&target, &name),
            (&Method::DELETE, None) if subresource.is_none() => self.delete_collection(&target),
            _ => Err(errors::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )),
        };
        match answer {
            Ok(reply) => reply,
            Err(status) => http::status(&status),
        }
    }

    /// `GET .../pods/{name}/log` ([`logs`]); the only verb of the subresource.
    fn log(&self, ty: &Arc<ResourceType>, path: &ResourcePath) -> Reply {
        let (Some(namespace), Some(name)) = (path.namespace.as_deref(), path.name.as_deref()) else {
            return http::status(&not_found());
        };
        if self.method != Method::GET {
            return http::status(&errors::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        logs::serve(&self.live, ty, namespace, name, &self.query)
            .unwrap_or_else(|status| http::status(&status))
    }

    fn get(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let request = t.with_sub(Request::get(&t.ty.api, t.ns(), name, self.query.get_params()));
        let answer = self.live.handle(request)?;
        if t.subresource.is_none()
            && table::wanted(&self.headers)
            && let Some(object) = answer.object()
        {
            // `kubectl get <kind> <name>` asks for a one-row Table too.
            let metadata = json!({"resourceVersion": object.metadata.resource_version});
            let crd = self.crd_of(&t.ty);
            let options = self.table_options(t, crd.as_deref())?;
            let table = table::table(&options, std::slice::from_ref(object), metadata, self.live.now());
            return Ok(http::json(200, &table));
        }
        Ok(self.object_reply(t, 200, &answer))
    }

    fn list(&self, t: &Target) -> Result<Reply, Status> {
        let params = self.query.list_params()?;
        let answer = self.live.handle(Request::list(&t.ty.api, t.ns(), params))?;
        let Response::List(list) = answer else { return Err(unexpected()) };
        let mut metadata = json!({"resourceVersion": list.resource_version});
        if let Some(token) = &list.continue_token {
            metadata["continue"] = json!(token);
        }
        if let Some(remaining) = list.remaining_item_count {
            metadata["remainingItemCount"] = json!(remaining);
        }
        if table::wanted(&self.headers) {
            let crd = self.crd_of(&t.ty);
            let options = self.table_options(t, crd.as_deref())?;
            return Ok(http::json(200, &table::table(&options, &list.items, metadata, self.live.now())));
        }
        Ok(http::json(200, &list_body(t, &list.items, metadata)))
    }

    /// How to make the Table a request asked for (its `includeObject` is checked here).
    fn table_options<'a>(
        &self,
        t: &'a Target,
        crd: Option<&'a DynamicObject>,
    ) -> Result<table::Options<'a>, Status> {
        let include = table::Include::from_query(self.query.get("includeObject"))?;
        Ok(table::Options { ty: &t.ty, crd, include, headers: true })
    }

    /// The CustomResourceDefinition serving a custom resource type, whose printer columns its
    /// tables show; `None` for a built-in kind or when it is gone.
    fn crd_of(&self, ty: &ResourceType) -> Option<Arc<DynamicObject>> {
        if !ty.custom {
            return None;
        }
        let crds = self
            .live
            .lock()
            .server
            .types()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")?
            .api
            .clone();
        let name = format!("{}.{}", ty.api.plural, ty.api.group);
        self.live.handle(Request::get(&crds, None, &name, Default::default())).ok()?.object().cloned()
    }

    fn watch(&self, t: &Target) -> Reply {
        let params = match self.query.watch_params() {
            Ok(params) => params,
            Err(e) => return http::status(&e),
        };
        let rv = self.query.get("resourceVersion").unwrap_or("").to_owned();
        let table = if table::wanted(&self.headers) {
            let include = match table::Include::from_query(self.query.get("includeObject")) {
                Ok(include) => include,
                Err(e) => return http::status(&e),
            };
            Some(watch::TableView { ty: t.ty.clone(), crd: self.crd_of(&t.ty), include })
        } else {
            None
        };
        watch::start(
            self.live.clone(),
            t.ty.api.clone(),
            t.namespace.clone(),
            rv,
            params,
            table,
            &self.limits,
        )
    }

    fn create(&self, t: &Target) -> Result<Reply, Status> {
        let mut params = self.query.post_params()?;
        let directive = self.query.field_validation("CreateOptions")?;
        params.field_manager = Some(self.manager(params.field_manager.as_deref()));
        let object = decode_object(&self.headers, &self.body, &t.ty.api.kind)?;
        let request = with_directive(Request::create(&t.ty.api, t.ns(), object, params), directive);
        let (answer, warnings) = self.live.handle_with_warnings(request);
        Ok(with_warnings(self.object_reply(t, 201, &answer?), &warnings))
    }

    /// POST `pods/{name}/eviction`: a `policy/v1` (or `v1beta1`) Eviction. The model answers a
    /// successful one with the `Success` Status the create handler completes with code 201,
    /// which is also the HTTP code; a refusal is its Status (429 with the budget's cause, 500 for
    /// two budgets...).
    fn evict(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let params = self.query.post_params()?;
        let directive = self.query.field_validation("CreateOptions")?;
        let object = decode_object(&self.headers, &self.body, "Eviction")?;
        let request =
            Request::create_subresource(&t.ty.api, t.ns(), name, Subresource::Eviction, object, params);
        let (answer, warnings) = self.live.handle_with_warnings(with_directive(request, directive));
        match answer? {
            Response::Deleted { status, .. } => {
                let code = if status.code == 0 { 201 } else { status.code };
                Ok(with_warnings(http::json(code, &http::status_json(&status)), &warnings))
            }
            _ => Err(unexpected()),
        }
    }

    /// POST `pods/{name}/binding`: a `v1` Binding (`model_apiserver::binding`), answered with the
    /// `Success` Status and code 201, as the create handler completes it.
    fn bind(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let params = self.query.post_params()?;
        let directive = self.query.field_validation("CreateOptions")?;
        let object = decode_object(&self.headers, &self.body, "Binding")?;
        let request =
            Request::create_subresource(&t.ty.api, t.ns(), name, Subresource::Binding, object, params);
        let (answer, warnings) = self.live.handle_with_warnings(with_directive(request, directive));
        match answer? {
            Response::Completed { status, .. } => {
                Ok(with_warnings(http::json(201, &http::status_json(&status)), &warnings))
            }
            _ => Err(unexpected()),
        }
    }

    /// POST `serviceaccounts/{name}/token`: an `authentication.k8s.io/v1` TokenRequest, answered
    /// 201 with the token (`model_apiserver::token`).
    fn token(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let params = self.query.post_params()?;
        let object = super::token::decode(&self.headers, &self.body)?;
        let request =
            Request::create_subresource(&t.ty.api, t.ns(), name, Subresource::Token, object, params);
        let (answer, warnings) = self.live.handle_with_warnings(request);
        match answer?.object() {
            Some(token) => Ok(with_warnings(http::json(201, &**token), &warnings)),
            None => Err(unexpected()),
        }
    }

    fn update(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let mut params = self.query.post_params()?;
        let directive = self.query.field_validation("UpdateOptions")?;
        params.field_manager = Some(self.manager(params.field_manager.as_deref()));
        let kind = if t.subresource == Some(Subresource::Scale) { "Scale" } else { t.ty.api.kind.as_str() };
        let object = decode_object(&self.headers, &self.body, kind)?;
        let request = t.with_sub(Request::update(&t.ty.api, t.ns(), name, object, params));
        let (answer, warnings) = self.live.handle_with_warnings(with_directive(request, directive));
        Ok(with_warnings(self.object_reply(t, 200, &answer?), &warnings))
    }

    /// PATCH, by content type. Strategic merge patch and server-side apply are the model's own
    /// (`model_apiserver::strategic`, `model_apiserver::apply`).
    fn patch(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let mut params = self.query.patch_params()?;
        let content_type = self.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let patch = match decode::media_type(content_type).as_str() {
            "application/json-patch+json" => {
                Patch::Json(decode::json_patch(decode::json(&self.body, "patch")?)?)
            }
            "application/merge-patch+json" => Patch::Merge(decode::json(&self.body, "patch")?),
            "application/strategic-merge-patch+json" => Patch::Strategic(decode::json(&self.body, "patch")?),
            "application/apply-patch+yaml" => Patch::Apply(decode::yaml(&self.body)?),
            // A built-in kind's PATCH route (go-restful) declares the four types it consumes and
            // answers any other itself, with its own text; the custom resource handler words it
            // as the patch handler does.
            _ if !t.ty.custom => return Err(errors::unsupported_media_type("415: Unsupported Media Type")),
            _ => return Err(decode::unsupported(CUSTOM_PATCH_TYPES)),
        };
        let is_apply = matches!(patch, Patch::Apply(_));
        if !is_apply {
            params.field_manager = Some(self.manager(params.field_manager.as_deref()));
        }
        let request = t.with_sub(Request::patch(&t.ty.api, t.ns(), name, patch, params));
        // An apply to an absent object creates it: 201, as kube-apiserver answers.
        let now = self.live.now();
        let (existed, (answer, warnings)) = self.live.with_model(|m| {
            let existed = !is_apply || current(m, t, name).is_ok_and(|o| o.is_some());
            (existed, m.handle_with_warnings(request, now))
        });
        Ok(with_warnings(self.object_reply(t, if existed { 200 } else { 201 }, &answer?), &warnings))
    }

    fn delete(&self, t: &Target, name: &str) -> Result<Reply, Status> {
        let params = self.query.delete_params(&self.delete_options()?)?;
        let answer = self.live.handle(Request::delete(&t.ty.api, t.ns(), name, params))?;
        match answer {
            Response::Deleted { status, .. } => Ok(http::json(200, &http::status_json(&status))),
            other => Ok(self.object_reply(t, 200, &other)),
        }
    }

    fn delete_collection(&self, t: &Target) -> Result<Reply, Status> {
        let params = self.query.delete_params(&self.delete_options()?)?;
        let list = self.query.list_params()?;
        let answer = self.live.handle(Request::delete_collection(&t.ty.api, t.ns(), list, params))?;
        let Response::List(list) = answer else { return Err(unexpected()) };
        Ok(http::json(200, &list_body(t, &list.items, json!({"resourceVersion": list.resource_version}))))
    }

    /// The DeleteOptions body as JSON: client-go's typed clients send it in protobuf.
    fn delete_options(&self) -> Result<Bytes, Status> {
        if !self.body.starts_with(protobuf::MAGIC) {
            return Ok(self.body.clone());
        }
        let options = protobuf::decode(&self.body)?;
        serde_json::to_vec(&options)
            .map(Bytes::from)
            .map_err(|e| errors::internal_error(&format!("encoding DeleteOptions: {e}")))
    }

    /// An object answer; `/scale` answers are already `autoscaling/v1` Scale objects.
    fn object_reply(&self, _t: &Target, code: u16, answer: &Response) -> Reply {
        match answer.object() {
            Some(object) => http::json(code, &**object),
            None => http::status(&unexpected()),
        }
    }

    /// The field manager of a non-apply write: the `fieldManager` parameter, or the user
    /// agent's product name, as kube-apiserver derives it.
    fn manager(&self, field_manager: Option<&str>) -> String {
        if let Some(m) = field_manager {
            return m.to_owned();
        }
        let agent = self.headers.get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("unknown");
        let mut manager = agent.split('/').next().unwrap_or("unknown").to_owned();
        // managerOrUserAgent cuts a long agent to the longest valid manager.
        if manager.len() > FIELD_MANAGER_BYTES_MAX {
            let mut end = FIELD_MANAGER_BYTES_MAX;
            while !manager.is_char_boundary(end) {
                end -= 1;
            }
            manager.truncate(end);
        }
        manager
    }
}

/// The longest field manager (a longer one named by the client is 422 Invalid).
const FIELD_MANAGER_BYTES_MAX: usize = 128;

/// The request with the `fieldValidation` directive, when one was given.
fn with_directive(request: Request, directive: Option<model_apiserver::FieldValidation>) -> Request {
    match directive {
        Some(d) => request.with_field_validation(d),
        None => request,
    }
}

/// `reply` with a `Warning: 299 - "..."` header for each warning, as kube-apiserver sends them.
fn with_warnings(mut reply: Reply, warnings: &[String]) -> Reply {
    for warning in warnings {
        let header = format!("299 - {}", serde_json::Value::String(warning.clone()));
        if let Ok(value) = hyper::header::HeaderValue::from_str(&header) {
            reply.headers_mut().append(hyper::header::WARNING, value);
        }
    }
    reply
}

/// The resolved type, namespace and subresource of a request.
struct Target {
    ty: Arc<ResourceType>,
    namespace: Option<String>,
    subresource: Option<Subresource>,
}

impl Target {
    fn ns(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn with_sub(&self, request: Request) -> Request {
        match self.subresource {
            Some(sub) => request.with_subresource(sub),
            None => request,
        }
    }
}

/// The stored object, `None` if absent.
fn current(m: &mut Model, t: &Target, name: &str) -> Result<Option<Arc<DynamicObject>>, Status> {
    match m.handle(Request::get(&t.ty.api, t.ns(), name, Default::default())) {
        Ok(answer) => Ok(answer.object().cloned()),
        Err(status) if status.code == 404 => Ok(None),
        Err(status) => Err(status),
    }
}

/// An object body, decoded by its Content-Type (see [`decode`]): JSON, YAML, or Kubernetes
/// protobuf of a built-in kind (see [`protobuf`]). CBOR is not served: it gets 415, and client-go
/// retries in JSON.
pub(crate) fn decode_object(headers: &HeaderMap, body: &[u8], kind: &str) -> Result<DynamicObject, Status> {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let value = decode::object(decode::Media::of_object(content_type)?, body, kind)?;
    if !value.is_object() {
        return Err(errors::bad_request("the object provided is unrecognized: not a JSON object"));
    }
    serde_json::from_value(value)
        .map_err(|e| errors::bad_request(&format!("the object provided is unrecognized: {e}")))
}

/// A list answer (LIST or DELETE of a collection) as kube-apiserver encodes it. A built-in kind's
/// list is typed: its items carry no apiVersion or kind. A custom resource's is unstructured: its
/// items keep theirs, and its metadata always has `continue` (empty on the last page).
fn list_body(t: &Target, items: &[Arc<DynamicObject>], mut metadata: serde_json::Value) -> serde_json::Value {
    let items = if t.ty.custom {
        if let Some(m) = metadata.as_object_mut() {
            m.entry("continue").or_insert_with(|| json!(""));
        }
        json!(items.iter().map(|o| &**o).collect::<Vec<&DynamicObject>>())
    } else {
        json!(items.iter().map(|o| ListItem { metadata: &o.metadata, content: &o.data }).collect::<Vec<_>>())
    };
    let kind = format!("{}List", t.ty.api.kind);
    json!({"apiVersion": t.ty.api.api_version, "kind": kind, "metadata": metadata, "items": items})
}

/// An item of a built-in kind's list as kube-apiserver encodes it: the list's Go items are typed,
/// so they carry no apiVersion or kind (a custom resource list's items, unstructured, keep theirs).
#[derive(serde::Serialize)]
struct ListItem<'a> {
    metadata: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    #[serde(flatten)]
    content: &'a serde_json::Value,
}

/// The patch media types a custom resource accepts.
const CUSTOM_PATCH_TYPES: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The model answered with a shape this verb never has: a bug of ours, reported as a 500.
fn unexpected() -> Status {
    errors::internal_error("the model API server answered with an unexpected response type")
}

/// The `Accept` header, for table negotiation.
pub(crate) fn accept(headers: &HeaderMap) -> &str {
    headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("")
}
