//! Status writes as merge patches that replace the status, as upstream's `UpdateStatus` does.
//!
//! The built-ins write status with a JSON merge patch (RFC 7386), which keeps every field the
//! patch does not name. A typed status serializes an unset field by leaving it out, so a field
//! that went away (`readyReplicas` of a ReplicaSet scaled to 0, the last Job leaving a CronJob's
//! `active` list) would stay on the server forever. [`replacing`] names each such field with
//! `null`, the merge patch's deletion. Written here rather than taken from a crate: `json-patch`
//! diffs into RFC 6902 operations, not into a merge patch.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use sim::Resource;
use sim::api::{Api, Patch, PatchParams};

use super::error::{Error, has_code};

/// Write `new` as the status of `name` unless `old` (the status read) already equals it, as a
/// patch [`replacing`] it; an object deleted meanwhile (404) is no error.
pub async fn write<K, S>(api: &Api<K>, name: &str, old: Option<&S>, new: &S) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    S: Serialize + PartialEq,
{
    if old == Some(new) {
        return Ok(());
    }
    let patch = replacing(old, new)?;
    match api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `{"status": new}` with `null` for every field of `old` that `new` no longer has, at any
/// depth of nested objects (arrays are replaced whole by a merge patch, so they need nothing).
pub fn replacing<S: Serialize>(old: Option<&S>, new: &S) -> Result<Value, serde_json::Error> {
    let mut new = serde_json::to_value(new)?;
    if let Some(old) = old {
        null_removed(&serde_json::to_value(old)?, &mut new);
    }
    let mut patch = Map::new();
    patch.insert("status".to_owned(), new);
    Ok(Value::Object(patch))
}

fn null_removed(old: &Value, new: &mut Value) {
    let (Value::Object(old), Value::Object(new)) = (old, new) else { return };
    for (key, old_value) in old {
        match new.get_mut(key) {
            Some(new_value) => null_removed(old_value, new_value),
            None => {
                new.insert(key.clone(), Value::Null);
            }
        }
    }
}
