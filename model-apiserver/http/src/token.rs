//! The body of `POST serviceaccounts/{name}/token`: a TokenRequest in JSON, or in protobuf, as
//! `kubectl create token` sends it. The descriptor set of [`super::protobuf`] holds no
//! `authentication.k8s.io` group, so the few fields a request has are read here by hand
//! ([`super::wire`]), as the authorization reviews are.

use hyper::header::{CONTENT_TYPE, HeaderMap};
use kube_core::{DynamicObject, Status};
use model_apiserver::errors;
use serde_json::{Map, Value, json};

use super::authorization::{bytes_of, strings_into};
use super::{protobuf, wire, wire::Field};

/// The posted TokenRequest as the model takes it.
pub fn decode(headers: &HeaderMap, body: &[u8]) -> Result<DynamicObject, Status> {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !protobuf::is_protobuf(content_type, body) {
        return super::handler::decode_object(headers, body, "TokenRequest");
    }
    let value = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {},
        "spec": protobuf_spec(body)?,
    });
    serde_json::from_value(value)
        .map_err(|e| errors::bad_request(&format!("the object provided is unrecognized: {e}")))
}

/// `runtime.Unknown { typeMeta: 1, raw: 2 }` around `TokenRequest { metadata: 1, spec: 2 }`;
/// `TokenRequestSpec { audiences: 1 (repeated), boundObjectRef: 3, expirationSeconds: 4 }`;
/// `BoundObjectReference { kind: 1, apiVersion: 2, name: 3, uid: 4 }`.
fn protobuf_spec(body: &[u8]) -> Result<Value, Status> {
    let bad = |e: String| errors::bad_request(&format!("error decoding the protobuf TokenRequest: {e}"));
    let payload = body.strip_prefix(protobuf::MAGIC).ok_or_else(|| bad("no k8s\\0 magic".to_owned()))?;
    let envelope = wire::fields(payload).map_err(bad)?;
    let raw = envelope.iter().find_map(|(n, f)| bytes_of(*n, *f, 2)).unwrap_or_default();
    let request = wire::fields(raw).map_err(bad)?;
    let spec = request.iter().find_map(|(n, f)| bytes_of(*n, *f, 2)).unwrap_or_default();
    let spec = wire::fields(spec).map_err(bad)?;
    let mut out = Map::new();
    let audiences: Vec<Value> = spec
        .iter()
        .filter_map(|(n, f)| bytes_of(*n, *f, 1))
        .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()))
        .collect();
    if !audiences.is_empty() {
        out.insert("audiences".to_owned(), Value::Array(audiences));
    }
    for (number, field) in &spec {
        if let (4, Field::Varint(v)) = (number, field) {
            // An int64 on the wire: two's complement in 64 bits.
            out.insert("expirationSeconds".to_owned(), json!(i64::from_ne_bytes(v.to_ne_bytes())));
        }
    }
    if let Some(reference) = spec.iter().find_map(|(n, f)| bytes_of(*n, *f, 3)) {
        let mut fields = Map::new();
        let names: &[(u32, &str)] = &[(1, "kind"), (2, "apiVersion"), (3, "name"), (4, "uid")];
        strings_into(&wire::fields(reference).map_err(bad)?, names, &mut fields);
        out.insert("boundObjectRef".to_owned(), Value::Object(fields));
    }
    Ok(Value::Object(out))
}
