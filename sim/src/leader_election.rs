//! Lease-based leader election, as client-go's `leaderelection` package does it, and replicas of
//! one controller that use it ([`SimBuilder::controller_replicas`]).
//!
//! Each replica runs on its own node, named `<controller>-<i>`. It tries to acquire the
//! `coordination.k8s.io/v1` Lease named after the controller (in [`LEASE_NAMESPACE`]) every
//! `retry_period`: it takes a Lease that does not exist, or whose `renewTime +
//! leaseDurationSeconds` has passed, with an update that carries the resourceVersion it read, so
//! that of two candidates only one wins (the other gets 409 Conflict). The leader renews every
//! `retry_period`; when it could not renew for `renew_deadline`, it has lost the lease and its
//! process exits (client-go's `OnStoppedLeading` usually calls `klog.Fatal`): the node is killed
//! and restarted as a candidate.
//!
//! Between a leader's last renewal and the moment it notices it has lost the lease, it still
//! believes it leads. A leader that is paused (a long GC pause, a frozen VM: the `PauseLeader`
//! fault) wakes up after another replica took over and keeps writing until its next renewal
//! fails: a double-writer window, as in production.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube_core::ObjectMeta;
use kube_core::params::PostParams;

use crate::builder::SimBuilder;
use crate::client::Clients;
use crate::client::{Api, Error};
use crate::faults::injector::NodeAction;
use crate::trace::TraceEvent;

/// The namespace of the Leases, as controller-manager keeps its own in `kube-system`.
pub use crate::cluster::LEASE_NAMESPACE;

/// At most this many acquire attempts by one candidate: a standby replica retries for the whole
/// run, which the run's time limit ends long before this.
const ACQUIRE_ATTEMPTS_MAX: u64 = 1_000_000;
/// At most this many renewals by one leader (see [`ACQUIRE_ATTEMPTS_MAX`]).
const RENEWALS_MAX: u64 = 1_000_000;

/// Leader-election timing, as client-go's `LeaderElectionConfig`. The defaults are client-go's
/// (15s, 10s, 2s) divided by 7.5, so that pauses of a few seconds, as swarm plans draw them, can
/// outlast a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// How long a lease is valid after its last renewal (`leaseDurationSeconds`, whole seconds).
    pub lease_duration: Duration,
    /// A leader that could not renew for this long gives up.
    pub renew_deadline: Duration,
    /// Candidates retry, and leaders renew, this often.
    pub retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_millis(1_500),
            retry_period: Duration::from_millis(500),
        }
    }
}

/// The node name of replica `index` of `controller`.
pub fn replica_name(controller: &str, index: usize) -> String {
    format!("{controller}-{index}")
}

impl SimBuilder {
    /// Declare `replicas` replicas of one controller, each on its own node (`<name>-<i>`), that
    /// elect a leader through the Lease `name` in [`LEASE_NAMESPACE`]; only the leader runs
    /// `factory`. A replica that loses its lease exits and restarts as a candidate.
    pub fn controller_replicas<F, Fut>(self, name: &str, replicas: usize, factory: F) -> Self
    where
        F: Fn(Clients) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.controller_replicas_with(name, replicas, LeaderElectionConfig::default(), factory)
    }

    /// [`SimBuilder::controller_replicas`] with explicit leader-election timing.
    pub fn controller_replicas_with<F, Fut>(
        self,
        name: &str,
        replicas: usize,
        config: LeaderElectionConfig,
        factory: F,
    ) -> Self
    where
        F: Fn(Clients) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let factory = Arc::new(factory);
        let group: Arc<str> = Arc::from(name);
        // A replica that loses its lease exits: the supervisor restarts it.
        let mut builder = self.supervised();
        for index in 0..replicas {
            let factory = factory.clone();
            let group = group.clone();
            let config = config.clone();
            builder = builder.controller(replica_name(name, index), move |clients: Clients| {
                let factory = factory.clone();
                let group = group.clone();
                let config = config.clone();
                async move {
                    if acquire(&clients, &group, &config).await {
                        madsim::task::spawn_local(keep_renewing(clients.clone(), group, config));
                        factory(clients).await;
                    }
                }
            });
        }
        builder
    }
}

fn lease_api(clients: &Clients) -> Api<Lease> {
    Api::namespaced(clients.default_cluster(), LEASE_NAMESPACE)
}

/// Try to acquire the lease every `retry_period` until it succeeds (`false` only if the attempt
/// bound is reached).
async fn acquire(clients: &Clients, group: &Arc<str>, config: &LeaderElectionConfig) -> bool {
    let api = lease_api(clients);
    let node: Arc<str> = Arc::from(clients.node());
    clients.world.with(|w| {
        w.injector().join_group(group, &node);
        w.profile().note_group(&node, group);
    });
    for _ in 0..ACQUIRE_ATTEMPTS_MAX {
        if try_acquire_or_renew(clients, &api, group, config).await == Ok(true) {
            clients.world.with(|w| {
                let text = format!("{node} became leader of {group}");
                w.trace(&node, TraceEvent::Note { text });
            });
            return true;
        }
        madsim::time::sleep(config.retry_period).await;
    }
    false
}

/// Renew every `retry_period`; after `renew_deadline` without a successful renewal, give up the
/// leadership by exiting (the supervisor kills the node and restarts it at once).
async fn keep_renewing(clients: Clients, group: Arc<str>, config: LeaderElectionConfig) {
    let api = lease_api(&clients);
    let mut last_renewal = clients.world.elapsed();
    for _ in 0..RENEWALS_MAX {
        madsim::time::sleep(config.retry_period).await;
        let now = clients.world.elapsed();
        let renewed = try_acquire_or_renew(&clients, &api, &group, &config).await == Ok(true);
        if renewed && now.saturating_sub(last_renewal) <= config.renew_deadline {
            last_renewal = now;
            continue;
        }
        if renewed {
            // Renewed, but too late: client-go has already given up by then.
        } else if clients.world.elapsed().saturating_sub(last_renewal) <= config.renew_deadline {
            continue;
        }
        let node: Arc<str> = Arc::from(clients.node());
        clients.world.with(|w| {
            let text = format!("{node} lost the lease of {group}: exiting");
            w.trace(&node, TraceEvent::Note { text });
            let reason = format!("{node} stopped leading {group}");
            w.injector().request(NodeAction::Kill {
                node: node.clone(),
                restart_after: Duration::ZERO,
                reason,
            });
        });
        // The supervisor kills this node; nothing of it runs on.
        std::future::pending::<()>().await;
    }
}

/// One round of client-go's `tryAcquireOrRenew`: `Ok(true)` if this replica holds the lease now.
async fn try_acquire_or_renew(
    clients: &Clients,
    api: &Api<Lease>,
    group: &str,
    config: &LeaderElectionConfig,
) -> Result<bool, u16> {
    let me = clients.node().to_owned();
    let now = MicroTime(clients.world.with(|w| w.now()));
    let lease_seconds = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX).max(1);
    let existing = match api.get_opt(group).await {
        Ok(existing) => existing,
        Err(error) => return Err(code(&error)),
    };
    let Some(mut lease) = existing else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(group.to_owned()),
                namespace: Some(LEASE_NAMESPACE.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(me),
                lease_duration_seconds: Some(lease_seconds),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return api.create(&PostParams::default(), &lease).await.map(|_| true).map_err(|e| code(&e));
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let held_by_me = spec.holder_identity.as_deref() == Some(me.as_str());
    if !held_by_me && spec.holder_identity.is_some() {
        let duration = i64::from(spec.lease_duration_seconds.unwrap_or(lease_seconds));
        let expires = spec
            .renew_time
            .as_ref()
            .and_then(|t| t.0.checked_add(jiff::SignedDuration::from_secs(duration)).ok());
        if expires.is_some_and(|expires| expires > now.0) {
            return Ok(false);
        }
    }
    if !held_by_me {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.holder_identity = Some(me);
    }
    spec.lease_duration_seconds = Some(lease_seconds);
    spec.renew_time = Some(now);
    // The update carries the resourceVersion read above: of two candidates, one gets 409.
    match api.replace(group, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(error) => Err(code(&error)),
    }
}

fn code(error: &Error) -> u16 {
    error.status().map_or(0, |s| s.code)
}
