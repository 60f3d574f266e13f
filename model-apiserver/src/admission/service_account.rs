//! kube-apiserver's `ServiceAccount` admission plugin (`plugin/pkg/admission/serviceaccount`), on
//! the create of a Pod (not of a subresource):
//!
//! - a Pod without `serviceAccountName` gets [`DEFAULT_SERVICE_ACCOUNT`];
//! - the account must exist in the Pod's namespace, else 403 Forbidden
//!   `error looking up service account <ns>/<name>: serviceaccount "<name>" not found` (but
//!   `default`: see below);
//! - unless `automountServiceAccountToken` is false (the Pod's, else the account's), the Pod gets
//!   the projected volume `kube-api-access-<5 random characters>` (a bound token, the
//!   `kube-root-ca.crt` ConfigMap's `ca.crt` and the namespace, [`token_volume_source`]) and each
//!   init container and container without a mount at [`TOKEN_MOUNT_PATH`] a read-only one of it.
//!   A volume already named `kube-api-access-...` is the one mounted, and nothing is added;
//! - a Pod without image pull secrets gets the account's;
//! - an account annotated `kubernetes.io/enforce-mountable-secrets: "true"` refuses a Pod that
//!   uses a Secret (a volume, an environment variable, an image pull secret) it does not list;
//! - a mirror pod (annotated `kubernetes.io/config.mirror`) is not changed, and is refused if it
//!   names an account, uses any Secret or projects a service account token.
//!
//! Upstream looks an account up in its informer, and, when missing there, asks the storage once;
//! for `default`, which kube-controller-manager's ServiceAccount controller creates right after
//! the namespace, ten times over one or two seconds. The model reads its store, which is always
//! current, and cannot wait within a request: a missing account is refused at once, but a missing
//! `default`, which the wait would find, is taken as that controller creates it (nothing but its
//! name: the token is mounted, no image pull secrets). Where a cluster's wait would time out (no
//! ServiceAccount controller, or one down for seconds) the model admits the Pod all the same.

use std::sync::Arc;

use kube_core::{DynamicObject, Status};
use serde_json::{Map, Value, json};

use crate::{context::IdSource, defaults, errors, metadata};

/// The account of a Pod that names none (`DefaultServiceAccountName`).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Where every container gets the token, CA bundle and namespace (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name before its random suffix (`ServiceAccountVolumeName` and a dash).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The ConfigMap of every namespace that holds the cluster's CA bundle (kube-controller-manager's
/// root CA publisher writes it).
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The bound token's lifetime (`serviceaccount.WarnOnlyBoundTokenExpirationSeconds`, an hour and
/// seven seconds: a token asked for this long is the one the kubelet refreshes).
const TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
/// The projected volume's file mode, 0644 (`ProjectedVolumeSourceDefaultMode`), set explicitly.
const PROJECTED_DEFAULT_MODE: i64 = 0o644;
/// The annotation of a kubelet's mirror of a static pod (`MirrorPodAnnotationKey`).
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// An account annotated with a true value lets its Pods use only the Secrets it lists.
const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";

/// The plugin's `Admit` then `Validate` on the create of `pod` in `namespace`. `name` is the
/// Pod's as refusals give it; `account` looks an account of the namespace up by name; `ids`
/// draws the token volume's suffix.
pub(crate) fn admit_create(
    pod: &mut DynamicObject,
    namespace: &str,
    name: &str,
    account: impl Fn(&str) -> Option<Arc<DynamicObject>>,
    ids: &mut dyn IdSource,
) -> Result<(), Status> {
    let forbidden = |why: &str| errors::forbidden("", "pods", name, why);
    if is_mirror_pod(pod) {
        return validate_mirror_pod(pod).map_err(forbidden);
    }
    let spec = super::pod_spec(pod);
    let account_name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => {
            spec.insert("serviceAccountName".to_owned(), json!(DEFAULT_SERVICE_ACCOUNT));
            DEFAULT_SERVICE_ACCOUNT.to_owned()
        }
    };
    let account = match account(&account_name) {
        Some(account) => account,
        None if account_name == DEFAULT_SERVICE_ACCOUNT => awaited_default_account(namespace),
        None => {
            return Err(forbidden(&format!(
                "error looking up service account {namespace}/{account_name}: serviceaccount \"{account_name}\" not found"
            )));
        }
    };
    if should_automount(spec, &account) {
        mount_token(spec, ids);
    }
    let has_pull_secrets =
        spec.get("imagePullSecrets").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    let account_pull_secrets = account.data.get("imagePullSecrets").and_then(Value::as_array);
    if let Some(secrets) = account_pull_secrets.filter(|s| !has_pull_secrets && !s.is_empty()) {
        // Only the names: the account's references are LocalObjectReferences too.
        let names: Vec<Value> =
            secrets.iter().map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))})).collect();
        spec.insert("imagePullSecrets".to_owned(), Value::Array(names));
    }
    if enforces_mountable_secrets(&account) {
        limit_secret_references(spec, &account, &account_name).map_err(|why| forbidden(&why))?;
    }
    Ok(())
}

fn is_mirror_pod(pod: &DynamicObject) -> bool {
    pod.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION))
}

/// What a mirror pod may not reference (the plugin's `Validate` of one), with upstream's words.
fn validate_mirror_pod(pod: &DynamicObject) -> Result<(), &'static str> {
    let spec = pod.data.get("spec");
    let text = |key: &str| spec.and_then(|s| s.get(key)).and_then(Value::as_str).unwrap_or_default();
    if !text("serviceAccountName").is_empty() {
        return Err("a mirror pod may not reference service accounts");
    }
    if references_secrets(spec) {
        return Err("a mirror pod may not reference secrets");
    }
    let volumes = spec.and_then(|s| s.get("volumes")).and_then(Value::as_array).into_iter().flatten();
    let projects_token = volumes
        .filter_map(|v| v.pointer("/projected/sources").and_then(Value::as_array))
        .flatten()
        .any(|source| source.get("serviceAccountToken").is_some_and(|t| !t.is_null()));
    if projects_token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections");
    }
    Ok(())
}

/// Whether a pod spec references any Secret, as `podutil.VisitPodSecretNames` visits them: an
/// image pull secret, a container's `envFrom` or `env` Secret reference, or a volume's Secret
/// (a `secret` volume, a projected one, or the credentials of a network or CSI volume).
fn references_secrets(spec: Option<&Value>) -> bool {
    let Some(spec) = spec else { return false };
    let array = |v: &'_ Value, key: &str| v.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let set = |v: &Value, pointer: &str| v.pointer(pointer).is_some_and(|r| !r.is_null());
    if !array(spec, "imagePullSecrets").is_empty() {
        return true;
    }
    let containers = ["initContainers", "containers", "ephemeralContainers"].into_iter();
    let in_containers = containers.flat_map(|list| array(spec, list)).any(|c| {
        array(&c, "envFrom").iter().any(|e| set(e, "/secretRef"))
            || array(&c, "env").iter().any(|e| set(e, "/valueFrom/secretKeyRef"))
    });
    // The first volume source a volume has decides, as upstream's `switch`.
    let in_volumes = array(spec, "volumes").iter().any(|v| {
        let credentials = ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"];
        if set(v, "/azureFile") {
            v.pointer("/azureFile/secretName").and_then(Value::as_str).is_some_and(|n| !n.is_empty())
        } else if let Some(source) = credentials.iter().find(|s| set(v, &format!("/{s}"))) {
            set(v, &format!("/{source}/secretRef"))
        } else if set(v, "/projected") {
            let sources = v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten();
            sources.into_iter().any(|s| set(s, "/secret"))
        } else if set(v, "/secret") {
            true
        } else {
            set(v, "/csi/nodePublishSecretRef")
        }
    });
    in_containers || in_volumes
}

/// The `default` account upstream's wait for a missing one finds: it asks the storage ten times
/// over one or two seconds, for kube-controller-manager's ServiceAccount controller creates it
/// right after the namespace. The model cannot wait within a request, and takes the wait's usual
/// end: the account that controller creates, with nothing but its name. Refusing instead would
/// refuse every Pod a world creates in the first moments of a namespace, which a cluster admits.
fn awaited_default_account(namespace: &str) -> Arc<DynamicObject> {
    let mut account = DynamicObject { types: None, metadata: Default::default(), data: json!({}) };
    account.metadata.name = Some(DEFAULT_SERVICE_ACCOUNT.to_owned());
    account.metadata.namespace = Some(namespace.to_owned());
    Arc::new(account)
}

/// `shouldAutomount`: the Pod's choice, else the account's, else yes.
fn should_automount(spec: &Map<String, Value>, account: &DynamicObject) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| account.data.get("automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true)
}

/// `mountServiceAccountToken`: the token volume (an existing `kube-api-access-...` one, else a new
/// name) mounted read-only in every init container, then every container, that has nothing at
/// [`TOKEN_MOUNT_PATH`]; the volume is added if one of them mounts it and the Pod lacked it.
fn mount_token(spec: &mut Map<String, Value>, ids: &mut dyn IdSource) {
    let volumes = spec.get("volumes").and_then(Value::as_array).into_iter().flatten();
    let existing = volumes
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_owned);
    let has_volume = existing.is_some();
    let volume_name = existing.unwrap_or_else(|| metadata::generate_name(TOKEN_VOLUME_PREFIX, ids));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in defaults::objects_in(spec, list) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if !mounts.is_array() {
                *mounts = json!([]);
            }
            let mounts = mounts.as_array_mut().expect("just made an array");
            if !mounts.iter().any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH)) {
                mounts.push(mount.clone());
                mounted = true;
            }
        }
    }
    if mounted && !has_volume {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        let volume = json!({"name": volume_name, "projected": token_volume_source()});
        volumes.as_array_mut().expect("just made an array").push(volume);
    }
}

/// `TokenVolumeSource`: a bound token, the root CA bundle and the namespace, in one projected
/// volume. Admission runs after defaulting, so every default is written out here (the mode, the
/// field reference's `apiVersion`), as upstream writes them.
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [
                {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            ]}},
        ],
    })
}

/// `enforceMountableSecrets`: the account's annotation, read as Go's `strconv.ParseBool`.
fn enforces_mountable_secrets(account: &DynamicObject) -> bool {
    let annotations = account.metadata.annotations.as_ref();
    let value = annotations.and_then(|a| a.get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION));
    matches!(value.map(String::as_str), Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
}

/// `limitSecretReferences`: every Secret volume, Secret environment reference (init containers
/// first) and image pull secret of the Pod must be one the account lists, else the first that is
/// not, in upstream's words.
fn limit_secret_references(
    spec: &Map<String, Value>,
    account: &DynamicObject,
    account_name: &str,
) -> Result<(), String> {
    let listed = |key: &str| -> Vec<&str> {
        let refs = account.data.get(key).and_then(Value::as_array).into_iter().flatten();
        refs.filter_map(|r| r.get("name").and_then(Value::as_str)).collect()
    };
    let (mountable, pullable) = (listed("secrets"), listed("imagePullSecrets"));
    let array = |key: &str| spec.get(key).and_then(Value::as_array).into_iter().flatten();
    let text =
        |v: &Value, pointer: &str| v.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned();
    for volume in array("volumes").filter(|v| v.get("secret").is_some_and(|s| !s.is_null())) {
        let secret = text(volume, "/secret/secretName");
        if !mountable.contains(&secret.as_str()) {
            return Err(format!(
                "volume with secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
            ));
        }
    }
    for (list, what) in [("initContainers", "init container"), ("containers", "container")] {
        for c in array(list) {
            let container = text(c, "/name");
            for env in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                if env.pointer("/valueFrom/secretKeyRef").is_none_or(Value::is_null) {
                    continue;
                }
                let secret = text(env, "/valueFrom/secretKeyRef/name");
                if !mountable.contains(&secret.as_str()) {
                    let var = text(env, "/name");
                    return Err(format!(
                        "{what} {container} with envVar {var} referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
                    ));
                }
            }
            for env_from in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
                if env_from.get("secretRef").is_none_or(Value::is_null) {
                    continue;
                }
                let secret = text(env_from, "/secretRef/name");
                if !mountable.contains(&secret.as_str()) {
                    return Err(format!(
                        "{what} {container} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account_name} does not reference that secret"
                    ));
                }
            }
        }
    }
    for (i, reference) in array("imagePullSecrets").enumerate() {
        let secret = text(reference, "/name");
        if !pullable.contains(&secret.as_str()) {
            return Err(format!(
                "imagePullSecrets[{i}].name=\"{secret}\" is not allowed because service account {account_name} does not reference that imagePullSecret"
            ));
        }
    }
    Ok(())
}
