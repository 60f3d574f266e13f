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

#[cfg(test)]
mod tests {
    use super::*;
    use sim::SimBuilder;
    use sim::scenario::Scenario;

    #[test]
    fn list_prints_name_tab_description_per_scenario_in_registration_order() {
        let registry = Registry::new([
            Scenario::new("b:fixed", "the fixed one", SimBuilder::new()),
            Scenario::new("a:bug", "the buggy one", SimBuilder::new()),
        ])
        .expect("unique names");
        let mut out = Vec::new();
        list(&registry, &mut out).expect("writes to a Vec");
        assert_eq!(String::from_utf8(out).expect("utf-8"), "b:fixed\tthe fixed one\na:bug\tthe buggy one\n");
    }
}
