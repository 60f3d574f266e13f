//! Predicates, as kube-runtime's `utils::predicate`: a property of an object hashed to a `u64`,
//! and a stream filter that passes an object only when its property's hash changed.
//!
//! The hash is std's `DefaultHasher` with its fixed keys (SipHash-1-3, zero keys): the same object
//! hashes the same on every run of one build, which is all the filter needs (it compares hashes
//! it computed itself). The filter's cache is a `BTreeMap`, so nothing iterates in a random order.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use kube_core::Resource;
use pin_project_lite::pin_project;

use crate::watcher::Error;

fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    t.hash(&mut hasher);
    hasher.finish()
}

/// A property of `K` to filter on, as kube-runtime's `Predicate`: `None` when the object has no
/// such property (such an object always passes the filter).
pub trait Predicate<K> {
    /// The hash of the property, if the object has it.
    fn hash_property(&self, obj: &K) -> Option<u64>;

    /// This predicate, or `f` where this one has no value.
    fn fallback<F: Predicate<K>>(self, f: F) -> Fallback<Self, F>
    where
        Self: Sized,
    {
        Fallback(self, f)
    }

    /// Both predicates, hashed together: a change of either passes.
    fn combine<F: Predicate<K>>(self, f: F) -> Combine<Self, F>
    where
        Self: Sized,
    {
        Combine(self, f)
    }
}

impl<K, F: Fn(&K) -> Option<u64>> Predicate<K> for F {
    fn hash_property(&self, obj: &K) -> Option<u64> {
        self(obj)
    }
}

/// See [`Predicate::fallback`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fallback<A, B>(A, B);

impl<A: Predicate<K>, B: Predicate<K>, K> Predicate<K> for Fallback<A, B> {
    fn hash_property(&self, obj: &K) -> Option<u64> {
        self.0.hash_property(obj).or_else(|| self.1.hash_property(obj))
    }
}

/// See [`Predicate::combine`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Combine<A, B>(A, B);

impl<A: Predicate<K>, B: Predicate<K>, K> Predicate<K> for Combine<A, B> {
    fn hash_property(&self, obj: &K) -> Option<u64> {
        match (self.0.hash_property(obj), self.1.hash_property(obj)) {
            (None, None) => None,
            (a, b) => Some(hash(&(a, b))),
        }
    }
}

/// The filter's configuration, as kube-runtime's `PredicateConfig`: how long a remembered hash
/// lives (virtual time; default one hour). An object not seen for that long passes again.
#[derive(Clone, Debug)]
pub struct Config {
    ttl: Duration,
}

impl Config {
    /// Set the time-to-live of a remembered hash.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

impl Default for Config {
    fn default() -> Self {
        Config { ttl: Duration::from_secs(3600) }
    }
}

/// An object's identity in the filter's cache: namespace, name and uid (a recreated object is a
/// new one).
type CacheKey = (Option<String>, String, Option<String>);

#[derive(Clone, Copy, Debug)]
struct Entry {
    hash: u64,
    last_seen: Instant,
}

pin_project! {
    /// A stream of objects that passes each only when its predicate's hash changed, as
    /// kube-runtime's `PredicateFilter` (see
    /// [`WatchStreamExt::predicate_filter`](super::WatchStreamExt::predicate_filter)).
    #[must_use = "streams do nothing unless polled"]
    pub struct PredicateFilter<St, K, P> {
        #[pin]
        stream: St,
        predicate: P,
        cache: BTreeMap<CacheKey, Entry>,
        config: Config,
        last_evicted: Instant,
        kind: PhantomData<fn() -> K>,
    }
}

impl<St, K, P> PredicateFilter<St, K, P>
where
    St: Stream<Item = Result<K, Error>>,
    K: Resource,
    P: Predicate<K>,
{
    pub(super) fn new(stream: St, predicate: P, config: Config) -> Self {
        PredicateFilter {
            stream,
            predicate,
            cache: BTreeMap::new(),
            config,
            last_evicted: Instant::now(),
            kind: PhantomData,
        }
    }
}

impl<St, K, P> Stream for PredicateFilter<St, K, P>
where
    St: Stream<Item = Result<K, Error>>,
    K: Resource,
    P: Predicate<K>,
{
    type Item = Result<K, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let now = Instant::now();
        let ttl = this.config.ttl;
        // Memory hygiene only: freshness is checked per entry below.
        if now.duration_since(*this.last_evicted) >= ttl {
            this.cache.retain(|_, entry| now.duration_since(entry.last_seen) < ttl);
            *this.last_evicted = now;
        }
        // Bounded by the inner stream: each round takes one item off it.
        loop {
            let object = match futures::ready!(this.stream.as_mut().poll_next(cx)) {
                Some(Ok(object)) => object,
                other => return Poll::Ready(other),
            };
            let Some(value) = this.predicate.hash_property(&object) else {
                return Poll::Ready(Some(Ok(object)));
            };
            let meta = object.meta();
            let key = (meta.namespace.clone(), meta.name.clone().unwrap_or_default(), meta.uid.clone());
            let entry = Entry { hash: value, last_seen: now };
            let changed = match this.cache.insert(key, entry) {
                Some(old) => now.duration_since(old.last_seen) >= ttl || old.hash != value,
                None => true,
            };
            if changed {
                return Poll::Ready(Some(Ok(object)));
            }
        }
    }
}

/// The predicates kube-runtime offers, as its `predicates` module.
pub mod predicates {
    use kube_core::{Resource, ResourceExt};

    use super::hash;

    /// `metadata.generation`: changes with the spec, not with the status.
    pub fn generation<K: Resource>(obj: &K) -> Option<u64> {
        obj.meta().generation.map(|g| hash(&g))
    }

    /// `metadata.resourceVersion`: changes with every write (deletions pass too).
    pub fn resource_version<K: Resource>(obj: &K) -> Option<u64> {
        obj.meta().resource_version.as_ref().map(hash)
    }

    /// `metadata.labels`.
    pub fn labels<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.labels()))
    }

    /// `metadata.annotations`.
    pub fn annotations<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.annotations()))
    }

    /// `metadata.finalizers`.
    pub fn finalizers<K: Resource>(obj: &K) -> Option<u64> {
        Some(hash(obj.finalizers()))
    }
}
