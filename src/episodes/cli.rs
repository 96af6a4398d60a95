//! The `perennial episodes` command: arguments and the run that prints a summary.

use std::path::PathBuf;

use super::advantage::AdvantageEstimator;
use super::error::EpisodeError;
use super::export::{ExportOptions, export};

/// `perennial episodes TRACE... --out FILE.jsonl [--advantage grpo|rloo|reinforce]
/// [--chunk-steps N]`: exports traces as rLLM episodes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct EpisodesArgs {
    /// Trace files (JSON Lines, CSV or Parquet) written with --record-transitions, read in
    /// order.
    #[cfg_attr(feature = "cli", arg(required = true, value_name = "TRACE"))]
    pub traces: Vec<PathBuf>,
    /// Where to write the episodes, one JSON object per line.
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE.jsonl"))]
    pub out: PathBuf,
    /// Estimate advantages per group "{task_id}:{name}" and broadcast them to every step.
    #[cfg_attr(feature = "cli", arg(long, value_enum))]
    pub advantage: Option<AdvantageEstimator>,
    /// Cut each episode into chunks of at most N steps (for a persistent world's one long
    /// episode); a chunk the env did not end is `unknown`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N"))]
    pub chunk_steps: Option<u64>,
}

/// `traces` without the events tables of traces also given: a glob such as
/// `DIR/rollout-*.jsonl` matches `rollout-0.events.jsonl` beside `rollout-0.jsonl`. An
/// events table given alone is kept, and refused by the reader as not a trace.
fn without_their_events_tables(traces: &[PathBuf]) -> Vec<PathBuf> {
    let given: std::collections::HashSet<&PathBuf> = traces.iter().collect();
    traces
        .iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let beside = p.with_file_name(name.replacen(".events.", ".", 1));
            !(crate::trace::is_events_table(p) && given.contains(&beside))
        })
        .cloned()
        .collect()
}

/// Runs the command: writes the episodes and returns a one-paragraph summary to print.
///
/// # Errors
///
/// See [`export`]; the caller prints the error and exits with code 2.
pub fn run_cli(args: &EpisodesArgs) -> Result<String, EpisodeError> {
    let options = ExportOptions {
        chunk_steps: args.chunk_steps,
        advantage: args.advantage,
    };
    let traces = without_their_events_tables(&args.traces);
    let summary = export(&traces, &args.out, &options)?;
    Ok(format!("Wrote {}: {summary}", args.out.display()))
}
