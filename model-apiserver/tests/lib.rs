//! Empty: this package holds `model-apiserver`'s integration tests (`it/`), built as a package of
//! their own so that the `ci` profile can leave the test binary unoptimized while the model itself
//! is optimized (see this package's Cargo.toml).
