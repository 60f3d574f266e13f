//! The label and field selection of a list, watch or deletecollection request.

use kube_core::{DynamicObject, Status};

use crate::{
    fields::SelectableFields,
    selector::{FieldSelector, LabelSelector},
    store::ObjectKey,
};

/// The parsed selectors of a collection request; an absent selector selects everything.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObjectFilter {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl ObjectFilter {
    /// Parse the selector strings for a kind that selects on `selectable` (400 BadRequest on
    /// bad syntax or a field the kind does not select on).
    pub(crate) fn parse(
        labels: Option<&str>,
        fields: Option<&str>,
        selectable: &SelectableFields,
    ) -> Result<Self, Status> {
        let non_empty = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        let labels = non_empty(labels).map(|s| LabelSelector::parse(&s)).transpose()?;
        let fields = non_empty(fields).map(|s| FieldSelector::parse_for(&s, selectable)).transpose()?;
        Ok(ObjectFilter { labels, fields })
    }

    /// Whether no selector was given.
    pub(crate) fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether the object stored at `_key` is selected.
    pub(crate) fn matches(&self, _key: &ObjectKey, object: &DynamicObject) -> bool {
        let labels_ok = self.labels.as_ref().is_none_or(|sel| match &object.metadata.labels {
            Some(labels) => sel.matches(labels),
            None => sel.matches(&Default::default()),
        });
        labels_ok && self.fields.as_ref().is_none_or(|sel| sel.matches(object))
    }
}
