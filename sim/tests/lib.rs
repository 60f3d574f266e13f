//! Empty: this package holds `sim`'s integration tests (`it/`), built as a package of their own so
//! that the `ci` profile can leave the test binary unoptimized while `sim` itself is optimized
//! (see this package's Cargo.toml).
