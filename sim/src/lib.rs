//! # sim: the kube-sim engine
//!
//! A seeded madsim world that runs real controller code against `model-apiserver`: every API call
//! waits a drawn latency, every watch event a drawn delay, and madsim picks the task order, all
//! from one seed. The same seed replays the same run, byte for byte.
//!
//! ## A world in one screen
//!
//! ```no_run
//! use std::sync::Arc;
//! use futures::StreamExt;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use sim::api::{Api, ObjectMeta};
//! use sim::runtime::{Controller, controller::Action, watcher};
//! use sim::{Clients, Sim};
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("never")]
//! struct Never;
//!
//! let world = Sim::builder()
//!     .controller("labeller", |clients: Clients| async move {
//!         let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
//!         Controller::new(api, watcher::Config::default())
//!             .run(
//!                 |_cm, _ctx| async { Ok::<_, Never>(Action::await_change()) },
//!                 |_cm, _error, _ctx| Action::await_change(),
//!                 Arc::new(()),
//!             )
//!             .for_each(|_| async {})
//!             .await;
//!     })
//!     .workload(|w| async move {
//!         let api: Api<ConfigMap> = Api::namespaced(w.client(), "default");
//!         let metadata = ObjectMeta { name: Some("a".into()), ..ObjectMeta::default() };
//!         w.apply(&api, &ConfigMap { metadata, ..ConfigMap::default() }).await?;
//!         Ok(())
//!     });
//! let report = world.run(42);
//! assert!(report.verdict.is_pass(), "{:?}", report.verdict);
//! ```
//!
//! ## Where things live
//!
//! - [`world`]: the builder, the phases of a run, and the verdict of each.
//! - [`live`]: the same controllers run live, paced to the wall clock, against a shared model
//!   (`kube-sim serve --with-builtins`).
//! - [`random`] and [`time`]: deterministic draws and the virtual wall clock for controller code.
//! - [`transport`]: the one function every API call passes through (latency, trace, faults).
//! - [`client`]: `Client` and `Api<K>`, as kube-rs has them.
//! - [`watcher`], [`reflector`] and [`utils`]: kube-runtime's watcher stream, its `Store` and
//!   `Writer`, and `WatchStreamExt` (backoff, predicates, reflect), over the simulated transport.
//! - [`informer`]: a watcher reflected into a `Store` by a task of the node (what `Controller`
//!   starts).
//! - [`controller`]: the controller runtime and its work queue, with kube-runtime's rules.
//! - [`finalizer`] and [`events`]: kube-runtime's finalizer helper and events `Recorder`.
//! - [`scheduler`]: kube-runtime's scheduler (delay and deduplicate messages), on virtual time.
//! - [`wait`]: kube-runtime's `await_condition`, its conditions and `delete_and_finalize`, over
//!   the simulated watcher.
//! - [`workload`]: the kubectl-like script driver.
//! - [`property`]: the hook where invariants plug in.
//! - [`decision`], [`trace`], [`verdict`], [`sweep`]: seeds, traces, outcomes and sweeps.
//! - [`explore`]: exploration as a library (random swarm, guided enumeration and replay
//!   strategies, deduplication, coverage, shrinking into regression files); [`runner`]: the one
//!   fresh-thread runner every run goes through.
//!
//! ## Porting a kube-rs controller
//!
//! Change `kube::{Api, Client}` to `sim::{Api, Client}`, `kube::runtime::...` to
//! `sim::runtime::...`, and `kube::Error::Api` stays `sim::Error::Api` (a boxed `Status`). The
//! `delete` answer is [`client::Either`] instead of `either::Either`. The controller's main future
//! becomes the factory given to [`SimBuilder::controller`], which receives [`Clients`] instead of
//! calling `Client::try_default()`.

// Every public item is documented: the crate is a library other people read.
#![warn(missing_docs)]

mod ambient;
mod builder;
pub mod client;
mod cluster;
pub mod controller;
pub mod decision;
pub mod discovery;
pub mod entry;
pub mod events;
pub mod explore;
pub mod faults;
pub mod finalizer;
pub mod generate;
pub mod guided;
pub mod informer;
pub mod leader_election;
pub mod lifecycles;
pub mod logging;
mod panic_quiet;
// The one module with unsafe code: it defines libc's `exit` (see its docs for why).
#[allow(unsafe_code)]
pub mod process_exit;
pub mod property;
mod quiescence;
mod recorder;
pub mod reflector;
pub mod regression;
mod run;
pub mod run_options;
pub mod runner;
pub mod scenario;
pub mod scheduler;
pub mod shrink;
mod supervisor;
pub mod sweep;
pub mod trace;
pub mod transport;
mod typed_cache;
pub mod utils;
pub mod verdict;
pub mod wait;
pub mod watcher;
mod without_metadata;
pub mod workload;
pub mod world;

pub use ambient::{random, time};
pub use client::{Api, Client, Either, Error, Result};
// kube's root re-exports, so that `use kube::{Api, Client, Resource, ResourceExt, ...}` ports by
// renaming the crate.
pub use builder::{Sim, SimBuilder, SimError};
pub use client::Clients;
pub use decision::{DecisionSource, Stream};
pub use kube_core as core;
pub use kube_core::{CustomResourceExt, Resource, ResourceExt};
pub use lifecycles::{Lifecycle, Lifecycles};
pub use property::{EndView, FnProperty, Property, StepView};
pub use run_options::RunOptions;
pub use runner::ensure_simulated;
pub use sweep::{SweepConfig, SweepReport, sweep};
pub use trace::{Trace, TraceEntry, TraceEvent};
pub use verdict::{RunReport, RunStats, Verdict};
pub use workload::{Workload, WorkloadError};
pub use world::live;

/// The kube-core types a controller uses with [`Api`], re-exported as kube's `api` module has them.
pub mod api {
    pub use crate::client::{Api, Either, Evict, Log};
    pub use crate::entry;
    pub use kube_core::params::{
        DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
        PropagationPolicy, ValidationDirective, VersionMatch, WatchParams,
    };
    pub use kube_core::subresource::{EvictParams, LogParams};
    pub use kube_core::{
        ApiResource, DynamicObject, GroupVersionKind, GroupVersionResource, ListMeta, NotUsed, Object,
        ObjectList, ObjectMeta, PartialObjectMeta, PartialObjectMetaExt, Resource, ResourceExt, TypeMeta,
        WatchEvent,
    };
}

/// The controller runtime, laid out as kube-runtime's modules so that `use` lines port directly
/// (`kube::runtime::...` becomes `sim::runtime::...`). docs/porting.md lists each item.
pub mod runtime {
    pub use crate::controller::{Config, Controller, applier};
    pub use crate::finalizer::finalizer;
    pub use crate::reflector::reflector;
    pub use crate::scheduler::scheduler;
    pub use crate::utils::{Predicate, PredicateConfig, WatchStreamExt, predicates};
    pub use crate::wait::conditions;
    #[allow(deprecated)]
    pub use crate::watcher::metadata_watcher;
    pub use crate::watcher::{watch_object, watcher};

    /// The watcher stream, as `kube::runtime::watcher`.
    pub mod watcher {
        pub use crate::utils::backoff::{DefaultBackoff, ExponentialBackoff};
        #[allow(deprecated)]
        pub use crate::watcher::metadata_watcher;
        pub use crate::watcher::{
            Config, Error, Event, InitialListStrategy, ListSemantic, Result, watch_object, watcher,
        };
    }
    /// Caches, as `kube::runtime::reflector`; [`informer`](crate::informer::informer) is the sim's
    /// shorthand that starts a reflecting task and returns its store.
    pub mod reflector {
        pub use crate::informer::informer;
        pub use crate::reflector::{
            Extra as ObjectRefExtra, Lookup, ObjectRef, ReflectHandle, Store, reflector, store, store_shared,
        };
    }
    /// Stream helpers, as `kube::runtime::utils`.
    pub mod utils {
        pub use crate::utils::{
            Backoff, CancelableJoinHandle, EventDecode, EventModify, Predicate, PredicateConfig,
            PredicateFilter, Reflect, ResetTimerBackoff, StreamBackoff, WatchStreamExt, predicates,
        };
    }
    /// The controller, as `kube::runtime::controller`.
    pub mod controller {
        pub use crate::controller::{
            Action, Config, Controller, Error, ReconcileReason, ReconcileRequest, applier,
        };
    }
    /// The finalizer helper, as `kube::runtime::finalizer`.
    pub mod finalizer {
        pub use crate::finalizer::{Error, Event, finalizer};
    }
    /// Publishing Events, as `kube::runtime::events`.
    pub mod events {
        pub use crate::events::{Event, EventType, Recorder, Reporter};
    }
    /// Delaying and deduplicating messages, as `kube::runtime::scheduler`.
    pub mod scheduler {
        pub use crate::scheduler::{
            Hold, HoldUnless, ScheduleRequest, Scheduler, debounced_scheduler, scheduler,
        };
    }
    /// Waiting for conditions, as `kube::runtime::wait`.
    pub mod wait {
        pub use crate::wait::{Condition, Error, await_condition, conditions, delete};
    }
}
