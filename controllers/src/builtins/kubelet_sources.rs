//! The ConfigMaps and Secrets the kubelet needs before it runs a Pod: those its volumes project
//! (`WaitForAttachAndMount`, the `configmap`, `secret` and `projected` volume plugins) and those
//! its containers' environment reads (`makeEnvironmentVariables`).
//!
//! Both read the kubelet's caches of them (the watch-based managers of
//! `pkg/kubelet/util/manager`), and both are retried by the kubelet-lite when a ConfigMap or
//! Secret changes, so the change that makes a missing object appear (or gives it its key) starts
//! the Pod, as on a node.
//!
//! - **Volumes.** A `configMap` or `secret` volume, and each `configMap` or `secret` source of a
//!   `projected` volume: unless it is `optional: true`, a missing object or a key its `items`
//!   name that the object lacks fails the mount, with the plugins' own errors (`configmap
//!   "app-config" not found`, `configmap references non-existent config key: app.yaml`, `secret
//!   "tls" not found`, `secret references non-existent secret key: tls.key`). The Pod then stays
//!   `ContainerCreating` (no sandbox, no IP) and the kubelet publishes `FailedMount`:
//!   `MountVolume.SetUp failed for volume "config" : configmap "app-config" not found`. A
//!   `binaryData` key counts as a ConfigMap key, as the plugin's payload merges both maps.
//! - **Environment.** A container's `envFrom` (`configMapRef`, `secretRef`), then its `env`
//!   (`valueFrom.configMapKeyRef`, `secretKeyRef`), in order: unless the reference is
//!   `optional: true`, a missing object or key keeps the container from being created. It waits
//!   in `CreateContainerConfigError` with the kubelet's error (`configmap "app-config" not
//!   found`, `couldn't find key LEVEL in ConfigMap default/app-config`, `secret "db" not found`,
//!   `couldn't find key password in Secret default/db`) and a `Failed` event (`Error: ...`);
//!   the Pod's other containers start. An init container is refused the same way when its turn
//!   comes: it waits in `CreateContainerConfigError` (`kubectl get pods` shows
//!   `Init:CreateContainerConfigError`), and the init containers after it and the regular ones
//!   wait with it, the Pod `Pending`. A `configMapKeyRef` reads `data` only, as the kubelet
//!   does.

use k8s_openapi::api::core::v1::{ConfigMap, Container, KeyToPath, Pod, Secret, Volume};
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

/// Whether `pod` needs the ConfigMap (`secret` false) or Secret named `name`, for a volume or a
/// container's environment: a change of it may let a failed mount or container create succeed.
pub fn needs(pod: &Pod, secret: bool, name: &str) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return false };
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    let mounted = volumes.iter().any(|v| sources(v).iter().any(|s| s.secret == secret && s.name == name));
    let containers = spec.init_containers.iter().flatten().chain(&spec.containers);
    mounted || containers.flat_map(env_references).any(|r| r.secret == secret && r.name == name)
}

/// Whether one of `pod`'s volumes projects a ConfigMap or a Secret.
pub fn projects_any(pod: &Pod) -> bool {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    volumes.iter().any(|v| !sources(v).is_empty())
}

/// Whether `container`'s environment reads a ConfigMap or a Secret.
pub fn reads_any(container: &Container) -> bool {
    !env_references(container).is_empty()
}

/// What a container's environment reads: a whole object (`envFrom`, `key` None) or one key of it.
struct EnvReference<'a> {
    secret: bool,
    name: &'a str,
    key: Option<&'a str>,
    optional: bool,
}

/// The references of `container`'s environment, `envFrom` first, in the kubelet's order.
fn env_references(container: &Container) -> Vec<EnvReference<'_>> {
    let mut references = Vec::new();
    for from in container.env_from.iter().flatten() {
        if let Some(c) = &from.config_map_ref {
            references.push(EnvReference {
                secret: false,
                name: &c.name,
                key: None,
                optional: c.optional == Some(true),
            });
        }
        if let Some(s) = &from.secret_ref {
            references.push(EnvReference {
                secret: true,
                name: &s.name,
                key: None,
                optional: s.optional == Some(true),
            });
        }
    }
    for source in container.env.iter().flatten().filter_map(|e| e.value_from.as_ref()) {
        if let Some(c) = &source.config_map_key_ref {
            let optional = c.optional == Some(true);
            references.push(EnvReference { secret: false, name: &c.name, key: Some(&c.key), optional });
        }
        if let Some(s) = &source.secret_key_ref {
            let optional = s.optional == Some(true);
            references.push(EnvReference { secret: true, name: &s.name, key: Some(&s.key), optional });
        }
    }
    references
}

/// The error that keeps the kubelet from creating `container` of a Pod in `namespace`
/// (`CreateContainerConfigError`), if any: the first reference of its environment that is
/// missing.
pub fn config_error(container: &Container, namespace: &str, caches: &Sources<'_>) -> Option<String> {
    env_references(container).iter().find_map(|r| {
        let (kind, keys): (&str, Option<Vec<String>>) = if r.secret {
            let secret = caches.secrets.get(&ObjectRef::new(r.name).within(namespace));
            ("Secret", secret.map(|s| s.data.iter().flat_map(|d| d.keys()).cloned().collect()))
        } else {
            let config_map = caches.config_maps.get(&ObjectRef::new(r.name).within(namespace));
            ("ConfigMap", config_map.map(|c| c.data.iter().flat_map(|d| d.keys()).cloned().collect()))
        };
        if r.optional {
            return None;
        }
        let Some(keys) = keys else {
            return Some(format!("{} \"{}\" not found", kind.to_lowercase(), r.name));
        };
        let key = r.key.filter(|k| !keys.iter().any(|present| present == k))?;
        Some(format!("couldn't find key {key} in {kind} {namespace}/{}", r.name))
    })
}
