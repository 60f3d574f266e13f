//! Which EndpointSlice writes the EndpointSlice controller's cache has caught up with:
//! upstream's `EndpointSliceTracker` (`staging/src/k8s.io/endpointslice/util`).
//!
//! Per Service, the generation of each slice it last wrote (or that it expects the slice to be
//! deleted). A slice event the tracker already knows needs no sync (the controller's own write
//! coming back); a sync whose cache shows a slice older than written, a slice expected gone, or
//! lacks a slice it wrote would act on an old view, and waits instead.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use sim::api::ResourceExt;

use super::endpointslice_reconciler::LABEL_SERVICE_NAME;

/// The generation recorded for a slice whose deletion is expected (upstream's `deletionExpected`).
const DELETION_EXPECTED: i64 = -1;

/// A Service by namespace and name.
type ServiceKey = (String, String);

/// The generations written, per Service and slice uid.
#[derive(Debug, Default)]
pub struct Tracker {
    generations: BTreeMap<ServiceKey, BTreeMap<String, i64>>,
    /// The uid each tracked Service had: a new uid (the Service recreated) clears what was
    /// written for the old one.
    service_uids: BTreeMap<ServiceKey, String>,
}

/// The Service a slice belongs to: its namespace and its `kubernetes.io/service-name` label.
fn service_of(slice: &EndpointSlice) -> ServiceKey {
    let name = slice.labels().get(LABEL_SERVICE_NAME).cloned().unwrap_or_default();
    (slice.namespace().unwrap_or_default(), name)
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

fn generation(slice: &EndpointSlice) -> i64 {
    slice.metadata.generation.unwrap_or(0)
}

impl Tracker {
    /// Whether a generation is recorded for the slice.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        self.generations.get(&service_of(slice)).is_some_and(|g| g.contains_key(&uid(slice)))
    }

    /// Whether a slice event needs a sync: no generation is recorded for it, or it is newer.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        match self.generations.get(&service_of(slice)).and_then(|g| g.get(&uid(slice))) {
            Some(written) => generation(slice) > *written,
            None => true,
        }
    }

    /// `StaleSlices`: whether `slices` (the cache's, for `service`) lag behind what was written:
    /// one is older than written or expected deleted, or one written is missing.
    pub fn stale_slices(&mut self, service: &Service, slices: &[std::sync::Arc<EndpointSlice>]) -> bool {
        let key = (service.namespace().unwrap_or_default(), service.name_any());
        let service_uid = service.metadata.uid.clone().unwrap_or_default();
        let tracked = self.service_uids.get(&key).filter(|uid| !uid.is_empty());
        if tracked.is_some_and(|tracked| !service_uid.is_empty() && *tracked != service_uid) {
            self.generations.remove(&key);
        }
        self.service_uids.insert(key.clone(), service_uid);
        let Some(written) = self.generations.get(&key) else { return false };
        let provided: BTreeMap<String, i64> = slices.iter().map(|s| (uid(s), generation(s))).collect();
        let lagging = provided.iter().any(|(uid, generation)| {
            written.get(uid).is_some_and(|w| *w == DELETION_EXPECTED || *w > *generation)
        });
        let missing = written.iter().any(|(uid, w)| *w != DELETION_EXPECTED && !provided.contains_key(uid));
        lagging || missing
    }

    /// Record the generation of a slice just written.
    pub fn update(&mut self, slice: &EndpointSlice) {
        self.generations.entry(service_of(slice)).or_default().insert(uid(slice), generation(slice));
    }

    /// Record that a slice was just deleted.
    pub fn expect_deletion(&mut self, slice: &EndpointSlice) {
        self.generations.entry(service_of(slice)).or_default().insert(uid(slice), DELETION_EXPECTED);
    }

    /// Forget a deleted slice; whether its deletion was expected (`HandleDeletion`): an
    /// unexpected one (someone else deleted a slice written here) needs a sync.
    pub fn handle_deletion(&mut self, slice: &EndpointSlice) -> bool {
        let Some(written) = self.generations.get_mut(&service_of(slice)) else { return true };
        match written.remove(&uid(slice)) {
            Some(w) => w == DELETION_EXPECTED,
            None => true,
        }
    }
}
