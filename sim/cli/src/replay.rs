//! `kube-sim replay FILE`: rerun a regression file (its scenario, seed and fault plan, with the
//! trace kept), print the verdict and the story, and exit 0 if it passes now, 1 if it still fails,
//! 3 if it passes but some planned fault never fired (inconclusive: the story says why).
//!
//! The replaying itself is the library's ([`sim::explore::replay`]), which the `regressions`
//! crate's replay-all test calls too, so the test and the tool agree on what "reproduces" means.

use std::path::PathBuf;

use crate::{CliError, EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_PASS, explain};
use sim::explore::replay::{Replayed, embed_choices, replay_file_recording};
use sim::scenario::Registry;

/// Arguments of `kube-sim replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The regression file.
    pub file: PathBuf,
    /// Print the whole trace too, one line per entry.
    #[arg(long)]
    pub trace: bool,
    /// Record the replay's choices into the file (rewritten in place) when it still fails as
    /// recorded, so that it replays choice by choice from then on. A file that holds choices
    /// already replays them and is left alone.
    #[arg(long)]
    pub record_choices: bool,
}

/// `kube-sim replay`.
pub fn replay(args: &ReplayArgs, registry: &Registry) -> Result<u8, CliError> {
    let replayed = replay_file_recording(&args.file, registry, args.record_choices)?;
    if args.record_choices {
        if embed_choices(&args.file, &replayed)? {
            let count = replayed.report.choices.as_ref().map_or(0, |c| c.choices.len());
            println!("recorded {count} choices into {}", args.file.display());
        } else if replayed.file.choices.is_some() {
            println!("{} holds recorded choices already; replayed them", args.file.display());
        } else {
            println!("not recording choices: the replay does not fail as recorded");
        }
    }
    let Replayed { file, report, reproduced } = &replayed;
    println!("replaying {}", args.file.display());
    print!("{file}");
    println!("verdict now: {}", report.verdict);
    if args.trace {
        print!("{}", report.trace.render());
    }
    println!();
    print!("{}", explain::story(report));
    if report.verdict.is_pass() && !report.unfired.is_empty() {
        println!(
            "\nINCONCLUSIVE: the run passed, but {} of its {} planned faults never fired (see above): \
             the recorded failure was not put to the test.",
            report.unfired.len(),
            report.plan.faults.len()
        );
        return Ok(EXIT_INCONCLUSIVE);
    }
    if report.verdict.is_pass() {
        println!("\nPASS: the recorded failure no longer happens (the bug is fixed).");
        return Ok(EXIT_PASS);
    }
    if *reproduced {
        let same = if report.digest == file.trace_digest {
            "the same trace digest".to_owned()
        } else {
            format!("trace digest {} (recorded {}: the engine changed)", report.digest, file.trace_digest)
        };
        println!("\nFAIL: the recorded failure still happens, with {same}.");
    } else {
        println!("\nFAIL: it fails differently than recorded ({}).", file.violation.kind);
    }
    Ok(EXIT_FAILURE)
}
