//! Structural-schema validation, pruning and defaulting for custom resources.
