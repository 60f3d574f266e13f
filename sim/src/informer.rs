//! Informers: a [`watcher`](crate::watcher::watcher) stream reflected into a [`Store`] by a task of
//! the current node, as kube-runtime's `reflector(writer, watcher(api, config))` polled by a
//! controller. What [`Controller`](crate::controller::Controller)'s `new`, `owns` and `watches`
//! start, and what [`informer`] starts for a cache of your own.
//!
//! The watcher lists, then watches from the list's resourceVersion; its events arrive in order
//! within one watch, each after a drawn delay, while two informers (two tasks) drift apart. A 410
//! Expired answer (a compacted revision) relists at once, which replaces the cache and touches
//! every object. A failed list or watch is retried after a pause (`RETRY_BACKOFF`, 500 ms).
//!
//! Everything runs on the node that created the informer: killing the node loses the cache.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use kube_core::Resource;
use serde::{Serialize, de::DeserializeOwned};

use crate::client::Api;
use crate::transport::RETRY_BACKOFF;

pub use crate::reflector::{ObjectRef, Store, StoreError};
pub use crate::watcher::{Config, ListSemantic, WATCH_DELAY_MS_MAX, WATCH_DELAY_MS_MIN};

/// Start an informer for `api` on the current node and return its cache: the sim's shorthand
/// for a reflector that a task polls (before kube-runtime's `reflector(writer, stream)` was
/// ported, this was `reflector::reflector(api, config)`).
///
/// ```no_run
/// # use k8s_openapi::api::core::v1::Secret;
/// # fn f(api: sim::Api<Secret>) {
/// let secrets = sim::runtime::reflector::informer(api, sim::runtime::watcher::Config::default());
/// // `secrets.get(..)`, `secrets.state()`, `secrets.subscribe()`
/// # let _ = secrets;
/// # }
/// ```
pub fn informer<K>(api: Api<K>, config: Config) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    spawn(api, config, |_| {})
}

/// Start an informer; `on_touch` is called with every object an event or a relist touches.
pub(crate) fn spawn<K>(api: Api<K>, config: Config, mut on_touch: impl FnMut(&Arc<K>) + 'static) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static,
{
    let (store, mut writer) = crate::reflector::store::<K>();
    let stream = crate::watcher::shared(api, config);
    // Boxed: the task then holds a pointer, not the stream's whole state machine (about 2 KiB,
    // which the task's state would otherwise hold twice and every move would copy).
    let mut stream = Box::pin(stream);
    let task = async move {
        // The watcher never ends: this task lives as long as its node.
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => writer.apply_shared(&event, &mut on_touch),
                Err(error) if error.pauses_informer() => madsim::time::sleep(RETRY_BACKOFF).await,
                Err(_) => {}
            }
        }
    };
    madsim::task::spawn_local(task);
    store
}
