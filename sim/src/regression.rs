//! Regression files: a failing run, persisted as data that `cargo test` replays forever after.
//!
//! One JSON file per failure, at `regressions/<scenario>/<scenario>-<digest>.json`. It holds the
//! decoded fault plan, not only the seed, so that it keeps meaning the same run when the engine's
//! random choices change (proptest's lesson). Nothing in it is a path of the machine that wrote it.
//!
//! ```json
//! {
//!   "format": 1,
//!   "scenario": "cassandra:stale-delete",
//!   "seed": 1234,
//!   "faultPlan": { "faults": [ ... ] },
//!   "violation": { "kind": "correctness", "property": "no_orphans", "message": "..." },
//!   "traceDigest": "9f2c...",
//!   "found": { "by": "swarm", "seedsExplored": 812 }
//! }
//! ```
//!
//! Two optional fields (format 1 still: a file without them reads as before):
//! - `workload`: the steps of a scenario's generated workload (shortened by the shrinker), written
//!   whenever the scenario's workload is a generated one, because the steps, not the seed, are
//!   what survives a change of the generators. A replay runs these steps.
//! - `choices`: the run's recorded choices ([`crate::decision::Choices`]), written only on request
//!   (`kube-sim replay --record-choices`, or [`RegressionFile::choices`] set by code): seed and
//!   plan already replay a run of the same engine, and a recording is large. A replay with choices
//!   replays them, and a divergence is a nondeterminism verdict naming the first divergent choice.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::decision::Choices;
use crate::faults::FaultPlan;
use crate::generate::GeneratedWorkload;

/// The format version this engine writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The violation a regression file records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedViolation {
    /// The verdict kind: `crash`, `liveness`, `correctness` or `nondeterminism`.
    pub kind: String,
    /// The property that failed (empty for crashes and liveness failures).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub property: String,
    /// The one-line message.
    pub message: String,
}

/// How the failure was found and shrunk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// `swarm`, `guided`, `sweep` or `manual`.
    pub by: String,
    /// Seeds explored before this one failed, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds_explored: Option<u64>,
    /// Faults in the plan before shrinking, if it was shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults_before_shrink: Option<usize>,
    /// Replays the shrinker used, if it was shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrink_replays: Option<u64>,
    /// Steps of the generated workload before shrinking, if it was shrunk (`workload` holds the
    /// steps after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_steps_before_shrink: Option<usize>,
    /// The kube-sim version that wrote the file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine_version: String,
}

/// One regression file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegressionFile {
    /// [`FORMAT_VERSION`].
    pub format: u32,
    /// The scenario's name, as `kube-sim list` prints it.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The decoded fault plan to apply (the seed still drives latencies and task order).
    pub fault_plan: FaultPlan,
    /// The generated workload's steps, when the scenario's workload is a generated one; a replay
    /// runs them instead of generating steps from the seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<GeneratedWorkload>,
    /// What failed.
    pub violation: RecordedViolation,
    /// The trace digest of the failing run when it was recorded. A replay that fails the same way
    /// with another digest still counts as reproduced (the engine may have changed), and is reported.
    pub trace_digest: String,
    /// How it was found.
    #[serde(default)]
    pub found: Provenance,
    /// The run's recorded choices, only where needed (see the module docs); a replay replays them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Choices>,
}

/// Why a regression file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RegressionError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON, or a field has the wrong shape.
    #[error("{path}: field `{field}`: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The JSON path of the bad field (`.` for the document itself).
        field: String,
        /// What is wrong, with line and column.
        message: String,
    },
    /// The file declares a format version this engine does not know.
    #[error(
        "{path}: field `format`: unknown format version {found}; this kube-sim reads version {supported}"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// The version the file declares.
        found: u64,
        /// The version this engine reads.
        supported: u32,
    },
    /// The file holds a generated workload, but its scenario's workload is a script: the steps
    /// cannot replace it.
    #[error(
        "{path}: field `workload`: scenario \"{scenario}\" has a scripted workload, not a generated one; \
         remove the field or register the scenario with SimBuilder::generated_workload"
    )]
    WorkloadNotGenerated {
        /// The file.
        path: PathBuf,
        /// The scenario it names.
        scenario: String,
    },
    /// A planned fault names a controller node the scenario does not have: it could never fire,
    /// and a replay would pass for nothing.
    #[error(
        "{path}: field `{field}`: the scenario has no controller \"{controller}\"; its controllers: {known}"
    )]
    UnknownController {
        /// The file.
        path: PathBuf,
        /// The JSON path of the field (`faultPlan.faults[0].fault.controller`).
        field: String,
        /// The controller it names.
        controller: String,
        /// The scenario's controllers, comma-separated.
        known: String,
    },
    /// The file names a scenario that is not registered.
    #[error("{path}: field `scenario`: unknown scenario \"{scenario}\"; known scenarios: {known}")]
    UnknownScenario {
        /// The file.
        path: PathBuf,
        /// The scenario it names.
        scenario: String,
        /// The registered scenarios, comma-separated.
        known: String,
    },
}

impl RegressionFile {
    /// Read and check a regression file: valid JSON of a known format, every field well formed.
    pub fn load(path: &Path) -> Result<RegressionFile, RegressionError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| RegressionError::Io { path: path.to_owned(), source })?;
        Self::parse(path, &text)
    }

    /// Parse the text of a regression file; `path` is only used in errors. A leading UTF-8 byte
    /// order mark (which some Windows editors write) is skipped, as kubectl skips it in manifests.
    pub fn parse(path: &Path, text: &str) -> Result<RegressionFile, RegressionError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let malformed = |field: String, message: String| RegressionError::Malformed {
            path: path.to_owned(),
            field,
            message,
        };
        // The format is checked first, so that a future format with other fields gets the clear
        // "unknown format" error rather than a complaint about a field.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| malformed(".".to_owned(), e.to_string()))?;
        match value.get("format") {
            None => return Err(malformed("format".to_owned(), "missing".to_owned())),
            Some(serde_json::Value::Number(n)) => match n.as_u64() {
                Some(v) if v == u64::from(FORMAT_VERSION) => {}
                Some(v) => {
                    return Err(RegressionError::UnknownFormat {
                        path: path.to_owned(),
                        found: v,
                        supported: FORMAT_VERSION,
                    });
                }
                None => {
                    return Err(malformed("format".to_owned(), format!("expected an integer, found {n}")));
                }
            },
            Some(other) => {
                return Err(malformed("format".to_owned(), format!("expected an integer, found {other}")));
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = e.path().to_string();
            malformed(if field.is_empty() { ".".to_owned() } else { field }, e.into_inner().to_string())
        })
    }

    /// Check that the scenario is one of `known`.
    pub fn check_scenario(&self, path: &Path, known: &[&str]) -> Result<(), RegressionError> {
        if known.contains(&self.scenario.as_str()) {
            return Ok(());
        }
        Err(RegressionError::UnknownScenario {
            path: path.to_owned(),
            scenario: self.scenario.clone(),
            known: known.join(", "),
        })
    }

    /// The file's name: `<scenario>-<first 12 hex digits of the trace digest>.json`, with the
    /// scenario's `:` (as in `operator:bug`) spelled `.` so the name is portable.
    pub fn file_name(&self) -> String {
        let short: String = self.trace_digest.chars().filter(char::is_ascii_hexdigit).take(12).collect();
        format!("{}-{short}.json", portable(&self.scenario))
    }

    /// Where the file goes under a regressions directory: `<dir>/<scenario>/<file_name>`.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(portable(&self.scenario)).join(self.file_name())
    }

    /// Write the file under `dir` atomically (a temporary file in the same directory, then a
    /// rename), creating the scenario directory. Returns the path written.
    pub fn write_to(&self, dir: &Path) -> Result<PathBuf, RegressionError> {
        let path = self.path_in(dir);
        let io = |source| RegressionError::Io { path: path.clone(), source };
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(io)?;
        let mut text = serde_json::to_string_pretty(self).expect("a regression file always serializes");
        text.push('\n');
        let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(io)?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(path)
    }

    /// Every `*.json` file under `dir` (recursively, sorted by path), for the replay-all test.
    pub fn discover(dir: &Path) -> Result<Vec<PathBuf>, RegressionError> {
        let mut found = Vec::new();
        let mut pending = vec![dir.to_owned()];
        // Bounded: a regressions tree is two levels deep; the bound only guards against cycles.
        const DIRS_MAX: usize = 10_000;
        let mut visited = 0;
        while let Some(d) = pending.pop() {
            visited += 1;
            assert!(visited <= DIRS_MAX, "more than {DIRS_MAX} directories under {}", dir.display());
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && d == dir => return Ok(found),
                Err(source) => return Err(RegressionError::Io { path: d, source }),
            };
            for entry in entries {
                let entry = entry.map_err(|source| RegressionError::Io { path: d.clone(), source })?;
                let p = entry.path();
                if p.is_dir() {
                    pending.push(p);
                } else if p.extension().is_some_and(|e| e == "json") {
                    found.push(p);
                }
            }
        }
        found.sort();
        Ok(found)
    }
}

fn portable(scenario: &str) -> String {
    scenario
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '.' })
        .collect()
}

impl fmt::Display for RegressionFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario {} seed {}", self.scenario, self.seed)?;
        let v = &self.violation;
        if v.property.is_empty() {
            writeln!(f, "{}: {}", v.kind, v.message)?;
        } else {
            writeln!(f, "{}: property \"{}\": {}", v.kind, v.property, v.message)?;
        }
        if self.fault_plan.is_empty() {
            writeln!(f, "no faults")?;
        }
        for (i, planned) in self.fault_plan.faults.iter().enumerate() {
            writeln!(f, "fault {}: {planned}", i + 1)?;
        }
        if let Some(workload) = &self.workload {
            let before = self.found.workload_steps_before_shrink;
            let shrunk = before.map(|b| format!(" (shrunk from {b})")).unwrap_or_default();
            writeln!(f, "generated workload: {} steps{shrunk}", workload.steps.len())?;
        }
        if let Some(choices) = &self.choices {
            writeln!(f, "{} recorded choices", choices.choices.len())?;
        }
        Ok(())
    }
}
