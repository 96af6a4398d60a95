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
    let summary = export(&args.traces, &args.out, &options)?;
    Ok(format!("Wrote {}: {summary}", args.out.display()))
}
