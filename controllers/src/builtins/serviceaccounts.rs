//! The ServiceAccount controller: every active namespace has a ServiceAccount named `default`,
//! as kube-controller-manager's `ServiceAccountsController` (`pkg/controller/serviceaccount`,
//! with its default options: `default` is the one account to ensure).
//!
//! - A namespace is synced when it is added or changes, and when its `default` ServiceAccount is
//!   deleted, so that a deleted one comes back (and after a relist of the ServiceAccount cache:
//!   see [`per_namespace`](super::per_namespace)).
//! - A sync skips a namespace that is not active (phase `Terminating`: nothing new may be created
//!   in it). Otherwise, if the ServiceAccount cache has no `default` in it, it creates one (with
//!   nothing but its name, as upstream); `AlreadyExists` (the cache lagged) and a namespace that
//!   started terminating or went away meanwhile are no error.
//! - ServiceAccounts are read from the controller's own cache, as upstream reads its lister: a
//!   lagging cache costs at most a create that gets `AlreadyExists`, or a recreate delayed until
//!   the delete event arrives.
//!
//! Where it differs:
//! - The ServiceAccount cache holds only those named `default` (a field selector), where
//!   upstream's informer holds every ServiceAccount; its handler looks at no other.
//! - After a relist of the ServiceAccount cache, every active namespace it shows without a
//!   `default` account is synced, where upstream hears only of the accounts its cache held
//!   ([`per_namespace`](super::per_namespace)).
//! - A create answered 404 (the namespace is gone) is no error here; upstream retries it and
//!   then finds the namespace gone from its lister, to the same end.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use sim::api::{Api, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::controller::Action;
use sim::runtime::reflector::{ObjectRef, Store};
use sim::runtime::{Controller, watcher};
use sim::{Clients, SimBuilder};

use super::error::{Error, has_code, is_already_exists, is_namespace_terminating};
use super::rate_limit::{RateLimiter, RunRateLimited};
use super::{namespace, per_namespace};

/// The ServiceAccount controller's node (upstream's controller name).
pub const NODE: &str = "serviceaccount-controller";
/// The ServiceAccount every active namespace gets.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// Add the ServiceAccount controller to a world, on node [`NODE`].
pub fn serviceaccounts_controller(builder: SimBuilder) -> SimBuilder {
    builder.controller(NODE, run)
}

/// What every sync gets.
pub struct Context {
    client: sim::Client,
    accounts: Store<ServiceAccount>,
}

/// The ServiceAccount controller's main future.
pub async fn run(clients: Clients) {
    let client = clients.default_cluster();
    let controller = Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default());
    let (accounts, deleted) =
        per_namespace::watch(&client, DEFAULT_SERVICE_ACCOUNT, controller.store(), needs_sync);
    controller
        .reconcile_on(deleted)
        .run_limited_by(RateLimiter::default(), reconcile, Arc::new(Context { client, accounts }))
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// A namespace needs a sync when it has no `default` account (upstream's handler hears only of
/// deleted accounts).
fn needs_sync(account: Option<&ServiceAccount>) -> bool {
    account.is_none()
}

/// Sync one namespace (upstream's `syncNamespace`): create its `default` ServiceAccount if the
/// cache has none.
pub async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Upstream waits for both caches before its workers start.
    if ctx.accounts.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    if !namespace::is_active(&ns) {
        return Ok(Action::await_change());
    }
    let name = ns.name_any();
    if ctx.accounts.get(&ObjectRef::new(DEFAULT_SERVICE_ACCOUNT).within(&name)).is_some() {
        return Ok(Action::await_change());
    }
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(DEFAULT_SERVICE_ACCOUNT.to_owned()),
            namespace: Some(name.clone()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    let api: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &name);
    match api.create(&PostParams::default(), &account).await {
        Ok(_) => Ok(Action::await_change()),
        Err(e) if is_already_exists(&e) || is_namespace_terminating(&e) || has_code(&e, 404) => {
            Ok(Action::await_change())
        }
        Err(e) => Err(e.into()),
    }
}
