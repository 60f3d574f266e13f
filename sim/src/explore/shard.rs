//! Shards: a deterministic split of the seed space, so that N machines (an Indexed Job, a CI
//! matrix) explore disjoint seeds whose union is exactly what one machine would have run.
//!
//! Seed `s` belongs to shard `s mod N`. A shard's k-th seed is the k-th seed at or after the
//! first seed that belongs to it.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (`--shard I/N`, 0-based index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shard {
    /// This shard, in `0..count`.
    pub index: u64,
    /// How many shards.
    pub count: u64,
}

impl Shard {
    /// The whole seed space: shard 0 of 1.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether `seed` belongs to this shard.
    pub fn owns(self, seed: u64) -> bool {
        seed % self.count == self.index
    }

    /// The k-th seed (0-based) of this shard at or after `first`, or `None` past `u64::MAX`.
    pub fn nth_seed(self, first: u64, k: u64) -> Option<u64> {
        let offset = (self.index + self.count - first % self.count) % self.count;
        first.checked_add(offset)?.checked_add(k.checked_mul(self.count)?)
    }

    /// The seeds of this shard among `first..first + total`, in order.
    pub fn seeds_in(self, first: u64, total: u64) -> impl Iterator<Item = u64> {
        let end = first.saturating_add(total);
        (0..).map_while(move |k| self.nth_seed(first, k).filter(|s| *s < end))
    }

    /// How many seeds of `first..first + total` this shard owns.
    pub fn count_in(self, first: u64, total: u64) -> u64 {
        let end = first.saturating_add(total);
        match self.nth_seed(first, 0) {
            Some(start) if start < end => (end - start).div_ceil(self.count),
            _ => 0,
        }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not a shard: expected I/N with 0 <= I < N, e.g. 0/4");
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = index.trim().parse().map_err(|_| bad())?;
        let count: u64 = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl serde::Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
