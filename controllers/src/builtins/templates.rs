//! Pods made from a `PodTemplateSpec`, as `controller.GetPodFromTemplate` makes them.

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// How a new Pod is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodName {
    /// `metadata.generateName`: the server appends five random characters.
    Generate(String),
    /// A fixed name (StatefulSet pods).
    Fixed(String),
}

/// The longest `generateName` prefix that leaves room for the five generated characters in a
/// 63-character name (apimachinery's `maxGeneratedNameLength`).
const GENERATE_NAME_PREFIX_MAX: usize = 58;

/// A Pod from `template` in `namespace`, controlled by `owner`: the template's labels,
/// annotations, finalizers and spec.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    name: PodName,
    namespace: &str,
    owner: OwnerReference,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let (name, generate_name) = match name {
        PodName::Fixed(name) => (Some(name), None),
        PodName::Generate(mut prefix) => {
            prefix.truncate(GENERATE_NAME_PREFIX_MAX);
            (None, Some(prefix))
        }
    };
    Pod {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: Some(namespace.to_owned()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}
