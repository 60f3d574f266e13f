//! kube's `examples/secret_syncer.rs` (kube 5): every ConfigMap labelled
//! `configmap-secret-syncer.nullable.se/sync=true` is mirrored into a Secret `cmsyncer-<name>`
//! (its `data` as the Secret's `stringData`, its `binaryData` as the Secret's `data`), and a
//! finalizer deletes the Secret when the ConfigMap is deleted.
//!
//! As the original says, it demonstrates finalizers; owner references would let the garbage
//! collector do this cleanup.
//!
//! Only the `use` lines differ from the original. `main` becomes [`run`], which takes the client
//! `main` got from `kube::Client::try_default()`.

// the only lines that differ from the kube-rs original
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use sim as kube;
use sim::{
    api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, Resource},
    runtime::{
        controller::{Action, Controller},
        finalizer::{Event, finalizer},
        watcher,
    },
};
use std::{sync::Arc, time::Duration};
use thiserror::Error;
use tracing::*;

/// Why a reconcile failed (the original's error enum).
#[derive(Debug, Error)]
enum Error {
    /// The ConfigMap has no name.
    #[error("NoName")]
    NoName,
    /// The ConfigMap has no namespace.
    #[error("NoNamespace")]
    NoNamespace,
    /// Applying the Secret failed.
    #[error("UpdateSecret: {0}")]
    UpdateSecret(#[source] kube::Error),
    /// Deleting the Secret failed.
    #[error("DeleteSecret: {0}")]
    DeleteSecret(#[source] kube::Error),
}
type Result<T, E = Error> = std::result::Result<T, E>;

/// The Secret a ConfigMap is mirrored into: `cmsyncer-<name>`.
fn secret_name_for_configmap(cm: &ConfigMap) -> Result<String> {
    let name = cm.metadata.name.as_deref().ok_or(Error::NoName)?;
    Ok(format!("cmsyncer-{name}"))
}

async fn apply(cm: Arc<ConfigMap>, secrets: &kube::Api<Secret>) -> Result<Action> {
    info!("Reconciling {:?}", cm);
    let secret_name = secret_name_for_configmap(&cm)?;
    secrets
        .patch(
            &secret_name,
            &PatchParams::apply("configmap-secret-syncer.nullable.se"),
            &Patch::Apply(Secret {
                metadata: ObjectMeta { name: Some(secret_name.clone()), ..ObjectMeta::default() },
                string_data: cm.data.clone(),
                data: cm.binary_data.clone(),
                ..Secret::default()
            }),
        )
        .await
        .map_err(Error::UpdateSecret)?;
    Ok(Action::await_change())
}

async fn cleanup(cm: Arc<ConfigMap>, secrets: &kube::Api<Secret>) -> Result<Action> {
    info!("Cleaning up {:?}", cm);
    secrets
        .delete(&secret_name_for_configmap(&cm)?, &DeleteParams::default())
        .await
        .map(|_| ())
        .or_else(|err| match err {
            // Object is already deleted
            kube::Error::Api(status) if status.is_not_found() => Ok(()),
            err => Err(err),
        })
        .map_err(Error::DeleteSecret)?;
    Ok(Action::await_change())
}

/// The original's `main` after `let client = kube::Client::try_default().await?;`.
pub async fn run(client: kube::Client) {
    Controller::new(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default().labels("configmap-secret-syncer.nullable.se/sync=true"),
    )
    .run(
        |cm, _| {
            let ns = cm.meta().namespace.as_deref().ok_or(Error::NoNamespace).unwrap();
            let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            async move {
                finalizer(&cms, "configmap-secret-syncer.nullable.se/cleanup", cm, |event| async {
                    match event {
                        Event::Apply(cm) => apply(cm, &secrets).await,
                        Event::Cleanup(cm) => cleanup(cm, &secrets).await,
                    }
                })
                .await
            }
        },
        |_obj, _err, _| Action::requeue(Duration::from_secs(2)),
        Arc::new(()),
    )
    .for_each(|msg| async move { info!("Reconciled: {:?}", msg) })
    .await;
}
