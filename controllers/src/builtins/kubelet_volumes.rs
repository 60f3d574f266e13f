//! What the kubelet needs before it creates a Pod's sandbox: the ConfigMaps and Secrets its
//! volumes project (`WaitForAttachAndMount`, the `configmap`, `secret` and `projected` volume
//! plugins).
//!
//! A `configMap` or `secret` volume, and each `configMap` or `secret` source of a `projected`
//! volume, reads its object from the kubelet's cache of it (the watch-based manager of
//! `pkg/kubelet/util/manager`): unless the volume or source is `optional: true`, a missing object
//! or a key its `items` name that the object lacks fails the mount, with the plugins' own errors
//! (`configmap "app-config" not found`, `configmap references non-existent config key: app.yaml`,
//! `secret "tls" not found`, `secret references non-existent secret key: tls.key`). The Pod then
//! stays `ContainerCreating` (no sandbox, no IP) and the kubelet publishes `FailedMount`:
//! `MountVolume.SetUp failed for volume "config" : configmap "app-config" not found`. When the
//! object appears (or gains the key), the mount succeeds and the Pod starts, as on a node: what a
//! controller that creates a Deployment before the ConfigMap it mounts sees, and what one that
//! names the wrong ConfigMap never gets past.
//!
//! A `binaryData` key counts as a ConfigMap key, as the plugin's payload merges both maps.

use k8s_openapi::api::core::v1::{ConfigMap, KeyToPath, Pod, Secret, Volume};
use sim::runtime::reflector::{ObjectRef, Store};

/// A mount that fails: the volume's name and the plugin's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountFailure {
    /// The volume (`spec.volumes[].name`).
    pub volume: String,
    /// The volume plugin's error (`configmap "x" not found`).
    pub error: String,
}

impl MountFailure {
    /// The message of the kubelet's `FailedMount` event for it.
    pub fn message(&self) -> String {
        format!("MountVolume.SetUp failed for volume \"{}\" : {}", self.volume, self.error)
    }
}

/// The kubelet's caches of ConfigMaps and Secrets.
pub struct Sources<'a> {
    /// Every ConfigMap.
    pub config_maps: &'a Store<ConfigMap>,
    /// Every Secret.
    pub secrets: &'a Store<Secret>,
}

/// One object a volume projects: a ConfigMap or a Secret, by name, with the keys it must hold.
struct Source<'a> {
    secret: bool,
    name: &'a str,
    items: &'a [KeyToPath],
    optional: bool,
}

/// The ConfigMaps and Secrets `volume` projects.
fn sources(volume: &Volume) -> Vec<Source<'_>> {
    let mut sources = Vec::new();
    if let Some(c) = &volume.config_map {
        let items = c.items.as_deref().unwrap_or_default();
        sources.push(Source { secret: false, name: &c.name, items, optional: c.optional == Some(true) });
    }
    if let Some(s) = &volume.secret {
        let name = s.secret_name.as_deref().unwrap_or_default();
        let items = s.items.as_deref().unwrap_or_default();
        sources.push(Source { secret: true, name, items, optional: s.optional == Some(true) });
    }
    for projection in volume.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
        if let Some(c) = &projection.config_map {
            let items = c.items.as_deref().unwrap_or_default();
            sources.push(Source { secret: false, name: &c.name, items, optional: c.optional == Some(true) });
        }
        if let Some(s) = &projection.secret {
            let items = s.items.as_deref().unwrap_or_default();
            sources.push(Source { secret: true, name: &s.name, items, optional: s.optional == Some(true) });
        }
    }
    sources
}

/// The error mounting `source` in `namespace` gives, if any.
fn mount_error(source: &Source<'_>, namespace: &str, caches: &Sources<'_>) -> Option<String> {
    let (kind, keys): (&str, Option<Vec<String>>) = if source.secret {
        // A stored Secret holds its keys in `data` (the server merged any `stringData` in).
        let keys = caches
            .secrets
            .get(&ObjectRef::new(source.name).within(namespace))
            .map(|s| s.data.iter().flat_map(|d| d.keys()).cloned().collect());
        ("secret", keys)
    } else {
        let keys = caches.config_maps.get(&ObjectRef::new(source.name).within(namespace)).map(|c| {
            let data = c.data.iter().flat_map(|d| d.keys());
            data.chain(c.binary_data.iter().flat_map(|d| d.keys())).cloned().collect()
        });
        ("configmap", keys)
    };
    let Some(keys) = keys else {
        return (!source.optional).then(|| format!("{kind} \"{}\" not found", source.name));
    };
    let missing = source.items.iter().find(|item| !keys.contains(&item.key))?;
    if source.optional {
        return None;
    }
    Some(if source.secret {
        format!("secret references non-existent secret key: {}", missing.key)
    } else {
        format!("configmap references non-existent config key: {}", missing.key)
    })
}

/// The mounts of `pod`'s volumes that fail now, in the order of `spec.volumes`; a volume with
/// several failing sources (a projected one) reports them together, as the plugin's aggregate
/// error does (`[configmap "a" not found, secret "b" not found]`).
pub fn mount_failures(pod: &Pod, caches: &Sources<'_>) -> Vec<MountFailure> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    volumes
        .iter()
        .filter_map(|volume| {
            let errors: Vec<String> =
                sources(volume).iter().filter_map(|s| mount_error(s, namespace, caches)).collect();
            let error = match errors.as_slice() {
                [] => return None,
                [one] => one.clone(),
                many => format!("[{}]", many.join(", ")),
            };
            Some(MountFailure { volume: volume.name.clone(), error })
        })
        .collect()
}

/// Whether one of `pod`'s volumes projects the ConfigMap (`secret` false) or Secret named `name`:
/// a change of it may let a mount that failed succeed.
pub fn mounts(pod: &Pod, secret: bool, name: &str) -> bool {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    volumes.iter().any(|v| sources(v).iter().any(|s| s.secret == secret && s.name == name))
}
