//! `serviceaccounts/{name}/token`: TokenRequests, as kube-apiserver's `TokenREST.Create`
//! (`pkg/registry/core/serviceaccount/storage/token.go`) answers them.
//!
//! - The ServiceAccount must exist (404 `serviceaccounts "x" not found`); the body is an
//!   `authentication.k8s.io/v1` TokenRequest whose `metadata.name`, if given, is the URL's.
//! - `spec.expirationSeconds` defaults to 3600 and must be at least 600 and at most 2^32
//!   (`ValidateTokenRequest`: 422 `TokenRequest.authentication.k8s.io "x" is invalid:
//!   spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10
//!   minutes`); empty `audiences` become the API server's (`https://kubernetes.default.svc.cluster.local`).
//! - A `boundObjectRef` must name an existing Pod, Secret or Node (of that uid, if given), as
//!   upstream checks; its name and uid go into the token's claims.
//! - The answer is 201 with the TokenRequest, `spec` completed and `status.token` and
//!   `status.expirationTimestamp` set. Nothing is stored and no revision is used, as upstream.
//!
//! The token is a JWT in form (`<header>.<claims>.<signature>`, base64url): the claims are the
//! real ones (`aud`, `exp`, `iat`, `nbf`, `iss`, `jti`, `sub`, `kubernetes.io`), but the model has
//! no signing key and authenticates nobody, so the signature is a digest of the claims, not RS256.
//! Its times are the virtual clock's, its `jti` a uid from the run's ids: a replay issues the same
//! token.

use std::sync::Arc;

use base64::Engine;
use kube_core::{DynamicObject, Status, params::PostParams};
use serde_json::{Value, json};

use crate::context::Context;
use crate::errors;
use crate::request::Response;
use crate::resources::ResourceType;
use crate::server::{ApiServer, Target};

/// The audiences and issuer of the cluster's tokens (`--api-audiences`, `--service-account-issuer`
/// of kind and kubeadm clusters).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// `spec.expirationSeconds` when unset.
pub const EXPIRATION_SECONDS_DEFAULT: i64 = 3600;
/// The shortest expiration a request may ask for (10 minutes).
pub const EXPIRATION_SECONDS_MIN: i64 = 600;
/// The longest (2^32 seconds).
pub const EXPIRATION_SECONDS_MAX: i64 = 1 << 32;

/// Whether `ty` serves `/token`: the built-in ServiceAccount.
pub(crate) fn serves(ty: &ResourceType) -> bool {
    !ty.custom && ty.api.group.is_empty() && ty.api.kind == "ServiceAccount"
}

const URL_SAFE: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

impl ApiServer {
    /// `TokenREST.Create` (see the module).
    pub(crate) fn token_request(
        &mut self,
        t: &Target,
        name: &str,
        body: DynamicObject,
        _params: &PostParams,
        ctx: &mut Context<'_>,
    ) -> Result<Response, Status> {
        let account = self.current_object(t, name)?;
        // Read as JSON: the typed TokenRequest's optional fields differ between the Kubernetes
        // versions the library compiles for.
        let value = serde_json::to_value(&body)
            .map_err(|e| errors::internal_error(&format!("encoding the token request: {e}")))?;
        match value.pointer("/metadata/name").and_then(Value::as_str) {
            None | Some("") => {}
            Some(given) if given != name => {
                return Err(errors::bad_request("name in URL does not match name in TokenRequest object"));
            }
            Some(_) => {}
        }
        let namespace = t.namespace.to_string();
        let mut spec = value.get("spec").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        let seconds = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => EXPIRATION_SECONDS_DEFAULT,
            Some(v) => v
                .as_i64()
                .ok_or_else(|| errors::bad_request("spec.expirationSeconds: expected an integer"))?,
        };
        let detail = if seconds < EXPIRATION_SECONDS_MIN {
            Some("may not specify a duration less than 10 minutes")
        } else if seconds > EXPIRATION_SECONDS_MAX {
            Some("may not specify a duration larger than 2^32 seconds")
        } else {
            None
        };
        if let Some(detail) = detail {
            let cause = errors::cause(
                "FieldValueInvalid",
                "spec.expirationSeconds",
                format!("Invalid value: {seconds}: {detail}"),
            );
            return Err(errors::invalid("authentication.k8s.io", "TokenRequest", name, vec![cause]));
        }
        spec["expirationSeconds"] = json!(seconds);
        if spec.get("audiences").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec["audiences"] = json!([ISSUER]);
        }
        let bound = self.bound_object(&namespace, spec.get("boundObjectRef").filter(|r| !r.is_null()))?;
        let issued = ctx.now;
        let expires =
            issued.checked_add(jiff::SignedDuration::from_secs(seconds)).unwrap_or(jiff::Timestamp::MAX);
        let mut kubernetes = json!({
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": account.metadata.uid.clone().unwrap_or_default()},
        });
        if let Some((kind, object_name, uid)) = bound {
            kubernetes[kind.to_ascii_lowercase()] = json!({"name": object_name, "uid": uid});
        }
        let claims = json!({
            "aud": spec["audiences"],
            "exp": expires.as_second(),
            "iat": issued.as_second(),
            "iss": ISSUER,
            "jti": crate::metadata::new_uid(ctx.ids),
            "kubernetes.io": kubernetes,
            "nbf": issued.as_second(),
            "sub": format!("system:serviceaccount:{namespace}:{name}"),
        });
        let token = jwt(&claims);
        let answer = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": crate::metadata::timestamp(issued)},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": crate::metadata::timestamp(expires)},
        });
        let object: DynamicObject = serde_json::from_value(answer)
            .map_err(|e| errors::internal_error(&format!("encoding the token request: {e}")))?;
        Ok(Response::Object(Arc::new(object)))
    }

    /// The object a token is bound to, checked as upstream checks it: (kind, name, uid).
    fn bound_object(
        &self,
        namespace: &str,
        reference: Option<&Value>,
    ) -> Result<Option<(String, String, String)>, Status> {
        let Some(reference) = reference else { return Ok(None) };
        let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or_default();
        let (kind, name) = (text("kind"), text("name"));
        let (plural, namespaced) = match kind {
            "Pod" => ("pods", true),
            "Secret" => ("secrets", true),
            "Node" => ("nodes", false),
            other => {
                return Err(errors::bad_request(&format!(
                    "cannot bind token for object of kind {other:?}: supported kinds are Pod, Secret, Node"
                )));
            }
        };
        let found = self.types().get_with_storage_key("", "v1", plural).and_then(|(_, resource)| {
            let ns = if namespaced { namespace } else { "" };
            let key = crate::store::ObjectKey {
                resource: resource.clone(),
                namespace: Arc::from(ns),
                name: Arc::from(name),
            };
            self.snapshot().get(&key).cloned()
        });
        let Some(object) = found else {
            return Err(errors::not_found("", plural, name));
        };
        let uid = object.metadata.uid.clone().unwrap_or_default();
        if let Some(want) = Some(text("uid")).filter(|u| !u.is_empty())
            && want != uid
        {
            let why = format!(
                "the UID in the bound object reference ({want}) does not match the UID in record. The object \
                 might have been deleted and then recreated"
            );
            return Err(errors::conflict_with("", kind, name, &why));
        }
        Ok(Some((kind.to_owned(), name.to_owned(), uid)))
    }
}

/// A JWT of `claims` with kube-sim's unsigned digest in place of a signature (see the module).
fn jwt(claims: &Value) -> String {
    let header = URL_SAFE.encode(json!({"alg": "RS256", "kid": "kube-sim"}).to_string());
    let payload = URL_SAFE.encode(claims.to_string());
    let digest = fnv1a(format!("{header}.{payload}").as_bytes());
    let signature = URL_SAFE.encode(digest.to_be_bytes());
    format!("{header}.{payload}.{signature}")
}

/// FNV-1a, 64 bits: a stable digest without a dependency (a placeholder signature, not security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}
