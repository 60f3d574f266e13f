//! What a broken property reports: one line a person can act on.

use std::fmt;

use model_apiserver::ObjectKey;

/// The longest rendering of a JSON value inside a message, in characters; longer values are cut
/// with `…` so that a message stays one readable line.
pub const VALUE_DISPLAY_CHARS_MAX: usize = 120;

/// One broken property.
///
/// Displayed on one line as `property: object: message`, e.g.
/// `matches_reference: apps/deployments default/web: /spec/replicas: expected 3, found 2`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// The property's name (`no_orphans`, `matches_reference`, a user's `always` name, ...).
    pub property: String,
    /// What is wrong: which field, expected against found.
    pub message: String,
    /// The object concerned, as [`describe_key`] writes it, if there is one.
    pub object: Option<String>,
}

impl Violation {
    /// A violation of `property` not about one object.
    pub fn new(property: impl Into<String>, message: impl Into<String>) -> Self {
        Violation { property: property.into(), message: message.into(), object: None }
    }

    /// A violation of `property` about the object stored at `key`.
    pub fn on(property: impl Into<String>, key: &ObjectKey, message: impl Into<String>) -> Self {
        Violation { property: property.into(), message: message.into(), object: Some(describe_key(key)) }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Some(object) => write!(f, "{}: {}: {}", self.property, object, self.message),
            None => write!(f, "{}: {}", self.property, self.message),
        }
    }
}

/// An object as a person reads it: `resource namespace/name`, or `resource name` when it is
/// cluster-scoped (`apps/deployments default/web`, `namespaces team-a`).
pub fn describe_key(key: &ObjectKey) -> String {
    if key.namespace.is_empty() {
        format!("{} {}", key.resource, key.name)
    } else {
        format!("{} {}/{}", key.resource, key.namespace, key.name)
    }
}

/// A JSON value (or its absence) on one line, cut at [`VALUE_DISPLAY_CHARS_MAX`] characters.
pub fn describe_value(value: Option<&serde_json::Value>) -> String {
    let Some(value) = value else {
        return "absent".to_owned();
    };
    // serde_json's compact form never contains a newline: strings escape theirs.
    let text = value.to_string();
    if text.chars().count() <= VALUE_DISPLAY_CHARS_MAX {
        return text;
    }
    let mut cut: String = text.chars().take(VALUE_DISPLAY_CHARS_MAX).collect();
    cut.push('…');
    cut
}

/// The one line a pass/fail hook (such as the engine's `Property::check_end`, which carries the
/// property name itself) reports for a list of violations: `Ok` when there are none, else the
/// first one's object and message, with how many more there are.
pub fn summarize(violations: &[Violation]) -> Result<(), String> {
    let Some(first) = violations.first() else {
        return Ok(());
    };
    let mut line = match &first.object {
        Some(object) => format!("{object}: {}", first.message),
        None => first.message.clone(),
    };
    match violations.len() - 1 {
        0 => {}
        1 => line.push_str(" (and 1 more violation)"),
        more => line.push_str(&format!(" (and {more} more violations)")),
    }
    Err(line)
}
