//! The machine-readable report of `kube-sim explore --report FILE`, which `kube-sim merge`
//! combines across shards.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::CliError;
pub use sim::explore::PointCoverage;
use sim::explore::shard::Shard;

/// The value of [`ExploreReport::report`]: what tells a report from a regression file.
pub const REPORT_KIND: &str = "kube-sim-explore-report";
/// The report format this engine writes and reads.
pub const REPORT_FORMAT: u32 = 1;

/// One exploration run (one shard, or a merge of shards).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExploreReport {
    /// Always [`REPORT_KIND`].
    pub report: String,
    /// [`REPORT_FORMAT`].
    pub format: u32,
    /// The shards this report covers (one for a single run, several after a merge).
    pub shards: Vec<Shard>,
    /// The first seed of the seed space.
    pub first_seed: u64,
    /// Seeds run, over every scenario.
    pub seeds_run: u64,
    /// Failing seeds, before deduplication.
    pub failing_seeds: u64,
    /// Wall-clock seconds (summed over shards after a merge).
    pub wall_seconds: f64,
    /// Per scenario, in registration order.
    pub scenarios: Vec<ScenarioSummary>,
    /// The distinct failures, each shrunk and written as a regression file.
    pub failures: Vec<FailureSummary>,
}

/// What one scenario's seeds gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioSummary {
    /// The scenario.
    pub name: String,
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds that failed.
    pub failing_seeds: u64,
    /// Distinct failures among them.
    pub distinct_failures: u64,
    /// Which injection points of the scenario's fault-free reference the runs exercised (reports
    /// written before coverage existed read as none found).
    #[serde(default)]
    pub coverage: PointCoverage,
    /// Planned faults that never fired, per fault kind (`crash`, `staleReplica`, ...), over
    /// every run (reports written before it existed read as none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unfired_faults: BTreeMap<String, u64>,
}

/// One distinct failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureSummary {
    /// The scenario.
    pub scenario: String,
    /// The lowest failing seed of this shape.
    pub seed: u64,
    /// The verdict kind.
    pub kind: String,
    /// The property (empty for crashes and liveness failures).
    pub property: String,
    /// The message.
    pub message: String,
    /// The message's shape, the deduplication key with scenario, kind and property.
    pub shape: String,
    /// Seeds that failed with this shape.
    pub occurrences: u64,
    /// Faults in the plan before shrinking.
    pub faults_before: usize,
    /// Faults after shrinking.
    pub faults_after: usize,
    /// Replays the shrinker used.
    pub shrink_replays: u64,
    /// The regression file written, as a path under the output directory.
    pub file: String,
    /// The command that replays it.
    pub replay: String,
}

impl FailureSummary {
    /// The deduplication key: scenario, verdict kind, property and message shape.
    pub fn key(&self) -> (String, String, String, String) {
        (self.scenario.clone(), self.kind.clone(), self.property.clone(), self.shape.clone())
    }
}

impl ExploreReport {
    /// Write the report as pretty JSON, atomically.
    pub fn write(&self, path: &Path) -> Result<(), CliError> {
        let mut text = serde_json::to_string_pretty(self).expect("a report always serializes");
        text.push('\n');
        write_atomically(path, &text)
    }

    /// Read a report, naming the file and the bad field on error.
    pub fn load(path: &Path) -> Result<ExploreReport, CliError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| CliError::Io { path: path.into(), source })?;
        Self::parse(path, &text)
    }

    /// Parse a report's text; `path` is only used in errors.
    pub fn parse(path: &Path, text: &str) -> Result<ExploreReport, CliError> {
        let bad = |message: String| CliError::BadReport { path: path.into(), message };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("field `.`: {e}")))?;
        if value.get("report").and_then(|v| v.as_str()) != Some(REPORT_KIND) {
            return Err(bad(format!("field `report`: expected \"{REPORT_KIND}\"")));
        }
        match value.get("format").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(REPORT_FORMAT) => {}
            other => {
                return Err(bad(format!(
                    "field `format`: unknown report format {other:?}; this kube-sim reads {REPORT_FORMAT}"
                )));
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de)
            .map_err(|e| bad(format!("field `{}`: {}", e.path(), e.inner())))
    }
}

/// Write `text` to `path` atomically ([`sim::explore::write_atomically`]).
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    Ok(sim::explore::write_atomically(path, text)?)
}
