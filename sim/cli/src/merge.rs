//! `kube-sim merge DIR...`: combine the shard reports (`explore --report` files) and regression
//! files found under the given directories. Regression files with the same scenario, verdict
//! kind, property and message shape are one failure: the one with the fewest faults (then the
//! lowest seed) is kept and written under `--out`. The merged report sums seeds and failures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::explore::print_summary;
use crate::report::{ExploreReport, REPORT_FORMAT, REPORT_KIND, ScenarioSummary};
use crate::{CliError, EXIT_FAILURE, EXIT_PASS, message_shape, replay_command};
use sim::regression::RegressionFile;

/// Arguments of `kube-sim merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Directories holding shard reports and regression files (searched recursively).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where the deduplicated regression files are written.
    #[arg(long, value_name = "DIR", default_value = "regressions")]
    pub out: PathBuf,
    /// Write the merged report here.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

type Key = (String, String, String, String);

fn file_key(file: &RegressionFile) -> Key {
    let v = &file.violation;
    (file.scenario.clone(), v.kind.clone(), v.property.clone(), message_shape(&v.message))
}

/// `kube-sim merge`: exit 0 when no shard found a failure, 1 when any did.
pub fn merge(args: &MergeArgs) -> Result<u8, CliError> {
    let mut reports = Vec::new();
    let mut files: BTreeMap<Key, RegressionFile> = BTreeMap::new();
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(CliError::Io {
                path: dir.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
            });
        }
        for path in RegressionFile::discover(dir)? {
            if is_report(&path)? {
                reports.push(ExploreReport::load(&path)?);
                continue;
            }
            let file = RegressionFile::load(&path)?;
            let better = |kept: &RegressionFile| {
                (file.fault_plan.faults.len(), file.seed) < (kept.fault_plan.faults.len(), kept.seed)
            };
            match files.get(&file_key(&file)) {
                Some(kept) if !better(kept) => {}
                _ => {
                    files.insert(file_key(&file), file);
                }
            }
        }
    }
    let mut written: BTreeMap<Key, PathBuf> = BTreeMap::new();
    for (key, file) in &files {
        written.insert(key.clone(), file.write_to(&args.out)?);
    }
    let merged = merge_reports(&reports, &written);
    print_summary(&merged);
    println!("\n{} regression files kept under {}", written.len(), args.out.display());
    if let Some(path) = &args.report {
        merged.write(path)?;
        println!("report: {}", path.display());
    }
    Ok(if merged.failing_seeds == 0 && written.is_empty() { EXIT_PASS } else { EXIT_FAILURE })
}

/// Whether a JSON file is an exploration report (rather than a regression file).
fn is_report(path: &Path) -> Result<bool, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Io { path: path.into(), source })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::BadReport { path: path.into(), message: format!("field `.`: {e}") })?;
    Ok(value.get("report").and_then(|v| v.as_str()) == Some(REPORT_KIND))
}

/// Sum the reports; failures with one key become one (lowest seed, occurrences summed), pointing
/// at the regression file kept for that key.
pub fn merge_reports(reports: &[ExploreReport], written: &BTreeMap<Key, PathBuf>) -> ExploreReport {
    let mut merged = ExploreReport {
        report: REPORT_KIND.to_owned(),
        format: REPORT_FORMAT,
        shards: Vec::new(),
        first_seed: reports.iter().map(|r| r.first_seed).min().unwrap_or(0),
        seeds_run: reports.iter().map(|r| r.seeds_run).sum(),
        failing_seeds: reports.iter().map(|r| r.failing_seeds).sum(),
        wall_seconds: reports.iter().map(|r| r.wall_seconds).sum(),
        scenarios: Vec::new(),
        failures: Vec::new(),
    };
    for report in reports {
        merged.shards.extend(report.shards.iter().copied());
        for s in &report.scenarios {
            match merged.scenarios.iter_mut().find(|m| m.name == s.name) {
                Some(m) => {
                    m.seeds_run += s.seeds_run;
                    m.failing_seeds += s.failing_seeds;
                    m.coverage = m.coverage.union(&s.coverage);
                    for (kind, count) in &s.unfired_faults {
                        *m.unfired_faults.entry(kind.clone()).or_default() += count;
                    }
                }
                None => merged.scenarios.push(ScenarioSummary { distinct_failures: 0, ..s.clone() }),
            }
        }
        for f in &report.failures {
            match merged.failures.iter_mut().find(|m| m.key() == f.key()) {
                Some(m) => {
                    m.occurrences += f.occurrences;
                    if f.seed < m.seed {
                        let occurrences = m.occurrences;
                        *m = f.clone();
                        m.occurrences = occurrences;
                    }
                }
                None => merged.failures.push(f.clone()),
            }
        }
    }
    merged.shards.sort();
    merged.shards.dedup();
    for f in &mut merged.failures {
        if let Some(path) = written.get(&f.key()) {
            f.file = path.display().to_string();
            f.replay = replay_command(path);
        }
    }
    for s in &mut merged.scenarios {
        s.distinct_failures = merged.failures.iter().filter(|f| f.scenario == s.name).count() as u64;
    }
    merged
}
