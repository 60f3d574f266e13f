//! Get-or-create and get-and-modify through one object's slot, as kube 5's `kube::api::entry`
//! ([`Api::entry`]): read the object once, change it or supply a default locally, then
//! [`OccupiedEntry::commit`] sends a create (a new object), a replace (a changed one) or nothing.
//!
//! The requests are the `Api`'s own (`get`, `create`, `replace`), so each goes through the
//! simulated transport: its latency, the trace, and every fault the node's calls meet. A replace
//! carries the resourceVersion the entry read, so a write by someone else in between is a 409
//! Conflict (`CommitError::Save`), and a create that someone else beat is a 409 AlreadyExists: as
//! in kube, a retry should start again from [`Api::entry`].
//!
//! Written here rather than wrapping kube's: kube's entry is built on kube's own `Api`, which
//! talks HTTP; this one is the same API over the simulated `Api`.

use std::fmt::Debug;

use kube_core::Resource;
use kube_core::params::PostParams;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{Api, Error, Result};

impl<K> Api<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
{
    /// The slot of the object `name`: [`Entry::Occupied`] with the object if the server has it,
    /// else [`Entry::Vacant`]. Nothing is written until [`OccupiedEntry::commit`].
    pub async fn entry<'a>(&'a self, name: &'a str) -> Result<Entry<'a, K>> {
        Ok(match self.get_opt(name).await? {
            Some(object) => Entry::Occupied(OccupiedEntry { api: self, name, object, state: State::Clean }),
            None => Entry::Vacant(VacantEntry { api: self, name }),
        })
    }
}

/// One object's slot (see [`Api::entry`]).
#[derive(Debug)]
pub enum Entry<'a, K: Resource> {
    /// The object exists on the server, or was supplied by [`Entry::or_insert`] and awaits its
    /// create.
    Occupied(OccupiedEntry<'a, K>),
    /// No such object.
    Vacant(VacantEntry<'a, K>),
}

impl<'a, K: Resource> Entry<'a, K> {
    /// The object, if there is one.
    pub fn get(&self) -> Option<&K> {
        match self {
            Entry::Occupied(entry) => Some(entry.get()),
            Entry::Vacant(_) => None,
        }
    }

    /// The object to change, if there is one (commit to send the change).
    pub fn get_mut(&mut self) -> Option<&mut K> {
        match self {
            Entry::Occupied(entry) => Some(entry.get_mut()),
            Entry::Vacant(_) => None,
        }
    }

    /// Change the object with `f`, if there is one (commit to send the change).
    pub fn and_modify(self, f: impl FnOnce(&mut K)) -> Self {
        match self {
            Entry::Occupied(entry) => Entry::Occupied(entry.and_modify(f)),
            vacant => vacant,
        }
    }

    /// The object, or `default()` to be created by the commit.
    pub fn or_insert(self, default: impl FnOnce() -> K) -> OccupiedEntry<'a, K> {
        match self {
            Entry::Occupied(entry) => entry,
            Entry::Vacant(entry) => entry.insert(default()),
        }
    }
}

/// What a commit has to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing: the object is as the server last answered it.
    Clean,
    /// A replace: the object exists and was changed here.
    Changed,
    /// A create: the object was supplied here.
    New,
}

/// A slot with an object: read from the server, or supplied to be created.
#[derive(Debug)]
pub struct OccupiedEntry<'a, K: Resource> {
    api: &'a Api<K>,
    name: &'a str,
    object: K,
    state: State,
}

impl<K: Resource> OccupiedEntry<'_, K> {
    /// The object.
    pub fn get(&self) -> &K {
        &self.object
    }

    /// The object to change (commit to send the change).
    pub fn get_mut(&mut self) -> &mut K {
        if self.state == State::Clean {
            self.state = State::Changed;
        }
        &mut self.object
    }

    /// Change the object with `f` (commit to send the change).
    pub fn and_modify(mut self, f: impl FnOnce(&mut K)) -> Self {
        f(self.get_mut());
        self
    }

    /// The object, owned.
    pub fn into_object(self) -> K {
        self.object
    }
}

impl<K> OccupiedEntry<'_, K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
{
    /// Send what changed: a create for a supplied object, a replace for a changed one, nothing
    /// otherwise. The entry then holds the server's answer (its resourceVersion, its defaults).
    /// A name or namespace left unset is the entry's; one that differs, or a `generateName`, is
    /// refused before anything is sent. A dry run leaves the entry as it was, to be committed
    /// again.
    pub async fn commit(&mut self, params: &PostParams) -> Result<(), CommitError> {
        self.check_identity()?;
        let answer = match self.state {
            State::Clean => return Ok(()),
            State::New => self.api.create(params, &self.object).await,
            State::Changed => self.api.replace(self.name, params, &self.object).await,
        };
        self.object = answer.map_err(CommitError::Save)?;
        if !params.dry_run {
            self.state = State::Clean;
        }
        Ok(())
    }

    /// Fill in an unset name and namespace from the entry; refuse another one, or a
    /// `generateName` (the entry names one object).
    fn check_identity(&mut self) -> Result<(), CommitValidationError> {
        let expected_namespace = self.api.namespace().map(str::to_owned);
        let meta = self.object.meta_mut();
        match &meta.name {
            None => meta.name = Some(self.name.to_owned()),
            Some(name) if name != self.name => {
                return Err(CommitValidationError::NameMismatch {
                    object_name: name.clone(),
                    expected: self.name.to_owned(),
                });
            }
            Some(_) => {}
        }
        match &meta.namespace {
            None => meta.namespace.clone_from(&expected_namespace),
            Some(namespace) if Some(namespace) != expected_namespace.as_ref() => {
                return Err(CommitValidationError::NamespaceMismatch {
                    object_namespace: Some(namespace.clone()),
                    expected: expected_namespace,
                });
            }
            Some(_) => {}
        }
        if let Some(generate_name) = &meta.generate_name {
            return Err(CommitValidationError::GenerateName { object_generate_name: generate_name.clone() });
        }
        Ok(())
    }
}

/// A slot without an object.
#[derive(Debug)]
pub struct VacantEntry<'a, K: Resource> {
    api: &'a Api<K>,
    name: &'a str,
}

impl<'a, K: Resource> VacantEntry<'a, K> {
    /// Supply `object`, to be created by the commit.
    pub fn insert(self, object: K) -> OccupiedEntry<'a, K> {
        OccupiedEntry { api: self.api, name: self.name, object, state: State::New }
    }
}

/// Why a commit failed.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The object does not name the entry's object; nothing was sent.
    #[error("failed to validate object for saving: {0}")]
    Validate(#[from] CommitValidationError),
    /// The server refused the create or replace (409 when someone else wrote first).
    #[error("failed to save object: {0}")]
    Save(#[source] Error),
}

/// The object does not name the entry's object.
#[derive(Debug, thiserror::Error)]
pub enum CommitValidationError {
    /// `metadata.name` is not the entry's name.
    #[error(
        ".metadata.name does not match the name passed to Api::entry (got: {object_name:?}, expected: {expected:?})"
    )]
    NameMismatch {
        /// The object's name.
        object_name: String,
        /// The entry's name.
        expected: String,
    },
    /// `metadata.namespace` is not the `Api`'s namespace.
    #[error(
        ".metadata.namespace does not match the namespace of the Api (got: {object_namespace:?}, expected: {expected:?})"
    )]
    NamespaceMismatch {
        /// The object's namespace.
        object_namespace: Option<String>,
        /// The `Api`'s namespace.
        expected: Option<String>,
    },
    /// `metadata.generateName` is set: the entry names one object.
    #[error(".metadata.generate_name must not be set (got: {object_generate_name:?})")]
    GenerateName {
        /// The object's generateName.
        object_generate_name: String,
    },
}
