//! Waiting for objects to reach a state, as kube-runtime's `wait`: [`await_condition`] watches
//! one object until a [`Condition`] holds, [`conditions`] has kube's common ones, and
//! [`delete::delete_and_finalize`] deletes an object and waits until it is gone.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::Pod;
//! use sim::runtime::wait::{Condition, await_condition, conditions};
//! # async fn f(pods: sim::Api<Pod>) -> Result<(), sim::runtime::wait::Error> {
//! let running = await_condition(pods, "web-0", conditions::is_pod_running()).await?;
//! # let _ = running;
//! # Ok(())
//! # }
//! ```
//!
//! [`await_condition`] is built on [`watch_object`], the simulated watcher: it lists and watches
//! through the node's transport, so each of the node's watch faults (a held or cut watch, an
//! expiry, a lagging replica) reaches it as it reaches an informer. As in kube, the first error
//! the watcher yields ends the wait with [`Error::ProbeFailed`], and nothing times out by itself:
//! wrap it in `madsim::time::timeout` (virtual time) for a bound.

use std::fmt;

use futures::TryStreamExt;
use kube_core::Resource;
use serde::de::DeserializeOwned;

use crate::client::Api;
use crate::watcher::{self, watch_object};

/// Why [`await_condition`] failed, as kube-runtime's `wait::Error`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The watcher yielded an error (a failed list or watch, an expiry) before the condition
    /// held.
    #[error("failed to probe for whether the condition is fulfilled yet: {0}")]
    ProbeFailed(#[source] watcher::Error),
}

/// Watch object `name` of `api` until `cond` holds, and return it (`None` if the condition holds
/// for a missing object), as kube-runtime's `await_condition`. `cond` sees `Some(object)` while
/// the object exists and `None` once it is deleted or missing from a (re)list.
///
/// # Errors
/// [`Error::ProbeFailed`] on the first error of the watcher. A missing object is not an error.
pub async fn await_condition<K>(api: Api<K>, name: &str, cond: impl Condition<K>) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    let stream = watch_object(api, name)
        .try_skip_while(|object| futures::future::ready(Ok(!cond.matches_object(object.as_ref()))));
    let mut stream = std::pin::pin!(stream);
    match stream.try_next().await.map_err(Error::ProbeFailed)? {
        Some(object) => Ok(object),
        // The watcher never ends; a stream that did would have nothing more to say.
        None => unreachable!("a watch_object stream never ends"),
    }
}

/// A condition on an object that may be missing, as kube-runtime's `wait::Condition`; every
/// `Fn(Option<&K>) -> bool` is one.
pub trait Condition<K> {
    /// Whether the condition holds for `obj` (`None`: the object does not exist).
    fn matches_object(&self, obj: Option<&K>) -> bool;

    /// The condition that holds when `self` does not.
    fn not(self) -> conditions::Not<Self>
    where
        Self: Sized,
    {
        conditions::Not(self)
    }

    /// The condition that holds when both `self` and `other` do.
    fn and<Other: Condition<K>>(self, other: Other) -> conditions::And<Self, Other>
    where
        Self: Sized,
    {
        conditions::And(self, other)
    }

    /// The condition that holds when `self` or `other` does.
    fn or<Other: Condition<K>>(self, other: Other) -> conditions::Or<Self, Other>
    where
        Self: Sized,
    {
        conditions::Or(self, other)
    }
}

impl<K, F: Fn(Option<&K>) -> bool> Condition<K> for F {
    fn matches_object(&self, obj: Option<&K>) -> bool {
        self(obj)
    }
}

/// Common conditions, as kube-runtime's `wait::conditions`.
pub mod conditions {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{Pod, Service};
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube_core::Resource;

    pub use super::Condition;

    /// Holds once the object is gone: not found, or found with another uid (deleted and created
    /// again meanwhile, even if the deletion was never seen).
    #[must_use]
    pub fn is_deleted<K: Resource>(uid: &str) -> impl Condition<K> + '_ {
        move |obj: Option<&K>| obj.is_none_or(|obj| obj.meta().uid.as_deref() != Some(uid))
    }

    /// Holds once the object exists: the counterpart of [`is_deleted`].
    #[must_use]
    pub fn is_created<K: Resource>() -> impl Condition<K> {
        |obj: Option<&K>| obj.is_some()
    }

    /// Holds once a CustomResourceDefinition's `Established` condition is `True`.
    #[must_use]
    pub fn is_crd_established() -> impl Condition<CustomResourceDefinition> {
        |obj: Option<&CustomResourceDefinition>| {
            let conditions = obj.and_then(|crd| crd.status.as_ref()).and_then(|s| s.conditions.as_ref());
            conditions
                .and_then(|all| all.iter().find(|c| c.type_ == "Established"))
                .is_some_and(|c| c.status == "True")
        }
    }

    /// Holds once a Pod's phase is `Running`.
    #[must_use]
    pub fn is_pod_running() -> impl Condition<Pod> {
        |obj: Option<&Pod>| {
            obj.and_then(|pod| pod.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
        }
    }

    /// Holds once a Job's `Complete` condition is `True`.
    #[must_use]
    pub fn is_job_completed() -> impl Condition<Job> {
        |obj: Option<&Job>| {
            let conditions = obj.and_then(|job| job.status.as_ref()).and_then(|s| s.conditions.as_ref());
            conditions
                .and_then(|all| all.iter().find(|c| c.type_ == "Complete"))
                .is_some_and(|c| c.status == "True")
        }
    }

    /// Holds once a Deployment's latest rollout is complete: its `Progressing` condition has
    /// reason `NewReplicaSetAvailable` and status `True`, the condition Kubernetes sets for a
    /// complete Deployment.
    #[must_use]
    pub fn is_deployment_completed() -> impl Condition<Deployment> {
        |obj: Option<&Deployment>| {
            let conditions =
                obj.and_then(|deployment| deployment.status.as_ref()).and_then(|s| s.conditions.as_ref());
            conditions
                .and_then(|all| {
                    all.iter().find(|c| {
                        opt_str(&c.type_) == Some("Progressing")
                            && c.reason.as_deref() == Some("NewReplicaSetAvailable")
                    })
                })
                .is_some_and(|c| opt_str(&c.status) == Some("True"))
        }
    }

    k8s_openapi::k8s_if_ge_1_37! {
        /// A DeploymentCondition's `type` or `status` (optional from Kubernetes 1.37 on).
        fn opt_str(value: &Option<String>) -> Option<&str> {
            value.as_deref()
        }
    }
    k8s_openapi::k8s_if_le_1_36! {
        /// A DeploymentCondition's `type` or `status` (a string before Kubernetes 1.37).
        #[allow(clippy::ptr_arg)]
        fn opt_str(value: &String) -> Option<&str> {
            Some(value.as_str())
        }
    }

    /// Holds once a `LoadBalancer` Service's load balancer has an IP or a hostname for every
    /// ingress; holds at once for a Service of another type.
    #[must_use]
    pub fn is_service_loadbalancer_provisioned() -> impl Condition<Service> {
        |obj: Option<&Service>| {
            let Some(service) = obj else { return false };
            let Some(spec) = &service.spec else { return false };
            if spec.type_.as_deref() != Some("LoadBalancer") {
                return true;
            }
            let ingress = service
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|l| l.ingress.as_ref());
            ingress.is_some_and(|all| all.iter().all(|i| i.ip.is_some() || i.hostname.is_some()))
        }
    }

    /// Holds once an Ingress's load balancer has an IP or a hostname for every ingress.
    #[must_use]
    pub fn is_ingress_provisioned() -> impl Condition<Ingress> {
        |obj: Option<&Ingress>| {
            let ingress = obj
                .and_then(|ing| ing.status.as_ref())
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|l| l.ingress.as_ref());
            ingress.is_some_and(|all| all.iter().all(|i| i.ip.is_some() || i.hostname.is_some()))
        }
    }

    /// See [`Condition::not`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Not<A>(pub(super) A);
    impl<A: Condition<K>, K> Condition<K> for Not<A> {
        fn matches_object(&self, obj: Option<&K>) -> bool {
            !self.0.matches_object(obj)
        }
    }

    /// See [`Condition::and`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct And<A, B>(pub(super) A, pub(super) B);
    impl<A: Condition<K>, B: Condition<K>, K> Condition<K> for And<A, B> {
        fn matches_object(&self, obj: Option<&K>) -> bool {
            self.0.matches_object(obj) && self.1.matches_object(obj)
        }
    }

    /// See [`Condition::or`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Or<A, B>(pub(super) A, pub(super) B);
    impl<A: Condition<K>, B: Condition<K>, K> Condition<K> for Or<A, B> {
        fn matches_object(&self, obj: Option<&K>) -> bool {
            self.0.matches_object(obj) || self.1.matches_object(obj)
        }
    }
}

/// Deleting and waiting, as kube-runtime's `wait::delete`.
pub mod delete {
    use std::fmt;

    use kube_core::Resource;
    use kube_core::params::DeleteParams;
    use serde::{Serialize, de::DeserializeOwned};

    use super::{await_condition, conditions};
    use crate::client::{Api, Either};

    /// Why [`delete_and_finalize`] failed, as kube-runtime's `wait::delete::Error`.
    #[derive(Debug, thiserror::Error)]
    pub enum Error {
        /// The server's answer to the delete named no uid to wait for.
        #[error("deleted object has no UID to wait for")]
        NoUid,
        /// The delete call failed (not found, a conflicting precondition, a fault).
        #[error("failed to delete object: {0}")]
        Delete(#[source] crate::Error),
        /// The watcher failed while waiting for the object to be gone.
        #[error("failed to wait for object to be deleted: {0}")]
        Await(#[source] super::Error),
    }

    /// Delete object `name` and wait until it is gone from the API server, finalizers included,
    /// as kube-runtime's `delete_and_finalize`: the wait is [`conditions::is_deleted`] on the uid
    /// the delete answered with, so an object of the same name created meanwhile does not hold it.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn delete_and_finalize<K>(
        api: Api<K>,
        name: &str,
        delete_params: &DeleteParams,
    ) -> Result<(), Error>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    {
        let uid = match api.delete(name, delete_params).await.map_err(Error::Delete)? {
            Either::Left(object) => object.meta().uid.clone(),
            Either::Right(status) => status.details.map(|details| details.uid),
        };
        let uid = uid.ok_or(Error::NoUid)?;
        await_condition(api, name, conditions::is_deleted(&uid)).await.map_err(Error::Await)?;
        Ok(())
    }
}
