//! Pod creates and deletes as kube-controller-manager's `RealPodControl`
//! (pkg/controller/controller_utils.go), which the ReplicaSet, Job and DaemonSet controllers
//! share: each write publishes its Event about the owner.
//!
//! - A create that went through: `Normal SuccessfulCreate` "Created pod: x". One that failed:
//!   `Warning FailedCreate` "Error creating: <the server's message>", except in a namespace being
//!   terminated (403 with the `NamespaceTerminating` cause), where every create fails: no event,
//!   and the controllers stop creating without failing the sync, as upstream's ignore it.
//! - A delete that went through: `Normal SuccessfulDelete` "Deleted pod: x". A Pod already gone
//!   (404): no event. Any other failure: `Warning FailedDelete` "Error deleting: <message>".

use k8s_openapi::api::core::v1::Pod;
use kube_core::params::{DeleteParams, PostParams, Preconditions};
use kube_core::{Resource, ResourceExt};
use sim::api::Api;

use super::error::{has_code, is_namespace_terminating, status_message};
use super::events::{self, Recorder};

/// What a create did.
#[derive(Debug)]
pub(crate) enum Created {
    /// The Pod as the server stored it.
    Pod(Box<Pod>),
    /// Refused: its namespace is being terminated, so every create will be.
    NamespaceTerminating,
}

/// Create `pod` for `owner`, publishing the Event of the outcome.
pub(crate) async fn create<O>(
    api: &Api<Pod>,
    pod: &Pod,
    owner: &O,
    recorder: &Recorder,
) -> Result<Created, sim::Error>
where
    O: Resource<DynamicType = ()>,
{
    match api.create(&PostParams::default(), pod).await {
        Ok(created) => {
            let message = format!("Created pod: {}", created.name_any());
            events::normal(recorder, &events::reference(owner), "SuccessfulCreate", message).await;
            Ok(Created::Pod(Box::new(created)))
        }
        Err(error) if is_namespace_terminating(&error) => Ok(Created::NamespaceTerminating),
        Err(error) => {
            let message = format!("Error creating: {}", status_message(&error));
            events::warning(recorder, &events::reference(owner), "FailedCreate", message).await;
            Err(error)
        }
    }
}

/// Delete `pod` (its uid as precondition) for `owner`, publishing the Event of the outcome:
/// `true` if this call deleted it (or started its graceful deletion), `false` if it was gone.
pub(crate) async fn delete<O>(
    api: &Api<Pod>,
    pod: &Pod,
    owner: &O,
    recorder: &Recorder,
) -> Result<bool, sim::Error>
where
    O: Resource<DynamicType = ()>,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions { uid: pod.uid(), resource_version: None }),
        ..DeleteParams::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(_) => {
            let message = format!("Deleted pod: {}", pod.name_any());
            events::normal(recorder, &events::reference(owner), "SuccessfulDelete", message).await;
            Ok(true)
        }
        Err(error) if has_code(&error, 404) => Ok(false),
        Err(error) => {
            let message = format!("Error deleting: {}", status_message(&error));
            events::warning(recorder, &events::reference(owner), "FailedDelete", message).await;
            Err(error)
        }
    }
}
