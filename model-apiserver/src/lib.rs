//! # model-apiserver
//!
//! A synchronous, deterministic model of the Kubernetes API server.
//!
//! It is a pure state machine: [`ApiServer::handle`] takes a [`Request`] and a [`Context`] (the
//! virtual time and a deterministic id source) and returns a [`Response`] or a
//! [`kube_core::Status`] error with the reason and code a real kube-apiserver would return.
//! There is no async, no clock and no randomness inside: the same requests with the same context
//! give byte-identical responses.
//!
//! Storage is one persistent [`imbl::OrdMap`] per revision, kept in a bounded history, so that a
//! read at any retained revision (stale reads, time travel) costs O(log n) and a write costs one
//! path copy.
//!
//! ```
//! use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};
//! use kube_core::{ApiResource, DynamicObject, params::PostParams};
//!
//! let mut ids = SeqIds::default();
//! let cm = ApiResource { group: "".into(), version: "v1".into(), api_version: "v1".into(),
//!                        kind: "ConfigMap".into(), plural: "configmaps".into() };
//! let obj: DynamicObject = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}
//! })).unwrap();
//! let mut ctx = Context::new(jiff::Timestamp::UNIX_EPOCH, &mut ids);
//! let mut server = ApiServer::new().with_default_namespaces(&mut ctx);
//! let created = server
//!     .handle(Request::create(&cm, Some("default"), obj, PostParams::default()), &mut ctx)
//!     .unwrap();
//! let Response::Object(created) = created else { panic!() };
//! assert_eq!(created.metadata.generation, None); // ConfigMaps have no generation
//! assert!(created.metadata.uid.is_some());
//! ```

// Every verb answers `Result<_, kube_core::Status>`, as kube-apiserver answers a Status: the error
// is the API's own value, not an operational failure, and boxing it would make every caller
// unbox what kube-rs hands out unboxed.
#![allow(clippy::result_large_err)]

pub mod admission;
pub mod apply;
pub mod context;
pub mod crd;
mod crd_serving;
mod deletion;
pub mod errors;
mod filter;
mod metadata;
pub mod patch;
mod read;
pub mod request;
pub mod resources;
mod scale;
pub mod schema;
pub mod selector;
pub mod server;
mod server_apply;
pub mod store;
pub mod strategic;
mod watch;
mod write;

pub use admission::{AdmissionHook, AdmissionRequest};
pub use context::{Context, IdSource, SeqIds};
pub use request::{Request, Response, Subresource, Verb};
pub use resources::{ResourceType, ResourceTypes};
pub use server::{ApiServer, ServerConfig};
pub use store::{ObjectKey, Revision, Snapshot, StoredEvent, StoredEventType};
