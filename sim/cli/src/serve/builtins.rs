//! `kube-sim serve --with-builtins`: the built-in controllers ([`controllers::builtins::all`]: garbage
//! collector, namespace, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, disruption,
//! TTL-after-finished, ServiceAccount, root CA publisher, endpoints, EndpointSlice, the
//! PersistentVolume binder, the local provisioner (which installs the default StorageClass
//! `standard`), the ephemeral volume controller, the PVC and PV protection controllers (with the admission plugin that gives
//! claims and volumes their protection finalizers), the Pod garbage collector, the resource quota
//! controller (with kube-apiserver's `ResourceQuota` admission plugin), the node lifecycle and
//! taint eviction controllers and the kubelet-lite) run live against the served model, so that a Deployment
//! applied with kubectl leads to Pods that become Running behind its Services' Endpoints and
//! EndpointSlices, and a claim to a bound volume.
//!
//! They are the same controllers the simulations run, unchanged: [`sim::live`] runs them on a
//! madsim runtime of their own, on a thread of their own, paced to the wall clock, and their API
//! calls take the served model's lock as HTTP requests do. [`LiveCluster`] (the served [`Live`])
//! is the [`sim::live::SharedCluster`] they call; their writes wake the HTTP watch streams as any
//! write does, and writes over HTTP reach their informers within one [`sim::live::TICK`].

use std::sync::Arc;

use kube_core::Status;
use model_apiserver::{Request, Response, Revision};
use sim::Verdict;
use sim::live::{SharedCluster, StopHandle};

use super::{Live, ServeError};

/// The thread's name, as debuggers and panics show it.
const THREAD_NAME: &str = "kube-sim-builtins";

/// The served model as the cluster the live controllers call (a newtype: neither the trait nor
/// [`Live`] is this crate's).
pub struct LiveCluster(pub Live);

impl SharedCluster for LiveCluster {
    fn handle(&self, request: Request, now: jiff::Timestamp) -> (Result<Response, Status>, Revision) {
        self.0.handle_at(request, now)
    }

    fn revision(&self) -> Revision {
        self.0.revision()
    }

    fn now(&self) -> jiff::Timestamp {
        self.0.now()
    }

    fn time_scale(&self) -> u32 {
        self.0.clock().scale()
    }

    fn types(&self) -> model_apiserver::ResourceTypes {
        self.0.with_model(|model| model.server.types().clone())
    }
}

/// The built-in controllers running live; dropping this stops them (within one tick) and waits
/// for their thread.
pub struct Builtins {
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<Verdict>>,
}

impl Builtins {
    /// Start every built-in controller against `live`, on a new thread.
    pub fn start(live: &Live) -> Result<Builtins, ServeError> {
        let stop = StopHandle::new();
        // The admission plugin that goes with the storage protection controllers: from now on a
        // created claim or volume gets its protection finalizer, which they remove.
        // And kube-apiserver's Pod plugins, which go with the ServiceAccount controller's
        // `default` accounts (as `builtins::all` turns them on in a simulated world's servers,
        // which the live cluster does not take its configuration from), and the `ResourceQuota`
        // plugin, which enforces the status the quota controller keeps.
        live.with_model(|model| {
            let config = model.server.config_mut();
            config.storage_object_in_use_protection = true;
            config.pod_admission_plugins = true;
            config.default_storage_class = true;
            config.resource_quota = true;
        });
        let shared: Arc<dyn SharedCluster> = Arc::new(LiveCluster(live.clone()));
        let thread_stop = stop.clone();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || {
                let builder = controllers::builtins::all(sim::Sim::builder().scenario("serve"));
                let verdict = builder.run_live(shared, &thread_stop);
                if !verdict.is_pass() {
                    // Serving goes on without them; say why nothing reconciles any more.
                    eprintln!("kube-sim serve: the built-in controllers stopped: {verdict}");
                }
                verdict
            })
            .map_err(ServeError::Runtime)?;
        Ok(Builtins { stop, thread: Some(thread) })
    }

    /// Stop the controllers and wait for them; how their run ended (`Pass` unless one panicked).
    pub fn stop(mut self) -> Verdict {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Verdict {
        self.stop.stop();
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(verdict)) => verdict,
            Some(Err(_)) => Verdict::Crash {
                node: THREAD_NAME.to_owned(),
                object: None,
                message: "the built-in controllers' thread panicked".to_owned(),
            },
            None => Verdict::Pass,
        }
    }
}

impl Drop for Builtins {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
