//! Fields whose Rust type differs across the Kubernetes versions that k8s-openapi 0.29 (and so
//! kube 5) supports, 1.33 (`earliest`) to 1.37 (`latest`), read and written the same way on each.
//!
//! The workspace's library crates never select a k8s-openapi version feature: the final crate
//! does (k8s-openapi allows exactly one per build). Between versions, k8s-openapi changes a field
//! from optional to required or back when the OpenAPI spec does: `Deployment::spec` is an
//! `Option<DeploymentSpec>` up to 1.36 and a `DeploymentSpec` from 1.37 on, a workload
//! condition's `type_` and `status` are `String` up to 1.36 and `Option<String>` from 1.37 on,
//! `CronJob::spec` became required in 1.36, `EndpointSlice::endpoints` optional in 1.36. k8s-openapi deserializes a missing required field as
//! its default, so "absent" and "default" mean the same on the required side, and these traits
//! read an absent optional field as its default too:
//!
//! - [`WorkloadSpec::spec`] reads a workload's spec (the default spec when absent), and
//!   [`WorkloadSpec::spec_mut`] writes into it, inserting the default first when absent;
//! - [`Required::value`] and [`Required::value_mut`] do the same for any other such field (`T`
//!   or `Option<T>`);
//! - [`Text::text`] reads a `String` or an `Option<String>` as a `&str` (`""` when absent);
//! - [`present`] sets such a field: `spec: present(DeploymentSpec { .. })` and
//!   `type_: present("Available".to_owned())` compile whether the field is optional or not.
//!
//! Fields that exist only in newer versions are behind k8s-openapi's `k8s_if_ge_1_NN!` macros
//! where they are used.

use std::sync::LazyLock;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet,
    StatefulSetSpec,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerSpec;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec};
use k8s_openapi::api::discovery::v1::Endpoint;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

/// A field that is `T` in some Kubernetes versions and `Option<T>` in others, read as a `T`.
pub trait Required<T> {
    /// The value, or the default when the optional form is absent (as k8s-openapi deserializes a
    /// missing required field).
    fn value(&self) -> &T;
    /// The value to change, inserting the default first when the optional form is absent.
    fn value_mut(&mut self) -> &mut T;
}

/// `Required` for both forms of each field type this workspace reads across versions. The
/// absent optional form reads as one shared default value (built once; never written).
macro_rules! required_in_some_version {
    ($($type:ty),* $(,)?) => {$(
        impl Required<$type> for $type {
            fn value(&self) -> &$type {
                self
            }
            fn value_mut(&mut self) -> &mut $type {
                self
            }
        }

        impl Required<$type> for Option<$type> {
            fn value(&self) -> &$type {
                static DEFAULT: LazyLock<$type> = LazyLock::new(<$type>::default);
                self.as_ref().unwrap_or(&DEFAULT)
            }
            fn value_mut(&mut self) -> &mut $type {
                self.get_or_insert_with(<$type>::default)
            }
        }
    )*};
}

required_in_some_version!(
    DeploymentSpec,
    ReplicaSetSpec,
    StatefulSetSpec,
    DaemonSetSpec,
    CronJobSpec,
    HorizontalPodAutoscalerSpec,
    RawExtension,
    Vec<Endpoint>,
    i64,
    i32,
);

/// A value for a field that is `T` in some Kubernetes versions and `Option<T>` in others (`T`
/// converts into both): `spec: present(DeploymentSpec { .. })`.
pub fn present<T, Field: From<T>>(value: T) -> Field {
    Field::from(value)
}

/// A `String` field that is optional in some Kubernetes versions, read as a `&str`.
pub trait Text {
    /// The text, `""` when the optional form is absent.
    fn text(&self) -> &str;
}

impl Text for String {
    fn text(&self) -> &str {
        self
    }
}

impl Text for Option<String> {
    fn text(&self) -> &str {
        self.as_deref().unwrap_or("")
    }
}

/// The workload kinds, whose `spec` field is optional up to 1.36 (up to 1.35 for `CronJob`) and
/// required after, read and written the same way on every version.
pub trait WorkloadSpec {
    /// The kind's spec type.
    type Spec;
    /// The spec (the default spec when it is absent).
    fn spec(&self) -> &Self::Spec;
    /// The spec to change, inserted as the default first when absent.
    fn spec_mut(&mut self) -> &mut Self::Spec;
}

macro_rules! workload_spec {
    ($($kind:ty => $spec:ty),* $(,)?) => {$(
        impl WorkloadSpec for $kind {
            type Spec = $spec;
            fn spec(&self) -> &$spec {
                self.spec.value()
            }
            fn spec_mut(&mut self) -> &mut $spec {
                self.spec.value_mut()
            }
        }
    )*};
}

workload_spec!(
    Deployment => DeploymentSpec,
    ReplicaSet => ReplicaSetSpec,
    StatefulSet => StatefulSetSpec,
    DaemonSet => DaemonSetSpec,
    CronJob => CronJobSpec,
);
