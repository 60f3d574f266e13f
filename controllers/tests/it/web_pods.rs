//! What the endpoints and EndpointSlice tests share: the web Deployment they serve (Pods labelled
//! `app=web` whose container serves port 8080, named `http`), the Service port that reaches it,
//! and the objects in `default` that a controller wrote.

use std::collections::BTreeMap;

use controllers::builtins::snapshot;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodTemplateSpec, ServicePort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use model_apiserver::Snapshot;
use sim::api::ObjectMeta;

pub(crate) fn web_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

/// Whether `app=web` selects the Pod.
pub(crate) fn selected(pod: &Pod) -> bool {
    pod.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str) == Some("web")
}

pub(crate) fn in_default(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: Some("default".to_owned()), ..ObjectMeta::default() }
}

/// Pods labelled `app=web` whose container serves port 8080, named `http`.
pub(crate) fn pod_spec() -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "web".to_owned(),
            image: Some("nginx:1".to_owned()),
            ports: Some(vec![ContainerPort {
                name: Some("http".to_owned()),
                container_port: 8080,
                ..ContainerPort::default()
            }]),
            ..Container::default()
        }],
        termination_grace_period_seconds: Some(1),
        ..PodSpec::default()
    }
}

/// Deployment `web` of `replicas` such Pods.
pub(crate) fn web(replicas: i32) -> Deployment {
    Deployment {
        metadata: in_default("web"),
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector { match_labels: Some(web_labels()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(web_labels()), ..ObjectMeta::default() }),
                spec: Some(pod_spec()),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// A Service's port `web`: 80, to the Pods' port named `http`.
pub(crate) fn web_service_port() -> ServicePort {
    ServicePort {
        name: Some("web".to_owned()),
        port: 80,
        target_port: Some(IntOrString::String("http".to_owned())),
        ..ServicePort::default()
    }
}

/// The objects of type `K` in `default` but the API server's own `kubernetes` one (every cluster
/// starts with the `kubernetes` Service's Endpoints and EndpointSlice, which no controller writes).
pub(crate) fn controller_written<K>(snap: &Snapshot) -> Vec<K>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    snapshot::objects::<K>(snap, Some("default"))
        .into_iter()
        .filter(|o| o.meta().name.as_deref() != Some("kubernetes"))
        .collect()
}
