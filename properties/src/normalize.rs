//! The canonical form of an object for the differential oracle: its JSON with run-dependent
//! values (uids, generated names, timestamps, generation counts) replaced by stable stand-ins and
//! masked subtrees removed, so that two runs' objects compare with `==`.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_core::DynamicObject;
use model_apiserver::{ObjectKey, Snapshot};
use serde_json::Value;

use crate::children::HashNames;
use crate::mask::Mask;
use crate::violation::describe_key;

/// The stand-in for a timestamp under the built-in masks.
pub(crate) const TIMESTAMP_PLACEHOLDER: &str = "<timestamp>";

/// How deep [`Normalizer`] walks into an object; deeper values are kept as they are. Real objects
/// are far shallower (serde_json itself refuses to parse deeper than 128).
const DEPTH_MAX: usize = 128;

/// Normalises the objects of one snapshot (it needs the whole snapshot to resolve uids and
/// generated names).
pub(crate) struct Normalizer<'a> {
    mask: &'a Mask,
    /// uid -> the stand-in that replaces it.
    uids: BTreeMap<&'a str, String>,
    /// Generated name -> `generateName*` (hash suffixes in it replaced).
    generated: BTreeMap<&'a str, String>,
    /// The hash suffixes of built-in controllers' children, and their stand-ins.
    hashes: HashNames,
}

impl<'a> Normalizer<'a> {
    pub(crate) fn new(snapshot: &'a Snapshot, mask: &'a Mask) -> Self {
        let mut uids = BTreeMap::new();
        let mut generated = BTreeMap::new();
        let mut hashes = HashNames::default();
        if mask.is_builtin_on() {
            hashes = HashNames::new(snapshot);
            for (key, object) in &snapshot.objects {
                if let Some(marker) = generated_marker(object) {
                    // The first object in key order wins if two share a name across resources.
                    let marker = hashes.replace(&marker).unwrap_or(marker);
                    generated.entry(key.name.as_ref()).or_insert(marker);
                }
            }
            for (key, object) in &snapshot.objects {
                if let Some(uid) = object.metadata.uid.as_deref() {
                    let name =
                        generated.get(key.name.as_ref()).cloned().unwrap_or_else(|| key.name.to_string());
                    let shown = ObjectKey { name: Arc::from(name), ..key.clone() };
                    let stand_in = format!("<uid of {}>", describe_key(&shown));
                    uids.insert(uid, hashes.replace(&stand_in).unwrap_or(stand_in));
                }
            }
        }
        Normalizer { mask, uids, generated, hashes }
    }

    /// A name as compared: `generateName*` if it names a generated object of this snapshot, else
    /// the name with its hash suffixes replaced (when the built-in masks are on), else the name.
    pub(crate) fn name(&self, name: &str) -> String {
        self.generated.get(name).cloned().unwrap_or_else(|| self.hashed(name))
    }

    /// `text` with the hash suffixes of this snapshot's built-in children replaced by their
    /// stand-ins (`web-5d4f8b9c7d` is `web-<pod-template-hash>`).
    pub(crate) fn hashed(&self, text: &str) -> String {
        self.hashes.replace(text).unwrap_or_else(|| text.to_owned())
    }

    /// The canonical JSON of `object`, stored at `key`.
    pub(crate) fn normalize(&self, key: &ObjectKey, object: &DynamicObject) -> Value {
        let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
        if self.mask.is_builtin_on() {
            relate_observed_generation(&mut value);
            sort_conditions_by_type(&mut value);
            self.replace_values(&mut value, None, 0);
        }
        self.mask.strip(&key.resource, kind_of(object), &mut value);
        value
    }

    /// Replace timestamps, uids and generated names, walking the whole value.
    fn replace_values(&self, value: &mut Value, field: Option<&str>, depth: usize) {
        if depth >= DEPTH_MAX {
            return;
        }
        match value {
            Value::String(text) => {
                // `startedAt` and `finishedAt` are a container state's (core/v1 ContainerState*), the
                // only API timestamps named otherwise.
                let timestamp_field = field.is_some_and(|f| {
                    f.ends_with("Time") || f.ends_with("Timestamp") || f == "startedAt" || f == "finishedAt"
                });
                if timestamp_field && text.parse::<k8s_openapi::jiff::Timestamp>().is_ok() {
                    *text = TIMESTAMP_PLACEHOLDER.to_owned();
                } else if let Some(stand_in) = self.uids.get(text.as_str()) {
                    *text = stand_in.clone();
                } else if let Some(marker) = self.generated.get(text.as_str()) {
                    *text = marker.clone();
                } else if let Some(replaced) = self.hashes.replace(text) {
                    *text = replaced;
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.replace_values(item, field, depth + 1);
                }
            }
            Value::Object(map) => {
                for (name, child) in map.iter_mut() {
                    self.replace_values(child, Some(name), depth + 1);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The object's kind, if it carries one.
pub(crate) fn kind_of(object: &DynamicObject) -> Option<&str> {
    object.types.as_ref().map(|types| types.kind.as_str())
}

/// `generateName*` when the object's name was generated (generateName set and the name starts
/// with it: the server ignores generateName when a name is given).
pub(crate) fn generated_marker(object: &DynamicObject) -> Option<String> {
    let prefix = object.metadata.generate_name.as_deref().filter(|p| !p.is_empty())?;
    let name = object.metadata.name.as_deref()?;
    // A name equal to the prefix was given, not generated: generation always appends a suffix.
    (name.len() > prefix.len() && name.starts_with(prefix)).then(|| format!("{prefix}*"))
}

/// Order `status.conditions` by type. The conditions are a map keyed by type
/// (`+listType=map`, `+listMapKey=type`) whose order says nothing: upstream's controllers set a
/// condition by removing it and appending the new one (the deployment controller's
/// `SetDeploymentCondition`), so a Deployment whose `Available` went `False` and back lists it
/// after `Progressing`, where a fault-free run lists it first. A list with an entry of no type is
/// left as it is.
fn sort_conditions_by_type(value: &mut Value) {
    let Some(Value::Array(conditions)) = value.pointer_mut("/status/conditions") else {
        return;
    };
    if conditions.iter().all(|c| c.get("type").is_some_and(Value::is_string)) {
        conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
    }
}

/// Replace `status.observedGeneration` and conditions' `observedGeneration` by how they relate
/// to `metadata.generation` (which the built-in mask removes).
fn relate_observed_generation(value: &mut Value) {
    let Some(generation) = value.pointer("/metadata/generation").and_then(Value::as_i64) else {
        return;
    };
    let Some(status) = value.get_mut("status") else {
        return;
    };
    relate(status.get_mut("observedGeneration"), generation);
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        for condition in conditions {
            relate(condition.get_mut("observedGeneration"), generation);
        }
    }
}

fn relate(observed: Option<&mut Value>, generation: i64) {
    let Some(observed) = observed else {
        return;
    };
    let Some(number) = observed.as_i64() else {
        return;
    };
    *observed = Value::String(if number == generation {
        "<equal to metadata.generation>".to_owned()
    } else {
        format!("<{number} while metadata.generation is {generation}>")
    });
}
