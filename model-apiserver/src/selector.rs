//! Label selectors (the full string syntax, which kube-core cannot parse) and field selectors.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube_core::{ObjectMeta, Selector, SelectorExt, Status};

/// A parsed label selector: a conjunction of requirements on an object's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    inner: Selector,
}

impl LabelSelector {
    /// Parse the string form (`a=b,c!=d,e in (f,g),!h`).
    pub fn parse(s: &str) -> Result<LabelSelector, Status> {
        let _ = s;
        todo!("selector parsing")
    }

    /// Convert the API form (`matchLabels` and `matchExpressions`).
    pub fn from_label_selector(sel: &ApiLabelSelector) -> Result<LabelSelector, Status> {
        let _ = sel;
        todo!("selector conversion")
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.inner.matches(labels)
    }

    /// The selector that matches every object.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// Whether this selector matches every object.
    pub fn is_everything(&self) -> bool {
        self.inner.selects_all()
    }
}

/// A parsed field selector on `metadata.name` and `metadata.namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<()>,
}

impl FieldSelector {
    /// Parse the string form (`metadata.name=a,metadata.namespace!=b`).
    pub fn parse(s: &str) -> Result<FieldSelector, Status> {
        let _ = s;
        todo!("field selector parsing")
    }

    /// Whether the object's metadata satisfies every requirement.
    pub fn matches(&self, meta: &ObjectMeta) -> bool {
        let _ = meta;
        self.requirements.is_empty()
    }

    /// The selector that matches every object.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }
}
