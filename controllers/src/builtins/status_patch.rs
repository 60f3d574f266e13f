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
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
    S: Serialize + PartialEq,
{
    if unchanged::<K, S>(old, new) {
        return Ok(());
    }
    let patch = replacing(old, new)?;
    match api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether writing `new` over `old` (the status read) changes nothing: they are equal, or encode
/// the same through `K`'s Go type ([`same_encoded`]).
pub fn unchanged<K, S>(old: Option<&S>, new: &S) -> bool
where
    K: Resource<DynamicType = ()>,
    S: Serialize + PartialEq,
{
    old.is_some_and(|old| old == new || same_encoded::<K, S>(old, new))
}

/// Whether two statuses of `K` encode the same through its Go type, as upstream compares the
/// statuses it decoded: a count of 0 and no count are one value there (`omitempty`), where the
/// typed `Some(0)` and `None` differ. Compared typed only, a built-in would write a status the
/// server answers unchanged on every sync.
fn same_encoded<K, S>(old: &S, new: &S) -> bool
where
    K: Resource<DynamicType = ()>,
    S: Serialize,
{
    let (group, kind) = (K::group(&()), K::kind(&()));
    let encoded = |status: &S| {
        let mut status = serde_json::to_value(status).ok()?;
        model_apiserver::go_types::encode_builtin_field(&group, &kind, "status", &mut status)
            .then_some(status)
    };
    encoded(old).is_some_and(|old| Some(old) == encoded(new))
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
