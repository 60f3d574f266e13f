//! CustomResourceDefinitions: loading them from YAML, validating them, and the resource types
//! they make servable.
