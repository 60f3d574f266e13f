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
//! Storage is a persistent [`imbl::OrdMap`] per state with a bounded history of revisions
//! (`ServerConfig::history_revisions_max`): the event of every retained revision is kept, and
//! a checkpoint of the whole state every few revisions, so that a read at any retained revision
//! (stale reads, time travel) costs O(log n) plus a short replay, and a write costs one path
//! copy. Objects are stored once, as `Arc`s shared by snapshots, events and answers.
//!
//! ## What is modelled
//!
//! - **Revisions.** One global resourceVersion, starting at 1 for the empty store; every
//!   write is one revision; a write that changes nothing (apart from resourceVersion and
//!   managedFields) bumps nothing. Update with a stale resourceVersion: 409 Conflict; with
//!   none: unconditional for built-ins, 422 for custom resources. Reads: unset = latest, `"0"` =
//!   any (the model serves the latest), N = not older than N (504 if N is in the future),
//!   `resourceVersionMatch=Exact` reads the past state (410 once compacted). Lists page with
//!   `limit`/`continue` through one consistent revision.
//! - **Metadata.** uid (a v4 UUID from the [`IdSource`]), creationTimestamp (second
//!   precision), generation (kinds with a spec; bumped by spec changes and deletion),
//!   `generateName` (8 tries, then 409 AlreadyExists), name rules, owner references.
//! - **Status and scale.** `/status` writes only `.status` of the content and the main resource
//!   ignores it; the metadata a status write sends persists for built-in kinds (but a
//!   Deployment's labels and a Pod's owner references) and not for custom resources, as
//!   kube-apiserver's status strategies do; `/scale` is an `autoscaling/v1` Scale view.
//! - **Deletion.** Finalizers, graceful pod deletion, preconditions, propagation policies (as
//!   finalizers for the garbage collector in `controllers`), namespaces that terminate until
//!   [`ApiServer::finalize_namespace`] (the namespace controller's `/finalize`).
//! - **Watch.** Pull-based: each [`Verb::Watch`] answers the events after a revision, with
//!   selector transitions (entering = ADDED, leaving = DELETED with the object as it was before),
//!   bookmarks, and 410 Expired. History is compacted by count and by virtual time
//!   (`ServerConfig::compaction_interval_seconds`, 5 minutes as kube-apiserver's), and
//!   [`ApiServer::compact_now`] compacts at once.
//! - **Selectors.** Label selectors in full; field selectors on each kind's selectable fields
//!   ([`fields`]: Pods by node and phase, Events by involved object, CRD `selectableFields`...).
//! - **Events.** core/v1 and events.k8s.io/v1 Events are one store seen through both APIs.
//! - **Patches.** JSON merge patch, JSON patch, strategic merge patch for built-ins
//!   ([`strategic`]) and a server-side apply subset ([`apply`]).
//! - **CRDs.** Served from creation (status Established at once), structural-schema
//!   defaulting, pruning and validation ([`schema`]), validation rules (`x-kubernetes-validations`,
//!   CEL, transition rules and ratcheting: [`cel`]), subresources; a deleted CRD terminates
//!   until its objects (deleted through normal deletion, finalizers honoured) are gone.
//! - **Decoding.** A body of another kind than the URL's is 400; a wrong JSON type is 400 (422
//!   for a patch); unknown fields follow `fieldValidation` ([`FieldValidation`]: Strict refuses,
//!   Warn drops them with a warning in [`Context::warnings`], Ignore drops them), so a built-in
//!   object never stores one.
//! - **Validation of built-ins.** Names, labels, annotations, owner references, finalizers on
//!   deleting objects, the spec validation of the kinds controllers write (pods and workload
//!   templates, Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, Services,
//!   ConfigMaps, Secrets, claims, Ingresses, PDBs, ServiceAccounts, Leases), and the immutability
//!   rules controllers most often meet (pod spec, workload selectors, Job templates, StatefulSet
//!   spec, claim spec: only a bound claim's storage request may change, and it may shrink only
//!   above its capacity; immutable ConfigMaps and Secrets).
//! - **Defaulting of built-ins.** The fields the real server fills in on create and update
//!   (pod specs and containers, workloads and their templates, Jobs, Services with an allocated
//!   cluster IP and node ports, claims, Secrets), so that a controller fighting defaults loops here as it
//!   would in a cluster; `ServerConfig::builtin_defaults` turns it off.
//! - **Admission.** Mutating hooks, validation, then validating hooks ([`AdmissionHook`]); of
//!   kube-apiserver's own plugins NamespaceLifecycle, `StorageObjectInUseProtection` (claims'
//!   and volumes' protection finalizers) when [`ServerConfig::storage_object_in_use_protection`]
//!   is on, and the Pod plugins when [`ServerConfig::pod_admission_plugins`] is on:
//!   `ServiceAccount` (the `default` account, a named one that must exist, the projected token volume
//!   `kube-api-access-<suffix>` mounted in every container, its suffix drawn from the
//!   [`IdSource`]), `Priority` (`spec.priority` and `preemptionPolicy` from the PriorityClass or
//!   the global default, 403 for an unknown class) and `DefaultTolerationSeconds` (the
//!   `not-ready` and `unreachable` `NoExecute` tolerations for 300 s): see [`admission`]. Both
//!   flags are off by default (each needs kube-controller-manager's controllers that go with
//!   it, and the conformance corpus was recorded without them); the built-ins of the
//!   `controllers` crate turn them on. With the Pod plugins, `LimitRanger`'s defaults (a Pod's containers
//!   get the default limits and requests of their namespace's LimitRanges, and its min/max
//!   checks) and `PodSecurity` (a namespace's `pod-security.kubernetes.io/*` labels: Pods that
//!   violate its `enforce` level are 403, Pods and Pod templates that violate its `warn` level
//!   earn a warning: [`admission::pod_security`]); with [`ServerConfig::default_storage_class`], `DefaultStorageClass` (a claim
//!   created without a class gets the default StorageClass's name). Always on:
//!   `PersistentVolumeClaimResize` (a claim grows
//!   only if bound and its StorageClass has `allowVolumeExpansion`, else 403).
//! - **Eviction.** `pods/{name}/eviction` ([`Request::create_subresource`] with
//!   [`Subresource::Eviction`]): the PodDisruptionBudget checks and decrement, the
//!   `DisruptionTarget` condition and the pod's delete, each an ordinary write ([`eviction`]).
//! - **Ephemeral containers.** `pods/{name}/ephemeralcontainers` ([`Subresource::EphemeralContainers`]):
//!   `kubectl debug`'s containers, added (never removed or changed) by a write that takes only
//!   `spec.ephemeralContainers`.
//! - **In-place resize.** `pods/{name}/resize` ([`Subresource::Resize`]): a write that takes only
//!   the containers' `resources` and `resizePolicy`, validated as `ValidatePodResize` (the QoS
//!   class kept, only cpu and memory, nothing removed), counted by the `LimitRanger` and the quota.
//! - **Binding.** `pods/{name}/binding` ([`Subresource::Binding`]): a scheduler's Binding sets
//!   the pod's node, annotations and `PodScheduled` condition in its storage ([`binding`]).
//! - **Tokens.** `serviceaccounts/{name}/token` ([`Subresource::Token`]): TokenRequests answered
//!   with a token of the real claims, validated as upstream ([`token`]).
//! - **RBAC**, for the users configured as ServiceAccounts ([`rbac`]).
//! - **ValidatingAdmissionPolicy.** Bound CEL policies (`admissionregistration.k8s.io/v1`) refuse
//!   creates, updates and deletes as kube-apiserver's plugin does (`admission_policy.rs`).
//! - **ResourceQuota.** With [`ServerConfig::resource_quota`], writes past a namespace's quotas
//!   are refused and admitted ones charged to them ([`admission::resource_quota`], evaluated by
//!   [`quota`]).
//!
//! Not modelled: kube-apiserver's other admission plugins (RuntimeClass, NodeRestriction...), built-in validation beyond the kinds above,
//! version conversion and apply to `/scale`.
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

// Every public item is documented: the crate is a library other people read.
#![warn(missing_docs)]
// Every verb answers `Result<_, kube_core::Status>`, as kube-apiserver answers a Status: the error
// is the API's own value, not an operational failure, and boxing it would make every caller
// unbox what kube-rs hands out unboxed.
#![allow(clippy::result_large_err)]

pub mod admission;
mod admission_policy;
pub mod apply;
pub mod binding;
pub mod cel;
pub mod context;
pub mod crd;
mod crd_serving;
mod decode;
mod defaults;
mod deletion;
pub mod errors;
pub mod events;
pub mod eviction;
pub mod fields;
mod filter;
mod formats;
pub mod go_json;
pub mod go_types;
mod ignored;
mod metadata;
mod node_ports;
pub mod patch;
pub mod pod_logs;
pub mod quantity;
pub mod quota;
pub mod rbac;
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
mod strategy;
pub mod token;
mod validation;
pub mod versions;
mod watch;
mod write;

pub use admission::{AdmissionHook, AdmissionRequest, PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER};
pub use context::{Context, IdSource, SeqIds};
pub use request::{FieldValidation, IntoResource, Request, Response, Subresource, Verb};
pub use resources::{ResourceType, ResourceTypes};
pub use server::{APISERVER_ADVERTISE_ADDRESS, ApiServer, KUBERNETES_SERVICE_IP, ServerConfig};
pub use store::{ObjectKey, Revision, Snapshot, StoredEvent, StoredEventType};
