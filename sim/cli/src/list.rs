//! `kube-sim list`: one line per scenario, its name, a tab, then its one-line description.

use std::io::Write;

use crate::CliError;
use sim::scenario::Registry;

/// Print every scenario of `registry` to `out`, in registration order.
pub fn list(registry: &Registry, out: &mut impl Write) -> Result<(), CliError> {
    for scenario in registry.iter() {
        writeln!(out, "{}\t{}", scenario.name(), scenario.description())
            .map_err(|source| CliError::Io { path: "<stdout>".into(), source })?;
    }
    Ok(())
}
